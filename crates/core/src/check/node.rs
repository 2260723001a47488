//! The nodes a component is judged against: read from a snapshot
//! (`kubectl get nodes -o yaml` or `-o json`: a `v1 List`, one Node, or a
//! stream of them), taken from the live cluster, or made from the policy's
//! node pools (virtual nodes with the pool's labels and taints, whose
//! resources are unknown).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;

use super::classes::{Classes, PriorityClass};
use super::pod::{Container, Pod, Requests, ResourceList};
use super::quantity::Quantity;
use crate::diag::{Diagnostic, decode_utf8};
use crate::policy::Policy;
use kfsched_yaml::tree::{Kind, NodeId, Tree};

/// What a node can hold (`status.allocatable`), as the scheduler counts it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allocatable {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    /// `pods`: an absent entry allows no pod at all.
    pub pods: i64,
    pub scalar: BTreeMap<String, i64>,
}

impl Allocatable {
    /// From a resource list, as `framework.Resource.Add` reads it.
    pub fn from_list(list: &ResourceList) -> Allocatable {
        let mut r = Requests::default();
        r.add(list);
        Allocatable {
            milli_cpu: r.milli_cpu,
            memory: r.memory,
            ephemeral_storage: r.ephemeral_storage,
            pods: list.get("pods").map_or(0, Quantity::value),
            scalar: r.scalar,
        }
    }

    /// The amount of a resource by its name (`cpu` in millis).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            "cpu" => self.milli_cpu,
            "memory" => self.memory,
            "ephemeral-storage" => self.ephemeral_storage,
            "pods" => self.pods,
            n => self.scalar.get(n).copied().unwrap_or(0),
        }
    }
}

/// A pod running on a node (counted with `--usage`).
#[derive(Clone, Debug, Default)]
pub struct Running {
    pub priority: i32,
    pub requests: Requests,
}

/// One node.
#[derive(Clone, Debug, Default)]
pub struct Node {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// `None` for a pool's virtual node: resources are not judged.
    pub allocatable: Option<Allocatable>,
    /// The pods bound to it, when usage is counted.
    pub pods: Vec<Running>,
    /// The pool a virtual node stands for.
    pub pool: Option<String>,
}

impl Node {
    /// What the pods on it request.
    pub fn requested(&self) -> Requests {
        let mut r = Requests::default();
        for p in &self.pods {
            r.milli_cpu = r.milli_cpu.saturating_add(p.requests.milli_cpu);
            r.memory = r.memory.saturating_add(p.requests.memory);
            r.ephemeral_storage = r
                .ephemeral_storage
                .saturating_add(p.requests.ephemeral_storage);
            for (k, v) in &p.requests.scalar {
                let e = r.scalar.entry(k.clone()).or_insert(0);
                *e = e.saturating_add(*v);
            }
        }
        r
    }
}

/// Where the nodes came from, for the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The live cluster (its server).
    Live(String),
    /// A snapshot file (`-` for stdin).
    Snapshot(String),
    /// The policy's node pools (the policy file).
    Pools(String),
}

/// The nodes of one check.
#[derive(Clone, Debug)]
pub struct Nodes {
    pub nodes: Vec<Node>,
    pub source: Source,
    /// Whether the pods running on the nodes are counted (`--usage`).
    pub usage: bool,
    /// The cluster's PriorityClasses, where the source has them.
    pub priority_classes: Classes,
}

/// Why a snapshot's PriorityClasses are not known.
const NO_CLASSES_IN_SNAPSHOT: &str =
    "the snapshot holds no PriorityClass: take it with `kubectl get nodes,priorityclasses -o yaml`";

/// The classes a snapshot held, if any.
fn snapshot_classes(classes: Vec<PriorityClass>) -> Classes {
    if classes.is_empty() {
        Classes::Unknown(NO_CLASSES_IN_SNAPSHOT.into())
    } else {
        Classes::Known(classes)
    }
}

impl Nodes {
    /// Whether resources are judged (virtual pool nodes have none).
    pub fn resources_known(&self) -> bool {
        self.nodes.iter().all(|n| n.allocatable.is_some())
    }

    /// The policy's pools as virtual nodes, one per pool, named after it.
    pub fn from_pools(policy: &Policy) -> Nodes {
        let nodes = policy
            .pools
            .iter()
            .map(|p| Node {
                name: p.name.clone(),
                labels: p.labels.iter().cloned().collect(),
                taints: p.taints.clone(),
                unschedulable: false,
                allocatable: None,
                pods: Vec::new(),
                pool: Some(p.name.clone()),
            })
            .collect();
        Nodes {
            nodes,
            source: Source::Pools(policy.file.clone()),
            usage: false,
            priority_classes: Classes::Unknown(
                "the policy's node pools say nothing of them".into(),
            ),
        }
    }

    /// Live nodes (and, with `usage`, the pods bound to them), and the
    /// PriorityClasses, or why they could not be listed.
    pub fn from_live(
        server: &str,
        nodes: &[k8s_openapi::api::core::v1::Node],
        pods: Option<&[k8s_openapi::api::core::v1::Pod]>,
        classes: Result<&[k8s_openapi::api::scheduling::v1::PriorityClass], String>,
    ) -> Nodes {
        let mut out: Vec<Node> = nodes.iter().map(node_of).collect();
        if let Some(pods) = pods {
            add_usage(&mut out, pods.iter());
        }
        Nodes {
            nodes: out,
            source: Source::Live(server.to_string()),
            usage: pods.is_some(),
            priority_classes: match classes {
                Ok(list) => Classes::Known(list.iter().map(PriorityClass::of).collect()),
                Err(why) => Classes::Unknown(why),
            },
        }
    }

    /// Reads a snapshot: `kubectl get nodes -o yaml|json` (a List), one
    /// Node, or a stream of them. With `usage`, Pods in it (`kubectl get
    /// nodes,pods -A -o yaml`) count on the node they are bound to.
    pub fn from_snapshot(file: &str, bytes: &[u8], usage: bool) -> Result<Nodes, Vec<Diagnostic>> {
        let text = decode_utf8(file, bytes).map_err(|d| vec![d])?;
        // The fast readers give up on Pods, so usage is then counted below.
        if let Some((nodes, classes)) = super::snapshot::read(text).filter(|(n, _)| !n.is_empty()) {
            return Ok(Nodes {
                nodes,
                source: Source::Snapshot(file.to_string()),
                usage,
                priority_classes: snapshot_classes(classes),
            });
        }
        Nodes::from_tree(file, text, usage)
    }

    /// Reads a snapshot with the full parser (problems at their line and column).
    fn from_tree(file: &str, text: &str, usage: bool) -> Result<Nodes, Vec<Diagnostic>> {
        let tree = Tree::parse(text).map_err(|e| {
            vec![Diagnostic {
                file: file.to_string(),
                line: e.line,
                col: e.col,
                path: e.path.clone(),
                message: format!("invalid YAML: {}", e.message),
            }]
        })?;
        let mut s = Snapshot {
            tree: &tree,
            file,
            nodes: Vec::new(),
            pods: Vec::new(),
            classes: Vec::new(),
            errors: Vec::new(),
        };
        for d in &tree.documents {
            if let Some(root) = d.root {
                s.object(root, true);
            }
        }
        if !s.errors.is_empty() {
            return Err(s.errors);
        }
        if s.nodes.is_empty() {
            return Err(vec![Diagnostic::file(
                file,
                "no Node in the snapshot: give the output of `kubectl get nodes -o yaml` (or -o json)",
            )]);
        }
        let mut nodes = s.nodes;
        if usage {
            add_usage(&mut nodes, s.pods.iter());
        }
        Ok(Nodes {
            nodes,
            source: Source::Snapshot(file.to_string()),
            usage,
            priority_classes: snapshot_classes(s.classes),
        })
    }
}

#[cfg(test)]
impl Nodes {
    /// The full reader alone, for comparing the fast ones with it.
    pub(super) fn from_tree_only(file: &str, text: &str) -> Result<Nodes, Vec<Diagnostic>> {
        Nodes::from_tree(file, text, false)
    }
}

/// Reads the objects of a snapshot.
struct Snapshot<'t, 'a> {
    tree: &'t Tree<'a>,
    file: &'t str,
    nodes: Vec<Node>,
    pods: Vec<k8s_openapi::api::core::v1::Pod>,
    classes: Vec<PriorityClass>,
    errors: Vec<Diagnostic>,
}

impl Snapshot<'_, '_> {
    fn err(&mut self, at: NodeId, message: impl Into<String>) {
        let d = Diagnostic::at(
            self.tree,
            self.file,
            self.tree.node(at).start as usize,
            &self.tree.path(at),
            message.into(),
        );
        self.errors.push(d);
    }

    fn get(&self, m: NodeId, key: &str) -> Option<NodeId> {
        self.tree
            .get_value(m, key)
            .filter(|&v| !self.tree.is_null(v))
    }

    fn text(&self, m: NodeId, key: &str) -> Option<&str> {
        self.get(m, key).and_then(|v| self.tree.str_value(v))
    }

    /// A Node, a Pod, or a List of them; anything else is an error, as a
    /// snapshot holds nothing else.
    fn object(&mut self, root: NodeId, top: bool) {
        if self.tree.kind(root) != Kind::Map {
            self.err(
                root,
                "not a Kubernetes object: a snapshot holds Nodes (`kubectl get nodes -o yaml`)",
            );
            return;
        }
        let kind = self.text(root, "kind").unwrap_or("").to_string();
        match kind.as_str() {
            "Node" => self.node(root),
            "Pod" => self.pod(root),
            "PriorityClass" => self.class(root),
            "List" | "NodeList" | "PodList" | "PriorityClassList" if top => {
                if let Some(items) = self.get(root, "items").filter(|&i| self.tree.kind(i) == Kind::Seq) {
                    let items: Vec<NodeId> = self.tree.items(items).collect();
                    for i in items {
                        self.object(i, false);
                    }
                }
            }
            "" => self.err(root, "an object without `kind`: a snapshot holds Nodes (`kubectl get nodes -o yaml`)"),
            other => self.err(root, format!("a {other}, not a Node: a snapshot holds Nodes (`kubectl get nodes -o yaml`), Pods for --usage and PriorityClasses")),
        }
    }

    fn node(&mut self, root: NodeId) {
        let meta = self.get(root, "metadata");
        let Some(name) = meta.and_then(|m| self.text(m, "name")).map(str::to_string) else {
            self.err(root, "a Node without metadata.name");
            return;
        };
        let mut n = Node {
            name,
            ..Node::default()
        };
        if let Some(labels) = meta.and_then(|m| self.get(m, "labels")) {
            if self.tree.kind(labels) == Kind::Map {
                let entries: Vec<(NodeId, NodeId)> = self.tree.entries(labels).collect();
                for (k, v) in entries {
                    let value = if self.tree.is_null(v) {
                        ""
                    } else {
                        self.tree.scalar(v)
                    };
                    n.labels
                        .insert(self.tree.scalar(k).to_string(), value.to_string());
                }
            }
        }
        if let Some(spec) = self.get(root, "spec") {
            n.unschedulable = self
                .get(spec, "unschedulable")
                .is_some_and(|u| self.tree.scalar(u) == "true");
            if let Some(taints) = self
                .get(spec, "taints")
                .filter(|&t| self.tree.kind(t) == Kind::Seq)
            {
                let items: Vec<NodeId> = self.tree.items(taints).collect();
                for t in items {
                    self.taint(t, &mut n);
                }
            }
        }
        let mut alloc = ResourceList::new();
        if let Some(a) = self
            .get(root, "status")
            .and_then(|s| self.get(s, "allocatable"))
        {
            let entries: Vec<(NodeId, NodeId)> = self.tree.entries(a).collect();
            for (k, v) in entries {
                let text = self.tree.scalar(v).to_string();
                match Quantity::parse(&text) {
                    Ok(q) => {
                        alloc.insert(self.tree.scalar(k).to_string(), q);
                    }
                    Err(e) => self.err(v, format!("{text:?} is not a quantity: {e}")),
                }
            }
        }
        n.allocatable = Some(Allocatable::from_list(&alloc));
        self.nodes.push(n);
    }

    fn taint(&mut self, t: NodeId, n: &mut Node) {
        let key = self.text(t, "key").unwrap_or("").to_string();
        let effect = self.text(t, "effect").unwrap_or("").to_string();
        if !matches!(
            effect.as_str(),
            "NoSchedule" | "PreferNoSchedule" | "NoExecute"
        ) {
            self.err(
                t,
                format!(
                    "a taint's effect is NoSchedule, PreferNoSchedule or NoExecute, not {effect:?}"
                ),
            );
            return;
        }
        let value = self.text(t, "value").map(str::to_string);
        n.taints.push(Taint {
            key,
            value,
            effect,
            time_added: None,
        });
    }

    fn class(&mut self, root: NodeId) {
        let json = kfsched_yaml::value::node_value(self.tree, root).to_json();
        match serde_json::from_value::<k8s_openapi::api::scheduling::v1::PriorityClass>(json) {
            Ok(c) => self.classes.push(PriorityClass::of(&c)),
            Err(e) => self.err(
                root,
                format!("a PriorityClass that does not read as one: {e}"),
            ),
        }
    }

    fn pod(&mut self, root: NodeId) {
        let json = kfsched_yaml::value::node_value(self.tree, root).to_json();
        match serde_json::from_value(json) {
            Ok(p) => self.pods.push(p),
            Err(e) => self.err(root, format!("a Pod that does not read as one: {e}")),
        }
    }
}

/// A live Node in the model.
fn node_of(n: &k8s_openapi::api::core::v1::Node) -> Node {
    let spec = n.spec.as_ref();
    let alloc: ResourceList = n
        .status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .map(|a| {
            a.iter()
                .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(&v.0).ok()?)))
                .collect()
        })
        .unwrap_or_default();
    Node {
        name: n.metadata.name.clone().unwrap_or_default(),
        labels: n.metadata.labels.clone().unwrap_or_default(),
        taints: spec.and_then(|s| s.taints.clone()).unwrap_or_default(),
        unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
        allocatable: Some(Allocatable::from_list(&alloc)),
        pods: Vec::new(),
        pool: None,
    }
}

/// Counts each non-terminal pod bound to a node on that node, with its
/// requests as the scheduler's cache counts them.
fn add_usage<'p>(
    nodes: &mut [Node],
    pods: impl Iterator<Item = &'p k8s_openapi::api::core::v1::Pod>,
) {
    let index: BTreeMap<String, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    for p in pods {
        let phase = p
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("");
        if matches!(phase, "Succeeded" | "Failed") {
            continue;
        }
        let Some(spec) = p.spec.as_ref() else {
            continue;
        };
        let Some(&i) = spec.node_name.as_ref().and_then(|n| index.get(n)) else {
            continue;
        };
        nodes[i].pods.push(Running {
            priority: spec.priority.unwrap_or(0),
            requests: live_requests(spec),
        });
    }
}

/// A running pod's requests (the API server has defaulted them already).
fn live_requests(spec: &k8s_openapi::api::core::v1::PodSpec) -> Requests {
    let list = |r: Option<
        &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >|
     -> ResourceList {
        r.map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(&v.0).ok()?)))
                .collect()
        })
        .unwrap_or_default()
    };
    let container = |c: &k8s_openapi::api::core::v1::Container| Container {
        name: c.name.clone(),
        requests: list(c.resources.as_ref().and_then(|r| r.requests.as_ref())),
        limits: ResourceList::new(),
        sidecar: c.restart_policy.as_deref() == Some("Always"),
    };
    let pod = Pod {
        containers: spec.containers.iter().map(container).collect(),
        init_containers: spec
            .init_containers
            .iter()
            .flatten()
            .map(container)
            .collect(),
        pod_requests: list(spec.resources.as_ref().and_then(|r| r.requests.as_ref())),
        overhead: list(spec.overhead.as_ref()),
        ..Pod::default()
    };
    pod.requests()
}
