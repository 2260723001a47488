//! Validation agreement, against the real API server:
//! - `kfsched_accepts_exactly_what_the_server_accepts`: a table of
//!   toleration, taint, label, node-affinity, pod-affinity, pod-annotation
//!   and pod-spec field (topology spread, class and scheduler names) cases
//!   (valid and invalid, at the limits of every Kubernetes rule, and
//!   every content the server accepts with a warning) goes through kfsched's
//!   policy validator AND is submitted as a dry-run Pod or Node create;
//!   kfsched must accept exactly what the server accepts, except where SPEC
//!   makes it stricter (`Gt`/`Lt` values must be integers; an empty
//!   required term; an empty field under `strategy: replace`; an empty
//!   class or scheduler name, a topologyKey that is no label key), give the
//!   server's message where both refuse a pod-spec field, and give
//!   exactly the server's warnings (the HTTP `Warning` headers), each at
//!   the policy's path for the server's.
//!   The taint and label forms of `node taint` / `node label` are checked the
//!   same way.
//! - `every_bad_policy_fragment_is_refused_by_the_server_too`: every case of
//!   `testdata/bad/policy-*` (the validator's exact-message tests) whose error
//!   lies in such a field, read from the directory, is refused by the server
//!   too, with the same two exceptions.
//! - `a_rewritten_workload_draws_the_warnings_kfsched_printed`: every case of
//!   `testdata/warnings/` end to end: the rewritten workload draws the
//!   warnings kfsched printed for its policy.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, PostParams};
use kube::client::Body;
use serde_json::{Value, json};

use kfsched::node::{label, taint};
use kfsched::policy::Policy;

use super::cluster::{cluster, rt, shared};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A list of tolerations.
    Tolerations,
    /// A list of taints.
    Taints,
    /// A label map (node labels, pool labels, a rule's nodeSelector).
    Labels,
    /// A `nodeAffinity` object.
    NodeAffinity,
    /// An `affinity` object with `podAffinity` / `podAntiAffinity`.
    PodAffinity,
    /// A pod annotation map.
    PodAnnotations,
    /// `priorityClassName`, `schedulerName`, `runtimeClassName` and
    /// `topologySpreadConstraints`: the rule's keys, the pod spec's fields.
    PodFields,
}

/// Where kfsched is stricter than the server, on purpose (SPEC §1, §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Agree,
    /// SPEC: `Gt`/`Lt` take one integer (the scheduler ignores others).
    StricterGtLt,
    /// SPEC §3: an empty term in the policy is invalid (it matches no node).
    StricterEmptyTerm,
    /// A pod-spec field the server takes but that does nothing or never
    /// holds in a rule: an empty name, a topologyKey that is no label key,
    /// a matchLabelKeys key the selector names already (refused once the
    /// pod carries that label).
    StricterPodField,
}

struct Case {
    kind: Kind,
    json: Value,
    expect: Expect,
}

fn c(kind: Kind, json: Value) -> Case {
    Case {
        kind,
        json,
        expect: Expect::Agree,
    }
}

fn long(n: usize) -> String {
    "v".repeat(n)
}

fn term(expr: Value) -> Value {
    json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}})
}

fn fields(expr: Value) -> Value {
    json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [expr]}]}})
}

fn preferred(weight: i64, expr: Value) -> Value {
    json!({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "preference": {"matchExpressions": [expr]}}]})
}

fn cases() -> Vec<Case> {
    let mut v = toleration_taint_and_label_cases();
    v.extend(node_affinity_cases());
    v.extend(warning_cases());
    v.extend(annotation_cases());
    v.extend(pod_field_cases());
    v
}

/// The PriorityClass and RuntimeClass the valid pod-field cases name (the
/// server's admission refuses a pod whose classes do not exist).
const VALIDATION_CLASSES: &str = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: v-high}\nvalue: 1000\n---\napiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: v-runc}\nhandler: runc\n";

fn pod_field_cases() -> Vec<Case> {
    use Kind::PodFields;
    let spread = |extra: Value| {
        let mut c = json!({"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "x"}}});
        for (k, v) in extra.as_object().into_iter().flatten() {
            if v.is_null() {
                c.as_object_mut().map(|m| m.remove(k));
            } else {
                c[k] = v.clone();
            }
        }
        json!({"topologySpreadConstraints": [c]})
    };
    let stricter = |json: Value| Case {
        kind: PodFields,
        json,
        expect: Expect::StricterPodField,
    };
    vec![
        c(PodFields, spread(json!({}))),
        c(PodFields, spread(json!({"maxSkew": 0}))),
        c(PodFields, spread(json!({"maxSkew": -3}))),
        c(PodFields, spread(json!({"whenUnsatisfiable": "Sometimes"}))),
        c(
            PodFields,
            spread(json!({"whenUnsatisfiable": "ScheduleAnyway"})),
        ),
        c(PodFields, spread(json!({"topologyKey": ""}))),
        c(PodFields, spread(json!({"minDomains": 0}))),
        c(PodFields, spread(json!({"minDomains": 3}))),
        c(
            PodFields,
            spread(json!({"minDomains": 3, "whenUnsatisfiable": "ScheduleAnyway"})),
        ),
        c(PodFields, spread(json!({"nodeAffinityPolicy": "honor"}))),
        c(
            PodFields,
            spread(json!({"nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"})),
        ),
        c(
            PodFields,
            spread(json!({"matchLabelKeys": ["pipelines.kubeflow.org/run_id"]})),
        ),
        c(PodFields, spread(json!({"matchLabelKeys": ["bad key"]}))),
        c(
            PodFields,
            spread(json!({"matchLabelKeys": ["run"], "labelSelector": null})),
        ),
        c(
            PodFields,
            spread(json!({"labelSelector": {"matchLabels": {"app": "a b"}}})),
        ),
        c(
            PodFields,
            spread(
                json!({"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}),
            ),
        ),
        // Accepted with the server's warnings.
        c(PodFields, spread(json!({"labelSelector": null}))),
        c(
            PodFields,
            spread(json!({"topologyKey": "failure-domain.beta.kubernetes.io/zone"})),
        ),
        c(
            PodFields,
            json!({"topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {}},
                {"maxSkew": 3, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
            ]}),
        ),
        c(
            PodFields,
            json!({"priorityClassName": "v-high", "runtimeClassName": "v-runc", "schedulerName": "volcano"}),
        ),
        c(PodFields, json!({"priorityClassName": "High_Priority"})),
        c(PodFields, json!({"runtimeClassName": "runc."})),
        c(
            PodFields,
            json!({"priorityClassName": format!("a{}", ".b".repeat(130))}),
        ),
        stricter(json!({"schedulerName": ""})),
        stricter(json!({"priorityClassName": ""})),
        stricter(spread(json!({"topologyKey": "a b"}))),
        stricter(spread(json!({"matchLabelKeys": ["app"]}))),
    ]
}

fn toleration_taint_and_label_cases() -> Vec<Case> {
    use Kind::*;
    vec![
        // Tolerations.
        c(
            Tolerations,
            json!([{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]),
        ),
        c(Tolerations, json!([{"key": "k", "value": "v"}])),
        c(
            Tolerations,
            json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]),
        ),
        c(
            Tolerations,
            json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -5}]),
        ),
        c(Tolerations, json!([{"operator": "Exists"}])),
        c(
            Tolerations,
            json!([{"operator": "Exists", "effect": "NoSchedule"}]),
        ),
        c(
            Tolerations,
            json!([{"key": "example.com/k", "operator": "Exists", "effect": "PreferNoSchedule"}]),
        ),
        c(
            Tolerations,
            json!([{"key": "k", "operator": "Equal", "value": ""}]),
        ),
        c(Tolerations, json!([{"key": "k", "operator": "Equals"}])),
        c(Tolerations, json!([{"key": "a", "operator": "Equals"}])),
        c(Tolerations, json!([{"operator": "Equal"}])),
        c(Tolerations, json!([{"value": "v"}])),
        c(
            Tolerations,
            json!([{"key": "k", "operator": "Exists", "value": "v"}]),
        ),
        c(
            Tolerations,
            json!([{"key": "k", "value": "v", "effect": "NoSchedul"}]),
        ),
        c(
            Tolerations,
            json!([{"key": "k", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 5}]),
        ),
        c(
            Tolerations,
            json!([{"key": "k", "value": "v", "tolerationSeconds": 5}]),
        ),
        c(Tolerations, json!([{"key": "k", "value": "bad value"}])),
        c(Tolerations, json!([{"key": "k", "value": long(63)}])),
        c(Tolerations, json!([{"key": "k", "value": long(64)}])),
        c(Tolerations, json!([{"key": "-k", "operator": "Exists"}])),
        c(Tolerations, json!([{"key": "a/b/c", "operator": "Exists"}])),
        c(
            Tolerations,
            json!([{"key": "Example.com/k", "operator": "Exists"}]),
        ),
        c(Tolerations, json!([{"key": "k", "operator": "exists"}])),
        // Taints.
        c(
            Taints,
            json!([{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        ),
        c(Taints, json!([{"key": "k", "effect": "PreferNoSchedule"}])),
        c(
            Taints,
            json!([{"key": "example.com/k", "value": "", "effect": "NoExecute"}]),
        ),
        c(
            Taints,
            json!([{"key": "k", "value": "v", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoExecute"}]),
        ),
        c(
            Taints,
            json!([{"key": "k", "value": "a", "effect": "NoSchedule"}, {"key": "k", "value": "b", "effect": "NoSchedule"}]),
        ),
        c(Taints, json!([{"key": "k", "value": "v"}])),
        c(
            Taints,
            json!([{"key": "k", "value": "v", "effect": "Sometimes"}]),
        ),
        c(
            Taints,
            json!([{"key": "k", "value": "v", "effect": "noschedule"}]),
        ),
        c(Taints, json!([{"key": "", "effect": "NoSchedule"}])),
        c(Taints, json!([{"key": "k k", "effect": "NoSchedule"}])),
        c(
            Taints,
            json!([{"key": "k", "value": "a b", "effect": "NoSchedule"}]),
        ),
        c(
            Taints,
            json!([{"key": "k", "value": long(64), "effect": "NoSchedule"}]),
        ),
        c(
            Taints,
            json!([{"key": format!("{}/k", long(254)), "effect": "NoSchedule"}]),
        ),
        c(Taints, json!([{"key": long(64), "effect": "NoSchedule"}])),
        // Labels.
        c(Labels, json!({"a": "b"})),
        c(Labels, json!({"example.com/a": "b"})),
        c(Labels, json!({"a": ""})),
        c(Labels, json!({"a.b_c-d": "x.y_z-1"})),
        c(Labels, json!({"A": "B"})),
        c(Labels, json!({"gpu": "true"})),
        c(Labels, json!({"a": "b c"})),
        c(Labels, json!({"-a": "b"})),
        c(Labels, json!({"a/b/c": "d"})),
        c(Labels, json!({"Example.com/a": "b"})),
        c(Labels, json!({"a": long(63)})),
        c(Labels, json!({"a": long(64)})),
        c(Labels, json!({long(64): "v"})),
        c(Labels, json!({"a/": "v"})),
        c(Labels, json!({"/a": "v"})),
        c(Labels, json!({"a": "-b"})),
        c(Labels, json!({"a": "b_"})),
    ]
}

fn node_affinity_cases() -> Vec<Case> {
    use Kind::*;
    let mut v = vec![
        // Node affinity: required terms.
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "In", "values": ["a", "b"]})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "NotIn", "values": ["a"]})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "Exists"})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "DoesNotExist"})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "Gt", "values": ["5"]})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "Lt", "values": ["-3"]})),
        ),
        c(NodeAffinity, term(json!({"key": "k", "operator": "In"}))),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "In", "values": []})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "Exists", "values": ["a"]})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "Gt", "values": ["1", "2"]})),
        ),
        c(NodeAffinity, term(json!({"key": "k", "operator": "Gt"}))),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "Bogus", "values": ["a"]})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "in", "values": ["a"]})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "bad key", "operator": "Exists"})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "In", "values": ["a b"]})),
        ),
        c(
            NodeAffinity,
            term(json!({"key": "k", "operator": "In", "values": [long(64)]})),
        ),
        c(
            NodeAffinity,
            fields(json!({"key": "metadata.name", "operator": "In", "values": ["node-1"]})),
        ),
        c(
            NodeAffinity,
            fields(json!({"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]})),
        ),
        c(
            NodeAffinity,
            fields(json!({"key": "metadata.labels", "operator": "In", "values": ["x"]})),
        ),
        c(
            NodeAffinity,
            fields(json!({"key": "metadata.name", "operator": "In", "values": ["a", "b"]})),
        ),
        c(
            NodeAffinity,
            fields(json!({"key": "metadata.name", "operator": "Exists"})),
        ),
        c(
            NodeAffinity,
            fields(json!({"key": "metadata.name", "operator": "In", "values": ["Bad_Name"]})),
        ),
        c(
            NodeAffinity,
            json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}),
        ),
        // Node affinity: preferred terms.
        c(
            NodeAffinity,
            preferred(1, json!({"key": "k", "operator": "In", "values": ["a"]})),
        ),
        c(
            NodeAffinity,
            preferred(100, json!({"key": "k", "operator": "Exists"})),
        ),
        c(
            NodeAffinity,
            preferred(0, json!({"key": "k", "operator": "Exists"})),
        ),
        c(
            NodeAffinity,
            preferred(101, json!({"key": "k", "operator": "Exists"})),
        ),
        c(
            NodeAffinity,
            preferred(-1, json!({"key": "k", "operator": "Exists"})),
        ),
        c(
            NodeAffinity,
            preferred(50, json!({"key": "k", "operator": "In"})),
        ),
        c(
            NodeAffinity,
            preferred(50, json!({"key": "bad key", "operator": "Exists"})),
        ),
        c(
            NodeAffinity,
            preferred(50, json!({"key": "k", "operator": "In", "values": ["a b"]})),
        ),
        c(
            NodeAffinity,
            preferred(50, json!({"key": "k", "operator": "Gt", "values": ["7"]})),
        ),
    ];
    for values in [json!(["five"]), json!(["1.5"]), json!([""])] {
        v.push(Case {
            kind: NodeAffinity,
            json: term(json!({"key": "k", "operator": "Gt", "values": values})),
            expect: Expect::StricterGtLt,
        });
    }
    v.push(Case {
        kind: NodeAffinity,
        json: preferred(50, json!({"key": "k", "operator": "Lt", "values": ["ten"]})),
        expect: Expect::StricterGtLt,
    });
    v.push(Case {
        kind: NodeAffinity,
        json: json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}),
        expect: Expect::StricterEmptyTerm,
    });
    v
}

/// Node-label and pod-affinity content the server accepts with a warning
/// (and its neighbours that draw none, or an error instead).
fn warning_cases() -> Vec<Case> {
    use Kind::*;
    const DEPRECATED: &[&str] = &[
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "beta.kubernetes.io/instance-type",
        "app.kubernetes.io/created-by",
        "scheduler.alpha.kubernetes.io/preferAvoidPods",
        "node-role.kubernetes.io/master",
    ];
    let mut v = Vec::new();
    for key in DEPRECATED {
        v.push(c(Labels, json!({*key: "v"})));
        v.push(c(
            NodeAffinity,
            term(json!({"key": key, "operator": "In", "values": ["v"]})),
        ));
        v.push(c(
            NodeAffinity,
            preferred(5, json!({"key": key, "operator": "Exists"})),
        ));
    }
    let pod_term = |selector: Option<Value>| {
        let mut t = json!({"topologyKey": "kubernetes.io/hostname"});
        if let Some(s) = selector {
            t["labelSelector"] = s;
        }
        t
    };
    v.extend([
        c(
            Labels,
            json!({"beta.kubernetes.io/os": "linux", "a": "b", "node-role.kubernetes.io/master": ""}),
        ),
        // Preferred values that are not label values: one warning per rule broken.
        c(
            NodeAffinity,
            preferred(9, json!({"key": "k", "operator": "In", "values": ["ok", "-x", long(64)]})),
        ),
        c(
            NodeAffinity,
            preferred(9, json!({"key": "k", "operator": "NotIn", "values": [format!("-{}", long(70))]})),
        ),
        c(
            NodeAffinity,
            preferred(9, json!({"key": "k", "operator": "Gt", "values": ["-5"]})),
        ),
        c(
            NodeAffinity,
            json!({"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [{"key": "beta.kubernetes.io/os", "operator": "In", "values": ["linux os"]}]}},
                {"weight": 2, "preference": {"matchExpressions": [{"key": "k", "operator": "In", "values": ["a/b"]}]}}
            ]}),
        ),
        // Pod (anti-)affinity: a null selector matches no pod; `{}` every pod.
        c(
            PodAffinity,
            json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(None)]}}),
        ),
        c(
            PodAffinity,
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(Some(Value::Null)), pod_term(Some(json!({})))]}}),
        ),
        c(
            PodAffinity,
            json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "podAffinityTerm": pod_term(None)}]},
                   "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 4, "podAffinityTerm": pod_term(Some(json!({"matchLabels": {"app": "db"}})))}]}}),
        ),
        c(
            PodAffinity,
            json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "failure-domain.beta.kubernetes.io/zone", "labelSelector": {"matchLabels": {"app": "db"}}}
            ]}}),
        ),
        c(
            PodAffinity,
            json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "a b"}}}
            ]}}),
        ),
        c(
            PodAffinity,
            json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "namespaces": ["ml"], "namespaceSelector": null}
            ]}}),
        ),
    ]);
    v
}

/// Pod annotations: the keys the server warns about, and the values it
/// checks whatever the pod.
fn annotation_cases() -> Vec<Case> {
    use Kind::*;
    vec![
        c(
            PodAnnotations,
            json!({"scheduler.alpha.kubernetes.io/critical-pod": ""}),
        ),
        c(
            PodAnnotations,
            json!({"security.alpha.kubernetes.io/sysctls": "kernel.shm_rmid_forced=1", "security.alpha.kubernetes.io/unsafe-sysctls": "net.core.somaxconn=1024"}),
        ),
        c(
            PodAnnotations,
            json!({"seccomp.security.alpha.kubernetes.io/pod": "runtime/default"}),
        ),
        // The test pod's container is `c`.
        c(
            PodAnnotations,
            json!({"container.seccomp.security.alpha.kubernetes.io/c": "unconfined"}),
        ),
        c(
            PodAnnotations,
            json!({"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}),
        ),
        c(
            PodAnnotations,
            json!({"example.com/owner": "ml-platform", "team": ""}),
        ),
        c(PodAnnotations, json!({"a/b/c": "x"})),
        c(
            PodAnnotations,
            json!({"seccomp.security.alpha.kubernetes.io/pod": "localhost/profiles/audit.json"}),
        ),
        c(
            PodAnnotations,
            json!({"seccomp.security.alpha.kubernetes.io/pod": "default"}),
        ),
        c(
            PodAnnotations,
            json!({"seccomp.security.alpha.kubernetes.io/pod": "localhost//etc/audit.json"}),
        ),
        c(
            PodAnnotations,
            json!({"container.seccomp.security.alpha.kubernetes.io/c": "localhost/../audit.json"}),
        ),
        c(
            PodAnnotations,
            json!({"container.apparmor.security.beta.kubernetes.io/c": "localhost/k8s-default"}),
        ),
        c(
            PodAnnotations,
            json!({"container.apparmor.security.beta.kubernetes.io/c": "k8s-default"}),
        ),
        c(
            PodAnnotations,
            json!({"controller.kubernetes.io/pod-deletion-cost": "-100"}),
        ),
        c(
            PodAnnotations,
            json!({"controller.kubernetes.io/pod-deletion-cost": "007"}),
        ),
        c(
            PodAnnotations,
            json!({"controller.kubernetes.io/pod-deletion-cost": "2147483648"}),
        ),
    ]
}

/// One way a case goes into a policy, and into the object the server judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Tolerations,
    PoolTaints,
    PoolLabels,
    /// Pool labels that a rule names: a required node-affinity term.
    PoolOfRule,
    NodeSelector,
    NodeAffinity,
    Affinity,
    Annotations,
    PodFields,
}

impl Form {
    fn of(kind: Kind) -> &'static [Form] {
        match kind {
            Kind::Tolerations => &[Form::Tolerations],
            Kind::Taints => &[Form::PoolTaints],
            Kind::Labels => &[Form::PoolLabels, Form::NodeSelector, Form::PoolOfRule],
            Kind::NodeAffinity => &[Form::NodeAffinity],
            Kind::PodAffinity => &[Form::Affinity],
            Kind::PodAnnotations => &[Form::Annotations],
            Kind::PodFields => &[Form::PodFields],
        }
    }

    /// The policy that carries the case (JSON is YAML, so it goes in verbatim).
    fn policy(self, j: &Value) -> String {
        let spec = match self {
            Form::Tolerations => json!({"rules": [{"name": "r", "tolerations": j}]}),
            Form::PoolTaints => json!({"nodePools": [{"name": "p", "nodes": ["n"], "taints": j}]}),
            Form::PoolLabels => json!({"nodePools": [{"name": "p", "nodes": ["n"], "labels": j}]}),
            Form::PoolOfRule => json!({
                "nodePools": [{"name": "p", "nodes": ["n"], "labels": j}],
                "rules": [{"name": "r", "pool": "p"}]
            }),
            Form::NodeSelector => json!({"rules": [{"name": "r", "nodeSelector": j}]}),
            Form::NodeAffinity => {
                json!({"rules": [{"name": "r", "affinity": {"nodeAffinity": j}}]})
            }
            Form::Affinity => json!({"rules": [{"name": "r", "affinity": j}]}),
            Form::Annotations => json!({"rules": [{"name": "r", "podAnnotations": j}]}),
            Form::PodFields => {
                let mut rule = json!({"name": "r"});
                for (k, v) in j.as_object().into_iter().flatten() {
                    rule[k] = v.clone();
                }
                json!({"rules": [rule]})
            }
        };
        format!(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {{name: v}}\nspec: {spec}\n"
        )
    }

    /// The object the server judges, and its collection's URL.
    fn object(self, j: &Value, name: &str) -> (&'static str, Value) {
        let pod = |meta: Value, extra: Value| {
            let mut spec = json!({"containers": [{"name": "c", "image": "example.invalid/x:1"}]});
            for (k, v) in extra.as_object().into_iter().flatten() {
                spec[k] = v.clone();
            }
            let mut metadata = json!({"name": name});
            for (k, v) in meta.as_object().into_iter().flatten() {
                metadata[k] = v.clone();
            }
            let o = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec});
            ("/api/v1/namespaces/default/pods", o)
        };
        let node = |labels: Value, taints: Value| {
            let o = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}});
            ("/api/v1/nodes", o)
        };
        match self {
            Form::Tolerations => pod(json!({}), json!({"tolerations": j})),
            Form::PoolTaints => node(json!({}), j.clone()),
            Form::PoolLabels => node(j.clone(), json!([])),
            Form::PoolOfRule => {
                let exprs: Vec<Value> = j
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| json!({"key": k, "operator": "In", "values": [v]}))
                    .collect();
                let required = json!({"nodeSelectorTerms": [{"matchExpressions": exprs}]});
                pod(
                    json!({}),
                    json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}),
                )
            }
            Form::NodeSelector => pod(json!({}), json!({"nodeSelector": j})),
            Form::NodeAffinity => pod(json!({}), json!({"affinity": {"nodeAffinity": j}})),
            Form::Affinity => pod(json!({}), json!({"affinity": j})),
            Form::Annotations => pod(json!({"annotations": j}), json!({})),
            Form::PodFields => pod(json!({}), j.clone()),
        }
    }

    /// The server's path for a kfsched warning's path in this form's policy.
    fn server_path(self, ours: &str, j: &Value) -> String {
        // `["example.com/k"]` in kfsched's paths is `[example.com/k]` in the server's.
        let unquote = |p: &str| p.replace("[\"", "[").replace("\"]", "]");
        if let Some(rest) = ours.strip_prefix("spec.rules[0].podAnnotations") {
            return format!("metadata.annotations{}", unquote(rest));
        }
        if let Some(rest) = ours.strip_prefix("spec.rules[0].") {
            return format!("spec.{}", unquote(rest));
        }
        if let Some(key) = ours.strip_prefix("spec.nodePools[0].labels") {
            let key = unquote(key);
            let key = key.trim_start_matches(['.', '[']).trim_end_matches(']');
            let i = j
                .as_object()
                .and_then(|m| m.keys().position(|k| k == key))
                .unwrap_or(usize::MAX);
            return format!(
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[{i}].key"
            );
        }
        format!("(no server path for {ours})")
    }
}

/// What the server says about a dry-run create: accepted or the 422
/// message, and the texts of its `Warning` headers.
struct Judgement {
    verdict: Result<(), String>,
    warnings: Vec<String>,
}

async fn judge(client: &Client, url: &str, obj: &Value) -> Judgement {
    let pp = PostParams {
        dry_run: true,
        field_manager: None,
    };
    let req = kube::core::Request::new(url)
        .create(&pp, serde_json::to_vec(obj).expect("JSON"))
        .expect("a request");
    let res = client
        .send(req.map(Body::from))
        .await
        .unwrap_or_else(|e| panic!("the server could not judge {obj}: {e}"));
    let status = res.status().as_u16();
    let warnings = res
        .headers()
        .get_all("warning")
        .iter()
        .map(|h| warning_text(h.to_str().expect("an ASCII warning header")))
        .collect();
    let body = res.into_body().collect_bytes().await.expect("a body");
    let verdict = match status {
        200 | 201 => Ok(()),
        // 403: an admission plugin refuses it (a PriorityClass or
        // RuntimeClass that does not exist; the mutating plugins run
        // before validation).
        422 | 403 => {
            let s: Value = serde_json::from_slice(&body).expect("a Status");
            Err(s["message"].as_str().unwrap_or("").to_string())
        }
        _ => panic!(
            "the server could not judge {obj}: {status} {}",
            String::from_utf8_lossy(&body)
        ),
    };
    Judgement { verdict, warnings }
}

/// The text of a `Warning: 299 - "text"` header (RFC 7234; the server
/// escapes `"` and `\` with a backslash).
fn warning_text(header: &str) -> String {
    let quoted = header
        .strip_prefix("299 - \"")
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or_else(|| panic!("an unexpected Warning header: {header}"));
    let mut out = String::new();
    let mut chars = quoted.chars();
    while let Some(ch) = chars.next() {
        out.push(if ch == '\\' {
            chars.next().unwrap_or(ch)
        } else {
            ch
        });
    }
    out
}

/// kfsched's warnings for a policy, as the server writes them: the
/// server's path, then the message.
fn as_server_warnings(policy: &Policy, form: Form, j: &Value) -> Vec<String> {
    let mut w: Vec<String> = policy
        .warnings
        .iter()
        .map(|d| format!("{}: {}", form.server_path(&d.path, j), d.message))
        .collect();
    w.sort();
    w.dedup();
    w
}

/// The CLI forms of a one-taint or label case, when it has one.
fn cli_forms(case: &Case) -> Vec<String> {
    match case.kind {
        Kind::Taints => {
            let Some([t]) = case.json.as_array().map(Vec::as_slice) else {
                return vec![];
            };
            let key = t["key"].as_str().unwrap_or("");
            let effect = t["effect"].as_str().unwrap_or("");
            match t["value"].as_str().filter(|v| !v.is_empty()) {
                Some(v) => vec![format!("{key}={v}:{effect}")],
                None if effect.is_empty() => vec![key.to_string()],
                None => vec![format!("{key}:{effect}")],
            }
        }
        Kind::Labels => case
            .json
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                    .collect()
            })
            .unwrap_or_default(),
        _ => vec![],
    }
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn kfsched_accepts_exactly_what_the_server_accepts() {
    let _g = shared();
    let cl = cluster();
    let classes = std::process::Command::new(super::cluster::kubectl())
        .args(["apply", "-f", "-"])
        .env("KUBECONFIG", &cl.admin)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .expect("stdin")
                .write_all(VALIDATION_CLASSES.as_bytes())?;
            c.wait()
        })
        .expect("kubectl apply runs");
    assert!(classes.success(), "the classes are applied");
    rt().block_on(async {
        let client = cl.client().await;
        let cases = cases();
        let mut disagreements = Vec::new();
        let (mut agree, mut stricter, mut warned) = (0, 0, 0);
        for (i, case) in cases.iter().enumerate() {
            let mut server_oks = Vec::new();
            for (f, &form) in Form::of(case.kind).iter().enumerate() {
                let (url, obj) = form.object(&case.json, &format!("validate-{i}-{f}"));
                let server = judge(&client, url, &obj).await;
                let policy = form.policy(&case.json);
                let kfsched = Policy::from_bytes("case.yaml", policy.as_bytes());
                let server_ok = server.verdict.is_ok();
                server_oks.push(server_ok);
                let detail = match &kfsched {
                    Ok(_) => "kfsched accepts".to_string(),
                    Err(e) => format!(
                        "kfsched: {}",
                        e.0.iter()
                            .map(|d| d.to_string())
                            .collect::<Vec<_>>()
                            .join(" | ")
                    ),
                };
                // Where both refuse a pod field for its form, the server says what kfsched does.
                if let (Kind::PodFields, Err(e), Err(m)) = (case.kind, &kfsched, &server.verdict) {
                    for d in &e.0 {
                        // kfsched's did-you-mean follows the server's words.
                        let said = d.message.split("; did you mean").next().unwrap_or("");
                        if !m.contains(said) && !m.contains("is forbidden") {
                            disagreements.push(format!(
                                "{form:?} {}: the server refuses with another message\n    server:  {m}\n    kfsched: {}",
                                case.json, d.message
                            ));
                        }
                    }
                }
                match (case.expect, &kfsched) {
                    (Expect::Agree, _) if kfsched.is_ok() == server_ok => agree += 1,
                    (
                        Expect::StricterGtLt | Expect::StricterEmptyTerm | Expect::StricterPodField,
                        Err(_),
                    ) if server_ok => stricter += 1,
                    _ => disagreements.push(format!(
                        "{form:?} {} (expect {:?}): server {} / {detail}\n    policy: {policy}",
                        case.json,
                        case.expect,
                        match &server.verdict {
                            Ok(()) => "accepts".to_string(),
                            Err(m) => format!("rejects: {m}"),
                        }
                    )),
                }
                // Where both accept, the same warnings (the server gives
                // none with an error, and neither does kfsched).
                if let (Ok(p), true) = (&kfsched, server_ok) {
                    let mut want = server.warnings.clone();
                    want.sort();
                    want.dedup();
                    let got = as_server_warnings(p, form, &case.json);
                    if got == want {
                        warned += usize::from(!want.is_empty());
                    } else {
                        disagreements.push(format!(
                            "{form:?} {}: warnings differ\n    server:  {want:?}\n    kfsched: {got:?}\n    as kfsched prints them: {:?}",
                            case.json,
                            p.warnings.iter().map(|d| d.to_string()).collect::<Vec<_>>()
                        ));
                    }
                }
            }
            assert!(
                server_oks.iter().all(|&ok| ok == server_oks[0]),
                "the server judged one case two ways: {} {server_oks:?}",
                case.json
            );
            let server_ok = server_oks[0];
            // The CLI parsers of `node taint` and `node label`.
            for form in cli_forms(case) {
                let cli_ok = match case.kind {
                    Kind::Taints => {
                        matches!(taint::parse_change(&form), Ok(taint::TaintChange::Add(_)))
                    }
                    _ => matches!(label::parse_change(&form), Ok(label::LabelChange::Set(..))),
                };
                // `key` without an effect is a node name on the command line, not a taint.
                let comparable = case.kind != Kind::Taints || form.contains(':');
                if comparable && cli_ok != server_ok {
                    disagreements.push(format!(
                        "CLI form {form:?}: server ok={server_ok}, kfsched parser ok={cli_ok}"
                    ));
                } else if comparable {
                    agree += 1;
                }
            }
        }
        eprintln!(
            "validation agreement: {} cases, {agree} checks agree, {stricter} stricter by SPEC, {warned} with the same warnings",
            cases.len()
        );
        assert!(
            disagreements.is_empty(),
            "{} disagreements:\n{}",
            disagreements.len(),
            disagreements.join("\n")
        );
        assert!(warned >= 40, "only {warned} checks had warnings");
    });
}

/// The bad-policy cases of `testdata/bad/policy-*` (the policy validator's
/// own tests, with their exact messages) whose error lies in a toleration,
/// taint, label, node selector, affinity, topology spread constraint or
/// class name: the same fragment, read from the
/// case's policy file, is sent to the server, which must refuse it too,
/// except where SPEC makes kfsched stricter on purpose. Read from the
/// directory, so a new case is checked without being listed here.
#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn every_bad_policy_fragment_is_refused_by_the_server_too() {
    use kube::api::{ApiResource, DynamicObject, ListParams};
    // kfsched is stricter: SPEC §1 (Gt/Lt integers), §3 (an empty term), and
    // an empty field under `strategy: replace` (a valid Pod field, but a rule
    // that would do nothing; README, Decisions), and an empty pool selector
    // (a valid selector that matches every node; README, Nodes).
    const STRICTER: &[&str] = &[
        "policy-gt-not-integer",
        "policy-empty-term",
        "policy-pool-empty-selector",
        "policy-replace-empty-field",
    ];
    // Errors of the YAML itself: the file has no JSON form to send.
    const NOT_JSON: &[&str] = &[
        "policy-alias",
        "policy-duplicate-key",
        "policy-node-selector-duplicate-key",
        "policy-tabs",
    ];
    let _g = shared();
    let cl = cluster();
    let bad = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/bad");
    let mut dirs: Vec<_> = std::fs::read_dir(&bad)
        .expect("testdata/bad")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("policy-"))
        })
        .collect();
    dirs.sort();
    rt().block_on(async {
        let client = cl.client().await;
        let pp = PostParams {
            dry_run: true,
            field_manager: None,
        };
        let pods: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), "default", &ApiResource::erase::<Pod>(&()));
        let nodes: Api<DynamicObject> = Api::all_with(client.clone(), &ApiResource::erase::<Node>(&()));
        let (mut checked, mut not_json, mut failures) = (Vec::new(), Vec::new(), Vec::new());
        for dir in &dirs {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let stderr = std::fs::read_to_string(dir.join("stderr.txt")).expect("stderr.txt");
            let first = stderr.lines().next().unwrap_or("");
            // "error: policy.yaml:L:C: PATH: message"
            let Some(path) = first.split(": ").nth(2).filter(|_| first.starts_with("error: policy.yaml:")) else {
                continue;
            };
            let path = path.to_string();
            let (section, rest) = match path.split_once('.') {
                Some(("spec", rest)) => ("spec", rest),
                _ => continue,
            };
            let _ = section;
            let Some((list, rest)) = rest.split_once('[') else { continue };
            let Some((index, field)) = rest.split_once("].") else { continue };
            let index: usize = index.parse().expect("an index");
            let field_head = field.split(['.', '[']).next().unwrap_or("");
            let target = match (list, field_head) {
                ("rules", "tolerations") => "tolerations",
                ("rules", "nodeSelector") => "nodeSelector",
                ("rules", "affinity") => "affinity",
                ("rules", "topologySpreadConstraints") => "topologySpreadConstraints",
                ("rules", "priorityClassName") => "priorityClassName",
                ("rules", "runtimeClassName") => "runtimeClassName",
                ("nodePools", "labels") => "labels",
                ("nodePools", "taints") => "taints",
                ("nodePools", "nodeSelector") => "selector",
                _ => continue,
            };
            if NOT_JSON.contains(&name.as_str()) {
                not_json.push(name);
                continue;
            }
            let text = std::fs::read_to_string(dir.join("policy.yaml")).expect("policy.yaml");
            let tree = kfsched_yaml::Tree::parse(&text).expect("a parse");
            let root = tree.documents[0].root.expect("a root");
            let doc = kfsched_yaml::value::node_value(&tree, root).to_json();
            let fragment = doc["spec"][list][index][field_head].clone();
            assert!(!fragment.is_null(), "{name}: no {path} in the policy");
            let i = checked.len();
            let obj = |kind: &str, body: Value| -> DynamicObject {
                let mut o = json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": format!("bad-policy-{i}")}});
                for (k, v) in body.as_object().expect("a body") {
                    o[k] = v.clone();
                }
                serde_json::from_value(o).expect("a dynamic object")
            };
            let pod = |spec: Value| {
                let mut s = json!({"containers": [{"name": "c", "image": "example.invalid/x:1"}]});
                for (k, v) in spec.as_object().expect("spec") {
                    s[k] = v.clone();
                }
                obj("Pod", json!({"spec": s}))
            };
            let verdict = match target {
                "tolerations" => pods.create(&pp, &pod(json!({"tolerations": fragment}))).await.map(|_| ()),
                "nodeSelector" => pods.create(&pp, &pod(json!({"nodeSelector": fragment}))).await.map(|_| ()),
                "affinity" => pods.create(&pp, &pod(json!({"affinity": fragment}))).await.map(|_| ()),
                "topologySpreadConstraints" | "priorityClassName" | "runtimeClassName" => {
                    pods.create(&pp, &pod(json!({target: fragment}))).await.map(|_| ())
                }
                "labels" => nodes.create(&pp, &obj("Node", json!({"metadata": {"name": format!("bad-policy-{i}"), "labels": fragment}}))).await.map(|_| ()),
                "taints" => nodes.create(&pp, &obj("Node", json!({"spec": {"taints": fragment}}))).await.map(|_| ()),
                _ => {
                    let selector = fragment.as_str().expect("a selector string").to_string();
                    nodes.list(&ListParams::default().labels(&selector).limit(1)).await.map(|_| ())
                }
            };
            let refused = match &verdict {
                Ok(()) => None,
                // 422: validation; 400: the value does not decode (a wrong type) or a bad
                // selector; 403: an admission plugin (a class that does not exist).
                Err(kube::Error::Api(s)) if matches!(s.code, 422 | 400 | 403) => Some(s.message.clone()),
                Err(e) => panic!("{name}: the server could not judge {fragment}: {e}"),
            };
            let stricter = STRICTER.contains(&name.as_str());
            match (&refused, stricter) {
                (Some(_), false) | (None, true) => {}
                (None, false) => failures.push(format!("{name}: the server accepts {target} {fragment}, kfsched says: {first}")),
                (Some(m), true) => failures.push(format!("{name}: listed as stricter than the server, but the server refuses it too: {m}")),
            }
            checked.push(name);
        }
        assert!(failures.is_empty(), "{} disagreements:\n{}", failures.len(), failures.join("\n"));
        assert_eq!(not_json, NOT_JSON, "the YAML-level cases");
        // Every stricter case was among those checked.
        for s in STRICTER {
            assert!(checked.iter().any(|c| c == s), "{s} was not checked");
        }
        assert!(checked.len() >= 25, "only {} cases checked: {checked:?}", checked.len());
        eprintln!("{} bad-policy fragments checked against the server: {}", checked.len(), checked.join(", "));
    });
}

/// The `testdata/warnings` cases end to end: the rewritten workload
/// (`expected.yaml`, which the data tests check is what `rewrite` makes),
/// created on the server as a dry run, draws exactly the warnings kfsched
/// printed for the policy. The messages are compared: the server's paths
/// are the workload's, where merged terms may sit at other indices.
#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn a_rewritten_workload_draws_the_warnings_kfsched_printed() {
    let _g = shared();
    let cl = cluster();
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/warnings");
    let mut dirs: Vec<_> = std::fs::read_dir(&base)
        .expect("testdata/warnings")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    rt().block_on(async {
        let client = cl.client().await;
        let mut failures = Vec::new();
        for dir in &dirs {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let policy = Policy::load(&dir.join("policy.yaml")).expect("a valid policy");
            let text = std::fs::read_to_string(dir.join("expected.yaml")).expect("expected.yaml");
            let tree = kfsched_yaml::Tree::parse(&text).expect("a parse");
            let root = tree.documents[0].root.expect("a root");
            let mut obj = kfsched_yaml::value::node_value(&tree, root).to_json();
            obj["metadata"]["name"] = json!(format!("warnings-{name}"));
            let url = match obj["kind"].as_str() {
                Some("Pod") => "/api/v1/namespaces/default/pods",
                Some("Deployment") => "/apis/apps/v1/namespaces/default/deployments",
                Some("Job") => "/apis/batch/v1/namespaces/default/jobs",
                other => panic!("{name}: no URL for kind {other:?}"),
            };
            let server = judge(&client, url, &obj).await;
            assert!(server.verdict.is_ok(), "{name}: {:?}", server.verdict);
            let message = |w: &String| w.split_once(": ").map_or(w.clone(), |(_, m)| m.to_string());
            let mut want: Vec<String> = server.warnings.iter().map(message).collect();
            let mut got: Vec<String> = policy.warnings.iter().map(|d| d.message.clone()).collect();
            want.sort();
            got.sort();
            if want != got {
                failures.push(format!(
                    "{name}:\n    server:  {want:?}\n    kfsched: {got:?}"
                ));
            }
        }
        assert!(dirs.len() >= 4, "{} warning cases", dirs.len());
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    });
}
