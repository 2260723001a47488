//! What the binary says on stderr: errors, warnings and notes, as text lines
//! (`error: FILE:LINE:COL: YAML.PATH: message`) or, with
//! `KFSCHED_DIAGNOSTICS=json`, as one JSON object per line, so that programs
//! (the Python API) read the diagnostics instead of parsing sentences.
//!
//! A JSON line has every key, `null` where there is nothing:
//! `{"level":"error","category":"policy","file":"p.yaml","line":3,"column":9,"path":"spec.rules[0].name","message":"..."}`.
//! `category` says what the problem is about: `policy` (the SchedulingPolicy
//! file), `input` (pipelines, node snapshots, ResourceLists), `usage` (the
//! command line) or `cluster` (the API server).

use std::fmt::Display;
use std::io::Write;
use std::sync::OnceLock;

use kfsched::diag::Diagnostic;

/// The variable that switches stderr to JSON lines.
pub const VAR: &str = "KFSCHED_DIAGNOSTICS";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    /// What `-v` and `--check` say about files; not a problem.
    Info,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    Policy,
    Input,
    Usage,
    Cluster,
}

static JSON: OnceLock<bool> = OnceLock::new();

/// Reads `KFSCHED_DIAGNOSTICS` once, before anything is printed. An
/// unknown value is a usage error (said in text: the caller did not ask for
/// JSON it would understand).
pub fn init() -> Result<(), String> {
    let value = std::env::var_os(VAR).unwrap_or_default();
    let json = match value.to_str() {
        Some("" | "text") => false,
        Some("json") => true,
        _ => {
            let _ = JSON.set(false);
            return Err(format!(
                "{VAR}={}: expected `text` (the default) or `json`",
                value.to_string_lossy()
            ));
        }
    };
    let _ = JSON.set(json);
    Ok(())
}

/// Whether stderr carries JSON lines.
pub fn json() -> bool {
    *JSON.get().unwrap_or(&false)
}

/// A problem located in a file.
pub fn diag(level: Level, category: Category, d: &Diagnostic) {
    if json() {
        line(
            level,
            category,
            Some(&d.file),
            (d.line > 0).then_some((d.line, d.col)),
            Some(d.path.as_str()).filter(|p| !p.is_empty()),
            &d.message,
        );
    } else {
        text(level, d);
    }
}

/// Every diagnostic of a list, in order.
pub fn diags(level: Level, category: Category, ds: &[Diagnostic]) {
    for d in ds {
        diag(level, category, d);
    }
}

/// A problem or note with no location in a file.
pub fn message(level: Level, category: Category, msg: impl Display) {
    if json() {
        line(level, category, None, None, None, &msg.to_string());
    } else {
        text(level, msg);
    }
}

pub fn error(category: Category, msg: impl Display) {
    message(Level::Error, category, msg);
}

pub fn warning(category: Category, msg: impl Display) {
    message(Level::Warning, category, msg);
}

fn text(level: Level, msg: impl Display) {
    let prefix = match level {
        Level::Error => "error: ",
        Level::Warning => "warning: ",
        Level::Info => "",
    };
    let _ = writeln!(std::io::stderr().lock(), "{prefix}{msg}");
}

fn line(
    level: Level,
    category: Category,
    file: Option<&str>,
    at: Option<(usize, usize)>,
    path: Option<&str>,
    message: &str,
) {
    let j = serde_json::json!({
        "level": match level {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Info => "info",
        },
        "category": match category {
            Category::Policy => "policy",
            Category::Input => "input",
            Category::Usage => "usage",
            Category::Cluster => "cluster",
        },
        "file": file,
        "line": at.map(|a| a.0),
        "column": at.map(|a| a.1),
        "path": path,
        "message": message,
    });
    let _ = writeln!(std::io::stderr().lock(), "{j}");
}
