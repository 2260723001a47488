//! `kfsched`: the command named like the Python package, so that `uvx kfsched`
//! and `pipx run kfsched` work after `pip install kfsched`. It hands over to the
//! `kubectl-kfsched` in its own directory (both are installed together), with
//! the same arguments, so output and exit code are the plugin's own. Only that
//! one: a `kubectl-kfsched` elsewhere on PATH may be another version.

use std::path::PathBuf;
use std::process::Command;

const PLUGIN: &str = "kubectl-kfsched";

/// A shell's exit codes for a command that is missing (127) or cannot be run (126).
fn broken(plugin: &std::path::Path, e: &std::io::Error) -> ! {
    let missing = e.kind() == std::io::ErrorKind::NotFound;
    eprintln!(
        "kfsched: error: cannot run {}: {e}; the installation is broken: reinstall kfsched \
         (`python -m pip install --force-reinstall kfsched=={}`, or the way it was installed)",
        plugin.display(),
        env!("CARGO_PKG_VERSION")
    );
    std::process::exit(if missing { 127 } else { 126 });
}

fn main() {
    let name = format!("{PLUGIN}{}", std::env::consts::EXE_SUFFIX);
    let plugin = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(&name)))
        .unwrap_or_else(|| PathBuf::from(&name));
    let mut cmd = Command::new(&plugin);
    cmd.args(std::env::args_os().skip(1));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let e = cmd.exec();
        broken(&plugin, &e);
    }
    #[cfg(not(unix))]
    match cmd.status() {
        Ok(s) => std::process::exit(s.code().unwrap_or(1)),
        Err(e) => broken(&plugin, &e),
    }
}
