//! A PyYAML-faithful emitter for the files the KFP SDKs write.
//!
//! Both SDKs write YAML with PyYAML: kfp 2.x with `sort_keys=True` and block
//! style, kfp 1.8 with `default_flow_style=None` (leaf collections inline)
//! and a representer that forces `"..."` for boolean-like words and `|` for
//! multi-line strings. Text inserted into such a file must be exactly what
//! the SDK would have written, so this module follows PyYAML's emitter state
//! by state: the same column, indentation and whitespace bookkeeping, the
//! same scalar analysis and style choice, the same 80-column wrapping.
//! Nothing here knows about pipelines.

use super::value::{Resolved, Value, python_float_repr, resolve_plain};

/// How collections and strings are represented, as the SDK's dumper does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PyProfile {
    /// kfp 2.x: `yaml.dump_all(..., sort_keys=True)`, block style.
    KfpV2,
    /// kfp 1.8: `default_flow_style=None`, insertion order, forced string styles.
    KfpV1,
    /// What kubectl and kustomize print (sigs.k8s.io/yaml over go-yaml, the
    /// same libyaml emitter): sorted keys, block style, UTF-8 as is, a string
    /// that would read as another type double-quoted, a multi-line one
    /// literal, and numbers as JSON had them (`30.0` is `30`).
    Go,
}

/// A scalar ready to emit: its text, the style the representer asked for,
/// and whether the plain / quoted forms resolve back to its tag.
struct ScalarEvent<'v> {
    text: std::borrow::Cow<'v, str>,
    style: Option<char>,
    implicit_plain: bool,
}

#[derive(Debug, PartialEq, Eq)]
struct Analysis {
    empty: bool,
    multiline: bool,
    allow_flow_plain: bool,
    allow_block_plain: bool,
    allow_single_quoted: bool,
    allow_block: bool,
}

/// The emitter state (PyYAML `Emitter` attributes of the same names).
pub struct Emitter {
    profile: PyProfile,
    out: String,
    indent: Option<usize>,
    indents: Vec<Option<usize>>,
    flow_level: usize,
    column: usize,
    whitespace: bool,
    indention: bool,
    sequence_context: bool,
    mapping_context: bool,
    simple_key_context: bool,
    best_indent: usize,
    best_width: usize,
}

impl Emitter {
    fn new(profile: PyProfile) -> Self {
        Emitter {
            profile,
            out: String::new(),
            indent: None,
            indents: Vec::new(),
            flow_level: 0,
            column: 0,
            whitespace: true,
            indention: true,
            sequence_context: false,
            mapping_context: false,
            simple_key_context: false,
            best_indent: 2,
            best_width: 80,
        }
    }

    /// Whether the SDK's representer writes this collection in flow style
    /// (`{a: b}`, `[a, b]`): kfp 1.8 does for a collection of plain scalars.
    pub fn writes_flow(profile: PyProfile, value: &Value) -> bool {
        matches!(value, Value::Map(_) | Value::Seq(_)) && Emitter::new(profile).flow_style(value)
    }

    /// Renders `key: value` as a new entry of a block mapping whose keys sit
    /// at column `indent`, starting at the beginning of a line. The result
    /// ends with a line break.
    pub fn block_entry(profile: PyProfile, key: &str, value: &Value, indent: usize) -> String {
        let mut e = Emitter::new(profile);
        e.indent = Some(indent);
        e.block_mapping_entry(key, value);
        e.finish()
    }

    /// Renders a value that follows an existing `key:` whose mapping keys sit
    /// at column `indent`; `column` is the column just after the colon.
    pub(crate) fn after_key(
        profile: PyProfile,
        value: &Value,
        indent: usize,
        column: usize,
    ) -> String {
        let mut e = Emitter::new(profile);
        e.indent = Some(indent);
        e.column = column;
        e.whitespace = false;
        e.indention = false;
        e.node(value, false, false, true, false);
        e.finish_inline()
    }

    /// Renders a new item of a block sequence whose dashes sit at column
    /// `indent`, starting at the beginning of a line; ends with a line break.
    pub fn seq_item(profile: PyProfile, value: &Value, indent: usize) -> String {
        let mut e = Emitter::new(profile);
        e.indent = Some(indent);
        e.block_sequence_item(value);
        e.finish()
    }

    /// Renders the value of an existing sequence item whose dash is at
    /// column `indent`: the text that follows the dash.
    pub(crate) fn after_dash(profile: PyProfile, value: &Value, indent: usize) -> String {
        let mut e = Emitter::new(profile);
        e.indent = Some(indent);
        e.column = indent + 1;
        e.whitespace = false;
        e.indention = true;
        e.node(value, false, true, false, false);
        e.finish_inline()
    }

    /// Renders a whole document that follows another one: `---`, the value,
    /// and a final line break.
    pub fn next_document(profile: PyProfile, value: &Value) -> String {
        let mut e = Emitter::new(profile);
        e.write_indent();
        e.write_indicator("---", true, false, false);
        e.node(value, true, false, false, false);
        e.write_indent();
        e.out
    }

    fn finish(mut self) -> String {
        if self.column > 0 {
            self.write_line_break();
        }
        self.out
    }

    fn finish_inline(self) -> String {
        self.out
    }

    // ----- representer decisions -------------------------------------------------

    fn str_event<'v>(&self, s: &'v str) -> ScalarEvent<'v> {
        let mut style = None;
        let implicit_plain = resolve_plain(s) == Resolved::Str;
        if self.profile == PyProfile::Go {
            if s.contains('\n') {
                style = Some('|');
            } else if !implicit_plain {
                style = Some('"');
            }
        }
        if self.profile == PyProfile::KfpV1 {
            if s.contains('\n') {
                style = Some('|');
            }
            if s.len() <= 5
                && ["y", "n", "yes", "no", "true", "false", "on", "off"]
                    .iter()
                    .any(|w| s.eq_ignore_ascii_case(w))
            {
                style = Some('"');
            }
        }
        ScalarEvent {
            text: std::borrow::Cow::Borrowed(s),
            style,
            implicit_plain,
        }
    }

    fn scalar_event<'v>(&self, v: &'v Value) -> ScalarEvent<'v> {
        let (text, implicit_plain): (std::borrow::Cow<'v, str>, bool) = match v {
            Value::Str(s) => return self.str_event(s),
            Value::Int(i) => (i.to_string().into(), true),
            Value::Float(f) if self.profile == PyProfile::Go => (go_json_float(*f).into(), true),
            Value::Float(f) => (python_float_repr(*f).into(), true),
            Value::Bool(b) => (if *b { "true" } else { "false" }.into(), true),
            Value::Null | Value::Seq(_) | Value::Map(_) => ("null".into(), true),
        };
        ScalarEvent {
            text,
            style: None,
            implicit_plain,
        }
    }

    /// Whether the representer gives a scalar a style of its own (which
    /// makes `default_flow_style=None` write the parent collection in block).
    fn forced_style(&self, v: &Value) -> bool {
        match v {
            Value::Str(s) => self.str_event(s).style.is_some(),
            _ => false,
        }
    }

    fn forced_key_style(&self, k: &str) -> bool {
        self.str_event(k).style.is_some()
    }

    fn is_scalar(v: &Value) -> bool {
        !matches!(v, Value::Seq(_) | Value::Map(_))
    }

    /// The representer's `flow_style` for a collection.
    fn flow_style(&self, v: &Value) -> bool {
        match self.profile {
            PyProfile::KfpV2 | PyProfile::Go => false,
            PyProfile::KfpV1 => match v {
                Value::Seq(items) => items
                    .iter()
                    .all(|i| Self::is_scalar(i) && !self.forced_style(i)),
                Value::Map(entries) => entries.iter().all(|(k, v)| {
                    !self.forced_key_style(k) && Self::is_scalar(v) && !self.forced_style(v)
                }),
                _ => false,
            },
        }
    }

    fn entries<'v>(&self, m: &'v [(String, Value)]) -> Vec<&'v (String, Value)> {
        let mut e: Vec<&(String, Value)> = m.iter().collect();
        if matches!(self.profile, PyProfile::KfpV2 | PyProfile::Go) {
            e.sort_by(|a, b| a.0.cmp(&b.0));
        }
        e
    }

    // ----- node handlers ---------------------------------------------------------

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        match self.indent {
            None => self.indent = Some(if flow { self.best_indent } else { 0 }),
            Some(i) if !indentless => self.indent = Some(i + self.best_indent),
            Some(_) => {}
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(None);
    }

    fn node(&mut self, v: &Value, _root: bool, sequence: bool, mapping: bool, simple_key: bool) {
        self.sequence_context = sequence;
        self.mapping_context = mapping;
        self.simple_key_context = simple_key;
        match v {
            Value::Seq(items) => {
                if self.flow_level > 0 || self.flow_style(v) || items.is_empty() {
                    self.flow_sequence(items);
                } else {
                    self.block_sequence(items);
                }
            }
            Value::Map(entries) => {
                if self.flow_level > 0 || self.flow_style(v) || entries.is_empty() {
                    self.flow_mapping(entries);
                } else {
                    self.block_mapping(entries);
                }
            }
            _ => {
                let ev = self.scalar_event(v);
                self.increase_indent(true, false);
                self.process_scalar(&ev);
                self.pop_indent();
            }
        }
    }

    fn flow_sequence(&mut self, items: &[Value]) {
        self.write_indicator("[", true, true, false);
        self.flow_level += 1;
        self.increase_indent(true, false);
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.write_indicator(",", false, false, false);
            }
            if self.column > self.best_width {
                self.write_indent();
            }
            self.node(item, false, true, false, false);
        }
        self.pop_indent();
        self.flow_level -= 1;
        self.write_indicator("]", false, false, false);
    }

    fn flow_mapping(&mut self, entries: &[(String, Value)]) {
        self.write_indicator("{", true, true, false);
        self.flow_level += 1;
        self.increase_indent(true, false);
        for (i, (k, v)) in self.entries(entries).into_iter().enumerate() {
            if i > 0 {
                self.write_indicator(",", false, false, false);
            }
            if self.column > self.best_width {
                self.write_indent();
            }
            let key = self.str_event(k);
            let analysis = analyze_scalar(k, self.profile == PyProfile::Go);
            if Self::simple_key(k, &analysis) {
                self.key(&key, &analysis, true);
                self.write_indicator(":", false, false, false);
                self.node(v, false, false, true, false);
            } else {
                self.write_indicator("?", true, false, false);
                self.key(&key, &analysis, false);
                if self.column > self.best_width {
                    self.write_indent();
                }
                self.write_indicator(":", true, false, false);
                self.node(v, false, false, true, false);
            }
        }
        self.pop_indent();
        self.flow_level -= 1;
        self.write_indicator("}", false, false, false);
    }

    fn block_sequence(&mut self, items: &[Value]) {
        let indentless = self.mapping_context && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.block_sequence_item(item);
        }
        self.pop_indent();
    }

    fn block_sequence_item(&mut self, item: &Value) {
        self.write_indent();
        self.write_indicator("-", true, false, true);
        self.node(item, false, true, false, false);
    }

    fn block_mapping(&mut self, entries: &[(String, Value)]) {
        self.increase_indent(false, false);
        for (k, v) in self.entries(entries) {
            self.block_mapping_entry(k, v);
        }
        self.pop_indent();
    }

    fn block_mapping_entry(&mut self, k: &str, v: &Value) {
        self.write_indent();
        let key = self.str_event(k);
        let analysis = analyze_scalar(k, self.profile == PyProfile::Go);
        if Self::simple_key(k, &analysis) {
            self.key(&key, &analysis, true);
            self.write_indicator(":", false, false, false);
            self.node(v, false, false, true, false);
        } else {
            self.write_indicator("?", true, false, true);
            self.key(&key, &analysis, false);
            self.write_indent();
            self.write_indicator(":", true, false, true);
            self.node(v, false, false, true, false);
        }
    }

    fn simple_key(k: &str, a: &Analysis) -> bool {
        k.len() < 128 && k.chars().count() < 128 && !a.empty && !a.multiline
    }

    /// A mapping key as a scalar node (PyYAML's `expect_node(mapping=True, simple_key=...)`).
    fn key(&mut self, ev: &ScalarEvent, a: &Analysis, simple_key: bool) {
        self.sequence_context = false;
        self.mapping_context = true;
        self.simple_key_context = simple_key;
        self.increase_indent(true, false);
        self.emit_scalar(ev, a);
        self.pop_indent();
    }

    // ----- scalars ---------------------------------------------------------------

    fn choose_scalar_style(&self, ev: &ScalarEvent, a: &Analysis) -> char {
        if ev.style == Some('"') {
            return '"';
        }
        if ev.style.is_none()
            && ev.implicit_plain
            && !(self.simple_key_context && (a.empty || a.multiline))
            && ((self.flow_level > 0 && a.allow_flow_plain)
                || (self.flow_level == 0 && a.allow_block_plain))
        {
            return ' ';
        }
        if let Some(s @ ('|' | '>')) = ev.style {
            if self.flow_level == 0 && !self.simple_key_context && a.allow_block {
                return s;
            }
        }
        if (ev.style.is_none() || ev.style == Some('\''))
            && a.allow_single_quoted
            && !(self.simple_key_context && a.multiline)
        {
            return '\'';
        }
        '"'
    }

    fn process_scalar(&mut self, ev: &ScalarEvent) {
        let a = analyze_scalar(&ev.text, self.profile == PyProfile::Go);
        self.emit_scalar(ev, &a);
    }

    fn emit_scalar(&mut self, ev: &ScalarEvent, a: &Analysis) {
        let style = self.choose_scalar_style(ev, a);
        let split = !self.simple_key_context;
        // A scalar whose tag cannot be implied in the chosen style would get
        // an explicit tag; the values written here never need one.
        match style {
            '"' => self.write_double_quoted(&ev.text, split),
            '\'' => self.write_single_quoted(&ev.text, split),
            '|' => self.write_literal(&ev.text),
            _ => self.write_plain(&ev.text, split),
        }
    }

    // ----- writers ---------------------------------------------------------------

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        whitespace: bool,
        indention: bool,
    ) {
        if !self.whitespace && need_whitespace {
            self.out.push(' ');
            self.column += 1;
        }
        self.out.push_str(indicator);
        self.column += indicator.chars().count();
        self.whitespace = whitespace;
        self.indention = self.indention && indention;
    }

    fn write_indent(&mut self) {
        let indent = self.indent.unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.write_line_break();
        }
        if self.column < indent {
            self.whitespace = true;
            for _ in self.column..indent {
                self.out.push(' ');
            }
            self.column = indent;
        }
    }

    fn write_line_break(&mut self) {
        self.whitespace = true;
        self.indention = true;
        self.column = 0;
        self.out.push('\n');
    }

    fn write_raw(&mut self, s: &str) {
        self.column += if s.is_ascii() {
            s.len()
        } else {
            s.chars().count()
        };
        self.out.push_str(s);
    }

    fn write_break_char(&mut self, br: char) {
        if br == '\n' {
            self.write_line_break();
        } else {
            self.out.push(br);
            self.column = 0;
        }
    }

    // The writers walk the text by byte offsets of its characters; `None`
    // marks the end (PyYAML's `ch = None` at `end == len(text)`).

    fn write_plain(&mut self, text: &str, split: bool) {
        if text.is_empty() {
            return;
        }
        if !self.whitespace {
            self.write_raw(" ");
        }
        self.whitespace = false;
        self.indention = false;
        let mut spaces = false;
        let mut breaks = false;
        let mut start = 0usize;
        for (end, ch) in chars_with_end(text) {
            if spaces {
                if ch != Some(' ') {
                    if next_char_at(text, start) == end && self.column > self.best_width && split {
                        self.write_indent();
                        self.whitespace = false;
                        self.indention = false;
                    } else {
                        self.write_raw(&text[start..end]);
                    }
                    start = end;
                }
            } else if breaks {
                if !is_break(ch) {
                    if text[start..].starts_with('\n') {
                        self.write_line_break();
                    }
                    for br in text[start..end].chars() {
                        self.write_break_char(br);
                    }
                    self.write_indent();
                    self.whitespace = false;
                    self.indention = false;
                    start = end;
                }
            } else if ch.is_none() || ch == Some(' ') || is_break(ch) {
                self.write_raw(&text[start..end]);
                start = end;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
                breaks = is_break(Some(c));
            }
        }
    }

    fn write_single_quoted(&mut self, text: &str, split: bool) {
        self.write_indicator("'", true, false, false);
        let mut spaces = false;
        let mut breaks = false;
        let mut start = 0usize;
        for (end, ch) in chars_with_end(text) {
            if spaces {
                if ch != Some(' ') {
                    if next_char_at(text, start) == end
                        && self.column > self.best_width
                        && split
                        && start != 0
                        && end != text.len()
                    {
                        self.write_indent();
                    } else {
                        self.write_raw(&text[start..end]);
                    }
                    start = end;
                }
            } else if breaks {
                if !is_break(ch) {
                    if text[start..].starts_with('\n') {
                        self.write_line_break();
                    }
                    for br in text[start..end].chars() {
                        self.write_break_char(br);
                    }
                    self.write_indent();
                    start = end;
                }
            } else if (ch.is_none() || ch == Some(' ') || is_break(ch) || ch == Some('\''))
                && start < end
            {
                self.write_raw(&text[start..end]);
                start = end;
            }
            if ch == Some('\'') {
                self.write_raw("''");
                start = end + 1;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
                breaks = is_break(Some(c));
            }
        }
        self.write_indicator("'", false, false, false);
    }

    fn write_double_quoted(&mut self, text: &str, split: bool) {
        self.write_indicator("\"", true, false, false);
        let mut start = 0usize;
        for (end, ch) in chars_with_end(text) {
            let needs_escape = match ch {
                None => true,
                Some(c) => {
                    matches!(
                        c,
                        '"' | '\\' | '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}'
                    ) || !(' '..='~').contains(&c)
                }
            };
            if needs_escape {
                if start < end {
                    self.write_raw(&text[start..end]);
                    start = end;
                }
                if let Some(c) = ch {
                    let data = match c {
                        '\0' => "\\0".to_string(),
                        '\x07' => "\\a".to_string(),
                        '\x08' => "\\b".to_string(),
                        '\t' => "\\t".to_string(),
                        '\n' => "\\n".to_string(),
                        '\x0b' => "\\v".to_string(),
                        '\x0c' => "\\f".to_string(),
                        '\r' => "\\r".to_string(),
                        '\x1b' => "\\e".to_string(),
                        '"' => "\\\"".to_string(),
                        '\\' => "\\\\".to_string(),
                        '\u{85}' => "\\N".to_string(),
                        '\u{a0}' => "\\_".to_string(),
                        '\u{2028}' => "\\L".to_string(),
                        '\u{2029}' => "\\P".to_string(),
                        c if (c as u32) <= 0xFF => format!("\\x{:02X}", c as u32),
                        c if (c as u32) <= 0xFFFF => format!("\\u{:04X}", c as u32),
                        c => format!("\\U{:08X}", c as u32),
                    };
                    self.write_raw(&data);
                    start = end + c.len_utf8();
                }
            }
            // Everything between `start` and `end` is printable ASCII here
            // (other characters are escaped), so bytes count columns.
            let not_last = ch.is_some_and(|c| end + c.len_utf8() < text.len());
            if end > 0
                && not_last
                && (ch == Some(' ') || start >= end)
                && (self.column as isize + end as isize - start as isize) > self.best_width as isize
                && split
            {
                let mut data = String::from(if start < end { &text[start..end] } else { "" });
                data.push('\\');
                if start < end {
                    start = end;
                }
                self.write_raw(&data);
                self.write_indent();
                self.whitespace = false;
                self.indention = false;
                if text[start.min(text.len())..].starts_with(' ') {
                    self.write_raw("\\");
                }
            }
        }
        self.write_indicator("\"", false, false, false);
    }

    fn write_literal(&mut self, text: &str) {
        let mut hints = String::new();
        if let Some(first) = text.chars().next() {
            if matches!(first, ' ' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}') {
                hints.push_str(&self.best_indent.to_string());
            }
            let mut rev = text.chars().rev();
            let last = rev.next();
            if !is_break(last) {
                hints.push('-');
            } else if text.chars().count() == 1 || is_break(rev.next()) {
                hints.push('+');
            }
        }
        self.write_indicator(&format!("|{hints}"), true, false, false);
        self.write_line_break();
        let mut breaks = true;
        let mut start = 0usize;
        for (end, ch) in chars_with_end(text) {
            if breaks {
                if !is_break(ch) {
                    for br in text[start..end].chars() {
                        self.write_break_char(br);
                    }
                    if ch.is_some() {
                        self.write_indent();
                    }
                    start = end;
                }
            } else if ch.is_none() || is_break(ch) {
                // PyYAML does not advance the column for literal content.
                self.out.push_str(&text[start..end]);
                if ch.is_none() {
                    self.write_line_break();
                }
                start = end;
            }
            if let Some(c) = ch {
                breaks = is_break(Some(c));
            }
        }
    }
}

/// `(byte offset, char)` for every character, then `(len, None)`.
/// A float as kubectl prints it: encoding/json's number (Go's shortest
/// `strconv.FormatFloat(f, 'g', -1, 64)` with JSON's exponent range), so an
/// integral value has no `.0`.
fn go_json_float(f: f64) -> String {
    if !f.is_finite() {
        return python_float_repr(f);
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // 1e-07, 1e+21: at least two exponent digits, and a sign.
        let e = format!("{f:e}");
        let (m, x) = e.split_once('e').unwrap_or((&e, "0"));
        let (sign, digits) = match x.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', x),
        };
        return format!("{m}e{sign}{digits:0>2}");
    }
    let s = format!("{f}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn chars_with_end(text: &str) -> impl Iterator<Item = (usize, Option<char>)> + '_ {
    text.char_indices()
        .map(|(i, c)| (i, Some(c)))
        .chain(std::iter::once((text.len(), None)))
}

/// The byte offset of the character after the one at `i`.
fn next_char_at(text: &str, i: usize) -> usize {
    text[i..].chars().next().map_or(i, |c| i + c.len_utf8())
}

fn is_break(c: Option<char>) -> bool {
    matches!(c, Some('\n' | '\u{85}' | '\u{2028}' | '\u{2029}'))
}

fn is_ws(c: Option<char>) -> bool {
    matches!(
        c,
        None | Some('\0' | ' ' | '\t' | '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
    )
}

/// Names, paths, images and numbers (most scalars of a pipeline) need no
/// analysis: every style is allowed for them.
fn is_simple_scalar(b: &[u8]) -> bool {
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-'))
}

fn analyze_scalar(scalar: &str, allow_unicode: bool) -> Analysis {
    if is_simple_scalar(scalar.as_bytes()) {
        return Analysis {
            empty: false,
            multiline: false,
            allow_flow_plain: true,
            allow_block_plain: true,
            allow_single_quoted: true,
            allow_block: true,
        };
    }
    analyze_any_scalar(scalar, allow_unicode)
}

/// PyYAML's `analyze_scalar` (libyaml's `yaml_emitter_analyze_scalar`).
fn analyze_any_scalar(scalar: &str, allow_unicode: bool) -> Analysis {
    if scalar.is_empty() {
        return Analysis {
            empty: true,
            multiline: false,
            allow_flow_plain: false,
            allow_block_plain: true,
            allow_single_quoted: true,
            allow_block: false,
        };
    }
    // ASCII text (nearly everything) is read by bytes, without collecting chars.
    let ascii = scalar.is_ascii();
    let bytes = scalar.as_bytes();
    let owned: Vec<char> = if ascii {
        Vec::new()
    } else {
        scalar.chars().collect()
    };
    let n = if ascii { bytes.len() } else { owned.len() };
    let at = |i: usize| -> Option<char> {
        if i >= n {
            None
        } else if ascii {
            Some(bytes[i] as char)
        } else {
            Some(owned[i])
        }
    };
    let mut block_indicators = false;
    let mut flow_indicators = false;
    let mut line_breaks = false;
    let mut special_characters = false;
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    if scalar.starts_with("---") || scalar.starts_with("...") {
        block_indicators = true;
        flow_indicators = true;
    }
    let mut preceded_by_whitespace = true;
    let mut followed_by_whitespace = n == 1 || is_ws(at(1));
    let mut previous_space = false;
    let mut previous_break = false;
    for index in 0..n {
        let Some(ch) = at(index) else { break };
        if index == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(ch) {
                flow_indicators = true;
                block_indicators = true;
            }
            if ch == '?' || ch == ':' {
                flow_indicators = true;
                if followed_by_whitespace {
                    block_indicators = true;
                }
            }
            if ch == '-' && followed_by_whitespace {
                flow_indicators = true;
                block_indicators = true;
            }
        } else {
            if ",?[]{}".contains(ch) {
                flow_indicators = true;
            }
            if ch == ':' {
                flow_indicators = true;
                if followed_by_whitespace {
                    block_indicators = true;
                }
            }
            if ch == '#' && preceded_by_whitespace {
                flow_indicators = true;
                block_indicators = true;
            }
        }
        if matches!(ch, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}') {
            line_breaks = true;
        }
        if !(ch == '\n' || (' '..='~').contains(&ch)) {
            let printable_unicode = (ch == '\u{85}'
                || ('\u{a0}'..='\u{d7ff}').contains(&ch)
                || ('\u{e000}'..='\u{fffd}').contains(&ch)
                || ('\u{10000}'..'\u{10ffff}').contains(&ch))
                && ch != '\u{feff}';
            // allow_unicode is off in both SDKs (every non-ASCII character
            // is special) and on in go-yaml.
            if !(allow_unicode && printable_unicode) {
                special_characters = true;
            }
        }
        if ch == ' ' {
            if index == 0 {
                leading_space = true;
            }
            if index == n - 1 {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if matches!(ch, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}') {
            if index == 0 {
                leading_break = true;
            }
            if index == n - 1 {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_ws(Some(ch));
        followed_by_whitespace = index + 2 >= n || is_ws(at(index + 2));
    }
    let mut a = Analysis {
        empty: false,
        multiline: line_breaks,
        allow_flow_plain: true,
        allow_block_plain: true,
        allow_single_quoted: true,
        allow_block: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
    }
    if trailing_space {
        a.allow_block = false;
    }
    if break_space {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
        a.allow_single_quoted = false;
    }
    if space_break || special_characters {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
        a.allow_single_quoted = false;
        a.allow_block = false;
    }
    if line_breaks {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
    }
    if flow_indicators {
        a.allow_flow_plain = false;
    }
    if block_indicators {
        a.allow_block_plain = false;
    }
    // saphyr-parser refuses a plain scalar in flow whose last word is a lone
    // `-` (`{a: x -}`, which PyYAML writes and reads): quoted, what kfsched
    // writes it reads back.
    if scalar.ends_with(" -") || scalar.ends_with("\t-") {
        a.allow_flow_plain = false;
    }
    a
}

/// How a string would be written as a plain/quoted scalar, for the generic
/// renderer: `None` when plain is allowed (in flow or block context).
pub(crate) fn scalar_needs_quotes(s: &str, flow: bool) -> Option<char> {
    let a = analyze_scalar(s, false);
    let plain_ok = if flow {
        a.allow_flow_plain
    } else {
        a.allow_block_plain
    };
    if plain_ok && !a.empty && resolve_plain(s) == Resolved::Str {
        None
    } else if a.allow_single_quoted && !a.multiline {
        Some('\'')
    } else {
        Some('"')
    }
}

/// Double-quoted form of a string with YAML escapes (no folding).
pub(crate) fn double_quoted(s: &str) -> String {
    let mut e = Emitter::new(PyProfile::KfpV2);
    e.best_width = usize::MAX / 2;
    e.write_double_quoted(s, false);
    e.out
}

/// Single-quoted form of a string (no folding).
pub(crate) fn single_quoted(s: &str) -> String {
    let mut e = Emitter::new(PyProfile::KfpV2);
    e.best_width = usize::MAX / 2;
    e.write_single_quoted(s, false);
    e.out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// saphyr-parser cannot read `{a: x -}`: a string whose last word is a
    /// lone `-` is quoted in flow, and stays plain in block.
    #[test]
    fn a_last_word_of_a_lone_dash_is_quoted_in_flow() {
        for s in ["x -", "2  `  .  -"] {
            assert!(scalar_needs_quotes(s, true).is_some(), "{s:?}");
            assert_eq!(scalar_needs_quotes(s, false), None, "{s:?}");
        }
        assert!(scalar_needs_quotes("a\t-", true).is_some());
        for s in ["x -y", "-", "x-"] {
            assert_eq!(
                scalar_needs_quotes(s, true),
                scalar_needs_quotes(s, false),
                "{s:?}"
            );
        }
    }

    #[test]
    fn simple_scalars_take_the_fast_path_to_the_same_analysis() {
        let alphabet = b"aZ09_./-";
        let mut n = 0;
        for len in 1..=5usize {
            for mut k in 0..alphabet.len().pow(len as u32) {
                let mut s = String::new();
                for _ in 0..len {
                    s.push(alphabet[k % alphabet.len()] as char);
                    k /= alphabet.len();
                }
                if is_simple_scalar(s.as_bytes()) {
                    n += 1;
                    assert_eq!(
                        analyze_scalar(&s, false),
                        analyze_any_scalar(&s, false),
                        "{s:?}"
                    );
                }
            }
        }
        for s in [
            "exec-train",
            "python:3.11",
            "-x",
            ".x",
            "a b",
            "a,b",
            "",
            "a:",
        ] {
            assert_eq!(
                analyze_scalar(s, false),
                analyze_any_scalar(s, false),
                "{s:?}"
            );
        }
        assert!(n > 10_000, "{n}");
    }

    fn map(entries: &[(&str, Value)]) -> Value {
        Value::Map(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn v2_block_entry_is_sorted_and_indentless() {
        let tol = map(&[
            ("key", Value::str("dedicated")),
            ("effect", Value::str("NoExecute")),
            ("tolerationSeconds", Value::str("3600")),
            ("value", Value::str("true")),
            ("operator", Value::str("Equal")),
        ]);
        let v = map(&[("tolerations", Value::Seq(vec![tol]))]);
        let s = Emitter::block_entry(PyProfile::KfpV2, "exec-a", &v, 8);
        assert_eq!(
            s,
            "        exec-a:\n          tolerations:\n          - effect: NoExecute\n            key: dedicated\n            operator: Equal\n            tolerationSeconds: '3600'\n            value: 'true'\n"
        );
    }

    #[test]
    fn v1_leaf_maps_are_inline_and_forced_words_are_double_quoted() {
        let t1 = map(&[
            ("effect", Value::str("NoSchedule")),
            ("key", Value::str("key")),
            ("operator", Value::str("Equal")),
            ("value", Value::str("experiment")),
        ]);
        let t2 = map(&[
            ("effect", Value::str("PreferNoSchedule")),
            ("key", Value::str("soft")),
            ("operator", Value::str("Equal")),
            ("value", Value::str("true")),
        ]);
        let s = Emitter::block_entry(
            PyProfile::KfpV1,
            "tolerations",
            &Value::Seq(vec![t1, t2]),
            4,
        );
        assert_eq!(
            s,
            "    tolerations:\n    - {effect: NoSchedule, key: key, operator: Equal, value: experiment}\n    - effect: PreferNoSchedule\n      key: soft\n      operator: Equal\n      value: \"true\"\n"
        );
    }

    #[test]
    fn v1_flow_collections_wrap_after_80_columns() {
        let t = map(&[
            ("effect", Value::str("NoSchedule")),
            (
                "key",
                Value::str("example.com/some-really-long-taint-key-name-for-wrapping"),
            ),
            ("operator", Value::str("Equal")),
            (
                "value",
                Value::str("a-very-long-label-value-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
            ),
        ]);
        let s = Emitter::seq_item(PyProfile::KfpV1, &t, 4);
        assert_eq!(
            s,
            "    - {effect: NoSchedule, key: example.com/some-really-long-taint-key-name-for-wrapping,\n      operator: Equal, value: a-very-long-label-value-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx}\n"
        );
    }

    #[test]
    fn quoting_follows_pyyaml() {
        assert_eq!(scalar_needs_quotes("experiment", false), None);
        assert_eq!(scalar_needs_quotes("1.8.22", false), None);
        assert_eq!(scalar_needs_quotes("10", false), Some('\''));
        assert_eq!(scalar_needs_quotes("yes", false), Some('\''));
        assert_eq!(scalar_needs_quotes("a: b", false), Some('\''));
        assert_eq!(scalar_needs_quotes("caf\u{e9}", false), Some('"'));
        assert_eq!(double_quoted("caf\u{e9}"), "\"caf\\xE9\"");
    }
}
