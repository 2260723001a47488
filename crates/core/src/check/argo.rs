//! The pod the Argo workflow controller creates for a template
//! (`workflow/controller/workflowpod.go`, v3.6 to v4.1): KFP v1 pipelines,
//! Argo workflows and the templates of WorkflowTemplates.
//!
//! - Containers: Argo's `init` (and the template's `initContainers`) as
//!   init containers; Argo's `wait` beside the main container(s): the
//!   template's `container` or `script` (renamed `main`), every container
//!   of a `containerSet`, or Argo's executor for `resource` and `data`; then
//!   the template's `sidecars`. Argo's own containers get the executor
//!   resources of the controller's config map, empty on KFP installs.
//! - `spec.templateDefaults` is merged under the template first
//!   (tolerations merge by key, maps merge, lists replace).
//! - `tolerations`, `nodeSelector`: the template's when non-empty, else its
//!   caller's (the DAG or steps template, Argo >= 3.6), else the workflow's.
//!   `affinity`: the first that is set, in the same order.
//! - `podSpecPatch` (the workflow's, then the template's) is a strategic
//!   merge patch on the pod spec; one with `{{...}}` is a run-time value.

use kfsched_yaml::hash::HashMap;

use super::pod::{Container, Pod};
use super::read::{At, Reader, Shape};
use super::workload;
use crate::format::argo::Workflow;
use kfsched_yaml::Value;
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::node_value;

const SCHEDULING: [&str; 3] = ["tolerations", "nodeSelector", "affinity"];

/// The DAG and steps templates of a workflow that call each template
/// (by template name, and inline templates by node).
pub(super) struct Callers {
    by_name: HashMap<String, Vec<NodeId>>,
    inline: HashMap<NodeId, NodeId>,
}

impl Callers {
    pub fn of(tree: &Tree, w: &Workflow) -> Callers {
        let mut c = Callers {
            by_name: HashMap::default(),
            inline: HashMap::default(),
        };
        let Some(templates) = w
            .spec
            .and_then(|s| tree.get_value(s, "templates"))
            .filter(|&t| tree.kind(t) == Kind::Seq)
        else {
            return c;
        };
        for t in tree.items(templates).filter(|&t| tree.kind(t) == Kind::Map) {
            for call in calls_of(tree, t) {
                if let Some(name) = tree
                    .get_value(call, "template")
                    .and_then(|v| tree.str_value(v))
                {
                    let v = c.by_name.entry(name.to_string()).or_default();
                    if !v.contains(&t) {
                        v.push(t);
                    }
                }
                if let Some(inline) = tree.get_value(call, "inline") {
                    c.inline.insert(inline, t);
                }
            }
        }
        c
    }

    fn of_template(&self, tree: &Tree, template: NodeId) -> Vec<NodeId> {
        if let Some(&holder) = self.inline.get(&template) {
            return vec![holder];
        }
        let name = tree
            .get_value(template, "name")
            .and_then(|v| tree.str_value(v))
            .unwrap_or("");
        self.by_name.get(name).cloned().unwrap_or_default()
    }
}

/// The DAG tasks and steps of a template.
fn calls_of(tree: &Tree, t: NodeId) -> Vec<NodeId> {
    let mut out = Vec::new();
    if let Some(tasks) = tree
        .get_value(t, "dag")
        .and_then(|d| tree.get_value(d, "tasks"))
    {
        if tree.kind(tasks) == Kind::Seq {
            out.extend(tree.items(tasks));
        }
    }
    if let Some(steps) = tree
        .get_value(t, "steps")
        .filter(|&s| tree.kind(s) == Kind::Seq)
    {
        for group in tree.items(steps) {
            match tree.kind(group) {
                Kind::Seq => out.extend(tree.items(group)),
                Kind::Map => out.push(group),
                _ => {}
            }
        }
    }
    out.retain(|&c| tree.kind(c) == Kind::Map);
    out
}

/// Merges `defaults` under `over` as Argo's `mergedTemplateDefaultsInto`
/// does with a strategic merge patch: maps merge, `tolerations` merge by
/// key, other lists are replaced.
fn merge_under(defaults: &Value, over: &Value, key: &str) -> Value {
    match (defaults, over) {
        (Value::Map(d), Value::Map(o)) => {
            let mut out = d.clone();
            for (k, v) in o {
                match out.iter_mut().find(|(dk, _)| dk == k) {
                    Some(slot) => slot.1 = merge_under(&slot.1, v, k),
                    None => out.push((k.clone(), v.clone())),
                }
            }
            Value::Map(out)
        }
        (Value::Seq(d), Value::Seq(o)) if key == "tolerations" => {
            let key_of = |t: &Value| t.get("key").and_then(Value::scalar_text);
            let mut out: Vec<Value> = o.clone();
            for t in d {
                if !o.iter().any(|x| key_of(x) == key_of(t)) {
                    out.push(t.clone());
                }
            }
            Value::Seq(out)
        }
        (_, o) => o.clone(),
    }
}

/// The pod of one template of a workflow.
pub(super) fn pod(r: &mut Reader, w: &Workflow, callers: &Callers, template: NodeId) -> Pod {
    let tree = r.tree;
    let defaults = w.spec.and_then(|s| tree.get_value(s, "templateDefaults"));
    // With templateDefaults, the template is read from the merged value;
    // problems then point at the template.
    let merged =
        defaults.map(|d| merge_under(&node_value(tree, d), &node_value(tree, template), ""));
    let t = match &merged {
        Some(v) => At::Value(v, template),
        None => At::Node(template),
    };
    let mut pod = Pod {
        init_containers: vec![Container::named("init")],
        ..Pod::default()
    };
    pod.init_containers
        .extend(workload::containers(r, t, "initContainers", true));
    main_containers(r, t, &mut pod);
    pod.containers
        .extend(workload::containers(r, t, "sidecars", false));
    scheduling(r, w, callers, template, t, &mut pod);
    for (key, slot) in [
        ("schedulerName", &mut pod.scheduler_name),
        ("priorityClassName", &mut pod.priority_class_name),
    ] {
        if let Some(v) = r.string_field(t, key, Shape::K8s) {
            *slot = Some(v);
        }
    }
    if let Some(spec) = w.spec {
        let spec = At::Node(spec);
        if pod.scheduler_name.is_none() {
            pod.scheduler_name = r.string_field(spec, "schedulerName", Shape::K8s);
        }
        if pod.priority_class_name.is_none() {
            pod.priority_class_name = r.string_field(spec, "podPriorityClassName", Shape::K8s);
        }
        if let Some(p) = r.get(spec, "podSpecPatch") {
            patch(r, p, &mut pod);
        }
    }
    if let Some(p) = r.get(t, "podSpecPatch") {
        patch(r, p, &mut pod);
    }
    pod
}

/// Argo's `wait` and the main container(s) of each template type.
fn main_containers<'v>(r: &mut Reader, t: At<'v>, pod: &mut Pod) {
    for key in ["container", "script"] {
        if let Some(c) = r.get(t, key) {
            pod.containers.push(Container::named("wait"));
            if let Some(mut main) = workload::container(r, c, false) {
                main.name = "main".into();
                pod.containers.push(main);
            }
            return;
        }
    }
    if let Some(cs) = r.get(t, "containerSet") {
        pod.containers.push(Container::named("wait"));
        pod.containers
            .extend(workload::containers(r, cs, "containers", false));
        return;
    }
    // `resource` and `data`: Argo's executor runs it.
    pod.containers.push(Container::named("main"));
}

/// tolerations, nodeSelector and affinity: template, then caller, then workflow.
fn scheduling<'v>(
    r: &mut Reader,
    w: &Workflow,
    callers: &Callers,
    template: NodeId,
    t: At<'v>,
    pod: &mut Pod,
) {
    let tree = r.tree;
    let (boundary, note) = boundary(tree, callers, template);
    pod.unjudged.extend(note);
    for key in SCHEDULING {
        let set = |r: &mut Reader, at: At<'v>| -> Option<At<'v>> {
            let v = r.get(at, key)?;
            // Argo: nodeSelector and tolerations need `len > 0`; affinity `!= nil`.
            let empty = key != "affinity"
                && match v {
                    At::Node(id) => tree.kind(id) != Kind::Scalar && tree.count(id) == 0,
                    At::Value(x, _) => x.is_empty_or_null(),
                };
            (!empty).then_some(v)
        };
        let found = set(r, t)
            .or_else(|| boundary.and_then(|b| set(r, At::Node(b))))
            .or_else(|| w.spec.and_then(|s| set(r, At::Node(s))));
        let Some(v) = found else { continue };
        match key {
            "tolerations" => pod.tolerations = r.tolerations(v, Shape::K8s),
            "nodeSelector" => pod.node_selector = Some(r.node_selector(v)),
            _ => {
                let (required, preferred) = r.affinity(v, &mut pod.unjudged);
                pod.required = required;
                pod.preferred = preferred;
            }
        }
    }
}

/// The caller whose scheduling applies (Argo's boundary template), when a
/// caller sets any, and a note when the callers disagree (each call makes
/// its own pod; the first caller's is judged).
fn boundary(tree: &Tree, callers: &Callers, template: NodeId) -> (Option<NodeId>, Option<String>) {
    let all = callers.of_template(tree, template);
    let sched = |c: NodeId| -> Vec<Option<Value>> {
        SCHEDULING
            .iter()
            .map(|k| tree.get_value(c, k).map(|n| node_value(tree, n)))
            .collect()
    };
    let Some(&first) = all
        .iter()
        .find(|&&c| SCHEDULING.iter().any(|k| tree.get_value(c, k).is_some()))
    else {
        return (None, None);
    };
    let name = |c: NodeId| {
        tree.get_value(c, "name")
            .and_then(|v| tree.str_value(v))
            .unwrap_or("?")
            .to_string()
    };
    let note = all.iter().any(|&c| sched(c) != sched(first)).then(|| {
        let names: Vec<String> = all.iter().map(|&c| format!("{:?}", name(c))).collect();
        format!(
            "called from DAG or steps templates with different scheduling ({}): each call makes its own pod; judged as called from {:?}",
            names.join(", "),
            name(first)
        )
    });
    (Some(first), note)
}

/// Applies a `podSpecPatch` (JSON or YAML in a string) to the pod.
fn patch<'v>(r: &mut Reader, at: At<'v>, pod: &mut Pod) {
    let Some(text) = r.string(at, "podSpecPatch") else {
        return;
    };
    if text.contains("{{") {
        pod.unjudged.push(format!(
            "podSpecPatch holds run-time values ({}): what it sets is not judged",
            first_placeholder(&text)
        ));
        return;
    }
    let value = match kfsched_yaml::Tree::parse(&text) {
        Ok(t) => match t.documents.first().and_then(|d| d.root) {
            Some(root) => node_value(&t, root),
            None => return,
        },
        Err(e) => {
            r.error(
                at,
                None,
                format!("podSpecPatch is not valid JSON or YAML: {}", e.message),
            );
            return;
        }
    };
    apply_patch(r, &value, at, pod);
}

fn first_placeholder(text: &str) -> String {
    let start = text.find("{{").unwrap_or(0);
    let end = text[start..]
        .find("}}")
        .map_or(text.len(), |e| start + e + 2);
    text[start..end].to_string()
}

/// A strategic merge patch on the fields the scheduler reads.
fn apply_patch<'v>(r: &mut Reader, value: &Value, at: At<'v>, pod: &mut Pod) {
    let anchor = match at {
        At::Node(n) | At::Value(_, n) => n,
    };
    let p = At::Value(value, anchor);
    for (key, list) in [
        ("containers", &mut pod.containers),
        ("initContainers", &mut pod.init_containers),
    ] {
        let init = key == "initContainers";
        for c in workload::containers(r, p, key, init) {
            match list.iter_mut().find(|x| x.name == c.name) {
                Some(x) => {
                    x.requests.extend(c.requests);
                    x.limits.extend(c.limits);
                    x.sidecar |= c.sidecar;
                }
                None => list.push(c),
            }
        }
    }
    if let Some(t) = r.get(p, "tolerations") {
        pod.tolerations = r.tolerations(t, Shape::K8s);
    }
    if let Some(ns) = r.get(p, "nodeSelector") {
        let add = r.node_selector(ns);
        pod.node_selector
            .get_or_insert_with(Default::default)
            .extend(add);
    }
    if let Some(na) = r.get(p, "affinity").and_then(|a| r.get(a, "nodeAffinity")) {
        let wrapped = Value::Map(vec![(
            "nodeAffinity".into(),
            match na {
                At::Value(v, _) => v.clone(),
                At::Node(n) => node_value(r.tree, n),
            },
        )]);
        let (required, preferred) = r.affinity(At::Value(&wrapped, anchor), &mut pod.unjudged);
        let has = |k: &str| {
            value
                .get("affinity")
                .and_then(|a| a.get("nodeAffinity"))
                .and_then(|n| n.get(k))
                .is_some()
        };
        if has("requiredDuringSchedulingIgnoredDuringExecution") {
            pod.required = required;
        }
        if has("preferredDuringSchedulingIgnoredDuringExecution") {
            pod.preferred = preferred;
        }
    }
    for (key, slot) in [
        ("nodeName", &mut pod.node_name),
        ("schedulerName", &mut pod.scheduler_name),
        ("priorityClassName", &mut pod.priority_class_name),
        ("runtimeClassName", &mut pod.runtime_class_name),
    ] {
        if let Some(v) = r.string_field(p, key, Shape::K8s) {
            *slot = Some(v);
        }
    }
    // A strategic merge by topologyKey: a patch's constraint replaces the
    // pod's with the same key (its other fields merge, which the filter
    // does not read), and new ones go first.
    if let Some(t) = r.get(p, "topologySpreadConstraints") {
        let mut merged = r.spread(t);
        let keys: Vec<String> = merged.iter().map(|c| c.topology_key.clone()).collect();
        merged.extend(
            pod.topology_spread
                .drain(..)
                .filter(|c| !keys.contains(&c.topology_key)),
        );
        pod.topology_spread = merged;
    }
}
