//! The pod-spec fields every Kubernetes-shaped format writes alike (an Argo
//! template and a workload's pod template): `nodeSelector`, `tolerations`,
//! `affinity`, the priority class, scheduler and runtime class names,
//! `topologySpreadConstraints` and the pod's `metadata`, read into and
//! written from a component's scheduling.

use super::{Change, field, field_own};
use crate::scheduling::{
    Changed, Sched, Term, opaque, pref_from_k8s, spread_from_raw, term_from_raw,
};
use kfsched_yaml::edit::{Edit, Placement};
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::{Value, effective_value};

const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";
const PREFERRED: &str = "preferredDuringSchedulingIgnoredDuringExecution";

/// Edits that write a changed component's `nodeSelector`, `tolerations` and
/// `affinity` (in that order) into `holder`, an Argo template or a pod spec:
/// an existing field is reconciled, a missing one inserted at `placement`.
/// `affinity_base` is the affinity the new one starts from; `v1` marks a
/// kfp 1.8 file (new maps in call order, Kubernetes objects' keys sorted).
pub(crate) fn pod_field_edits(
    tree: &Tree,
    holder: NodeId,
    ch: &Change,
    affinity_base: Option<Value>,
    v1: bool,
    placement: &Placement,
) -> Vec<Edit> {
    let c = ch.changed;
    let mut edits = Vec::new();
    let mut set = |key: &str, desired: Value| match tree.get_value(holder, key) {
        Some(node) => edits.push(Edit::Reconcile {
            node,
            desired,
            placement: Placement::AsDesired,
        }),
        None => edits.push(Edit::Insert {
            map: holder,
            key: key.to_string(),
            value: desired,
            placement: placement.clone(),
        }),
    };
    if c.node_selector {
        let mut m = ch.after.node_selector.clone();
        if ch.before().node_selector.is_empty() && !v1 {
            m.sort_by(|a, b| a.0.cmp(&b.0));
        }
        set("nodeSelector", Value::Map(m));
    }
    if c.tolerations {
        set(
            "tolerations",
            Value::Seq(
                ch.after
                    .tolerations
                    .iter()
                    .map(|t| Value::clone(&t.raw))
                    .collect(),
            ),
        );
    }
    if c.affinity() {
        set("affinity", affinity_value(affinity_base, &ch.after, c, v1));
    }
    edits
}

/// Edits that write a changed `priorityClassName` and `schedulerName` into
/// `holder`, a pod spec or an Argo template (which has both fields).
pub(crate) fn name_edits(
    tree: &Tree,
    holder: NodeId,
    ch: &Change,
    placement: &Placement,
) -> Vec<Edit> {
    let c = ch.changed;
    let names = [
        (
            "priorityClassName",
            c.priority_class_name,
            &ch.after.priority_class_name,
        ),
        ("schedulerName", c.scheduler_name, &ch.after.scheduler_name),
    ];
    names
        .into_iter()
        .filter_map(|(key, on, v)| {
            let v = v.as_ref().filter(|_| on)?.clone();
            Some(match tree.get_value(holder, key) {
                Some(node) => Edit::Reconcile {
                    node,
                    desired: v,
                    placement: Placement::AsDesired,
                },
                None => Edit::Insert {
                    map: holder,
                    key: key.to_string(),
                    value: v,
                    placement: placement.clone(),
                },
            })
        })
        .collect()
}

/// `runtimeClassName` and `topologySpreadConstraints` as a change sets
/// them (an Argo template has no such fields: they go in its podSpecPatch).
pub(crate) fn spec_only_fields(ch: &Change) -> Vec<(&'static str, Value)> {
    let (c, a) = (ch.changed, &ch.after);
    let mut out = Vec::new();
    if let (true, Some(v)) = (c.runtime_class_name, &a.runtime_class_name) {
        out.push(("runtimeClassName", v.clone()));
    }
    if c.topology_spread {
        out.push((
            "topologySpreadConstraints",
            Value::Seq(a.topology_spread.iter().map(|t| t.raw.clone()).collect()),
        ));
    }
    out
}

/// Reads the pod-spec fields beside affinity (`own` gives a field's value).
pub(crate) fn read_pod_fields(own: impl Fn(&str) -> Option<Value>, s: &mut Sched) {
    let name = |k: &str| own(k).filter(|v| !v.is_empty_or_null());
    s.priority_class_name = name("priorityClassName");
    s.scheduler_name = name("schedulerName");
    s.runtime_class_name = name("runtimeClassName");
    s.priority = own("priority");
    if let Some(Value::Seq(items)) = own("topologySpreadConstraints") {
        s.topology_spread = items.iter().map(spread_from_raw).collect();
    }
}

/// Edits for pod labels and annotations in a template's (or pod template's)
/// `metadata`. New keys go after the existing ones and a map kfsched creates
/// has its keys sorted; a kfp 1.8 file (`v1`) gets them where kfp 1.8 puts
/// them (see [`kfp_v1_metadata`]).
pub(crate) fn metadata_edits(
    tree: &Tree,
    holder: NodeId,
    ch: &Change,
    v1: bool,
    placement: &Placement,
) -> Vec<Edit> {
    let c = ch.changed;
    if v1 && (c.labels || c.annotations) {
        return kfp_v1_metadata(tree, holder, ch, placement);
    }
    let mut parts: Vec<(&str, Vec<(String, Value)>)> = Vec::new();
    for (on, key, after, before) in [
        (
            c.annotations,
            "annotations",
            &ch.after.annotations,
            &ch.before().annotations,
        ),
        (c.labels, "labels", &ch.after.labels, &ch.before().labels),
    ] {
        if !on {
            continue;
        }
        let mut m = after.clone();
        if before.is_empty() {
            m.sort_by(|a, b| a.0.cmp(&b.0));
        }
        parts.push((key, m));
    }
    let mut edits = Vec::new();
    match field_own(tree, holder, "metadata").filter(|&m| tree.kind(m) == Kind::Map) {
        Some(md) => {
            for (key, m) in parts {
                match tree.get_value(md, key) {
                    Some(node) => edits.push(Edit::Reconcile {
                        node,
                        desired: Value::Map(m),
                        placement: Placement::End,
                    }),
                    None => edits.push(Edit::Insert {
                        map: md,
                        key: key.to_string(),
                        value: Value::Map(m),
                        placement: Placement::End,
                    }),
                }
            }
        }
        None => {
            let value = Value::Map(
                parts
                    .into_iter()
                    .map(|(k, m)| (k.to_string(), Value::Map(m)))
                    .collect(),
            );
            match tree.get_value(holder, "metadata") {
                Some(node) => edits.push(Edit::Reconcile {
                    node,
                    desired: value,
                    placement: Placement::End,
                }),
                None => edits.push(Edit::Insert {
                    map: holder,
                    key: "metadata".into(),
                    value,
                    placement: placement.clone(),
                }),
            }
        }
    }
    edits
}

/// KFP's own template metadata keys.
const KFP_KEY_PREFIX: &str = "pipelines.kubeflow.org/";

/// Pod labels and annotations as kfp 1.8 writes them: `op.add_pod_label` /
/// `op.add_pod_annotation` fill the op's maps when the pipeline is defined,
/// and the compiler adds its own `pipelines.kubeflow.org/*` keys after them
/// when it writes the template; so a new key goes before the first of
/// KFP's keys. `metadata` holds `annotations` before `labels` once the
/// template has an annotation of its own (a user's, or the task display
/// name), else `labels` first.
fn kfp_v1_metadata(tree: &Tree, holder: NodeId, ch: &Change, placement: &Placement) -> Vec<Edit> {
    let labels = kfp_v1_order(&ch.before().labels, &ch.after.labels);
    let annotations = kfp_v1_order(&ch.before().annotations, &ch.after.annotations);
    // Edited where the template writes it; read as merges make it.
    let md_node = field_own(tree, holder, "metadata").filter(|&m| tree.kind(m) == Kind::Map);
    let mut md = field(tree, holder, "metadata")
        .filter(|&m| tree.kind(m) == Kind::Map)
        .map_or(Value::Map(vec![]), |m| effective_value(tree, m));
    if !labels.is_empty() {
        md.set("labels", Value::Map(labels));
    }
    if !annotations.is_empty() {
        md.set("annotations", Value::Map(annotations.clone()));
    }
    let own_annotation = annotations.iter().any(|(k, _)| {
        !k.starts_with(KFP_KEY_PREFIX) || k == "pipelines.kubeflow.org/task_display_name"
    });
    if let Value::Map(entries) = &mut md {
        let pos = |k: &str| entries.iter().position(|(e, _)| e == k);
        if let (Some(a), Some(l)) = (pos("annotations"), pos("labels")) {
            if (a < l) != own_annotation {
                entries.swap(a, l);
            }
        }
    }
    match (md_node, tree.get_value(holder, "metadata")) {
        (Some(node), _) | (None, Some(node)) => vec![Edit::Reconcile {
            node,
            desired: md,
            placement: Placement::AsDesired,
        }],
        (None, None) => vec![Edit::Insert {
            map: holder,
            key: "metadata".into(),
            value: md,
            placement: placement.clone(),
        }],
    }
}

/// `after`'s entries in kfp 1.8's order: those `before` had where they were,
/// new ones before the first of KFP's own keys (at the end when there is
/// none), in the order the rules added them.
fn kfp_v1_order(before: &[(String, Value)], after: &[(String, Value)]) -> Vec<(String, Value)> {
    let value = |k: &str| after.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
    let mut out: Vec<(String, Value)> = before
        .iter()
        .filter_map(|(k, _)| value(k).map(|v| (k.clone(), v)))
        .collect();
    let at = out
        .iter()
        .position(|(k, _)| k.starts_with(KFP_KEY_PREFIX))
        .unwrap_or(out.len());
    let new: Vec<(String, Value)> = after
        .iter()
        .filter(|(k, _)| !before.iter().any(|(b, _)| b == k))
        .cloned()
        .collect();
    out.splice(at..at, new);
    out
}

/// Reads a core/v1 Affinity value into a [`Sched`].
pub(crate) fn read_affinity(a: &Value, s: &mut Sched) {
    if let Some(na) = a.get("nodeAffinity") {
        if let Some(Value::Seq(terms)) = na.get(REQUIRED).and_then(|r| r.get("nodeSelectorTerms")) {
            for t in terms {
                let term = term_from_raw(t);
                if !term.reqs.is_empty() {
                    s.required.push(term);
                }
            }
        }
        if let Some(Value::Seq(prefs)) = na.get(PREFERRED) {
            s.preferred = prefs.iter().map(pref_from_k8s).collect();
        }
    }
    for (key, req, pref) in [("podAffinity", 0, 1), ("podAntiAffinity", 2, 3)] {
        let Some(pa) = a.get(key) else { continue };
        let lists = [
            &mut s.pod_affinity_required,
            &mut s.pod_affinity_preferred,
            &mut s.pod_anti_affinity_required,
            &mut s.pod_anti_affinity_preferred,
        ];
        if let Some(Value::Seq(items)) = pa.get(REQUIRED) {
            *lists[req] = items.iter().map(opaque).collect();
        }
        if let Some(Value::Seq(items)) = pa.get(PREFERRED) {
            *lists[pref] = items.iter().map(opaque).collect();
        }
    }
}

/// Sets `key` in a map value: in place when present, else at the sorted
/// position when kfsched created the map (or the file keeps keys sorted),
/// else after the last key.
fn put(map: &mut Value, key: &str, value: Value, fresh: bool) {
    if let Value::Map(m) = map {
        if let Some(slot) = m.iter_mut().find(|(k, _)| k == key) {
            slot.1 = value;
        } else if fresh {
            let pos = m
                .iter()
                .position(|(k, _)| k.as_str() > key)
                .unwrap_or(m.len());
            m.insert(pos, (key.to_string(), value));
        } else {
            m.push((key.to_string(), value));
        }
    }
}

fn take_map(parent: &Value, key: &str) -> (Value, bool) {
    match parent.get(key) {
        Some(v @ Value::Map(_)) => (v.clone(), false),
        _ => (Value::Map(vec![]), true),
    }
}

/// Empty terms stay where they are; the combined terms take the place of the
/// first non-empty one (or go at the end).
pub(crate) fn place_terms(original: &[Value], new: &[Term]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut placed = false;
    for t in original {
        if term_from_raw(t).reqs.is_empty() {
            out.push(t.clone());
        } else if !placed {
            out.extend(new.iter().map(|t| t.raw.clone()));
            placed = true;
        }
    }
    if !placed {
        out.extend(new.iter().map(|t| t.raw.clone()));
    }
    out
}

/// The core/v1 Affinity a component should have after the change.
/// `sorted`: the file keeps Kubernetes objects' keys in alphabetical order
/// (kfp 1.8 writes them in the kubernetes client's attribute order), so new
/// keys go at their sorted place rather than at the end.
pub(crate) fn affinity_value(
    base: Option<Value>,
    after: &Sched,
    c: Changed,
    sorted: bool,
) -> Value {
    // A replaced affinity is written whole from `after`.
    let c = if c.replaced_affinity {
        Changed {
            required: true,
            preferred: true,
            pod_affinity: true,
            ..c
        }
    } else {
        c
    };
    let fresh = base.is_none() || sorted;
    let mut a = base.unwrap_or(Value::Map(vec![]));
    if !matches!(a, Value::Map(_)) {
        a = Value::Map(vec![]);
    }
    if c.required || c.preferred {
        let (mut na, na_fresh) = take_map(&a, "nodeAffinity");
        let na_fresh = na_fresh || fresh;
        if c.required {
            let (mut req, req_fresh) = take_map(&na, REQUIRED);
            let original: Vec<Value> = req
                .get("nodeSelectorTerms")
                .and_then(Value::as_seq)
                .map(<[Value]>::to_vec)
                .unwrap_or_default();
            let terms = place_terms(&original, &after.required);
            if terms.is_empty() {
                na.remove(REQUIRED);
            } else {
                put(&mut req, "nodeSelectorTerms", Value::Seq(terms), req_fresh);
                put(&mut na, REQUIRED, req, na_fresh);
            }
        }
        if c.preferred {
            if after.preferred.is_empty() {
                na.remove(PREFERRED);
            } else {
                put(
                    &mut na,
                    PREFERRED,
                    Value::Seq(after.preferred.iter().map(|p| p.raw.clone()).collect()),
                    na_fresh,
                );
            }
        }
        if na.as_map().is_some_and(<[(String, Value)]>::is_empty) {
            a.remove("nodeAffinity");
        } else {
            put(&mut a, "nodeAffinity", na, fresh);
        }
    }
    if c.pod_affinity {
        for (key, req, pref) in [
            (
                "podAffinity",
                &after.pod_affinity_required,
                &after.pod_affinity_preferred,
            ),
            (
                "podAntiAffinity",
                &after.pod_anti_affinity_required,
                &after.pod_anti_affinity_preferred,
            ),
        ] {
            let (mut pa, pa_fresh) = take_map(&a, key);
            let pa_fresh = pa_fresh || fresh;
            for (k, list) in [(REQUIRED, req), (PREFERRED, pref)] {
                if list.is_empty() {
                    pa.remove(k);
                } else {
                    put(
                        &mut pa,
                        k,
                        Value::Seq(list.iter().map(|o| o.raw.clone()).collect()),
                        pa_fresh,
                    );
                }
            }
            if pa.as_map().is_some_and(<[(String, Value)]>::is_empty) {
                a.remove(key);
            } else {
                put(&mut a, key, pa, fresh);
            }
        }
    }
    a
}
