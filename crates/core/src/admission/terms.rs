//! Node and pod affinity as JSON Patch operations, with SPEC §3's merge:
//! each step of a rule's required node affinity ANDed into every non-empty
//! term (empty terms stay where they are, the combined terms take the
//! place of the first non-empty one; duplicates and absorbed terms, A ∨
//! (A∧B) = A, dropped), unless every non-empty term already holds one of
//! the step's terms; preferred and pod affinity terms appended when
//! missing; `strategy: replace` writing the whole affinity unless the pod
//! already reads as the rule's. The comparisons are the merge's own:
//! requirements as (key, operator, set of values), terms as sets of
//! requirements, pod affinity terms as whole values.
//!
//! Everything a rule does to the affinity is computed in one expression
//! (the steps chained as values, bound with `[x].map(name, ...)[0]`, which
//! is how CEL without `cel.bind` names a value), because every mutation of
//! a MutatingAdmissionPolicy costs the API server a pass over the pod.

use serde_json::{Value as Json, json};

use super::cel::{self, lit, lits};
use super::state::{Chain, State};
use crate::merge::and_terms;
use crate::policy::Rule;
use crate::scheduling::{Shape, Term, opaque, pref_value, ser, term_value};

const REQUIRED_PATH: &str =
    "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution";
const PREFERRED_PATH: &str =
    "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution";

/// A requirement of the policy: its comparable form and its value.
struct ConstReq {
    key: String,
    operator: String,
    /// Sorted, without duplicates: values compare as sets.
    values: Vec<String>,
    raw: Json,
}

/// A node-selector term of the policy.
struct ConstTerm {
    exprs: Vec<ConstReq>,
    fields: Vec<ConstReq>,
}

impl ConstTerm {
    fn of(t: &Term) -> ConstTerm {
        let raw = t.raw.to_json();
        let list = |k: &str| -> Vec<ConstReq> {
            raw.get(k)
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .map(|r| {
                    let mut values: Vec<String> = r
                        .get("values")
                        .and_then(Json::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect();
                    values.sort();
                    values.dedup();
                    let text = |k: &str| {
                        r.get(k)
                            .and_then(Json::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    ConstReq {
                        key: text("key"),
                        operator: text("operator"),
                        values,
                        raw: r.clone(),
                    }
                })
                .collect()
        };
        ConstTerm {
            exprs: list("matchExpressions"),
            fields: list("matchFields"),
        }
    }

    fn raw(&self) -> Json {
        let mut m = serde_json::Map::new();
        for (k, reqs) in [
            ("matchExpressions", &self.exprs),
            ("matchFields", &self.fields),
        ] {
            if !reqs.is_empty() {
                m.insert(
                    k.into(),
                    Json::Array(reqs.iter().map(|r| r.raw.clone()).collect()),
                );
            }
        }
        Json::Object(m)
    }

    /// Its requirements as a CEL list of [`canon`] strings.
    fn set(&self) -> String {
        let all: Vec<String> = self
            .exprs
            .iter()
            .map(|r| canon_const(false, r))
            .chain(self.fields.iter().map(|r| canon_const(true, r)))
            .collect();
        lits(&all)
    }
}

/// A requirement as one comparable string, `TAG|key|operator|VALUES`:
/// `e|` for matchExpressions, `f|` for matchFields; each value written
/// `=value` (so `[""]` differs from no values), sorted, without duplicates,
/// joined by `,`. Label keys, label values and node names hold no `|`, `,`
/// or `=`, so equal strings are equal requirements (SPEC §3).
fn canon_const(field: bool, r: &ConstReq) -> String {
    let values: Vec<String> = r.values.iter().map(|v| format!("={v}")).collect();
    format!(
        "{}|{}|{}|{}",
        if field { "f" } else { "e" },
        r.key,
        r.operator,
        values.join(",")
    )
}

/// A requirement as an entry of a term carried through the merge as text:
/// its [`canon_const`] form, `|`, and its values as written (`=a,=b`), from
/// which the requirement is built again.
fn entry_const(field: bool, r: &ConstReq) -> String {
    let raw: Vec<String> = r
        .raw
        .get("values")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
        .map(|v| format!("={v}"))
        .collect();
    format!("{}|{}", canon_const(field, r), raw.join(","))
}

/// The values of requirement `q` of the pod, each as `=value`.
fn values(q: &str) -> String {
    format!("(has({q}.values) ? {q}.values : []).map(v, '=' + string(v))")
}

/// The requirements of term `t` of the pod as [`canon_const`] strings.
fn term_set(t: &str) -> String {
    let canon = |tag: &str| {
        format!(
            "'{tag}|' + q.key + '|' + q.operator + '|' + {}.distinct().sort().join(',')",
            values("q")
        )
    };
    format!(
        "(has({t}.matchExpressions) ? {t}.matchExpressions : []).map(q, {}) + (has({t}.matchFields) ? {t}.matchFields : []).map(q, {})",
        canon("e"),
        canon("f")
    )
}

/// The requirements of term `t` of the pod as [`entry_const`] strings.
fn term_entries(t: &str) -> String {
    let entry = |tag: &str| {
        format!(
            "'{tag}|' + q.key + '|' + q.operator + '|' + {v}.distinct().sort().join(',') + '|' + {v}.join(',')",
            v = values("q")
        )
    };
    format!(
        "(has({t}.matchExpressions) ? {t}.matchExpressions : []).map(q, {}) + (has({t}.matchFields) ? {t}.matchFields : []).map(q, {})",
        entry("e"),
        entry("f")
    )
}

impl ConstTerm {
    /// Its requirements as a CEL list of [`entry_const`] strings.
    fn entries(&self) -> String {
        let all: Vec<String> = self
            .exprs
            .iter()
            .map(|r| entry_const(false, r))
            .chain(self.fields.iter().map(|r| entry_const(true, r)))
            .collect();
        lits(&all)
    }
}

/// Set `s` holds every requirement of the policy's term.
fn holds(s: &str, p: &ConstTerm) -> String {
    format!("{}.all(c, c in {s})", p.set())
}

/// Set `s` is exactly the policy term's requirements.
fn same_set(s: &str, p: &ConstTerm) -> String {
    format!("({} && {s}.all(c, c in {}))", holds(s, p), p.set())
}

/// The comparison key of an entry: its text before the values as written.
fn key(x: &str) -> String {
    format!("{x}.substring(0, {x}.lastIndexOf('|'))")
}

/// A required-affinity step is already met by terms `t` (lists of entries):
/// there are non-empty terms, and each holds one of the step's terms.
fn satisfied(t: &str, step: &[ConstTerm]) -> String {
    let any: Vec<String> = step
        .iter()
        .map(|p| format!("{}.all(k, e.exists(x, x.startsWith(k + '|')))", p.set()))
        .collect();
    format!(
        "{t}.exists(e, size(e) > 0) && {t}.all(e, size(e) == 0 || {})",
        any.join(" || ")
    )
}

/// The terms after one step not met, from terms `t`: the empty terms before
/// the first non-empty one, each non-empty term ANDed with each of the
/// step's terms (E-major: the term's requirements, then the step term's it
/// lacks), duplicates and terms holding another dropped (A ∨ (A∧B) = A),
/// the empty terms after. Terms are lists of entries (strings), so nothing
/// here reads a field of a value an Object initializer built.
fn step(t: &str, policy: &[Term]) -> String {
    let consts: Vec<ConstTerm> = policy.iter().map(ConstTerm::of).collect();
    // No non-empty terms: the policy's own, duplicates and absorbed ones dropped.
    let alone: Vec<String> = and_terms(&[], policy)
        .iter()
        .map(|t| ConstTerm::of(t).entries())
        .collect();
    let combined: Vec<String> = consts
        .iter()
        .map(|p| {
            format!(
                "e + {}.filter(p, !e.exists(x, x.startsWith({} + '|')))",
                p.entries(),
                key("p")
            )
        })
        .collect();
    format!(
        "{t}.transformList(i, e, !{t}.exists(j, f, j <= i && size(f) > 0), e) +\n      \
         (!{t}.exists(e, size(e) > 0) ? [{alone}] :\n        \
         [{t}.filter(e, size(e) > 0).map(e, [{combined}]).flatten()].map(c,\n        \
         [c.map(e, e.map(x, {kx}))].map(cs,\n        \
         c.transformList(i, e, !cs.exists(j, s, j != i && s.all(q, q in cs[i]) && (j < i || !cs[i].all(q, q in s))), e))[0])[0]) +\n      \
         {t}.transformList(i, e, size(e) == 0 && {t}.exists(j, f, j < i && size(f) > 0), e)",
        alone = alone.join(", "),
        combined = combined.join(", "),
        kx = key("x"),
    )
}

/// Terms as lists of entries, written back as the pod's node-selector terms
/// (data).
fn build_terms(t: &str) -> String {
    let list = |tag: &str, field: &str| {
        format!(
            "'{field}': dyn(e.filter(x, x.startsWith('{tag}|')).map(x, {{'key': dyn(x.split('|')[1]), 'operator': dyn(x.split('|')[2]), 'values': dyn(x.split('|')[4] == '' ? [] : x.split('|')[4].split(',').map(v, v.substring(1)))}}))"
        )
    };
    format!(
        "{t}.map(e, {{{}, {}}})",
        list("e", "matchExpressions"),
        list("f", "matchFields")
    )
}

/// The rule's preferred node-affinity terms, without duplicates.
fn preferred_terms(rule: &Rule) -> Vec<(i64, ConstTerm, Json)> {
    let mut seen: Vec<(i64, Term)> = Vec::new();
    let mut out = Vec::new();
    for p in &rule.preferred {
        let v = pref_value(p, Shape::K8s);
        if seen
            .iter()
            .any(|(w, t)| *w == v.weight && t.same_set(&v.term))
        {
            continue;
        }
        seen.push((v.weight, v.term.clone()));
        out.push((v.weight, ConstTerm::of(&v.term), v.raw.to_json()));
    }
    out
}

/// A preferred term `x` of the pod equals the policy's.
fn preferred_equals(x: &str, weight: i64, term: &ConstTerm) -> String {
    format!(
        "{x}.weight == {weight} && [{}].map(s, {})[0]",
        term_set(&format!("{x}.preference")),
        same_set("s", term)
    )
}

/// The four pod (anti-)affinity lists: (parent, list, the rule's terms,
/// whether its items are weighted).
fn pod_lists(rule: &Rule) -> [(&'static str, &'static str, Vec<Json>, bool); 4] {
    let plain = |v: &[k8s_openapi::api::core::v1::PodAffinityTerm]| -> Vec<Json> {
        v.iter().map(ser).collect()
    };
    let weighted = |v: &[k8s_openapi::api::core::v1::WeightedPodAffinityTerm]| -> Vec<Json> {
        v.iter().map(ser).collect()
    };
    [
        (
            "podAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            plain(&rule.pod_affinity_required),
            false,
        ),
        (
            "podAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            weighted(&rule.pod_affinity_preferred),
            true,
        ),
        (
            "podAntiAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            plain(&rule.pod_anti_affinity_required),
            false,
        ),
        (
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            weighted(&rule.pod_anti_affinity_preferred),
            true,
        ),
    ]
}

fn dedupe(items: Vec<Json>) -> Vec<Json> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for j in items {
        let key = opaque(&kfsched_yaml::Value::from_json(&j)).key;
        if !seen.contains(&key) {
            seen.push(key);
            out.push(j);
        }
    }
    out
}

fn shape(weighted: bool) -> cel::Shape {
    if weighted {
        cel::weighted_pod_affinity_term()
    } else {
        cel::pod_affinity_term()
    }
}

/// Names bound around an expression: `[value].map(name, ...)[0]`.
struct Binds(Vec<(String, String)>);

impl Binds {
    fn wrap(&self, body: String) -> String {
        let mut out = body;
        for (name, value) in self.0.iter().rev() {
            out = format!("[{value}].map({name},\n  {out})[0]");
        }
        out
    }
}

/// The pod (anti-)affinity lists, in [`pod_lists`]' order: (parent, list).
pub(super) const POD_LISTS: [(&str, &str); 4] = [
    (
        "podAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ),
    (
        "podAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    ),
    (
        "podAntiAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ),
    (
        "podAntiAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    ),
];

/// The pod's required node-affinity terms as lists of entries.
pub(super) fn initial_required() -> String {
    format!(
        "object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([]).map(e, {})",
        term_entries("e")
    )
}

/// The pod's preferred node-affinity terms as `weight#requirements` (the
/// requirements' [`canon_const`] strings sorted, joined by `;`).
pub(super) fn initial_preferred() -> String {
    format!(
        "object.spec.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([]).map(x, string(x.?weight.orValue(0)) + '#' + (has(x.preference) ? ({}).distinct().sort().join(';') : ''))",
        term_set("x.preference")
    )
}

/// A preferred term of the policy in [`initial_preferred`]'s form.
fn preferred_canon(weight: i64, t: &ConstTerm) -> String {
    let mut all: Vec<String> = t
        .exprs
        .iter()
        .map(|r| canon_const(false, r))
        .chain(t.fields.iter().map(|r| canon_const(true, r)))
        .collect();
    all.sort();
    all.dedup();
    format!("{weight}#{}", all.join(";"))
}

/// A short, stable id of a pod affinity term of the policy (FNV-1a of its
/// canonical form): the rules after the one that added it know it is
/// there. Hand-written: eight lines, where a hashing crate would be a
/// dependency for one function.
fn item_id(j: &Json) -> String {
    let key = opaque(&kfsched_yaml::Value::from_json(j)).key;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The affinity part of a rule's operations, or `None` when the rule sets
/// no affinity.
pub(super) fn affinity_ops(rule: &Rule, s: &mut State, c: &mut Chain) -> Option<String> {
    if rule.strategy == crate::policy::Strategy::Replace && rule.names_affinity {
        return Some(replace_affinity(rule, s, c));
    }
    let mut ops: Vec<String> = Vec::new();
    let mut node_needed: Vec<String> = Vec::new();
    // Required: the steps chained on the terms as lists of entries: `tK`
    // the terms before step K, `mK` whether step K is met already.
    let steps = rule.required.len();
    if steps > 0 {
        let mut binds = Binds(vec![("t0".into(), s.required.clone())]);
        for (k, st) in rule.required.iter().enumerate() {
            let policy: Vec<Term> = st.iter().map(term_value).collect();
            let consts: Vec<ConstTerm> = policy.iter().map(ConstTerm::of).collect();
            let (t, m) = (format!("t{k}"), format!("m{k}"));
            binds.0.push((m.clone(), satisfied(&t, &consts)));
            binds.0.push((
                format!("t{}", k + 1),
                format!("{m} ? {t} :\n      {}", step(&t, &policy)),
            ));
        }
        let before = s.required.clone();
        let after = c.define("required_after", binds.wrap(format!("t{steps}")));
        let changed = format!("{after} != {before}");
        ops.push(format!(
            "({changed} ? [{}] : [])",
            cel::put(
                REQUIRED_PATH,
                &format!("{{'nodeSelectorTerms': {}}}", build_terms(&after))
            )
        ));
        node_needed.push(changed);
        c.set(&mut s.required, "required", after);
    }
    // Preferred: appended when missing.
    let preferred = preferred_terms(rule);
    if !preferred.is_empty() {
        let now = s.preferred.clone();
        let canons: Vec<String> = preferred
            .iter()
            .map(|(w, t, _)| preferred_canon(*w, t))
            .collect();
        let missing = c.define(
            "preferred_missing",
            format!("{}.map(x, !(x in {now}))", lits(&canons)),
        );
        let need = format!("{missing}.exists(b, b)");
        ops.push(format!(
            "({} || !{need} ? [] : [{}])",
            s.preferred_present,
            cel::put(PREFERRED_PATH, "[]")
        ));
        for (i, (_, _, raw)) in preferred.iter().enumerate() {
            ops.push(format!(
                "({missing}[{i}] ? [{}] : [])",
                cel::put(&format!("{PREFERRED_PATH}/-"), &cel::data(raw))
            ));
        }
        c.set(
            &mut s.preferred,
            "preferred",
            format!("{now} + {}.filter(x, !(x in {now}))", lits(&canons)),
        );
        c.raise(&mut s.preferred_present, "preferred_present", &need);
        node_needed.push(need);
    }
    let mut any_needed = node_needed.clone();
    // Pod (anti)-affinity: appended when missing; per parent, what needs it
    // and the operations under it.
    let mut pod_ops: Vec<(usize, Vec<String>, Vec<String>)> = Vec::new();
    for (n, (parent, list, items, weighted)) in pod_lists(rule).into_iter().enumerate() {
        let items = dedupe(items);
        if items.is_empty() {
            continue;
        }
        let ids: Vec<String> = items.iter().map(item_id).collect();
        let own = s.pod_own[n].clone();
        let added = s.pod_added[n].clone();
        let missing: Vec<String> = items
            .iter()
            .zip(&ids)
            .map(|(j, id)| {
                format!(
                    "!(({own}) && object.spec.?affinity.?{parent}.?{list}.orValue([]).exists(x, {})) && !({} in {added})",
                    cel::equals("x", j, &shape(weighted)),
                    lit(id)
                )
            })
            .collect();
        let var = c.define(
            &format!("pod_missing_{n}"),
            format!("[{}]", missing.join(",\n    ")),
        );
        let need = format!("{var}.exists(b, b)");
        any_needed.push(need.clone());
        let mut these = vec![format!(
            "({} || !{need} ? [] : [{}])",
            s.pod_list_present[n],
            cel::put(&format!("/spec/affinity/{parent}/{list}"), "[]")
        )];
        for (i, j) in items.iter().enumerate() {
            these.push(format!(
                "({var}[{i}] ? [{}] : [])",
                cel::put(&format!("/spec/affinity/{parent}/{list}/-"), &cel::data(j))
            ));
        }
        c.set(
            &mut s.pod_added[n],
            &format!("pod_added_{n}"),
            format!("{added} + {}.transformList(i, x, {var}[i], x)", lits(&ids)),
        );
        c.raise(
            &mut s.pod_list_present[n],
            &format!("pod_list_present_{n}"),
            &need,
        );
        let p = n / 2;
        match pod_ops.iter_mut().find(|(q, _, _)| *q == p) {
            Some((_, needs, ops)) => {
                needs.push(need);
                ops.extend(these);
            }
            None => pod_ops.push((p, vec![need], these)),
        }
    }
    if any_needed.is_empty() {
        return None;
    }
    // Each parent created once, when something under it is written.
    let any = any_needed.join(" || ");
    let mut all = vec![format!(
        "({} || !({any}) ? [] : [{}])",
        s.affinity_present,
        cel::put("/spec/affinity", "{}")
    )];
    c.raise(&mut s.affinity_present, "affinity_present", &any);
    c.raise(&mut s.affinity_changed, "affinity_changed", &any);
    if !node_needed.is_empty() {
        let node = node_needed.join(" || ");
        all.push(format!(
            "({} || !({node}) ? [] : [{}])",
            s.node_affinity_present,
            cel::put("/spec/affinity/nodeAffinity", "{}")
        ));
        c.raise(&mut s.node_affinity_present, "node_affinity_present", &node);
    }
    all.extend(ops);
    for (p, needs, these) in pod_ops {
        let parent = POD_LISTS[p * 2].0;
        let need = needs.join(" || ");
        all.push(format!(
            "({} || !({need}) ? [] : [{}])",
            s.pod_parent_present[p],
            cel::put(&format!("/spec/affinity/{parent}"), "{}")
        ));
        c.raise(
            &mut s.pod_parent_present[p],
            &format!("pod_parent_present_{p}"),
            &need,
        );
        all.extend(these);
    }
    Some(all.join(" +\n  "))
}

/// `strategy: replace`: the pod's whole affinity becomes the rule's, unless
/// it already reads as the rule's (terms as sets, in order) and no rule
/// before changed it.
fn replace_affinity(rule: &Rule, s: &mut State, c: &mut Chain) -> String {
    let mut required: Vec<Term> = Vec::new();
    for step in &rule.required {
        let terms: Vec<Term> = step.iter().map(term_value).collect();
        required = and_terms(&required, &terms);
    }
    let required: Vec<ConstTerm> = required.iter().map(ConstTerm::of).collect();
    let preferred: Vec<(i64, ConstTerm, Json)> = rule
        .preferred
        .iter()
        .map(|p| {
            let v = pref_value(p, Shape::K8s);
            (v.weight, ConstTerm::of(&v.term), v.raw.to_json())
        })
        .collect();
    // The value written.
    let mut node = serde_json::Map::new();
    if !required.is_empty() {
        node.insert(
            "requiredDuringSchedulingIgnoredDuringExecution".into(),
            json!({"nodeSelectorTerms": required.iter().map(ConstTerm::raw).collect::<Vec<_>>()}),
        );
    }
    if !preferred.is_empty() {
        node.insert(
            "preferredDuringSchedulingIgnoredDuringExecution".into(),
            Json::Array(preferred.iter().map(|(_, _, j)| j.clone()).collect()),
        );
    }
    let has_node = !node.is_empty();
    let mut aff = serde_json::Map::new();
    if has_node {
        aff.insert("nodeAffinity".into(), Json::Object(node));
    }
    let lists = pod_lists(rule);
    for (parent, list, items, _) in &lists {
        if items.is_empty() {
            continue;
        }
        let p = aff
            .entry(parent.to_string())
            .or_insert_with(|| Json::Object(Default::default()));
        if let Json::Object(m) = p {
            m.insert(list.to_string(), Json::Array(items.clone()));
        }
    }
    // Whether the pod has it already: its non-empty required terms and its
    // preferred terms, as sets and in order, and the pod affinity lists.
    let mut same = vec![format!("size(r) == {}", required.len())];
    for (i, t) in required.iter().enumerate() {
        same.push(same_set(&format!("r[{i}]"), t));
    }
    same.push(format!("size(p) == {}", preferred.len()));
    for (i, (w, t, _)) in preferred.iter().enumerate() {
        same.push(preferred_equals(&format!("p[{i}]"), *w, t));
    }
    for (parent, list, items, weighted) in &lists {
        same.push(cel::equals(
            &format!("object.spec.?affinity.?{parent}.?{list}.orValue([])"),
            &Json::Array(items.clone()),
            &cel::Shape::List(Box::new(shape(*weighted))),
        ));
    }
    let binds = Binds(vec![
        (
            "r".into(),
            format!(
                "object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([]).map(e, {}).filter(s, size(s) > 0)",
                term_set("e")
            ),
        ),
        (
            "p".into(),
            "object.spec.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([])".into(),
        ),
    ]);
    let same = c.define(
        "affinity_same",
        format!(
            "!({}) && {}",
            s.affinity_changed,
            binds.wrap(same.join(" &&\n  "))
        ),
    );
    // What the rules after this one see.
    let keep = |old: &str, new: String| format!("{same} ? {old} : {new}");
    let entries: Vec<String> = required.iter().map(ConstTerm::entries).collect();
    let v = keep(&s.required, format!("[{}]", entries.join(", ")));
    c.set(&mut s.required, "required", v);
    let canons: Vec<String> = preferred
        .iter()
        .map(|(w, t, _)| preferred_canon(*w, t))
        .collect();
    let v = keep(&s.preferred, lits(&canons));
    c.set(&mut s.preferred, "preferred", v);
    let v = keep(&s.preferred_present, (!preferred.is_empty()).to_string());
    c.set(&mut s.preferred_present, "preferred_present", v);
    for (n, (_, _, items, _)) in lists.iter().enumerate() {
        let ids: Vec<String> = items.iter().map(item_id).collect();
        let v = keep(&s.pod_own[n], "false".into());
        c.set(&mut s.pod_own[n], &format!("pod_own_{n}"), v);
        let v = keep(&s.pod_added[n], lits(&ids));
        c.set(&mut s.pod_added[n], &format!("pod_added_{n}"), v);
        let v = keep(&s.pod_list_present[n], (!items.is_empty()).to_string());
        c.set(
            &mut s.pod_list_present[n],
            &format!("pod_list_present_{n}"),
            v,
        );
    }
    for p in 0..2 {
        let has = !lists[2 * p].2.is_empty() || !lists[2 * p + 1].2.is_empty();
        let v = keep(&s.pod_parent_present[p], has.to_string());
        c.set(
            &mut s.pod_parent_present[p],
            &format!("pod_parent_present_{p}"),
            v,
        );
    }
    let v = keep(&s.node_affinity_present, has_node.to_string());
    c.set(&mut s.node_affinity_present, "node_affinity_present", v);
    c.raise(
        &mut s.affinity_present,
        "affinity_present",
        &format!("!{same}"),
    );
    c.raise(
        &mut s.affinity_changed,
        "affinity_changed",
        &format!("!{same}"),
    );
    format!(
        "{same} ? [] :\n  [{}]",
        cel::put("/spec/affinity", &cel::data(&Json::Object(aff)))
    )
}
