//! Validation agreement, against the real API server:
//! - `kfsched_accepts_exactly_what_the_server_accepts`: a table of
//!   toleration, taint, label and node-affinity cases (valid and invalid, at
//!   the limits of every Kubernetes rule) goes through kfsched's policy
//!   validator AND is submitted as a dry-run Pod or Node create; kfsched must
//!   accept exactly what the server accepts, except where SPEC makes it
//!   stricter (`Gt`/`Lt` values must be integers; an empty required term;
//!   an empty field under `strategy: replace`).
//!   The taint and label forms of `node taint` / `node label` are checked the
//!   same way.
//! - `every_bad_policy_fragment_is_refused_by_the_server_too`: every case of
//!   `testdata/bad/policy-*` (the validator's exact-message tests) whose error
//!   lies in such a field, read from the directory, is refused by the server
//!   too, with the same two exceptions.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, PostParams};
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
}

/// Where kfsched is stricter than the server, on purpose (SPEC §1, §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Agree,
    /// SPEC: `Gt`/`Lt` take one integer (the scheduler ignores others).
    StricterGtLt,
    /// SPEC §3: an empty term in the policy is invalid (it matches no node).
    StricterEmptyTerm,
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
    use Kind::*;
    let mut v = vec![
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

/// The policies that carry a case (JSON is YAML, so the case goes in verbatim).
fn policies(case: &Case) -> Vec<String> {
    let j = case.json.to_string();
    let doc = |spec: String| {
        format!(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {{name: v}}\nspec: {spec}\n"
        )
    };
    match case.kind {
        Kind::Tolerations => vec![doc(format!(
            r#"{{"rules": [{{"name": "r", "tolerations": {j}}}]}}"#
        ))],
        Kind::Taints => vec![doc(format!(
            r#"{{"nodePools": [{{"name": "p", "nodes": ["n"], "taints": {j}}}]}}"#
        ))],
        Kind::Labels => vec![
            doc(format!(
                r#"{{"nodePools": [{{"name": "p", "nodes": ["n"], "labels": {j}}}]}}"#
            )),
            doc(format!(
                r#"{{"rules": [{{"name": "r", "nodeSelector": {j}}}]}}"#
            )),
        ],
        Kind::NodeAffinity => vec![doc(format!(
            r#"{{"rules": [{{"name": "r", "affinity": {{"nodeAffinity": {j}}}}}]}}"#
        ))],
    }
}

/// What the API server says, as dry-run creates.
async fn server_accepts(
    client: &Client,
    case: &Case,
    i: usize,
) -> Vec<(String, Result<(), String>)> {
    let pp = PostParams {
        dry_run: true,
        field_manager: None,
    };
    let pod = |spec_extra: Value| {
        let mut spec = json!({"containers": [{"name": "c", "image": "example.invalid/x:1"}]});
        if let (Some(s), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
            for (k, v) in extra {
                s.insert(k.clone(), v.clone());
            }
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("validate-{i}")}, "spec": spec})
    };
    let node = |meta_labels: Option<&Value>, taints: Option<&Value>| {
        let mut n = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("validate-{i}")}, "spec": {}});
        if let Some(l) = meta_labels {
            n["metadata"]["labels"] = l.clone();
        }
        if let Some(t) = taints {
            n["spec"]["taints"] = t.clone();
        }
        n
    };
    let mut objects: Vec<(String, Value)> = Vec::new();
    match case.kind {
        Kind::Tolerations => objects.push((
            "Pod.spec.tolerations".into(),
            pod(json!({"tolerations": case.json})),
        )),
        Kind::Taints => objects.push(("Node.spec.taints".into(), node(None, Some(&case.json)))),
        Kind::Labels => {
            objects.push(("Node.metadata.labels".into(), node(Some(&case.json), None)));
            objects.push((
                "Pod.spec.nodeSelector".into(),
                pod(json!({"nodeSelector": case.json})),
            ));
        }
        Kind::NodeAffinity => objects.push((
            "Pod.spec.affinity.nodeAffinity".into(),
            pod(json!({"affinity": {"nodeAffinity": case.json}})),
        )),
    }
    let mut out = Vec::new();
    for (what, obj) in objects {
        let r = if obj["kind"] == "Pod" {
            let p: Pod = serde_json::from_value(obj).expect("pod json");
            Api::<Pod>::namespaced(client.clone(), "default")
                .create(&pp, &p)
                .await
                .map(|_| ())
        } else {
            let n: Node = serde_json::from_value(obj).expect("node json");
            Api::<Node>::all(client.clone())
                .create(&pp, &n)
                .await
                .map(|_| ())
        };
        let verdict = match r {
            Ok(()) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 422 => Err(s.message),
            Err(e) => panic!("the server could not judge {what} {}: {e}", case.json),
        };
        out.push((what, verdict));
    }
    out
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
    rt().block_on(async {
        let client = cl.client().await;
        let cases = cases();
        let mut disagreements = Vec::new();
        let (mut agree, mut stricter) = (0, 0);
        for (i, case) in cases.iter().enumerate() {
            let server = server_accepts(&client, case, i).await;
            let server_ok = server.iter().all(|(_, r)| r.is_ok());
            let server_split = server.iter().any(|(_, r)| r.is_ok()) && !server_ok;
            assert!(
                !server_split,
                "the server judged one case two ways: {} {server:?}",
                case.json
            );
            for policy in policies(case) {
                let kfsched = Policy::from_bytes("case.yaml", policy.as_bytes());
                let kfsched_ok = kfsched.is_ok();
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
                match case.expect {
                    Expect::Agree if kfsched_ok == server_ok => agree += 1,
                    Expect::StricterGtLt | Expect::StricterEmptyTerm
                        if server_ok && !kfsched_ok =>
                    {
                        stricter += 1
                    }
                    _ => disagreements.push(format!(
                        "{:?} {} (expect {:?}): server {} / {detail}\n    policy: {policy}",
                        case.kind,
                        case.json,
                        case.expect,
                        match &server[0].1 {
                            Ok(()) => "accepts".to_string(),
                            Err(m) => format!("rejects: {m}"),
                        }
                    )),
                }
            }
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
            "validation agreement: {} cases, {agree} checks agree, {stricter} stricter by SPEC",
            cases.len()
        );
        assert!(
            disagreements.is_empty(),
            "{} disagreements:\n{}",
            disagreements.len(),
            disagreements.join("\n")
        );
    });
}

/// The bad-policy cases of `testdata/bad/policy-*` (the policy validator's
/// own tests, with their exact messages) whose error lies in a toleration,
/// taint, label, node selector or affinity: the same fragment, read from the
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
                "labels" => nodes.create(&pp, &obj("Node", json!({"metadata": {"name": format!("bad-policy-{i}"), "labels": fragment}}))).await.map(|_| ()),
                "taints" => nodes.create(&pp, &obj("Node", json!({"spec": {"taints": fragment}}))).await.map(|_| ()),
                _ => {
                    let selector = fragment.as_str().expect("a selector string").to_string();
                    nodes.list(&ListParams::default().labels(&selector).limit(1)).await.map(|_| ())
                }
            };
            let refused = match &verdict {
                Ok(()) => None,
                // 422: validation; 400: the value does not decode (a wrong type) or a bad selector.
                Err(kube::Error::Api(s)) if s.code == 422 || s.code == 400 => Some(s.message.clone()),
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
