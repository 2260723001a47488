//! An Argo template's `podSpecPatch`: where `runtimeClassName` and
//! `topologySpreadConstraints` reach the pod of a template, which has no
//! fields of its own for them.
//!
//! Argo applies the workflow's `spec.podSpecPatch`, then the template's, as
//! strategic merge patches on the pod spec it built (`ApplyPodSpecPatch`).
//! The pod spec has neither field before the patches, so a template's
//! value is the pod's, except where the workflow's patch sets the field
//! too: a strategic merge then combines the two lists by `topologyKey`
//! alone (merging two constraints that differ in `whenUnsatisfiable` into
//! one), so kfsched does not write under a workflow patch that sets them.
//!
//! The patch is a YAML or JSON document in a string. kfsched edits that
//! document as it edits a file (its own layout kept, a JSON patch stays
//! JSON) and writes the string back; a template without a patch gets one
//! in JSON (as kfp 1.8 writes its own), keys sorted.

use kfsched_yaml::BlockStyle;
use kfsched_yaml::Value;
use kfsched_yaml::block::FlowFormat;
use kfsched_yaml::edit::{Edit, Editor, Flavor, Placement};
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::node_value;

use super::field;
use super::podspec::spec_only_fields;
use crate::scheduling::{Sched, spread_from_raw};

pub(crate) const KEY: &str = "podSpecPatch";

/// A new patch's text: JSON on one line, as Python's `json.dumps` writes
/// it (kfp 1.8 writes its own podSpecPatch so).
const JSON: FlowFormat = FlowFormat {
    json: true,
    colon_space: true,
    comma_space: true,
    step: None,
    tabs: false,
};

/// The fields kfsched writes through the patch.
const FIELDS: [&str; 2] = ["runtimeClassName", "topologySpreadConstraints"];

/// A patch's document as a value: `Ok(None)` for an empty patch.
fn parse(text: &str) -> Result<Option<Value>, String> {
    let tree = Tree::parse(text).map_err(|e| {
        format!(
            "is not valid YAML or JSON (line {}, column {}: {})",
            e.line, e.col, e.message
        )
    })?;
    let Some(root) = tree.documents.first().and_then(|d| d.root) else {
        return Ok(None);
    };
    match node_value(&tree, root) {
        Value::Null => Ok(None),
        v @ Value::Map(_) => Ok(Some(v)),
        _ => Err("is not a mapping of pod spec fields".into()),
    }
}

/// The text of the patch at `node`, when it is a string.
fn text<'t>(tree: &'t Tree, node: NodeId) -> Option<&'t str> {
    (tree.kind(node) == Kind::Scalar)
        .then(|| tree.str_value(node))
        .flatten()
}

/// Reads the two fields as the pod gets them from the workflow's patch
/// (`workflow`) and the template's.
pub(crate) fn read(tree: &Tree, workflow: Option<NodeId>, template: Option<NodeId>, s: &mut Sched) {
    let value = |n: Option<NodeId>| {
        n.and_then(|n| text(tree, n))
            .and_then(|t| parse(t).ok().flatten())
    };
    let (wf, own) = (value(workflow), value(template));
    let pick = |key: &str| {
        own.as_ref()
            .and_then(|v| v.get(key))
            .or_else(|| wf.as_ref().and_then(|v| v.get(key)))
            .filter(|v| !v.is_null())
            .cloned()
    };
    s.runtime_class_name = pick("runtimeClassName").filter(|v| !v.is_empty_or_null());
    let list = |v: &Option<Value>| -> Vec<Value> {
        v.as_ref()
            .and_then(|v| v.get("topologySpreadConstraints"))
            .and_then(Value::as_seq)
            .map(<[Value]>::to_vec)
            .unwrap_or_default()
    };
    // The template's constraints, then the workflow's whose topologyKey it
    // does not name (a strategic merge puts the patch's first).
    let mine = list(&own);
    let key = |t: &Value| t.get("topologyKey").and_then(Value::scalar_text);
    let mut all = mine.clone();
    all.extend(
        list(&wf)
            .into_iter()
            .filter(|w| !mine.iter().any(|m| key(m) == key(w))),
    );
    s.topology_spread = all.iter().map(spread_from_raw).collect();
}

/// Why the template's patch cannot be written, when a change needs it to
/// be: the message names what to do, and the node is where the problem is.
pub(crate) fn refusal(
    tree: &Tree,
    spec: Option<NodeId>,
    template: NodeId,
    fields: &[&str],
) -> Option<(NodeId, String)> {
    if let Some(wf) = spec.and_then(|s| field(tree, s, KEY)) {
        let value = text(tree, wf).map(parse);
        if let Some(Ok(Some(v))) = value {
            if let Some(k) = fields.iter().find(|k| v.get(k).is_some()) {
                return Some((
                    wf,
                    format!(
                        "the workflow's spec.podSpecPatch sets {k}, which Argo merges with each template's podSpecPatch by strategic merge (topology spread constraints by topologyKey alone); kfsched does not write {k} under it: move it into the templates' podSpecPatch"
                    ),
                ));
            }
        }
    }
    let own = field(tree, template, KEY)?;
    let Some(t) = text(tree, own) else {
        return Some((own, "the template's podSpecPatch is not a string".into()));
    };
    match parse(t) {
        Err(e) => Some((
            own,
            format!(
                "the template's podSpecPatch {e}, so kfsched cannot add {} to it; fix it (Argo fails the pod too)",
                fields.join(" and ")
            ),
        )),
        Ok(Some(v)) => {
            let list = v.get("topologySpreadConstraints")?;
            let directive = list
                .as_seq()
                .is_some_and(|l| l.iter().any(|x| x.get("$patch").is_some()));
            let not_list = !matches!(list, Value::Seq(_) | Value::Null);
            (fields.contains(&"topologySpreadConstraints") && (directive || not_list)).then(|| {
                (
                    own,
                    "the template's podSpecPatch holds topologySpreadConstraints that are not a plain list (a $patch directive, or not a list): kfsched does not edit them; write them out as a list".into(),
                )
            })
        }
        Ok(None) => None,
    }
}

/// The fields a change writes through the patch.
pub(crate) fn fields_of(c: crate::scheduling::Changed) -> Vec<&'static str> {
    let mut out = Vec::new();
    if c.runtime_class_name {
        out.push(FIELDS[0]);
    }
    if c.topology_spread {
        out.push(FIELDS[1]);
    }
    out
}

/// The edit that writes a change's `runtimeClassName` and
/// `topologySpreadConstraints` into the template's patch (none when the
/// change has neither; [`refusal`] has been asked first).
pub(crate) fn edit(
    tree: &Tree,
    template: NodeId,
    ch: &super::Change,
    placement: &Placement,
) -> Option<Edit> {
    let set = spec_only_fields(ch);
    if set.is_empty() {
        return None;
    }
    let existing = field(tree, template, KEY).and_then(|n| Some((n, text(tree, n)?)));
    let new_text = match existing {
        Some((_, t)) if matches!(parse(t), Ok(Some(_))) => edit_text(t, &set)?,
        _ => JSON.text(
            &Value::Map(
                set.iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
            ),
            0,
        ),
    };
    Some(match tree.get_value(template, KEY) {
        Some(node) => Edit::Reconcile {
            node,
            desired: Value::Str(new_text),
            placement: Placement::AsDesired,
        },
        None => Edit::Insert {
            map: template,
            key: KEY.into(),
            value: Value::Str(new_text),
            placement: placement.clone(),
        },
    })
}

/// The patch document `text` with the fields set, its layout kept.
fn edit_text(text: &str, set: &[(&'static str, Value)]) -> Option<String> {
    let tree = Tree::parse(text).ok()?;
    let root = tree.documents.first().and_then(|d| d.root)?;
    let mut editor = Editor::new(&tree, Flavor::Generic(BlockStyle::detect(&tree)));
    for (key, value) in set {
        let edit = match tree.get_value(root, key) {
            Some(node) => Edit::Reconcile {
                node,
                desired: value.clone(),
                placement: Placement::AsDesired,
            },
            // runtimeClassName before topologySpreadConstraints, whichever
            // a run added first.
            None => Edit::Insert {
                map: root,
                key: key.to_string(),
                value: value.clone(),
                placement: match tree.get_value(root, FIELDS[1]) {
                    Some(_) if *key == FIELDS[0] => Placement::BeforeKey(FIELDS[1].into()),
                    _ => Placement::End,
                },
            },
        };
        editor.apply(edit).ok()?;
    }
    editor.finish().ok()
}
