//! Finding things on disk: the policy (`-p`, `$KFSCHED_POLICY`, the nearest
//! `.kfsched.yaml` upward), the input files (directories recursed for
//! `*.yaml`, `*.yml` and `*.json`, as kubectl's `-f DIR` reads them), and
//! writing results back atomically.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::diag::Diagnostic;

/// The file name searched for upward from the current directory.
pub const POLICY_FILE: &str = ".kfsched.yaml";

/// The API version and kind a policy declares (what tells a policy from
/// an input, when one is given for the other).
pub const POLICY_API_VERSION: &str = "kfsched.dev/v1alpha1";
pub const POLICY_KIND: &str = "SchedulingPolicy";

/// The extensions a directory is searched for, as kubectl's `-f DIR`.
pub const EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

/// Why a policy file was chosen (what `-v` says).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyOrigin {
    /// `-p/--policy FILE`.
    Flag,
    /// `$KFSCHED_POLICY`.
    Env,
    /// The nearest `.kfsched.yaml` upward from this directory.
    Nearest(PathBuf),
}

impl std::fmt::Display for PolicyOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PolicyOrigin::Flag => write!(f, "from -p/--policy"),
            PolicyOrigin::Env => write!(f, "from $KFSCHED_POLICY"),
            PolicyOrigin::Nearest(cwd) => {
                write!(f, "the nearest {POLICY_FILE} upward from {}", cwd.display())
            }
        }
    }
}

/// Where the policy comes from.
pub fn policy_path(
    explicit: Option<&Path>,
    env: Option<OsString>,
    cwd: &Path,
) -> Result<PathBuf, String> {
    find_policy(explicit, env, cwd).map(|(p, _)| p)
}

/// Where the policy comes from, and why that file.
pub fn find_policy(
    explicit: Option<&Path>,
    env: Option<OsString>,
    cwd: &Path,
) -> Result<(PathBuf, PolicyOrigin), String> {
    if let Some(p) = explicit {
        return Ok((p.to_path_buf(), PolicyOrigin::Flag));
    }
    if let Some(e) = env.filter(|e| !e.is_empty()) {
        return Ok((PathBuf::from(e), PolicyOrigin::Env));
    }
    nearest_policy(cwd)
        .map(|p| (p, PolicyOrigin::Nearest(cwd.to_path_buf())))
        .ok_or_else(|| {
            format!(
                "no policy: pass -p/--policy FILE, set $KFSCHED_POLICY, or put a {POLICY_FILE} in {} or a parent directory (`kubectl kfsched init` writes a starter)",
                cwd.display()
            )
        })
}

/// The nearest `.kfsched.yaml` from `cwd` upward.
pub fn nearest_policy(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .map(|d| d.join(POLICY_FILE))
        .find(|c| c.is_file())
}

/// One input to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Stdin,
    File(PathBuf),
}

impl Source {
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".into(),
            Source::File(p) => p.display().to_string(),
        }
    }
}

/// Expands the command-line paths: files as given, directories recursed
/// (sorted, hidden entries skipped) for [`EXTENSIONS`], `-` for stdin.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<Source>, Vec<Diagnostic>> {
    expand_args(paths).map(|v| v.into_iter().map(|(s, _)| s).collect())
}

/// As [`expand`], with the index of the command-line path each input came
/// from (for messages that count what the user passed).
pub fn expand_args(paths: &[PathBuf]) -> Result<Vec<(Source, usize)>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (arg, p) in paths.iter().enumerate() {
        if p.as_os_str() == "-" {
            out.push((Source::Stdin, arg));
            continue;
        }
        match std::fs::metadata(p) {
            Err(e) => errors.push(Diagnostic::file(
                &p.display().to_string(),
                format!("cannot read: {e}"),
            )),
            Ok(m) if m.is_dir() => {
                let mut found = Vec::new();
                walk(p, &mut found, &mut errors);
                if found.is_empty() && errors.is_empty() {
                    errors.push(Diagnostic::file(
                        &p.display().to_string(),
                        "the directory holds no *.yaml, *.yml or *.json file; pass pipeline files or a directory that has some",
                    ));
                }
                out.extend(found.into_iter().map(|s| (s, arg)));
            }
            Ok(_) => out.push((Source::File(p.clone()), arg)),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // A file reached through several paths (a symlink, `dir` and
    // `dir/a.yaml`) is processed once, at the first place given, under
    // the first name that is not a symlink when there is one: that is
    // the file `-i` writes, and a `diff | patch -p1` refuses symlinks.
    let is_link = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    let mut seen: kfsched_yaml::hash::HashMap<PathBuf, usize> = Default::default();
    let mut kept: Vec<(Source, usize)> = Vec::with_capacity(out.len());
    for (s, arg) in out {
        let Source::File(p) = &s else {
            kept.push((s, arg));
            continue;
        };
        let key = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        match seen.get(&key) {
            None => {
                seen.insert(key, kept.len());
                kept.push((s, arg));
            }
            Some(&i) => {
                if let (Source::File(first), _) = &kept[i] {
                    if is_link(first) && !is_link(p) {
                        kept[i].0 = s;
                    }
                }
            }
        }
    }
    Ok(kept)
}

/// Appends the files with one of [`EXTENSIONS`] under `dir`: depth first, each
/// directory's files (sorted) before its subdirectories (sorted), hidden
/// entries skipped, symbolic links not followed into directories.
fn walk(dir: &Path, out: &mut Vec<Source>, errors: &mut Vec<Diagnostic>) {
    let hidden = |e: &walkdir::DirEntry| {
        let name = e.file_name().to_string_lossy();
        e.depth() > 0 && name.starts_with('.') && name != POLICY_FILE
    };
    let walker = walkdir::WalkDir::new(dir)
        .sort_by_key(|e| (e.file_type().is_dir(), e.file_name().to_os_string()))
        .into_iter()
        .filter_entry(|e| !hidden(e));
    for entry in walker {
        match entry {
            Ok(e) if !e.file_type().is_dir() => {
                let name = e.file_name().to_string_lossy();
                let wanted = EXTENSIONS
                    .iter()
                    .any(|x| name.strip_suffix(x).is_some_and(|s| s.ends_with('.')));
                if wanted && name != POLICY_FILE {
                    out.push(Source::File(e.into_path()));
                }
            }
            Ok(_) => {}
            Err(e) => {
                let at = e.path().unwrap_or(dir).display().to_string();
                let why = e
                    .io_error()
                    .map_or_else(|| e.to_string(), std::io::Error::to_string);
                errors.push(Diagnostic::file(
                    &at,
                    format!("cannot read the directory: {why}"),
                ));
            }
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename, keeping the file's permissions. A symlink is written
/// through: the file it points to is replaced and the link stays a link.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// [`write_atomic`] of what `write` writes (through a buffer), such as a
/// [`Patch`](kfsched_yaml::Patch) streamed without building the text.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let resolved;
    let path = if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        resolved = std::fs::canonicalize(path)?;
        resolved.as_path()
    } else {
        path
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let meta = std::fs::metadata(path)?;
    if meta.permissions().readonly() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the file is read-only",
        ));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.kfsched-{}.tmp", std::process::id()));
    let result = (|| {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        let mut buffered = std::io::BufWriter::with_capacity(1 << 16, f);
        write(&mut buffered)?;
        let f = buffered
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        f.sync_all()?;
        std::fs::set_permissions(&tmp, meta.permissions())?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
