//! The MutatingAdmissionPolicy for nodes: a Node created with a name that
//! matches a pool's `nodes` globs, or labels that match its `nodeSelector`,
//! gets the pool's labels and taints before anything can schedule onto it.
//! Like `node apply` without `--overwrite`, admission adds what is missing
//! and never changes a value the node registered with.

use serde_json::{Value as Json, json};

use super::cel::{self, Value, add, lit, lits, pointer_segment};
use super::regex::glob_to_re2;
use crate::k8s::{Requirement, SelOp};
use crate::policy::NodePool;

/// The label-key namespaces a kubelet may not register its Node with
/// (kube-apiserver's NodeRestriction admission plugin, which sees the
/// labels this policy adds when the node registers): why a pool label
/// cannot be added at admission, or `None`.
pub fn forbidden_for_kubelets(key: &str) -> Option<&'static str> {
    let namespace = key.split_once('/').map_or("", |(ns, _)| ns);
    let under = |ns: &str, domain: &str| ns == domain || ns.ends_with(&format!(".{domain}"));
    if under(namespace, "node-restriction.kubernetes.io") {
        return Some(
            "labels under node-restriction.kubernetes.io/ are reserved for the cluster's administrators: a node may not set them on itself",
        );
    }
    const KUBELET_LABELS: &[&str] = &[
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    ];
    let kubernetes = under(namespace, "kubernetes.io") || under(namespace, "k8s.io");
    let kubelet = KUBELET_LABELS.contains(&key)
        || under(namespace, "kubelet.kubernetes.io")
        || under(namespace, "node.kubernetes.io");
    (kubernetes && !kubelet).then_some(
        "a node may set only the kubelet's own labels under kubernetes.io and k8s.io (kubernetes.io/hostname, topology.kubernetes.io/zone, node.kubernetes.io/*, kubelet.kubernetes.io/*, ...); use a label of your own domain, or set this one with `kubectl kfsched node apply`",
    )
}

/// One requirement of a pool's node selector over the node's labels.
fn requirement(r: &Requirement) -> String {
    let labels = "object.metadata.?labels";
    let k = lit(&r.key);
    match r.op {
        SelOp::Equals | SelOp::In => {
            format!("{labels}[?{k}].orValue('\\u0000') in {}", lits(&r.values))
        }
        // A missing label satisfies `!=` and `notin`, as in kubectl.
        SelOp::NotEquals | SelOp::NotIn => format!(
            "!{labels}[?{k}].hasValue() || !({labels}[?{k}].orValue('') in {})",
            lits(&r.values)
        ),
        SelOp::Exists => format!("{labels}[?{k}].hasValue()"),
        SelOp::DoesNotExist => format!("!{labels}[?{k}].hasValue()"),
        SelOp::GreaterThan | SelOp::LessThan => {
            let bound = r
                .values
                .first()
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0);
            let cmp = if r.op == SelOp::GreaterThan { ">" } else { "<" };
            // A missing or non-integer label never matches (as apimachinery).
            format!(
                "[{labels}[?{k}].orValue('')].map(v, v.matches('^[-+]?0*[0-9]{{1,18}}$') && int(v) {cmp} {bound})[0]"
            )
        }
    }
}

/// Whether a pool selects the node being created.
fn pool_predicate(pool: &NodePool) -> String {
    let mut any = Vec::new();
    let names: Vec<String> = pool
        .nodes
        .iter()
        .filter_map(|g| glob_to_re2(&g.text, false))
        .map(|re| format!("object.metadata.?name.orValue('').matches({})", lit(&re)))
        .collect();
    any.extend(names);
    if let Some(sel) = &pool.node_selector {
        let reqs: Vec<String> = sel
            .requirements
            .iter()
            .map(|r| format!("({})", requirement(r)))
            .collect();
        if !reqs.is_empty() {
            any.push(reqs.join(" && "));
        }
    }
    if any.is_empty() {
        "false".into()
    } else {
        any.join(" ||\n  ")
    }
}

fn pool_mutation(pool: &NodePool, var: &str) -> Option<String> {
    let mut parts = Vec::new();
    if !pool.labels.is_empty() {
        let missing: Vec<(String, String)> = pool.labels.clone();
        let each: Vec<String> = pool
            .labels
            .iter()
            .map(|(k, v)| {
                format!(
                    "({} in object.metadata.labels ? [] : [{}])",
                    lit(k),
                    add(
                        &format!("/metadata/labels/{}", pointer_segment(k)),
                        &Value::Str(v.clone())
                    )
                )
            })
            .collect();
        parts.push(format!(
            "(!has(object.metadata.labels) ? [{}] :\n   {})",
            add("/metadata/labels", &Value::StringMap(missing)),
            each.join(" +\n   ")
        ));
    }
    if !pool.taints.is_empty() {
        parts.push(format!(
            "(has(object.spec.taints) ? [] : [{}])",
            add("/spec/taints", &Value::EmptyList)
        ));
        for t in &pool.taints {
            let mut j = serde_json::Map::new();
            j.insert("effect".into(), json!(t.effect));
            j.insert("key".into(), json!(t.key));
            if let Some(v) = t.value.as_ref().filter(|v| !v.is_empty()) {
                j.insert("value".into(), json!(v));
            }
            // A taint with the same key and effect is the node's own value
            // (as `node apply` without --overwrite, it is not changed).
            parts.push(format!(
                "(object.spec.?taints.orValue([]).exists(t, t.key == {} && t.effect == {}) ? [] :\n   [{}])",
                lit(&t.key),
                lit(&t.effect),
                add(
                    "/spec/taints/-",
                    &Value::Object(cel::object("Object.spec.taints", &Json::Object(j)))
                )
            ));
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "!variables.{var} ? [] :\n  {}",
        parts.join(" +\n  ")
    ))
}

/// `key=value:Effect`, or `key:Effect` without a value: how `node apply`'s
/// record names a taint.
fn taint_entry(t: &k8s_openapi::api::core::v1::Taint) -> String {
    match t.value.as_deref().filter(|v| !v.is_empty()) {
        Some(v) => format!("{}={v}:{}", t.key, t.effect),
        None => format!("{}:{}", t.key, t.effect),
    }
}

/// The record `node apply` keeps of what it added ([`super::MANAGED_ANNOTATION`]),
/// written for what the pool mutations after it add to the registering
/// node: each label whose key the node lacks and each taint whose key and
/// effect it lacks, from the first selected pool that has it. So the node
/// is the pool's as if `node apply` had labelled it: a later apply changes
/// its values without `--overwrite`, and `--prune` removes what the policy
/// drops. Another policy's record on the node is kept; a record kfsched
/// cannot read is left alone.
fn record_mutation(policy_name: &str, pools: &[(&NodePool, String)]) -> Option<String> {
    // Each entry once, with the pools (before it) that would add it first.
    let mut labels: Vec<(String, String, String)> = Vec::new(); // (key, json entry, condition)
    let mut taints: Vec<(String, String, String)> = Vec::new(); // (display, key/effect, condition)
    let mut label_pools: Vec<(String, Vec<String>)> = Vec::new();
    let mut taint_pools: Vec<((String, String), Vec<String>)> = Vec::new();
    for (pool, var) in pools {
        for (k, v) in &pool.labels {
            let earlier: Vec<String> = label_pools
                .iter()
                .filter(|(key, _)| key == k)
                .flat_map(|(_, vars)| vars.iter().cloned())
                .collect();
            let cond = format!(
                "variables.{var}{} && !({} in variables.node_labels)",
                earlier
                    .iter()
                    .map(|e| format!(" && !variables.{e}"))
                    .collect::<String>(),
                lit(k)
            );
            let entry = format!(
                "{}:{}",
                serde_json::to_string(k).unwrap_or_default(),
                serde_json::to_string(v).unwrap_or_default()
            );
            labels.push((k.clone(), entry, cond));
            match label_pools.iter_mut().find(|(key, _)| key == k) {
                Some((_, vars)) => vars.push(var.clone()),
                None => label_pools.push((k.clone(), vec![var.clone()])),
            }
        }
        for t in &pool.taints {
            let ke = (t.key.clone(), t.effect.clone());
            let earlier: Vec<String> = taint_pools
                .iter()
                .filter(|(x, _)| *x == ke)
                .flat_map(|(_, vars)| vars.iter().cloned())
                .collect();
            let cond = format!(
                "variables.{var}{} && !object.spec.?taints.orValue([]).exists(t, t.key == {} && t.effect == {})",
                earlier
                    .iter()
                    .map(|e| format!(" && !variables.{e}"))
                    .collect::<String>(),
                lit(&t.key),
                lit(&t.effect)
            );
            taints.push((taint_entry(t), String::new(), cond));
            match taint_pools.iter_mut().find(|(x, _)| *x == ke) {
                Some((_, vars)) => vars.push(var.clone()),
                None => taint_pools.push((ke, vec![var.clone()])),
            }
        }
    }
    if labels.is_empty() && taints.is_empty() {
        return None;
    }
    // `node apply` keeps a record's taints sorted.
    taints.sort_by(|a, b| a.0.cmp(&b.0));
    let pick = |items: &[(String, String, String)],
                json: &dyn Fn(&(String, String, String)) -> String| {
        let each: Vec<String> = items
            .iter()
            .map(|i| format!("{} ? {} : ''", i.2, lit(&json(i))))
            .collect();
        format!("[{}].filter(e, e != '').join(',')", each.join(",\n      "))
    };
    let label_list = pick(&labels, &|i| i.1.clone());
    let taint_list = pick(&taints, &|i| {
        serde_json::to_string(&i.0).unwrap_or_default()
    });
    let key = lit(super::MANAGED_ANNOTATION);
    let path = lit(&format!(
        "/metadata/annotations/{}",
        pointer_segment(super::MANAGED_ANNOTATION)
    ));
    let own = lit(&format!(
        "{}:",
        serde_json::to_string(policy_name).unwrap_or_default()
    ));
    const PREFIX: &str = "{\"policies\":{";
    Some(format!(
        "[{label_list}].map(l, [{taint_list}].map(t,\n  \
         [[l == '' ? '' : '\"labels\":{{' + l + '}}', t == '' ? '' : '\"taints\":[' + t + ']'].filter(p, p != '').join(',')].map(m,\n  \
         [object.metadata.?annotations[?{key}].orValue('')].map(old,\n  \
         m == '' ? [] :\n  \
         old == '' ? (has(object.metadata.annotations) ?\n    \
         [JSONPatch{{op: 'add', path: {path}, value: {prefix} + {own} + '{{' + m + '}}}}}}'}}] :\n    \
         [JSONPatch{{op: 'add', path: '/metadata/annotations', value: {{{key}: {prefix} + {own} + '{{' + m + '}}}}}}'}}}}]) :\n  \
         old == {empty} ? [JSONPatch{{op: 'replace', path: {path}, value: {prefix} + {own} + '{{' + m + '}}}}}}'}}] :\n  \
         old.startsWith({prefix}) && !old.contains({own}) ?\n    \
         [JSONPatch{{op: 'replace', path: {path}, value: {prefix} + {own} + '{{' + m + '}},' + old.substring({skip})}}] :\n  \
         [])[0])[0])[0])[0]",
        prefix = lit(PREFIX),
        empty = lit("{\"policies\":{}}"),
        skip = PREFIX.chars().count(),
    ))
}

/// The policy object for these pools (those with labels or taints).
pub(super) fn policy(
    name: &str,
    policy_name: &str,
    pools: &[&NodePool],
    failure_policy: &str,
) -> Json {
    let mut variables = Vec::new();
    let mut mutations = Vec::new();
    let mut vars: Vec<(String, String)> = Vec::new();
    for p in pools {
        let var = format!("pool_{}", p.name.replace(['-', '.'], "_"));
        variables.push(json!({"name": var, "expression": pool_predicate(p)}));
        if let Some(m) = pool_mutation(p, &var) {
            mutations.push(json!({"patchType": "JSONPatch", "jsonPatch": {"expression": m}}));
        }
        vars.push((var, p.name.clone()));
    }
    let selections: Vec<(String, String)> = vars
        .iter()
        .map(|(v, n)| (format!("variables.{v}"), n.clone()))
        .collect();
    // The record is worked out from the node as it registers, before the
    // pool mutations add to it.
    let with_vars: Vec<(&NodePool, String)> = pools
        .iter()
        .zip(&vars)
        .map(|(p, (v, _))| (*p, v.clone()))
        .collect();
    if let Some(m) = record_mutation(policy_name, &with_vars) {
        variables.push(
            json!({"name": "node_labels", "expression": "object.metadata.?labels.orValue({})"}),
        );
        mutations.insert(
            0,
            json!({"patchType": "JSONPatch", "jsonPatch": {"expression": m}}),
        );
    }
    mutations.push(json!({"patchType": "JSONPatch", "jsonPatch": {"expression": super::admitted_mutation(policy_name, &selections)}}));
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": failure_policy,
            "reinvocationPolicy": "IfNeeded",
            "matchConstraints": {
                "resourceRules": [{
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["nodes"],
                }],
            },
            "variables": variables,
            "mutations": mutations,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::forbidden_for_kubelets;

    #[test]
    fn kubelets_may_register_only_their_own_kubernetes_labels() {
        assert!(forbidden_for_kubelets("kfsched.dev/pool").is_none());
        assert!(forbidden_for_kubelets("node.kubernetes.io/pool").is_none());
        assert!(forbidden_for_kubelets("topology.kubernetes.io/zone").is_none());
        assert!(forbidden_for_kubelets("node-role.kubernetes.io/gpu").is_some());
        assert!(forbidden_for_kubelets("example.k8s.io/x").is_some());
        assert!(forbidden_for_kubelets("node-restriction.kubernetes.io/pool").is_some());
        assert!(forbidden_for_kubelets("pool").is_none());
    }
}
