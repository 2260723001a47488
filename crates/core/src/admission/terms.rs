//! Node and pod affinity as JSON Patch expressions, with SPEC §3's merge:
//! a required node affinity ANDed into every non-empty term (empty terms
//! stay where they are, the combined terms take the place of the first
//! non-empty one), duplicates and absorbed terms dropped, preferred and pod
//! affinity terms appended when missing, `strategy: replace` writing the
//! whole affinity unless the pod already has it. The comparisons are the
//! merge's own: requirements as (key, operator, set of values), terms as
//! sets of requirements, pod affinity terms as whole values.

use k8s_openapi::api::core::v1::NodeSelectorTerm;
use serde_json::{Value as Json, json};

use super::cel::{self, Value, add, lit, lits};
use crate::merge::and_terms;
use crate::policy::Rule;
use crate::scheduling::{Shape, Term, opaque, pref_value, ser, term_value};

const AFFINITY: &str = "Object.spec.affinity";
const NODE_AFFINITY: &str = "Object.spec.affinity.nodeAffinity";
const REQUIRED: &str =
    "Object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
const TERM: &str = "Object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
const PREFERRED: &str =
    "Object.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution";

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
                    ConstReq {
                        key: r
                            .get("key")
                            .and_then(Json::as_str)
                            .unwrap_or_default()
                            .into(),
                        operator: r
                            .get("operator")
                            .and_then(Json::as_str)
                            .unwrap_or_default()
                            .into(),
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
        if !self.exprs.is_empty() {
            m.insert(
                "matchExpressions".into(),
                Json::Array(self.exprs.iter().map(|r| r.raw.clone()).collect()),
            );
        }
        if !self.fields.is_empty() {
            m.insert(
                "matchFields".into(),
                Json::Array(self.fields.iter().map(|r| r.raw.clone()).collect()),
            );
        }
        Json::Object(m)
    }
}

/// A requirement `x` of the pod equals the policy's.
fn req_equals(x: &str, r: &ConstReq) -> String {
    let values = if r.values.is_empty() {
        format!("size({x}.?values.orValue([])) == 0")
    } else {
        let v = lits(&r.values);
        format!(
            "{x}.?values.orValue([]).all(v, v in {v}) && {v}.all(v, v in {x}.?values.orValue([]))"
        )
    };
    format!(
        "{x}.key == {} && {x}.operator == {} && {values}",
        lit(&r.key),
        lit(&r.operator)
    )
}

/// Two requirements of the pod are equal.
fn req_same(x: &str, y: &str) -> String {
    format!(
        "{x}.key == {y}.key && {x}.operator == {y}.operator && {x}.?values.orValue([]).all(v, v in {y}.?values.orValue([])) && {y}.?values.orValue([]).all(v, v in {x}.?values.orValue([]))"
    )
}

fn exprs(t: &str) -> String {
    format!("{t}.?matchExpressions.orValue([])")
}

fn fields(t: &str) -> String {
    format!("{t}.?matchFields.orValue([])")
}

/// The term `t` has a requirement (matchExpressions or matchFields).
fn non_empty(t: &str) -> String {
    format!("size({}) + size({}) > 0", exprs(t), fields(t))
}

/// Term `t` (of the pod) holds every requirement of the policy's term.
fn contains_const(t: &str, p: &ConstTerm) -> String {
    let mut parts: Vec<String> = p
        .exprs
        .iter()
        .map(|r| format!("{}.exists(x, {})", exprs(t), req_equals("x", r)))
        .collect();
    parts.extend(
        p.fields
            .iter()
            .map(|r| format!("{}.exists(x, {})", fields(t), req_equals("x", r))),
    );
    format!("({})", parts.join(" && "))
}

/// Term `t` (of the pod) has exactly the policy term's requirements.
fn same_const(t: &str, p: &ConstTerm) -> String {
    let one_of = |list: &[ConstReq]| -> String {
        if list.is_empty() {
            "false".into()
        } else {
            list.iter()
                .map(|r| format!("({})", req_equals("y", r)))
                .collect::<Vec<_>>()
                .join(" || ")
        }
    };
    format!(
        "({} && {}.all(y, {}) && {}.all(y, {}))",
        contains_const(t, p),
        exprs(t),
        one_of(&p.exprs),
        fields(t),
        one_of(&p.fields)
    )
}

/// Term `a` holds every requirement of term `b` (both of the pod).
fn contains(a: &str, b: &str) -> String {
    format!(
        "{}.all(y, {}.exists(x, {})) && {}.all(y, {}.exists(x, {}))",
        exprs(b),
        exprs(a),
        req_same("x", "y"),
        fields(b),
        fields(a),
        req_same("x", "y")
    )
}

/// Term `e` of the pod ANDed with the policy's term: `e`'s requirements,
/// then the policy's that `e` lacks.
fn and_term(e: &str, p: &ConstTerm) -> String {
    let list = |field: &str, reqs: &[ConstReq], have: String| -> String {
        if reqs.is_empty() {
            return format!("?{field}: {e}.?{field}");
        }
        let missing: Vec<String> = reqs
            .iter()
            .map(|r| {
                format!(
                    "({have}.exists(x, {}) ? [] : [{}])",
                    req_equals("x", r),
                    cel::object(&format!("{TERM}.{field}"), &r.raw)
                )
            })
            .collect();
        format!("{field}: {have} + {}", missing.join(" + "))
    };
    format!(
        "{TERM}{{{}, {}}}",
        list("matchExpressions", &p.exprs, exprs(e)),
        list("matchFields", &p.fields, fields(e))
    )
}

/// Creates `/spec/affinity` and its child `key` when missing.
fn parents(child: &str, child_type: &str) -> String {
    format!(
        "(has(object.spec.affinity) ? [] : [{}]) +\n  (object.spec.?affinity.?{child}.hasValue() ? [] : [{}])",
        add("/spec/affinity", &Value::Object(format!("{AFFINITY}{{}}"))),
        add(
            &format!("/spec/affinity/{child}"),
            &Value::Object(format!("{child_type}{{}}"))
        )
    )
}

/// One step of a rule's required node affinity (the pool's term, or the
/// rule's own terms, ORed) ANDed into the pod's terms.
pub(super) fn and_required(step: &[NodeSelectorTerm]) -> String {
    let policy: Vec<Term> = step.iter().map(term_value).collect();
    let consts: Vec<ConstTerm> = policy.iter().map(ConstTerm::of).collect();
    // No existing terms: the policy's own, duplicates and absorbed ones dropped.
    let alone: Vec<String> = and_terms(&[], &policy)
        .iter()
        .map(|t| cel::object(TERM, &ConstTerm::of(t).raw()))
        .collect();
    let satisfied: Vec<String> = consts.iter().map(|p| contains_const("e", p)).collect();
    let combined: Vec<String> = consts.iter().map(|p| and_term("e", p)).collect();
    let same = format!("{} && {}", contains("u", "t"), contains("t", "u"));
    format!(
        "[object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])].map(ts,\n  \
         [ts.filter(e, {ne_e})].map(es,\n  \
         size(es) > 0 && es.all(e, {satisfied}) ? [] :\n  \
         {parents} +\n  \
         [size(es) == 0 ? [{alone}] : es.map(e, [{combined}]).flatten()].map(c,\n    \
         [c.transformList(i, t, !c.exists(j, u, j < i && {same}), t)].map(u,\n      \
         u.filter(t, !u.exists(o, ({t_has_o}) && !({o_has_t}))))[0]\n  \
         ).map(n, [JSONPatch{{op: 'add', path: '/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution', value: {REQUIRED}{{nodeSelectorTerms:\n    \
         ts.transformList(i, t, !ts.exists(j, u, j <= i && {ne_u}), t) + n +\n    \
         ts.transformList(i, t, !({ne_t}) && ts.exists(j, u, j < i && {ne_u}), t)}}}}])[0]\n  \
         )[0]\n\
         )[0]",
        ne_e = non_empty("e"),
        ne_u = non_empty("u"),
        ne_t = non_empty("t"),
        satisfied = satisfied.join(" || "),
        parents = parents("nodeAffinity", NODE_AFFINITY),
        alone = alone.join(", "),
        combined = combined.join(", "),
        t_has_o = contains("t", "o"),
        o_has_t = contains("o", "t"),
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
        "{x}.weight == {weight} && {}",
        same_const(&format!("{x}.preference"), term)
    )
}

/// Appends the rule's preferred node-affinity terms the pod lacks.
pub(super) fn append_preferred(rule: &Rule) -> Option<String> {
    let terms = preferred_terms(rule);
    if terms.is_empty() {
        return None;
    }
    let missing: Vec<String> = terms
        .iter()
        .map(|(w, t, _)| format!("!ps.exists(x, {})", preferred_equals("x", *w, t)))
        .collect();
    let appends: Vec<String> = terms
        .iter()
        .zip(&missing)
        .map(|((_, _, raw), m)| {
            format!(
                "({m} ? [{}] : [])",
                add(
                    "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution/-",
                    &Value::Object(cel::object(PREFERRED, raw))
                )
            )
        })
        .collect();
    Some(format!(
        "[object.spec.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([])].map(ps,\n  \
         !({}) ? [] :\n  {} +\n  \
         (object.spec.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.hasValue() ? [] : [{}]) +\n  {})[0]",
        missing.join(" || "),
        parents("nodeAffinity", NODE_AFFINITY),
        add(
            "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution",
            &Value::EmptyList
        ),
        appends.join(" +\n  ")
    ))
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

/// Appends the rule's pod affinity and anti-affinity terms the pod lacks:
/// one mutation per list, each creating its parents when missing.
pub(super) fn append_pod_affinity(rule: &Rule) -> Vec<String> {
    let mut out = Vec::new();
    for (parent, list, items, weighted) in pod_lists(rule) {
        let items = dedupe(items);
        if items.is_empty() {
            continue;
        }
        let item_type = format!("{AFFINITY}.{parent}.{list}");
        let missing: Vec<String> = items
            .iter()
            .map(|j| format!("!ls.exists(x, {})", cel::equals("x", j, &shape(weighted))))
            .collect();
        let appends: Vec<String> = items
            .iter()
            .zip(&missing)
            .map(|(j, m)| {
                format!(
                    "({m} ? [{}] : [])",
                    add(
                        &format!("/spec/affinity/{parent}/{list}/-"),
                        &Value::Object(cel::object(&item_type, j))
                    )
                )
            })
            .collect();
        out.push(format!(
            "[object.spec.?affinity.?{parent}.?{list}.orValue([])].map(ls,\n  \
             !({}) ? [] :\n  {} +\n  \
             (object.spec.?affinity.?{parent}.?{list}.hasValue() ? [] : [{}]) +\n  {})[0]",
            missing.join(" || "),
            parents(parent, &format!("{AFFINITY}.{parent}")),
            add(
                &format!("/spec/affinity/{parent}/{list}"),
                &Value::EmptyList
            ),
            appends.join(" +\n  ")
        ));
    }
    out
}

/// `strategy: replace`: the pod's whole affinity becomes the rule's, unless
/// it already reads as the rule's (terms as sets, in order).
pub(super) fn replace_affinity(rule: &Rule) -> String {
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
    let mut aff = serde_json::Map::new();
    if !node.is_empty() {
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
    // Whether the pod has it already.
    let req_now = "object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([]).filter(t, ".to_string()
        + &non_empty("t")
        + ")";
    let mut same = vec![format!("size(r) == {}", required.len())];
    for (i, t) in required.iter().enumerate() {
        same.push(same_const(&format!("r[{i}]"), t));
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
    format!(
        "[{req_now}].map(r, [object.spec.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([])].map(p,\n  \
         {} ? [] :\n  [{}])[0])[0]",
        same.join(" &&\n  "),
        add(
            "/spec/affinity",
            &Value::Object(cel::object(AFFINITY, &Json::Object(aff)))
        )
    )
}
