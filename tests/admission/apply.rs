//! The export as users apply it: `kubectl apply -f -` takes it, `kubectl
//! diff -f -` of the same export shows no drift (exit 0) and of a changed
//! policy shows the change (exit 1); and what a file cannot carry reaches
//! the pod: pod anti-affinity on a KFP v2 task, which `rewrite` refuses,
//! lands on the task's executor pod (`testdata/bad/input-v2-pod-affinity`
//! holds the refusal, which points here).

use serde_json::json;

use super::harness::{Scope, kubectl_stdin};
use super::kfp;
use crate::node::cluster::{cluster, rt};

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: spread}
spec:
  rules:
  - name: spread-training
    match: {names: [train]}
    affinity:
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 50
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {kfsched.dev/step: train}}
    podLabels: {kfsched.dev/step: train}
";

#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn kubectl_diff_shows_drift_and_pod_anti_affinity_reaches_kfp_v2_pods() {
    let _shared = crate::node::cluster::shared();
    rt().block_on(async {
        let scope = Scope::new(cluster(), "apply").await;
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = dir.path().join("policy.yaml");
        std::fs::write(&policy, POLICY).expect("write");
        let p = policy.display().to_string();
        let yaml = scope.export(&["-p", &p]);
        scope.apply(&yaml);
        kubectl_stdin(&scope.cluster, &["diff", "-f", "-"], &yaml, 0);
        // A changed policy: the diff shows it.
        std::fs::write(&policy, POLICY.replace("weight: 50", "weight: 70")).expect("write");
        let changed = scope.export(&["-p", &p]);
        let diff = kubectl_stdin(&scope.cluster, &["diff", "-f", "-"], &changed, 1);
        assert!(diff.contains("'weight': dyn(70)"), "{diff}");
        // The task's executor pod gets the anti-affinity (from the applied policy).
        let ir = json!({
            "pipelineInfo": {"name": "spread"},
            "root": {"dag": {"tasks": {"train": {"componentRef": {"name": "comp-train"}, "taskInfo": {"name": "train"}}}}},
            "components": {"comp-train": {"executorLabel": "exec-train"}},
            "deploymentSpec": {"executors": {"exec-train": {"container": {"image": "python:3.11"}}}},
        });
        let pod = kfp::pods(&ir, &serde_json::Value::Null)
            .into_iter()
            .find(|p| p.node.ends_with(".executor"))
            .expect("the executor")
            .pod;
        scope.until_active(&pod).await;
        let admitted = scope.admit(&pod).await.expect("admitted");
        assert_eq!(
            admitted["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"],
            50,
            "{}",
            admitted["spec"]
        );
        assert_eq!(admitted["metadata"]["labels"]["kfsched.dev/step"], "train");
        scope.cleanup(&yaml).await;
    });
}

/// `--api-version v1beta1` writes the same objects for the API that
/// Kubernetes 1.34 and 1.35 serve: the test control plane (kube-apiserver
/// 1.36.3 with `--runtime-config=admissionregistration.k8s.io/v1beta1=true`,
/// as scripts/cluster.sh starts it) stores them as v1beta1 objects, and they
/// take effect on the pods they select.
#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn the_v1beta1_export_is_accepted_and_takes_effect() {
    let _shared = crate::node::cluster::shared();
    rt().block_on(async {
        let scope = Scope::new(cluster(), "v1beta1").await;
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = dir.path().join("policy.yaml");
        std::fs::write(
            &policy,
            "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: beta}
spec:
  rules:
  - name: train-on-gpu
    match: {names: [train]}
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
",
        )
        .expect("write");
        let p = policy.display().to_string();
        let v1 = scope.export(&["-p", &p]);
        let beta = scope.export(&["-p", &p, "--api-version", "v1beta1"]);
        let versions: Vec<&str> = beta
            .lines()
            .filter_map(|l| l.strip_prefix("apiVersion: "))
            .collect();
        assert_eq!(versions, ["admissionregistration.k8s.io/v1beta1"; 2]);
        assert_eq!(
            beta.replace("/v1beta1\n", "/v1\n"),
            v1,
            "only the version differs"
        );
        scope.apply(&beta);
        let name = format!("{}beta", scope.prefix);
        let stored = kubectl_stdin(
            &scope.cluster,
            &[
                "get",
                "mutatingadmissionpolicies.v1beta1.admissionregistration.k8s.io",
                &name,
                "-o",
                "jsonpath={.apiVersion}",
            ],
            "",
            0,
        );
        assert_eq!(stored, "admissionregistration.k8s.io/v1beta1");
        let ir = json!({
            "pipelineInfo": {"name": "beta"},
            "root": {"dag": {"tasks": {"train": {"componentRef": {"name": "comp-train"}, "taskInfo": {"name": "train"}}}}},
            "components": {"comp-train": {"executorLabel": "exec-train"}},
            "deploymentSpec": {"executors": {"exec-train": {"container": {"image": "python:3.11"}}}},
        });
        let pod = kfp::pods(&ir, &serde_json::Value::Null)
            .into_iter()
            .find(|p| p.node.ends_with(".executor"))
            .expect("the executor")
            .pod;
        scope.until_active(&pod).await;
        let admitted = scope.admit(&pod).await.expect("admitted");
        let tolerations = admitted["spec"]["tolerations"].as_array().cloned().unwrap_or_default();
        assert!(
            tolerations.iter().any(|t| t["key"] == "nvidia.com/gpu"),
            "{}",
            admitted["spec"]
        );
        scope.cleanup(&beta).await;
    });
}
