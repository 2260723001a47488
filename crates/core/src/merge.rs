//! How rules merge into a component's scheduling (SPEC §3): tolerations
//! appended when missing, node-selector and pod-metadata keys set, required
//! node affinity ANDed into the existing terms, preferred and pod-affinity
//! terms appended, `strategy: replace` replacing the fields a rule names.

use k8s_openapi::api::core::v1::{PodAffinityTerm, WeightedPodAffinityTerm};

use kfsched_yaml::Value;

use crate::policy::{Rule, Strategy};
use crate::scheduling::{
    Changed, Opaque, Pref, Sched, Shape, Target, Term, Tol, opaque, pref_value, reqs_from, ser,
    sorted_value, term_value,
};

/// A message from merging a rule into a component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub error: bool,
    /// The rule field the note is about (`nodeSelector`, `affinity`, ...).
    pub field: &'static str,
    pub message: String,
}

/// The requirement of term `p` ANDed into term `e`: `e`'s entries first, then
/// `p`'s missing ones, appended in `e`'s own spelling of the keys.
fn and_term(e: &Term, p: &Term) -> Term {
    let mut raw = e.raw.clone();
    for (field, camel, snake) in [
        (false, "matchExpressions", "match_expressions"),
        (true, "matchFields", "match_fields"),
    ] {
        let missing: Vec<Value> = p
            .raw
            .get(camel)
            .and_then(Value::as_seq)
            .unwrap_or(&[])
            .iter()
            .filter(|rv| {
                let mut one = Vec::new();
                reqs_from(Some(&Value::Seq(vec![(*rv).clone()])), field, &mut one);
                one.first().is_none_or(|r| !e.reqs.contains(r))
            })
            .cloned()
            .collect();
        if missing.is_empty() {
            continue;
        }
        let key = if raw.get(snake).is_some() && raw.get(camel).is_none() {
            snake
        } else {
            camel
        };
        match raw.get(key) {
            Some(Value::Seq(existing)) => {
                let mut list = existing.clone();
                list.extend(missing);
                raw.set(key, Value::Seq(list));
            }
            _ => {
                // Keep matchExpressions ahead of matchFields, as the API's field order.
                if let (Value::Map(m), false) = (&mut raw, field) {
                    let pos = m
                        .iter()
                        .position(|(k, _)| k == "matchFields" || k == "match_fields")
                        .unwrap_or(m.len());
                    m.retain(|(k, _)| k != key);
                    m.insert(pos.min(m.len()), (key.to_string(), Value::Seq(missing)));
                } else {
                    raw.set(key, Value::Seq(missing));
                }
            }
        }
    }
    let mut reqs = e.reqs.clone();
    reqs.extend(p.reqs.iter().cloned());
    reqs.sort();
    reqs.dedup();
    Term { reqs, raw }
}

/// ANDs a requirement (terms ORed) into existing terms (ORed): SPEC §3.
pub(crate) fn and_terms(existing: &[Term], policy: &[Term]) -> Vec<Term> {
    if existing.is_empty() {
        return absorb(policy.to_vec());
    }
    if existing
        .iter()
        .all(|e| policy.iter().any(|p| e.contains_all(p)))
    {
        return existing.to_vec();
    }
    let mut combos = Vec::new();
    for e in existing {
        for p in policy {
            combos.push(and_term(e, p));
        }
    }
    absorb(combos)
}

/// Drops duplicate terms and terms that contain every requirement of another (A ∨ (A∧B) = A).
fn absorb(terms: Vec<Term>) -> Vec<Term> {
    let mut unique: Vec<Term> = Vec::new();
    for t in terms {
        if !unique.iter().any(|u| u.same_set(&t)) {
            unique.push(t);
        }
    }
    let keep: Vec<bool> = unique
        .iter()
        .enumerate()
        .map(|(i, t)| {
            !unique
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && t.contains_all(o) && !o.same_set(t))
        })
        .collect();
    unique
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(t, _)| t)
        .collect()
}

fn pod_term_value(t: &PodAffinityTerm) -> Value {
    sorted_value(&ser(t))
}

fn weighted_pod_term_value(t: &WeightedPodAffinityTerm) -> Value {
    sorted_value(&ser(t))
}

fn set_entry(
    list: &mut Vec<(String, Value)>,
    key: &str,
    value: &str,
    field: &'static str,
    what: &str,
    notes: &mut Vec<Note>,
) -> bool {
    if let Some(slot) = list.iter_mut().find(|(k, _)| k == key) {
        let old = slot.1.scalar_text().unwrap_or_default();
        if old == value && matches!(slot.1, Value::Str(_)) {
            return false;
        }
        if old != value {
            notes.push(Note {
                error: false,
                field,
                message: format!("{what} {key}={old} replaced by {key}={value}"),
            });
        }
        slot.1 = Value::str(value);
        return true;
    }
    list.push((key.to_string(), Value::str(value)));
    true
}

/// Merges one rule into `s` (SPEC §3), returning what changed and any notes.
pub fn apply(s: &mut Sched, rule: &Rule, shape: Shape, target: Target) -> (Changed, Vec<Note>) {
    let mut c = Changed::default();
    let mut notes = Vec::new();
    let v2 = target == Target::KfpV2Executor;
    if v2 && rule.has_pod_affinity() {
        notes.push(Note {
            error: true,
            field: "affinity",
            message: "asks for pod affinity or anti-affinity, which the KFP v2 backend does not apply to tasks, so no file can carry it; `kubectl kfsched export admission` applies it to the task's pods as the cluster admits them (or remove affinity.podAffinity/podAntiAffinity from this rule, or exclude this task)".into(),
        });
        return (c, notes);
    }
    c.tolerations = tolerations(s, rule, shape);
    c.node_selector = node_selector(s, rule, v2, &mut notes);
    if rule.strategy == Strategy::Replace && rule.names_affinity {
        replace_affinity(s, rule, shape, &mut c);
    } else {
        merge_affinity(s, rule, shape, v2, &mut c, &mut notes);
    }
    for (k, v) in &rule.pod_labels {
        c.labels |= set_entry(&mut s.labels, k, v, "podLabels", "pod label", &mut notes);
    }
    for (k, v) in &rule.pod_annotations {
        c.annotations |= set_entry(
            &mut s.annotations,
            k,
            v,
            "podAnnotations",
            "pod annotation",
            &mut notes,
        );
    }
    (c, notes)
}

/// Tolerations: appended when missing, or replaced as a whole.
fn tolerations(s: &mut Sched, rule: &Rule, shape: Shape) -> bool {
    let mut changed = false;
    if rule.strategy == Strategy::Replace && rule.names_tolerations {
        let mut new: Vec<Tol> = Vec::new();
        for tol in rule.tolerations_as(shape) {
            if !new.iter().any(|n| n.key == tol.key) {
                new.push(tol.clone());
            }
        }
        if !same_tols(&s.tolerations, &new) {
            s.tolerations = new;
            changed = true;
        }
    } else {
        for tol in rule.tolerations_as(shape) {
            if !s
                .tolerations
                .iter()
                .any(|e| e.key.is_some() && e.key == tol.key)
            {
                s.tolerations.push(tol.clone());
                changed = true;
            }
        }
    }
    changed
}

/// The node selector: keys set one by one, or replaced as a whole.
fn node_selector(s: &mut Sched, rule: &Rule, v2: bool, notes: &mut Vec<Note>) -> bool {
    let mut changed = false;
    if rule.strategy == Strategy::Replace && rule.names_node_selector {
        let new: Vec<(String, Value)> = rule
            .node_selector
            .iter()
            .map(|(k, v)| (k.clone(), Value::str(v)))
            .collect();
        if s.node_selector_json.is_some() || !same_pairs(&s.node_selector, &new) {
            s.node_selector = new;
            s.node_selector_json = None;
            changed = true;
        }
    } else if !rule.node_selector.is_empty() {
        if v2 && s.node_selector_json.is_some() {
            notes.push(Note {
                error: true,
                field: "nodeSelector",
                message: "merges a nodeSelector into an executor that has nodeSelectorJson, which the KFP driver prefers over labels (the labels would be ignored); use strategy: replace to replace it".into(),
            });
        } else {
            for (k, v) in &rule.node_selector {
                changed |= set_entry(
                    &mut s.node_selector,
                    k,
                    v,
                    "nodeSelector",
                    "nodeSelector",
                    notes,
                );
            }
        }
    }
    changed
}

/// `strategy: replace` of the whole affinity.
fn replace_affinity(s: &mut Sched, rule: &Rule, shape: Shape, c: &mut Changed) {
    let mut required: Vec<Term> = Vec::new();
    for step in &rule.required {
        let terms: Vec<Term> = step.iter().map(term_value).collect();
        required = and_terms(&required, &terms);
    }
    s.step += 1;
    s.required_at = (!required.is_empty()).then_some(s.step);
    let preferred: Vec<Pref> = rule
        .preferred
        .iter()
        .map(|p| {
            s.step += 1;
            Pref {
                added: Some(s.step),
                ..pref_value(p, shape)
            }
        })
        .collect();
    if !same_terms(&s.required, &required) || !s.affinity_json.is_empty() {
        c.required = true;
    }
    if !same_prefs(&s.preferred, &preferred) || !s.affinity_json.is_empty() {
        c.preferred = true;
    }
    s.required = required;
    s.preferred = preferred;
    s.affinity_json.clear();
    for (list, new) in pod_lists(s, rule) {
        let new: Vec<Opaque> = new.iter().map(opaque).collect();
        if list.len() != new.len() || list.iter().zip(&new).any(|(a, b)| a.key != b.key) {
            *list = new;
            c.pod_affinity = true;
        }
    }
    if c.affinity() {
        c.replaced_affinity = true;
    }
}

/// Required terms ANDed in, preferred and pod-affinity terms appended.
fn merge_affinity(
    s: &mut Sched,
    rule: &Rule,
    shape: Shape,
    v2: bool,
    c: &mut Changed,
    notes: &mut Vec<Note>,
) {
    if rule.has_required() {
        if v2 && !s.affinity_json.is_empty() {
            notes.push(Note {
                error: true,
                field: "affinity",
                message: "merges a required node affinity into an executor that has nodeAffinityJson, whose required terms the KFP driver ORs with these (the requirement would not hold); use strategy: replace to replace it".into(),
            });
        } else {
            for step in &rule.required {
                let terms: Vec<Term> = step.iter().map(term_value).collect();
                let next = and_terms(&s.required, &terms);
                if !same_terms(&s.required, &next) {
                    c.required = true;
                }
                if s.required.is_empty() && !next.is_empty() && s.required_at.is_none() {
                    s.step += 1;
                    s.required_at = Some(s.step);
                }
                s.required = next;
            }
        }
    }
    for p in &rule.preferred {
        let pv = pref_value(p, shape);
        if !s
            .preferred
            .iter()
            .any(|e| e.weight == pv.weight && e.term.same_set(&pv.term))
        {
            s.step += 1;
            s.preferred.push(Pref {
                added: Some(s.step),
                ..pv
            });
            c.preferred = true;
        }
    }
    for (list, new) in pod_lists(s, rule) {
        for n in new {
            let o = opaque(&n);
            if !list.iter().any(|e| e.key == o.key) {
                list.push(o);
                c.pod_affinity = true;
            }
        }
    }
}

/// The four pod (anti-)affinity lists next to what the rule brings for each.
fn pod_lists<'s>(s: &'s mut Sched, rule: &Rule) -> [(&'s mut Vec<Opaque>, Vec<Value>); 4] {
    [
        (
            &mut s.pod_affinity_required,
            rule.pod_affinity_required
                .iter()
                .map(pod_term_value)
                .collect(),
        ),
        (
            &mut s.pod_affinity_preferred,
            rule.pod_affinity_preferred
                .iter()
                .map(weighted_pod_term_value)
                .collect(),
        ),
        (
            &mut s.pod_anti_affinity_required,
            rule.pod_anti_affinity_required
                .iter()
                .map(pod_term_value)
                .collect(),
        ),
        (
            &mut s.pod_anti_affinity_preferred,
            rule.pod_anti_affinity_preferred
                .iter()
                .map(weighted_pod_term_value)
                .collect(),
        ),
    ]
}

/// After all rules: a field that ends up equal to what the component
/// had (a `strategy: replace` that re-spelled an equal value, then a
/// merge that added back what the file already held) is not changed,
/// and keeps the file's spelling. Without this the second rewrite of a
/// rewritten file would still change it.
pub fn settle(after: &mut Sched, before: &Sched, c: &mut Changed) {
    if c.tolerations && same_tols(&before.tolerations, &after.tolerations) {
        after.tolerations = before.tolerations.clone();
        c.tolerations = false;
    }
    if c.node_selector
        && before.node_selector_json == after.node_selector_json
        && same_pairs(&before.node_selector, &after.node_selector)
    {
        after.node_selector = before.node_selector.clone();
        c.node_selector = false;
    }
    let same_pods = |a: &[Opaque], b: &[Opaque]| {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.key == y.key)
    };
    if c.affinity()
        && same_terms(&before.required, &after.required)
        && same_prefs(&before.preferred, &after.preferred)
        && before.affinity_json == after.affinity_json
        && same_pods(&before.pod_affinity_required, &after.pod_affinity_required)
        && same_pods(
            &before.pod_affinity_preferred,
            &after.pod_affinity_preferred,
        )
        && same_pods(
            &before.pod_anti_affinity_required,
            &after.pod_anti_affinity_required,
        )
        && same_pods(
            &before.pod_anti_affinity_preferred,
            &after.pod_anti_affinity_preferred,
        )
    {
        after.required = before.required.clone();
        after.preferred = before.preferred.clone();
        after.pod_affinity_required = before.pod_affinity_required.clone();
        after.pod_affinity_preferred = before.pod_affinity_preferred.clone();
        after.pod_anti_affinity_required = before.pod_anti_affinity_required.clone();
        after.pod_anti_affinity_preferred = before.pod_anti_affinity_preferred.clone();
        after.required_at = before.required_at;
        c.required = false;
        c.preferred = false;
        c.pod_affinity = false;
        c.replaced_affinity = false;
    }
}

fn same_tols(a: &[Tol], b: &[Tol]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.key.is_some() && x.key == y.key)
}

fn same_pairs(a: &[(String, Value)], b: &[(String, Value)]) -> bool {
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.iter()
                .any(|(k2, v2)| k == k2 && v.scalar_text() == v2.scalar_text())
        })
}

fn same_terms(a: &[Term], b: &[Term]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_set(y))
}

fn same_prefs(a: &[Pref], b: &[Pref]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.weight == y.weight && x.term.same_set(&y.term))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|s| s.to_string()).collect()),
        }
    }

    fn term(reqs: Vec<NodeSelectorRequirement>) -> Term {
        term_value(&NodeSelectorTerm {
            match_expressions: Some(reqs),
            match_fields: None,
        })
    }

    #[test]
    fn and_of_terms_is_m_by_k_with_absorption() {
        let e1 = term(vec![req("a", "In", &["1"])]);
        let e2 = term(vec![req("b", "In", &["2"])]);
        let p1 = term(vec![req("c", "Exists", &[])]);
        let p2 = term(vec![req("d", "Exists", &[])]);
        let out = and_terms(&[e1.clone(), e2.clone()], &[p1.clone(), p2.clone()]);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].reqs.len(), 2);
        // E-major order: (a∧c), (a∧d), (b∧c), (b∧d)
        assert_eq!(
            out[1]
                .reqs
                .iter()
                .map(|r| r.key.as_str())
                .collect::<Vec<_>>(),
            vec!["a", "d"]
        );
        // idempotent
        let again = and_terms(&out, &[p1.clone(), p2.clone()]);
        assert_eq!(again.len(), 4);
        assert!(again.iter().zip(&out).all(|(a, b)| a.same_set(b)));
        // absorption: E1 = a, E2 = a∧b; ANDing c gives (a∧c), (a∧b∧c) → (a∧c) only
        let e3 = term(vec![req("a", "In", &["1"]), req("b", "In", &["2"])]);
        let out = and_terms(&[e1, e3], &[p1]);
        assert_eq!(out.len(), 1);
        // values compare as sorted sets
        let x = term(vec![req("z", "In", &["2", "1"])]);
        let y = term(vec![req("z", "In", &["1", "2"])]);
        assert!(x.same_set(&y));
    }
}
