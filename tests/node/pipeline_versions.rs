//! KFP's Kubernetes-native API on the real control plane: the Pipeline and
//! PipelineVersion CRDs (written from KFP's Go types) and a
//! ValidatingAdmissionPolicy that refuses what KFP's webhook refuses, a
//! change to a stored version's spec. A version read back with `kubectl get`
//! and rewritten in place is refused by the server (and kfsched warns that
//! it will be); the path kfsched offers, `--version-suffix` and `kubectl
//! create`, stores a new version that carries the policy's scheduling.

use std::path::Path;
use std::process::Command;

use super::cluster::*;
use crate::support::root;

/// Runs a bash script with the plugin and the pinned kubectl on PATH.
fn sh(script: &str, kubeconfig: &Path) -> Run {
    let path = tool_path();
    let out = Command::new("bash")
        .args(["-c", &format!("set -euo pipefail; {script}")])
        .current_dir(root())
        .env_clear()
        .env("PATH", path)
        .env("HOME", std::env::temp_dir())
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("bash runs");
    Run::from(out)
}

#[test]
#[ignore = "needs the control plane: scripts/cluster.sh start"]
fn a_stored_version_is_immutable_and_version_suffix_creates_the_scheduled_one() {
    let _guard = shared();
    let c = cluster();
    let ns = unique("pv");
    let case = "testdata/golden/pv/pipeline_manifest";
    // The CRDs and the policy are cluster-wide; applying them again is a no-op.
    sh(
        &format!(
            "kubectl apply -f testdata/kfp/crds.yaml
             kubectl wait --for condition=established --timeout=60s crd/pipelines.pipelines.kubeflow.org crd/pipelineversions.pipelines.kubeflow.org
             kubectl create namespace {ns}
             kubectl -n {ns} create -f {case}/plain.yaml"
        ),
        &c.admin,
    )
    .ok();

    // In place: kfsched warns, the server refuses, the stored spec stays.
    let replace = sh(
        &format!(
            "kubectl -n {ns} get pipelineversion fraud-detection-v3 -o yaml | kubectl kfsched rewrite -p {case}/policy.yaml | kubectl replace -f -"
        ),
        &c.admin,
    );
    assert_ne!(
        replace.code, 0,
        "the replace must be refused\n{}",
        replace.stderr
    );
    assert!(
        replace.stderr.contains("warning: <stdin>:6:9: metadata.name: PipelineVersion \"fraud-detection-v3\": its spec changes (rules \"by-pipeline-name\", \"by-ir-name\", \"alert-metadata\" select it)")
            && replace.stderr.contains("denied request: Pipeline spec is immutable; only metadata changes (labels/annotations) are allowed"),
        "{}",
        replace.stderr
    );
    // Metadata alone may change: the admission policy is not refusing everything.
    sh(
        &format!("kubectl -n {ns} label pipelineversion fraud-detection-v3 team=fraud"),
        &c.admin,
    )
    .ok();

    // The path kfsched offers: a new version beside the stored one.
    let create = sh(
        &format!(
            "kubectl -n {ns} get pipelineversion fraud-detection-v3 -o yaml | kubectl kfsched rewrite --version-suffix sched -p {case}/policy.yaml | kubectl create -f -"
        ),
        &c.admin,
    );
    create.ok();
    assert_eq!(
        create.stdout, "pipelineversion.pipelines.kubeflow.org/fraud-detection-v3-sched created\n",
        "{}",
        create.stderr
    );
    let get = |name: &str| -> serde_json::Value {
        let r = sh(
            &format!("kubectl -n {ns} get pipelineversion {name} -o json"),
            &c.admin,
        );
        r.ok();
        serde_json::from_str(&r.stdout).expect("json")
    };
    let (old, new) = (get("fraud-detection-v3"), get("fraud-detection-v3-sched"));
    assert!(
        old["spec"]["platformSpec"].is_null(),
        "the stored version is unchanged"
    );
    assert_eq!(new["spec"]["pipelineSpec"], old["spec"]["pipelineSpec"]);
    assert_eq!(new["metadata"]["labels"], old["metadata"]["labels"]);
    // The new version carries what the SDK compiles with the scheduling calls.
    let expected = std::fs::read_to_string(root().join(case).join("expected.yaml")).expect("read");
    let tree = kfsched_yaml::Tree::parse(&expected).expect("parses");
    let version =
        kfsched_yaml::value::node_value(&tree, tree.documents[1].root.expect("root")).to_json();
    assert_eq!(new["spec"]["platformSpec"], version["spec"]["platformSpec"]);
    sh(
        &format!("kubectl delete namespace {ns} --wait=false"),
        &c.admin,
    )
    .ok();
}
