//! A line-based structural reader for PyYAML block output.
//!
//! KFP v2 pipeline documents are read, never edited: kfsched needs a few
//! dozen keys out of them (task names, component refs, executor images),
//! while most of their bytes are embedded Python sources. PyYAML's block
//! output is regular enough to read those keys by indentation alone: a
//! mapping's keys share one column, every nested value and every
//! continuation of a scalar is indented deeper, and sequences under a key
//! start with `- ` at the key's column. `project` walks the lines once,
//! records only the paths a [`Pattern`] asks for, and gives up (`None`) at
//! the first line that does not fit that picture; the caller then parses
//! the document normally. It does not validate the lines it skips: callers
//! check syntax with [`super::quick`] and, where that gives up, the parser.

use std::hash::{BuildHasherDefault, Hasher};

use super::value::Value;

/// One level of a projection: which keys to record and how.
#[derive(Clone, Copy, Debug)]
pub struct Pattern {
    /// The key, or `*` for every key.
    pub key: &'static str,
    pub then: Then,
}

/// What to record for a matched key.
#[derive(Clone, Copy, Debug)]
pub enum Then {
    /// Its value, which must be a one-line scalar (as text, or null).
    Scalar,
    /// Its value, a block mapping read with these patterns; other keys of
    /// it are recorded with a null value when `others` is set.
    Map(&'static [Pattern], bool),
}

/// What a projection found.
#[derive(Debug)]
pub struct Projection {
    pub value: Value,
    /// Byte offset where the document ends (the next `---`/`...` line, or the end).
    pub end: usize,
    /// Byte offsets and depths (1 = top level) of the key lines of the first
    /// three levels: a piece of the document from such a line up to (not
    /// past) the next line of a shallower depth parses on its own, which
    /// lets its syntax be checked in parallel.
    pub splits: Vec<(usize, u8)>,
}

struct Frame {
    /// Keys seen at this level (also the ones not recorded), for refusing duplicates.
    seen: std::collections::HashSet<u64, BuildHasherDefault<Prehashed>>,
    key_indent: Option<usize>,
    patterns: &'static [Pattern],
    others: bool,
    entries: Vec<(String, Value)>,
    name: String,
}

/// The first `a` followed by `b` (`": "` without a substring searcher).
fn find_pair(s: &str, a: u8, b: u8) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(i) = bytes[from..].iter().position(|&c| c == a) {
        let at = from + i;
        if bytes.get(at + 1) == Some(&b) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Whether the text holds a ` #` comment start.
fn has_comment(s: &str) -> bool {
    s.as_bytes().windows(2).any(|w| w == b" #")
}

/// A hasher for keys that are already hashes ([`key_hash`]).
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// FNV-1a: cheap, and only used to notice repeated keys.
fn key_hash(k: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in k.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn is_seq_item(rest: &str) -> bool {
    rest == "-" || rest.starts_with("- ")
}

/// Parses `key:` / `key: value` at the start of `rest`.
fn split_key(rest: &str) -> Option<(std::borrow::Cow<'_, str>, &str)> {
    let b = rest.as_bytes();
    match b.first()? {
        b'"' | b'\'' => {
            let (key, len) = quoted(rest)?;
            let after = &rest[len..];
            let after = after.strip_prefix(':')?;
            if !(after.is_empty() || after.starts_with(' ')) {
                return None;
            }
            Some((key.into(), after.trim_start_matches(' ')))
        }
        b'?' | b'&' | b'*' | b'!' | b'[' | b'{' | b'#' | b'|' | b'>' | b'%' | b'@' | b'`'
        | b',' => None,
        _ => {
            let (key, after) = match find_pair(rest, b':', b' ') {
                Some(i) => (&rest[..i], &rest[i + 2..]),
                None => (rest.strip_suffix(':')?, ""),
            };
            if key.is_empty() || key.ends_with(' ') || has_comment(key) {
                return None;
            }
            Some((key.into(), after.trim_start_matches(' ')))
        }
    }
}

/// A quoted scalar at the start of `s` that closes on this line: its value
/// and its length in bytes. Double-quoted scalars with escapes are left to
/// the real parser.
fn quoted(s: &str) -> Option<(String, usize)> {
    let q = s.as_bytes()[0];
    if q == b'"' {
        let end = s[1..].find('"')? + 1;
        let inner = &s[1..end];
        if inner.contains('\\') {
            return None;
        }
        return Some((inner.to_string(), end + 1));
    }
    let mut out = String::new();
    let mut i = 1;
    let b = s.as_bytes();
    while i < b.len() {
        if b[i] == b'\'' {
            if b.get(i + 1) == Some(&b'\'') {
                out.push('\'');
                i += 2;
                continue;
            }
            return Some((out, i + 1));
        }
        let ch = s[i..].chars().next()?;
        out.push(ch);
        i += ch.len_utf8();
    }
    None
}

/// A one-line scalar value.
fn scalar(v: &str) -> Option<Value> {
    let first = *v.as_bytes().first()?;
    match first {
        b'"' | b'\'' => {
            let (s, len) = quoted(v)?;
            crate::block::is_blank(&v[len..]).then_some(Value::Str(s))
        }
        b'&' | b'*' | b'!' | b'|' | b'>' | b'[' | b'{' | b'%' | b'@' | b'`' | b'#' => None,
        _ => {
            if has_comment(v) {
                return None;
            }
            Some(match v {
                "~" | "null" | "Null" | "NULL" => Value::Null,
                _ => Value::Str(v.to_string()),
            })
        }
    }
}

fn close(stack: &mut Vec<Frame>) {
    if let Some(mut f) = stack.pop() {
        if let Some(parent) = stack.last_mut() {
            // A projection of a 10 MB pipeline holds tens of thousands of
            // small maps: each keeps only the room it uses.
            f.entries.shrink_to_fit();
            parent.entries.push((f.name, Value::Map(f.entries)));
        } else {
            stack.push(f);
        }
    }
}

/// Reads the first document of `text` through `patterns`; `None` when the
/// text is not plain PyYAML block style where it matters.
pub fn project(text: &str, patterns: &'static [Pattern]) -> Option<Projection> {
    project_indented(text, patterns, 0)
}

/// [`project`] of a block mapping whose keys are at column `indent` (a
/// mapping nested in a document, cut out with its whole lines).
pub fn project_indented(
    text: &str,
    patterns: &'static [Pattern],
    indent: usize,
) -> Option<Projection> {
    let mut stack = vec![Frame {
        seen: Default::default(),
        key_indent: Some(indent),
        patterns,
        others: true,
        entries: Vec::new(),
        name: String::new(),
    }];
    let mut splits = Vec::new();
    // Skipping the lines of a value: (key column, whether a skipped line means give up).
    let mut skip: Option<(usize, bool)> = None;
    let mut pos = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut end = text.len();
    while pos < text.len() {
        let line_end =
            memchr::memchr(b'\n', &text.as_bytes()[pos..]).map_or(text.len(), |i| pos + i);
        let start = pos;
        pos = line_end + 1;
        let line = text[start..line_end]
            .strip_suffix('\r')
            .unwrap_or(&text[start..line_end]);
        if line.starts_with("---") || line.starts_with("...") {
            let rest = &line[3..];
            if rest.is_empty() || rest.starts_with(' ') {
                end = start;
                break;
            }
        }
        let rest = line.trim_start_matches(' ');
        if rest.is_empty() {
            continue;
        }
        let indent = line.len() - rest.len();
        if rest.starts_with('\t') {
            return None;
        }
        if let Some((col, strict)) = skip {
            if indent > col || (indent == col && is_seq_item(rest)) {
                if strict {
                    return None;
                }
                continue;
            }
            skip = None;
        }
        if rest.starts_with('#') {
            continue;
        }
        while stack.len() > 1
            && stack
                .last()
                .and_then(|f| f.key_indent)
                .is_some_and(|k| indent < k)
        {
            close(&mut stack);
        }
        let parent_indent = if stack.len() > 1 {
            stack[stack.len() - 2].key_indent
        } else {
            None
        };
        let top = stack.last_mut()?;
        match top.key_indent {
            None => {
                if parent_indent.is_some_and(|p| indent <= p) {
                    // `key:` with nothing under it: a null, not a mapping.
                    close(&mut stack);
                    let t = stack.last()?;
                    if t.key_indent != Some(indent) {
                        return None;
                    }
                } else {
                    top.key_indent = Some(indent);
                }
            }
            Some(k) if k != indent => return None,
            Some(_) => {}
        }
        if is_seq_item(rest) {
            return None;
        }
        let (key, value) = split_key(rest)?;
        let top = stack.last_mut()?;
        let hash = key_hash(&key);
        if !top.seen.insert(hash) {
            // A repeated key (or, rarely, a hash collision): let the parser decide.
            return None;
        }
        if stack.len() <= 3 {
            splits.push((start, stack.len() as u8));
        }
        let top = stack.last_mut()?;
        let pat = top
            .patterns
            .iter()
            .find(|p| p.key == key)
            .or_else(|| top.patterns.iter().find(|p| p.key == "*"));
        match pat.map(|p| p.then) {
            None => {
                if top.others {
                    top.entries.push((key.into_owned(), Value::Null));
                }
                skip = Some((indent, false));
            }
            Some(Then::Scalar) => {
                top.entries.push((key.into_owned(), scalar(value)?));
                skip = Some((indent, true));
            }
            Some(Then::Map(children, others)) => {
                if value.is_empty() {
                    stack.push(Frame {
                        seen: Default::default(),
                        key_indent: None,
                        patterns: children,
                        others,
                        entries: Vec::new(),
                        name: key.into_owned(),
                    });
                } else if value == "{}" {
                    top.entries.push((key.into_owned(), Value::Map(vec![])));
                    skip = Some((indent, true));
                } else {
                    return None;
                }
            }
        }
    }
    while stack.len() > 1 {
        close(&mut stack);
    }
    let root = stack.pop()?;
    Some(Projection {
        value: Value::Map(root.entries),
        end,
        splits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: &[Pattern] = &[Pattern {
        key: "name",
        then: Then::Scalar,
    }];
    const TASK: &[Pattern] = &[Pattern {
        key: "componentRef",
        then: Then::Map(NAME, false),
    }];
    const TASKS: &[Pattern] = &[Pattern {
        key: "*",
        then: Then::Map(TASK, false),
    }];
    const ROOT: &[Pattern] = &[Pattern {
        key: "tasks",
        then: Then::Map(TASKS, false),
    }];
    const TOP: &[Pattern] = &[Pattern {
        key: "root",
        then: Then::Map(ROOT, false),
    }];

    #[test]
    fn reads_only_what_it_is_asked_and_skips_deep_values() {
        let text = "# header\ncomponents:\n  comp-a:\n    x: 'it''s\n\n      long'\nroot:\n  tasks:\n    a:\n      cachingOptions: {}\n      componentRef:\n        name: comp-a\n      inputs:\n      - one\n    'b c':\n      componentRef:\n        name: \"comp-b\"\nsdkVersion: kfp-2.17.3\n---\nplatforms: {}\n";
        let p = project(text, TOP).unwrap();
        let v = p.value;
        assert!(v.get("components").is_some_and(Value::is_null));
        let tasks = v.get("root").and_then(|r| r.get("tasks")).unwrap();
        assert_eq!(
            tasks
                .get("a")
                .and_then(|t| t.get("componentRef"))
                .and_then(|c| c.get("name")),
            Some(&Value::str("comp-a"))
        );
        assert_eq!(
            tasks
                .get("b c")
                .and_then(|t| t.get("componentRef"))
                .and_then(|c| c.get("name")),
            Some(&Value::str("comp-b"))
        );
        assert_eq!(&text[p.end..], "---\nplatforms: {}\n");
        assert_eq!(p.splits.iter().filter(|(_, d)| *d == 1).count(), 3);
    }

    #[test]
    fn gives_up_on_what_it_cannot_read() {
        for bad in [
            "root:\n  tasks: {a: {}}\n",
            "root:\n  tasks:\n    a:\n      componentRef:\n        name: comp-a\n          continued\n",
            "root:\n\ttasks: {}\n",
            "root:\n  tasks:\n  - a\n",
            "root:\n  tasks:\n    a: &x\n      componentRef: {}\n",
            "root:\n  tasks:\n    a:\n      componentRef:\n        name: \"a\\u0041\"\n",
            "root:\n  tasks:\n    a: {}\n    a: {}\n",
        ] {
            assert!(project(bad, TOP).is_none(), "{bad:?}");
        }
    }
}
