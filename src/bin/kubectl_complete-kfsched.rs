//! `kubectl_complete-kfsched`: the companion kubectl (>= 1.26) runs from
//! PATH to complete `kubectl kfsched ...`. kubectl calls it with the
//! plugin's arguments plus the word under the cursor and reads Cobra's
//! answer (one candidate per line, then `:<directive>`), which
//! `kubectl-kfsched __complete` writes. This only hands over to it: the
//! `kubectl-kfsched` next to this file (the usual install puts both in one
//! directory), else the one on PATH.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

const PLUGIN: &str = "kubectl-kfsched";

fn plugin() -> PathBuf {
    let name = format!("{PLUGIN}{}", std::env::consts::EXE_SUFFIX);
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(&name)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

fn main() {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut cmd = Command::new(plugin());
    cmd.arg("__complete").args(&args);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let e = cmd.exec();
        eprintln!("kubectl_complete-kfsched: cannot run {PLUGIN}: {e}");
        std::process::exit(1);
    }
    #[cfg(not(unix))]
    match cmd.status() {
        Ok(s) => std::process::exit(s.code().unwrap_or(1)),
        Err(e) => {
            eprintln!("kubectl_complete-kfsched: cannot run {PLUGIN}: {e}");
            std::process::exit(1);
        }
    }
}
