//! A scalar's value read back from its source text: quoted scalars with
//! escapes or over several lines, and block scalars (`|`, `>`). Their values
//! differ from the text as written, and a span tree that copied each of
//! them would hold much of a KFP v1 file twice (its embedded sources and
//! component specs). The tree keeps only where such a scalar starts and
//! decodes it when asked; when it builds the node it checks, piece by piece
//! without copying, that decoding gives exactly the parser's value, and
//! copies the value as before when it does not.

/// Where decoded text goes: built into a string, or compared with a value.
pub(crate) trait Sink {
    /// Takes the next piece of the value; `false` stops decoding.
    fn put(&mut self, piece: &str) -> bool;
}

impl Sink for String {
    fn put(&mut self, piece: &str) -> bool {
        self.push_str(piece);
        true
    }
}

/// Compares the decoded pieces with a value, in order.
struct Expect<'v> {
    rest: &'v str,
}

impl Sink for Expect<'_> {
    fn put(&mut self, piece: &str) -> bool {
        match self.rest.strip_prefix(piece) {
            Some(r) => {
                self.rest = r;
                true
            }
            None => false,
        }
    }
}

/// Whether decoding the scalar at `at` gives exactly `value`. `parent` is
/// the column of the block collection holding it, if any (a block scalar's
/// indentation indicator counts from there).
pub(crate) fn gives(src: &str, at: usize, parent: Option<usize>, value: &str) -> bool {
    let mut e = Expect { rest: value };
    scalar(src, at, parent, &mut e) && e.rest.is_empty()
}

/// The value of the scalar at `at`, when it is one this module reads;
/// `size` is about how long it is.
pub(crate) fn value(src: &str, at: usize, parent: Option<usize>, size: usize) -> Option<String> {
    let mut s = String::with_capacity(size);
    scalar(src, at, parent, &mut s).then_some(s)
}

/// Decodes the scalar whose opening quote or block indicator is at `at`
/// into `sink`. `false` for anything it does not read (a block scalar at
/// the end of a file without a line break, content on its header line...).
fn scalar(src: &str, at: usize, parent: Option<usize>, sink: &mut impl Sink) -> bool {
    match src.as_bytes().get(at) {
        Some(b'\'') => quoted(src, at, true, sink),
        Some(b'"') => quoted(src, at, false, sink),
        Some(b'|') => block(src, at, true, parent, sink),
        Some(b'>') => block(src, at, false, parent, sink),
        _ => false,
    }
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn is_break(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

/// The length of the line break at `i` (`\r\n` counts as one).
fn break_len(b: &[u8], i: usize) -> usize {
    if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
        2
    } else {
        1
    }
}

fn breaks(n: usize, sink: &mut impl Sink) -> bool {
    (0..n).all(|_| sink.put("\n"))
}

/// A single- or double-quoted scalar: escapes resolved, line breaks folded
/// as YAML folds flow scalars (a break between text becomes a space, each
/// empty line a `\n`, blanks around breaks go, an escaped break joins).
/// Reads a line at a time up to the next quote, escape or break.
fn quoted(src: &str, at: usize, single: bool, sink: &mut impl Sink) -> bool {
    let b = src.as_bytes();
    let quote = b[at];
    let mut i = at + 1;
    loop {
        let stop = if single {
            memchr::memchr2(b'\'', b'\n', &b[i..])
        } else {
            memchr::memchr3(b'"', b'\\', b'\n', &b[i..])
        };
        let Some(n) = stop else {
            return false;
        };
        let j = i + n;
        match b[j] {
            b'\'' if single && b.get(j + 1) == Some(&b'\'') => {
                if !sink.put(&src[i..=j]) {
                    return false;
                }
                i = j + 2;
            }
            c if c == quote => return sink.put(&src[i..j]),
            b'\\' => {
                if !sink.put(&src[i..j]) {
                    return false;
                }
                match b.get(j + 1) {
                    // An escaped line break: the lines join, and each
                    // empty line after it is a line break.
                    Some(&c) if is_break(c) => {
                        let (next, empty) = fold(b, j + 1 + break_len(b, j + 1));
                        if !breaks(empty, sink) {
                            return false;
                        }
                        i = next;
                    }
                    _ => match escape(b, j) {
                        Some((c, len)) => {
                            if !sink.put(c.encode_utf8(&mut [0; 4])) {
                                return false;
                            }
                            i = j + len;
                        }
                        None => return false,
                    },
                }
            }
            _ => {
                // A line break: the line without its trailing blanks, then
                // a space, or a line break for each empty line.
                let line = src[i..j].trim_end_matches([' ', '\t', '\r']);
                let (next, empty) = fold(b, j + 1);
                let ok = sink.put(line)
                    && if empty == 0 {
                        sink.put(" ")
                    } else {
                        breaks(empty, sink)
                    };
                if !ok {
                    return false;
                }
                i = next;
            }
        }
    }
}

/// From just after a line break at `i`: where the next line's text starts
/// (past its blanks), and how many empty lines come before it.
fn fold(b: &[u8], mut i: usize) -> (usize, usize) {
    let mut empty = 0;
    loop {
        while i < b.len() && is_blank(b[i]) {
            i += 1;
        }
        match b.get(i) {
            Some(&c) if is_break(c) => {
                i += break_len(b, i);
                empty += 1;
            }
            _ => return (i, empty),
        }
    }
}

/// The character of the escape at `b[i]` (a backslash) and its length.
fn escape(b: &[u8], i: usize) -> Option<(char, usize)> {
    let c = match *b.get(i + 1)? {
        b'0' => '\0',
        b'a' => '\x07',
        b'b' => '\x08',
        b't' | b'\t' => '\t',
        b'n' => '\n',
        b'v' => '\x0b',
        b'f' => '\x0c',
        b'r' => '\r',
        b'e' => '\x1b',
        b' ' => ' ',
        b'"' => '"',
        b'/' => '/',
        b'\\' => '\\',
        b'N' => '\u{85}',
        b'_' => '\u{a0}',
        b'L' => '\u{2028}',
        b'P' => '\u{2029}',
        x @ (b'x' | b'u' | b'U') => {
            let digits = match x {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let hex = std::str::from_utf8(b.get(i + 2..i + 2 + digits)?).ok()?;
            if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                return None;
            }
            let c = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
            return Some((c, 2 + digits));
        }
        _ => return None,
    };
    Some((c, 2))
}

/// How a block scalar's final line breaks are kept.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// A literal (`|`) or folded (`>`) block scalar whose indicator is at
/// `at`, in a block collection at column `parent` (if any). Its
/// indentation is the indicator's past the parent's, or else the first
/// content line's.
fn block(src: &str, at: usize, literal: bool, parent: Option<usize>, sink: &mut impl Sink) -> bool {
    let b = src.as_bytes();
    let mut i = at + 1;
    let mut chomp = Chomp::Clip;
    let mut increment = 0;
    for _ in 0..2 {
        match b.get(i) {
            Some(&c @ (b'+' | b'-')) if chomp == Chomp::Clip => {
                chomp = if c == b'+' { Chomp::Keep } else { Chomp::Strip };
            }
            Some(&c @ b'1'..=b'9') if increment == 0 => increment = usize::from(c - b'0'),
            _ => break,
        }
        i += 1;
    }
    // The rest of the header line: blanks and a comment.
    let Some(nl) = memchr::memchr(b'\n', &b[i..]) else {
        return false;
    };
    let header = src[i..i + nl].trim_end_matches('\r');
    if !(header.is_empty() || header.starts_with(is_blank_char)) {
        return false;
    }
    i += nl + 1;
    // The indentation: the indicator's, else the first content line's,
    // or that of a longer blank line before it.
    let mut indent = 0;
    if increment > 0 {
        indent = parent.map_or(increment, |p| p + increment);
    } else {
        let mut j = i;
        loop {
            let spaces = b[j..].iter().take_while(|&&c| c == b' ').count();
            indent = indent.max(spaces);
            match b.get(j + spaces) {
                Some(b'\n') => j += spaces + 1,
                Some(b'\r') if b.get(j + spaces + 1) == Some(&b'\n') => j += spaces + 2,
                Some(b'\t') | None => return false,
                Some(_) => break,
            }
        }
    }
    if indent == 0 {
        return false;
    }
    let mut pending_break = false;
    let mut empty_lines = 0;
    let mut leading_blank = false;
    loop {
        let end = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |n| i + n);
        let line = src[i..end].strip_suffix('\r').unwrap_or(&src[i..end]);
        let spaces = line.bytes().take_while(|&c| c == b' ').count();
        if spaces < indent && spaces < line.len() {
            // A less indented line ends the scalar.
            break;
        }
        if end == b.len() {
            // The last line of a file without a final line break.
            return false;
        }
        if line.len() <= indent {
            empty_lines += 1;
        } else {
            let content = &line[indent..];
            let trailing_blank = content.starts_with(is_blank_char);
            let ok = if !literal && pending_break && !leading_blank && !trailing_blank {
                if empty_lines == 0 {
                    sink.put(" ")
                } else {
                    breaks(empty_lines, sink)
                }
            } else {
                (!pending_break || sink.put("\n")) && breaks(empty_lines, sink)
            };
            if !ok || !sink.put(content) {
                return false;
            }
            pending_break = true;
            empty_lines = 0;
            leading_blank = trailing_blank;
        }
        i = end + 1;
        if i >= b.len() {
            break;
        }
    }
    match chomp {
        Chomp::Strip => true,
        Chomp::Clip => !pending_break || sink.put("\n"),
        Chomp::Keep => (!pending_break || sink.put("\n")) && breaks(empty_lines, sink),
    }
}

fn is_blank_char(c: char) -> bool {
    c == ' ' || c == '\t'
}

#[cfg(test)]
mod tests {
    use super::*;
    use saphyr_parser::{Event, Parser, ScalarStyle};

    /// Each quoted or block scalar of `src`, decoded from where it starts,
    /// is what the parser reads; returns how many there were.
    fn agrees(src: &str) -> usize {
        let byte = |char_index: usize| {
            src.char_indices()
                .nth(char_index)
                .map_or(src.len(), |(b, _)| b)
        };
        let mut read = 0;
        let mut p = Parser::new_from_str(src);
        while let Some(Ok((ev, span))) = p.next_event() {
            let Event::Scalar(want, style, ..) = ev else {
                continue;
            };
            let start = byte(span.start.index());
            let at = match style {
                ScalarStyle::Plain => continue,
                ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => start,
                ScalarStyle::Literal | ScalarStyle::Folded => {
                    crate::tree::block_scalar_header(src, start)
                        .expect("a header")
                        .0
                }
            };
            let parent = parent_col(src, at);
            assert_eq!(
                value(src, at, parent, 0).as_deref(),
                Some(&*want),
                "{src:?} at {at}"
            );
            assert!(gives(src, at, parent, &want), "{src:?} at {at}");
            read += 1;
        }
        read
    }

    /// The column of the block collection holding the scalar at `at` in
    /// these tests: its line's first key or `-`.
    fn parent_col(src: &str, at: usize) -> Option<usize> {
        let line = &src[src[..at].rfind('\n').map_or(0, |p| p + 1)..at];
        Some(line.len() - line.trim_start_matches([' ', '-']).len()).map(|c| {
            if line.trim_start_matches([' ', '\t']).starts_with('-') {
                line.find('-').unwrap_or(c)
            } else {
                c
            }
        })
    }

    #[test]
    fn quoted_scalars_fold_and_unescape_as_the_parser_does() {
        for src in [
            "a: 'it''s'\n",
            "a: 'one\n  two'\n",
            "a: 'one  \n\n  two\n\n\n  three'\n",
            "a: \"tab\\there \\u00e9 \\x41 \\U0001F600\"\n",
            "a: \"joined\\\n    on\"\n",
            "a: \"joined \\\n\n    on\"\n",
            "a: \"one\n  two \\\" three\"\n",
            "a: '\u{e9} and \u{fc}\n  over lines'\n",
            "a: 'crlf\r\n  lines'\r\n",
            "- '{\"name\": \"x\",\n    \"more\": [1, 2]}'\n",
        ] {
            assert_eq!(agrees(src), 1, "{src:?}");
        }
    }

    #[test]
    fn block_scalars_read_as_the_parser_reads_them() {
        for src in [
            "a: |\n  one\n  two\n",
            "a: |-\n  one\n\n  two\n\n",
            "a: |+\n  one\n\n  two\n\n\nb: 1\n",
            "a: >\n  one\n  two\n\n  three\n    more\n  four\n",
            "a: >-\n  folded\n  text\n",
            "a: |\n\n  after a blank\n     deeper\n   \n  end\nb: 2\n",
            "- |\n  def f():\n      return 1\n\n  print(f())\n- next\n",
            "a: | # a comment\n  text\n",
            "a: >+\n  keep\n\n",
            "a: |2\n\n    deeper first\n  then\n",
            "list:\n  - |1-\n     x\n    y\n",
        ] {
            assert_eq!(agrees(src), 1, "{src:?}");
        }
    }

    #[test]
    fn what_it_does_not_read_it_leaves_to_the_copy() {
        // A scalar that runs to the end of a file without a line break,
        // content on the header line.
        for src in ["a: |\n  x", "a: |x\n  y\n"] {
            let at = src.find(['|', '>']).expect("an indicator");
            assert_eq!(value(src, at, Some(0), 0), None, "{src:?}");
        }
    }

    #[test]
    fn comparing_stops_at_the_first_difference() {
        let src = "a: 'one\n  two'\n";
        assert!(gives(src, 3, None, "one two"));
        assert!(!gives(src, 3, None, "one tw"));
        assert!(!gives(src, 3, None, "one two!"));
        assert!(!gives(src, 3, None, "one\ntwo"));
    }
}
