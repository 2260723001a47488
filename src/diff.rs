//! Unified diffs of rewritten files, coloured like `git diff` when asked.

use similar::{ChangeTag, TextDiff};

/// Renders a unified diff (`--- a/f`, `+++ b/f`, 3 lines of context).
/// Empty when the texts are equal.
pub fn unified(old: &str, new: &str, name: &str, color: bool) -> String {
    if old == new {
        return String::new();
    }
    let diff = TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .diff_lines(old, new);
    let mut out = String::new();
    let (red, green, cyan, bold, reset) = if color {
        ("\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[1m", "\x1b[0m")
    } else {
        ("", "", "", "", "")
    };
    // `a/tmp/f.yaml` for `/tmp/f.yaml`, as `git diff --no-index` writes it.
    let name = name.trim_start_matches("./").trim_start_matches('/');
    out.push_str(&format!(
        "{bold}--- a/{name}{reset}\n{bold}+++ b/{name}{reset}\n"
    ));
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        out.push_str(&format!("{cyan}{}{reset}\n", hunk.header()));
        for change in hunk.iter_changes() {
            let (sign, c) = match change.tag() {
                ChangeTag::Delete => ('-', red),
                ChangeTag::Insert => ('+', green),
                ChangeTag::Equal => (' ', ""),
            };
            let line = change.value();
            // A CRLF file's lines keep their `\r`, as in `diff -u` and
            // `git diff`: the diff must apply with `patch` / `git apply`.
            let body = line.strip_suffix('\n').unwrap_or(line);
            let reset = if c.is_empty() { "" } else { reset };
            out.push_str(&format!("{c}{sign}{body}{reset}\n"));
            if change.missing_newline() {
                out.push_str("\\ No newline at end of file\n");
            }
        }
    }
    out
}

/// Counts the lines a diff adds and removes.
pub fn stats(old: &str, new: &str) -> (usize, usize) {
    let diff = TextDiff::from_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    for c in diff.iter_all_changes() {
        match c.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    (added, removed)
}
