//! Plain workloads: Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job
//! and CronJob. The one component is the pod template; its name is the
//! workload's `metadata.name`.

use super::object::controller;
use super::podspec::{
    metadata_edits, name_edits, pod_field_edits, read_affinity, read_pod_fields, spec_only_fields,
};
use super::{Change, Component, Place, field, field_no_alias, field_str};
use crate::scheduling::{Sched, tol_from_raw};
use kfsched_yaml::edit::{Edit, Flavor, Placement};
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::{Value, effective_value};

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
    /// The controller that manages this object (its `ownerReferences`
    /// entry with `controller: true`, as `kubectl get` output has): its
    /// description (`ReplicaSet "train-5d8f"`) and the entry's node.
    pub owner: Option<(String, NodeId)>,
    /// A pipeline's pod (one a workflow made), read as admission reads it;
    /// with the value of its `kfsched.dev/admitted` annotation.
    pub pipeline_pod: Option<(super::pipeline_pod::PodReading, Option<String>)>,
}

impl Workload {
    /// `None` when the document has no pod template; an error when the pod
    /// template is reached through a YAML alias.
    pub fn parse(
        tree: &Tree,
        root: NodeId,
        kind: &str,
    ) -> Result<Option<Workload>, (NodeId, String)> {
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
        let steps = path.len() + 1;
        for (i, k) in path.iter().chain(&["spec"]).enumerate() {
            let what = match *k {
                _ if i + 1 == steps => "the pod spec",
                "template" => "the pod template",
                "jobTemplate" => "the job template",
                _ => "the workload spec",
            };
            let Some(next) =
                field_no_alias(tree, template, k, what)?.filter(|&n| tree.kind(n) == Kind::Map)
            else {
                return Ok(None);
            };
            template = next;
        }
        // The last step was the pod spec.
        let spec = template;
        let Some(template) = tree.parent(spec) else {
            return Ok(None);
        };
        let mut images = Vec::new();
        if let Some(cs) = field(tree, spec, "containers") {
            for c in tree.items(cs) {
                if let Some(img) = field_str(tree, c, "image") {
                    images.push(img.to_string());
                }
            }
        }
        let mut component = Component {
            kind: kind.to_string(),
            pipelines: Vec::new(),
            names: if name.is_empty() {
                vec![]
            } else {
                vec![name.clone()]
            },
            images,
            task_path: None,
            role: Some(crate::matching::PodRole::Executor),
            label: format!("{kind} {name:?}"),
            place: Place::Workload(PodTemplate { template, spec }),
        };
        // A pod a workflow made is matched as admission matches it: by
        // what the pod says of its pipeline, task and role.
        let pod = (kind == "Pod")
            .then(|| effective_value(tree, root).to_json())
            .and_then(|j| {
                let admitted = j["metadata"]["annotations"]
                    [super::pipeline_pod::ADMITTED_ANNOTATION]
                    .as_str()
                    .map(str::to_string);
                super::pipeline_pod::read(&j).map(|r| (r, admitted))
            });
        if let Some((r, _)) = &pod {
            component.kind = r.kind.to_string();
            component.pipelines = r.pipelines.clone();
            component.names = r.names.clone();
            component.images = r.images.clone();
            component.role = r.role;
            component.task_path = (!r.path.is_empty()).then(|| r.path.clone());
            let what = match (r.kfp_v2, r.kfp_v1) {
                (true, _) => "KFP v2",
                (_, true) => "KFP v1",
                _ => "Argo",
            };
            let role = r.role.map_or("pod of no known role", |x| x.name());
            let task = if r.path.is_empty() {
                String::new()
            } else {
                format!(" of task {:?}", r.path)
            };
            component.label = format!(
                "Pod {name:?} ({what} {role}{task}, workflow {:?})",
                r.workflow
            );
        }
        Ok(Some(Workload {
            owner: controller(tree, root),
            component,
            pipeline_pod: pod,
        }))
    }
}

/// A pod template's scheduling; its labels and annotations with `metadata`.
pub fn read(tree: &Tree, pt: &PodTemplate, metadata: bool) -> Sched {
    let mut s = Sched::default();
    let own = |k: &str| field(tree, pt.spec, k).map(|n| effective_value(tree, n));
    if let Some(Value::Seq(items)) = own("tolerations") {
        s.tolerations = items.iter().map(tol_from_raw).collect();
    }
    if let Some(Value::Map(m)) = own("nodeSelector") {
        s.node_selector = m;
    }
    if let Some(a) = own("affinity") {
        read_affinity(&a, &mut s);
    }
    read_pod_fields(own, &mut s);
    let md = field(tree, pt.template, "metadata").filter(|_| metadata);
    if let Some(md) = md.map(|n| effective_value(tree, n)) {
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
    let c = ch.changed;
    let base = if c.replaced_affinity {
        None
    } else {
        field(tree, pt.spec, "affinity").map(|n| effective_value(tree, n))
    };
    let mut edits = pod_field_edits(tree, pt.spec, ch, base, false, &Placement::End);
    edits.extend(name_edits(tree, pt.spec, ch, &Placement::End));
    for (key, desired) in spec_only_fields(ch) {
        edits.push(match tree.get_value(pt.spec, key) {
            Some(node) => Edit::Reconcile {
                node,
                desired,
                placement: Placement::AsDesired,
            },
            None => Edit::Insert {
                map: pt.spec,
                key: key.into(),
                value: desired,
                placement: Placement::End,
            },
        });
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
