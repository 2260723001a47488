//! Finding things on disk: the policy (`-p`, `$KFSCHED_POLICY`, the nearest
//! `.kfsched.yaml` upward), the input files (directories recursed for
//! `*.yaml`/`*.yml`), and writing results back atomically.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::diag::Diagnostic;

/// The file name searched for upward from the current directory.
pub const POLICY_FILE: &str = ".kfsched.yaml";

/// Where the policy comes from.
pub fn policy_path(
    explicit: Option<&Path>,
    env: Option<OsString>,
    cwd: &Path,
) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(e) = env.filter(|e| !e.is_empty()) {
        return Ok(PathBuf::from(e));
    }
    let mut dir = Some(cwd);
    while let Some(d) = dir {
        let candidate = d.join(POLICY_FILE);
        if candidate.is_file() {
            return Ok(candidate);
        }
        dir = d.parent();
    }
    Err(format!(
        "no policy: pass -p/--policy FILE, set $KFSCHED_POLICY, or put a {POLICY_FILE} in {} or a parent directory",
        cwd.display()
    ))
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
/// (sorted, hidden entries skipped) for `*.yaml` and `*.yml`, `-` for stdin.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<Source>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(Source::Stdin);
            continue;
        }
        match std::fs::metadata(p) {
            Err(e) => errors.push(Diagnostic::file(
                &p.display().to_string(),
                format!("cannot read: {e}"),
            )),
            Ok(m) if m.is_dir() => {
                let before = out.len();
                walk(p, &mut out, &mut errors);
                if out.len() == before && errors.is_empty() {
                    errors.push(Diagnostic::file(
                        &p.display().to_string(),
                        "the directory holds no *.yaml or *.yml file; pass pipeline files or a directory that has some",
                    ));
                }
            }
            Ok(_) => out.push(Source::File(p.clone())),
        }
    }
    if errors.is_empty() {
        // A file reached through several paths (a symlink, `dir` and
        // `dir/a.yaml`) is processed once, at the first place given, under
        // the first name that is not a symlink when there is one: that is
        // the file `-i` writes, and a `diff | patch -p1` refuses symlinks.
        let is_link =
            |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
        let mut seen: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
        let mut kept: Vec<Source> = Vec::with_capacity(out.len());
        for s in out {
            let Source::File(p) = &s else {
                kept.push(s);
                continue;
            };
            let key = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            match seen.get(&key) {
                None => {
                    seen.insert(key, kept.len());
                    kept.push(s);
                }
                Some(&i) => {
                    if let Source::File(first) = &kept[i] {
                        if is_link(first) && !is_link(p) {
                            kept[i] = s;
                        }
                    }
                }
            }
        }
        Ok(kept)
    } else {
        Err(errors)
    }
}

/// Appends the `*.yaml`/`*.yml` files under `dir`: depth first, each
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
                if (name.ends_with(".yaml") || name.ends_with(".yml")) && name != POLICY_FILE {
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
