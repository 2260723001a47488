//! Shared test helpers: the binary, hermetic runs, fixture directories.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubectl-kfsched")
}

/// The result of one run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Runs the binary with a cleared environment (PATH kept, HOME pointed at
/// `cwd`) in `cwd`, feeding `stdin`.
pub fn run_in(cwd: &Path, args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", cwd)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn kubectl-kfsched");
    if let Some(input) = stdin {
        let mut s = child.stdin.take().expect("stdin");
        s.write_all(input).expect("write stdin");
    }
    let out = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn run(args: &[&str]) -> Run {
    run_in(&root(), args, None, &[])
}

/// Every directory under `dir` (one level of groups, one of cases) holding `marker`.
pub fn case_dirs(dir: &str, marker: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let base = root().join(dir);
    let mut stack = vec![base];
    while let Some(d) = stack.pop() {
        if d.join(marker).is_file() {
            out.push(d);
            continue;
        }
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                }
            }
        }
    }
    out.sort();
    out
}

/// The SDK-compiled pairs: testdata/golden/<group>/<case>/{plain,expected,policy}.yaml.
pub fn golden_dirs() -> Vec<PathBuf> {
    case_dirs("testdata/golden", "plain.yaml")
}

/// Hand-written cases: testdata/cases/<case>/{input,expected,policy}.yaml.
pub fn hand_dirs() -> Vec<PathBuf> {
    case_dirs("testdata/cases", "input.yaml")
}

pub fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// A compact diff for assertion messages.
pub fn show_diff(want: &str, got: &str) -> String {
    let d = kfsched::diff::unified(want, got, "expected→actual", false);
    d.lines().take(60).collect::<Vec<_>>().join("\n")
}

/// Copies a directory tree into a fresh temp dir.
pub fn copy_to_temp(src: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(src, dir.path());
    dir
}

pub fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).expect("mkdir");
    for e in std::fs::read_dir(src).expect("read_dir").flatten() {
        let to = dst.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).expect("copy");
        }
    }
}

/// Bytes and modification time of every file under a directory, for "nothing changed" checks.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(m) = std::fs::symlink_metadata(&p) {
                let bytes = std::fs::read(&p).unwrap_or_default();
                out.push((p, bytes, m.modified().expect("mtime")));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The rules that the `warning:` (or `error:`) lines of a run's stderr say
/// matched no component, in order.
pub fn unmatched_rules_in(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once(": rule \"")?;
            let (name, rest) = rest.split_once('"')?;
            rest.starts_with(" matched no component")
                .then(|| name.to_string())
        })
        .collect()
}

/// A run's stderr without the lines about rules that matched no component.
pub fn without_unmatched_rules(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.contains("\" matched no component"))
        .map(|l| format!("{l}\n"))
        .collect()
}
