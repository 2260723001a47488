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
    let (a, b) = (header_name("a/", name), header_name("b/", name));
    out.push_str(&format!("{bold}--- {a}{reset}\n{bold}+++ {b}{reset}\n"));
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

/// A file name in a `---`/`+++` header as git writes it, so that `patch`
/// and `git apply` read it back: C-quoted when it holds a quote, a
/// backslash or a control character, ended by a tab when it holds a space
/// (patch reads a name up to the first blank otherwise).
fn header_name(prefix: &str, name: &str) -> String {
    if name
        .chars()
        .any(|c| c == '"' || c == '\\' || c.is_control())
    {
        let mut q = String::from("\"");
        for c in prefix.chars().chain(name.chars()) {
            match c {
                '"' => q.push_str("\\\""),
                '\\' => q.push_str("\\\\"),
                '\t' => q.push_str("\\t"),
                '\n' => q.push_str("\\n"),
                '\r' => q.push_str("\\r"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        q.push_str(&format!("\\{b:03o}"));
                    }
                }
                c => q.push(c),
            }
        }
        q.push('"');
        q
    } else if name.contains(' ') {
        format!("{prefix}{name}\t")
    } else {
        format!("{prefix}{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::header_name;

    #[test]
    fn header_names_are_written_as_git_writes_them() {
        assert_eq!(header_name("a/", "p/x.yaml"), "a/p/x.yaml");
        assert_eq!(header_name("a/", "my file.yaml"), "a/my file.yaml\t");
        assert_eq!(header_name("b/", "t\tx\".yaml"), "\"b/t\\tx\\\".yaml\"");
        assert_eq!(header_name("a/", "back\\slash"), "\"a/back\\\\slash\"");
    }
}
