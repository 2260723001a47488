//! The shape of a SchedulingPolicy: one table drives the strict reader
//! (unknown fields, wrong types, with a did-you-mean) and the JSON Schema
//! that `kubectl kfsched schema` prints for editors.

use std::collections::HashMap;

use serde_json::{Map, Value as Json, json};

use crate::diag::Diagnostic;
use crate::suggest::nearest;
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::{Resolved, resolve_plain};

/// A field's type.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    Str,
    Int,
    /// A list of strings.
    StrList,
    /// A map of string to string.
    StrMap,
    Enum(&'static [&'static str]),
    /// A string the validator checks against these values with Kubernetes'
    /// own messages; the JSON Schema lists them for editors.
    OneOf(&'static [&'static str]),
    /// An integer the validator checks to lie in this range (the schema says so too).
    IntIn(i64, i64),
    Object(&'static [Field]),
    List(&'static Shape),
}

/// One field of an object.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: &'static str,
    pub shape: Shape,
    pub required: bool,
    pub doc: &'static str,
}

const fn f(name: &'static str, shape: Shape, doc: &'static str) -> Field {
    Field {
        name,
        shape,
        required: false,
        doc,
    }
}

const fn req(name: &'static str, shape: Shape, doc: &'static str) -> Field {
    Field {
        name,
        shape,
        required: true,
        doc,
    }
}

pub const TOLERATION: &[Field] = &[
    f(
        "key",
        Shape::Str,
        "Taint key the toleration applies to; empty with operator Exists matches every taint.",
    ),
    f(
        "operator",
        Shape::OneOf(&["", "Equal", "Exists"]),
        "Equal (default) or Exists.",
    ),
    f(
        "value",
        Shape::Str,
        "Taint value for operator Equal; must be empty for Exists.",
    ),
    f(
        "effect",
        Shape::OneOf(&["", "NoSchedule", "PreferNoSchedule", "NoExecute"]),
        "NoSchedule, PreferNoSchedule or NoExecute; empty matches every effect.",
    ),
    f(
        "tolerationSeconds",
        Shape::Int,
        "With effect NoExecute: how long the pod stays bound after the taint appears.",
    ),
];

pub const REQUIREMENT: &[Field] = &[
    req(
        "key",
        Shape::Str,
        "Label key (or metadata.name in matchFields).",
    ),
    req(
        "operator",
        Shape::OneOf(&["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
        "In, NotIn, Exists, DoesNotExist, Gt or Lt.",
    ),
    f(
        "values",
        Shape::StrList,
        "Values; one integer for Gt/Lt, none for Exists/DoesNotExist.",
    ),
];

pub const NODE_SELECTOR_TERM: &[Field] = &[
    f(
        "matchExpressions",
        Shape::List(&Shape::Object(REQUIREMENT)),
        "Node label requirements, ANDed.",
    ),
    f(
        "matchFields",
        Shape::List(&Shape::Object(REQUIREMENT)),
        "Node field requirements (metadata.name), ANDed.",
    ),
];

pub const NODE_SELECTOR: &[Field] = &[req(
    "nodeSelectorTerms",
    Shape::List(&Shape::Object(NODE_SELECTOR_TERM)),
    "Terms are ORed; kfsched ANDs this requirement into the component's own.",
)];

pub const PREFERRED_TERM: &[Field] = &[
    req("weight", Shape::IntIn(1, 100), "1-100."),
    req(
        "preference",
        Shape::Object(NODE_SELECTOR_TERM),
        "A node selector term.",
    ),
];

pub const NODE_AFFINITY: &[Field] = &[
    f(
        "requiredDuringSchedulingIgnoredDuringExecution",
        Shape::Object(NODE_SELECTOR),
        "Hard node requirement.",
    ),
    f(
        "preferredDuringSchedulingIgnoredDuringExecution",
        Shape::List(&Shape::Object(PREFERRED_TERM)),
        "Soft node preferences.",
    ),
];

pub const LABEL_SELECTOR_REQ: &[Field] = &[
    req("key", Shape::Str, "Label key."),
    req(
        "operator",
        Shape::OneOf(&["In", "NotIn", "Exists", "DoesNotExist"]),
        "In, NotIn, Exists or DoesNotExist.",
    ),
    f("values", Shape::StrList, "Values for In/NotIn."),
];

pub const LABEL_SELECTOR: &[Field] = &[
    f("matchLabels", Shape::StrMap, "Labels that must all match."),
    f(
        "matchExpressions",
        Shape::List(&Shape::Object(LABEL_SELECTOR_REQ)),
        "Requirements, ANDed.",
    ),
];

pub const POD_AFFINITY_TERM: &[Field] = &[
    f(
        "labelSelector",
        Shape::Object(LABEL_SELECTOR),
        "Pods to be near (or away from).",
    ),
    f(
        "namespaceSelector",
        Shape::Object(LABEL_SELECTOR),
        "Namespaces of those pods.",
    ),
    f("namespaces", Shape::StrList, "Namespaces of those pods."),
    req(
        "topologyKey",
        Shape::Str,
        "Node label that defines co-location.",
    ),
    f(
        "matchLabelKeys",
        Shape::StrList,
        "Pod label keys merged into labelSelector.",
    ),
    f(
        "mismatchLabelKeys",
        Shape::StrList,
        "Pod label keys merged into labelSelector with NotIn.",
    ),
];

pub const WEIGHTED_POD_AFFINITY_TERM: &[Field] = &[
    req("weight", Shape::IntIn(1, 100), "1-100."),
    req(
        "podAffinityTerm",
        Shape::Object(POD_AFFINITY_TERM),
        "The term.",
    ),
];

pub const POD_AFFINITY: &[Field] = &[
    f(
        "requiredDuringSchedulingIgnoredDuringExecution",
        Shape::List(&Shape::Object(POD_AFFINITY_TERM)),
        "Hard pod (anti-)affinity terms.",
    ),
    f(
        "preferredDuringSchedulingIgnoredDuringExecution",
        Shape::List(&Shape::Object(WEIGHTED_POD_AFFINITY_TERM)),
        "Soft pod (anti-)affinity terms.",
    ),
];

pub const AFFINITY: &[Field] = &[
    f(
        "nodeAffinity",
        Shape::Object(NODE_AFFINITY),
        "core/v1 NodeAffinity.",
    ),
    f(
        "podAffinity",
        Shape::Object(POD_AFFINITY),
        "core/v1 PodAffinity (not for KFP v2 tasks).",
    ),
    f(
        "podAntiAffinity",
        Shape::Object(POD_AFFINITY),
        "core/v1 PodAntiAffinity (not for KFP v2 tasks).",
    ),
];

pub const SELECTOR: &[Field] = &[
    f(
        "names",
        Shape::StrList,
        "Globs over the component's names and task paths; * and ? stop at '/', ** crosses levels.",
    ),
    f(
        "images",
        Shape::StrList,
        "Globs over main container images; * matches any character.",
    ),
    f(
        "pipelines",
        Shape::StrList,
        "Globs over the top-level pipeline name.",
    ),
    f(
        "kinds",
        Shape::StrList,
        "Globs over the document kind: PipelineSpec, Workflow, CronWorkflow, Deployment, ...",
    ),
    f(
        "podRoles",
        Shape::List(&Shape::Enum(&["executor", "driver", "importer"])),
        "Which KFP v2 pods: executor (the task's own pod; the default in match), driver, importer. Drivers and importers are reached at admission only (export admission).",
    ),
];

pub const TAINT: &[Field] = &[
    req("key", Shape::Str, "Taint key."),
    f("value", Shape::Str, "Taint value."),
    req(
        "effect",
        Shape::OneOf(&["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        "NoSchedule, PreferNoSchedule or NoExecute.",
    ),
];

pub const NODE_POOL: &[Field] = &[
    req("name", Shape::Str, "Pool name (DNS-1123 label), unique."),
    f("nodes", Shape::StrList, "Node-name globs (live side)."),
    f(
        "nodeSelector",
        Shape::Str,
        "Label selector in kubectl syntax (live side).",
    ),
    f(
        "labels",
        Shape::StrMap,
        "Labels every node of the pool carries.",
    ),
    f(
        "taints",
        Shape::List(&Shape::Object(TAINT)),
        "Taints every node of the pool carries.",
    ),
];

pub const RULE: &[Field] = &[
    req("name", Shape::Str, "Rule name, unique."),
    f(
        "match",
        Shape::Object(SELECTOR),
        "Which components; omitted or empty selects every pod-creating component.",
    ),
    f(
        "exclude",
        Shape::Object(SELECTOR),
        "Components to leave out; any hit wins.",
    ),
    f(
        "pool",
        Shape::Str,
        "Tolerate the pool's taints and require its labels.",
    ),
    f(
        "tolerations",
        Shape::List(&Shape::Object(TOLERATION)),
        "core/v1 Tolerations.",
    ),
    f(
        "nodeSelector",
        Shape::StrMap,
        "Node labels the pod requires.",
    ),
    f("affinity", Shape::Object(AFFINITY), "core/v1 Affinity."),
    f("podLabels", Shape::StrMap, "Labels for the pod."),
    f("podAnnotations", Shape::StrMap, "Annotations for the pod."),
    f(
        "strategy",
        Shape::Enum(&["merge", "replace"]),
        "merge (default) or replace the fields this rule names.",
    ),
];

pub const SPEC: &[Field] = &[
    f(
        "nodePools",
        Shape::List(&Shape::Object(NODE_POOL)),
        "Named groups of nodes.",
    ),
    f(
        "rules",
        Shape::List(&Shape::Object(RULE)),
        "Rules, applied in order.",
    ),
];

pub const METADATA: &[Field] = &[
    f("name", Shape::Str, "Policy name."),
    f(
        "namespace",
        Shape::Str,
        "Ignored; allowed so the policy can be a KRM functionConfig.",
    ),
    f("labels", Shape::StrMap, "Labels."),
    f(
        "annotations",
        Shape::StrMap,
        "Annotations (KRM function annotations go here).",
    ),
];

pub const POLICY: &[Field] = &[
    req(
        "apiVersion",
        Shape::Enum(&["kfsched.dev/v1alpha1"]),
        "kfsched.dev/v1alpha1",
    ),
    req(
        "kind",
        Shape::Enum(&["SchedulingPolicy"]),
        "SchedulingPolicy",
    ),
    f("metadata", Shape::Object(METADATA), "Object metadata."),
    req("spec", Shape::Object(SPEC), "The policy."),
];

/// The YAML path of entry `key` of the mapping at `path`: `a.b`, or
/// `a["x.io/y"]` for a key that is not a plain word.
pub fn entry_path(path: &str, key: &str) -> String {
    let k = kfsched_yaml::tree::path_key(key);
    if path.is_empty() {
        k
    } else if k.starts_with('[') {
        format!("{path}{k}")
    } else {
        format!("{path}.{k}")
    }
}

/// Line and column of every path the reader visited.
pub type Locations = HashMap<String, (usize, usize)>;

/// Reads a node against a shape: JSON out, diagnostics for everything that
/// does not fit, and where each path sits in the file.
pub struct Reader<'t, 'a> {
    pub tree: &'t Tree<'a>,
    pub file: String,
    pub diags: Vec<Diagnostic>,
    /// Where each path's value sits (its key when the value is left out,
    /// as in `key:`).
    pub locs: Locations,
    /// Where each map entry's key sits, for what is wrong with the key
    /// itself (an invalid or deprecated label key).
    pub keys: Locations,
}

impl<'t, 'a> Reader<'t, 'a> {
    pub fn new(tree: &'t Tree<'a>, file: &str) -> Self {
        Reader {
            tree,
            file: file.to_string(),
            diags: Vec::new(),
            locs: HashMap::new(),
            keys: HashMap::new(),
        }
    }

    fn diag(&mut self, node: NodeId, path: &str, message: String) {
        let (line, col) = self.tree.position(node);
        self.diags.push(Diagnostic {
            file: self.file.clone(),
            line,
            col,
            path: path.to_string(),
            message,
        });
    }

    pub fn read(&mut self, node: NodeId, shape: Shape, path: &str) -> Json {
        let tree = self.tree;
        self.locs.insert(path.to_string(), tree.position(node));
        if tree.node(node).kind == Kind::Alias {
            self.diag(
                node,
                path,
                "YAML aliases are not supported in a policy; write the value out".into(),
            );
            return Json::Null;
        }
        match shape {
            Shape::Str | Shape::Enum(_) | Shape::OneOf(_) => self.read_str(node, shape, path),
            Shape::Int | Shape::IntIn(..) => self.read_int(node, path),
            Shape::StrList => self.read_str_list(node, path),
            Shape::StrMap => self.read_str_map(node, path),
            Shape::List(item_shape) => self.read_list(node, *item_shape, path),
            Shape::Object(fields) => self.read_object(node, fields, path),
        }
    }

    fn read_str(&mut self, node: NodeId, shape: Shape, path: &str) -> Json {
        let Some(s) = self.string(node, path) else {
            return Json::Null;
        };
        if let Shape::Enum(options) = shape {
            if !options.contains(&s.as_str()) {
                let hint = nearest(&s, options.iter().copied())
                    .map(|n| format!("; did you mean {n:?}?"))
                    .unwrap_or_default();
                let opts: Vec<String> = options.iter().map(|o| format!("{o:?}")).collect();
                self.diag(
                    node,
                    path,
                    format!(
                        "Unsupported value: {s:?}: supported values: {}{hint}",
                        opts.join(", ")
                    ),
                );
            }
        }
        Json::String(s)
    }

    fn read_int(&mut self, node: NodeId, path: &str) -> Json {
        let tree = self.tree;
        let n = tree.node(node);
        if n.kind == Kind::Scalar && !n.style.is_quoted() {
            let s = tree.scalar(node);
            if resolve_plain(s) == Resolved::Int {
                if let kfsched_yaml::Value::Int(i) = kfsched_yaml::value::plain_value(s) {
                    return Json::from(i);
                }
            }
        }
        let what = describe(tree, node);
        self.diag(node, path, format!("must be an integer, got {what}"));
        Json::Null
    }

    fn read_str_list(&mut self, node: NodeId, path: &str) -> Json {
        let tree = self.tree;
        let n = tree.node(node);
        if n.kind != Kind::Seq {
            let what = describe(tree, node);
            self.diag(node, path, format!("must be a list of strings, got {what}"));
            return Json::Null;
        }
        let mut out = Vec::new();
        for (i, item) in tree.items(node).enumerate() {
            let p = format!("{path}[{i}]");
            self.locs.insert(p.clone(), tree.position(item));
            if let Some(s) = self.string(item, &p) {
                out.push(Json::String(s));
            }
        }
        Json::Array(out)
    }

    fn read_str_map(&mut self, node: NodeId, path: &str) -> Json {
        let tree = self.tree;
        let n = tree.node(node);
        if n.kind != Kind::Map {
            let what = describe(tree, node);
            self.diag(node, path, format!("must be a map of strings, got {what}"));
            return Json::Null;
        }
        let mut out = Map::new();
        let mut seen: Vec<String> = Vec::new();
        for (k, v) in tree.entries(node) {
            let key = tree.scalar(k).to_string();
            let p = entry_path(path, &key);
            self.keys.insert(p.clone(), tree.position(k));
            self.locs.insert(p.clone(), self.value_position(k, v));
            if seen.contains(&key) {
                self.diag(k, &p, format!("duplicate key {key:?}"));
                continue;
            }
            seen.push(key.clone());
            if let Some(s) = self.string(v, &p) {
                out.insert(key, Json::String(s));
            }
        }
        Json::Object(out)
    }

    fn read_list(&mut self, node: NodeId, item_shape: Shape, path: &str) -> Json {
        let tree = self.tree;
        let n = tree.node(node);
        if n.kind != Kind::Seq {
            let what = describe(tree, node);
            self.diag(node, path, format!("must be a list, got {what}"));
            return Json::Null;
        }
        let items: Vec<NodeId> = tree.items(node).collect();
        Json::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| self.read(item, item_shape, &format!("{path}[{i}]")))
                .collect(),
        )
    }

    fn read_object(&mut self, node: NodeId, fields: &[Field], path: &str) -> Json {
        let tree = self.tree;
        let n = tree.node(node);
        if n.kind != Kind::Map {
            if tree.is_null(node) {
                return Json::Object(Map::new());
            }
            let what = describe(tree, node);
            self.diag(node, path, format!("must be a mapping, got {what}"));
            return Json::Null;
        }
        let mut out = Map::new();
        let entries: Vec<(NodeId, NodeId)> = tree.entries(node).collect();
        for (k, v) in entries {
            let key = tree.scalar(k).to_string();
            let p = entry_path(path, &key);
            let Some(field) = fields.iter().find(|fl| fl.name == key) else {
                if let Some(place) = belongs(&key) {
                    self.diag(
                        k,
                        &p,
                        format!("unknown field {key:?} here: {key:?} goes {place}; check the indentation"),
                    );
                    continue;
                }
                let hint = nearest(&key, fields.iter().map(|fl| fl.name))
                    .map(|n| format!("; did you mean {n:?}?"))
                    .unwrap_or_else(|| {
                        let names: Vec<&str> = fields.iter().map(|fl| fl.name).collect();
                        format!("; known fields: {}", names.join(", "))
                    });
                self.diag(k, &p, format!("unknown field {key:?}{hint}"));
                continue;
            };
            if out.contains_key(&key) {
                self.diag(k, &p, format!("duplicate key {key:?}"));
                continue;
            }
            self.keys.insert(p.clone(), tree.position(k));
            // A null label selector is not an empty one: in a pod
            // (anti-)affinity term it selects no pod (or the pod's own
            // namespace), `{}` every pod (or every namespace).
            let null_stays = matches!(field.name, "labelSelector" | "namespaceSelector");
            if tree.is_null(v) && (null_stays || !matches!(field.shape, Shape::Object(_))) {
                self.locs.insert(p.clone(), self.value_position(k, v));
                if null_stays {
                    out.insert(key, Json::Null);
                }
                continue;
            }
            let val = self.read(v, field.shape, &p);
            out.insert(key, val);
        }
        let misspelled: Vec<&str> = tree
            .entries(node)
            .filter_map(|(k, _)| {
                let key = tree.scalar(k);
                if fields.iter().any(|fl| fl.name == key) {
                    None
                } else {
                    nearest(key, fields.iter().map(|fl| fl.name))
                }
            })
            .collect();
        for fl in fields.iter().filter(|fl| fl.required) {
            // A misspelt key already has an error that names this field.
            if !out.contains_key(fl.name) && !misspelled.contains(&fl.name) {
                let p = if path.is_empty() {
                    fl.name.to_string()
                } else {
                    format!("{path}.{}", fl.name)
                };
                self.diag(
                    node,
                    &p,
                    format!("Required value: {:?} must be set", fl.name),
                );
            }
        }
        Json::Object(out)
    }

    /// Where the value `v` of key `k` sits: the key when the value is left
    /// out (`key:` has an empty null just past the colon).
    fn value_position(&self, k: NodeId, v: NodeId) -> (usize, usize) {
        let tree = self.tree;
        let n = tree.node(v);
        if n.kind == Kind::Scalar && !n.style.is_quoted() && tree.scalar(v).is_empty() {
            tree.position(k)
        } else {
            tree.position(v)
        }
    }

    fn string(&mut self, node: NodeId, path: &str) -> Option<String> {
        let tree = self.tree;
        let n = tree.node(node);
        if n.kind != Kind::Scalar {
            let what = describe(tree, node);
            self.diag(node, path, format!("must be a string, got {what}"));
            return None;
        }
        let s = tree.scalar(node);
        if !n.style.is_quoted() && !n.tagged {
            match resolve_plain(s) {
                Resolved::Str | Resolved::Timestamp | Resolved::Merge | Resolved::Value => {}
                Resolved::Null => return Some(String::new()),
                other => {
                    let t = match other {
                        Resolved::Bool => "a boolean",
                        Resolved::Int => "an integer",
                        _ => "a number",
                    };
                    self.diag(
                        node,
                        path,
                        format!("must be a string, got {t} ({s}); quote it: \"{s}\""),
                    );
                    return None;
                }
            }
        }
        Some(s.to_string())
    }
}

fn describe(tree: &Tree, node: NodeId) -> String {
    let n = tree.node(node);
    match n.kind {
        Kind::Map => "a mapping".into(),
        Kind::Seq => "a list".into(),
        Kind::Alias => "an alias".into(),
        Kind::Scalar => {
            let s = tree.scalar(node);
            if n.style.is_quoted() {
                format!("the string {s:?}")
            } else {
                match resolve_plain(s) {
                    Resolved::Null => "null".into(),
                    Resolved::Bool => format!("the boolean {s}"),
                    Resolved::Int => format!("the integer {s}"),
                    Resolved::Float => format!("the number {s}"),
                    _ => format!("the string {s:?}"),
                }
            }
        }
    }
}

/// The JSON Schema (draft 2020-12) of a SchedulingPolicy.
pub fn json_schema() -> Json {
    let mut root = object_schema(POLICY);
    if let Json::Object(m) = &mut root {
        m.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        m.insert(
            "$id".into(),
            json!("https://kfsched.dev/schemas/v1alpha1/schedulingpolicy.json"),
        );
        m.insert("title".into(), json!("SchedulingPolicy"));
        m.insert(
            "description".into(),
            json!("kfsched SchedulingPolicy: which pipeline components tolerate which taints and land on which nodes."),
        );
    }
    root
}

fn shape_schema(shape: Shape) -> Json {
    match shape {
        Shape::Str => json!({"type": "string"}),
        Shape::Int => json!({"type": "integer"}),
        Shape::StrList => json!({"type": "array", "items": {"type": "string"}, "minItems": 1}),
        Shape::StrMap => json!({"type": "object", "additionalProperties": {"type": "string"}}),
        Shape::Enum(v) | Shape::OneOf(v) => json!({"type": "string", "enum": v}),
        Shape::IntIn(min, max) => json!({"type": "integer", "minimum": min, "maximum": max}),
        Shape::Object(fields) => object_schema(fields),
        Shape::List(item) => json!({"type": "array", "items": shape_schema(*item)}),
    }
}

fn object_schema(fields: &[Field]) -> Json {
    let mut props = Map::new();
    for fl in fields {
        let mut s = shape_schema(fl.shape);
        if let Json::Object(m) = &mut s {
            m.insert("description".into(), json!(fl.doc));
        }
        props.insert(fl.name.to_string(), s);
    }
    let required: Vec<&str> = fields
        .iter()
        .filter(|fl| fl.required)
        .map(|fl| fl.name)
        .collect();
    let mut m = Map::new();
    m.insert("type".into(), json!("object"));
    m.insert("additionalProperties".into(), json!(false));
    m.insert("properties".into(), Json::Object(props));
    if !required.is_empty() {
        m.insert("required".into(), json!(required));
    }
    Json::Object(m)
}

/// Where a policy field that is not known at some place belongs: a field
/// of another level written at the wrong indentation gets that, not a
/// did-you-mean for a neighbour (`names` at rule level is not `name`).
fn belongs(key: &str) -> Option<&'static str> {
    Some(match key {
        "names" | "images" | "pipelines" | "kinds" | "podRoles" => {
            "under a rule's `match:` or `exclude:`"
        }
        "tolerations" | "affinity" | "pool" | "podLabels" | "podAnnotations" | "strategy" => {
            "on a rule (an item of `spec.rules`), beside `match:`"
        }
        "nodes" | "taints" => "on a node pool (an item of `spec.nodePools`)",
        "rules" | "nodePools" => "under `spec:`",
        _ => return None,
    })
}
