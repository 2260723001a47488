//! No pod's shape trips the exported policy under `failurePolicy: Fail`:
//! pods missing every field the policy reads, with odd node names and
//! arguments, with scheduling fields of every shape the API accepts, are
//! all admitted (a CEL runtime error would refuse them); and the API
//! server never panics, which kube-apiserver 1.36.3 does on a JSON Patch
//! value that is a list of Object initializers (its log is read).

use serde_json::{Value as Json, json};

use super::harness::Scope;
use crate::node::cluster::{cluster, rt};
use crate::support::root;

/// A pod that every rule of the test policy could select: an Argo KFP v2
/// executor pod of `train`.
fn base() -> Json {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "wf-x7k2p-system-container-impl-1",
            "labels": {"workflows.argoproj.io/workflow": "wf-x7k2p", "pipelines.kubeflow.org/v2_component": "true"},
            "annotations": {"workflows.argoproj.io/node-name": "wf-x7k2p.root.train.executor"},
        },
        "spec": {"containers": [{"name": "main", "image": "pytorch/pytorch:2.1",
            "command": ["/kfp-launcher/launch", "--pipeline_name", "nightly", "--component_spec", "{\"executorLabel\":\"exec-train\"}", "--"]}]},
    })
}

/// Shapes the API server accepts that the policy's expressions must survive.
fn odd_pods() -> Vec<(&'static str, Json)> {
    let mut out = Vec::new();
    let mut with = |what: &'static str, f: &dyn Fn(&mut Json)| {
        let mut p = base();
        f(&mut p);
        out.push((what, p));
    };
    with("no annotations", &|p| {
        p["metadata"]
            .as_object_mut()
            .map(|m| m.remove("annotations"))
            .map(|_| ())
            .unwrap_or(())
    });
    with("empty node name", &|p| {
        p["metadata"]["annotations"]["workflows.argoproj.io/node-name"] = json!("")
    });
    with("node name of another workflow", &|p| {
        p["metadata"]["annotations"]["workflows.argoproj.io/node-name"] = json!("other.root.x")
    });
    with("node name of dots and parentheses", &|p| {
        p["metadata"]["annotations"]["workflows.argoproj.io/node-name"] =
            json!("wf-x7k2p..(.).[0]((.executor")
    });
    with("workflow label only", &|p| {
        p["metadata"]["labels"] = json!({"workflows.argoproj.io/workflow": "w"})
    });
    with("pod named like its workflow", &|p| {
        p["metadata"]["name"] = json!("wf-x7k2p")
    });
    with("no main container", &|p| {
        p["spec"]["containers"][0]["name"] = json!("other")
    });
    with("main without a command", &|p| {
        p["spec"]["containers"][0]
            .as_object_mut()
            .map(|m| m.remove("command"))
            .map(|_| ())
            .unwrap_or(())
    });
    with("a flag as the last argument", &|p| {
        p["spec"]["containers"][0]["command"] = json!(["x", "--pipeline_name"])
    });
    with("garbage JSON arguments", &|p| {
        p["spec"]["containers"][0]["command"] = json!([
            "--component_spec",
            "{\"executorLabel\":",
            "--task",
            "{\"taskInfo\":{\"name\":\"\\\"",
            "--container",
            "\"image\":\""
        ])
    });
    with("a driver with nothing", &|p| {
        p["metadata"]["annotations"]["pipelines.kubeflow.org/runtime-role"] = json!("driver");
    });
    with("an importer", &|p| {
        p["metadata"]["name"] = json!("wf-x7k2p-system-importer-9");
    });
    with("tolerations of every shape", &|p| {
        p["spec"]["tolerations"] = json!([
        {"operator": "Exists"}, {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0},
        {"key": "b", "value": "c"}, {"key": "kfsched.dev/pool", "operator": "Equal", "value": "gpu", "effect": "NoSchedule", "tolerationSeconds": 5, "effect": "NoExecute"}])
    });
    with("empty node selector", &|p| {
        p["spec"]["nodeSelector"] = json!({})
    });
    with("an empty required term and a fields-only one", &|p| {
        p["spec"]["affinity"] = json!({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}})
    });
    with("Exists requirements without values", &|p| {
        p["spec"]["affinity"] = json!({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}})
    });
    with("pod affinity of every shape", &|p| {
        p["spec"]["affinity"] = json!({
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "podAffinityTerm": {"topologyKey": "h", "labelSelector": {}}}]}})
    });
    with("an empty affinity", &|p| p["spec"]["affinity"] = json!({}));
    out
}

#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn no_pod_shape_trips_the_policy_and_the_api_server_never_panics() {
    let _shared = crate::node::cluster::shared();
    let policies = [
        "testdata/admission/drivers-and-pools/policy.yaml",
        "testdata/golden/v2/affinity_matrix/policy.yaml",
        "testdata/golden/v2/preexisting_config/policy.yaml",
        "testdata/golden/v1/toleration_matrix/policy.yaml",
    ];
    rt().block_on(async {
        let mut failures = Vec::new();
        for p in policies {
            let scope = Scope::new(cluster(), "odd").await;
            let path = root().join(p).display().to_string();
            // Under Fail, whatever the file says.
            let yaml = scope.export(&["-p", &path, "--failure-policy", "Fail"]);
            scope.apply(&yaml);
            // The policy is in force once this executor comes back annotated.
            let mut probe = base();
            probe["spec"]["containers"][0]["image"] = json!("registry.example.com/pytorch/x:1");
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            for (what, pod) in odd_pods() {
                if let Err(e) = scope.admit(&pod).await {
                    failures.push(format!("{p}: {what}: {e}"));
                }
            }
            scope.cleanup(&yaml).await;
        }
        assert!(
            failures.is_empty(),
            "pods refused:\n{}",
            failures.join("\n")
        );
    });
    let log =
        std::path::Path::new(&std::env::var("KFSCHED_CLUSTER_DIR").expect("KFSCHED_CLUSTER_DIR"))
            .join("logs/kube-apiserver.log");
    let text = std::fs::read_to_string(&log).expect("the API server's log");
    assert!(
        !text.contains("apiserver panic'd"),
        "{} records a panic",
        log.display()
    );
}
