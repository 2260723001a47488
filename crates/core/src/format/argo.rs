//! Argo `Workflow`, `WorkflowTemplate`, `ClusterWorkflowTemplate` and
//! `CronWorkflow` documents, which is also what KFP v1 compiles to.
//!
//! Components are the pod-creating templates (`container`, `script`,
//! `resource`, `containerSet`, `data`). Argo *replaces* a workflow-level
//! `tolerations`/`nodeSelector`/`affinity` with a template's own, so when a
//! template lacks a field kfsched starts from the workflow's value: the
//! pod's effective scheduling only ever grows.

use kfsched_yaml::hash::HashMap;

use super::pod_spec_patch;
use super::podspec::{metadata_edits, name_edits, pod_field_edits, read_affinity};
use super::{
    Change, Component, Place, Skipped, alias_refusal, field, field_no_alias, field_str, push_unique,
};
use crate::scheduling::{Changed, Sched, tol_from_raw};
use kfsched_yaml::edit::{Edit, Flavor, Placement};
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::{Value, effective_value};

pub const KINDS: &[&str] = &[
    "Workflow",
    "WorkflowTemplate",
    "ClusterWorkflowTemplate",
    "CronWorkflow",
];

const POD_TYPES: &[&str] = &["container", "script", "resource", "containerSet", "data"];
const SCHEDULING: &[&str] = &["tolerations", "nodeSelector", "affinity"];

/// The key order kfp 1.8 writes a template in (`_op_to_template`), then
/// the keys kfsched writes that kfp 1.8 never does, after all of its own:
/// whatever the order of the runs that add them, they end up in this order.
pub const KFP_V1_TEMPLATE_ORDER: &[&str] = &[
    "name",
    "parallelism",
    "container",
    "resource",
    "script",
    "containerSet",
    "data",
    "inputs",
    "outputs",
    "dag",
    "nodeSelector",
    "tolerations",
    "affinity",
    "metadata",
    "retryStrategy",
    "activeDeadlineSeconds",
    "initContainers",
    "sidecars",
    "volumes",
    "podSpecPatch",
    "priorityClassName",
    "schedulerName",
];

/// One Argo workflow-like document.
#[derive(Clone, Debug)]
pub struct Workflow {
    pub doc: usize,
    pub kind: String,
    /// Compiled by kfp 1.8 (it stamps `pipelines.kubeflow.org/kfp_sdk_version`).
    pub kfp_v1: bool,
    pub name: Option<String>,
    /// The `WorkflowSpec` (`spec`, or `spec.workflowSpec` for a CronWorkflow).
    pub spec: Option<NodeId>,
    pub components: Vec<Component>,
    pub skipped: Vec<Skipped>,
    /// Scheduling on `templateDefaults` or on a DAG/steps template: kfsched
    /// refuses to edit such a workflow (the effect depends on the Argo version).
    pub refusal: Option<(NodeId, String)>,
    /// The controller that manages it (a CronWorkflow's Workflow, read
    /// back with `kubectl get wf -o yaml`), as for workloads.
    pub owner: Option<(String, NodeId)>,
    /// Its number in a `v1 List` (from 1), for messages.
    pub item: Option<usize>,
    /// The components that more than one task or step runs: one template
    /// makes all their pods, so a rule must select all of them or none.
    pub shared: Vec<Shared>,
}

/// A template that several tasks or steps run (see [`Workflow::shared`]).
#[derive(Clone, Debug)]
pub struct Shared {
    /// The component's index in [`Workflow::components`].
    pub component: usize,
    /// The template's own names (its name, KFP's display and component
    /// names), which every caller's pods answer to.
    pub common: Vec<String>,
    /// Each call: its task or step name and its path from the entrypoint.
    pub calls: Vec<Call>,
}

/// One task or step that runs a template, by one path from the entrypoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// `task` (in a DAG) or `step`.
    pub role: &'static str,
    pub name: String,
    pub path: String,
}

impl Shared {
    /// The names the pods of call `i` answer to: the template's own and the call's.
    pub fn names(&self, i: usize) -> Vec<String> {
        let mut names = self.common.clone();
        push_unique(&mut names, &self.calls[i].name);
        push_unique(&mut names, &self.calls[i].path);
        names
    }
}

/// Who calls the templates, by which names and paths from the entrypoint.
#[derive(Default)]
struct Calls {
    /// Template name → the names and paths of the tasks and steps calling it.
    called: HashMap<String, Vec<String>>,
    /// Inline template → the paths of the tasks and steps holding it.
    inline_paths: HashMap<NodeId, Vec<String>>,
    /// Template name → each call of it (one per path from the entrypoint).
    invocations: HashMap<String, Vec<Call>>,
    /// Inline template → each path to the task or step holding it.
    inline_invocations: HashMap<NodeId, Vec<Call>>,
}

impl Workflow {
    pub fn parse(
        tree: &Tree,
        doc: usize,
        root: NodeId,
        kind: &str,
    ) -> Result<Workflow, (NodeId, String)> {
        let meta = field(tree, root, "metadata");
        let name = meta.and_then(|m| {
            field_str(tree, m, "name").map(str::to_string).or_else(|| {
                field_str(tree, m, "generateName").map(|g| g.trim_end_matches('-').to_string())
            })
        });
        let kfp_v1 = meta.is_some_and(|m| {
            ["annotations", "labels"].iter().any(|k| {
                field(tree, m, k).is_some_and(|a| {
                    tree.get_value(a, "pipelines.kubeflow.org/kfp_sdk_version")
                        .is_some()
                })
            })
        });
        let spec = match field_no_alias(tree, root, "spec", "the workflow spec")? {
            Some(s) if kind == "CronWorkflow" && tree.kind(s) == Kind::Map => {
                field_no_alias(tree, s, "workflowSpec", "the workflow spec")?
            }
            Some(_) if kind == "CronWorkflow" => None,
            s => s,
        };
        let mut w = Workflow {
            doc,
            kind: kind.to_string(),
            kfp_v1,
            name,
            spec,
            components: Vec::new(),
            skipped: Vec::new(),
            refusal: None,
            owner: super::object::controller(tree, root),
            item: None,
            shared: Vec::new(),
        };
        let Some(spec) = spec.filter(|&s| tree.kind(s) == Kind::Map) else {
            return Ok(w);
        };
        w.refusal = template_defaults_refusal(tree, spec);
        let Some(templates) = field_no_alias(tree, spec, "templates", "the template list")?
            .filter(|&t| tree.kind(t) == Kind::Seq)
        else {
            return Ok(w);
        };
        if let Some(a) = tree.items(templates).find(|&t| tree.kind(t) == Kind::Alias) {
            return Err((a, alias_refusal("a template")));
        }
        let list: Vec<NodeId> = tree
            .items(templates)
            .filter(|&t| tree.kind(t) == Kind::Map)
            .collect();
        if let Some(at) = kfp_backend_workflow(tree, spec, &list) {
            return Err((at, KFP_BACKEND_REFUSAL.to_string()));
        }
        if w.refusal.is_none() {
            w.refusal = list.iter().find_map(|&t| template_refusal(tree, t));
        }
        let calls = Calls::of(tree, spec, &list);
        w.template_components(tree, &list, &calls);
        w.inline_components(tree, &list, &calls)?;
        Ok(w)
    }

    /// The pod-type templates of the list, named by their template name,
    /// the tasks and steps that call them, and KFP's annotations.
    fn template_components(&mut self, tree: &Tree, list: &[NodeId], calls: &Calls) {
        // kfp 1.8 writes a component's spec on each template made from it:
        // each distinct text is decoded once (a workflow has a few).
        let mut spec_names: Vec<(&str, Option<String>)> = Vec::new();
        for &t in list {
            let tname = field_str(tree, t, "name").unwrap_or("").to_string();
            let Some(kind_key) = POD_TYPES.iter().find(|k| field(tree, t, k).is_some()) else {
                continue;
            };
            let mut names = Vec::new();
            push_unique(&mut names, &tname);
            for n in calls.called.get(&tname).into_iter().flatten() {
                push_unique(&mut names, n);
            }
            let mut common = vec![tname.clone()];
            if let Some(ann) =
                field(tree, t, "metadata").and_then(|m| field(tree, m, "annotations"))
            {
                if let Some(d) = field_str(tree, ann, "pipelines.kubeflow.org/task_display_name") {
                    push_unique(&mut names, d);
                    push_unique(&mut common, d);
                }
                // Read without keeping the decoded text: it is kilobytes.
                if let Some(spec) = field(tree, ann, "pipelines.kubeflow.org/component_spec")
                    .filter(|&v| tree.kind(v) == Kind::Scalar && !tree.is_null(v))
                {
                    let n = tree.node(spec);
                    let written = &tree.src()[n.start as usize..n.end as usize];
                    let name = match spec_names.iter().find(|(w, _)| *w == written) {
                        Some((_, name)) => name.clone(),
                        None => {
                            let name = component_spec_name(&tree.scalar_text(spec));
                            if spec_names.len() < 64 {
                                spec_names.push((written, name.clone()));
                            }
                            name
                        }
                    };
                    if let Some(n) = name {
                        push_unique(&mut names, &n);
                        push_unique(&mut common, &n);
                    }
                }
            }
            if let Some(each) = calls.invocations.get(&tname).filter(|c| c.len() > 1) {
                self.shared.push(Shared {
                    component: self.components.len(),
                    common,
                    calls: each.clone(),
                });
            }
            self.components.push(Component {
                kind: self.kind.clone(),
                pipelines: self.name.iter().cloned().collect(),
                names,
                images: images_of(tree, t),
                task_path: None,
                role: Some(crate::matching::PodRole::Executor),
                label: format!("template {tname:?} ({kind_key})"),
                place: Place::Argo {
                    template: t,
                    workflow: self.doc,
                },
            });
        }
    }

    /// Inline templates (Argo 3.2+): a DAG task's or a step's `inline` is a
    /// whole template, and one of a pod type runs a pod like any other. It
    /// is named by its task or step and their paths.
    fn inline_components(
        &mut self,
        tree: &Tree,
        list: &[NodeId],
        calls: &Calls,
    ) -> Result<(), (NodeId, String)> {
        for &t in list {
            let tname = field_str(tree, t, "name").unwrap_or("");
            let role = if field(tree, t, "dag").is_some() {
                "task"
            } else {
                "step"
            };
            for call in calls_of(tree, t) {
                let Some(inline) = field(tree, call, "inline") else {
                    continue;
                };
                match tree.kind(inline) {
                    Kind::Alias => return Err((inline, alias_refusal("an inline template"))),
                    Kind::Map => {}
                    _ => continue,
                }
                let Some(kind_key) = POD_TYPES.iter().find(|k| field(tree, inline, k).is_some())
                else {
                    continue;
                };
                let cname = field_str(tree, call, "name").unwrap_or("");
                let mut names = Vec::new();
                push_unique(&mut names, cname);
                for p in calls.inline_paths.get(&inline).into_iter().flatten() {
                    push_unique(&mut names, p);
                }
                let mut common = Vec::new();
                if let Some(n) = field_str(tree, inline, "name") {
                    push_unique(&mut names, n);
                    common.push(n.to_string());
                }
                if let Some(each) = calls
                    .inline_invocations
                    .get(&inline)
                    .filter(|c| c.len() > 1)
                {
                    self.shared.push(Shared {
                        component: self.components.len(),
                        common,
                        calls: each.clone(),
                    });
                }
                self.components.push(Component {
                    kind: self.kind.clone(),
                    pipelines: self.name.iter().cloned().collect(),
                    names,
                    images: images_of(tree, inline),
                    task_path: None,
                    role: Some(crate::matching::PodRole::Executor),
                    label: format!(
                        "inline template of {role} {cname:?} in template {tname:?} ({kind_key})"
                    ),
                    place: Place::Argo {
                        template: inline,
                        workflow: self.doc,
                    },
                });
            }
        }
        Ok(())
    }

    /// A template's scheduling, seeded from the workflow where Argo would
    /// fall back to it; its pod labels and annotations with `metadata`.
    pub fn read(&self, tree: &Tree, template: NodeId, metadata: bool) -> Sched {
        let mut s = Sched::default();
        let own = |k: &str| field(tree, template, k).map(|n| effective_value(tree, n));
        let wf = |k: &str| {
            self.spec
                .and_then(|sp| field(tree, sp, k))
                .map(|n| effective_value(tree, n))
        };
        let tolerations = own("tolerations")
            .filter(|v| !v.is_empty_or_null())
            .or_else(|| wf("tolerations"));
        if let Some(Value::Seq(items)) = tolerations {
            s.tolerations = items.iter().map(tol_from_raw).collect();
        }
        let ns = own("nodeSelector")
            .filter(|v| !v.is_empty_or_null())
            .or_else(|| wf("nodeSelector"));
        if let Some(Value::Map(m)) = ns {
            s.node_selector = m;
        }
        let affinity = if field(tree, template, "affinity").is_some() {
            own("affinity")
        } else {
            wf("affinity")
        };
        if let Some(a) = affinity {
            read_affinity(&a, &mut s);
        }
        // Argo: the template's when set, else the workflow's.
        for (slot, key, wf_key) in [
            (
                &mut s.priority_class_name,
                "priorityClassName",
                "podPriorityClassName",
            ),
            (&mut s.scheduler_name, "schedulerName", "schedulerName"),
        ] {
            *slot = own(key)
                .filter(|v| !v.is_empty_or_null())
                .or_else(|| wf(wf_key).filter(|v| !v.is_empty_or_null()));
        }
        pod_spec_patch::read(
            tree,
            self.spec
                .and_then(|sp| field(tree, sp, pod_spec_patch::KEY)),
            field(tree, template, pod_spec_patch::KEY),
            &mut s,
        );
        if let Some(md) = metadata.then(|| own("metadata")).flatten() {
            if let Some(Value::Map(l)) = md.get("labels") {
                s.labels = l.clone();
            }
            if let Some(Value::Map(a)) = md.get("annotations") {
                s.annotations = a.clone();
            }
        }
        s
    }

    /// Edits for this workflow's changed templates.
    pub fn write(&self, tree: &Tree, flavor: Flavor, changes: &[Change]) -> Vec<Edit> {
        let mut edits = Vec::new();
        let v1 = flavor == Flavor::KfpV1;
        let placement = if v1 {
            Placement::Canonical(KFP_V1_TEMPLATE_ORDER)
        } else {
            Placement::End
        };
        for ch in changes {
            let Place::Argo { template, .. } = ch.component.place else {
                continue;
            };
            let c = ch.changed;
            // Argo falls back to the workflow's affinity when the template has none.
            let base = if c.replaced_affinity {
                None
            } else if field(tree, template, "affinity").is_some() {
                field(tree, template, "affinity").map(|n| effective_value(tree, n))
            } else {
                self.spec
                    .and_then(|sp| field(tree, sp, "affinity"))
                    .map(|n| effective_value(tree, n))
            };
            // kfp 1.8's keys, then the patch it writes last, then the two
            // names it never writes.
            edits.extend(pod_field_edits(tree, template, ch, base, v1, &placement));
            edits.extend(pod_spec_patch::edit(tree, template, ch, &placement));
            edits.extend(name_edits(tree, template, ch, &placement));
            if c.labels || c.annotations {
                edits.extend(metadata_edits(tree, template, ch, v1, &placement));
            }
        }
        edits
    }
}

impl Workflow {
    /// Why a change cannot be written to `template`, when it cannot: a
    /// field that `spec.templateDefaults` sets (which Argo merges in
    /// differently across versions), or a podSpecPatch kfsched cannot add to.
    pub(crate) fn write_refusal(
        &self,
        tree: &Tree,
        template: NodeId,
        c: Changed,
    ) -> Option<(NodeId, String)> {
        let mut keys = Vec::new();
        if c.priority_class_name {
            keys.push("priorityClassName");
        }
        if c.scheduler_name {
            keys.push("schedulerName");
        }
        let patched = pod_spec_patch::fields_of(c);
        if !patched.is_empty() {
            keys.push(pod_spec_patch::KEY);
        }
        if let Some(td) = self.spec.and_then(|s| field(tree, s, "templateDefaults")) {
            if let Some(k) = keys.iter().find(|k| field(tree, td, k).is_some()) {
                return Some((
                    field(tree, td, k).unwrap_or(td),
                    format!(
                        "spec.templateDefaults sets {k}, which Argo merges into every template differently across versions; move it onto the templates before using kfsched"
                    ),
                ));
            }
        }
        if patched.is_empty() {
            return None;
        }
        pod_spec_patch::refusal(tree, self.spec, template, &patched)
    }
}

/// The templates through which KFP's backend runs every task of a KFP v2
/// pipeline (`backend/src/v2/compiler/argocompiler`): a driver template per
/// task type, and one executor template all container tasks share.
const KFP_BACKEND_TEMPLATES: &[&str] = &[
    "system-container-driver",
    "system-dag-driver",
    "system-container-impl",
    "system-container-executor",
];

/// Why a Workflow that KFP's backend compiled is not rewritten.
pub const KFP_BACKEND_REFUSAL: &str = "this Workflow was compiled by KFP's backend from a KFP v2 pipeline: all its tasks run the shared `system-*` driver and executor templates, and each task's scheduling is the `kubernetes-config` argument KFP's driver reads, so kfsched does not edit it; put the policy on the pipeline's IR YAML or its PipelineVersion (what the KFP SDK compiles) and let KFP compile that, or apply it to the running pods with `kubectl kfsched export admission`";

/// The name of the first of KFP's backend templates in a workflow
/// (see [`KFP_BACKEND_TEMPLATES`]), or its `podMetadata` label
/// `pipelines.kubeflow.org/v2_component`: a Workflow that KFP's backend
/// compiled from a KFP v2 pipeline, or one read back from a KFP cluster.
fn kfp_backend_workflow(tree: &Tree, spec: NodeId, list: &[NodeId]) -> Option<NodeId> {
    let named = list.iter().find_map(|&t| {
        let n = field(tree, t, "name")?;
        KFP_BACKEND_TEMPLATES
            .contains(&tree.str_value(n)?)
            .then_some(n)
    });
    named.or_else(|| {
        let labels = field(tree, spec, "podMetadata").and_then(|m| field(tree, m, "labels"))?;
        let v = field(tree, labels, "pipelines.kubeflow.org/v2_component")?;
        (tree.str_value(v) == Some("true")).then_some(v)
    })
}

/// Scheduling on `spec.templateDefaults`: Argo merges it into every
/// template differently across versions.
fn template_defaults_refusal(tree: &Tree, spec: NodeId) -> Option<(NodeId, String)> {
    let td = field(tree, spec, "templateDefaults")?;
    let k = SCHEDULING.iter().find(|k| field(tree, td, k).is_some())?;
    Some((
        field(tree, td, k).unwrap_or(td),
        format!(
            "spec.templateDefaults sets {k}, which Argo merges into every template differently across versions; move it onto the templates (or the workflow spec) before using kfsched"
        ),
    ))
}

/// A template whose scheduling kfsched cannot place: one with two types,
/// or a DAG/steps template that sets scheduling fields.
fn template_refusal(tree: &Tree, t: NodeId) -> Option<(NodeId, String)> {
    let tn = field_str(tree, t, "name").unwrap_or("?");
    // A template has exactly one type; with two, whether its scheduling
    // reaches a pod is anybody's guess.
    let types: Vec<&str> = POD_TYPES
        .iter()
        .chain(&["dag", "steps", "suspend", "http", "plugin"])
        .copied()
        .filter(|k| field(tree, t, k).is_some())
        .collect();
    if types.len() > 1 {
        return Some((
            field(tree, t, types[1]).unwrap_or(t),
            format!(
                "the template {tn:?} has both `{}` and `{}`, and an Argo template has exactly one type: keep one of them before using kfsched",
                types[0], types[1]
            ),
        ));
    }
    let group = if field(tree, t, "dag").is_some() {
        "DAG"
    } else if field(tree, t, "steps").is_some() {
        "steps"
    } else {
        return None;
    };
    let k = SCHEDULING.iter().find(|k| field(tree, t, k).is_some())?;
    Some((
        field(tree, t, k).unwrap_or(t),
        format!(
            "the {group} template {tn:?} sets {k}, which Argo applies to its child pods only from v3.6 on; move it onto the pod templates before using kfsched"
        ),
    ))
}

impl Calls {
    /// Walks the call graph from the entrypoint.
    fn of(tree: &Tree, spec: NodeId, list: &[NodeId]) -> Calls {
        let mut calls = Calls::default();
        let Some(entry) = field_str(tree, spec, "entrypoint") else {
            return calls;
        };
        let mut by_name: HashMap<&str, NodeId> = HashMap::default();
        for &t in list {
            if let Some(n) = field_str(tree, t, "name") {
                by_name.insert(n, t);
            }
        }
        let mut stack: Vec<(String, String, Vec<String>)> =
            vec![(entry.to_string(), String::new(), vec![])];
        while let Some((tname, prefix, chain)) = stack.pop() {
            let Some(&t) = by_name.get(tname.as_str()) else {
                continue;
            };
            let role = if field(tree, t, "dag").is_some() {
                "task"
            } else {
                "step"
            };
            let mut next = Vec::new();
            for call in calls_of(tree, t) {
                if let (Some(cname), Some(inline)) =
                    (field_str(tree, call, "name"), field(tree, call, "inline"))
                {
                    let path = format!("{prefix}{cname}");
                    push_call(
                        calls.inline_invocations.entry(inline).or_default(),
                        role,
                        cname,
                        &path,
                    );
                    push_unique(calls.inline_paths.entry(inline).or_default(), &path);
                }
                let (Some(cname), Some(target)) = (
                    field_str(tree, call, "name"),
                    field_str(tree, call, "template"),
                ) else {
                    continue;
                };
                let path = format!("{prefix}{cname}");
                push_call(
                    calls.invocations.entry(target.to_string()).or_default(),
                    role,
                    cname,
                    &path,
                );
                let names = calls.called.entry(target.to_string()).or_default();
                push_unique(names, cname);
                push_unique(names, &path);
                if !chain.iter().any(|c| c == target) && target != tname {
                    let mut c2 = chain.clone();
                    c2.push(tname.clone());
                    next.push((target.to_string(), format!("{path}/"), c2));
                }
            }
            stack.extend(next.into_iter().rev());
        }
        calls
    }
}

/// Adds a call unless the same call by the same path is there.
fn push_call(calls: &mut Vec<Call>, role: &'static str, name: &str, path: &str) {
    if !calls.iter().any(|c| c.name == name && c.path == path) {
        calls.push(Call {
            role,
            name: name.to_string(),
            path: path.to_string(),
        });
    }
}

/// The `name` of kfp 1.8's `component_spec` annotation (a JSON object of
/// kilobytes): only that field is decoded, the rest skipped.
fn component_spec_name(json: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Spec {
        name: Option<String>,
    }
    serde_json::from_str::<Spec>(json).ok()?.name
}

/// The DAG tasks and steps a template calls, in order.
fn calls_of(tree: &Tree, t: NodeId) -> Vec<NodeId> {
    let mut calls: Vec<NodeId> = Vec::new();
    if let Some(tasks) = field(tree, t, "dag").and_then(|d| field(tree, d, "tasks")) {
        if tree.kind(tasks) == Kind::Seq {
            calls.extend(tree.items(tasks));
        }
    }
    if let Some(steps) = field(tree, t, "steps").filter(|&s| tree.kind(s) == Kind::Seq) {
        for group in tree.items(steps) {
            match tree.kind(group) {
                Kind::Seq => calls.extend(tree.items(group)),
                Kind::Map => calls.push(group),
                _ => {}
            }
        }
    }
    calls.retain(|&c| tree.kind(c) == Kind::Map);
    calls
}

/// The images a (pod-type) template runs.
fn images_of(tree: &Tree, t: NodeId) -> Vec<String> {
    let mut images = Vec::new();
    for k in ["container", "script"] {
        if let Some(img) = field(tree, t, k).and_then(|c| field_str(tree, c, "image")) {
            images.push(img.to_string());
        }
    }
    if let Some(cs) = field(tree, t, "containerSet").and_then(|c| field(tree, c, "containers")) {
        for c in tree.items(cs) {
            if let Some(img) = field_str(tree, c, "image") {
                images.push(img.to_string());
            }
        }
    }
    images
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Workflow, String> {
        let tree = Tree::parse(text).expect("yaml");
        let root = tree.documents[0].root.expect("root");
        Workflow::parse(&tree, 0, root, "Workflow").map_err(|(_, m)| m)
    }

    /// A template reached through a DAG that two tasks call runs once per
    /// path: each is a call of its own, by the same task name.
    #[test]
    fn a_template_under_a_dag_called_twice_has_a_call_per_path() {
        let w = parse(
            "spec:\n  entrypoint: main\n  templates:\n  - name: main\n    dag:\n      tasks:\n      - {name: a, template: sub}\n      - {name: b, template: sub}\n      - {name: solo, template: once}\n  - name: sub\n    dag:\n      tasks:\n      - {name: fit, template: worker}\n  - name: worker\n    container: {image: x}\n  - name: once\n    container: {image: y}\n",
        )
        .expect("parsed");
        assert_eq!(w.components.len(), 2);
        let [shared] = w.shared.as_slice() else {
            panic!("{:?}", w.shared)
        };
        assert_eq!(w.components[shared.component].names[0], "worker");
        assert_eq!(shared.common, ["worker"]);
        let paths: Vec<&str> = shared.calls.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["a/fit", "b/fit"]);
        assert_eq!(shared.names(1), ["worker", "fit", "b/fit"]);
    }

    /// KFP's backend-compiled KFP v2 Workflow is refused whole, by its
    /// driver template or, without one, by its pods' v2 label.
    #[test]
    fn a_kfp_backend_workflow_is_refused() {
        let by_template = parse(
            "spec:\n  entrypoint: e\n  templates:\n  - name: system-dag-driver\n    container: {image: d}\n",
        );
        assert_eq!(by_template.err().as_deref(), Some(KFP_BACKEND_REFUSAL));
        let by_label = parse(
            "spec:\n  podMetadata:\n    labels: {pipelines.kubeflow.org/v2_component: \"true\"}\n  templates:\n  - name: t\n    container: {image: d}\n",
        );
        assert_eq!(by_label.err().as_deref(), Some(KFP_BACKEND_REFUSAL));
        let plain = parse(
            "spec:\n  podMetadata:\n    labels: {pipelines.kubeflow.org/v2_component: \"false\"}\n  templates:\n  - name: system-like\n    container: {image: d}\n",
        );
        assert!(plain.is_ok());
    }
}
