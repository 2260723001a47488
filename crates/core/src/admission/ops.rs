//! A rule's JSON Patch operations: its tolerations, node selector, labels,
//! annotations, names, topology spread and affinity merged into the pod as
//! SPEC §3 merges them into a file, each computed on the pod as the rules
//! before it left it ([`State`]).

use serde_json::Value as Json;

use super::cel::{self, lit, pointer_segment};
use super::state::{Chain, State, default_canon};
use super::terms;
use crate::policy::{Rule, Strategy};
use crate::scheduling::{Shape, TolKey, tol_from_raw, tol_value};

/// A rule's tolerations in the pod's shape, each with its comparable key,
/// duplicates after the first left out (the merge would not add them
/// twice, and `strategy: replace` keeps one of each).
fn rule_tolerations(rule: &Rule) -> Vec<(TolKey, Json)> {
    let mut out: Vec<(TolKey, Json)> = Vec::new();
    for t in &rule.tolerations {
        let v = tol_value(t, Shape::K8s);
        if let Some(key) = tol_from_raw(&v).key {
            if !out.iter().any(|(k, _)| *k == *key) {
                out.push(((*key).clone(), v.to_json()));
            }
        }
    }
    out
}

/// A toleration of the policy in [`super::state::toleration_canon`]'s form.
fn canon(k: &TolKey) -> String {
    format!(
        "{}|{}|{}|{}|{}",
        k.key,
        k.operator,
        k.value,
        k.effect,
        k.seconds.map(|s| s.to_string()).unwrap_or_default()
    )
}

/// DefaultTolerationSeconds gives every pod these (`node.kubernetes.io/not-ready`
/// and `unreachable`, NoExecute, 300 s) before any policy runs: a
/// `strategy: replace` keeps them, as the pod of a rewritten file gets them
/// after the template's tolerations.
fn default_toleration(x: &str) -> String {
    format!(
        "{x}.?key.orValue('') in ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'] && {x}.?operator.orValue('') == 'Exists' && {x}.?effect.orValue('') == 'NoExecute'"
    )
}

/// The JSON Patch operations of a rule's tolerations.
fn toleration_ops(rule: &Rule, s: &mut State, c: &mut Chain) -> Option<String> {
    let tols = rule_tolerations(rule);
    if tols.is_empty() {
        return None;
    }
    let ids: Vec<String> = tols.iter().map(|(k, _)| canon(k)).collect();
    let now = s.tolerations.clone();
    if rule.strategy == Strategy::Replace && rule.names_tolerations {
        // Replaced unless the pod has exactly these (the defaults aside), in
        // order; the defaults whose keys the rule does not name are kept.
        let keys: Vec<&str> = tols.iter().map(|(k, _)| k.key.as_str()).collect();
        let same = c.define(
            "tolerations_same",
            format!(
                "{now}.filter(x, !{}) == {}",
                default_canon("x"),
                cel::lits(&ids)
            ),
        );
        let mut ops = vec![cel::put("/spec/tolerations", "[]")];
        for (_, v) in &tols {
            ops.push(cel::put("/spec/tolerations/-", &cel::data(v)));
        }
        let kept = format!(
            "object.spec.?tolerations.orValue([]).filter(x, ({}) && !(x.?key.orValue('') in {}) && ({}) in {now})",
            default_toleration("x"),
            cel::lits(&keys),
            super::state::toleration_canon("x"),
        );
        let out = format!(
            "{same} ? [] :\n  [{}] +\n  {kept}.map(x, {})",
            ops.join(",\n   "),
            cel::op_data("add", "'/spec/tolerations/-'", Some("x"))
        );
        c.set(
            &mut s.tolerations,
            "tolerations",
            format!(
                "{same} ? {now} : {} + {now}.filter(x, {} && !(x.split('|')[0] in {}))",
                cel::lits(&ids),
                default_canon("x"),
                cel::lits(&keys)
            ),
        );
        c.raise(&mut s.tolerations_present, "tolerations_present", "true");
        return Some(out);
    }
    let mut out = vec![format!(
        "({} ? [] : [{}])",
        s.tolerations_present,
        cel::put("/spec/tolerations", "[]")
    )];
    for ((_, v), id) in tols.iter().zip(&ids) {
        out.push(format!(
            "({} in {now} ? [] :\n   [{}])",
            lit(id),
            cel::put("/spec/tolerations/-", &cel::data(v))
        ));
    }
    c.set(
        &mut s.tolerations,
        "tolerations",
        format!("{now} + {}.filter(x, !(x in {now}))", cel::lits(&ids)),
    );
    c.raise(&mut s.tolerations_present, "tolerations_present", "true");
    Some(out.join(" +\n  "))
}

/// A map of strings at `path` (`/spec/nodeSelector`, `/metadata/labels`):
/// each key set to the rule's value (an equal value set again leaves the
/// pod as it is), or the whole map replaced. `present` says whether the
/// map exists; `None` when it always does.
fn map_ops(
    path: &str,
    pairs: &[(String, String)],
    replace: bool,
    present: Option<&str>,
) -> Option<String> {
    if pairs.is_empty() {
        return None;
    }
    let whole = cel::put(path, &cel::string_map(pairs));
    if replace {
        return Some(format!("[{whole}]"));
    }
    let each: Vec<String> = pairs
        .iter()
        .map(|(k, v)| cel::put(&format!("{path}/{}", pointer_segment(k)), &lit(v)))
        .collect();
    let each = format!("[{}]", each.join(",\n   "));
    Some(match present {
        Some(p) => format!("({p} ? {each} : [{whole}])"),
        None => each,
    })
}

/// `priorityClassName`, `schedulerName`, `runtimeClassName`: set to the
/// rule's value. A new priority class also drops the `priority` (and
/// `preemptionPolicy`) the Priority admission plugin computed from the old
/// one: the plugin runs again once a policy changed the pod, computes them
/// from the new class, and would refuse a pod whose priority disagrees.
fn name_ops(rule: &Rule, s: &mut State, c: &mut Chain) -> Vec<String> {
    let mut out = Vec::new();
    for (field, value) in [
        ("priorityClassName", &rule.priority_class_name),
        ("schedulerName", &rule.scheduler_name),
        ("runtimeClassName", &rule.runtime_class_name),
    ] {
        let Some(v) = value else { continue };
        let now = match field {
            "priorityClassName" => &mut s.priority_class_name,
            "schedulerName" => &mut s.scheduler_name,
            _ => &mut s.runtime_class_name,
        };
        let differs = format!("{now} != {}", lit(v));
        c.set(now, &crate::k8s::snake_case(field), lit(v));
        let mut op = format!(
            "({differs} ? [{}] : [])",
            cel::put(&format!("/spec/{field}"), &lit(v))
        );
        if field == "priorityClassName" {
            for (f, path, name) in [
                (
                    &mut s.priority_present,
                    "/spec/priority",
                    "priority_present",
                ),
                (
                    &mut s.preemption_present,
                    "/spec/preemptionPolicy",
                    "preemption_present",
                ),
            ] {
                op.push_str(&format!(
                    " +\n   ({differs} && {f} ? [{}] : [])",
                    cel::op_data("remove", &lit(path), None)
                ));
                let e = format!("!({differs}) && {f}");
                c.set(f, name, e);
            }
        }
        out.push(op);
    }
    out
}

/// Topology spread constraints: each appended unless the pod has one with
/// its topologyKey and whenUnsatisfiable; under `strategy: replace` the
/// list becomes the rule's (an equal list written again leaves the pod as
/// it is).
fn spread_ops(rule: &Rule, s: &mut State, c: &mut Chain) -> Option<String> {
    let items: Vec<Json> = rule
        .topology_spread_constraints
        .iter()
        .map(crate::scheduling::ser)
        .collect();
    if items.is_empty() {
        return None;
    }
    let key_of = |j: &Json| {
        format!(
            "{}|{}",
            j["topologyKey"].as_str().unwrap_or_default(),
            j["whenUnsatisfiable"].as_str().unwrap_or_default()
        )
    };
    let now = s.spread.clone();
    if rule.strategy == Strategy::Replace && rule.names_topology_spread {
        let mut ops = vec![cel::put("/spec/topologySpreadConstraints", "[]")];
        let mut keys = Vec::new();
        for j in &items {
            ops.push(cel::put("/spec/topologySpreadConstraints/-", &cel::data(j)));
            keys.push(key_of(j));
        }
        c.set(&mut s.spread, "spread", cel::lits(&keys));
        c.raise(&mut s.spread_present, "spread_present", "true");
        return Some(format!("[{}]", ops.join(",\n   ")));
    }
    let mut seen: Vec<String> = Vec::new();
    let mut out = vec![format!(
        "({} ? [] : [{}])",
        s.spread_present,
        cel::put("/spec/topologySpreadConstraints", "[]")
    )];
    for j in &items {
        let key = key_of(j);
        if seen.contains(&key) {
            continue;
        }
        out.push(format!(
            "({} in {now} ? [] :\n   [{}])",
            lit(&key),
            cel::put("/spec/topologySpreadConstraints/-", &cel::data(j))
        ));
        seen.push(key);
    }
    c.set(
        &mut s.spread,
        "spread",
        format!("{now} + {}.filter(x, !(x in {now}))", cel::lits(&seen)),
    );
    c.raise(&mut s.spread_present, "spread_present", "true");
    Some(out.join(" +\n  "))
}

/// The operations of one rule, applied after those of the rules before it
/// (`s`, which this updates for the rules after it), when the rule selects
/// the pod; `None` when it sets nothing.
pub(super) fn rule_ops(rule: &Rule, s: &mut State, c: &mut Chain) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(toleration_ops(rule, s, c));
    let replace = rule.strategy == Strategy::Replace;
    let present = s.node_selector_present.clone();
    parts.extend(map_ops(
        "/spec/nodeSelector",
        &rule.node_selector,
        replace && rule.names_node_selector,
        Some(&present),
    ));
    if !rule.node_selector.is_empty() {
        c.raise(
            &mut s.node_selector_present,
            "node_selector_present",
            "true",
        );
    }
    // Labels and annotations always merge (KFP's own metadata stays). The
    // annotations exist: the admitted annotation is written first.
    let present = s.labels_present.clone();
    parts.extend(map_ops(
        "/metadata/labels",
        &rule.pod_labels,
        false,
        Some(&present),
    ));
    if !rule.pod_labels.is_empty() {
        c.raise(&mut s.labels_present, "labels_present", "true");
    }
    parts.extend(map_ops(
        "/metadata/annotations",
        &rule.pod_annotations,
        false,
        None,
    ));
    parts.extend(name_ops(rule, s, c));
    parts.extend(spread_ops(rule, s, c));
    parts.extend(terms::affinity_ops(rule, s, c));
    if parts.is_empty() {
        return None;
    }
    let parts: Vec<String> = parts.iter().map(|p| format!("({p})")).collect();
    Some(parts.join(" +\n  "))
}
