//! Fast readers for node snapshots. A `kubectl get nodes -o yaml` of
//! 5,000 nodes is about 25 MB, of which `check` needs a few keys per node
//! (name, labels, taints, unschedulable, allocatable); building a span
//! tree of it costs most of a check's time.
//!
//! - JSON (`-o json`) is read with serde into structs that hold only those
//!   keys (the others are skipped by the deserializer).
//! - YAML as kubectl writes it (block style) is read line by line,
//!   following indentation into the paths that matter and skipping every
//!   other key's lines, while [`kfsched_yaml::quick`] checks the whole
//!   text's syntax beside it.
//!
//! Both read PriorityClasses too (`kubectl get nodes,priorityclasses`).
//! Either gives up (`None`) on anything it does not expect: a flow
//! collection or block scalar where it reads, a Pod, a value that does not
//! parse. The caller then reads the snapshot with the full parser, which
//! reports problems at their line and column.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use serde::Deserialize;

use super::classes::PriorityClass;
use super::node::{Allocatable, Node};
use super::quantity::Quantity;

/// What a fast reader read: the nodes and the PriorityClasses.
pub(super) type Read = (Vec<Node>, Vec<PriorityClass>);

/// Nodes read by a fast reader, or `None` to read the snapshot fully.
pub(super) fn read(text: &str) -> Option<Read> {
    let body = text.trim_start_matches('\u{feff}').trim_start();
    if body.starts_with('{') {
        return json(body);
    }
    // Nesting past the limit is refused as the full read refuses it.
    let syntax_ok = || kfsched_yaml::quick::accepts_within(text, kfsched_yaml::tree::MAX_DEPTH);
    let (nodes, syntax_ok) = rayon::join(|| yaml(text), syntax_ok);
    nodes.filter(|_| syntax_ok)
}

#[derive(Deserialize)]
struct Obj {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: Meta,
    #[serde(default)]
    spec: Spec,
    #[serde(default)]
    status: Status,
    #[serde(default)]
    items: Vec<Obj>,
    /// A PriorityClass's fields.
    value: Option<i32>,
    #[serde(default, rename = "globalDefault")]
    global_default: bool,
    #[serde(rename = "preemptionPolicy")]
    preemption_policy: Option<String>,
}

#[derive(Deserialize, Default)]
struct Meta {
    name: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct Spec {
    #[serde(default)]
    taints: Vec<Taint>,
    #[serde(default)]
    unschedulable: bool,
}

#[derive(Deserialize, Default)]
struct Status {
    #[serde(default)]
    allocatable: BTreeMap<String, String>,
}

fn json(text: &str) -> Option<Read> {
    let root: Obj = serde_json::from_str(text).ok()?;
    let objs = match root.kind.as_str() {
        "List" | "NodeList" => root.items,
        "Node" => vec![root],
        _ => return None,
    };
    let mut nodes = Vec::with_capacity(objs.len());
    let mut classes = Vec::new();
    for o in objs {
        match o.kind.as_str() {
            "Node" => nodes.push(node(
                o.metadata.name?,
                o.metadata.labels,
                o.spec.taints,
                o.spec.unschedulable,
                &o.status.allocatable,
            )?),
            "PriorityClass" => classes.push(PriorityClass {
                name: o.metadata.name?,
                value: o.value?,
                global_default: o.global_default,
                never_preempts: o.preemption_policy.as_deref() == Some("Never"),
            }),
            _ => return None,
        }
    }
    Some((nodes, classes))
}

/// A node from its parts; `None` when a part would be an error.
fn node(
    name: String,
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    unschedulable: bool,
    alloc: &BTreeMap<String, String>,
) -> Option<Node> {
    if taints.iter().any(|t| {
        !matches!(
            t.effect.as_str(),
            "NoSchedule" | "PreferNoSchedule" | "NoExecute"
        )
    }) {
        return None;
    }
    let mut list = BTreeMap::new();
    for (k, v) in alloc {
        list.insert(k.clone(), Quantity::parse(v).ok()?);
    }
    Some(Node {
        name,
        labels,
        taints,
        unschedulable,
        allocatable: Some(Allocatable::from_list(&list)),
        pods: Vec::new(),
        pool: None,
    })
}

/// Where a block mapping or sequence sits among the paths that are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// A document root, which is a Node or a List.
    Root,
    Items,
    Item,
    Meta,
    Labels,
    Spec,
    Taints,
    Taint,
    Status,
    Alloc,
}

impl Path {
    /// The path a key's value takes, when it is read.
    fn child(self, key: &str) -> Option<Path> {
        Some(match (self, key) {
            (Path::Root, "items") => Path::Items,
            (Path::Root | Path::Item, "metadata") => Path::Meta,
            (Path::Root | Path::Item, "spec") => Path::Spec,
            (Path::Root | Path::Item, "status") => Path::Status,
            (Path::Meta, "labels") => Path::Labels,
            (Path::Spec, "taints") => Path::Taints,
            (Path::Status, "allocatable") => Path::Alloc,
            _ => return None,
        })
    }

    /// Whether a key's scalar value is read.
    fn reads(self, key: &str) -> bool {
        matches!(
            (self, key),
            (
                Path::Root | Path::Item,
                "kind" | "value" | "globalDefault" | "preemptionPolicy"
            ) | (Path::Meta, "name")
                | (Path::Labels | Path::Alloc, _)
                | (Path::Spec, "unschedulable")
                | (Path::Taint, "key" | "value" | "effect")
        )
    }
}

/// One open block collection: a mapping whose keys sit at `indent`, or a
/// sequence whose `- ` sit there.
struct Frame {
    indent: usize,
    path: Path,
}

/// What the current object (a document root or a List item) holds so far.
#[derive(Default)]
struct Object {
    kind: Option<String>,
    name: Option<String>,
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    unschedulable: bool,
    alloc: BTreeMap<String, String>,
    /// A PriorityClass's `value`, `globalDefault` and `preemptionPolicy`.
    value: Option<String>,
    global_default: Option<String>,
    preemption_policy: Option<String>,
}

/// The line-by-line reader for kubectl's block YAML.
#[derive(Default)]
struct Scan {
    frames: Vec<Frame>,
    /// A key whose value is on the next lines: its path and column.
    pending: Option<(Path, usize)>,
    /// Lines deeper than this column belong to a key that is not read.
    skip: Option<usize>,
    root: Object,
    item: Option<Object>,
    nodes: Vec<Node>,
    classes: Vec<PriorityClass>,
}

/// A scalar as written after `key: `; `None` for what is not read here
/// (flow collections other than `{}`/`[]`, block scalars, comments, escapes).
fn scalar(v: &str) -> Option<String> {
    let v = v.trim_end();
    if v.contains(" #") {
        return None;
    }
    if let Some(inner) = v.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        return (!inner.contains(['\\', '"'])).then(|| inner.to_string());
    }
    if let Some(inner) = v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        return Some(inner.replace("''", "'"));
    }
    if v.starts_with(['{', '[', '|', '>', '&', '*', '!', '"', '\'']) || v.is_empty() {
        return None;
    }
    Some(v.to_string())
}

impl Scan {
    fn object(&mut self) -> &mut Object {
        match &mut self.item {
            Some(i) => i,
            None => &mut self.root,
        }
    }

    /// Ends the current List item.
    fn end_item(&mut self) -> Option<()> {
        if let Some(o) = self.item.take() {
            self.push(o)?;
        }
        Some(())
    }

    fn push(&mut self, o: Object) -> Option<()> {
        match o.kind.as_deref() {
            Some("Node") => {
                let n = node(o.name?, o.labels, o.taints, o.unschedulable, &o.alloc)?;
                self.nodes.push(n);
            }
            Some("PriorityClass") => self.classes.push(PriorityClass {
                name: o.name?,
                value: o.value?.parse().ok()?,
                global_default: match o.global_default.as_deref() {
                    None | Some("false") => false,
                    Some("true") => true,
                    Some(_) => return None,
                },
                never_preempts: o.preemption_policy.as_deref() == Some("Never"),
            }),
            _ => return None,
        }
        Some(())
    }

    /// Ends a document: its root is a Node, or a List whose items are done.
    fn end_document(&mut self) -> Option<()> {
        self.end_item()?;
        let root = std::mem::take(&mut self.root);
        match root.kind.as_deref() {
            Some("List" | "NodeList" | "PriorityClassList") => {}
            Some("Node" | "PriorityClass") => self.push(root)?,
            None if self.frames.is_empty() => {}
            _ => return None,
        }
        self.frames.clear();
        self.pending = None;
        self.skip = None;
        Some(())
    }

    fn line(&mut self, raw: &str) -> Option<()> {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let content = line.trim_start_matches(' ');
        let indent = line.len() - content.len();
        if content.is_empty() || content.starts_with('#') {
            return Some(());
        }
        if content.starts_with('\t') {
            return None;
        }
        if indent == 0 && (content.starts_with("---") || content.starts_with("...")) {
            return self.end_document();
        }
        if let Some(s) = self.skip {
            // Deeper lines, and an indentless sequence at the key's column.
            if indent > s || (indent == s && (content.starts_with("- ") || content == "-")) {
                return Some(());
            }
            self.skip = None;
        }
        if self.frames.is_empty() {
            if indent != 0 {
                return None;
            }
            self.frames.push(Frame {
                indent: 0,
                path: Path::Root,
            });
        }
        if let Some((path, at)) = self.pending.take() {
            // The value of a read key: a sequence at or right of its column,
            // or a mapping right of it.
            let seq = content.starts_with("- ") || content == "-";
            let is_seq_path = matches!(path, Path::Items | Path::Taints);
            let opens = if is_seq_path {
                seq && indent >= at
            } else {
                !seq && indent > at
            };
            if opens {
                self.frames.push(Frame { indent, path });
            } else if indent > at {
                return None;
            }
        }
        while self.frames.last().is_some_and(|f| f.indent > indent) {
            if self.frames.pop().is_some_and(|f| f.path == Path::Items) {
                self.end_item()?;
            }
        }
        let top = self.frames.last()?;
        if top.indent != indent {
            return None;
        }
        let path = top.path;
        if let Some(rest) = content.strip_prefix("- ") {
            let element = match path {
                Path::Items => {
                    self.end_item()?;
                    self.item = Some(Object::default());
                    Path::Item
                }
                Path::Taints => {
                    self.object().taints.push(Taint::default());
                    Path::Taint
                }
                _ => return None,
            };
            self.frames.push(Frame {
                indent: indent + 2,
                path: element,
            });
            return self.key(rest, indent + 2, element);
        }
        if matches!(path, Path::Items | Path::Taints) {
            // A key at a sequence's column ends it (`taints:` indentless).
            self.frames.pop();
            if path == Path::Items {
                self.end_item()?;
            }
            let parent = self.frames.last()?;
            if parent.indent != indent {
                return None;
            }
            let p = parent.path;
            return self.key(content, indent, p);
        }
        self.key(content, indent, path)
    }

    /// A `key: value` (or `key:`) line of a mapping at `path`.
    fn key(&mut self, content: &str, indent: usize, path: Path) -> Option<()> {
        let (key, value) = match content.find(": ") {
            Some(i) => (&content[..i], &content[i + 2..]),
            None => (content.strip_suffix(':')?, ""),
        };
        if key.starts_with(['"', '\'', '?', '{', '[']) || key.contains(" #") {
            // Quoted or complex keys are only skipped, never read.
            return if matches!(path, Path::Labels | Path::Alloc | Path::Taint) {
                None
            } else {
                self.skip_from(indent)
            };
        }
        let value = value.trim_start();
        if let Some(child) = path.child(key) {
            match value.trim_end() {
                "" => self.pending = Some((child, indent)),
                "{}" | "[]" => {}
                _ => return None,
            }
            return Some(());
        }
        if !path.reads(key) {
            return self.skip_from(indent);
        }
        let v = scalar(value)?;
        let o = self.object();
        match path {
            Path::Labels => {
                o.labels.insert(key.to_string(), v);
            }
            Path::Alloc => {
                o.alloc.insert(key.to_string(), v);
            }
            Path::Meta => o.name = Some(v),
            Path::Spec => o.unschedulable = v == "true",
            Path::Taint => {
                let t = o.taints.last_mut()?;
                match key {
                    "key" => t.key = v,
                    "value" => t.value = Some(v),
                    _ => t.effect = v,
                }
            }
            _ => match key {
                "value" => o.value = Some(v),
                "globalDefault" => o.global_default = Some(v),
                "preemptionPolicy" => o.preemption_policy = Some(v),
                _ => o.kind = Some(v),
            },
        }
        Some(())
    }

    fn skip_from(&mut self, indent: usize) -> Option<()> {
        self.skip = Some(indent);
        Some(())
    }
}

fn yaml(text: &str) -> Option<Read> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut scan = Scan::default();
    for line in text.split('\n') {
        scan.line(line)?;
    }
    if scan.pending.is_some() {
        return None;
    }
    scan.end_document()?;
    Some((scan.nodes, scan.classes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::node::Nodes;

    /// The fast readers agree with the full parser, or give up.
    fn same_as_full(text: &str) {
        let full = Nodes::from_tree_only("t.yaml", text).expect("the full reader reads it");
        let (fast, classes) = read(text).expect("the fast reader reads it");
        let show = |ns: &[Node]| -> Vec<String> { ns.iter().map(|n| format!("{n:?}")).collect() };
        assert_eq!(show(&fast), show(&full.nodes), "{text}");
        let fast_classes = if classes.is_empty() {
            full.priority_classes.clone()
        } else {
            crate::check::Classes::Known(classes)
        };
        assert_eq!(fast_classes, full.priority_classes, "{text}");
    }

    /// `kubectl get nodes,priorityclasses -o yaml|json`: the classes are read
    /// alike by every reader.
    #[test]
    fn priority_classes_read_alike() {
        let yaml = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n  status:\n    allocatable:\n      pods: \"110\"\n- apiVersion: scheduling.k8s.io/v1\n  description: Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.\n  kind: PriorityClass\n  metadata:\n    creationTimestamp: \"2026-12-04T17:20:01Z\"\n    generation: 1\n    name: system-cluster-critical\n    resourceVersion: \"80\"\n    uid: 4d6bd2f4-8cc8-4d34-a16c-f5e0cbf5da39\n  preemptionPolicy: PreemptLowerPriority\n  value: 2000000000\n- apiVersion: scheduling.k8s.io/v1\n  globalDefault: true\n  kind: PriorityClass\n  metadata:\n    name: batch\n  preemptionPolicy: Never\n  value: 100\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";
        same_as_full(yaml);
        let (_, classes) = read(yaml).expect("read fast");
        assert_eq!(
            classes,
            [
                PriorityClass {
                    name: "system-cluster-critical".into(),
                    value: 2_000_000_000,
                    global_default: false,
                    never_preempts: false,
                },
                PriorityClass {
                    name: "batch".into(),
                    value: 100,
                    global_default: true,
                    never_preempts: true,
                },
            ]
        );
        let json = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}, "status": {"allocatable": {"pods": "110"}}},
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch"}, "value": 100, "globalDefault": true, "preemptionPolicy": "Never"}
        ]}"#;
        same_as_full(json);
        let only_nodes = "kind: Node\nmetadata:\n  name: a\n";
        let n = Nodes::from_tree_only("t.yaml", only_nodes).expect("reads");
        assert!(matches!(
            n.priority_classes,
            crate::check::Classes::Unknown(_)
        ));
    }

    const KUBECTL: &str = r#"apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: |
        {"kind": "Node", "metadata": {"labels": {"x": "y"}}}
      node.alpha.kubernetes.io/ttl: "0"
    labels:
      kubernetes.io/hostname: a
      pool: gpu
      gen: "007"
      'quoted': 'it''s'
    name: a
  spec:
    taints:
    - effect: NoSchedule
      key: gpu
      value: "true"
    - effect: NoExecute
      key: dedicated
      timeAdded: "2026-01-01T00:00:00Z"
    unschedulable: true
  status:
    allocatable:
      cpu: "4"
      memory: 8Gi
      nvidia.com/gpu: "2"
      pods: "110"
    images:
    - names:
      - x
- apiVersion: v1
  kind: Node
  metadata:
    labels: {}
    name: b
  spec:
    taints: []
  status:
    allocatable:
      cpu: 500m
kind: List
metadata:
  resourceVersion: ""
"#;

    #[test]
    fn kubectl_yaml_reads_as_the_full_parser_reads_it() {
        // A quoted label key is not read fast, nor a block scalar checked
        // quickly: the fast reader gives up, and the full one reads them.
        assert!(read(KUBECTL).is_none());
        Nodes::from_tree_only("t.yaml", KUBECTL).expect("the full reader reads it");
        let text = KUBECTL.replace("      'quoted': 'it''s'\n", "").replace(
            "      kubectl.kubernetes.io/last-applied-configuration: |\n        {\"kind\": \"Node\", \"metadata\": {\"labels\": {\"x\": \"y\"}}}\n",
            "      kubectl.kubernetes.io/last-applied-configuration: '{\"kind\": \"Node\"}'\n",
        );
        assert!(
            yaml(KUBECTL.replace("      'quoted': 'it''s'\n", "").as_str()).is_some(),
            "block scalars are skipped"
        );
        same_as_full(&text);
        // Sequences indented under their key, as other writers do.
        same_as_full(
            "kind: List\nitems:\n  - kind: Node\n    metadata:\n      name: a\n      labels:\n        x: y\n    spec:\n      taints:\n        - key: k\n          effect: NoSchedule\n",
        );
        same_as_full("apiVersion: v1\nkind: Node\nmetadata:\n  name: one\nstatus:\n  allocatable: {}\n---\nkind: Node\nmetadata: {name: two}\n".split("---").next().unwrap_or(""));
    }

    #[test]
    fn the_fast_reader_gives_up_on_what_it_does_not_read() {
        for text in [
            "kind: Pod\nmetadata:\n  name: p\n",
            "kind: Node\nmetadata:\n  name: n\n  labels: {a: b}\n",
            "kind: Node\nmetadata:\n  name: n\nstatus:\n  allocatable:\n    cpu: lots\n",
            "kind: Node\nmetadata:\n  name: n\nspec:\n  taints:\n  - key: a\n    effect: Sometimes\n",
            "kind: Node\nmetadata:\n  name: \"a\\u0041\"\n",
            "kind: Node\nmetadata:\n  name: n # comment\n",
            "kind: Node\nmetadata:\n name: n\n  labels:\n",
        ] {
            assert!(read(text).is_none(), "{text}");
        }
    }

    #[test]
    fn json_reads_as_the_full_parser_reads_it() {
        let text = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a", "labels": {"pool": "gpu"}},
             "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}], "unschedulable": true},
             "status": {"allocatable": {"cpu": "4", "pods": "110"}, "images": [{"names": ["x"]}]}},
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "b"}}
        ]}"#;
        same_as_full(text);
        assert!(read(&text.replace("\"cpu\": \"4\"", "\"cpu\": \"four\"")).is_none());
    }
}
