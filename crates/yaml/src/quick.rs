//! A quick, conservative syntax check for PyYAML block output, and the
//! span tree of what it accepts.
//!
//! Checking a 500 KB KFP v2 pipeline with the real parser took about half of
//! a rewrite's time, while the file is a narrow, regular kind of YAML:
//! block mappings and sequences by indentation, one-line keys, and plain,
//! single- or double-quoted scalars (the embedded sources folded over
//! several lines), literal blocks (`|`, `|-`), and documents split by
//! `---` lines. [`accepts`] recognises exactly that subset in one pass
//! over the bytes. `true` means the text is valid YAML; `false` means "not
//! known": the caller then asks the real parser. Anything unusual (tabs,
//! non-ASCII bytes, anchors, tags, flow collections other than `{}`/`[]`,
//! folded blocks or ones with indicators, comments after values,
//! directives, `...`, compact nested sequences) gives `false`.
//!
//! The same pass tells a `Sink` what it reads, at the offsets the parser
//! gives its events, so that [`crate::Tree::parse`] builds the span tree
//! of such a file without the parser. That sink may also take the flow
//! collections the check only delimits (KFP v1 writes leaf collections in
//! flow style): `read_flow` reads PyYAML's, the parser the rest.
//!
//! The rules this module must never break are "accepted implies the
//! parser accepts" and "the tree built on the way is the parser's": the
//! unit tests mutate valid text byte by byte against the parser, and the
//! `quick` fuzz target does the same on random input.

use crate::tree::Style;

/// Whether `text` is certainly valid YAML (see the module docs).
pub fn accepts(text: &str) -> bool {
    gives_up_at(text).is_none()
}

/// [`accepts`], and its collections nest at most `depth` deep.
pub fn accepts_within(text: &str, depth: usize) -> bool {
    let (gave_up, d) = run(text, 0, Depth { now: 0, deepest: 0 });
    gave_up.is_none() && d.deepest <= depth
}

/// How deep the collections of a text nest.
struct Depth {
    now: usize,
    deepest: usize,
}

impl Sink for Depth {
    fn open(&mut self, _at: usize, _seq: bool) {
        self.now += 1;
        self.deepest = self.deepest.max(self.now);
    }

    fn close(&mut self) {
        self.now = self.now.saturating_sub(1);
    }

    fn empty_flow(&mut self, _at: usize, _seq: bool) {
        self.deepest = self.deepest.max(self.now + 1);
    }
}

/// The line (1-based) where the check gave up, or `None` when it accepts.
pub fn gives_up_at(text: &str) -> Option<usize> {
    run(text, 0, ()).0
}

/// What the check reports as it reads, in the order and at the offsets
/// (bytes of the whole text) saphyr-parser gives its events, so that the
/// span tree of an accepted text can be built on the way ([`Tree::parse`]).
/// Every method but [`Sink::unsure`] is told only of text the check has
/// accepted so far.
///
/// [`Tree::parse`]: crate::Tree::parse
pub(crate) trait Sink {
    /// A document starts: at its `---` (`explicit`), else at its first node.
    fn document(&mut self, _at: usize, _explicit: bool) {}
    /// The flow collection at `s..e` (through its closing bracket), which
    /// the check only delimited; `false` refuses it.
    fn flow(&mut self, _s: usize, _e: usize) -> bool {
        false
    }
    /// A block collection starts (the parser's start event at `at`).
    fn open(&mut self, _at: usize, _seq: bool) {}
    /// The block collection opened last ends.
    fn close(&mut self) {}
    /// An empty flow collection (`{}` or `[]`) at `at`.
    fn empty_flow(&mut self, _at: usize, _seq: bool) {}
    /// A scalar written at `s..e` (through the closing quote).
    fn scalar(&mut self, _s: usize, _e: usize, _style: Style) {}
    /// An empty value, reported at `at` (a key's `:`, the end of a `-`'s line).
    fn null(&mut self, _at: usize) {}
    /// Whether to go on past text the sink cannot place the parser's
    /// events for (the check alone always goes on).
    fn unsure(&mut self) -> bool {
        true
    }
}

impl Sink for () {}

/// What [`read_flow`] reads, at byte offsets of the text it is given.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FlowEvent {
    Open { at: usize, seq: bool },
    Close { at: usize },
    Scalar { s: usize, e: usize, style: Style },
}

/// Reads a flow collection of scalars the way PyYAML writes one (`{k: v,
/// 'k': "v"}`, `[a, 'b c']`, over several lines), into `out` at the
/// offsets saphyr-parser gives its events. `false`: not that (nested
/// collections, empty or explicit entries, a `:` or `#` in a plain
/// scalar, a bad escape...): the caller asks the parser.
pub(crate) fn read_flow(text: &str, out: &mut Vec<FlowEvent>) -> bool {
    let b = text.as_bytes();
    let skip = |mut i: usize| {
        while i < b.len() && matches!(b[i], b' ' | b'\n' | b'\r') {
            i += 1;
        }
        i
    };
    let (seq, close) = match b.first() {
        Some(b'[') => (true, b']'),
        Some(b'{') => (false, b'}'),
        _ => return false,
    };
    out.clear();
    out.push(FlowEvent::Open { at: 0, seq });
    let mut i = skip(1);
    if b.get(i) == Some(&close) {
        out.push(FlowEvent::Close { at: i });
        return i + 1 == b.len();
    }
    loop {
        let entry = if seq { 1 } else { 2 };
        for part in 0..entry {
            let Some((e, style)) = flow_scalar(b, i, !seq && part == 0) else {
                return false;
            };
            out.push(FlowEvent::Scalar { s: i, e, style });
            i = e;
            if !seq && part == 0 {
                // `key: value`, as PyYAML writes it.
                i = skip(i);
                if b.get(i) != Some(&b':') || !matches!(b.get(i + 1), Some(b' ' | b'\n' | b'\r')) {
                    return false;
                }
                i += 1;
            }
            i = skip(i);
        }
        match b.get(i) {
            Some(&b',') => i = skip(i + 1),
            Some(&c) if c == close => {
                out.push(FlowEvent::Close { at: i });
                return i + 1 == b.len();
            }
            _ => return false,
        }
    }
}

/// Whether `c` (then `next`) may start a plain scalar, or a word of one
/// after a blank, in a flow collection: no indicator, but a `-` before a
/// letter, digit or `-` (`--flag`).
fn starts_word(c: u8, next: Option<u8>) -> bool {
    match c {
        b'-' => next.is_some_and(|n| n.is_ascii_alphanumeric() || n == b'-'),
        c => !is_indicator(c),
    }
}

/// The end and style of the scalar at `b[i]` in a flow collection of
/// [`read_flow`]'s kind; `key`: a mapping key, which `: ` ends.
fn flow_scalar(b: &[u8], i: usize, key: bool) -> Option<(usize, Style)> {
    match *b.get(i)? {
        b'\'' => {
            let mut j = i + 1;
            loop {
                match *b.get(j)? {
                    b'\'' if b.get(j + 1) == Some(&b'\'') => j += 2,
                    b'\'' => return Some((j + 1, Style::SingleQuoted)),
                    _ => j += 1,
                }
            }
        }
        b'"' => {
            let mut j = i + 1;
            loop {
                match *b.get(j)? {
                    b'\\' => j += escape_len(b, j)?,
                    b'"' => return Some((j + 1, Style::DoubleQuoted)),
                    _ => j += 1,
                }
            }
        }
        c if !starts_word(c, b.get(i + 1).copied()) => None,
        _ => {
            // To the `,`, closing bracket or `: ` that ends it, over line
            // breaks (folded); without trailing blanks.
            let mut j = i;
            let mut end = i;
            // Whether a blank or a line break came since the last text:
            // what follows starts a word as a scalar would start.
            let mut blank = false;
            while let Some(&c) = b.get(j) {
                match c {
                    b',' | b']' | b'}' => break,
                    b':' if key && matches!(b.get(j + 1), Some(b' ' | b'\n' | b'\r')) => break,
                    b':' | b'#' | b'[' | b'{' => return None,
                    b' ' | b'\n' | b'\r' => blank = true,
                    c if blank && !starts_word(c, b.get(j + 1).copied()) => return None,
                    _ => {
                        end = j + 1;
                        blank = false;
                    }
                }
                j += 1;
            }
            Some((end, Style::Plain))
        }
    }
}

/// Checks `text[base..]`, telling `sink` what it reads; gives the line
/// where it gave up (`None`: accepted) and the sink.
pub(crate) fn run<S: Sink>(text: &str, base: usize, sink: S) -> (Option<usize>, S) {
    let mut c = Checker {
        stack: Vec::new(),
        pending: None,
        scalar: Scalar::None,
        open: (0, 0),
        flow: Flow::default(),
        started: false,
        marker: None,
        at: 0,
        sink,
    };
    let body = &text[base..];
    let bom = if body.starts_with('\u{feff}') { 3 } else { 0 };
    let body = &body[bom..];
    let mut n = 0;
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', body.as_bytes()).chain(std::iter::once(body.len()));
    for end in ends {
        n += 1;
        let raw = &body[start..end];
        c.at = base + bom + start;
        start = end + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if !c.line(line) {
            return (Some(n), c.sink);
        }
    }
    // A literal block that the end of the text cuts off without a line
    // break is left to the parser (the decoder reads blocks by their lines).
    let cut_block = matches!(c.scalar, Scalar::Literal(..)) && !body.ends_with('\n');
    if matches!(
        c.scalar,
        Scalar::Single(_) | Scalar::Double(_) | Scalar::Flow(_) | Scalar::Literal(_, None)
    ) || c.marker.is_some()
        || cut_block
    {
        return (Some(n), c.sink);
    }
    c.finish();
    (None, c.sink)
}

/// A multi-line scalar being read, with the column its lines must be
/// indented past.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Scalar {
    #[default]
    None,
    Plain(usize),
    Single(usize),
    Double(usize),
    /// A literal block scalar (`|` or `|-`), with its content's
    /// indentation once its first line is read.
    Literal(usize, Option<usize>),
    /// A flow collection over several lines (see [`Flow`]).
    Flow(usize),
}

/// Where the scan of a flow collection is (the [`Sink`] reads it; the
/// check finds where it ends).
#[derive(Clone, Copy, Debug, Default)]
struct Flow {
    depth: usize,
    /// The quote of the quoted scalar the scan is in, if any.
    quote: Option<u8>,
    /// The last byte outside quotes and blanks: a quote after one of
    /// `{[,:` starts a quoted scalar, after anything else it is part of a
    /// plain one.
    last: u8,
}

/// An open block collection.
#[derive(Clone, Copy, Debug)]
struct Ctx {
    indent: usize,
    seq: bool,
    /// A sequence at its parent key's column (`key:\n- a`).
    indentless: bool,
}

/// After `key:` or `-` with nothing on the line.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// The column of the key or dash.
    col: usize,
    /// Whether a sequence may start at that same column.
    indentless_ok: bool,
    /// Byte offset where the parser reports an empty value.
    indicator: usize,
}

struct Checker<S> {
    stack: Vec<Ctx>,
    pending: Option<Pending>,
    scalar: Scalar,
    /// Where the value scalar being read starts, and where its text read
    /// so far ends (a plain scalar's, without trailing blanks).
    open: (usize, usize),
    flow: Flow,
    /// Whether the document has started.
    started: bool,
    /// The `---` of the next document, once read.
    marker: Option<usize>,
    /// Byte offset of the line being read.
    at: usize,
    sink: S,
}

/// How a quoted scalar's text on one line ends.
enum Quoted<'a> {
    /// Closed; the text after the closing quote.
    Closed(&'a str),
    /// Continues on the next line.
    Open,
    Bad,
}

fn is_seq_item(rest: &str) -> bool {
    rest == "-" || rest.starts_with("- ")
}

fn blank(s: &str) -> bool {
    s.bytes().all(|b| b == b' ')
}

fn is_hex(s: &[u8]) -> bool {
    s.iter().all(u8::is_ascii_hexdigit)
}

fn hex_value(s: &[u8]) -> u32 {
    s.iter()
        .fold(0, |v, &b| v * 16 + char::from(b).to_digit(16).unwrap_or(0))
}

/// The length of the valid escape sequence at `b[i]` (a backslash), or
/// `None` when it is not one. A backslash ending the text escapes the line break.
fn escape_len(b: &[u8], i: usize) -> Option<usize> {
    let Some(&e) = b.get(i + 1) else {
        return Some(1);
    };
    let digits = match e {
        b'0' | b'a' | b'b' | b't' | b'n' | b'v' | b'f' | b'r' | b'e' | b' ' | b'"' | b'/'
        | b'\\' | b'N' | b'_' | b'L' | b'P' | b'\n' | b'\r' => 0,
        b'x' => 2,
        b'u' => 4,
        b'U' => 8,
        _ => return None,
    };
    let h = b.get(i + 2..i + 2 + digits)?;
    (is_hex(h) && (digits <= 2 || char::from_u32(hex_value(h)).is_some())).then_some(2 + digits)
}

/// Double-quoted text after the opening quote (or on a continuation line).
fn double(s: &str) -> Quoted<'_> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => return Quoted::Closed(&s[i + 1..]),
            b'\\' if i + 1 == b.len() => return Quoted::Open,
            b'\\' => match escape_len(b, i) {
                Some(n) => i += n,
                None => return Quoted::Bad,
            },
            _ => i += 1,
        }
    }
    Quoted::Open
}

/// The offset of the first invalid escape sequence in the double-quoted
/// scalar that starts `s`, for pointing an error message at it.
pub(crate) fn bad_escape(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'"' => return None,
            b'\\' => match escape_len(b, i) {
                Some(n) => i += n,
                None => return Some(i),
            },
            _ => i += 1,
        }
    }
    None
}

/// Single-quoted text after the opening quote (or on a continuation line).
fn single(s: &str) -> Quoted<'_> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\'' {
            if b.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Quoted::Closed(&s[i + 1..]);
        }
        i += 1;
    }
    Quoted::Open
}

/// Bytes that may not start a plain scalar here.
fn is_indicator(b: u8) -> bool {
    matches!(
        b,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    )
}

/// The text of one line of a plain scalar in block context: no `: `,
/// ` #` or trailing `:` (flow indicators are ordinary characters there).
fn plain_body(s: &str) -> bool {
    let t = s.trim_end_matches(' ');
    !t.ends_with(':') && !t.as_bytes().windows(2).any(|w| w == b": " || w == b" #")
}

/// A plain scalar value starting a line's value.
fn plain_start(s: &str) -> bool {
    let b = s.as_bytes();
    let ok_first = match b[0] {
        b'-' => b
            .get(1)
            .is_some_and(|&c| c != b' ' && !is_indicator(c) || c == b'-'),
        c => !is_indicator(c),
    };
    ok_first && plain_body(s)
}

/// A key at the start of `rest`: `None` when the line is not `key:` or
/// `key: value`; otherwise the key's length (through a closing quote) and
/// the value text (`None` when empty).
fn key_line(rest: &str) -> Option<(usize, Option<&str>)> {
    let b = rest.as_bytes();
    let after = match b[0] {
        b'\'' => match single(&rest[1..]) {
            Quoted::Closed(a) => a,
            _ => return None,
        },
        b'"' => match double(&rest[1..]) {
            Quoted::Closed(a) => a,
            _ => return None,
        },
        c if c.is_ascii_alphanumeric() || c == b'_' => {
            let n = b
                .iter()
                .position(|&c| !(c.is_ascii_alphanumeric() || b"_.-/ ".contains(&c)))
                .unwrap_or(b.len());
            if rest[..n].ends_with(' ') {
                return None;
            }
            &rest[n..]
        }
        _ => return None,
    };
    let key = rest.len() - after.len();
    if key > 1000 {
        return None;
    }
    let value = after.strip_prefix(':')?;
    if value.is_empty() {
        return Some((key, None));
    }
    if !value.starts_with(' ') {
        return None;
    }
    let v = value.trim_start_matches(' ');
    Some((key, (!v.is_empty()).then_some(v)))
}

impl<S: Sink> Checker<S> {
    fn line(&mut self, line: &str) -> bool {
        if line.bytes().any(|b| !(b' '..=b'~').contains(&b)) {
            return false;
        }
        let rest = line.trim_start_matches(' ');
        let indent = line.len() - rest.len();
        match self.scalar {
            Scalar::Single(owner) | Scalar::Double(owner) => {
                if rest.is_empty() {
                    return true;
                }
                if indent <= owner {
                    return false;
                }
                let is_single = matches!(self.scalar, Scalar::Single(_));
                let q = if is_single {
                    single(rest)
                } else {
                    double(rest)
                };
                return match q {
                    Quoted::Closed(after) => {
                        self.scalar = Scalar::None;
                        let style = if is_single {
                            Style::SingleQuoted
                        } else {
                            Style::DoubleQuoted
                        };
                        let end = self.at + line.len() - after.len();
                        self.sink.scalar(self.open.0, end, style);
                        blank(after)
                    }
                    Quoted::Open => true,
                    Quoted::Bad => false,
                };
            }
            Scalar::Plain(owner) => {
                if rest.is_empty() {
                    return true;
                }
                if indent > owner && !rest.starts_with('#') {
                    // A continuation line: indicators are ordinary there,
                    // except the ones that could start a block entry.
                    self.open.1 = self.at + indent + rest.trim_end_matches(' ').len();
                    return !matches!(rest.as_bytes()[0], b'-' | b'?' | b':') && plain_body(rest);
                }
                self.end_scalar(Style::Plain);
            }
            Scalar::Literal(owner, content) => {
                match content {
                    // Blank lines before the first line of text (which
                    // PyYAML writes with an indentation indicator).
                    None if rest.is_empty() || indent <= owner => return false,
                    None => {
                        // The parser's span starts at the first line's text.
                        self.scalar = Scalar::Literal(owner, Some(indent));
                        self.open = (self.at + indent, self.at + line.len());
                        return true;
                    }
                    Some(_) if rest.is_empty() => return true,
                    Some(text) if indent >= text => {
                        self.open.1 = self.at + line.len();
                        return true;
                    }
                    Some(_) if indent > owner => return false,
                    Some(_) => self.end_scalar(Style::Literal),
                }
            }
            Scalar::Flow(owner) => {
                if rest.is_empty() {
                    return true;
                }
                if indent <= owner {
                    return false;
                }
                return self.flow_text(rest, self.at + indent);
            }
            Scalar::None => {}
        }
        if rest.is_empty() || rest.starts_with('#') {
            return true;
        }
        if line == "---" {
            return self.next_document();
        }
        self.structure(indent, rest)
    }

    /// A `---` line: the document read so far ends, the next starts.
    fn next_document(&mut self) -> bool {
        if self.marker.is_some() {
            return false;
        }
        if self.started {
            self.end_document();
            self.started = false;
        }
        self.marker = Some(self.at);
        true
    }

    /// More of the flow collection being read, `text` at byte `at`: ends
    /// it when its closing bracket is there, which only blanks may follow.
    fn flow_text(&mut self, text: &str, at: usize) -> bool {
        let f = &mut self.flow;
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            match f.quote {
                Some(b'"') => match c {
                    b'\\' => i += 1,
                    b'"' => {
                        f.quote = None;
                        f.last = c;
                    }
                    _ => {}
                },
                Some(_) => {
                    if c == b'\'' {
                        if b.get(i + 1) == Some(&b'\'') {
                            i += 1;
                        } else {
                            f.quote = None;
                            f.last = c;
                        }
                    }
                }
                None => match c {
                    b'{' | b'[' => {
                        f.depth += 1;
                        f.last = c;
                    }
                    b'}' | b']' => {
                        f.depth -= 1;
                        f.last = c;
                        if f.depth == 0 {
                            self.scalar = Scalar::None;
                            let end = at + i + 1;
                            return blank(&text[i + 1..]) && self.sink.flow(self.open.0, end);
                        }
                    }
                    b'\'' | b'"' if matches!(f.last, b'{' | b'[' | b',' | b':') => {
                        f.quote = Some(c);
                    }
                    // A comment, or a `#` in a plain scalar: left to the parser.
                    b'#' => return false,
                    b' ' => {}
                    _ => f.last = c,
                },
            }
            i += 1;
        }
        true
    }

    /// The plain or literal scalar being read ends.
    fn end_scalar(&mut self, style: Style) {
        self.scalar = Scalar::None;
        self.sink.scalar(self.open.0, self.open.1, style);
    }

    /// The end of the text: what is still open ends.
    fn finish(&mut self) {
        self.end_document();
    }

    /// What is still open in the document ends.
    fn end_document(&mut self) {
        match self.scalar {
            Scalar::Plain(_) => self.end_scalar(Style::Plain),
            Scalar::Literal(..) => self.end_scalar(Style::Literal),
            _ => {}
        }
        if let Some(p) = self.pending.take() {
            self.sink.null(p.indicator);
        }
        for _ in self.stack.drain(..) {
            self.sink.close();
        }
    }

    fn structure(&mut self, indent: usize, rest: &str) -> bool {
        let seq = is_seq_item(rest);
        let here = self.at + indent;
        if let Some(p) = self.pending.take() {
            if indent > p.col {
                self.stack.push(Ctx {
                    indent,
                    seq,
                    indentless: false,
                });
                self.sink.open(here, seq);
            } else if indent == p.col && p.indentless_ok && seq {
                self.stack.push(Ctx {
                    indent,
                    seq,
                    indentless: true,
                });
                // The parser starts a sequence at its key's column where
                // its first item's content starts.
                let body = rest[1..].trim_start_matches(' ');
                if body.is_empty() && !self.sink.unsure() {
                    return false;
                }
                self.sink.open(here + rest.len() - body.len(), seq);
            } else {
                self.sink.null(p.indicator);
            }
        }
        if self.stack.is_empty() {
            if self.started {
                return false;
            }
            self.started = true;
            self.stack.push(Ctx {
                indent,
                seq,
                indentless: false,
            });
            match self.marker.take() {
                Some(m) => self.sink.document(m, true),
                None => self.sink.document(here, false),
            }
            self.sink.open(here, seq);
        }
        while let Some(top) = self.stack.last() {
            if top.indent > indent || (top.indentless && top.indent == indent && !seq) {
                self.stack.pop();
                self.sink.close();
            } else {
                break;
            }
        }
        let Some(&top) = self.stack.last() else {
            return false;
        };
        if top.indent != indent || top.seq != seq {
            return false;
        }
        if seq {
            self.seq_entry(indent, rest)
        } else {
            self.key_entry(indent, rest)
        }
    }

    fn seq_entry(&mut self, indent: usize, rest: &str) -> bool {
        let after = &rest[1..];
        let body = after.trim_start_matches(' ');
        if body.is_empty() {
            // The parser reports the empty value of a `-` at the end of
            // its line (past any blanks).
            self.pending = Some(Pending {
                col: indent,
                indentless_ok: false,
                indicator: self.at + indent + rest.len(),
            });
            return true;
        }
        if is_seq_item(body) || body.starts_with('#') {
            return false;
        }
        let col = indent + 1 + (after.len() - body.len());
        if key_line(body).is_some() {
            self.stack.push(Ctx {
                indent: col,
                seq: false,
                indentless: false,
            });
            self.sink.open(self.at + col, false);
            return self.key_entry(col, body);
        }
        self.value(indent, body, self.at + col)
    }

    fn key_entry(&mut self, indent: usize, rest: &str) -> bool {
        let Some((len, value)) = key_line(rest) else {
            return false;
        };
        let at = self.at + indent;
        let style = match rest.as_bytes()[0] {
            b'\'' => Style::SingleQuoted,
            b'"' => Style::DoubleQuoted,
            _ => Style::Plain,
        };
        self.sink.scalar(at, at + len, style);
        match value {
            None => {
                self.pending = Some(Pending {
                    col: indent,
                    indentless_ok: true,
                    indicator: at + len,
                });
                true
            }
            Some(v) => self.value(indent, v, at + rest.len() - v.len()),
        }
    }

    /// A value at byte `at` on the line of its key or dash; `owner` is
    /// that column.
    fn value(&mut self, owner: usize, v: &str, at: usize) -> bool {
        let quoted = match v.as_bytes()[0] {
            b'"' => double(&v[1..]),
            b'\'' => single(&v[1..]),
            b'{' | b'[' => {
                if matches!(v.trim_end_matches(' '), "{}" | "[]") {
                    self.sink.empty_flow(at, v.starts_with('['));
                    return true;
                }
                self.scalar = Scalar::Flow(owner);
                self.flow = Flow::default();
                self.open = (at, at);
                return self.flow_text(v, at);
            }
            b'|' => {
                if !matches!(v.trim_end_matches(' '), "|" | "|-") {
                    return false;
                }
                self.scalar = Scalar::Literal(owner, None);
                self.open = (at, at);
                return true;
            }
            _ => {
                if !plain_start(v) {
                    return false;
                }
                self.scalar = Scalar::Plain(owner);
                self.open = (at, at + v.trim_end_matches(' ').len());
                return true;
            }
        };
        let style = if v.starts_with('"') {
            Style::DoubleQuoted
        } else {
            Style::SingleQuoted
        };
        match quoted {
            Quoted::Closed(after) => {
                self.sink.scalar(at, at + v.len() - after.len(), style);
                blank(after)
            }
            Quoted::Open => {
                self.scalar = if style == Style::DoubleQuoted {
                    Scalar::Double(owner)
                } else {
                    Scalar::Single(owner)
                };
                self.open = (at, at);
                true
            }
            Quoted::Bad => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tree;
    use crate::tree::check_syntax;

    /// The tree built on the way by the check is the parser's, node for
    /// node, when the check accepts `text`.
    fn same_tree(text: &str) {
        let by_parser = Tree::parse_by_parser(text).map(|t| t.dump());
        let quick = Tree::parse(text).map(|t| t.dump());
        assert_eq!(quick, by_parser, "{text:?}");
    }

    const SAMPLE: &str = "# PIPELINE DEFINITION\n# Name: p\ncomponents:\n  comp-a:\n    executorLabel: exec-a\n    inputDefinitions:\n      parameters:\n        n:\n          parameterType: NUMBER_INTEGER\ndeploymentSpec:\n  executors:\n    exec-a:\n      container:\n        args:\n        - --executor_input\n        - '{{$}}'\n        command:\n        - sh\n        - \"\\nif ! [ -x \\\"$(command -v pip)\\\" ]; then\\n    python3 -m ensurepip ||\\\n          \\ python3 -m ensurepip --user\\n\\u00e9\\n\"\n        - 'program_path=$(mktemp -d)\n\n\n          printf \"%s\" \"$0\"\n\n          '\n        image: python:3.11-slim\npipelineInfo:\n  description: a long description, that PyYAML folds\n    over two lines [x]\n    != 'heads'\n  name: p\nroot:\n  dag:\n    tasks:\n      a:\n        cachingOptions: {}\n        dependentTasks: []\n        taskInfo:\n          name: 'Train checkpoint shard 1'\n  inputDefinitions:\n    parameters:\n      - name: x\n        value: 1\n      -\n        name: y\nschemaVersion: 2.1.0\nsdkVersion: kfp-2.17.3\n";

    #[test]
    fn accepts_pyyaml_block_output() {
        assert!(check_syntax(SAMPLE));
        assert!(accepts(SAMPLE));
        assert!(accepts(&SAMPLE.replace('\n', "\r\n")));
        assert!(accepts(&format!("\u{feff}{SAMPLE}")));
        assert!(accepts(""));
        assert!(accepts("a:\n- b\nc: d\n"));
    }

    #[test]
    fn leaves_the_unusual_to_the_parser() {
        for (text, valid) in [
            ("a: b\n  c: d\n", false),
            ("a:\n  b: 1\n c: 2\n", false),
            ("a: \"open\n", false),
            ("a: 'x'y'\n", false),
            ("a: \"\\q\"\n", false),
            ("a: \"\\ud800\"\n", false),
            ("a: - b\n", false),
            ("- a: 1\n  - b\n", false),
            ("a: &x 1\nb: *x\n", true),
            ("a: |2\n   text\n", true),
            ("a: >\n  text\n", true),
            ("a: |\n\n  text\n", true),
            ("a: [1, 2]\n", true),
            ("a: b # c\n", true),
            ("a:\tb\n", false),
            ("a: b\tc\n", true),
            ("a: é\n", true),
            ("--- a\n", true),
            ("- - a\n", true),
        ] {
            assert_eq!(check_syntax(text), valid, "{text:?}");
            assert!(!accepts(text), "{text:?}");
        }
    }

    #[test]
    fn builds_the_parsers_tree() {
        for text in [
            SAMPLE,
            &SAMPLE.replace('\n', "\r\n"),
            &format!("\u{feff}{SAMPLE}"),
            "# c\n# d\nkey: v\nlist:\n- a\n- b: 1\n  c: x\n-\n  - z\nm:\n  n: \"q\\tx\"\n  e:\n  f: {}\n  g: plain\n    more here\n\n\n    and\n  h: 'it''s\n    two'\nlast:\n",
            "- a\n-\n- [] \n- 'x'\n-  \n-",
            "a:\r\n- x\r\n-  \r\n- \r\n",
            "a:\n- b\nc: d\n",
            "a:\n  - b\n  -\n  - c: <<\n    d:\n",
            "a:   x  \n'b c':\n- \"d\"\n\"e\": []\n",
            "a: |\n  one\n\n    two  \n  # three\nb:\n- |-\n  x\n- y\n",
            "a: {b: c, 'd': \"e\", f: [1, 2]}\ng:\n  h: [x, 'it''s', \"q\\\"\",\n    y]\n",
            "k: {a: 'long\n    text', b: it's}\n",
            "---\na: 1\n---\n- b\n---\nc: |\n  d\n",
            "a: 1\n---\nb: 2\n",
            "a: 'x'  \nb: \"\"  \nc: {d: 'e' , f: g}\nd:\n- ''  ",
            "args: [--score, b -c, '----x', -1, a--]\n",
        ] {
            assert!(Tree::parse_quick(text, 0).is_some(), "{text:?}");
            same_tree(text);
        }
        // Left to the parser, which reads them alike.
        for text in ["a: |\n  cut", "a: |\n  x\n  cut"] {
            assert!(Tree::parse_quick(text, 0).is_none(), "{text:?}");
            same_tree(text);
        }
    }

    /// Files SDKs wrote: the committed fixtures the check accepts.
    #[test]
    fn builds_the_parsers_tree_for_every_fixture() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
        let mut accepted = 0;
        let mut stack = vec![root];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml") {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    if Tree::parse_quick(&text, 0).is_some() {
                        accepted += 1;
                    }
                    same_tree(&text);
                }
            }
        }
        assert!(accepted > 50, "{accepted}");
    }

    /// KFP v1 output (PyYAML with flow leaf collections, literal blocks),
    /// two documents.
    const V1_SAMPLE: &str = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n  annotations: {pipelines.kubeflow.org/kfp_sdk_version: 1.8.22, t: '2024-05-01T12:00:00',\n    spec: '{\"description\": \"50 shards =\n      300.\", \"inputs\": [{\"default\": \"5\"}]}', \"e\\u00e9\": \"a\\\n      \\ b\"}\n  labels: {a: b c\n    d}\nspec:\n  templates:\n  - name: evaluate\n    container:\n      args: [--score, '{{inputs.parameters.x}}', '----output-paths', /tmp/out]\n      command:\n      - sh\n      - |\n        program_path=$(mktemp)\n\n          indented  \n        # not a comment\n      - |-\n        last\n      image: python:3.11-slim\n    outputs:\n      parameters:\n      - {name: o, valueFrom: {path: /tmp/o}}\n      - []\n---\nb: [1, 2]\n";

    /// Calls `f` with every text that deleting one byte of `sample`, or
    /// replacing it by one of `with`, makes (when it is UTF-8).
    fn each_mutant(sample: &str, with: &[u8], mut f: impl FnMut(&str)) {
        let bytes = sample.as_bytes();
        for i in 0..bytes.len() {
            for r in std::iter::once(None).chain(with.iter().map(Some)) {
                let mut m = bytes.to_vec();
                match r {
                    None => {
                        m.remove(i);
                    }
                    Some(&c) => m[i] = c,
                }
                if let Ok(text) = std::str::from_utf8(&m) {
                    f(text);
                }
            }
        }
    }

    /// Every single-byte change of the KFP v1 sample that the quick build
    /// takes gives the parser's tree.
    #[test]
    fn v1_mutants_build_the_parsers_tree() {
        assert!(Tree::parse_quick(V1_SAMPLE, 0).is_some());
        same_tree(V1_SAMPLE);
        let mut built = 0;
        each_mutant(V1_SAMPLE, b": #'\"\\-\n{}[,|x", |text| {
            if Tree::parse_quick(text, 0).is_some() {
                built += 1;
                same_tree(text);
            }
        });
        assert!(built > V1_SAMPLE.len() * 4, "{built}");
    }

    /// Every single-byte change of the sample: accepted implies parsed.
    #[test]
    fn accepted_mutants_parse() {
        let mut accepted = 0;
        each_mutant(SAMPLE, b": #'\"\\-\n{x?", |text| {
            if accepts(text) {
                accepted += 1;
                assert!(check_syntax(text), "accepted but invalid: {text:?}");
                same_tree(text);
            }
        });
        // Most changes keep the text in the subset: the test is not vacuous.
        assert!(accepted > SAMPLE.len() * 4, "{accepted}");
    }
}
