//! kubectl habits: flags a kubectl user types by reflex that kfsched's
//! offline commands do not take. clap would answer `--dry-run` with "to pass
//! '--dry-run' as a value, use '-- --dry-run'", which sends the user the
//! wrong way; these get the flag that does what they meant.

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// What to do instead, for a flag `command` does not take.
fn instead(command: &str, flag: &str) -> Option<String> {
    let name = flag.split('=').next().unwrap_or(flag);
    match (command, name) {
        ("rewrite", "--dry-run") => Some(
            "rewrite writes files only with -i; --check writes nothing and exits 1 if a file would change, and --diff shows how".into(),
        ),
        ("init", "--dry-run") => Some("-p - prints the starter policy instead of writing it".into()),
        ("diff" | "explain" | "check" | "validate" | "schema", "--dry-run") => {
            Some(format!("{command} writes nothing: leave out --dry-run"))
        }
        ("rewrite" | "diff" | "explain" | "check" | "init", "-R" | "--recursive") => Some(
            "directories are always searched recursively (for *.yaml, *.yml and *.json): leave it out".into(),
        ),
        _ => None,
    }
}

/// The first word that names a command (`node` is followed by its own),
/// past the flags the root takes (`-p FILE`, `-v`).
fn command(args: &[OsString]) -> Option<String> {
    let words: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    let mut iter = words.iter().copied();
    let mut first = None;
    while let Some(w) = iter.next() {
        match w {
            "-p" | "--policy" => {
                iter.next();
            }
            w if w.starts_with('-') => {}
            w => {
                first = Some(w);
                break;
            }
        }
    }
    match first? {
        "node" => iter
            .find(|w| !w.starts_with('-'))
            .map(|sub| format!("node {sub}")),
        other => Some(other.to_string()),
    }
}

/// clap's error for an unknown kubectl-habit flag, with the tip that
/// leads the right way; `None` for every other error.
pub fn explain(e: &clap::Error, args: &[OsString]) -> Option<String> {
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(flag)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let tip = instead(&command(args)?, flag)?;
    let rendered = e.render().to_string();
    let mut out = String::new();
    let mut lines = rendered.lines().peekable();
    if let Some(first) = lines.next() {
        out.push_str(first);
        out.push_str(&format!("\n\n  tip: {tip}\n"));
    }
    // clap's own tips (`use '-- --dry-run'`) and the blank line before them go.
    let rest: Vec<&str> = lines
        .filter(|l| !l.trim_start().starts_with("tip:"))
        .collect();
    let mut blank = true;
    for l in rest {
        if l.is_empty() {
            if blank {
                continue;
            }
            blank = true;
        } else {
            blank = false;
        }
        out.push('\n');
        out.push_str(l);
    }
    out.push('\n');
    Some(out)
}
