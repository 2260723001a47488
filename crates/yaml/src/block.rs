//! Rendering for hand-written files: block style in the file's own
//! indentation (step and sequence offset detected from the file), no line
//! wrapping, and flow style only where text goes into an existing flow
//! collection. Keys are written in the order the caller gives.

use super::emit::{double_quoted, scalar_needs_quotes, single_quoted};
use super::tree::{Kind, NodeId, Style, Tree};
use super::value::{Value, python_float_repr};

/// The indentation conventions of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockStyle {
    /// Columns between a mapping key and the keys of its child mapping.
    pub step: usize,
    /// Columns between a mapping key and the dashes of its child sequence
    /// (0 for the indentless `key:\n- item` style).
    pub seq_offset: usize,
    /// Columns between a dash and the item's content (`- a` is 2, `-   a` is 4).
    pub item_offset: usize,
}

impl Default for BlockStyle {
    fn default() -> Self {
        BlockStyle {
            step: 2,
            seq_offset: 0,
            item_offset: 2,
        }
    }
}

impl BlockStyle {
    /// Detects the most common step and sequence offset in a file.
    pub fn detect(tree: &Tree) -> BlockStyle {
        Counts::of(tree, 0..tree.len() as u32).style(BlockStyle::default())
    }

    /// The style of the subtree under `root` (a document, or an item of a
    /// ResourceList): files concatenated from several sources mix
    /// indentations, and text inserted into one document follows that
    /// document. A convention the subtree shows no example of comes from
    /// `file` (the whole file's style).
    pub fn detect_under(tree: &Tree, root: NodeId, file: BlockStyle) -> BlockStyle {
        Counts::of(tree, root..tree.subtree_end(root)).style(file)
    }

    /// `key: value` as block lines whose key starts at column `col`.
    pub fn entry(&self, key: &str, value: &Value, col: usize) -> String {
        let mut out = String::new();
        pad(&mut out, col);
        push_key(&mut out, key, col);
        self.after_key_into(&mut out, value, col);
        out.push('\n');
        out
    }

    /// The text that follows an existing `key:` (key at column `col`): a
    /// space and a scalar, or a line break and a block collection. No final
    /// line break.
    pub(crate) fn after_key(&self, value: &Value, col: usize) -> String {
        let mut out = String::new();
        self.after_key_into(&mut out, value, col);
        out
    }

    fn after_key_into(&self, out: &mut String, value: &Value, col: usize) {
        match value {
            Value::Map(m) if !m.is_empty() => {
                for (i, (k, v)) in m.iter().enumerate() {
                    let _ = i;
                    out.push('\n');
                    pad(out, col + self.step);
                    push_key(out, k, col + self.step);
                    self.after_key_into(out, v, col + self.step);
                }
            }
            Value::Seq(s) if !s.is_empty() => {
                for item in s {
                    out.push('\n');
                    self.item_into(out, item, col + self.seq_offset);
                }
            }
            _ => {
                out.push(' ');
                out.push_str(&scalar_text(value, false));
            }
        }
    }

    /// A sequence item `- value` whose dash is at column `dash`, ending with
    /// a line break.
    pub fn item(&self, value: &Value, dash: usize) -> String {
        let mut out = String::new();
        self.item_into(&mut out, value, dash);
        out.push('\n');
        out
    }

    /// The text that follows an existing dash at column `dash`.
    pub(crate) fn after_dash(&self, value: &Value, dash: usize) -> String {
        let mut out = String::new();
        let mut tmp = String::new();
        self.item_into(&mut tmp, value, dash);
        // drop the indentation and the dash itself
        out.push_str(&tmp[dash + 1..]);
        out
    }

    fn item_into(&self, out: &mut String, value: &Value, dash: usize) {
        pad(out, dash);
        out.push('-');
        match value {
            Value::Map(m) if !m.is_empty() => {
                let io = self.item_offset;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i == 0 {
                        pad(out, io - 1);
                    } else {
                        out.push('\n');
                        pad(out, dash + io);
                    }
                    push_key(out, k, dash + io);
                    self.after_key_into(out, v, dash + io);
                }
            }
            Value::Seq(s) if !s.is_empty() => {
                for (i, item) in s.iter().enumerate() {
                    if i == 0 {
                        let mut tmp = String::new();
                        self.item_into(&mut tmp, item, dash + 2);
                        out.push(' ');
                        out.push_str(&tmp[dash + 2..]);
                    } else {
                        out.push('\n');
                        self.item_into(out, item, dash + 2);
                    }
                }
            }
            _ => {
                out.push(' ');
                out.push_str(&scalar_text(value, false));
            }
        }
    }
}

fn line_start(src: &str, off: u32) -> bool {
    let start = src[..off as usize].rfind('\n').map_or(0, |p| p + 1);
    src[start..off as usize].bytes().all(|b| b == b' ')
}

/// The byte offset of the `-` that introduces a sequence item starting at `item_start`.
pub(crate) fn dash_before(src: &str, item_start: usize) -> Option<usize> {
    // The item's own content may start with a `-` (an item that is itself a
    // block sequence, `- - x`): that one is the content's, so look before it.
    let i = item_start.min(src.len());
    // Back line by line (the item may start lines after its `-`, past
    // comments and blank lines); on each line only the code before a
    // comment counts, and its last token must be the `-`.
    let mut end = i;
    loop {
        let line_start = src[..end].rfind('\n').map_or(0, |p| p + 1);
        let line = &src[line_start..end];
        let code = comment_start(line).map_or(line, |c| &line[..c]);
        let code = code.trim_end_matches([' ', '\t', '\r']);
        if !is_blank(code) {
            let cb = code.as_bytes();
            let dash = cb.len() - 1;
            return (cb[dash] == b'-' && (dash == 0 || matches!(cb[dash - 1], b' ' | b'\t')))
                .then_some(line_start + dash);
        }
        if line_start == 0 {
            return None;
        }
        end = line_start - 1;
    }
}

/// YAML's white space and line breaks (`s-white`, `b-char`). Rust's `trim`
/// also strips other characters (a vertical tab, a no-break space) that YAML
/// reads as content.
pub(crate) const BLANKS: [char; 4] = [' ', '\t', '\r', '\n'];

/// Whether `s` holds only YAML white space and line breaks.
pub fn is_blank(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// Where a comment starts in one line: a `#` at its start or after a blank.
pub(crate) fn comment_start(line: &str) -> Option<usize> {
    let b = line.as_bytes();
    (0..b.len()).find(|&k| b[k] == b'#' && (k == 0 || matches!(b[k - 1], b' ' | b'\t')))
}

fn pad(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push(' ');
    }
}

/// A mapping key and its `:`. Keys that YAML cannot take as implicit keys
/// (long or multi-line ones) are written as explicit `? key` / `:` pairs.
fn push_key(out: &mut String, k: &str, col: usize) {
    let text = key_text(k);
    if text.len() <= 128 && !text.contains('\n') {
        out.push_str(&text);
        out.push(':');
    } else {
        out.push_str("? ");
        out.push_str(&text);
        out.push('\n');
        pad(out, col);
        out.push(':');
    }
}

fn key_text(k: &str) -> String {
    quote(k, false)
}

fn quote(s: &str, flow: bool) -> String {
    match scalar_needs_quotes(s, flow) {
        None => s.to_string(),
        Some('\'') => single_quoted(s),
        Some(_) => double_quoted(s),
    }
}

/// A scalar value's text in block (`flow == false`) or flow context.
pub fn scalar_text(v: &Value, flow: bool) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => python_float_repr(*f),
        Value::Str(s) => quote(s, flow),
        Value::Seq(_) | Value::Map(_) => flow_text(v),
    }
}

/// A value in flow style on one line: `{a: b, c: [d]}`.
pub fn flow_text(v: &Value) -> String {
    match v {
        Value::Map(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| {
                    let key = quote(k, true);
                    if key.len() <= 128 {
                        format!("{key}: {}", flow_text(v))
                    } else {
                        format!("? {key} : {}", flow_text(v))
                    }
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Seq(s) => {
            let parts: Vec<String> = s.iter().map(flow_text).collect();
            format!("[{}]", parts.join(", "))
        }
        _ => scalar_text(v, true),
    }
}

/// How a hand-written flow collection is written, so that text added to it
/// reads like its neighbours: JSON (`kubectl get -o json`, `json.dump`, jq)
/// stays JSON, compact stays compact, and one entry per line stays so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowFormat {
    /// Keys and strings double-quoted with JSON escapes, so that a JSON
    /// document stays JSON (JSON strings are YAML double-quoted scalars).
    pub json: bool,
    /// `": "` rather than `":"`.
    pub colon_space: bool,
    /// `", "` rather than `","` between entries on one line.
    pub comma_space: bool,
    /// One entry per line, nested collections indented by this many columns
    /// more than the line their opening bracket is on (`json.MarshalIndent`,
    /// `json.dumps(indent=2)`); `None`: everything on one line.
    pub step: Option<usize>,
    /// Indented with tabs rather than spaces (Go's `json.MarshalIndent(v,
    /// "", "\t")`); `step` then counts tabs.
    pub tabs: bool,
}

impl FlowFormat {
    /// `{key: value, key: [a, b]}`.
    pub const YAML: FlowFormat = FlowFormat {
        json: false,
        colon_space: true,
        comma_space: true,
        step: None,
        tabs: false,
    };

    /// The format of the flow collections around `node`, read from the
    /// outermost flow collection that holds it (the first few thousand
    /// nodes of it: a format is uniform, and a large JSON file is read
    /// once per edit).
    pub fn of(tree: &Tree, node: NodeId) -> FlowFormat {
        let src = tree.src();
        let mut root = node;
        while let Some(p) = tree
            .parent(root)
            .filter(|&p| tree.node(p).style == Style::Flow)
        {
            root = p;
        }
        let (mut keys, mut quoted) = (0usize, 0usize);
        let mut colon_space = None;
        let mut comma_space = None;
        let mut step = None;
        let mut tabs = false;
        let between = |a: NodeId, b: NodeId| {
            let (a, b) = (tree.node(a).end as usize, tree.node(b).start as usize);
            src.get(a..b).unwrap_or("")
        };
        let end = tree.subtree_end(root).min(root + 4000);
        for id in root..end {
            let n = tree.node(id);
            if n.style != Style::Flow {
                continue;
            }
            let is_map = n.kind == Kind::Map;
            if is_map {
                for (k, v) in tree.entries(id) {
                    keys += 1;
                    quoted += usize::from(tree.node(k).style == Style::DoubleQuoted);
                    let t = between(k, v);
                    if colon_space.is_none() && t.contains(':') {
                        // Whether the value is written right after the colon.
                        colon_space = Some(!t.ends_with(':'));
                    }
                }
            }
            // Two consecutive entries: items of a sequence, or a value and
            // the next key of a mapping.
            let mut pair = tree.children(id).skip(usize::from(is_map));
            if let (None, Some(a), Some(b)) = (comma_space, pair.next(), pair.next()) {
                let t = between(a, b);
                if !t.contains('\n') {
                    comma_space = Some(t.contains(", "));
                }
            }
            if let (None, Some(first)) = (step, tree.children(id).next()) {
                let open = n.start as usize;
                let at = tree.node(first).start as usize;
                if src[open..at].contains('\n') {
                    let line = |off: usize| &src[src[..off].rfind('\n').map_or(0, |p| p + 1)..];
                    tabs = line(at).starts_with('\t');
                    step = indentation(line(at))
                        .checked_sub(indentation(line(open)))
                        .filter(|&s| s > 0);
                }
            }
        }
        FlowFormat {
            json: keys > 0 && quoted == keys,
            colon_space: colon_space.unwrap_or(true),
            comma_space: comma_space.unwrap_or(true),
            step,
            tabs,
        }
    }

    /// This format on one line (for a collection written on one line in a
    /// file whose others have one entry per line).
    pub fn one_line(self) -> FlowFormat {
        FlowFormat { step: None, ..self }
    }

    fn pad(self, out: &mut String, n: usize) {
        let c = if self.tabs { '\t' } else { ' ' };
        out.extend(std::iter::repeat_n(c, n));
    }

    fn colon(self) -> &'static str {
        // `key:value` is one plain scalar in YAML: only a quoted (JSON)
        // key may be followed by its `:` and the value without a space.
        if self.colon_space || !self.json {
            ": "
        } else {
            ":"
        }
    }

    fn comma(self) -> &'static str {
        if self.comma_space { ", " } else { "," }
    }

    /// `key: value` (or `"key": value`) as an entry of a flow mapping whose
    /// entries start at column `col` (one per line) or on one line.
    pub fn entry(self, key: &str, value: &Value, col: usize) -> String {
        let v = self.text(value, col);
        if self.json {
            return format!("{}{}{v}", json_string(key), self.colon());
        }
        let key = quote(key, true);
        if key.len() <= 128 {
            format!("{key}{}{v}", self.colon())
        } else {
            format!("? {key} : {v}")
        }
    }

    /// A value in this format; `col` is the indentation of the line it
    /// starts on, which a multi-line collection's closing bracket returns to.
    pub fn text(self, v: &Value, col: usize) -> String {
        if self == FlowFormat::YAML {
            return flow_text(v);
        }
        let inner = col + self.step.unwrap_or(0);
        let parts: Vec<String> = match v {
            Value::Map(m) if !m.is_empty() => {
                m.iter().map(|(k, v)| self.entry(k, v, inner)).collect()
            }
            Value::Seq(s) if !s.is_empty() => s.iter().map(|v| self.text(v, inner)).collect(),
            Value::Map(_) => return "{}".into(),
            Value::Seq(_) => return "[]".into(),
            Value::Str(s) if self.json => return json_string(s),
            _ => return scalar_text(v, true),
        };
        let (open, close) = if matches!(v, Value::Map(_)) {
            ('{', '}')
        } else {
            ('[', ']')
        };
        let mut out = String::new();
        out.push(open);
        match self.step {
            Some(_) => {
                for (i, p) in parts.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    self.pad(&mut out, inner);
                    out.push_str(p);
                }
                out.push('\n');
                self.pad(&mut out, col);
            }
            None => out.push_str(&parts.join(self.comma())),
        }
        out.push(close);
        out
    }

    /// What goes between an entry and the next one at column `col`: `, `, or
    /// `,` and a line break when entries are one per line.
    pub(crate) fn separator(self, col: usize) -> String {
        match self.step {
            Some(_) => {
                let mut s = ",\n".to_string();
                self.pad(&mut s, col);
                s
            }
            None => self.comma().to_string(),
        }
    }
}

/// The width of a line's indentation: its leading spaces or tabs (a tab
/// counts as one, as columns do).
pub fn indentation(line: &str) -> usize {
    let line = line.strip_prefix('\u{feff}').unwrap_or(line);
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// A JSON string (also a YAML double-quoted scalar).
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| double_quoted(s))
}

/// How often each step, sequence offset and item offset occurs.
struct Counts {
    steps: [usize; 9],
    seq_offsets: [usize; 9],
    item_offsets: [usize; 9],
}

impl Counts {
    /// Counts the block collections among the nodes `ids` (at most a few
    /// thousand examples: enough to decide, and cheap on huge files).
    fn of(tree: &Tree, ids: std::ops::Range<NodeId>) -> Counts {
        let src = tree.src();
        let mut c = Counts {
            steps: [0; 9],
            seq_offsets: [0; 9],
            item_offsets: [0; 9],
        };
        let col = |off: u32| -> usize {
            let start = src[..off as usize].rfind('\n').map_or(0, |p| p + 1);
            src[start..off as usize].chars().count()
        };
        let mut budget = 4000usize;
        for id in ids {
            if budget == 0 {
                break;
            }
            let n = tree.node(id);
            if n.kind != Kind::Map || n.style != Style::Block {
                continue;
            }
            for (k, v) in tree.entries(id) {
                if budget == 0 {
                    break;
                }
                let vn = tree.node(v);
                if vn.style != Style::Block {
                    continue;
                }
                let kc = col(tree.node(k).start);
                match vn.kind {
                    Kind::Map => {
                        if let Some((ck, _)) = tree.entries(v).next() {
                            let cc = col(tree.node(ck).start);
                            if cc > kc
                                && cc - kc < c.steps.len()
                                && line_start(src, tree.node(ck).start)
                            {
                                c.steps[cc - kc] += 1;
                                budget -= 1;
                            }
                        }
                    }
                    Kind::Seq => {
                        if let Some(item) = tree.items(v).next() {
                            if let Some(dash) = dash_before(src, tree.node(item).start as usize) {
                                let dc = col(dash as u32);
                                if dc >= kc && dc - kc < c.seq_offsets.len() {
                                    c.seq_offsets[dc - kc] += 1;
                                    budget -= 1;
                                }
                                if tree.kind(item) == Kind::Map {
                                    let ic = col(tree.node(item).start);
                                    if ic > dc && ic - dc < c.item_offsets.len() {
                                        c.item_offsets[ic - dc] += 1;
                                    }
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        c
    }

    /// The most common value of each convention; `fallback`'s where there
    /// is no example. Ties go to the usual `2`, `0`, `2`.
    fn style(&self, fallback: BlockStyle) -> BlockStyle {
        let pick = |counts: &[usize; 9], from: usize, usual: usize, or: usize| {
            (from..counts.len())
                .max_by_key(|&i| (counts[i], usize::from(i == usual)))
                .filter(|&i| counts[i] > 0)
                .unwrap_or(or)
        };
        BlockStyle {
            step: pick(&self.steps, 1, 2, fallback.step),
            seq_offset: pick(&self.seq_offsets, 0, 0, fallback.seq_offset),
            item_offset: pick(&self.item_offsets, 2, 2, fallback.item_offset),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format_of(src: &str) -> FlowFormat {
        let t = Tree::parse(src).unwrap();
        FlowFormat::of(&t, t.documents[0].root.unwrap())
    }

    #[test]
    fn flow_formats_are_read_from_the_file() {
        let pretty = "{\n    \"a\": {\n        \"b\": [\n            1\n        ]\n    },\n    \"c\": \"d\"\n}\n";
        let cases = [
            ("{a: b, c: [d, e]}", FlowFormat::YAML),
            (
                "{\"a\":\"b\",\"c\":[1,2]}",
                FlowFormat {
                    json: true,
                    colon_space: false,
                    comma_space: false,
                    step: None,
                    tabs: false,
                },
            ),
            (
                "{\"a\": \"b\", \"c\": [1, 2]}",
                FlowFormat {
                    json: true,
                    colon_space: true,
                    comma_space: true,
                    step: None,
                    tabs: false,
                },
            ),
            (
                pretty,
                FlowFormat {
                    json: true,
                    colon_space: true,
                    comma_space: true,
                    step: Some(4),
                    tabs: false,
                },
            ),
            (
                "{\n\t\"a\": [\n\t\t1\n\t]\n}",
                FlowFormat {
                    json: true,
                    colon_space: true,
                    comma_space: true,
                    step: Some(1),
                    tabs: true,
                },
            ),
            // One plain key: YAML flow, whatever the others are.
            (
                "{\"a\": 1, b: 2}",
                FlowFormat {
                    json: false,
                    ..FlowFormat::YAML
                },
            ),
        ];
        for (src, want) in cases {
            assert_eq!(format_of(src), want, "{src}");
        }
    }

    #[test]
    fn flow_text_follows_its_format() {
        let v = Value::Map(vec![
            ("k".into(), Value::str("a\"b")),
            (
                "l".into(),
                Value::Seq(vec![Value::Int(1), Value::Null, Value::Bool(true)]),
            ),
            ("e".into(), Value::Map(vec![])),
        ]);
        let json = |step| FlowFormat {
            json: true,
            colon_space: true,
            comma_space: true,
            step,
            tabs: false,
        };
        assert_eq!(
            FlowFormat::YAML.text(&v, 0),
            "{k: a\"b, l: [1, null, true], e: {}}"
        );
        assert_eq!(
            FlowFormat {
                colon_space: false,
                comma_space: false,
                ..json(None)
            }
            .text(&v, 0),
            r#"{"k":"a\"b","l":[1,null,true],"e":{}}"#
        );
        assert_eq!(
            json(Some(2)).text(&v, 4),
            "{\n      \"k\": \"a\\\"b\",\n      \"l\": [\n        1,\n        null,\n        true\n      ],\n      \"e\": {}\n    }"
        );
        assert_eq!(json(Some(2)).separator(4), ",\n    ");
        let tabs = FlowFormat {
            tabs: true,
            ..json(Some(1))
        };
        assert_eq!(
            tabs.text(&Value::Seq(vec![Value::Int(1)]), 2),
            "[\n\t\t\t1\n\t\t]"
        );
    }

    #[test]
    fn detects_four_space_indented_sequences() {
        let src = "spec:\n    template:\n        spec:\n            containers:\n                -   name: a\n            tolerations:\n                -   key: b\n";
        let t = Tree::parse(src).unwrap();
        let s = BlockStyle::detect(&t);
        assert_eq!(s.step, 4);
        assert_eq!(s.seq_offset, 4);
        assert_eq!(s.item_offset, 4);
    }

    #[test]
    fn detection_reads_a_few_thousand_examples_and_no_more() {
        // One example for `list:`, two for each item: the budget runs out
        // between the two entries of the 2,000th item. The step-4 items
        // after it outnumber the step-2 ones but are past the sample.
        let mut src = String::from("list:\n");
        for _ in 0..2_000 {
            src.push_str("- a:\n    x: 1\n  b:\n    y: 2\n");
        }
        for _ in 0..5_000 {
            src.push_str("- c:\n      x: 1\n  d:\n      y: 2\n");
        }
        let t = Tree::parse(&src).unwrap();
        let s = BlockStyle::detect(&t);
        assert_eq!((s.step, s.seq_offset, s.item_offset), (2, 0, 2));
    }

    #[test]
    fn each_document_keeps_its_own_indentation() {
        let src = "a:\n  b:\n    c: 1\n  l:\n  - x: 1\n---\nd:\n    e:\n        f: 1\n";
        let t = Tree::parse(src).unwrap();
        let file = BlockStyle::detect(&t);
        let first = BlockStyle::detect_under(&t, t.documents[0].root.unwrap(), file);
        let second = BlockStyle::detect_under(&t, t.documents[1].root.unwrap(), file);
        assert_eq!((first.step, first.seq_offset), (2, 0));
        // The second document has no sequence: its offset is the file's.
        assert_eq!((second.step, second.seq_offset), (4, 0));
        assert_eq!(
            t.subtree_end(t.documents[0].root.unwrap()),
            t.documents[1].root.unwrap()
        );
    }

    #[test]
    fn renders_block_entries() {
        let st = BlockStyle {
            step: 4,
            seq_offset: 4,
            item_offset: 2,
        };
        let v = Value::Seq(vec![Value::Map(vec![
            ("effect".into(), Value::str("NoSchedule")),
            ("key".into(), Value::str("gpu")),
            ("operator".into(), Value::str("Exists")),
        ])]);
        assert_eq!(
            st.entry("tolerations", &v, 8),
            "        tolerations:\n            - effect: NoSchedule\n              key: gpu\n              operator: Exists\n"
        );
        assert_eq!(
            flow_text(&Value::Map(vec![("a".into(), Value::str("yes"))])),
            "{a: 'yes'}"
        );
    }
}
