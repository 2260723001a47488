//! Plain workloads: Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job
//! and CronJob. The one component is the pod template; its name is the
//! workload's `metadata.name`.

use super::argo::{affinity_value, metadata_edits, read_affinity};
use super::{Change, Component, Place, field, field_str};
use crate::sched::{Sched, tol_from_raw};
use crate::yaml::edit::{Edit, Flavor, Placement};
use crate::yaml::tree::{Kind, NodeId, Tree};
use crate::yaml::value::{Value, node_value};

pub const KINDS: &[&str] = &[
    "Pod",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
    "CronJob",
];

/// Where a workload keeps its pod: the map holding `metadata` and `spec`.
#[derive(Clone, Debug)]
pub struct PodTemplate {
    /// The pod template mapping (the document root for a Pod).
    pub template: NodeId,
    /// Its `spec` mapping.
    pub spec: NodeId,
}

#[derive(Clone, Debug)]
pub struct Workload {
    pub component: Component,
}

impl Workload {
    pub fn parse(tree: &Tree, root: NodeId, kind: &str) -> Option<Workload> {
        let name = field(tree, root, "metadata")
            .and_then(|m| field_str(tree, m, "name"))
            .unwrap_or("")
            .to_string();
        let path: &[&str] = match kind {
            "Pod" => &[],
            "CronJob" => &["spec", "jobTemplate", "spec", "template"],
            _ => &["spec", "template"],
        };
        let mut template = root;
        for k in path {
            template = field(tree, template, k).filter(|&n| tree.kind(n) == Kind::Map)?;
        }
        let spec = field(tree, template, "spec").filter(|&n| tree.kind(n) == Kind::Map)?;
        let mut images = Vec::new();
        if let Some(cs) = field(tree, spec, "containers") {
            for c in tree.items(cs) {
                if let Some(img) = field_str(tree, c, "image") {
                    images.push(img.to_string());
                }
            }
        }
        Some(Workload {
            component: Component {
                kind: kind.to_string(),
                pipeline: None,
                names: if name.is_empty() {
                    vec![]
                } else {
                    vec![name.clone()]
                },
                images,
                label: format!("{kind} {name:?}"),
                place: Place::Workload(PodTemplate { template, spec }),
            },
        })
    }
}

pub fn read(tree: &Tree, pt: &PodTemplate) -> Sched {
    let mut s = Sched::default();
    let own = |k: &str| field(tree, pt.spec, k).map(|n| node_value(tree, n));
    if let Some(Value::Seq(items)) = own("tolerations") {
        s.tolerations = items.iter().map(tol_from_raw).collect();
    }
    if let Some(Value::Map(m)) = own("nodeSelector") {
        s.node_selector = m;
    }
    if let Some(a) = own("affinity") {
        read_affinity(&a, &mut s);
    }
    if let Some(md) = field(tree, pt.template, "metadata").map(|n| node_value(tree, n)) {
        if let Some(Value::Map(l)) = md.get("labels") {
            s.labels = l.clone();
        }
        if let Some(Value::Map(a)) = md.get("annotations") {
            s.annotations = a.clone();
        }
    }
    s
}

pub fn write(tree: &Tree, pt: &PodTemplate, _flavor: Flavor, ch: &Change) -> Vec<Edit> {
    let mut edits = Vec::new();
    let c = ch.changed;
    let set = |key: &str, desired: Value, edits: &mut Vec<Edit>| match tree.get_value(pt.spec, key)
    {
        Some(node) => edits.push(Edit::Reconcile {
            node,
            desired,
            placement: Placement::AsDesired,
        }),
        None => edits.push(Edit::Insert {
            map: pt.spec,
            key: key.to_string(),
            value: desired,
            placement: Placement::End,
        }),
    };
    if c.node_selector {
        let mut m = ch.after.node_selector.clone();
        if ch.before.node_selector.is_empty() {
            m.sort_by(|a, b| a.0.cmp(&b.0));
        }
        set("nodeSelector", Value::Map(m), &mut edits);
    }
    if c.tolerations {
        set(
            "tolerations",
            Value::Seq(ch.after.tolerations.iter().map(|t| t.raw.clone()).collect()),
            &mut edits,
        );
    }
    if c.affinity() {
        let base = if c.replaced_affinity {
            None
        } else {
            field(tree, pt.spec, "affinity").map(|n| node_value(tree, n))
        };
        set(
            "affinity",
            affinity_value(base, &ch.after, c, false),
            &mut edits,
        );
    }
    if c.labels || c.annotations {
        edits.extend(metadata_edits(
            tree,
            pt.template,
            ch,
            false,
            &Placement::End,
        ));
    }
    edits
}
