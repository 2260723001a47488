//! audit lists pods in protobuf (`kfsched_cluster::listed`): what it keeps
//! of a pod's protobuf is what it keeps of the same pod's JSON, held equal
//! on pods the real API server stored — every admitted pod of every
//! fixture (`agreement` calls [`stored_pods_read_alike`]) and a pod with
//! every field audit reads, in each of the shapes the API allows.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kfsched_cluster::listed::{self, Body};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value as Json, json};

use super::harness::{Scope, kubectl_stdin, recreatable};
use crate::node::cluster::{cluster, eventually, rt};

/// The pods of `namespace` in one encoding, by name.
async fn listed_as(
    scope: &Scope,
    namespace: &str,
    accept: &'static str,
) -> Result<(bool, Vec<(String, Json)>), String> {
    let page = listed::page(
        scope.client.clone(),
        format!("/api/v1/namespaces/{namespace}/pods"),
        ListParams::default(),
        accept,
    )
    .await
    .map_err(|e| e.to_string())?;
    let protobuf = matches!(page.body, Body::Protobuf(_));
    let mut pods: Vec<(String, Json)> = page
        .body
        .pods()
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|p| (p["metadata"]["name"].as_str().unwrap_or("").to_string(), p))
        .collect();
    pods.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((protobuf, pods))
}

/// The differences between the two readings of the pods of `namespace`,
/// which must hold `expect` pods: one line per difference.
async fn compare(scope: &Scope, namespace: &str, expect: usize) -> Vec<String> {
    let mut out = Vec::new();
    // The scheduler may change a pod between two lists: the protobuf list
    // counts when the JSON lists before and after it agree.
    let mut attempts = 0;
    let (json_pb, from_json, pb, from_pb) = loop {
        attempts += 1;
        let lists = async {
            let before = listed_as(scope, namespace, "application/json").await?;
            let pb = listed_as(scope, namespace, listed::ACCEPT).await?;
            let after = listed_as(scope, namespace, "application/json").await?;
            Ok::<_, String>((before, pb, after))
        };
        match lists.await {
            Ok((before, pb, after)) if before == after || attempts == 10 => {
                break (before.0, before.1, pb.0, pb.1);
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            Err(e) => return vec![format!("{namespace}: {e}")],
        }
    };
    if json_pb || !pb {
        out.push(format!(
            "{namespace}: asked for JSON the server sent protobuf: {json_pb}; asked for protobuf it sent protobuf: {pb}"
        ));
    }
    if from_json.len() != expect || from_pb.len() != expect {
        out.push(format!(
            "{namespace}: {expect} pods created, {} listed in JSON, {} in protobuf",
            from_json.len(),
            from_pb.len()
        ));
    }
    for ((name, j), (_, p)) in from_json.iter().zip(&from_pb) {
        if j != p {
            let mut at = Vec::new();
            differences("", j, p, &mut at);
            out.push(format!(
                "{namespace}/{name}: read from JSON and from protobuf differ at\n  {}",
                at.join("\n  ")
            ));
        }
    }
    out
}

/// Where two values differ: a path and both values, for each difference.
fn differences(path: &str, a: &Json, b: &Json, out: &mut Vec<String>) {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let n = Json::Null;
                let (u, v) = (x.get(k).unwrap_or(&n), y.get(k).unwrap_or(&n));
                differences(&format!("{path}/{k}"), u, v, out);
            }
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}/{i}"), u, v, out);
            }
        }
        _ if a != b => out.push(format!("{path}: JSON {a}, protobuf {b}")),
        _ => {}
    }
}

async fn create(scope: &Scope, namespace: &str, pod: &Json) -> Result<(), String> {
    let mut pod = recreatable(pod);
    pod["metadata"]["namespace"] = json!(namespace);
    // The garbage collector would delete a pod whose owner is not there.
    if let Some(m) = pod["metadata"].as_object_mut() {
        m.remove("ownerReferences");
    }
    let p: Pod = serde_json::from_value(pod).map_err(|e| format!("not a pod: {e}"))?;
    Api::<Pod>::namespaced(scope.client.clone(), namespace)
        .create(&PostParams::default(), &p)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Stores `admitted` (pods as admission returned them) in the scope's
/// namespace bound to nothing, lists them in JSON and in protobuf, and
/// returns where the two readings differ.
pub async fn stored_pods_read_alike(scope: &Scope, admitted: &[Json]) -> Vec<String> {
    let mut out = Vec::new();
    let mut created = 0;
    for p in admitted {
        match create(scope, &scope.bare, p).await {
            Ok(()) => created += 1,
            Err(e) => out.push(format!(
                "{}: cannot store the admitted pod: {e}",
                p["metadata"]["name"]
            )),
        }
    }
    out.extend(compare(scope, &scope.bare, created).await);
    out
}

/// Every field audit reads, in the shapes the API allows: empty and set
/// strings, pointers, empty selectors, lists and maps.
fn rich_pods(id: &str) -> Vec<Json> {
    let affinity = json!({
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu", "a"]},
                                      {"key": "spot", "operator": "DoesNotExist"}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
            ]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}},
            ],
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "x"},
                                  "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                "namespaces": ["a", "b"],
                "topologyKey": "kubernetes.io/hostname",
                "namespaceSelector": {},
                "matchLabelKeys": ["run"],
            }],
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 50,
                "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "y"}},
                                    "topologyKey": "zone", "mismatchLabelKeys": ["team"]},
            }],
        },
    });
    let full = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "rich", "labels": {"app": "x", "empty": ""},
                     "annotations": {"a": "1", "b": ""}},
        "spec": {
            // The Priority plugin sets `priority` and `preemptionPolicy` from the class.
            "priorityClassName": format!("{id}-listing"),
            "runtimeClassName": format!("{id}-listing"),
            "nodeSelector": {"pool": "gpu", "blank": ""},
            "tolerations": [
                {"operator": "Exists"},
                {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
                {"key": "spot", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
                {"key": "x", "value": "", "effect": ""},
            ],
            "affinity": affinity,
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": "x"}}, "minDomains": 2,
                 "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Ignore", "matchLabelKeys": ["run"]},
                {"maxSkew": 3, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"},
            ],
            "initContainers": [{"name": "init", "image": "busybox", "command": ["true"]}],
            "containers": [
                {"name": "main", "image": "python:3.11", "command": ["sh", "-c"], "args": ["--x", ""]},
                {"name": "side", "image": "s"},
            ],
        },
    });
    // The least a pod can say, and empty maps and lists where the API
    // keeps them.
    let bare = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "bare"},
        "spec": {"containers": [{"name": "c", "image": "i"}], "schedulerName": "kfsched-none"},
    });
    let empty = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "empty", "labels": {}, "annotations": {}},
        "spec": {"containers": [{"name": "c", "image": "i", "command": [], "args": []}],
                 "nodeSelector": {}, "tolerations": [], "affinity": {"nodeAffinity": {}},
                 "topologySpreadConstraints": [], "schedulerName": "kfsched-none"},
    });
    vec![full, bare, empty]
}

#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn a_pod_listed_in_protobuf_reads_as_its_json() {
    rt().block_on(async {
        let scope = Scope::new(cluster(), "listing").await;
        let classes = format!(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {id}-listing}}\nvalue: 1000\n---\napiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {{name: {id}-listing}}\nhandler: listing\n",
            id = scope.id
        );
        kubectl_stdin(&scope.cluster, &["apply", "-f", "-"], &classes, 0);
        let ns = scope.namespace.clone();
        let pods = rich_pods(&scope.id);
        for p in &pods {
            create(&scope, &ns, p).await.expect("create the pod");
        }
        // The scheduler finds no node for the first pod and says so in its
        // status: the conditions are read too.
        let api: Api<Pod> = Api::namespaced(scope.client.clone(), &ns);
        eventually(
            "the scheduler's condition on the pod",
            Duration::from_secs(60),
            || {
                let api = api.clone();
                async move {
                    let p = api.get("rich").await.ok()?;
                    let conditions = p.status?.conditions?;
                    conditions
                        .iter()
                        .any(|c| c.type_ == "PodScheduled")
                        .then_some(())
                }
            },
        )
        .await;
        let differences = compare(&scope, &ns, pods.len()).await;
        kubectl_stdin(
            &scope.cluster,
            &["delete", "--ignore-not-found", "-f", "-"],
            &classes,
            0,
        );
        scope.cleanup("").await;
        assert!(differences.is_empty(), "{}", differences.join("\n"));
    });
}
