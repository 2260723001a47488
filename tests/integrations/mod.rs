//! Integrations with the real clients: krew, pre-commit, kustomize, kpt, kubectl.
//!
//! Each test drives the real tool the way its users do, in a temporary
//! directory with a hermetic environment (cleared, with HOME, KUBECONFIG and
//! KREW_ROOT pointing into the sandbox). Tools come from the variables that
//! `scripts/setup-integrations.sh env` prints; tests that need a tool that
//! script builds are `#[ignore]`d, and fail (never pass vacuously) when the
//! tool is missing.

mod check;
mod completion;
mod krew;
mod krm;
mod pipeline_versions;
mod precommit;
mod python_api;
mod release;
mod scaling;
mod sweep;
mod wheels;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::root;

pub const KFSCHED: &str = env!("CARGO_BIN_EXE_kubectl-kfsched");
pub const COMPANION: &str = env!("CARGO_BIN_EXE_kubectl_complete-kfsched");

/// Searches PATH for `name`.
fn which(name: &Path) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A tool from `$var`, else `default` (a bare name is looked up on PATH).
/// A missing tool fails the test with what to do about it.
#[track_caller]
pub fn tool(var: &str, default: &str) -> PathBuf {
    let given = std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let wanted = given.clone().unwrap_or_else(|| PathBuf::from(default));
    let found = if wanted.components().count() == 1 {
        which(&wanted)
    } else {
        Some(wanted.clone()).filter(|p| p.is_file())
    };
    match found {
        Some(p) => p,
        None => panic!(
            "{} not found ({}): run scripts/setup-integrations.sh and \
             `eval \"$(scripts/setup-integrations.sh env)\"`, or set {var}",
            wanted.display(),
            if given.is_some() {
                format!("${var}")
            } else {
                format!("${var} is unset; default {default}")
            }
        ),
    }
}

/// A tool from `$KFSCHED_TOOLS_BIN` (built by scripts/build-tools.sh).
#[track_caller]
pub fn built_tool(name: &str) -> PathBuf {
    let dir = std::env::var_os("KFSCHED_TOOLS_BIN")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".cache/tools-bin"));
    let p = dir.join(name);
    assert!(
        p.is_file(),
        "{} not found: run scripts/setup-integrations.sh (it builds kustomize, krew and \
         validate-krew-manifest into $KFSCHED_TOOLS_BIN, default .cache/tools-bin)",
        p.display()
    );
    p
}

/// The directory of the cargo (and rustc) that builds these tests.
pub fn toolchain() -> PathBuf {
    Path::new(env!("CARGO"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

pub fn kubectl() -> PathBuf {
    tool("KFSCHED_KUBECTL", "kubectl")
}

/// A temporary directory with a home, an install directory for the plugin
/// and a hermetic environment for the tools run in it.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    /// `$HOME`: empty, so no ~/.kube, ~/.krew or user config leaks in.
    pub home: PathBuf,
    /// `kubectl-kfsched` and `kubectl_complete-kfsched`, linked to the binaries under test.
    pub bin: PathBuf,
    /// The working directory of every command (the project), apart from `home` and `bin`.
    pub work: PathBuf,
    /// Directories searched before the plugin's (tools under test).
    pub path: Vec<PathBuf>,
    /// Extra variables.
    pub env: Vec<(String, OsString)>,
    /// Whether `bin` is on PATH (off when the plugin must come from elsewhere, e.g. krew).
    pub plugin_on_path: bool,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let bin = dir.path().join("bin");
        let work = dir.path().join("work");
        for d in [&home, &bin, &work] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        for (name, target) in [
            ("kubectl-kfsched", KFSCHED),
            ("kubectl_complete-kfsched", COMPANION),
        ] {
            std::os::unix::fs::symlink(target, bin.join(name)).expect("link the binary");
        }
        Sandbox {
            dir,
            home,
            bin,
            work,
            path: Vec::new(),
            env: Vec::new(),
            plugin_on_path: true,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `files` (path relative to `work`, contents).
    pub fn write(&self, files: &[(&str, &str)]) {
        for (name, text) in files {
            let p = self.work.join(name);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, text).expect("write");
        }
    }

    /// A command for `program` with a cleared environment: PATH is the
    /// sandbox's tool directories, then the plugin's, then the directory of
    /// kubectl and the system's; HOME, KUBECONFIG (absent file), KREW_ROOT
    /// and the XDG directories point into the sandbox.
    pub fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut dirs: Vec<PathBuf> = self.path.clone();
        if self.plugin_on_path {
            dirs.push(self.bin.clone());
        }
        let kubectl = std::env::var_os("KFSCHED_KUBECTL")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| which(Path::new("kubectl")));
        if let Some(k) = kubectl.as_deref().and_then(Path::parent) {
            dirs.push(k.to_path_buf());
        }
        dirs.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
        // kubectl warns about PATH entries it cannot read.
        dirs.retain(|d| d.is_dir());
        dirs.dedup();
        let mut c = Command::new(program);
        c.env_clear()
            .env("PATH", std::env::join_paths(&dirs).expect("PATH"))
            .env("HOME", &self.home)
            .env("KUBECONFIG", self.home.join("no-kubeconfig"))
            .env("KREW_ROOT", self.path().join("krew"))
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("TMPDIR", self.path())
            .env("LANG", "C.UTF-8")
            .current_dir(&self.work)
            .stdin(Stdio::null());
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }
}

/// A finished process, for assertions.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Out {
    #[track_caller]
    pub fn ok(&self) -> &Out {
        self.code(0)
    }

    #[track_caller]
    pub fn code(&self, code: i32) -> &Out {
        assert_eq!(self.code, code, "expected exit {code}\n{self}");
        self
    }

    #[track_caller]
    pub fn failed(&self) -> &Out {
        assert_ne!(self.code, 0, "expected a failure\n{self}");
        self
    }

    /// stdout and stderr together.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {} after {:.1?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.took, self.stdout, self.stderr
        )
    }
}

/// Runs `cmd` to completion, feeding `stdin` when given.
pub fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Out {
    use std::io::Write;
    let start = Instant::now();
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if let Some(input) = stdin {
        let mut s = child.stdin.take().expect("stdin");
        s.write_all(input).expect("write stdin");
    }
    let o = child.wait_with_output().expect("wait");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        took: start.elapsed(),
    }
}

/// The example policy and pipelines the README walks through.
pub fn example(path: &str) -> String {
    std::fs::read_to_string(root().join("examples").join(path)).expect("example file")
}

/// What `kubectl-kfsched rewrite -p POLICY` makes of `input` (the reference
/// the integrations must reproduce).
pub fn rewritten(policy: &str, input: &str) -> String {
    let sb = Sandbox::new();
    sb.write(&[("policy.yaml", policy)]);
    let out = run(
        sb.cmd(KFSCHED).args(["rewrite", "-p", "policy.yaml"]),
        Some(input.as_bytes()),
    );
    out.ok();
    out.stdout
}
