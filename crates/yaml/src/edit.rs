//! Surgical edits of YAML text: every byte outside the edited spans is kept.
//!
//! An [`Edit`] names a node of the span tree and the value it should end up
//! with (or a key to add, a document to append). The [`Editor`] turns edits
//! into byte splices on the original text, rendering new text in the file's
//! flavour: exactly as PyYAML would for SDK-written files, in the file's own
//! indentation otherwise. It knows nothing about policies or pipelines.

use std::cmp::Reverse;
use std::fmt;

use super::block::{BLANKS, BlockStyle, FlowFormat, dash_before, flow_text, is_blank};
use super::emit::{Emitter, PyProfile};
use super::patch::{self, Patch};
use super::tree::{Kind, MAX_DEPTH, NodeId, Style, Tree};
use super::value::{Value, effective_value, node_value};

/// Who wrote the file, which decides how inserted text looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// kfp 2.x IR: PyYAML, sorted keys, block style.
    KfpV2,
    /// kfp 1.8 Argo workflow: PyYAML, insertion order, inline leaf collections.
    KfpV1,
    /// kubectl and kustomize output (sigs.k8s.io/yaml): sorted keys, block
    /// style, Go's scalar styles.
    GoYaml,
    /// Anything else: block style in the file's own indentation.
    Generic(BlockStyle),
}

impl Flavor {
    fn profile(self) -> Option<PyProfile> {
        match self {
            Flavor::KfpV2 => Some(PyProfile::KfpV2),
            Flavor::KfpV1 => Some(PyProfile::KfpV1),
            Flavor::GoYaml => Some(PyProfile::Go),
            Flavor::Generic(_) => None,
        }
    }
}

/// Where a new key goes in an existing block mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// After the last entry.
    End,
    /// At its sorted position when the mapping's keys are sorted, else at the end.
    Sorted,
    /// Before the first existing key that ranks after it in this order
    /// (keys not in the order are skipped); at the end otherwise.
    Canonical(&'static [&'static str]),
    /// Before the first existing key from this list; at the end otherwise.
    BeforeAny(&'static [&'static str]),
    /// Where the desired value puts it: before the next of its keys that
    /// already exists (only meaningful inside a reconcile).
    AsDesired,
    /// Before this key.
    BeforeKey(String),
}

/// One requested change.
#[derive(Clone, Debug)]
pub enum Edit {
    /// Make the subtree at `node` equal `desired`, changing as little text as
    /// possible (append to sequences, add keys, replace scalars).
    Reconcile {
        node: NodeId,
        desired: Value,
        placement: Placement,
    },
    /// Add `key: value` to `map`, which does not have the key.
    Insert {
        map: NodeId,
        key: String,
        value: Value,
        placement: Placement,
    },
    /// Append a document at the end of the stream.
    AppendDocument { value: Value },
    /// Add a document right before document `before` of the stream.
    InsertDocument { before: usize, value: Value },
}

/// Why an edit cannot be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditError {
    pub offset: usize,
    pub path: String,
    pub message: String,
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// How many collections deep a value nests (a scalar: none).
fn nesting(v: &Value) -> usize {
    match v {
        Value::Map(m) => 1 + m.iter().map(|(_, v)| nesting(v)).max().unwrap_or(0),
        Value::Seq(s) => 1 + s.iter().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

#[derive(Debug)]
struct Splice {
    start: usize,
    end: usize,
    text: String,
    col: usize,
    seq: usize,
    /// For a splice that replaces a node's whole text: the node, whose
    /// value written is in [`Editor::replaced`], so that a later edit of the
    /// node or inside it is folded into this one instead of overlapping it.
    replaces: Option<NodeId>,
}

/// The value written by a splice that replaces a node's whole text (the
/// node is its key in [`Editor::replaced`]).
#[derive(Debug)]
struct Replaced {
    /// One past the node's subtree's last node (`Tree::subtree_end`).
    end: NodeId,
    value: Value,
}

/// Collects splices for one file.
pub struct Editor<'t, 'a> {
    tree: &'t Tree<'a>,
    flavor: Flavor,
    splices: Vec<Splice>,
    /// Whether every splice so far appends a whole document.
    only_appends: bool,
    /// Whether every splice so far inserts whole lines of block entries at
    /// a line start (see [`Editor::only_line_inserts`]).
    only_line_inserts: bool,
    /// Block entries rendered so far: rules write the same entry into many
    /// components, so each distinct one is rendered once.
    rendered: Vec<Rendered>,
    /// The nodes whose whole text a splice replaces, by node, with the
    /// values written: the splices' [`Splice::replaces`]. Their subtrees
    /// never overlap (an edit inside one is folded into it, one around
    /// some supersedes them), so the one around a node, if any, is the
    /// last that starts at or before it; kept apart from the splices so
    /// that each edit finds them without going through every splice.
    replaced: std::collections::BTreeMap<NodeId, Replaced>,
}

/// A block entry `key: value` rendered in `flavor` at column `col`.
struct Rendered {
    flavor: Flavor,
    col: usize,
    key: String,
    value: Value,
    text: String,
}

/// How many distinct rendered entries an editor keeps.
const RENDERED: usize = 32;

impl<'t, 'a> Editor<'t, 'a> {
    pub fn new(tree: &'t Tree<'a>, flavor: Flavor) -> Self {
        Editor {
            tree,
            flavor,
            splices: Vec::new(),
            only_appends: true,
            only_line_inserts: true,
            rendered: Vec::new(),
            replaced: std::collections::BTreeMap::new(),
        }
    }

    /// Whether any splice has been planned.
    pub fn is_empty(&self) -> bool {
        self.splices.is_empty()
    }

    /// Sets the flavour for the edits that follow (one per document).
    pub fn set_flavor(&mut self, flavor: Flavor) {
        self.flavor = flavor;
    }

    /// The offset of the earliest splice.
    pub fn first_offset(&self) -> Option<usize> {
        self.splices.iter().map(|s| s.start).min()
    }

    /// Whether the only edits append whole documents at the end.
    pub fn only_appends_documents(&self) -> bool {
        self.only_appends && !self.splices.is_empty()
    }

    /// Whether every edit inserts whole lines: new entries of a block
    /// mapping, in its indentation, at the start of a line between its
    /// complete entries (or whole documents at the end). Such a change
    /// leaves every line of the file as it was, so the result parses when
    /// each inserted text parses on its own ([`Editor::inserted_texts`]).
    pub fn only_line_inserts(&self) -> bool {
        self.only_line_inserts && !self.splices.is_empty()
    }

    /// The texts the edits insert.
    pub fn inserted_texts(&self) -> impl Iterator<Item = &str> {
        self.splices.iter().map(|s| s.text.as_str())
    }

    /// Whether the result is known to parse without parsing it: every edit
    /// inserts whole lines ([`Editor::only_line_inserts`]) and each inserted
    /// text parses on its own. Far cheaper than parsing the result; rules
    /// write the same text into many places, so each distinct one is
    /// checked once.
    pub fn line_inserts_parse(&self) -> bool {
        self.only_line_inserts() && {
            let distinct: crate::hash::HashSet<&str> = self.inserted_texts().collect();
            distinct
                .into_iter()
                .all(|t| crate::quick::accepts(t) || crate::tree::check_syntax(t))
        }
    }

    pub fn apply(&mut self, edit: Edit) -> Result<(), EditError> {
        match edit {
            Edit::Reconcile {
                node,
                desired,
                placement,
            } => {
                self.check_path(node)?;
                self.check_depth(node, self.around(node) + nesting(&desired))?;
                self.reconcile(node, &desired, &placement)
            }
            Edit::Insert {
                map,
                key,
                value,
                placement,
            } => {
                self.check_editable(map)?;
                self.check_path(map)?;
                self.check_depth(map, self.around(map) + 1 + nesting(&value))?;
                self.insert_key(map, &key, &value, &placement)
            }
            Edit::AppendDocument { value } => {
                self.append_document(&value);
                Ok(())
            }
            Edit::InsertDocument { before, value } => {
                self.insert_document(before, &value);
                Ok(())
            }
        }
    }

    /// Applies the splices to the original text.
    pub fn finish(self) -> Result<String, EditError> {
        let src = self.tree.src();
        Ok(self.finish_patch()?.apply(src))
    }

    /// The splices, in order, as a [`Patch`] over the original text: for
    /// writing the result without building it in memory first.
    pub fn finish_patch(mut self) -> Result<Patch, EditError> {
        self.splices
            // At one offset: insertions before a removal or replacement that
            // starts there (they go before its text), deeper ones first.
            .sort_by_key(|s| (s.start, s.end > s.start, Reverse(s.col), s.seq));
        let mut pos = 0usize;
        for s in &self.splices {
            if s.start < pos {
                return Err(EditError {
                    offset: s.start,
                    path: String::new(),
                    message:
                        "internal error: two edits overlap; please report this with the input file"
                            .into(),
                });
            }
            pos = s.end;
        }
        let crlf = self.tree.crlf;
        Ok(Patch::new(
            self.splices
                .into_iter()
                .map(|s| patch::Splice {
                    start: s.start,
                    end: s.end,
                    text: if crlf {
                        s.text.replace('\n', "\r\n")
                    } else {
                        s.text
                    },
                })
                .collect(),
        ))
    }

    fn splice(&mut self, start: usize, end: usize, text: String, col: usize) {
        self.only_appends = false;
        self.only_line_inserts = false;
        let seq = self.splices.len();
        self.splices.push(Splice {
            start,
            end,
            text,
            col,
            seq,
            replaces: None,
        });
    }

    /// How many collections hold `node`.
    fn around(&self, node: NodeId) -> usize {
        std::iter::successors(self.tree.parent(node), |&p| self.tree.parent(p)).count()
    }

    /// Refuses an edit at `node` whose result would nest `depth` deep, past
    /// what a tree is read at: the output could not be read again.
    fn check_depth(&self, node: NodeId, depth: usize) -> Result<(), EditError> {
        if depth > MAX_DEPTH {
            return Err(self.err(node, format!("the value written here would nest collections {depth} deep, past the {MAX_DEPTH} that YAML is read at: move it out of the nesting around it")));
        }
        Ok(())
    }

    fn err(&self, node: NodeId, message: impl Into<String>) -> EditError {
        EditError {
            offset: self.tree.node(node).start as usize,
            path: self.tree.path(node),
            message: message.into(),
        }
    }

    fn check_editable(&self, node: NodeId) -> Result<(), EditError> {
        let n = self.tree.node(node);
        if n.kind == Kind::Alias {
            return Err(self.err(node, "the value to edit is a YAML alias (*name); kfsched does not edit through aliases: expand the alias in the file"));
        }
        if n.tagged() {
            return Err(self.err(node, "the value to edit carries a YAML tag (!tag); kfsched does not edit tagged values: remove the tag or edit the value by hand"));
        }
        if n.anchored() {
            return Err(self.err(node, "the value to edit carries a YAML anchor (&name), which aliases elsewhere may share; kfsched does not edit anchored values: expand the anchor in the file"));
        }
        if n.kind == Kind::Map && n.style == Style::Block && self.in_flow(node) {
            return Err(self.err(node, "the value to edit is a single-pair mapping inside a flow sequence (`[key: value]`); kfsched does not edit those: write it as `{key: value}`"));
        }
        self.check_plain_keys(node)?;
        self.check_layout(node)
    }

    /// Refuses a node whose span, or an ancestor's, the tree could not place
    /// in order: each lies inside its parent, after its previous sibling and
    /// before what follows it. The parser reports some empty entries of
    /// explicit keys (`?`) at another entry's token; placed wrongly, an edit
    /// there would land in the wrong entry.
    fn check_layout(&self, node: NodeId) -> Result<(), EditError> {
        let tree = self.tree;
        let mut x = node;
        while let Some(p) = tree.parent(x) {
            let (n, pn) = (tree.node(x), tree.node(p));
            let mut prev = (x > p + 1).then_some(x - 1);
            while let Some(q) = prev.filter(|&q| tree.parent(q) != Some(p)) {
                prev = tree.parent(q);
            }
            let in_order = n.start >= pn.start
                && n.end <= pn.end
                && prev.is_none_or(|q| tree.node(q).end <= n.start)
                && tree
                    .following(x)
                    .is_none_or(|f| tree.node(f).start >= n.end);
            if !in_order {
                return Err(self.err(
                    node,
                    "cannot tell where this value starts and ends (explicit keys `? key` laid out across lines); write each entry of these mappings as `key: value`",
                ));
            }
            x = p;
        }
        Ok(())
    }

    /// Whether the node or one of its ancestors is a flow collection.
    fn in_flow(&self, node: NodeId) -> bool {
        let tree = self.tree;
        let mut cur = Some(node);
        while let Some(id) = cur {
            if tree.node(id).style == Style::Flow {
                return true;
            }
            cur = tree.parent(id);
        }
        false
    }

    /// Refuses mappings with a collection as a key (`? [a, b]: c`): their
    /// entries cannot be matched by name, and their spans can be empty.
    fn check_plain_keys(&self, node: NodeId) -> Result<(), EditError> {
        let tree = self.tree;
        if tree.kind(node) == Kind::Map
            && tree
                .entries(node)
                .any(|(k, _)| matches!(tree.kind(k), Kind::Map | Kind::Seq))
        {
            return Err(self.err(
                node,
                "the value to edit has a mapping or sequence as a key (`? ...`); kfsched does not edit such entries: write plain `key: value` entries",
            ));
        }
        Ok(())
    }

    /// Refuses removing text that holds what cannot be edited: an anchor
    /// (`&name`) an alias elsewhere may use, or a collection as a key.
    fn check_removable(&self, node: NodeId) -> Result<(), EditError> {
        let tree = self.tree;
        let mut stack = vec![node];
        while let Some(id) = stack.pop() {
            if tree.node(id).anchored() {
                return Err(self.err(
                    id,
                    "the text to replace defines a YAML anchor (&name) that aliases elsewhere may use; kfsched does not remove anchors: expand the anchor in the file",
                ));
            }
            self.check_plain_keys(id)?;
            stack.extend(tree.children(id));
        }
        Ok(())
    }

    /// Refuses edits below a duplicated key or an anchored collection: the
    /// change would land in one of two places, or also in every alias.
    fn check_path(&self, node: NodeId) -> Result<(), EditError> {
        let tree = self.tree;
        let mut cur = node;
        while let Some(p) = tree.parent(cur) {
            if tree.node(p).anchored() {
                return Err(self.err(
                    p,
                    "the value to edit is inside a collection with a YAML anchor (&name), which aliases elsewhere may share; kfsched does not edit anchored values: expand the anchor in the file",
                ));
            }
            if tree.kind(p) == Kind::Map {
                let key = tree
                    .entries(p)
                    .find(|&(k, v)| v == cur || k == cur)
                    .map(|(k, _)| k);
                if let Some(k) = key {
                    let kn = tree.node(k);
                    if kn.anchored() || kn.tagged() || kn.kind == Kind::Alias {
                        return Err(self.err(
                            k,
                            "a key on the edit path is an alias or carries a YAML anchor or tag; kfsched does not edit entries with such keys: write the key out plainly",
                        ));
                    }
                    let name = tree.scalar(k);
                    if let Err((_, second)) = tree.get(p, name) {
                        return Err(self.err(
                            second,
                            format!("duplicate key {name:?} on the edit path (YAML readers disagree on which one counts); remove one of them"),
                        ));
                    }
                }
            }
            cur = p;
        }
        Ok(())
    }

    fn is_sdk(&self) -> bool {
        self.flavor.profile().is_some()
    }

    // ----- columns and lines -------------------------------------------------------

    /// The format of a non-empty flow collection: that of the file's flow
    /// collections, on one line when this one is.
    fn flow_format_of(&self, node: NodeId) -> FlowFormat {
        let tree = self.tree;
        let fmt = FlowFormat::of(tree, node);
        let multi_line = tree
            .children(node)
            .next()
            .is_some_and(|c| tree.src()[self.node_start(node)..self.node_start(c)].contains('\n'));
        if multi_line { fmt } else { fmt.one_line() }
    }

    /// The indentation of the line holding `off`.
    fn indent_at(&self, off: usize) -> usize {
        let src = self.tree.src();
        super::block::indentation(&src[line_start(src, off)..])
    }

    fn col(&self, off: usize) -> usize {
        let src = self.tree.src();
        let start = line_start(src, off);
        let mut s = &src[start..off];
        if start == 0 {
            s = s.strip_prefix('\u{feff}').unwrap_or(s);
        }
        s.chars().count()
    }

    /// Offset just past the line break that ends the line holding `off`, or
    /// `None` when that line is the last one and has no line break.
    fn after_line(&self, off: usize) -> Option<usize> {
        let src = self.tree.src();
        src[off..].find('\n').map(|p| off + p + 1)
    }

    fn node_start(&self, id: NodeId) -> usize {
        self.tree.node(id).start as usize
    }

    fn node_end(&self, id: NodeId) -> usize {
        self.tree.node(id).end as usize
    }

    /// Offset of the `:` that follows a block mapping key.
    fn colon_after(&self, key: NodeId) -> Result<usize, EditError> {
        let src = self.tree.src().as_bytes();
        let mut i = self.node_end(key);
        while i < src.len() {
            match src[i] {
                b':' => return Ok(i),
                b' ' | b'\t' => i += 1,
                _ => break,
            }
        }
        Err(self.err(key, "complex mapping keys (`? key`) are not supported on the edit path; write the key on one line"))
    }

    /// Whether the key of `value` in the flow mapping `map` is followed by
    /// its `:`, past any blanks, line breaks and comments (`{? a  # note
    /// : }`), as opposed to a key with no indicator at all (`{a}`).
    fn flow_key_has_colon(&self, map: NodeId, value: NodeId) -> bool {
        let tree = self.tree;
        let Some(key) = self.key_of(map, value) else {
            return false;
        };
        let src = tree.src().as_bytes();
        let mut i = self.node_end(key);
        while i < src.len() {
            match src[i] {
                b':' => return true,
                b' ' | b'\t' | b'\r' | b'\n' => i += 1,
                b'#' => i = memchr::memchr(b'\n', &src[i..]).map_or(src.len(), |p| i + p),
                _ => return false,
            }
        }
        false
    }

    /// The key of `value` when `map` is a mapping that holds it.
    fn key_of(&self, map: NodeId, value: NodeId) -> Option<NodeId> {
        let tree = self.tree;
        if tree.kind(map) != Kind::Map {
            return None;
        }
        tree.entries(map).find(|&(_, v)| v == value).map(|(k, _)| k)
    }

    /// Whether the key of `value` in the flow mapping `map` ends in a tag,
    /// an anchor or an alias name (an alias, or a tagged or anchored empty
    /// scalar), which would take a `:` written right after it as its own.
    fn key_ends_in_name(&self, map: NodeId, value: NodeId) -> bool {
        let tree = self.tree;
        let Some(key) = self.key_of(map, value) else {
            return false;
        };
        let k = tree.node(key);
        match k.kind {
            Kind::Alias => true,
            Kind::Scalar => (k.tagged() || k.anchored()) && tree.scalar(key).is_empty(),
            _ => false,
        }
    }

    // ----- reconcile ---------------------------------------------------------------

    fn reconcile(
        &mut self,
        node: NodeId,
        desired: &Value,
        placement: &Placement,
    ) -> Result<(), EditError> {
        self.check_editable(node)?;
        let tree = self.tree;
        let n = tree.node(node);
        if n.style == Style::Flow
            && matches!(n.kind, Kind::Map | Kind::Seq)
            && tree.children(node).next().is_none()
            && matches!(desired, Value::Map(d) if !d.is_empty())
                | matches!(desired, Value::Seq(d) if !d.is_empty())
        {
            // An empty `{}` or `[]` that gains entries: written anew, in one
            // edit (several inserts into it would overlap).
            return self.replace_node(node, desired);
        }
        if self.flavor == Flavor::KfpV1 && self.laid_out_otherwise(node, desired) {
            // A kfp 1.8 file: the collection is written as the SDK writes its
            // final content, whatever its layout was before.
            return self.replace_node(node, desired);
        }
        // A flow collection in an SDK-written file (or one that empties) is
        // written whole, as the SDK writes it, when its value changes.
        let whole = |empty: bool| n.style == Style::Flow && (self.is_sdk() || empty);
        match (n.kind, desired) {
            (Kind::Map, Value::Map(d)) if !whole(d.is_empty()) => {
                self.reconcile_map(node, desired, d, placement)
            }
            (Kind::Seq, Value::Seq(d)) if !whole(d.is_empty()) => {
                self.reconcile_seq(node, desired, d)
            }
            _ => self.replace_if_changed(node, desired),
        }
    }

    /// Replaces `node` with `desired` unless it already reads as that.
    fn replace_if_changed(&mut self, node: NodeId, desired: &Value) -> Result<(), EditError> {
        if self.current_value(node) != *desired {
            self.replace_node(node, desired)?;
        }
        Ok(())
    }

    /// `reconcile` of a mapping: entries the desired map lacks are removed,
    /// the ones both have reconciled, the missing ones inserted at `placement`.
    fn reconcile_map(
        &mut self,
        node: NodeId,
        desired: &Value,
        d: &[(String, Value)],
        placement: &Placement,
    ) -> Result<(), EditError> {
        let tree = self.tree;
        let n = tree.node(node);
        let mut existing: Vec<(NodeId, NodeId)> = Vec::new();
        let mut missing: Vec<(&String, &Value)> = Vec::new();
        for (k, v) in d {
            match tree.get(node, k) {
                Err((_, second)) => {
                    return Err(self.err(
                        second,
                        format!("duplicate key {k:?} on the edit path; remove one of them"),
                    ));
                }
                Ok(Some((kn, vn))) => existing.push((kn, vn)),
                Ok(None) => missing.push((k, v)),
            }
            let _ = v;
        }
        // A merge key (`<<`) stays: the desired value is what the map
        // reads as, merged entries included (see `effective_value`).
        let removals: Vec<(NodeId, NodeId)> = tree
            .entries(node)
            .filter(|&(k, _)| !tree.is_merge_key(k))
            .filter(|(k, _)| !d.iter().any(|(dk, _)| dk == tree.scalar(*k)))
            .collect();
        // A key the map gets from a merge with the desired value
        // needs no entry of its own.
        missing.retain(|(k, v)| {
            tree.get_value(node, k).is_some()
                || tree
                    .lookup(node, k)
                    .is_none_or(|m| effective_value(tree, m) != **v)
        });
        if !removals.is_empty() {
            // Remove entries line by line only when some entry stays and
            // every removed key starts its own line; otherwise re-render.
            let src = tree.src();
            let own_lines = removals.iter().all(|&(k, _)| {
                let ks = self.node_start(k);
                src[line_start(src, ks)..ks].bytes().all(|b| b == b' ')
            });
            if n.style == Style::Flow || existing.is_empty() || !own_lines {
                return self.replace_node(node, desired);
            }
            for (k, v) in removals {
                self.remove_entry(node, k, v)?;
            }
        }
        for (k, v) in d {
            if let Some(&(_, vn)) = existing.iter().find(|(kn, _)| tree.scalar(*kn) == k) {
                self.reconcile(vn, v, &Placement::Sorted.default_for(self.flavor))?;
            }
        }
        for (k, v) in missing {
            let at = match placement {
                Placement::AsDesired => {
                    let i = d.iter().position(|(dk, _)| dk == k).unwrap_or(d.len());
                    d[i + 1..]
                        .iter()
                        .find(|(dk, _)| existing.iter().any(|(kn, _)| tree.scalar(*kn) == dk))
                        .map_or(Placement::End, |(dk, _)| Placement::BeforeKey(dk.clone()))
                }
                p => p.clone(),
            };
            self.insert_key(node, k, v, &at)?;
        }
        Ok(())
    }

    /// `reconcile` of a sequence: appended items, items edited in place one
    /// for one, or items that grow into groups; anything else is re-rendered.
    fn reconcile_seq(
        &mut self,
        node: NodeId,
        desired: &Value,
        d: &[Value],
    ) -> Result<(), EditError> {
        let tree = self.tree;
        let items: Vec<NodeId> = tree.items(node).collect();
        let prefix = items.len() <= d.len()
            && items
                .iter()
                .zip(d.iter())
                .all(|(&i, v)| node_value(tree, i) == *v);
        if prefix {
            if items.len() < d.len() {
                for &i in &items {
                    self.check_editable(i)?;
                }
                self.append_items(node, &items, &d[items.len()..])?;
            }
            Ok(())
        } else if items.len() == d.len() {
            for (&i, v) in items.iter().zip(d.iter()) {
                self.reconcile(i, v, &Placement::Sorted.default_for(self.flavor))?;
            }
            Ok(())
        } else if let Some(groups) = extension_groups(tree, &items, d) {
            // Each existing item grows into the first of its group, in
            // place; the rest of the group are new items right after it
            // (the m×k terms of an ANDed node affinity, SPEC §3).
            for &i in &items {
                self.check_editable(i)?;
            }
            for (at, group) in groups.iter().enumerate() {
                self.reconcile(
                    items[at],
                    &d[group.start],
                    &Placement::Sorted.default_for(self.flavor),
                )?;
                if group.len() > 1 {
                    self.append_items(node, &items[..=at], &d[group.start + 1..group.end])?;
                }
            }
            Ok(())
        } else {
            self.replace_node(node, desired)
        }
    }

    /// Whether the SDK would lay out `desired` unlike the block collection
    /// `node` is: in flow style (its content became plain scalars, a forced
    /// `"true"` replaced), or a mapping with its existing keys in another
    /// order (kfp 1.8 writes `annotations` before `labels` once a template
    /// has an annotation of its own).
    fn laid_out_otherwise(&self, node: NodeId, desired: &Value) -> bool {
        let tree = self.tree;
        let n = tree.node(node);
        if n.style != Style::Block || !matches!(n.kind, Kind::Map | Kind::Seq) {
            return false;
        }
        if desired != &self.current_value(node) && Emitter::writes_flow(PyProfile::KfpV1, desired) {
            return true;
        }
        let (Kind::Map, Value::Map(d)) = (n.kind, desired) else {
            return false;
        };
        let existing: Vec<&str> = tree.entries(node).map(|(k, _)| tree.scalar(k)).collect();
        let kept: Vec<&str> = d
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| existing.contains(k))
            .collect();
        let stays: Vec<&str> = existing
            .iter()
            .copied()
            .filter(|k| kept.contains(k))
            .collect();
        kept != stays
    }

    /// Replaces a node's text with a rendering of `value`. Several edits of
    /// one flow collection (an SDK file's `{...}`, an empty `{}`, a null)
    /// each re-render it: they are folded into one replacement.
    fn replace_node(&mut self, node: NodeId, value: &Value) -> Result<(), EditError> {
        let tree = self.tree;
        // The node, or a collection around it, was already replaced: write
        // the value into that replacement instead.
        if let Some(around) = self.replacement_around(node) {
            let Some(mut r) = self.replaced.remove(&around) else {
                unreachable!("found by its node")
            };
            match value_at(tree, &mut r.value, around, node) {
                Some(slot) => *slot = value.clone(),
                None => {
                    self.replaced.insert(around, r);
                    return Err(self.err(node, "internal error: two edits of one collection cannot be combined; please report this with the input file"));
                }
            }
            // Edits come in document order: the splice is near the end.
            if let Some(i) = self
                .splices
                .iter()
                .rposition(|s| s.replaces == Some(around))
            {
                self.splices.remove(i);
            }
            return self.replace_node(around, &r.value);
        }
        // Replacements inside the node are superseded: callers pass a value
        // that holds them (see `current_value`).
        let end = tree.subtree_end(node);
        let inside: Vec<NodeId> = self
            .replaced
            .range(node..end)
            .map(|(&n, _)| n)
            .filter(|&n| n != node)
            .collect();
        if !inside.is_empty() {
            for n in &inside {
                self.replaced.remove(n);
            }
            self.splices
                .retain(|s| s.replaces.is_none_or(|n| inside.binary_search(&n).is_err()));
        }
        let count = self.splices.len();
        self.replace_node_text(node, value)?;
        if self.splices.len() == count + 1
            && let Some(last) = self.splices.last_mut()
        {
            last.replaces = Some(node);
            self.replaced.insert(
                node,
                Replaced {
                    end,
                    value: value.clone(),
                },
            );
        }
        Ok(())
    }

    /// The replaced node that is `node` or holds it, if any.
    fn replacement_around(&self, node: NodeId) -> Option<NodeId> {
        self.replaced
            .range(..=node)
            .next_back()
            .filter(|&(&at, r)| (at..r.end).contains(&node))
            .map(|(&n, _)| n)
    }

    /// A node's value with the replacements already planned for it: the
    /// value written for it by a replacement of it or of a collection
    /// around it, else its own with the replacements inside it.
    fn current_value(&self, node: NodeId) -> Value {
        let tree = self.tree;
        if let Some(around) = self.replacement_around(node) {
            let mut whole = self.replaced[&around].value.clone();
            if let Some(slot) = value_at(tree, &mut whole, around, node) {
                return std::mem::replace(slot, Value::Null);
            }
        }
        let mut v = node_value(tree, node);
        let end = tree.subtree_end(node);
        // Disjoint subtrees: each one's value goes to its own place.
        for (&at, r) in self.replaced.range(node..end) {
            if let Some(slot) = value_at(tree, &mut v, node, at) {
                *slot = r.value.clone();
            }
        }
        v
    }

    fn replace_node_text(&mut self, node: NodeId, value: &Value) -> Result<(), EditError> {
        self.check_editable(node)?;
        self.check_removable(node)?;
        let tree = self.tree;
        let src = tree.src();
        let Some(parent) = tree.parent(node) else {
            return Err(self.err(node, "cannot replace a document root"));
        };
        let pn = tree.node(parent);
        let start = self.node_start(node);
        // A keep-chomping block scalar (`|+`), or a collection ending in one,
        // ends after its line breaks: they stay, or the next line would join
        // the new text.
        let end = start
            + src[start..self.node_end(node)]
                .trim_end_matches(['\n', '\r'])
                .len();
        if tree
            .following(node)
            .is_some_and(|f| self.node_start(f) < end)
        {
            // The parser gave the value a span that reaches into what follows
            // it (explicit keys at odd indentation): replacing it would drop
            // that text.
            return Err(self.err(
                node,
                "cannot tell where this value ends (an explicit `? key` at another indentation follows it); write the mapping with one indentation per level",
            ));
        }
        if self.in_flow(parent) {
            // An implicit null after a `:` that ends its line (`[?\n:\n]`):
            // the parser takes no value written on that line or the next.
            if start == end
                && tree.kind(node) == Kind::Scalar
                && src[..start]
                    .trim_end_matches([' ', '\t'])
                    .trim_end_matches(['\r', '\n'])
                    .trim_end_matches([' ', '\t'])
                    .ends_with(':')
                && src[..start]
                    .trim_end_matches([' ', '\t'])
                    .ends_with(['\r', '\n'])
            {
                return Err(self.err(
                    node,
                    "cannot write a value here: its `:` ends a line inside a flow collection; put the `:` and the value on the key's line",
                ));
            }
            // A single-pair mapping of a flow sequence with an empty explicit
            // key whose `:` is on a later line than its `?` (`[?\n:]`): the
            // parser takes no value after that `:`.
            if start == end
                && tree.kind(node) == Kind::Scalar
                && tree
                    .parent(parent)
                    .is_some_and(|gp| tree.kind(gp) == Kind::Seq)
                && tree.children(parent).next().is_some_and(|key| {
                    let k = tree.node(key);
                    key != node && k.kind == Kind::Scalar && k.start == k.end
                })
                && src[pn.start as usize..start].contains(['\r', '\n'])
            {
                return Err(self.err(
                    node,
                    "cannot write a value here: the empty `?` key of this flow sequence entry has its `:` on another line; put the `?`, the `:` and the value on one line",
                ));
            }
            // Inside a flow collection (only for hand-written files): flow
            // text in the collection's own format.
            let mut text = FlowFormat::of(tree, parent).text(value, self.indent_at(start));
            if start == end && tree.kind(node) == Kind::Scalar {
                // An implicit null (`{key}` or `{key:}`): give it its
                // indicator unless the key already has one.
                text = if self.flow_key_has_colon(parent, node) {
                    format!(" {text}")
                } else if self.key_ends_in_name(parent, node) {
                    // `{? !}`, `{&a}`, `{*a}`: a `:` right after a tag or an
                    // anchor or alias name would become part of that name.
                    format!(" : {text}")
                } else {
                    format!(": {text}")
                };
            }
            // An implicit null's value comes before an entry added after it
            // at the same offset (`{a: }` gaining `a`'s value and `, b: ...`).
            let col = self.col(start) + usize::from(start == end);
            self.splice(start, end, text, col);
            return Ok(());
        }
        match pn.kind {
            Kind::Map => {
                let key = tree
                    .children(parent)
                    .collect::<Vec<_>>()
                    .chunks(2)
                    .find(|c| c.len() == 2 && c[1] == node)
                    .map(|c| c[0])
                    .ok_or_else(|| self.err(node, "only mapping values can be replaced"))?;
                let key_start = self.node_start(key);
                let key_col = self.col(key_start);
                let colon = self.colon_after(key)?;
                let after = colon + 1;
                let end = end.max(after);
                let keep_flow = tree.node(node).style == Style::Flow
                    && matches!(value, Value::Map(_) | Value::Seq(_));
                // A hand-written `|` string stays one when it changes.
                let literal = (tree.node(node).style == Style::Literal)
                    .then(|| value.as_str())
                    .flatten()
                    .and_then(|s| literal_text(s, self.block_scalar_indent(node, key_col)));
                let mut text = match (self.flavor.profile(), literal) {
                    (Some(p), _) => Emitter::after_key(p, value, key_col, self.col(after)),
                    (None, Some(literal)) => literal,
                    (None, None) if keep_flow => format!(
                        " {}",
                        FlowFormat::of(tree, node).text(value, self.indent_at(key_start))
                    ),
                    (None, None) => match self.flavor {
                        Flavor::Generic(bs) => bs.after_key(value, key_col),
                        _ => unreachable!(),
                    },
                };
                let end = self.fit_block_scalar(&mut text, value, end, key_col);
                // A comment between the colon and the value stays where it is,
                // as does one after an empty value that becomes a block
                // collection (`key:   # none yet`; a scalar written there goes
                // before that comment anyway).
                let between = &src[after..start.max(after)];
                let comment = between.find('#').map(|p| after + p).or_else(|| {
                    let empty = start == self.node_end(node)
                        && tree.kind(node) == Kind::Scalar
                        && text.starts_with('\n');
                    let rest = &src[end..];
                    let blanks = rest.len() - rest.trim_start_matches([' ', '\t']).len();
                    (empty && blanks > 0 && rest[blanks..].starts_with('#')).then_some(end + blanks)
                });
                match comment {
                    Some(c) if text.starts_with('\n') => {
                        let line_end = src[c..].find(['\r', '\n']).map_or(src.len(), |p| c + p);
                        self.splice(line_end, end.max(line_end), text, key_col + 1);
                    }
                    Some(c) => {
                        let line_end = src[c..].find(['\r', '\n']).map_or(src.len(), |p| c + p);
                        let comment_text = src[c..line_end].trim_end_matches(BLANKS).to_string();
                        // The comment follows the value; a block scalar's goes
                        // after its header, as after its end it would be content.
                        let block_scalar = text.trim_start().starts_with(['|', '>']);
                        let text = match text.find(['\r', '\n']) {
                            Some(nl) if block_scalar => {
                                format!("{}  {comment_text}{}", &text[..nl], &text[nl..])
                            }
                            _ => format!("{text}  {comment_text}"),
                        };
                        self.splice(after, end, text, key_col + 1);
                    }
                    None => self.splice(after, end, text, key_col + 1),
                }
                Ok(())
            }
            Kind::Seq => {
                let dash = dash_before(src, start)
                    .ok_or_else(|| self.err(node, "cannot find the `-` of this sequence item"))?;
                let dash_col = self.col(dash);
                let mut text = match self.flavor {
                    Flavor::Generic(bs) => bs.after_dash(value, dash_col),
                    f => Emitter::after_dash(
                        f.profile().unwrap_or(PyProfile::KfpV2),
                        value,
                        dash_col,
                    ),
                };
                let end = self.fit_block_scalar(&mut text, value, end, dash_col);
                self.splice(dash + 1, end.max(dash + 1), text, dash_col + 1);
                Ok(())
            }
            _ => Err(self.err(node, "unexpected parent node")),
        }
    }

    /// For a replacement `text` of the value ending at `end` (its key or
    /// dash at `col`) that holds a block scalar: flow style instead when the
    /// block scalar would take what follows as content (indented comment
    /// lines, blank lines of spaces past its indentation, or a comment after
    /// the value on its line); otherwise the
    /// blanks after the old value go with it (they would become a content
    /// line). Returns where the replaced text ends.
    /// The indentation of a `|` or `>` block scalar's content: its first
    /// non-empty line's, or two more than its key's when it has none.
    fn block_scalar_indent(&self, node: NodeId, key_col: usize) -> usize {
        let src = self.tree.src();
        let start = self.node_start(node);
        // Whole lines: the span may start at the header or at the content.
        let from = src[..start].rfind('\n').map_or(0, |p| p + 1);
        let body = &src[from..self.node_end(node)];
        body.lines()
            .filter(|l| !is_blank(l))
            .map(|l| (l, l.len() - l.trim_start_matches(' ').len()))
            .find(|(l, i)| *i > key_col && !l[*i..].starts_with(['|', '>']))
            .map_or(key_col + 2, |(_, i)| i)
    }

    fn fit_block_scalar(&self, text: &mut String, value: &Value, end: usize, col: usize) -> usize {
        if !has_block_scalar(text) {
            return end;
        }
        if self.lines_follow_deeper(end, col)
            || self.text_follows(end)
            || (keeps_final_breaks(text) && self.blank_line_follows(end))
        {
            *text = format!(" {}", flow_text(value));
            return end;
        }
        let end = self.blanks_after(end);
        // The block scalar ends with its own line break; the one that ended
        // the old value's line stays, so drop the scalar's (kept, it would
        // add an empty line to the file, and to the value under `|+`).
        let src = self.tree.src();
        if text.ends_with('\n') && src[end..].starts_with(['\n', '\r']) {
            text.pop();
            if text.ends_with('\r') {
                text.pop();
            }
        }
        end
    }

    /// `end` moved past the spaces and tabs that end its line (unchanged
    /// when anything else follows on the line).
    fn blanks_after(&self, end: usize) -> usize {
        let src = self.tree.src();
        let rest = &src[end..];
        let n = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        match rest.as_bytes().get(n) {
            None | Some(b'\n' | b'\r') => end + n,
            _ => end,
        }
    }

    /// Whether anything but blanks (a comment) follows `end` on its line.
    fn text_follows(&self, end: usize) -> bool {
        self.blanks_after(end) == end
            && self.tree.src()[end..]
                .chars()
                .next()
                .is_some_and(|c| c != '\n' && c != '\r')
    }

    /// Whether the line after the one holding `end` is empty or blank: a
    /// block scalar that keeps its final line breaks (`|+`) would take it
    /// as one more.
    fn blank_line_follows(&self, end: usize) -> bool {
        let src = self.tree.src();
        self.after_line(end)
            .and_then(|next| src[next..].lines().next())
            .is_some_and(is_blank)
    }

    /// Whether comment lines indented past `col`, or blank lines with
    /// blanks past it (a block scalar reads those blanks as content),
    /// follow the line holding `end` before the next content line.
    fn lines_follow_deeper(&self, end: usize, col: usize) -> bool {
        let src = self.tree.src();
        let Some(next) = self.after_line(end) else {
            return false;
        };
        for line in src[next..].lines() {
            let rest = line.trim_start_matches(' ');
            if is_blank(rest) {
                if line.trim_end_matches('\r').len() > col {
                    return true;
                }
                continue;
            }
            return rest.starts_with('#') && line.len() - rest.len() > col;
        }
        false
    }

    // ----- maps --------------------------------------------------------------------

    fn insert_key(
        &mut self,
        map: NodeId,
        key: &str,
        value: &Value,
        placement: &Placement,
    ) -> Result<(), EditError> {
        let tree = self.tree;
        let n = tree.node(map);
        match n.kind {
            Kind::Map => {}
            Kind::Scalar if tree.is_null(map) => {
                let mut v = match self.current_value(map) {
                    Value::Null => Value::Map(Vec::new()),
                    v => v,
                };
                v.set(key, value.clone());
                return self.replace_node(map, &v);
            }
            _ => return Err(self.err(map, format!("expected a mapping to add {key:?} to"))),
        }
        if n.style == Style::Flow {
            let mut v = self.current_value(map);
            v.set(key, value.clone());
            if self.is_sdk() || tree.count(map) == 0 {
                return self.replace_node(map, &v);
            }
            // Hand-written flow mapping: add `, key: value` after the last
            // value (or `key: value, ` before the key it must precede), in
            // the format of the entries already there.
            if let Placement::BeforeKey(next) = placement {
                // Only before a key that starts its entry (no `?` indicator)
                // and that no other edit touches.
                let starts_entry = |k: NodeId| {
                    let at = self.node_start(k);
                    tree.src()[..at]
                        .trim_end_matches(BLANKS)
                        .ends_with(['{', ','])
                        && !self.splices.iter().any(|s| s.start <= at && at <= s.end)
                };
                if let Some((next_key, _)) = tree
                    .entries(map)
                    .find(|&(k, _)| tree.scalar(k) == next && starts_entry(k))
                {
                    let fmt = self.flow_format_of(map);
                    let at = self.node_start(next_key);
                    let key_col = self.col(at);
                    let text = format!(
                        "{}{}",
                        fmt.entry(key, value, key_col),
                        fmt.separator(key_col)
                    );
                    self.splice(at, at, text, key_col);
                    return Ok(());
                }
            }
            let last_key = tree.entries(map).last().map(|(k, _)| k);
            let (Some(last_key), Some(last)) = (last_key, tree.children(map).last()) else {
                return self.replace_node(map, &v);
            };
            let last = self.node_end(last);
            let fmt = self.flow_format_of(map);
            let key_col = self.col(self.node_start(last_key));
            let text = format!(
                "{}{}",
                fmt.separator(key_col),
                fmt.entry(key, value, key_col)
            );
            let col = self.col(last);
            self.splice(last, last, text, col);
            return Ok(());
        }
        let entries: Vec<(NodeId, NodeId)> = tree.entries(map).collect();
        let Some(&(first_key, _)) = entries.first() else {
            return Err(self.err(map, "empty block mapping"));
        };
        let key_col = self.col(self.node_start(first_key));
        let before = self.position_before(&entries, key, placement);
        let text = self.block_entry(key, value, key_col);
        match before {
            Some(at) => self.splice_lines(at, text, key_col),
            None => {
                let last_end = entries
                    .last()
                    .map(|&(_, v)| self.node_end(v))
                    .unwrap_or(self.node_end(map));
                self.insert_after_line(last_end, text, key_col);
            }
        }
        Ok(())
    }

    /// The offset before which a new key goes, or `None` for "after the last entry".
    fn position_before(
        &self,
        entries: &[(NodeId, NodeId)],
        key: &str,
        placement: &Placement,
    ) -> Option<usize> {
        let tree = self.tree;
        let keys: Vec<&str> = entries.iter().map(|&(k, _)| tree.scalar(k)).collect();
        let target = match placement {
            Placement::End => None,
            Placement::Sorted => {
                if keys.windows(2).all(|w| w[0] <= w[1]) {
                    entries.iter().find(|&&(k, _)| tree.scalar(k) > key)
                } else {
                    None
                }
            }
            Placement::Canonical(order) => {
                let rank = order.iter().position(|k| *k == key)?;
                entries.iter().find(|&&(k, _)| {
                    order
                        .iter()
                        .position(|o| *o == tree.scalar(k))
                        .is_some_and(|r| r > rank)
                })
            }
            Placement::BeforeAny(list) => entries
                .iter()
                .find(|&&(k, _)| list.contains(&tree.scalar(k))),
            Placement::BeforeKey(key) => entries.iter().find(|&&(k, _)| tree.scalar(k) == key),
            Placement::AsDesired => None,
        }?;
        let k_start = self.node_start(target.0);
        let src = self.tree.src();
        let ls = line_start(src, k_start);
        // Only when the key is the first thing on its line (not `- key:`).
        if !src[ls..k_start].bytes().all(|b| b == b' ') || (ls == 0 && src.starts_with('\u{feff}'))
        {
            return None;
        }
        // Comment lines right above the key belong to it.
        let mut at = ls;
        while at > 0 {
            let prev = line_start(src, at - 1);
            let line = src[prev..at].trim_matches(BLANKS);
            if line.starts_with('#') {
                at = prev;
            } else {
                break;
            }
        }
        Some(at)
    }

    fn insert_after_line(&mut self, off: usize, text: String, col: usize) {
        match self.after_line(off) {
            Some(at) => {
                let at = self.past_deeper_comments(at, col);
                self.splice_lines(at, text, col)
            }
            None => {
                self.strip_final_block_scalar();
                let end = self.tree.src().len();
                let text = format!("\n{}", text.strip_suffix('\n').unwrap_or(&text));
                self.splice(end, end, text, col);
            }
        }
    }

    /// The text of the block entry `key: value` at column `col`, in the
    /// file's flavour.
    /// `key: value` as a new entry of a block mapping at column `col`.
    fn entry_text(&self, key: &str, value: &Value, col: usize) -> String {
        match self.flavor {
            Flavor::Generic(bs) => bs.entry(key, value, col),
            f => Emitter::block_entry(f.profile().unwrap_or(PyProfile::KfpV2), key, value, col),
        }
    }

    fn block_entry(&mut self, key: &str, value: &Value, col: usize) -> String {
        let flavor = self.flavor;
        let same = |r: &&Rendered| {
            r.key == key && r.col == col && r.flavor == flavor && identical(&r.value, value)
        };
        if let Some(r) = self.rendered.iter().find(same) {
            return r.text.clone();
        }
        let text = self.entry_text(key, value, col);
        if self.rendered.len() < RENDERED {
            self.rendered.push(Rendered {
                flavor,
                col,
                key: key.to_string(),
                value: value.clone(),
                text: text.clone(),
            });
        }
        text
    }

    /// Inserts whole lines at `at`, which keeps [`Editor::only_line_inserts`]
    /// when `at` starts a line and the text is whole lines.
    fn splice_lines(&mut self, at: usize, text: String, col: usize) {
        let src = self.tree.src();
        let whole = (at == 0 || src.as_bytes().get(at - 1) == Some(&b'\n'))
            && !text.is_empty()
            && text.ends_with('\n');
        let keep = self.only_line_inserts && whole;
        self.splice(at, at, text, col);
        self.only_line_inserts = keep;
    }

    /// `at` moved past the comment lines that start there and are indented
    /// deeper than `col`: they belong to the entry above, not to the text
    /// inserted at `col`.
    fn past_deeper_comments(&self, mut at: usize, col: usize) -> usize {
        let src = self.tree.src();
        while let Some(nl) = src[at..].find('\n') {
            let line = &src[at..at + nl];
            let rest = line.trim_start_matches(' ');
            if !rest.starts_with('#') || line.len() - rest.len() <= col {
                break;
            }
            at += nl + 1;
        }
        at
    }

    /// Text is about to follow the last line of a file that has no final
    /// line break. When that line ends a `|` or `>` block scalar, the line
    /// break written before the new text would become part of its value
    /// (clip and keep chomping keep a final line break): its header gains
    /// the strip indicator (`|-`), which keeps the value what it was.
    fn strip_final_block_scalar(&mut self) {
        let tree = self.tree;
        let src = tree.src();
        let last = src.trim_end_matches([' ', '\t']).len();
        // What ends the file is its last node in document order.
        let Some(id) = (tree.len() as u32).checked_sub(1).filter(|&id| {
            let n = tree.node(id);
            matches!(n.style, Style::Literal | Style::Folded)
                && n.end as usize >= last
                && n.end > n.start
        }) else {
            return;
        };
        let Some((ts, te)) = super::tree::block_scalar_header(src, self.node_start(id)) else {
            return;
        };
        let header = &src[ts..te];
        if header.contains('-') || self.splices.iter().any(|s| s.start <= te && ts < s.end) {
            return;
        }
        match header.find('+') {
            Some(p) => self.splice(ts + p, ts + p + 1, "-".into(), 0),
            None => self.splice(ts + 1, ts + 1, "-".into(), 0),
        }
    }

    fn remove_entry(&mut self, map: NodeId, key: NodeId, value: NodeId) -> Result<(), EditError> {
        self.check_editable(value)?;
        self.check_removable(key)?;
        self.check_removable(value)?;
        let src = self.tree.src();
        let ks = self.node_start(key);
        let ls = line_start(src, ks);
        if !src[ls..ks].bytes().all(|b| b == b' ') || self.tree.count(map) == 1 {
            // `- key:` lines, or the only entry: re-render the whole mapping.
            let mut v = self.current_value(map);
            v.remove(self.tree.scalar(key));
            return self.replace_node(map, &v);
        }
        let end = match self.after_line(self.node_end(value)) {
            Some(e) => e,
            None => src.len(),
        };
        let col = self.col(ks);
        self.splice(ls, end, String::new(), col);
        Ok(())
    }

    // ----- sequences ---------------------------------------------------------------

    fn append_items(
        &mut self,
        seq: NodeId,
        items: &[NodeId],
        new: &[Value],
    ) -> Result<(), EditError> {
        let tree = self.tree;
        let src = tree.src();
        if tree.node(seq).style == Style::Flow {
            // Hand-written flow sequence (SDK flavours re-render in reconcile),
            // in the format of the items already there.
            let (at, text) = match items.last() {
                Some(&last) => {
                    let fmt = self.flow_format_of(seq);
                    let col = self.col(self.node_start(last));
                    let mut text = String::new();
                    for v in new {
                        text.push_str(&fmt.separator(col));
                        text.push_str(&fmt.text(v, col));
                    }
                    (self.node_end(last), text)
                }
                None => {
                    let open = self.node_start(seq);
                    let text = FlowFormat::of(tree, seq)
                        .text(&Value::Seq(new.to_vec()), self.indent_at(open));
                    // Inside the brackets that are there.
                    let inner = text[1..text.len() - 1].to_string();
                    (open + 1, inner)
                }
            };
            let col = self.col(at);
            self.splice(at, at, text, col);
            return Ok(());
        }
        let Some(&first) = items.first() else {
            return Err(self.err(seq, "empty block sequence"));
        };
        let dash = dash_before(src, self.node_start(first))
            .ok_or_else(|| self.err(first, "cannot find the `-` of this sequence item"))?;
        let dash_col = self.col(dash);
        let mut text = String::new();
        for v in new {
            match self.flavor {
                Flavor::Generic(bs) => text.push_str(&bs.item(v, dash_col)),
                f => text.push_str(&Emitter::seq_item(
                    f.profile().unwrap_or(PyProfile::KfpV2),
                    v,
                    dash_col,
                )),
            }
        }
        let last_end = self.node_end(*items.last().unwrap_or(&first));
        // Items belong inside the sequence's key: before a key added to the
        // mapping after the same line, even when the dashes are not indented.
        self.insert_after_line(last_end, text, dash_col + 1);
        Ok(())
    }

    // ----- documents ---------------------------------------------------------------

    /// A document's text: `---`, then the value in the flavour's style.
    fn document_text(&self, value: &Value) -> String {
        match self.flavor {
            Flavor::Generic(bs) => {
                let mut text = String::from("---\n");
                if let Value::Map(m) = value {
                    for (k, v) in m {
                        text.push_str(&bs.entry(k, v, 0));
                    }
                }
                text
            }
            f => Emitter::next_document(f.profile().unwrap_or(PyProfile::KfpV2), value),
        }
    }

    /// Adds the document `{path[0]: {path[1]: … {key: value, …}}}` with
    /// the `entries` in their order (sorted, for a flavour whose emitter
    /// sorts keys, as the SDKs' do), before document `before` (as
    /// [`Edit::InsertDocument`] does) or at the end when `None`; nothing
    /// when there are no entries. Each entry is rendered as it comes and
    /// then dropped, so a document of thousands of entries is never held
    /// as values; the text is the one the whole value would give.
    pub fn add_document(
        &mut self,
        before: Option<usize>,
        path: &[&str],
        entries: impl IntoIterator<Item = (String, Value)>,
    ) {
        let mut entries = entries.into_iter();
        let Some(first) = entries.next() else {
            return;
        };
        let nest = |inner: Vec<(String, Value)>| {
            path.iter().rev().fold(Value::Map(inner), |v, k| {
                Value::Map(vec![(k.to_string(), v)])
            })
        };
        // A collection entry starts a block line of its own at the column
        // every later entry takes (a scalar one could be written in flow
        // style with the rest: those go through the whole value).
        let streams = matches!(first.1, Value::Map(_) | Value::Seq(_));
        let mut text = String::new();
        let mut col = None;
        if streams {
            text = self.document_text(&nest(vec![first.clone()]));
            col = text
                .lines()
                .nth(path.len() + 1)
                .map(|l| l.len() - l.trim_start_matches(' ').len());
        }
        match col {
            Some(col) => {
                for (key, value) in entries {
                    text.push_str(&self.entry_text(&key, &value, col));
                }
            }
            None => {
                let all = std::iter::once(first).chain(entries).collect();
                text = self.document_text(&nest(all));
            }
        }
        match before {
            Some(before) => self.insert_document_text(before, text),
            None => self.append_document_text(text),
        }
    }

    /// Inserts a document at the start of the line where document `before`
    /// begins (its `---`), so it follows the document before that one.
    fn insert_document(&mut self, before: usize, value: &Value) {
        let text = self.document_text(value);
        self.insert_document_text(before, text);
    }

    fn insert_document_text(&mut self, before: usize, mut text: String) {
        let Some(doc) = self.tree.documents.get(before) else {
            return self.append_document_text(text);
        };
        let src = self.tree.src();
        let at = line_start(src, doc.start as usize);
        if !doc.explicit_start {
            // The next document began after a `...`: it needs its own marker now.
            text.push_str("---\n");
        }
        self.splice(at, at, text, 0);
    }

    fn append_document(&mut self, value: &Value) {
        let text = self.document_text(value);
        self.append_document_text(text);
    }

    fn append_document_text(&mut self, mut text: String) {
        let src = self.tree.src();
        let newline = !src.is_empty() && !src.ends_with('\n');
        if newline {
            // A file without a final line break keeps lacking one.
            text.insert(0, '\n');
            if text.ends_with('\n') {
                text.pop();
            }
        }
        text.shrink_to_fit();
        let end = src.len();
        let (appends, lines) = (self.only_appends, self.only_line_inserts);
        self.splice(end, end, text, 0);
        self.only_appends = appends;
        self.only_line_inserts = lines;
    }
}

/// Whether two values are written alike: the same types, items and keys
/// in the same order (unlike `==`, which holds `1 == 1.0` and maps in any
/// order equal).
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Seq(x), Value::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| identical(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, p), (l, q))| k == l && identical(p, q))
        }
        _ => false,
    }
}

/// Whether `desired` keeps everything `existing` has: every key of a map
/// (with a value that keeps the old one's in turn), every item of a sequence
/// as its prefix, and any other value equal. Such a change is made of
/// additions only.
fn extends(existing: &Value, desired: &Value) -> bool {
    match (existing, desired) {
        (Value::Map(e), Value::Map(_)) => e
            .iter()
            .all(|(k, ev)| desired.get(k).is_some_and(|dv| extends(ev, dv))),
        (Value::Seq(e), Value::Seq(d)) => {
            e.len() <= d.len() && e.iter().zip(d).all(|(a, b)| a == b)
        }
        _ => existing == desired,
    }
}

/// For a sequence that grows from `items` to the longer `desired`: splits
/// `desired` into one run per existing item, in order, where every entry of
/// a run [extends] that item, or `None` when it cannot be split so.
fn extension_groups(
    tree: &Tree,
    items: &[NodeId],
    desired: &[Value],
) -> Option<Vec<std::ops::Range<usize>>> {
    if items.is_empty() || desired.len() <= items.len() {
        return None;
    }
    let values: Vec<Value> = items.iter().map(|&i| node_value(tree, i)).collect();
    let mut groups: Vec<std::ops::Range<usize>> = Vec::with_capacity(values.len());
    groups.push(0..0);
    for (j, d) in desired.iter().enumerate() {
        let at = groups.len() - 1;
        let open = !groups[at].is_empty();
        if open && at + 1 < values.len() && extends(&values[at + 1], d) {
            groups.push(j..j + 1);
        } else if extends(&values[at], d) {
            groups[at].end = j + 1;
        } else {
            return None;
        }
    }
    (groups.len() == values.len()).then_some(groups)
}

/// Whether rendered text holds a block scalar header (`|`, `>-`, ...).
/// A string as a literal block scalar (` |`, its chomping indicator and
/// its lines at `indent`), as a hand-written file that had one keeps it;
/// `None` when a literal cannot hold it as it is (a first line that starts
/// with a space needs an indentation indicator; control characters,
/// carriage returns and tabs at the start of a line are kept out).
fn literal_text(s: &str, indent: usize) -> Option<String> {
    if !s.contains('\n')
        || s.starts_with([' ', '\n'])
        || s.chars()
            .any(|c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{feff}')
        || s.split('\n').any(|l| l.starts_with('\t'))
    {
        return None;
    }
    let (chomp, body) = match s.strip_suffix('\n') {
        Some(rest) if rest.ends_with('\n') => ("+", rest),
        Some(rest) => ("", rest),
        None => ("-", s),
    };
    let mut out = format!(" |{chomp}\n");
    for line in body.split('\n') {
        if !line.is_empty() {
            out.extend(std::iter::repeat_n(' ', indent));
            out.push_str(line);
        }
        out.push('\n');
    }
    Some(out)
}

fn has_block_scalar(text: &str) -> bool {
    block_scalar_headers(text).next().is_some()
}

/// Whether `text` holds a block scalar that keeps its final line breaks
/// (`|+`, `>+`).
fn keeps_final_breaks(text: &str) -> bool {
    block_scalar_headers(text).any(|h| h.contains('+'))
}

/// The block scalar headers (`|`, `>-`, `|+2`...) that end lines of `text`.
fn block_scalar_headers(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|l| {
        l.split_whitespace().last().filter(|t| {
            t.starts_with(['|', '>'])
                && t[1..]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b'-' || b == b'+')
        })
    })
}

impl Placement {
    /// The placement for keys added deep inside a reconciled value.
    fn default_for(self, flavor: Flavor) -> Placement {
        match flavor {
            Flavor::KfpV2 | Flavor::GoYaml => Placement::Sorted,
            _ => Placement::AsDesired,
        }
    }
}

fn line_start(src: &str, off: usize) -> usize {
    src[..off].rfind('\n').map_or(0, |p| p + 1)
}

/// Where the value of `target` sits inside `whole`, the value of `root`
/// (which contains `target`): the same keys and item positions.
fn value_at<'v>(
    tree: &Tree,
    whole: &'v mut Value,
    root: NodeId,
    target: NodeId,
) -> Option<&'v mut Value> {
    enum Step<'s> {
        Key(&'s str),
        Index(usize),
    }
    let mut steps = Vec::new();
    let mut cur = target;
    while cur != root {
        let p = tree.parent(cur)?;
        match tree.kind(p) {
            Kind::Map => {
                let (k, _) = tree.entries(p).find(|&(_, v)| v == cur)?;
                steps.push(Step::Key(tree.scalar(k)));
            }
            Kind::Seq => steps.push(Step::Index(tree.items(p).position(|i| i == cur)?)),
            _ => return None,
        }
        cur = p;
    }
    let mut at = whole;
    for step in steps.iter().rev() {
        at = match (at, step) {
            (Value::Map(m), Step::Key(k)) => {
                m.iter_mut().rev().find(|(mk, _)| mk == k).map(|(_, v)| v)?
            }
            (Value::Seq(items), Step::Index(i)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(pairs: &[(&str, Value)]) -> Value {
        Value::Map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    fn run(
        src: &str,
        flavor: impl Fn(&Tree) -> Flavor,
        edits: impl Fn(&Tree) -> Vec<Edit>,
    ) -> String {
        let t = Tree::parse(src).unwrap();
        let mut e = Editor::new(&t, flavor(&t));
        for ed in edits(&t) {
            e.apply(ed).unwrap();
        }
        e.finish().unwrap()
    }

    /// Reconciles the node `pick` names to the value it gives, in a
    /// hand-written file.
    fn reconcile_generic(src: &str, pick: impl Fn(&Tree) -> (NodeId, Value)) -> String {
        run(
            src,
            |t| Flavor::Generic(BlockStyle::detect(t)),
            |t| {
                let (node, desired) = pick(t);
                vec![Edit::Reconcile {
                    node,
                    desired,
                    placement: Placement::AsDesired,
                }]
            },
        )
    }

    /// Inserts `spec.nodeSelector: {disktype: ssd}` in the file's own style.
    fn insert_node_selector(src: &str) -> String {
        run(
            src,
            |t| Flavor::Generic(BlockStyle::detect(t)),
            |t| {
                let root = t.documents[0].root.unwrap();
                let spec = t.get_value(root, "spec").unwrap();
                vec![Edit::Insert {
                    map: spec,
                    key: "nodeSelector".into(),
                    value: v(&[("disktype", Value::str("ssd"))]),
                    placement: Placement::End,
                }]
            },
        )
    }

    /// An edit is refused when what it writes would nest past
    /// [`MAX_DEPTH`]; up to it, the output reads back.
    #[test]
    fn edits_do_not_nest_past_the_limit() {
        // The deepest mapping, `MAX_DEPTH - 1` deep, holds `z: 1`.
        let levels = MAX_DEPTH - 1;
        let src: String = (0..levels)
            .map(|i| {
                format!(
                    "{}{}\n",
                    "  ".repeat(i),
                    if i + 1 == levels { "z: 1" } else { "a:" }
                )
            })
            .collect();
        let t = Tree::parse(&src).unwrap();
        let z = (0..t.len() as NodeId)
            .find(|&n| t.kind(n) == Kind::Scalar && t.scalar(n) == "z")
            .unwrap();
        let deepest = t.parent(z).unwrap();
        let insert = |value: Value| Edit::Insert {
            map: deepest,
            key: "k".into(),
            value,
            placement: Placement::End,
        };
        let one = v(&[("x", Value::str("y"))]);
        let mut e = Editor::new(&t, Flavor::Generic(BlockStyle::detect(&t)));
        e.apply(insert(one.clone())).unwrap();
        let out = e.finish().unwrap();
        assert!(Tree::parse(&out).is_ok(), "{out}");
        let mut e = Editor::new(&t, Flavor::Generic(BlockStyle::detect(&t)));
        let err = e.apply(insert(v(&[("x", one)]))).unwrap_err();
        assert!(
            err.message.contains(&format!("{} deep", MAX_DEPTH + 1)),
            "{}",
            err.message
        );
    }

    #[test]
    fn inserts_keep_comments_and_crlf() {
        let src = "# head\r\nspec:\r\n  a: 1  # keep\r\n  # tail\r\nother: x\r\n";
        assert_eq!(
            insert_node_selector(src),
            "# head\r\nspec:\r\n  a: 1  # keep\r\n  nodeSelector:\r\n    disktype: ssd\r\n  # tail\r\nother: x\r\n"
        );
    }

    #[test]
    fn a_nested_map_added_to_a_flow_map_keeps_its_braces() {
        assert_eq!(
            insert_node_selector("spec: {a: 1}\n"),
            "spec: {a: 1, nodeSelector: {disktype: ssd}}\n"
        );
    }

    #[test]
    fn a_flow_null_after_a_commented_colon_gets_no_second_colon() {
        let edit_null = |src: &str| {
            reconcile_generic(src, |t| {
                let root = t.documents[0].root.unwrap();
                let pair = t.children(root).next().unwrap();
                let (_, null) = t.entries(pair).next().unwrap();
                (null, Value::str("x"))
            })
        };
        assert_eq!(edit_null("[? a b:  # c\n,]\n"), "[? a b:  # c\n x,]\n");
        assert_eq!(edit_null("[? a  # c\n]\n"), "[? a  # c\n: x]\n");
    }

    #[test]
    fn a_flow_null_after_a_tag_or_anchor_name_keeps_the_name() {
        let edit_null = |src: &str| {
            reconcile_generic(src, |t| {
                let root = t.documents[0].root.unwrap();
                let (_, map) = t.entries(root).last().unwrap();
                let (key, _) = t.entries(map).last().unwrap();
                (map, v(&[(t.scalar(t.resolve(key)), Value::str("x"))]))
            })
        };
        assert_eq!(edit_null("m: {? !}\n"), "m: {? ! : x}\n");
        assert_eq!(edit_null("m: {&a}\n"), "m: {&a : x}\n");
        assert_eq!(edit_null("m: {!t a}\n"), "m: {!t a: x}\n");
    }

    #[test]
    fn reconcile_appends_to_sequences_and_adds_keys() {
        let src = "tolerations:\n    - key: a\n      operator: Exists\nnodeSelector: {x: y}\n";
        let out = run(
            src,
            |t| Flavor::Generic(BlockStyle::detect(t)),
            |t| {
                let root = t.documents[0].root.unwrap();
                let tol = t.get_value(root, "tolerations").unwrap();
                let ns = t.get_value(root, "nodeSelector").unwrap();
                vec![
                    Edit::Reconcile {
                        node: tol,
                        desired: Value::Seq(vec![
                            v(&[("key", Value::str("a")), ("operator", Value::str("Exists"))]),
                            v(&[("key", Value::str("b")), ("operator", Value::str("Exists"))]),
                        ]),
                        placement: Placement::End,
                    },
                    Edit::Reconcile {
                        node: ns,
                        desired: v(&[("x", Value::str("y")), ("z", Value::str("true"))]),
                        placement: Placement::End,
                    },
                ]
            },
        );
        assert_eq!(
            out,
            "tolerations:\n    - key: a\n      operator: Exists\n    - key: b\n      operator: Exists\nnodeSelector: {x: y, z: 'true'}\n"
        );
    }

    /// Reconciles the sequence at `key` in `src` with `desired`.
    fn reconcile_seq(src: &str, key: &str, desired: Vec<Value>) -> String {
        run(
            src,
            |t| Flavor::Generic(BlockStyle::detect(t)),
            |t| {
                let root = t.documents[0].root.unwrap();
                vec![Edit::Reconcile {
                    node: t.get_value(root, key).unwrap(),
                    desired: Value::Seq(desired.clone()),
                    placement: Placement::End,
                }]
            },
        )
    }

    fn ints(key: &str, xs: &[i64]) -> Value {
        v(&[(key, Value::Seq(xs.iter().map(|&x| Value::Int(x)).collect()))])
    }

    #[test]
    fn a_sequence_that_grows_by_copies_keeps_the_existing_items_text() {
        // Each existing item grows in place into the first of its run; the
        // other items of the run are new, right after it.
        let want = vec![
            ints("a", &[1, 3]),
            ints("a", &[1, 4]),
            ints("a", &[2, 3]),
            ints("a", &[2, 4]),
        ];
        let block = "terms:\n# first\n- a: [1]  # one\n- a:\n  - 2  # two\nend: x\n";
        assert_eq!(
            reconcile_seq(block, "terms", want.clone()),
            "terms:\n# first\n- a: [1, 3]  # one\n- a:\n  - 1\n  - 4\n- a:\n  - 2  # two\n  - 3\n- a:\n  - 2\n  - 4\nend: x\n"
        );
        let flow = "terms: [{a: [1]}, {a: [2]}]  # both\n";
        assert_eq!(
            reconcile_seq(flow, "terms", want.clone()),
            "terms: [{a: [1, 3]}, {a: [1, 4]}, {a: [2, 3]}, {a: [2, 4]}]  # both\n"
        );
        // A run that does not start from its item: the list is written anew
        // (comments outside its text stay where they are).
        assert_eq!(
            reconcile_seq(
                block,
                "terms",
                vec![ints("a", &[5]), ints("a", &[1]), ints("a", &[2])]
            ),
            "terms:\n# first\n- a:\n  - 5\n- a:\n  - 1\n- a:\n  - 2  # two\nend: x\n"
        );
    }

    #[test]
    fn a_multi_line_string_replacing_a_value_takes_the_blanks_after_it() {
        let set = |src: &str| {
            run(
                src,
                |t| Flavor::Generic(BlockStyle::detect(t)),
                |t| {
                    let mut root = t.documents[0].root.unwrap();
                    if t.kind(root) == Kind::Seq {
                        root = t.items(root).next().unwrap();
                    }
                    vec![Edit::Reconcile {
                        node: t.get_value(root, "a").unwrap(),
                        desired: Value::str("p\nq"),
                        placement: Placement::End,
                    }]
                },
            )
        };
        for src in [
            "a: x   \nb: 1\n",
            "a: x\t\nb: 1\n",
            "a: x  # c\nb: 1\n",
            "- a: x  \n  b: 1\n",
        ] {
            let out = set(src);
            let t = Tree::parse(&out).unwrap_or_else(|e| panic!("{src:?} -> {out:?}: {e}"));
            let root = t.documents[0].root.unwrap();
            let root = if t.kind(root) == Kind::Seq {
                t.items(root).next().unwrap()
            } else {
                root
            };
            let a = t.get_value(root, "a").unwrap();
            assert_eq!(node_value(&t, a), Value::str("p\nq"), "{src:?} -> {out:?}");
            assert!(
                !src.contains('#') || out.contains("# c"),
                "{src:?} -> {out:?}"
            );
        }
    }

    #[test]
    fn extension_groups_split_in_order() {
        let t = Tree::parse("s: [{a: [1]}, {a: [2]}]\n").unwrap();
        let root = t.documents[0].root.unwrap();
        let seq = t.get_value(root, "s").unwrap();
        let items: Vec<NodeId> = t.items(seq).collect();
        let d = [ints("a", &[1, 3]), ints("a", &[1, 4]), ints("a", &[2, 3])];
        assert_eq!(extension_groups(&t, &items, &d), Some(vec![0..2, 2..3]));
        // Every existing item needs a run of its own.
        assert_eq!(extension_groups(&t, &items, &d[..2]), None);
        let d = [ints("a", &[1]), ints("a", &[1, 2]), ints("a", &[1, 3])];
        assert_eq!(extension_groups(&t, &items, &d), None);
        assert!(extends(
            &ints("a", &[1]),
            &v(&[("a", Value::Seq(vec![Value::Int(1)])), ("b", Value::Null)])
        ));
        assert!(!extends(&ints("a", &[1, 2]), &ints("a", &[2, 1])));
    }

    #[test]
    fn replacing_a_quoted_value_keeps_the_comment_after_it() {
        let src = "labels:\n  team: \"o\\\"ld\"   # owning team\n  tier: 'it''s'  # tier\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        let labels = t.get_value(root, "labels").unwrap();
        let mut e = Editor::new(&t, Flavor::Generic(BlockStyle::default()));
        e.apply(Edit::Reconcile {
            node: labels,
            desired: v(&[("team", Value::str("vision")), ("tier", Value::str("gold"))]),
            placement: Placement::End,
        })
        .unwrap();
        assert_eq!(
            e.finish().unwrap(),
            "labels:\n  team: vision   # owning team\n  tier: gold  # tier\n"
        );
    }

    /// Sets `a` of `src` to `want` under `flavor` and checks that the
    /// output reads back with `a` as `want` and `b` still 1.
    fn assert_a_reads_back(src: &str, flavor: Flavor, want: &Value) {
        let t = Tree::parse(src).unwrap();
        let node = t.get_value(t.documents[0].root.unwrap(), "a").unwrap();
        let mut e = Editor::new(&t, flavor);
        e.apply(Edit::Reconcile {
            node,
            desired: want.clone(),
            placement: Placement::AsDesired,
        })
        .unwrap();
        let out = e.finish().unwrap();
        let o = Tree::parse(&out).unwrap();
        let root = o.documents[0].root.unwrap();
        assert_eq!(
            &node_value(&o, o.get_value(root, "a").unwrap()),
            want,
            "{flavor:?}: {out:?}"
        );
        assert_eq!(
            node_value(&o, o.get_value(root, "b").unwrap()),
            Value::Int(1)
        );
    }

    /// A blank line of spaces after a value that becomes a multi-line
    /// string would be a content line of a block scalar written there.
    #[test]
    fn a_multi_line_string_before_a_line_of_spaces_reads_back_as_written() {
        let want = Value::str("line one\n  line two");
        for flavor in [Flavor::KfpV1, Flavor::Generic(BlockStyle::default())] {
            assert_a_reads_back("a:\n          \n\nb: 1\n", flavor, &want);
        }
    }

    /// A value that becomes a string ending in several line breaks (a `|+`
    /// block scalar) before an empty line: the scalar would keep that line
    /// as one more break.
    #[test]
    fn a_string_kept_with_its_final_breaks_before_an_empty_line_reads_back_as_written() {
        let want = Value::str("line\n\n");
        for flavor in [Flavor::KfpV1, Flavor::Generic(BlockStyle::default())] {
            for src in ["a:\n- x\n\nb: 1\n", "b: 1\na: old\n\n\n"] {
                assert_a_reads_back(src, flavor, &want);
            }
        }
    }

    /// A key added to a mapping whose only key is an empty explicit key (a
    /// lone `?`) goes at the `?`'s column, after its line.
    #[test]
    fn a_key_added_beside_an_empty_explicit_key_lands_in_its_mapping() {
        let want = Value::Map(vec![
            (String::new(), Value::Null),
            ("k".to_string(), Value::Int(1)),
        ]);
        for src in [
            "m:\n    ?\nn: 1\n",
            "m:\n  - x\n  - ?\nn: 1\n",
            "n: 1\nm:\n ? ",
        ] {
            let t = Tree::parse(src).unwrap();
            let m = t.get_value(t.documents[0].root.unwrap(), "m").unwrap();
            let map = match t.kind(m) {
                Kind::Seq => t.items(m).last().unwrap(),
                _ => m,
            };
            let mut e = Editor::new(&t, Flavor::Generic(BlockStyle::default()));
            e.apply(Edit::Reconcile {
                node: map,
                desired: want.clone(),
                placement: Placement::AsDesired,
            })
            .unwrap();
            let out = e.finish().unwrap();
            let o = Tree::parse(&out).unwrap();
            let root = o.documents[0].root.unwrap();
            let m = o.get_value(root, "m").unwrap();
            let map = match o.kind(m) {
                Kind::Seq => o.items(m).last().unwrap(),
                _ => m,
            };
            assert_eq!(node_value(&o, map), want, "{out:?}");
            assert_eq!(
                node_value(&o, o.get_value(root, "n").unwrap()),
                Value::Int(1)
            );
        }
    }

    #[test]
    fn a_document_added_entry_by_entry_is_the_whole_values_text() {
        let long = "k".repeat(140);
        let entries_yaml = format!(
            "exec-a:\n  tolerations:\n  - key: gpu\n    operator: Exists\n  nodeSelector: {{labels: {{pool: gpu}}}}\nexec-b: {{podMetadata: {{labels: {{'on': 'yes', n: '1'}}}}}}\n? {long}\n: {{x: [1, 2.5, null, 'a: b']}}\nexec-c: [[1], {{}}]\nexec-d: {{}}\nexec-e: {{s: \"two\\nlines\"}}\n"
        );
        let t = Tree::parse(&entries_yaml).unwrap();
        let Value::Map(mut entries) = node_value(&t, t.documents[0].root.unwrap()) else {
            panic!("entries are a map");
        };
        // In the order the SDKs' emitters write them.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let scalar_first = [("k".to_string(), Value::Int(1)), entries[0].clone()];
        let path = ["platforms", "kubernetes", "executors"];
        let nest = |inner: &[(String, Value)]| {
            path.iter().rev().fold(Value::Map(inner.to_vec()), |v, k| {
                Value::Map(vec![(k.to_string(), v)])
            })
        };
        let flavors = [
            Flavor::KfpV2,
            Flavor::KfpV1,
            Flavor::GoYaml,
            Flavor::Generic(BlockStyle::default()),
            Flavor::Generic(BlockStyle {
                step: 4,
                seq_offset: 0,
                item_offset: 2,
            }),
        ];
        for src in ["a: 1\n---\nb: 2\n", "a: 1", "a: 1\n...\nb: 2\n"] {
            let t = Tree::parse(src).unwrap();
            for flavor in flavors {
                for inner in [&entries[..], &scalar_first[..], &entries[1..2]] {
                    for before in [None, Some(1)] {
                        let mut whole = Editor::new(&t, flavor);
                        whole
                            .apply(match before {
                                Some(before) => Edit::InsertDocument {
                                    before,
                                    value: nest(inner),
                                },
                                None => Edit::AppendDocument { value: nest(inner) },
                            })
                            .unwrap();
                        let mut by_entry = Editor::new(&t, flavor);
                        by_entry.add_document(before, &path, inner.to_vec());
                        assert_eq!(
                            by_entry.finish().unwrap(),
                            whole.finish().unwrap(),
                            "{flavor:?} {src:?} {before:?}"
                        );
                    }
                }
            }
            let mut none = Editor::new(&t, Flavor::KfpV2);
            none.add_document(None, &path, Vec::new());
            assert!(none.is_empty());
        }
    }

    #[test]
    fn text_after_a_final_block_scalar_without_a_line_break_keeps_its_value() {
        for (header, want) in [("|", "|-"), ("|+", "|-"), (">2", ">-2"), ("|-", "|-")] {
            let src = format!("s:\n  a: {header}\n    x");
            let t = Tree::parse(&src).unwrap();
            let root = t.documents[0].root.unwrap();
            let map = t.get_value(root, "s").unwrap();
            let mut e = Editor::new(&t, Flavor::Generic(BlockStyle::default()));
            e.apply(Edit::Insert {
                map,
                key: "b".into(),
                value: Value::Int(1),
                placement: Placement::End,
            })
            .unwrap();
            e.apply(Edit::AppendDocument {
                value: v(&[("c", Value::Int(2))]),
            })
            .unwrap();
            let out = e.finish().unwrap();
            // The last line still has no line break.
            assert_eq!(out, format!("s:\n  a: {want}\n    x\n  b: 1\n---\nc: 2"));
            let o = Tree::parse(&out).unwrap();
            let s2 = o.get_value(o.documents[0].root.unwrap(), "s").unwrap();
            assert_eq!(
                node_value(&o, o.get_value(s2, "a").unwrap()),
                Value::str("x")
            );
        }
    }

    #[test]
    fn a_comment_after_an_empty_value_stays_on_its_key_line() {
        let src = "spec:\n  tolerations:   # none yet\n  nodeSelector: # todo\n  x: 1\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        let spec = t.get_value(root, "spec").unwrap();
        let mut e = Editor::new(&t, Flavor::Generic(BlockStyle::default()));
        e.apply(Edit::Reconcile {
            node: spec,
            desired: v(&[
                (
                    "tolerations",
                    Value::Seq(vec![v(&[("key", Value::str("gpu"))])]),
                ),
                ("nodeSelector", v(&[("disk", Value::str("ssd"))])),
                ("x", Value::Int(1)),
            ]),
            placement: Placement::End,
        })
        .unwrap();
        assert_eq!(
            e.finish().unwrap(),
            "spec:\n  tolerations:   # none yet\n  - key: gpu\n  nodeSelector: # todo\n    disk: ssd\n  x: 1\n"
        );
    }

    #[test]
    fn a_key_added_after_a_nested_entry_goes_after_the_comments_indented_under_it() {
        let src = "spec:\n  containers:\n  - name: c\n    # pinned\n# top\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        let spec = t.get_value(root, "spec").unwrap();
        let mut e = Editor::new(&t, Flavor::Generic(BlockStyle::default()));
        e.apply(Edit::Insert {
            map: spec,
            key: "nodeSelector".into(),
            value: v(&[("disk", Value::str("ssd"))]),
            placement: Placement::End,
        })
        .unwrap();
        assert_eq!(
            e.finish().unwrap(),
            "spec:\n  containers:\n  - name: c\n    # pinned\n  nodeSelector:\n    disk: ssd\n# top\n"
        );
    }

    #[test]
    fn refuses_aliases() {
        let src = "base: &b {x: 1}\nuse: *b\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        let u = t.get_value(root, "use").unwrap();
        let mut e = Editor::new(&t, Flavor::Generic(BlockStyle::default()));
        let err = e
            .apply(Edit::Reconcile {
                node: u,
                desired: v(&[("x", Value::Int(2))]),
                placement: Placement::End,
            })
            .unwrap_err();
        assert!(err.message.contains("alias"), "{err}");
        assert_eq!(err.path, "use");
    }

    #[test]
    fn refuses_removing_an_anchor_definition() {
        // Replacing `templates` wholesale would drop `&tol`, which `*tol` uses.
        let src = "templates:\n- name: a\n  tolerations: &tol\n  - {key: x}\nother: *tol\n";
        let t = Tree::parse(src).unwrap();
        let root = t.documents[0].root.unwrap();
        let node = t.get_value(root, "templates").unwrap();
        let mut e = Editor::new(&t, Flavor::Generic(BlockStyle::default()));
        let err = e
            .apply(Edit::Reconcile {
                node,
                desired: Value::Null,
                placement: Placement::End,
            })
            .unwrap_err();
        assert!(err.message.contains("defines a YAML anchor"), "{err}");
        assert_eq!(err.path, "templates[0].tolerations");
    }

    fn replace_a(src: &str, value: &str) -> String {
        run(
            src,
            |_| Flavor::KfpV1,
            |t| {
                vec![Edit::Reconcile {
                    node: t.get_value(t.documents[0].root.unwrap(), "a").unwrap(),
                    desired: Value::str(value),
                    placement: Placement::AsDesired,
                }]
            },
        )
    }

    /// A value replaced by a block scalar keeps the line break that ended
    /// the old value's line instead of adding the scalar's own: no empty
    /// line appears, and a `|+` scalar keeps exactly its trailing breaks.
    #[test]
    fn a_block_scalar_replacing_a_value_adds_no_line_break() {
        for (value, want) in [
            ("i 1>,\n\n\n\n", "a: |+\n  i 1>,\n\n\n\ns: 1\n"),
            ("one\ntwo\n", "a: |\n  one\n  two\ns: 1\n"),
            ("one\ntwo", "a: |-\n  one\n  two\ns: 1\n"),
        ] {
            let out = replace_a("a: x\ns: 1\n", value);
            assert_eq!(out, want);
            let t = Tree::parse(&out).unwrap();
            let a = t.get_value(t.documents[0].root.unwrap(), "a").unwrap();
            assert_eq!(node_value(&t, a), Value::str(value));
        }
        let crlf = replace_a("a: x\r\ns: 1\r\n", "one\ntwo\n");
        assert_eq!(crlf, "a: |\r\n  one\r\n  two\r\ns: 1\r\n");
    }

    /// A hand-written `|` string that changes stays a literal block, at its
    /// own indentation, with the chomping its value needs.
    #[test]
    fn a_literal_block_string_stays_one() {
        let src = "patch: |\n    a: 1\n    b: [x]\nnext: 2\n";
        let out = run(
            src,
            |t| Flavor::Generic(BlockStyle::detect(t)),
            |t| {
                let root = t.documents[0].root.unwrap();
                let p = t.get_value(root, "patch").unwrap();
                vec![Edit::Reconcile {
                    node: p,
                    desired: Value::str("a: 1\nb: [x]\nc:\n  - 3\n"),
                    placement: Placement::AsDesired,
                }]
            },
        );
        assert_eq!(
            out,
            "patch: |\n    a: 1\n    b: [x]\n    c:\n      - 3\nnext: 2\n"
        );
        assert_eq!(literal_text("no break", 2), None);
        assert_eq!(literal_text(" leading space\n", 2), None);
        assert_eq!(literal_text("a\n\n", 2).as_deref(), Some(" |+\n  a\n\n"));
        assert_eq!(literal_text("a\nb", 2).as_deref(), Some(" |-\n  a\n  b\n"));
    }

    /// A key that must precede another goes before it in a hand-written
    /// flow mapping, in the mapping's own format.
    #[test]
    fn a_flow_mapping_takes_a_key_before_another() {
        let src = "p: {\"a\":1, \"c\":3}\n";
        let out = run(
            src,
            |t| Flavor::Generic(BlockStyle::detect(t)),
            |t| {
                let root = t.documents[0].root.unwrap();
                let p = t.get_value(root, "p").unwrap();
                vec![Edit::Insert {
                    map: p,
                    key: "b".into(),
                    value: Value::Int(2),
                    placement: Placement::BeforeKey("c".into()),
                }]
            },
        );
        assert_eq!(out, "p: {\"a\":1, \"b\":2, \"c\":3}\n");
    }
}
