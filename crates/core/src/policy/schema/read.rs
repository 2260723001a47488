//! The strict reader: a policy node read against the shape tables, with
//! a diagnostic for everything that does not fit and the place of every
//! path in the file.

use kfsched_yaml::hash::HashMap;

use serde_json::{Map, Value as Json};

use super::{Field, Shape};
use crate::diag::Diagnostic;
use crate::suggest::nearest;
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::{Resolved, resolve_plain};

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
            locs: HashMap::default(),
            keys: HashMap::default(),
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
        if !n.style.is_quoted() && !n.tagged() {
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

/// Where a policy field that is not known at some place belongs: a field
/// of another level written at the wrong indentation gets that, not a
/// did-you-mean for a neighbour (`names` at rule level is not `name`).
fn belongs(key: &str) -> Option<&'static str> {
    Some(match key {
        "names" | "images" | "pipelines" | "kinds" | "podRoles" => {
            "under a rule's `match:` or `exclude:`"
        }
        "tolerations"
        | "affinity"
        | "pool"
        | "podLabels"
        | "podAnnotations"
        | "strategy"
        | "priorityClassName"
        | "schedulerName"
        | "runtimeClassName"
        | "topologySpreadConstraints" => "on a rule (an item of `spec.rules`), beside `match:`",
        "nodes" | "taints" => "on a node pool (an item of `spec.nodePools`)",
        "rules" | "nodePools" => "under `spec:`",
        _ => return None,
    })
}
