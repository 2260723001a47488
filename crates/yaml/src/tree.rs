//! The span tree: every node of every document of a YAML file, with byte
//! ranges into the original text, built from `saphyr-parser` events.
//!
//! The tree is flat (an arena of nodes in document order, linked by index)
//! so that deep input cannot overflow the stack; a node is 20 bytes and
//! owns nothing on the heap. Scalar values are not copied: a value that is
//! its source text is read from there, and one that differs (escapes, lines
//! folded, a block scalar) is decoded from the source when asked
//! (the private `decode` module), or copied when the decoder cannot read it.

use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use saphyr_parser::{Event, Parser, ScalarStyle};

/// Index of a node in a [`Tree`].
pub type NodeId = u32;

const NONE: u32 = u32::MAX;

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Scalar,
    Map,
    Seq,
    Alias,
}

/// How a node is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
    Block,
    Flow,
}

impl Style {
    /// Whether the scalar was written with quotes or as a block scalar, so
    /// that it is a string whatever its text looks like.
    pub fn is_quoted(self) -> bool {
        !matches!(self, Style::Plain)
    }
}

/// [`Node::flags`]: the node carries an anchor.
const ANCHORED: u8 = 1;
/// [`Node::flags`]: the node has an explicit tag.
const TAGGED: u8 = 2;
/// [`Node::flags`]: a scalar whose value is copied into [`Tree::arena`].
const COPIED: u8 = 4;
/// [`Node::flags`]: a scalar whose value is decoded from its source when asked.
const DECODED: u8 = 8;

/// One node.
#[derive(Clone, Debug)]
pub struct Node {
    pub kind: Kind,
    pub style: Style,
    /// [`ANCHORED`], [`TAGGED`], and where a scalar's value is when it is
    /// not its source text ([`COPIED`], [`DECODED`]; neither: the source
    /// bytes `start..end`, or `start+1..end-1` when quoted).
    flags: u8,
    /// Byte offset of the node's first character (its anchor or tag when it has one).
    pub start: u32,
    /// Byte offset just past the node's content: the last child's end for
    /// block collections, past the closing bracket for flow collections, and
    /// without trailing blank lines for block scalars (unless `|+`/`>+`).
    pub end: u32,
    pub parent: u32,
    /// One past the last node of its subtree (ids are in document order, so
    /// the subtree is `id..after` and the next sibling, if any, is `after`);
    /// [`NONE`] while a collection is still being read.
    after: u32,
}

impl Node {
    /// Whether the node carries an anchor (`&a`): editing it would also
    /// change every alias of it.
    pub fn anchored(&self) -> bool {
        self.flags & ANCHORED != 0
    }

    /// Whether the node has an explicit tag (`!!str`, `!foo`).
    pub fn tagged(&self) -> bool {
        self.flags & TAGGED != 0
    }
}

/// A scalar decoded when asked: where it starts, and its value once asked.
struct Decoded {
    node: NodeId,
    at: u32,
    value: std::sync::OnceLock<String>,
}

/// One YAML document of the stream.
#[derive(Clone, Debug)]
pub struct Document {
    /// Root node, `None` for an empty document.
    pub root: Option<NodeId>,
    /// Whether the document started with an explicit `---`.
    pub explicit_start: bool,
    /// Byte offset of the document start marker (or of its first node).
    pub start: u32,
}

/// A parsed YAML stream with spans.
pub struct Tree<'a> {
    src: &'a str,
    nodes: Vec<Node>,
    /// The values of the [`COPIED`] scalars, one after another, and where
    /// each one is: (node, offset, length), in node order.
    arena: String,
    copied: Vec<(NodeId, u32, u32)>,
    /// The [`DECODED`] scalars, in node order.
    decoded: Vec<Decoded>,
    pub documents: Vec<Document>,
    /// Whether the text uses `\r\n` line endings.
    pub crlf: bool,
    /// The parser's anchor ids and the nodes carrying them, in id order.
    anchors: Vec<(usize, NodeId)>,
    /// Each alias node and the anchor node it names.
    aliases: Vec<(NodeId, NodeId)>,
    /// Where each line of `src` starts, built by the first [`Tree::position`]
    /// (a policy's reader asks for the place of every node it visits, which
    /// counting lines from the start each time made quadratic).
    lines: OnceLock<Vec<u32>>,
    /// Whether any plain scalar reads `<<`: without one there is no merge
    /// key, and map lookups need not look for them.
    merges: bool,
    /// Where the first collection nested deeper than [`MAX_DEPTH`] starts.
    too_deep: Option<u32>,
}

/// How many collections deep a text may nest: one more is refused. What
/// reads a tree (its values, their merge and output) follows the nesting
/// by recursion, on threads of 2 MiB of stack; saphyr-parser refuses flow
/// collections nested as deep, and Kubernetes' objects nest a few dozen
/// levels at most.
pub const MAX_DEPTH: usize = 255;

/// A YAML syntax error at a byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    pub line: usize,
    pub col: usize,
    /// The YAML path of the entry the parser was in (empty at the top).
    pub path: String,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

/// The scanner messages for flow content indented less than saphyr-parser
/// wants (and libyaml accepts).
const FLOW_INDENT_ERRORS: &[&str] = &[
    "invalid indentation",
    "invalid indentation in flow construct",
    "invalid indentation in quoted scalar",
];

/// How many times a file may be parsed again with more lines shifted, at
/// least, and how many bytes those passes may read in all beyond that.
const SHIFT_ROUNDS: usize = 16;
const SHIFT_BUDGET: usize = 4 << 20;

/// Spaces added at the start of some lines of the text the parser reads.
#[derive(Default)]
struct Shifts {
    /// (byte offset of the line start in the parsed text, spaces), sorted.
    lines: Vec<(usize, usize)>,
    /// (character index of the line start, spaces), sorted, for mapping
    /// the parser's character indices back.
    chars: Vec<(usize, usize)>,
    /// When the parser reads a text with some lines left out
    /// ([`Tree::parse_eliding`]): (offset in the text read, offset in the
    /// original) where each piece starts, sorted.
    segments: Vec<(usize, usize)>,
}

impl Shifts {
    /// The text with the spaces added, or `None` when there are none.
    fn text(&self, src: &str) -> Option<String> {
        if self.lines.is_empty() {
            return None;
        }
        let extra: usize = self.lines.iter().map(|l| l.1).sum();
        let mut out = String::with_capacity(src.len() + extra);
        let mut at = 0;
        for &(line, n) in &self.lines {
            out.push_str(&src[at..line]);
            out.extend(std::iter::repeat_n(' ', n));
            at = line;
        }
        out.push_str(&src[at..]);
        Some(out)
    }

    /// A byte offset of the text read as one of the original text.
    fn placed(&self, offset: usize) -> usize {
        if self.segments.is_empty() {
            return offset;
        }
        let i = self
            .segments
            .partition_point(|s| s.0 <= offset)
            .saturating_sub(1);
        let (read, original) = self.segments[i];
        original + (offset - read)
    }

    /// A character index of the shifted text as one of the original (an
    /// added space maps to its line's start).
    fn original(&self, i: usize) -> usize {
        let mut added = 0;
        for &(c, n) in &self.chars {
            let at = c + added;
            if i < at {
                break;
            }
            if i < at + n {
                return c;
            }
            added += n;
        }
        i - added
    }

    /// Shifts the lines that an error at byte `offset` of `src` is about:
    /// the error's own line, or every continuation line of the quoted
    /// scalar that starts there. Doubles the shift of a line shifted
    /// before. `false` when there is nothing it may shift: a line that is
    /// a document marker, or one shifted as far as it goes.
    fn widen(&mut self, src: &str, offset: usize, info: &str) -> bool {
        let starts: Vec<usize> = if info.ends_with("quoted scalar") {
            quoted_line_starts(src, offset)
        } else {
            vec![
                src[..offset.min(src.len())]
                    .rfind('\n')
                    .map_or(0, |p| p + 1),
            ]
        };
        if starts.is_empty() {
            return false;
        }
        for line in starts {
            let rest = &src[line..];
            if line == 0 || rest.starts_with("---") || rest.starts_with("...") {
                return false;
            }
            match self.lines.binary_search_by_key(&line, |l| l.0) {
                Ok(i) => {
                    if self.lines[i].1 >= 128 {
                        return false;
                    }
                    self.lines[i].1 *= 2;
                }
                // Enough to pass the line before, which is usually what
                // the parser wants (a `]` under its key); doubled if not.
                Err(i) => self.lines.insert(i, (line, first_shift(src, line))),
            }
        }
        self.chars = self
            .lines
            .iter()
            .map(|&(b, n)| (src[..b].chars().count(), n))
            .collect();
        true
    }
}

/// The first shift of the line at byte `line`: one column past the
/// previous non-blank line's indentation, at least one space.
fn first_shift(src: &str, line: usize) -> usize {
    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let own = indent(src[line..].split('\n').next().unwrap_or(""));
    let before = src[..line.saturating_sub(1)]
        .rsplit('\n')
        .find(|l| !crate::block::is_blank(l))
        .map_or(0, indent);
    (before + 1).saturating_sub(own).clamp(1, 128)
}

/// The starts of the lines after the first of the quoted scalar that
/// begins at byte `at` of `src` (its quote).
fn quoted_line_starts(src: &str, at: usize) -> Vec<usize> {
    let bytes = src.as_bytes();
    let Some(&q) = bytes.get(at).filter(|&&b| b == b'"' || b == b'\'') else {
        return Vec::new();
    };
    let mut starts = Vec::new();
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if q == b'"' => i += 1,
            b'\'' if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 1,
            b if b == q => return starts,
            b'\n' => starts.push(i + 1),
            _ => {}
        }
        i += 1;
    }
    starts
}

/// Converts the parser's character indices into byte offsets. Walks a cursor
/// forwards or backwards, which is cheap because events come in order.
struct CharToByte<'a> {
    src: &'a str,
    ascii: bool,
    chars: usize,
    bytes: usize,
}

impl<'a> CharToByte<'a> {
    fn new(src: &'a str) -> Self {
        CharToByte {
            src,
            ascii: src.is_ascii(),
            chars: 0,
            bytes: 0,
        }
    }

    fn byte(&mut self, char_index: usize) -> usize {
        if self.ascii {
            return char_index.min(self.src.len());
        }
        let b = self.src.as_bytes();
        while self.chars < char_index && self.bytes < b.len() {
            self.bytes += 1;
            while self.bytes < b.len() && (b[self.bytes] & 0xC0) == 0x80 {
                self.bytes += 1;
            }
            self.chars += 1;
        }
        while self.chars > char_index && self.bytes > 0 {
            self.bytes -= 1;
            while self.bytes > 0 && (b[self.bytes] & 0xC0) == 0x80 {
                self.bytes -= 1;
            }
            self.chars -= 1;
        }
        self.bytes
    }
}

/// A carriage return not followed by a line feed: YAML reads it as a line
/// break, the editor (which keeps LF and CRLF files as they are) does not,
/// so such files are refused rather than edited wrongly.
pub fn bare_cr(src: &str) -> Option<SyntaxError> {
    let b = src.as_bytes();
    // The memchr crate's search (SIMD) rather than `str::find`'s: every
    // input is scanned whole for this.
    for at in memchr::memchr_iter(b'\r', b) {
        if b.get(at + 1) != Some(&b'\n') {
            let (line, col) = line_col(src, at);
            return Some(SyntaxError {
                offset: at,
                line,
                col,
                path: String::new(),
                message: "a carriage return (CR) without a line feed is used as a line break; convert the file to LF or CRLF line endings".into(),
            });
        }
    }
    None
}

/// Just past the closing quote of the quoted scalar that starts at or
/// after `s` (after any anchor or tag), or `e` when it cannot be found
/// before `e`.
fn quoted_end(src: &str, s: usize, e: usize, style: Style) -> usize {
    let b = src.as_bytes();
    let e = e.min(b.len());
    let quote = if style == Style::SingleQuoted {
        b'\''
    } else {
        b'"'
    };
    let Some(open) = b[s..e].iter().position(|&c| c == quote).map(|p| s + p) else {
        return e;
    };
    let mut i = open + 1;
    while i < e {
        let next = if quote == b'"' {
            memchr::memchr2(b'"', b'\\', &b[i..e])
        } else {
            memchr::memchr(b'\'', &b[i..e])
        };
        let Some(n) = next else { break };
        i += n;
        match b[i] {
            b'\\' => i += 2,
            b'\'' if quote == b'\'' && b.get(i + 1) == Some(&b'\'') => i += 2,
            _ => return i + 1,
        }
    }
    e
}

pub fn check_syntax(src: &str) -> bool {
    check_syntax_within(src, usize::MAX)
}

/// [`check_syntax`], and the text's collections nest at most `depth` deep.
pub fn check_syntax_within(src: &str, depth: usize) -> bool {
    let mut parser = Parser::new_from_str(src);
    let mut now = 0usize;
    while let Some(ev) = parser.next_event() {
        match ev {
            Err(_) => return false,
            Ok((Event::SequenceStart(..) | Event::MappingStart(..), _)) => {
                now += 1;
                if now > depth {
                    return false;
                }
            }
            Ok((Event::SequenceEnd | Event::MappingEnd, _)) => now = now.saturating_sub(1),
            Ok(_) => {}
        }
    }
    true
}

/// Line (1-based) and column (1-based, in characters) of a byte offset.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src.as_bytes()[..offset];
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    (line, column(src, line, line_start, offset))
}

/// The column (1-based, in characters) of byte `offset` on line `line`,
/// which starts at byte `line_start`; a byte order mark takes no column.
fn column(src: &str, line: usize, line_start: usize, offset: usize) -> usize {
    let col = src[line_start..offset].chars().count() + 1;
    if line == 1 && src.starts_with('\u{feff}') {
        col.saturating_sub(1).max(1)
    } else {
        col
    }
}

/// Builds the tree of a text [`crate::quick`] accepts as it checks it.
struct QuickBuilder<'a> {
    tree: Tree<'a>,
    stack: Vec<Open>,
    /// The events of the flow collection being read (kept for the next).
    flow: Vec<crate::quick::FlowEvent>,
}

impl crate::quick::Sink for QuickBuilder<'_> {
    fn document(&mut self, at: usize, explicit: bool) {
        self.tree.documents.push(Document {
            root: None,
            explicit_start: explicit,
            start: at as u32,
        });
    }

    /// Reads the flow collection: PyYAML's leaf collections of scalars
    /// quickly ([`crate::quick::read_flow`]), anything else with the parser.
    fn flow(&mut self, s: usize, e: usize) -> bool {
        let mut events = std::mem::take(&mut self.flow);
        let read = crate::quick::read_flow(&self.tree.src[s..e], &mut events);
        if read {
            use crate::quick::FlowEvent;
            for &event in &events {
                let stack = &mut self.stack;
                match event {
                    FlowEvent::Open { at, seq } => {
                        let at = (s + at) as u32;
                        (self.tree).on_collection_start(stack, !seq, false, false, at, at + 1);
                    }
                    FlowEvent::Close { at } => self.tree.on_collection_end(stack, (s + at) as u32),
                    FlowEvent::Scalar { s: a, e: b, style } => self.scalar(s + a, s + b, style),
                }
            }
        }
        self.flow = events;
        read || self.flow_by_parser(s, e)
    }
    fn open(&mut self, at: usize, seq: bool) {
        let at = at as u32;
        (self.tree).on_collection_start(&mut self.stack, !seq, false, false, at, at);
    }

    fn close(&mut self) {
        self.tree.on_collection_end(&mut self.stack, 0);
    }

    fn empty_flow(&mut self, at: usize, seq: bool) {
        let at = at as u32;
        (self.tree).on_collection_start(&mut self.stack, !seq, false, false, at, at + 1);
        self.tree.on_collection_end(&mut self.stack, at + 1);
    }

    fn scalar(&mut self, s: usize, e: usize, style: Style) {
        let text = &self.tree.src[s..e];
        let folded;
        let value = match style {
            Style::Plain if memchr::memchr(b'\n', text.as_bytes()).is_some() => {
                folded = fold_plain(text);
                Some(folded.as_str())
            }
            Style::Plain => Some(text),
            Style::SingleQuoted | Style::DoubleQuoted => {
                let inner = &text[1..text.len() - 1];
                let special: &[u8] = if style == Style::DoubleQuoted {
                    b"\\\n"
                } else {
                    b"'\n"
                };
                (!inner.bytes().any(|b| special.contains(&b))).then_some(inner)
            }
            _ => None,
        };
        // The parser's span of a quoted scalar runs on over the blanks
        // after its closing quote.
        let e = match style {
            Style::SingleQuoted | Style::DoubleQuoted => {
                let rest = &self.tree.src.as_bytes()[e..];
                e + rest.iter().take_while(|&&b| b == b' ').count()
            }
            _ => e,
        };
        let (s, e) = (s as u32, e as u32);
        (self.tree).on_scalar(&mut self.stack, value, style, (false, false), s, e);
    }

    fn null(&mut self, at: usize) {
        let at = at as u32;
        (self.tree).on_scalar(
            &mut self.stack,
            Some(""),
            Style::Plain,
            (false, false),
            at,
            at,
        );
    }

    fn unsure(&mut self) -> bool {
        false
    }
}

impl QuickBuilder<'_> {
    /// Reads the flow collection at `s..e` with the parser, on its own: in
    /// flow context indentation means nothing (the check holds every line
    /// past the block's column), so its events are those the parser gives
    /// it in the whole text, moved by its offset.
    fn flow_by_parser(&mut self, s: usize, e: usize) -> bool {
        let mut parser = Parser::new_from_str(&self.tree.src[s..e]);
        while let Some(event) = parser.next_event() {
            let Ok((event, span)) = event else {
                return false;
            };
            // Only ASCII reaches here: character indices are bytes.
            let (a, b) = (
                (s + span.start.index()) as u32,
                (s + span.end.index()) as u32,
            );
            let stack = &mut self.stack;
            match event {
                Event::Scalar(value, style, 0, None) => {
                    let style = match style {
                        ScalarStyle::Plain => Style::Plain,
                        ScalarStyle::SingleQuoted => Style::SingleQuoted,
                        ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                        _ => return false,
                    };
                    (self.tree).on_scalar(stack, Some(&value), style, (false, false), a, b);
                }
                Event::SequenceStart(0, None) => {
                    (self.tree).on_collection_start(stack, false, false, false, a, b)
                }
                Event::MappingStart(0, None) => {
                    (self.tree).on_collection_start(stack, true, false, false, a, b)
                }
                Event::SequenceEnd | Event::MappingEnd => self.tree.on_collection_end(stack, a),
                Event::StreamStart
                | Event::StreamEnd
                | Event::DocumentStart(false)
                | Event::DocumentEnd
                | Event::Nothing => {}
                _ => return false,
            }
        }
        true
    }
}

/// The value of a plain scalar written over several lines: each line
/// break between two lines of text reads as a space, and each blank line
/// as a line break.
fn fold_plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut breaks = 0;
    for (i, line) in text.split('\n').enumerate() {
        let line = line.trim_matches([' ', '\r']);
        if line.is_empty() {
            breaks += 1;
            continue;
        }
        if i > 0 {
            if breaks == 0 {
                out.push(' ');
            }
            out.extend(std::iter::repeat_n('\n', breaks));
        }
        breaks = 0;
        out.push_str(line);
    }
    out
}

struct Open {
    node: NodeId,
    /// Children pushed so far (in a mapping, even means a key comes next).
    count: u32,
    /// The last child pushed, [`NONE`] before the first.
    last: NodeId,
}

impl<'a> Tree<'a> {
    /// Parses the whole stream. Fails on the first syntax error.
    pub fn parse(src: &'a str) -> Result<Tree<'a>, SyntaxError> {
        Tree::parse_from(src, 0)
    }

    /// A tree of no nodes over `full`, with room for the nodes of `len` bytes.
    fn empty(full: &'a str, len: usize) -> Tree<'a> {
        Tree {
            src: full,
            nodes: Vec::with_capacity(len / 12),
            arena: String::new(),
            copied: Vec::new(),
            decoded: Vec::new(),
            documents: Vec::new(),
            crlf: memchr::memmem::find(full.as_bytes(), b"\r\n").is_some(),
            anchors: Vec::new(),
            aliases: Vec::new(),
            lines: OnceLock::new(),
            merges: false,
            too_deep: None,
        }
    }

    /// The tree of `full[base..]` built by the quick check, when it
    /// accepts the text (PyYAML's block output: one pass over the lines
    /// instead of the parser's tokens and events); `None` otherwise.
    #[doc(hidden)]
    pub fn parse_quick(full: &'a str, base: usize) -> Option<Tree<'a>> {
        if bare_cr(&full[base..]).is_some() || full.len() >= u32::MAX as usize {
            return None;
        }
        Tree::quick_tree(full, base)
    }

    /// [`Tree::parse_quick`] of a text without bare carriage returns and
    /// under 4 GiB.
    fn quick_tree(full: &'a str, base: usize) -> Option<Tree<'a>> {
        let builder = QuickBuilder {
            tree: Tree::empty(full, full.len() - base),
            stack: Vec::new(),
            flow: Vec::new(),
        };
        match crate::quick::run(full, base, builder) {
            (None, b) if !b.tree.documents.is_empty() && b.tree.too_deep.is_none() => Some(b.tree),
            _ => None,
        }
    }

    /// Parses the stream that starts at byte `base` of `src` (a document
    /// boundary), with offsets that still count from the start of `src`.
    pub fn parse_from(full: &'a str, base: usize) -> Result<Tree<'a>, SyntaxError> {
        Tree::parse_with(full, base, true)
    }

    /// [`Tree::parse`] always through the parser, never the quick check:
    /// for holding the two builds equal (tests, the `quick` fuzz target).
    #[doc(hidden)]
    pub fn parse_by_parser(src: &'a str) -> Result<Tree<'a>, SyntaxError> {
        Tree::parse_with(src, 0, false)
    }

    /// Everything the tree holds, as text: for comparing two builds of it.
    #[doc(hidden)]
    pub fn dump(&self) -> String {
        use std::fmt::Write;
        let mut out = format!(
            "crlf {} merges {} documents {:?}\n",
            self.crlf, self.merges, self.documents
        );
        for (id, n) in self.nodes.iter().enumerate() {
            let _ = writeln!(
                out,
                "{id} {:?} {:?} flags {} {}..{} parent {} after {} {:?}",
                n.kind,
                n.style,
                n.flags,
                n.start,
                n.end,
                n.parent as i64,
                n.after as i64,
                self.scalar(id as NodeId)
            );
        }
        let _ = write!(
            out,
            "copied {:?}\ndecoded {:?}\nanchors {:?} aliases {:?}\n",
            self.copied,
            self.decoded
                .iter()
                .map(|d| (d.node, d.at))
                .collect::<Vec<_>>(),
            self.anchors,
            self.aliases
        );
        out
    }

    fn parse_with(full: &'a str, base: usize, quick: bool) -> Result<Tree<'a>, SyntaxError> {
        let src = &full[base..];
        if let Some(e) = bare_cr(src) {
            let (line, col) = line_col(full, base + e.offset);
            return Err(SyntaxError {
                offset: base + e.offset,
                line,
                col,
                ..e
            });
        }
        if src.len() >= u32::MAX as usize {
            return Err(SyntaxError {
                offset: 0,
                line: 1,
                col: 1,
                path: String::new(),
                message: "file is larger than 4 GiB".into(),
            });
        }
        if quick && let Some(tree) = Tree::quick_tree(full, base) {
            return Ok(tree);
        }
        // saphyr-parser holds flow content (a `]`, a continuation line of a
        // quoted or plain scalar in brackets) to the enclosing block's
        // indentation, which libyaml, PyYAML and Kubernetes' decoder do not:
        // `args: [` ... `]` with the `]` under `args` is common in real
        // manifests. Such a file is parsed again with spaces added at the
        // start of those lines, which changes no value, while every span
        // still points into the original text.
        let mut shifts = Shifts::default();
        // Each round shifts one more line (or one quoted scalar's lines);
        // bounded by the bytes parsed again, so a large file cannot make
        // this quadratic for long.
        // When shifting does not get the file read, the error is the one
        // of the text as written.
        let rounds = (SHIFT_BUDGET / src.len().max(1)).max(SHIFT_ROUNDS);
        let mut first: Option<SyntaxError> = None;
        for _ in 0..rounds {
            match Tree::parse_pass(full, full, base, &shifts) {
                Err((e, info)) if FLOW_INDENT_ERRORS.contains(&info.as_str()) => {
                    let at = e.offset - base;
                    let first = first.get_or_insert(e);
                    if !shifts.widen(src, at, &info) {
                        return Err(first.clone());
                    }
                }
                other => return other.map_err(|(e, _)| e),
            }
        }
        Err(first.unwrap_or_else(|| SyntaxError {
            offset: base,
            line: 1,
            col: 1,
            path: String::new(),
            message: "invalid indentation".into(),
        }))
    }

    /// Parses `full` without reading the whole lines `region`, which hold
    /// one block mapping's keys (its entries, with all they contain): the
    /// parser reads in their place a mapping of two keys, one on the
    /// region's first line and one on its last, each at that line's
    /// indentation, so the mapping keeps its extent. Offsets and spans are
    /// those of `full`. For a value read another way (the caller checks its
    /// syntax); no second round for flow content under-indented, so on any
    /// error the caller parses `full` itself, which reports it exactly.
    pub fn parse_eliding(full: &'a str, region: Range<usize>) -> Result<Tree<'a>, SyntaxError> {
        let refuse = |message: &str| SyntaxError {
            offset: region.start,
            line: 1,
            col: 1,
            path: String::new(),
            message: message.into(),
        };
        let lines = full
            .get(region.clone())
            .ok_or_else(|| refuse("not a region of whole lines"))?;
        if full.len() >= u32::MAX as usize
            || bare_cr(full).is_some()
            || !lines.ends_with('\n')
            || (region.start > 0 && full.as_bytes()[region.start - 1] != b'\n')
        {
            return Err(refuse("not a region of whole lines"));
        }
        let body = &lines[..lines.len() - 1];
        let last_start = body.rfind('\n').map_or(0, |i| i + 1);
        let stand_in = |line: &str, key: &str| -> Option<String> {
            let indent = line.len() - line.trim_start_matches(' ').len();
            (line.len() > indent + key.len() && indent < line.len())
                .then(|| format!("{}{key}:\n", " ".repeat(indent)))
        };
        let first_line = &body[..body.find('\n').unwrap_or(body.len())];
        let first = stand_in(first_line, "a").ok_or_else(|| refuse("a short line"))?;
        let mut reading = String::with_capacity(full.len() - lines.len() + 2 * first.len());
        reading.push_str(&full[..region.start]);
        reading.push_str(&first);
        let mut segments = vec![(0, 0)];
        if last_start > 0 {
            let last = stand_in(&body[last_start..], "b").ok_or_else(|| refuse("a short line"))?;
            segments.push((reading.len(), region.start + last_start));
            reading.push_str(&last);
        }
        segments.push((reading.len(), region.end));
        reading.push_str(&full[region.end..]);
        let shifts = Shifts {
            segments,
            ..Shifts::default()
        };
        Tree::parse_pass(full, &reading, 0, &shifts).map_err(|(e, _)| e)
    }

    /// One pass of the parser over `full[base..]`, with `shifts` applied
    /// to the text it reads; a syntax error also returns the parser's own
    /// message.
    fn parse_pass(
        full: &'a str,
        reading: &str,
        base: usize,
        shifts: &Shifts,
    ) -> Result<Tree<'a>, (SyntaxError, String)> {
        let src = &reading[base..];
        let shadow = shifts.text(src);
        let mut tree = Tree::empty(full, src.len());
        let mut conv = CharToByte::new(src);
        let mut stack: Vec<Open> = Vec::new();
        let mut parser = Parser::new_from_str(shadow.as_deref().unwrap_or(src));
        while let Some(event) = parser.next_event() {
            let (event, span) = match event {
                Ok(e) => e,
                Err(e) => {
                    let offset =
                        shifts.placed(base + conv.byte(shifts.original(e.marker().index())));
                    return Err(tree.scan_error(&stack, base, offset, &e));
                }
            };
            let s = shifts.placed(base + conv.byte(shifts.original(span.start.index()))) as u32;
            let e = shifts.placed(base + conv.byte(shifts.original(span.end.index()))) as u32;
            match event {
                Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
                Event::DocumentStart(explicit) => {
                    tree.documents.push(Document {
                        root: None,
                        explicit_start: explicit,
                        start: s,
                    });
                }
                Event::DocumentEnd => {}
                Event::Alias(anchor) => {
                    let id =
                        tree.push_node(&mut stack, Kind::Alias, Style::Plain, s, e, false, false);
                    tree.alias(id, anchor);
                }
                Event::Scalar(value, style, anchor, tag) => {
                    let style = match style {
                        ScalarStyle::Plain => Style::Plain,
                        ScalarStyle::SingleQuoted => Style::SingleQuoted,
                        ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                        ScalarStyle::Literal => Style::Literal,
                        ScalarStyle::Folded => Style::Folded,
                    };
                    let marks = (anchor > 0, tag.is_some());
                    tree.on_scalar(&mut stack, Some(&value), style, marks, s, e);
                    tree.anchor(anchor);
                }
                Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                    let is_map = matches!(event, Event::MappingStart(..));
                    tree.on_collection_start(&mut stack, is_map, anchor > 0, tag.is_some(), s, e);
                    tree.anchor(anchor);
                    if tree.too_deep.is_some() {
                        return Err(tree.too_deep_error(&stack));
                    }
                }
                Event::SequenceEnd | Event::MappingEnd => tree.on_collection_end(&mut stack, s),
            }
        }
        Ok(tree)
    }

    /// Records that the node just pushed carries anchor `id` (0: none).
    fn anchor(&mut self, id: usize) {
        if id > 0 {
            self.anchors.push((id, (self.nodes.len() - 1) as NodeId));
        }
    }

    /// Records that alias node `node` names anchor `id`.
    fn alias(&mut self, node: NodeId, id: usize) {
        if let Ok(i) = self.anchors.binary_search_by_key(&id, |a| a.0) {
            self.aliases.push((node, self.anchors[i].1));
        }
    }

    /// The syntax error for the parser's error `e` at byte `offset`.
    fn scan_error(
        &self,
        stack: &[Open],
        base: usize,
        mut offset: usize,
        e: &saphyr_parser::ScanError,
    ) -> (SyntaxError, String) {
        let full = self.src;
        let mut message = describe_scan_error(full, offset, e.info());
        if message == TAB_INDENTATION {
            if let Some(tab) = indentation_tab(full, offset) {
                offset = tab;
            }
        }
        // The parser points at the start of a quoted scalar with a bad
        // escape; point at the escape itself.
        if e.info().contains("escape") || e.info().contains("hexdecimal") {
            if let Some(at) = super::quick::bad_escape(&full[offset..]) {
                offset += at;
                message = escape_message(&full[offset..]);
            }
        }
        let (line, col) = line_col(full, offset);
        let mut path = self.open_path(stack);
        if path.is_empty() {
            // A document that is one flow collection (JSON) can be buffered
            // whole by the scanner, which must see whether it is an implicit
            // key: no event has come yet, so the path is read from the text.
            let from = self.documents.last().map_or(base, |d| d.start as usize);
            path = flow_path(full, from.max(base), offset).unwrap_or_default();
        }
        (
            SyntaxError {
                offset,
                line,
                col,
                path,
                message,
            },
            e.info().to_string(),
        )
    }

    /// A scalar event spanning `s..e` (as the parser reports it), with
    /// its value, or `None` for a quoted scalar to be decoded from its
    /// source; `marks`: whether it has an anchor, and a tag.
    fn on_scalar(
        &mut self,
        stack: &mut [Open],
        value: Option<&str>,
        style: Style,
        (anchored, tagged): (bool, bool),
        s: u32,
        e: u32,
    ) {
        let full = self.src;
        self.merges |= style == Style::Plain && value == Some("<<");
        let is_key = stack
            .last()
            .is_some_and(|o| self.nodes[o.node as usize].kind == Kind::Map && o.count % 2 == 0);
        let (s, end) = match style {
            Style::Literal | Style::Folded => block_scalar_span(full, s as usize, e as usize),
            // The parser's end of a quoted scalar can lie past the blanks and
            // comment after its closing quote.
            Style::SingleQuoted | Style::DoubleQuoted => {
                (s, quoted_end(full, s as usize, e as usize, style) as u32)
            }
            _ => (s, e),
        };
        // An empty value (`key:` or `-`) is reported as a zero-width span on
        // its indicator; count the indicator as part of the content, so that
        // a collection ending in one ends after it. An empty key (` : v`)
        // stays before its `:`, where its mapping's column is. An implicit
        // null in a flow mapping (`{key}`) is reported on the closing
        // bracket: make it zero-width before it.
        // The parser can give an empty scalar the span of the token after it
        // (the `? ` of the next explicit key): it holds no text, so it is
        // zero-width wherever it is put.
        let (s, end) = if value == Some("") && style == Style::Plain && !tagged && !anchored {
            let b = full.as_bytes();
            // The collection the scalar is in: its start and where its first
            // entry starts, if it has one.
            let (open_start, first) = stack.last().map_or((0, None), |o| {
                let first = (o.count > 0).then(|| self.nodes[o.node as usize + 1].start);
                (self.nodes[o.node as usize].start, first)
            });
            // Block context: no flow collection is open (a single-pair
            // mapping in a flow sequence, `[t: ]`, is block style in flow).
            let in_block = !stack.is_empty()
                && stack
                    .iter()
                    .all(|o| self.nodes[o.node as usize].style == Style::Block);
            // In block context a `:` or `-` followed by more than a blank
            // starts the next plain scalar (`:m`, `-x`); a `:` is a
            // value's own indicator on its key's line or in its mapping's
            // column (`? k` then `:` under the `?`), not an outer mapping's.
            let blank_after = matches!(
                b.get(s as usize + 1),
                None | Some(b' ' | b'\t' | b'\r' | b'\n')
            );
            // A mapping's column: where it starts (its first `?`) or where
            // its first key does.
            let in_map_column = |at: usize| {
                let col = byte_column(full, at);
                col == byte_column(full, open_start as usize)
                    || first.is_some_and(|f| byte_column(full, f as usize) == col)
            };
            let own_colon = || {
                let key_end = stack
                    .last()
                    .filter(|o| o.last != NONE)
                    .map_or(s, |o| self.nodes[o.last as usize].end);
                !full[key_end.min(s) as usize..s as usize].contains('\n')
                    || in_map_column(s as usize)
            };
            let indicator =
                !in_block || (blank_after && (b.get(s as usize) != Some(&b':') || own_colon()));
            match b.get(s as usize) {
                Some(b':' | b'-') if !is_key && indicator => (s + 1, s + 1),
                Some(b'}' | b']' | b',') => (s, s),
                // An empty explicit key (a `?` with nothing after it) is
                // reported at the next token (the next line's first, or the
                // `:` of `? :`): put it on its `?`, where its mapping's
                // column is. A `?` before the mapping starts, or in another
                // column than its first key's, is another mapping's (`? :` is
                // an explicit key holding `{null: null}`): the empty key stays
                // where it was reported, on its `:`.
                _ if is_key => match explicit_key_indicator(&full[..s as usize]) {
                    Some(q) if q as u32 >= open_start && (first.is_none() || in_map_column(q)) => {
                        (q as u32, q as u32)
                    }
                    _ => (s, s),
                },
                // The empty value of an explicit key (`? k` with no `:`) is
                // reported at the next line's first token: put it right
                // after its key (after the `?` of an empty key).
                _ if at_line_start(full, s as usize) => {
                    let key_end = stack
                        .last()
                        .filter(|o| self.nodes[o.node as usize].kind == Kind::Map)
                        .map(|o| o.last)
                        .filter(|&k| k != NONE)
                        .map_or(s, |k| {
                            let k = &self.nodes[k as usize];
                            let on_indicator = k.start == k.end
                                && full.as_bytes().get(k.end as usize) == Some(&b'?');
                            k.end + u32::from(on_indicator)
                        });
                    (key_end.min(s), key_end.min(s))
                }
                _ => (s, s),
            }
        } else {
            (s, end)
        };
        let id = self.push_node(stack, Kind::Scalar, style, s, end, anchored, tagged);
        self.set_text(id, value, style, s as usize, e as usize, anchored || tagged);
    }

    /// A sequence or mapping start event spanning `s..e`.
    fn on_collection_start(
        &mut self,
        stack: &mut Vec<Open>,
        is_map: bool,
        anchored: bool,
        tagged: bool,
        s: u32,
        e: u32,
    ) {
        let full = self.src;
        // The span runs from the anchor or tag, if any, through the bracket
        // and whatever blanks or comment follow it.
        let flow = opens_flow(&full[s as usize..e as usize]);
        let kind = if is_map { Kind::Map } else { Kind::Seq };
        let style = if flow { Style::Flow } else { Style::Block };
        // A block sequence at its parent key's indentation is reported where
        // its first item starts. When that is past a comment or on a later
        // line than its first `-`, start at the `-`, so that replacing the
        // sequence replaces it.
        let s = if !is_map && !flow && full.as_bytes().get(s as usize) != Some(&b'-') {
            match crate::block::dash_before(full, s as usize) {
                Some(d) if full[d + 1..s as usize].contains(['\n', '#']) => d as u32,
                _ => s,
            }
        } else {
            s
        };
        let id = self.push_node(stack, kind, style, s, e, anchored, tagged);
        if stack.len() >= MAX_DEPTH && self.too_deep.is_none() {
            self.too_deep = Some(s);
        }
        stack.push(Open {
            node: id,
            count: 0,
            last: NONE,
        });
    }

    /// The error for a collection nested deeper than [`MAX_DEPTH`], the
    /// innermost of `stack`; its path is cut after a few levels.
    fn too_deep_error(&self, stack: &[Open]) -> (SyntaxError, String) {
        let offset = self.too_deep.unwrap_or(0) as usize;
        let (line, col) = line_col(self.src, offset);
        let path = self.open_path(&stack[..stack.len().min(8)]);
        let message = too_deep_message();
        let info = message.clone();
        (
            SyntaxError {
                offset,
                line,
                col,
                path: format!("{path}…"),
                message,
            },
            info,
        )
    }

    /// A sequence or mapping end event at `s`.
    fn on_collection_end(&mut self, stack: &mut Vec<Open>, s: u32) {
        let Some(open) = stack.pop() else {
            return;
        };
        let full = self.src;
        let after = self.nodes.len() as u32;
        let n = &self.nodes[open.node as usize];
        // A block collection always has an entry: one without is an empty
        // flow collection (`{ }`) whose start event came with a zero-width
        // span.
        let empty_flow = n.style == Style::Block
            && open.last == NONE
            && matches!(full.as_bytes().get(n.start as usize), Some(b'{' | b'['));
        let end = if n.style == Style::Flow || empty_flow {
            flow_end(full, s as usize)
        } else if open.last != NONE {
            self.nodes[open.last as usize].end
        } else {
            n.start
        };
        let node = &mut self.nodes[open.node as usize];
        node.end = end;
        node.after = after;
        if empty_flow {
            node.style = Style::Flow;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push_node(
        &mut self,
        stack: &mut [Open],
        kind: Kind,
        style: Style,
        start: u32,
        end: u32,
        anchored: bool,
        tagged: bool,
    ) -> NodeId {
        let id = self.nodes.len() as NodeId;
        let parent = stack.last().map_or(NONE, |o| o.node);
        if let Some(o) = stack.last_mut() {
            o.count += 1;
            o.last = id;
        }
        let flags = if anchored { ANCHORED } else { 0 } | if tagged { TAGGED } else { 0 };
        self.nodes.push(Node {
            kind,
            style,
            flags,
            start,
            end,
            parent,
            // A collection's subtree ends when the collection does.
            after: if matches!(kind, Kind::Map | Kind::Seq) {
                NONE
            } else {
                id + 1
            },
        });
        if parent == NONE {
            if let Some(doc) = self.documents.last_mut() {
                if doc.root.is_none() {
                    doc.root = Some(id);
                }
            }
        }
        id
    }

    /// Where the value of scalar `id` (the parser's `value`, from the
    /// parser's span `s..e`) is read from: its source text when it is that,
    /// else decoded from the source when the decoder gives exactly `value`,
    /// else a copy.
    fn set_text(
        &mut self,
        id: NodeId,
        value: Option<&str>,
        style: Style,
        s: usize,
        e: usize,
        marked: bool,
    ) {
        let src = self.src;
        match (style, value) {
            (Style::Plain, Some(value)) if src.get(s..e) == Some(value) => return,
            (Style::SingleQuoted | Style::DoubleQuoted, Some(value))
                if e >= s + 2 && src.get(s + 1..e - 1) == Some(value) =>
            {
                return;
            }
            _ => {}
        }
        // Where the decoder starts: the opening quote, or the block
        // scalar's indicator (an anchor or tag before them: copied).
        let at = match style {
            _ if marked => None,
            Style::SingleQuoted | Style::DoubleQuoted => Some(s),
            Style::Literal | Style::Folded => block_scalar_header(src, s).map(|h| h.0),
            _ => None,
        };
        let Some(value) = value else {
            // A quoted or block scalar the quick check read
            // ([`crate::quick`]): the decoder reads it (the `quick` fuzz
            // target holds the two readings equal).
            self.decode_from(id, at.unwrap_or(s));
            return;
        };
        let parent = at.and_then(|at| self.indentation_at(id, at));
        if let Some(at) = at.filter(|&at| crate::decode::gives(src, at, parent, value)) {
            self.decode_from(id, at);
            return;
        }
        self.nodes[id as usize].flags |= COPIED;
        self.copied
            .push((id, self.arena.len() as u32, value.len() as u32));
        self.arena.push_str(value);
    }

    /// Marks scalar `id` as decoded from its source at `at` when asked.
    fn decode_from(&mut self, id: NodeId, at: usize) {
        self.nodes[id as usize].flags |= DECODED;
        self.decoded.push(Decoded {
            node: id,
            at: at as u32,
            value: std::sync::OnceLock::new(),
        });
    }

    /// The source text.
    pub fn src(&self) -> &'a str {
        self.src
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn kind(&self, id: NodeId) -> Kind {
        self.nodes[id as usize].kind
    }

    /// The first node after `id`'s subtree in document order: the next
    /// sibling of `id` or of its nearest ancestor that has one.
    pub(crate) fn following(&self, id: NodeId) -> Option<NodeId> {
        let next = self.subtree_end(id);
        let mut root = id;
        while let Some(p) = self.parent(root) {
            root = p;
        }
        (next < self.subtree_end(root)).then_some(next)
    }

    /// One past the last node of `id`'s subtree: node ids are given in
    /// document order, so a subtree is the ids `id..subtree_end(id)`.
    pub(crate) fn subtree_end(&self, id: NodeId) -> NodeId {
        self.nodes[id as usize]
            .after
            .min(self.nodes.len() as NodeId)
    }

    /// Whether `n` is `a` or inside `a`'s subtree.
    pub fn contains(&self, a: NodeId, n: NodeId) -> bool {
        n >= a && n < self.subtree_end(a)
    }

    pub fn parent(&self, id: NodeId) -> Option<NodeId> {
        let p = self.nodes[id as usize].parent;
        (p != NONE).then_some(p)
    }

    /// A scalar's value (empty for other nodes). A value decoded from its
    /// source is kept once asked for; [`Tree::scalar_text`] reads one
    /// without keeping it.
    pub fn scalar(&self, id: NodeId) -> &str {
        let n = &self.nodes[id as usize];
        if n.kind != Kind::Scalar {
            return "";
        }
        if n.flags & DECODED != 0 {
            return match self.decoded_of(id) {
                Some(d) => d.value.get_or_init(|| self.decode(d)),
                None => "",
            };
        }
        self.plain_text(id, n)
    }

    /// A scalar's value like [`Tree::scalar`], without keeping a value
    /// decoded for it: for reading long values once (a component spec,
    /// a whole subtree as a [`crate::Value`]).
    pub fn scalar_text(&self, id: NodeId) -> std::borrow::Cow<'_, str> {
        let n = &self.nodes[id as usize];
        if n.kind == Kind::Scalar && n.flags & DECODED != 0 {
            return match self.decoded_of(id) {
                Some(d) => match d.value.get() {
                    Some(v) => v.as_str().into(),
                    None => self.decode(d).into(),
                },
                None => "".into(),
            };
        }
        self.scalar(id).into()
    }

    /// The value of a scalar that is not [`DECODED`].
    fn plain_text(&self, id: NodeId, n: &Node) -> &str {
        if n.flags & COPIED != 0 {
            let i = self.copied.partition_point(|c| c.0 < id);
            return match self.copied.get(i) {
                Some(&(_, o, l)) => &self.arena[o as usize..(o + l) as usize],
                None => "",
            };
        }
        if n.style.is_quoted() {
            &self.src[n.start as usize + 1..n.end as usize - 1]
        } else {
            &self.src[n.start as usize..n.end as usize]
        }
    }

    fn decoded_of(&self, id: NodeId) -> Option<&Decoded> {
        let i = self.decoded.partition_point(|d| d.node < id);
        self.decoded.get(i).filter(|d| d.node == id)
    }

    /// The value of a [`DECODED`] scalar, which decoding gave when the
    /// tree was built.
    fn decode(&self, d: &Decoded) -> String {
        let at = d.at as usize;
        let parent = self.indentation_at(d.node, at);
        let size = (self.nodes[d.node as usize].end as usize).saturating_sub(at);
        crate::decode::value(self.src, at, parent, size).unwrap_or_default()
    }

    /// The indentation of the block collection holding scalar `id`, which
    /// starts at `at` (what a block scalar's indentation indicator counts
    /// from): a sequence's is its `-`'s column, a mapping's its first
    /// key's. `None` at the top of a document.
    fn indentation_at(&self, id: NodeId, at: usize) -> Option<usize> {
        let src = self.src;
        let column = |at: usize| at - src[..at].rfind('\n').map_or(0, |p| p + 1);
        let parent = self.nodes.get(self.nodes[id as usize].parent as usize)?;
        let dash = src[..at].trim_end_matches(' ');
        if parent.kind == Kind::Seq && dash.ends_with('-') {
            return Some(column(dash.len() - 1));
        }
        Some(column(parent.start as usize))
    }

    /// The children of a collection, in order (keys and values alternate in maps).
    pub fn children(&self, id: NodeId) -> Children<'_, 'a> {
        let n = &self.nodes[id as usize];
        let has = matches!(n.kind, Kind::Map | Kind::Seq);
        Children {
            tree: self,
            next: if has { id + 1 } else { NONE },
            end: if has { self.subtree_end(id) } else { 0 },
        }
    }

    /// The `(key, value)` pairs of a map.
    pub fn entries(&self, id: NodeId) -> Entries<'_, 'a> {
        Entries {
            inner: self.children(id),
        }
    }

    /// The items of a sequence.
    pub fn items(&self, id: NodeId) -> Children<'_, 'a> {
        self.children(id)
    }

    /// Number of entries of a map or items of a sequence.
    pub fn count(&self, id: NodeId) -> usize {
        let n = self.children(id).count();
        if self.kind(id) == Kind::Map { n / 2 } else { n }
    }

    /// Looks a key up in a map. Returns `Err` with both key nodes when the key occurs twice.
    pub fn get(
        &self,
        map: NodeId,
        key: &str,
    ) -> Result<Option<(NodeId, NodeId)>, (NodeId, NodeId)> {
        if self.kind(map) != Kind::Map {
            return Ok(None);
        }
        let mut found: Option<(NodeId, NodeId)> = None;
        for (k, v) in self.entries(map) {
            if self.key_is(k, key) {
                if let Some((first, _)) = found {
                    return Err((first, k));
                }
                found = Some((k, v));
            }
        }
        Ok(found)
    }

    /// Looks a key up, ignoring duplicates (the last one wins, as in PyYAML).
    /// For read-only questions such as format detection.
    pub fn get_value(&self, map: NodeId, key: &str) -> Option<NodeId> {
        if self.kind(map) != Kind::Map {
            return None;
        }
        let mut found = None;
        for (k, v) in self.entries(map) {
            if self.key_is(k, key) {
                found = Some(v);
            }
        }
        found
    }

    /// The node an alias names.
    pub fn alias_target(&self, alias: NodeId) -> Option<NodeId> {
        self.aliases
            .iter()
            .find(|(a, _)| *a == alias)
            .map(|(_, t)| *t)
    }

    /// Whether an alias elsewhere names `node` (which carries an anchor), or
    /// a node inside it.
    pub fn is_aliased(&self, node: NodeId) -> bool {
        self.nodes[node as usize].anchored() && self.aliases.iter().any(|(_, t)| *t == node)
    }

    /// The anchored node around `node` (it included) that an alias names:
    /// editing `node` would change what the alias reads too.
    pub fn aliased_ancestor(&self, node: NodeId) -> Option<NodeId> {
        let mut cur = Some(node);
        while let Some(n) = cur {
            if self.is_aliased(n) {
                return Some(n);
            }
            cur = self.parent(n);
        }
        None
    }

    /// Whether key node `k` is a YAML merge key (`<<`, plain, untagged).
    pub fn is_merge_key(&self, k: NodeId) -> bool {
        let n = &self.nodes[k as usize];
        self.merges && n.style == Style::Plain && !n.tagged() && self.key_is(k, "<<")
    }

    /// Whether node `k` is a scalar whose value is `key`: what map lookups
    /// ask of every key, so a value read from its source is compared there.
    #[inline]
    fn key_is(&self, k: NodeId, key: &str) -> bool {
        let n = &self.nodes[k as usize];
        if n.kind != Kind::Scalar {
            return false;
        }
        if n.flags & (COPIED | DECODED) != 0 {
            return self.scalar(k) == key;
        }
        let quoted = usize::from(n.style.is_quoted());
        let (s, e) = (
            n.start as usize + quoted,
            (n.end as usize).saturating_sub(quoted),
        );
        e.checked_sub(s) == Some(key.len()) && self.src.as_bytes()[s..e] == *key.as_bytes()
    }

    /// The node a value stands for: an alias's anchor, else itself.
    pub fn resolve(&self, node: NodeId) -> NodeId {
        let mut n = node;
        for _ in 0..64 {
            match self.kind(n) {
                Kind::Alias => match self.alias_target(n) {
                    Some(t) => n = t,
                    None => return n,
                },
                _ => return n,
            }
        }
        n
    }

    /// The mappings merged into `map` by its merge keys (`<<: *a`,
    /// `<<: [*a, *b]`, `<<: {..}`), in the order they take precedence.
    pub fn merge_sources(&self, map: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        if self.kind(map) != Kind::Map {
            return out;
        }
        for (k, v) in self.entries(map) {
            if !self.is_merge_key(k) {
                continue;
            }
            let v = self.resolve(v);
            match self.kind(v) {
                Kind::Map => out.push(v),
                Kind::Seq => out.extend(
                    self.items(v)
                        .map(|i| self.resolve(i))
                        .filter(|&i| self.kind(i) == Kind::Map),
                ),
                _ => {}
            }
        }
        out
    }

    /// The value of `key` in `map` as YAML readers see it (Kubernetes'
    /// decoder, PyYAML): the map's own key, else the first merged mapping
    /// that has it (`<<`). Aliased values are resolved.
    pub fn lookup(&self, map: NodeId, key: &str) -> Option<NodeId> {
        self.lookup_at(self.resolve(map), key, 0)
    }

    fn lookup_at(&self, map: NodeId, key: &str, depth: usize) -> Option<NodeId> {
        if self.kind(map) != Kind::Map || depth > 16 {
            return None;
        }
        // One pass: the key's last value, and whether there are merge keys
        // to look in when the map does not have it.
        let mut found = None;
        let mut merges = false;
        for (k, v) in self.entries(map) {
            if self.is_merge_key(k) {
                merges = true;
            } else if key != "<<" && self.key_is(k, key) {
                found = Some(v);
            }
        }
        if let Some(v) = found {
            return Some(self.resolve(v));
        }
        if !merges {
            return None;
        }
        self.merge_sources(map)
            .into_iter()
            .find_map(|m| self.lookup_at(m, key, depth + 1))
    }

    /// The entries of `map` as YAML readers see them: merged entries first
    /// (the first merged mapping's winning), then the map's own, each key
    /// once, the merge keys themselves left out. Aliased values are resolved.
    pub fn effective_entries(&self, map: NodeId) -> Vec<(NodeId, NodeId)> {
        let map = self.resolve(map);
        let mut out: Vec<(NodeId, NodeId)> = Vec::new();
        self.collect_entries(map, 0, &mut out);
        out
    }

    fn collect_entries(&self, map: NodeId, depth: usize, out: &mut Vec<(NodeId, NodeId)>) {
        if self.kind(map) != Kind::Map || depth > 16 {
            return;
        }
        let own: Vec<(NodeId, NodeId)> = self
            .entries(map)
            .filter(|&(k, _)| !self.is_merge_key(k))
            .collect();
        let mut merged: Vec<(NodeId, NodeId)> = Vec::new();
        for m in self.merge_sources(map) {
            self.collect_entries(m, depth + 1, &mut merged);
        }
        let has = |list: &[(NodeId, NodeId)], k: NodeId| {
            list.iter().any(|&(o, _)| self.scalar(o) == self.scalar(k))
        };
        let mut kept: Vec<(NodeId, NodeId)> = Vec::new();
        for (k, v) in merged {
            if !has(&own, k) && !has(&kept, k) {
                kept.push((k, v));
            }
        }
        for (k, v) in kept.into_iter().chain(own) {
            if let Some(slot) = out
                .iter_mut()
                .find(|(o, _)| self.scalar(*o) == self.scalar(k))
            {
                slot.1 = self.resolve(v);
            } else {
                out.push((k, self.resolve(v)));
            }
        }
    }

    /// Whether a scalar is a null (`~`, `null`, empty) in plain style.
    pub fn is_null(&self, id: NodeId) -> bool {
        let n = self.node(id);
        n.kind == Kind::Scalar
            && n.style == Style::Plain
            && matches!(self.scalar(id), "" | "~" | "null" | "Null" | "NULL")
    }

    /// The scalar value as a string when the node is a non-null scalar.
    pub fn str_value(&self, id: NodeId) -> Option<&str> {
        (self.kind(id) == Kind::Scalar && !self.is_null(id)).then(|| self.scalar(id))
    }

    /// Line (1-based) and column (1-based) of a node's first character.
    pub fn position(&self, id: NodeId) -> (usize, usize) {
        self.line_col(self.node(id).start as usize)
    }

    /// Line (1-based) and column (1-based, in characters) of byte `offset`
    /// of the text: [`line_col`], from an index of the line starts built on
    /// the first call, so that many diagnostics in one large file do not
    /// each count the lines before them.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let at = offset.min(self.src.len());
        let starts = self.lines.get_or_init(|| {
            std::iter::once(0)
                .chain(memchr::memchr_iter(b'\n', self.src.as_bytes()).map(|p| p as u32 + 1))
                .collect()
        });
        // The lines starting at or before `at`: the first always does.
        let line = starts.partition_point(|&s| s as usize <= at);
        (line, column(self.src, line, starts[line - 1] as usize, at))
    }

    /// The YAML path of a node from its document root, such as `spec.templates[3].name`.
    pub fn path(&self, id: NodeId) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut cur = id;
        while let Some(p) = self.parent(cur) {
            match self.kind(p) {
                Kind::Map => {
                    // cur may be a key or a value; name the entry either way.
                    let mut prev_key = None;
                    for (i, c) in self.children(p).enumerate() {
                        if i % 2 == 0 {
                            prev_key = Some(c);
                        }
                        if c == cur {
                            if let Some(k) = prev_key {
                                parts.push(path_key(self.scalar(k)));
                            }
                            break;
                        }
                    }
                }
                Kind::Seq => {
                    let idx = self.children(p).position(|c| c == cur).unwrap_or(0);
                    parts.push(format!("[{idx}]"));
                }
                _ => {}
            }
            cur = p;
        }
        parts.reverse();
        let mut out = String::new();
        for p in parts {
            if !out.is_empty() && !p.starts_with('[') {
                out.push('.');
            }
            out.push_str(&p);
        }
        out
    }

    /// The path of the entry being read when parsing stopped: the
    /// innermost open collection, and in it the key whose value is pending
    /// or the index of the item being read.
    fn open_path(&self, stack: &[Open]) -> String {
        let Some(open) = stack.last() else {
            return String::new();
        };
        let mut path = self.path(open.node);
        let last = self.children(open.node).last();
        let inner = match self.kind(open.node) {
            Kind::Map if open.count % 2 == 1 => last
                .filter(|&k| self.kind(k) == Kind::Scalar)
                .map(|k| path_key(self.scalar(k))),
            Kind::Seq => Some(format!("[{}]", open.count)),
            _ => None,
        };
        if let Some(p) = inner {
            if !path.is_empty() && !p.starts_with('[') {
                path.push('.');
            }
            path.push_str(&p);
        }
        path
    }
}

/// How a key is written in a YAML path: plain when it is a simple word,
/// bracketed and quoted otherwise (label keys contain `.` and `/`).
pub fn path_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_string()
    } else {
        format!("[{key:?}]")
    }
}

/// The YAML path at byte `to` of the document that starts at or after
/// `from` when that document is a flow collection (`{...}` or `[...]`, as
/// JSON is), read from the text alone: up to a syntax error there is no
/// parse to ask. `None` when the document is not a flow collection.
fn flow_path(src: &str, from: usize, to: usize) -> Option<String> {
    let b = src.as_bytes();
    let to = to.min(b.len());
    // The document's own start: after the last `---` line before `to`.
    let mut start = from;
    let mut line = from;
    while line < to {
        let end = b[line..to]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(to, |p| line + p + 1);
        if b[line..end].starts_with(b"---") {
            start = line + 3;
        }
        line = end;
    }
    struct Frame {
        map: bool,
        key: Option<String>,
        index: usize,
    }
    let mut frames: Vec<Frame> = Vec::new();
    // The text of the last scalar, and whether it is still a key candidate.
    let mut last: Option<String> = None;
    let mut i = start;
    while i < to {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | 0xEF | 0xBB | 0xBF if frames.is_empty() => i += 1,
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'#' if i == start || b[i - 1].is_ascii_whitespace() => {
                while i < to && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'{' | b'[' => {
                frames.push(Frame {
                    map: c == b'{',
                    key: None,
                    index: 0,
                });
                last = None;
                i += 1;
            }
            b'}' | b']' => {
                frames.pop();
                if frames.is_empty() {
                    return None;
                }
                last = None;
                i += 1;
            }
            _ if frames.is_empty() => return None,
            b',' => {
                let f = frames.last_mut()?;
                f.index += 1;
                f.key = None;
                last = None;
                i += 1;
            }
            // A key ends at `: ` (or `:` right after a quoted key, JSON's
            // compact form).
            b':' if last.is_some()
                && (b
                    .get(i + 1)
                    .is_none_or(|n| n.is_ascii_whitespace() || b",[]{}".contains(n))
                    || matches!(b[i - 1], b'"' | b'\'')) =>
            {
                if let Some(f) = frames.last_mut() {
                    f.key = last.take();
                }
                i += 1;
            }
            b'"' | b'\'' => {
                let q = c;
                let mut j = i + 1;
                let mut text = String::new();
                while j < to {
                    if b[j] == q {
                        if q == b'\'' && b.get(j + 1) == Some(&b'\'') {
                            text.push('\'');
                            j += 2;
                            continue;
                        }
                        break;
                    }
                    if q == b'"' && b[j] == b'\\' {
                        j += 1;
                    }
                    if j < to {
                        let ch = src[j..].chars().next()?;
                        text.push(ch);
                        j += ch.len_utf8();
                    }
                }
                last = Some(text);
                i = j + 1;
            }
            _ => {
                let mut j = i;
                while j < to && !b",[]{}\n".contains(&b[j]) {
                    if b[j] == b':'
                        && b.get(j + 1)
                            .is_none_or(|n| n.is_ascii_whitespace() || b",[]{}".contains(n))
                    {
                        break;
                    }
                    j += 1;
                }
                let j = j.max(i + 1);
                last = Some(src.get(i..j).unwrap_or("").trim().to_string());
                i = j;
            }
        }
    }
    let mut path = String::new();
    for f in &frames {
        let part = if f.map {
            match &f.key {
                Some(k) => path_key(k),
                None => break,
            }
        } else {
            format!("[{}]", f.index)
        };
        if !path.is_empty() && !part.starts_with('[') {
            path.push('.');
        }
        path.push_str(&part);
    }
    Some(path)
}

/// A block scalar's content ends at the end of its last non-blank line,
/// unless the `+` chomping indicator keeps the trailing newlines. An empty
/// one is a zero-width span just after its header, so that a collection
/// ending in it ends on the header's line.
/// The header token (`|`, `>-`, `|2+`, ...) of the block scalar whose
/// content starts at `start`: the last token of the last non-blank line
/// before the content. Returns its start and end.
pub(crate) fn block_scalar_header(src: &str, start: usize) -> Option<(usize, usize)> {
    let mut line_end = src[..start.min(src.len())].rfind('\n').unwrap_or(0);
    loop {
        let line_start = src[..line_end].rfind('\n').map_or(0, |p| p + 1);
        let line = &src[line_start..line_end];
        let code = crate::block::comment_start(line).map_or(line, |c| &line[..c]);
        let code = code.trim_end_matches(['\r', ' ', '\t']);
        let tok_start = code.rfind([' ', '\t']).map_or(0, |p| p + 1);
        let tok = &code[tok_start..];
        if tok.starts_with('|') || tok.starts_with('>') {
            return Some((line_start + tok_start, line_start + code.len()));
        }
        if line_start == 0 || !crate::block::is_blank(line) {
            return None;
        }
        line_end = line_start - 1;
    }
}

fn block_scalar_span(src: &str, start: usize, end: usize) -> (u32, u32) {
    let b = src.as_bytes();
    // The span starts at the first content character, or at the next token
    // when the content is empty.
    let (header_end, keep) = match block_scalar_header(src, start) {
        Some((ts, te)) => (te, src[ts..te].contains('+')),
        None => (start, false),
    };
    let header_end = header_end.min(b.len());
    let mut e = end.min(b.len());
    if !keep {
        while e > start && matches!(b[e - 1], b'\n' | b'\r' | b' ' | b'\t') {
            e -= 1;
        }
    }
    if e <= start || crate::block::is_blank(&src[start.min(e)..e]) {
        return (header_end as u32, header_end as u32);
    }
    (start as u32, e.max(header_end) as u32)
}

/// Where the `?` that `before` ends with (blanks and line breaks aside)
/// sits, when it is an explicit key's indicator: first on its line, or after
/// a `- `, `: ` or `? ` (not in a comment).
fn explicit_key_indicator(before: &str) -> Option<usize> {
    let q = before
        .trim_end_matches(crate::block::BLANKS)
        .strip_suffix('?')?
        .len();
    let line = before[..q].rsplit('\n').next().unwrap_or("");
    if crate::block::comment_start(line).is_some() {
        return None;
    }
    let line = line.trim_end_matches([' ', '\t']);
    (crate::block::is_blank(line) || line.ends_with(['-', ':', '?'])).then_some(q)
}

/// The byte column of `at` in its line.
fn byte_column(src: &str, at: usize) -> usize {
    at - src[..at].rfind('\n').map_or(0, |p| p + 1)
}

/// Whether only spaces stand between the start of `at`'s line and `at`.
fn at_line_start(src: &str, at: usize) -> bool {
    src[..at]
        .bytes()
        .rev()
        .take_while(|&b| b != b'\n')
        .all(|b| b == b' ')
}

/// Just past the closing bracket of a flow collection whose end event is
/// at `at`: the event sits on the bracket, except after an implicit null
/// entry (`{a ,}`), where it sits on the comma before it.
fn flow_end(src: &str, at: usize) -> u32 {
    let b = src.as_bytes();
    let mut i = at;
    while let Some(&c) = b.get(i) {
        match c {
            b'}' | b']' => return (i + 1) as u32,
            b' ' | b'\t' | b'\r' | b'\n' | b',' => i += 1,
            b'#' => i += src[i..].find('\n').unwrap_or(src.len() - i),
            _ => break,
        }
    }
    (at + 1) as u32
}

/// Whether a collection's start span (anchor, tag, then the opening
/// bracket for a flow collection) opens a flow collection.
fn opens_flow(span: &str) -> bool {
    let mut rest = span;
    loop {
        rest = rest.trim_start_matches([' ', '\t', '\r', '\n']);
        if rest.starts_with(['&', '!']) {
            let n = rest.find([' ', '\t', '\r', '\n']).unwrap_or(rest.len());
            rest = &rest[n..];
        } else {
            return rest.starts_with(['{', '[']);
        }
    }
}

/// The message for an invalid escape at the start of `at`: a UTF-16
/// surrogate (`\ud83d`, as JSON encoders write characters beyond the Basic
/// Multilingual Plane) is valid JSON but not YAML, which escapes such a
/// character as one `\U0001F600`.
fn escape_message(at: &str) -> String {
    let hex = |s: &str| {
        s.get(2..6)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    if at.starts_with("\\u") {
        if let Some(hi @ 0xD800..=0xDBFF) = hex(at) {
            let lo = at
                .get(6..)
                .and_then(hex)
                .filter(|lo| (0xDC00..=0xDFFF).contains(lo));
            if let Some(lo) = lo {
                let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                return format!(
                    "the JSON surrogate pair `{}` is not valid YAML, which kfsched reads JSON as: write the character itself or `\\U{c:08X}`",
                    &at[..12]
                );
            }
        }
        if let Some(0xD800..=0xDFFF) = hex(at) {
            return format!(
                "`{}` is a UTF-16 surrogate, not a character: YAML (which kfsched reads JSON as) does not allow it; write the character itself or its `\\UXXXXXXXX` escape",
                &at[..6]
            );
        }
    }
    let esc: String = at.chars().take(2).collect();
    format!(
        "invalid escape sequence `{esc}` in a double-quoted string (write `\\\\` for a backslash)"
    )
}

const TAB_INDENTATION: &str = "tab character used for indentation: YAML indentation must be spaces (replace the tabs with spaces)";

/// What a text nested deeper than [`MAX_DEPTH`] is told.
fn too_deep_message() -> String {
    format!(
        "collections nested more than {MAX_DEPTH} deep, which kfsched does not read (no Kubernetes object needs it): flatten the data, or hold it as a string"
    )
}

fn describe_scan_error(src: &str, offset: usize, info: &str) -> String {
    // A tab in a line's indentation is the common cause of several scanner
    // messages; say so plainly.
    let line_start = src[..offset.min(src.len())]
        .rfind('\n')
        .map_or(0, |p| p + 1);
    let line = &src[line_start..];
    let indent: &str = &line[..line.len() - line.trim_start_matches([' ', '\t']).len()];
    if indent.contains('\t') || info.contains("tab") {
        return TAB_INDENTATION.into();
    }
    // saphyr-parser's own limit: flow collections nested as deep.
    if info == "recursion limit exceeded" {
        return too_deep_message();
    }
    info.to_string()
}

/// The byte offset of the tab that makes the scanner error at `offset` a
/// tab used as indentation: in the leading whitespace of the error's line
/// or of the lines after it up to the next one with content. (The scanner
/// points past the tab, or at the start of the plain scalar before the
/// line break whose indentation holds the tab.)
fn indentation_tab(src: &str, offset: usize) -> Option<usize> {
    let mut start = src[..offset.min(src.len())]
        .rfind('\n')
        .map_or(0, |p| p + 1);
    let mut first = true;
    while start <= src.len() {
        let rest = &src[start..];
        let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        if let Some(tab) = line[..indent].find('\t') {
            return Some(start + tab);
        }
        if !first && !line[indent..].trim_end_matches('\r').is_empty() {
            return None;
        }
        first = false;
        start += line.len() + 1;
    }
    None
}

/// Iterator over a node's children.
pub struct Children<'t, 'a> {
    tree: &'t Tree<'a>,
    next: u32,
    /// One past the parent's subtree.
    end: u32,
}

impl Iterator for Children<'_, '_> {
    type Item = NodeId;
    fn next(&mut self) -> Option<NodeId> {
        if self.next >= self.end {
            return None;
        }
        let id = self.next;
        // A child still being read (its subtree end unknown) is the last.
        self.next = self.tree.nodes[id as usize].after;
        Some(id)
    }
}

/// Iterator over a map's entries.
pub struct Entries<'t, 'a> {
    inner: Children<'t, 'a>,
}

impl Iterator for Entries<'_, '_> {
    type Item = (NodeId, NodeId);
    fn next(&mut self) -> Option<(NodeId, NodeId)> {
        let k = self.inner.next()?;
        let v = self.inner.next()?;
        Some((k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `position` and `line_col` (a line index) give what counting from the
    /// start gives, for every node and every character boundary (the end
    /// and past it included): multi-byte characters, a byte order mark,
    /// CRLF, the first and the last line.
    #[test]
    fn position_is_line_col_of_the_node_start() {
        for src in [
            "\u{feff}a: 1\nb: [x, \"é\", {c: d}]\n",
            "k: ü\r\nl:\r\n- ∂: 2\r\n- last",
            "---\nx\n---\n- 1\n-   y: z\n",
        ] {
            let t = Tree::parse(src).expect("parses");
            for id in 0..t.len() as NodeId {
                assert_eq!(
                    t.position(id),
                    line_col(src, t.node(id).start as usize),
                    "node {id} of {src:?}"
                );
            }
            for at in (0..=src.len() + 2).filter(|&o| o > src.len() || src.is_char_boundary(o)) {
                assert_eq!(t.line_col(at), line_col(src, at), "offset {at} of {src:?}");
            }
        }
    }

    /// Flow content indented less than its block (a `]`, a continuation
    /// line of a quoted or plain scalar), which libyaml and Kubernetes'
    /// decoder accept: parsed, with the values libyaml gives and every span
    /// in the original text.
    #[test]
    fn under_indented_flow_content_is_read_like_libyaml() {
        let src = "a:\n  b: [\n    \"x\"\n  ]\n  c: [\"\n    y\n  \", {k: v,\n l: w}]\n  d: 1\n";
        let t = Tree::parse(src).expect("parses");
        let root = t.documents[0].root.unwrap();
        let a = t.get_value(root, "a").unwrap();
        let b = t.get_value(a, "b").unwrap();
        assert_eq!(
            &src[t.node(b).start as usize..t.node(b).end as usize],
            "[\n    \"x\"\n  ]"
        );
        let c = t.get_value(a, "c").unwrap();
        let items: Vec<NodeId> = t.items(c).collect();
        assert_eq!(t.str_value(items[0]), Some(" y "));
        let l = t.get_value(items[1], "l").unwrap();
        assert_eq!(t.str_value(l), Some("w"));
        assert_eq!(&src[t.node(l).start as usize..t.node(l).end as usize], "w");
        let d = t.get_value(a, "d").unwrap();
        assert_eq!(&src[t.node(d).start as usize..], "1\n");
        // Many such lines (a long list written flush left) are read too.
        let mut long = String::from("a:\n  b: [\n");
        for i in 0..300 {
            long.push_str(&format!("{i},\n"));
        }
        long.push_str("]\n  c: 1\n");
        let t = Tree::parse(&long).expect("parses");
        let a = t.get_value(t.documents[0].root.unwrap(), "a").unwrap();
        assert_eq!(t.items(t.get_value(a, "b").unwrap()).count(), 300);
        // A document marker inside brackets stays an error, as in libyaml.
        assert!(Tree::parse("a:\n  b: [x,\n---]\n").is_err());
        // Real indentation errors outside brackets are still errors.
        let Err(e) = Tree::parse("a:\n  b: 1\n c: 2\n") else {
            panic!("an indentation error outside brackets");
        };
        assert_eq!((e.line, e.col), (3, 2), "{e:?}");
    }

    /// `levels` mappings one inside the other, in block style (PyYAML's,
    /// which the quick build reads) or in flow style.
    fn nested(levels: usize, flow: bool) -> String {
        if flow {
            return format!("{}1{}\n", "{a: ".repeat(levels), "}".repeat(levels));
        }
        (0..levels)
            .map(|i| {
                format!(
                    "{}{}\n",
                    "  ".repeat(i),
                    if i + 1 == levels { "z: 1" } else { "a:" }
                )
            })
            .collect()
    }

    #[test]
    fn collections_nest_at_most_max_depth_deep() {
        for flow in [false, true] {
            let ok = nested(MAX_DEPTH, flow);
            assert!(Tree::parse(&ok).is_ok(), "flow {flow}");
            assert!(
                check_syntax_within(&ok, MAX_DEPTH)
                    && crate::quick::accepts_within(&ok, MAX_DEPTH) != flow
            );
            let deep = nested(MAX_DEPTH + 1, flow);
            let Err(e) = Tree::parse(&deep) else {
                panic!("flow {flow}: nesting past the limit parses");
            };
            assert_eq!(e.message, too_deep_message(), "flow {flow}");
            assert!(!check_syntax_within(&deep, MAX_DEPTH), "flow {flow}");
            assert!(
                !crate::quick::accepts_within(&deep, MAX_DEPTH),
                "flow {flow}"
            );
            assert!(Tree::parse_by_parser(&deep).is_err(), "flow {flow}");
            if !flow {
                // The deepest mapping starts at its key, on the last line.
                assert_eq!((e.line, e.col), (MAX_DEPTH + 1, 2 * MAX_DEPTH + 1));
                assert_eq!(e.path, "a.a.a.a.a.a.a…");
            }
        }
    }

    /// A syntax error inside a document that is one flow collection (JSON)
    /// still names the YAML path it is at, though the scanner has emitted
    /// no event yet.
    #[test]
    fn errors_in_a_flow_document_name_their_path() {
        let err = |src: &str| {
            let Err(e) = Tree::parse(src) else {
                panic!("{src:?} parses")
            };
            (e.path, e.line, e.col)
        };
        assert_eq!(
            err("{\"spec\": {\"containers\": [{\"name\": \"a\" \"image\": \"x\"}]}}\n"),
            ("spec.containers[0].name".to_string(), 1, 39)
        );
        // Compact JSON, a key with dots, a second item, a comment first.
        assert_eq!(
            err("# c\n{\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":\"x\" 1}}}"),
            (
                "metadata.labels[\"app.kubernetes.io/name\"]".to_string(),
                2,
                53
            )
        );
        assert_eq!(
            err("[{\"a\": 1}, {\"b\": [1, 2, \"x\" \"y\"]}]"),
            ("[1].b[2]".to_string(), 1, 29)
        );
        // The flow document after a block one.
        assert_eq!(
            err("a: 1\n---\n{\"k\": [\"v\" \"w\"]}\n"),
            ("k[0]".to_string(), 3, 12)
        );
    }

    #[test]
    fn flow_path_reads_keys_items_and_quotes() {
        let at = |src: &str, needle: &str| flow_path(src, 0, src.find(needle).expect("needle"));
        assert_eq!(at("{a: {b: [x, y, HERE", "HERE").as_deref(), Some("a.b[2]"));
        assert_eq!(
            at("{'it''s': {\"q\\\"k\": HERE", "HERE").as_deref(),
            Some("[\"it's\"][\"q\\\"k\"]")
        );
        // A `:` inside a plain scalar or a URL is not a key's end.
        assert_eq!(
            at("{image: gcr.io:443/x, HERE", "HERE").as_deref(),
            Some("")
        );
        assert_eq!(at("{k: v} HERE", "HERE"), None);
        assert_eq!(at("a: {b: HERE", "HERE"), None);
    }

    #[test]
    fn spans_are_bytes_and_content_ends_exclude_trailing_comments() {
        let src = "a: \u{e9}t\u{e9}\nb: {x: 1}  # c\nc:\n- p\n- q: 1\n  r: 'it''s'\n# tail\nd: |\n  lit\n\ne: end\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        let (_, a) = t.get(root, "a").unwrap().unwrap();
        assert_eq!(
            &src[t.node(a).start as usize..t.node(a).end as usize],
            "\u{e9}t\u{e9}"
        );
        let (_, b) = t.get(root, "b").unwrap().unwrap();
        assert_eq!(
            &src[t.node(b).start as usize..t.node(b).end as usize],
            "{x: 1}"
        );
        assert_eq!(t.node(b).style, Style::Flow);
        let (_, c) = t.get(root, "c").unwrap().unwrap();
        assert_eq!(
            &src[t.node(c).start as usize..t.node(c).end as usize],
            "p\n- q: 1\n  r: 'it''s'"
        );
        let item = t.items(c).nth(1).unwrap();
        let (_, r) = t.get(item, "r").unwrap().unwrap();
        assert_eq!(t.scalar(r), "it's");
        let (_, d) = t.get(root, "d").unwrap().unwrap();
        assert_eq!(
            &src[t.node(d).start as usize..t.node(d).end as usize],
            "lit"
        );
        assert_eq!(t.path(r), "c[1].r");
    }

    #[test]
    fn an_explicit_key_without_a_value_ends_its_mapping_at_the_key() {
        let src = "tc:\n  ? /\nnext: 1\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        let v = t.node(t.get_value(root, "tc").unwrap());
        assert_eq!(&src[v.start as usize..v.end as usize], "? /");
    }

    /// YAML's blanks are spaces and tabs: a block scalar whose content is a
    /// vertical tab or a no-break space (white space to Rust's `trim`) spans
    /// that content, as any other block scalar does.
    #[test]
    fn block_scalar_content_of_other_white_space_is_content() {
        for content in ["\u{b}", "\u{a0}"] {
            let src = format!("k: |\n  {content}\nn: 1\n");
            let t = Tree::parse(&src).unwrap();
            let root = t.documents[0].root.unwrap();
            let v = t.node(t.get_value(root, "k").unwrap());
            assert_eq!(&src[v.start as usize..v.end as usize], content);
        }
    }

    /// In a single-pair mapping of a flow sequence (block style, in flow),
    /// an empty value reported on its `:` goes after it, as in any flow
    /// collection, even with a `,` right after.
    #[test]
    fn an_empty_value_of_a_single_pair_mapping_follows_its_colon() {
        let src = "[t:,\n]\n";
        let t = Tree::parse(src).unwrap();
        let pair = t.items(t.documents[0].root.unwrap()).next().unwrap();
        let (_, value) = t.entries(pair).next().unwrap();
        assert_eq!((t.node(value).start, t.node(value).end), (3, 3));
    }

    /// Empty keys and values sit in their own entries: the key on its `?`,
    /// the value after it, and the empty key of `? :` (an explicit key
    /// holding a mapping) on that mapping's `:`.
    #[test]
    fn empty_explicit_entries_are_placed_in_their_own_entries() {
        let src = "k:\n ? \n ? :\n";
        let t = Tree::parse(src).unwrap();
        let spans = |id: NodeId| (t.node(id).start, t.node(id).end);
        let root = t.documents[0].root.unwrap();
        let map = t.get_value(root, "k").unwrap();
        let entries: Vec<_> = t.entries(map).collect();
        assert_eq!(entries.len(), 2);
        let (first_key, first_value) = entries[0];
        assert_eq!(spans(first_key), (4, 4), "on the first `?`");
        assert_eq!(spans(first_value), (5, 5), "after the first `?`");
        let (inner, _) = entries[1];
        assert_eq!(t.kind(inner), Kind::Map);
        let (inner_key, inner_value) = t.entries(inner).next().unwrap();
        assert_eq!(spans(inner_key), (10, 10), "on the `:` of `? :`");
        assert_eq!(spans(inner_value), (11, 11), "after that `:`");
        // A value the parser reports on the next line's `:m` (a plain
        // scalar, not an indicator) goes after its `?`.
        let src = "k:\n ?\n:m: v\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        let map = t.get_value(root, "k").unwrap();
        let (key, value) = t.entries(map).next().unwrap();
        assert_eq!((t.node(key).start, t.node(value).start), (4, 5));
        assert_eq!(t.node(value).end, 5);
        // A `:` in an outer mapping's column is not the value indicator of
        // an inner `?`, and that `?` is not the outer empty key's.
        let src = "k:\n  :   ?\n: v\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        let (_, inner) = t.entries(t.get_value(root, "k").unwrap()).next().unwrap();
        let (key, value) = t.entries(inner).next().unwrap();
        assert_eq!((t.node(key).start, t.node(value).start), (9, 10));
        let (outer_key, _) = t.entries(root).nth(1).unwrap();
        assert_eq!(t.node(outer_key).start, 11, "on the outer `:`");
        // A `:` under the `?` of `? a` is that entry's, though the key `a`
        // starts two columns right of it.
        let src = "k:\n ? a\n :\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        let (_, value) = t.entries(t.get_value(root, "k").unwrap()).next().unwrap();
        assert_eq!((t.node(value).start, t.node(value).end), (10, 10));
    }

    #[test]
    fn a_flow_collection_ends_past_its_bracket_after_an_implicit_null() {
        let src = "n: {imatab ,}\nm: [a ,]\nk: {a: 1}\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        for (key, text) in [("n", "{imatab ,}"), ("m", "[a ,]"), ("k", "{a: 1}")] {
            let v = t.node(t.get_value(root, key).unwrap());
            assert_eq!(&src[v.start as usize..v.end as usize], text);
        }
    }

    #[test]
    fn flow_collections_are_recognised_whatever_follows_the_bracket() {
        let src = "a: {    x: 1,\n  y: 2}\nb: [ # c\n  1]\nc: &k !!map { z: 3 }\nd: &m\n  e: 4\nf: !!seq\n- 5\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        for (key, style) in [
            ("a", Style::Flow),
            ("b", Style::Flow),
            ("c", Style::Flow),
            ("d", Style::Block),
            ("f", Style::Block),
        ] {
            let v = t.get_value(root, key).unwrap();
            assert_eq!(t.node(v).style, style, "{key}");
        }
    }

    #[test]
    fn duplicate_keys_are_reported() {
        let t = Tree::parse("a: 1\na: 2\n").unwrap();
        let root = t.documents[0].root.unwrap();
        assert!(t.get(root, "a").is_err());
        assert_eq!(t.get_value(root, "a").map(|v| t.scalar(v)), Some("2"));
    }

    #[test]
    fn tabs_in_indentation_get_a_plain_message() {
        let err = Tree::parse("a:\n\tb: 1\n").err().unwrap();
        assert!(err.message.contains("tab"), "{}", err.message);
        assert_eq!(err.line, 2);
    }

    /// The error points at the tab, whichever scanner message it comes
    /// from: past the tab ("tabs disallowed") or at the plain scalar
    /// before it ("while scanning a plain scalar, found a tab").
    #[test]
    fn a_tab_used_as_indentation_is_reported_at_the_tab() {
        for (src, line, col) in [
            ("apiVersion: v1\nkind: Pod\nmetadata:\n\tname: p\n", 4, 1),
            ("a:\n  b: 1\n\tc: 2\n", 3, 1),
            ("a:\n  b: 1\n \tc: 2\n", 3, 2),
            ("a:\n  b: 1\n\n\tc: 2\n", 4, 1),
            ("a:\n  - x\n\t- y\n", 3, 1),
            ("a:\n    b: 1\n  \tc: 2\n", 3, 3),
            ("k: v\nm:\n  n: o\n\t\tp: q\n", 4, 1),
            ("a:\n  b:\n\t- 1\n", 3, 1),
        ] {
            let err = Tree::parse(src).err().unwrap();
            assert_eq!(err.message, TAB_INDENTATION, "{src:?}");
            assert_eq!((err.line, err.col), (line, col), "{src:?}");
        }
    }

    /// The SDK-written fixtures (KFP v1 and v2, PipelineVersions, their
    /// variants) keep no copy of a quoted or block scalar's value: each is
    /// decoded from the file when asked, and reads as the parser read it.
    #[test]
    fn sdk_files_keep_no_copies_of_their_long_values() {
        let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/golden");
        let mut decoded = 0;
        for group in std::fs::read_dir(&golden).expect("testdata/golden") {
            let group = group.expect("group").path();
            if !group.is_dir() {
                continue;
            }
            for case in std::fs::read_dir(group).expect("cases") {
                for name in ["plain.yaml", "expected.yaml"] {
                    let path = case.as_ref().expect("case").path().join(name);
                    let Ok(text) = std::fs::read_to_string(&path) else {
                        continue;
                    };
                    let Ok(t) = Tree::parse(&text) else { continue };
                    for &(id, _, _) in &t.copied {
                        assert_eq!(
                            t.node(id).style,
                            Style::Plain,
                            "{}: a {:?} scalar copied at {:?}",
                            path.display(),
                            t.node(id).style,
                            t.position(id)
                        );
                    }
                    for d in &t.decoded {
                        assert_eq!(
                            t.scalar_text(d.node),
                            t.scalar(d.node),
                            "{}",
                            path.display()
                        );
                    }
                    decoded += t.decoded.len();
                }
            }
        }
        assert!(decoded > 1000, "only {decoded} scalars decoded");
    }
}
