//! The fields a KFP v2 file cannot carry reach the task's pod at admission:
//! `priorityClassName` (with the priority the API server derives from the
//! class), `schedulerName`, `runtimeClassName`, topology spread constraints
//! and pod affinity, exactly as the rule states them; admitting the pod
//! again changes nothing, and another task's pod is left as it is.

use serde_json::{Value as Json, json};

use super::harness::{Scope, ensure_classes, recreatable, scheduling};
use super::kfp;
use crate::node::cluster::{cluster, rt};

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: fields}
spec:
  rules:
  - name: train-gang
    match: {names: [train]}
    priorityClassName: kfsched-fields-high
    schedulerName: volcano
    runtimeClassName: kfsched-fields-nvidia
    topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: DoNotSchedule
      labelSelector: {matchLabels: {kfsched.dev/step: train}}
    affinity:
      podAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app: dataset-cache}}
    podLabels: {kfsched.dev/step: train}
";

fn executor(ir: &Json, task: &str) -> Json {
    kfp::pods(ir, &Json::Null)
        .into_iter()
        .find(|p| p.node.ends_with(&format!(".{task}.executor")))
        .unwrap_or_else(|| panic!("the executor of {task}"))
        .pod
}

#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn kfp_v2_pods_get_the_fields_their_file_cannot_carry() {
    let _shared = crate::node::cluster::shared();
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("write");
    ensure_classes(&cluster(), std::slice::from_ref(&policy));
    rt().block_on(async {
        let scope = Scope::new(cluster(), "fields").await;
        let yaml = scope.export(&["-p", &policy.display().to_string()]);
        scope.apply(&yaml);
        let ir = json!({
            "pipelineInfo": {"name": "fields"},
            "root": {"dag": {"tasks": {
                "train": {"componentRef": {"name": "comp-train"}, "taskInfo": {"name": "train"}},
                "report": {"componentRef": {"name": "comp-report"}, "taskInfo": {"name": "report"}},
            }}},
            "components": {
                "comp-train": {"executorLabel": "exec-train"},
                "comp-report": {"executorLabel": "exec-report"},
            },
            "deploymentSpec": {"executors": {
                "exec-train": {"container": {"image": "pytorch/pytorch:2.1"}},
                "exec-report": {"container": {"image": "python:3.11"}},
            }},
        });
        let train = executor(&ir, "train");
        scope.until_active(&train).await;
        let admitted = scope.admit(&train).await.expect("admitted");
        let spec = &admitted["spec"];
        assert_eq!(spec["priorityClassName"], "kfsched-fields-high", "{spec}");
        // The Priority plugin resolved the class the policy set.
        assert_eq!(spec["priority"], 1000, "{spec}");
        assert_eq!(spec["schedulerName"], "volcano");
        assert_eq!(spec["runtimeClassName"], "kfsched-fields-nvidia");
        assert_eq!(
            spec["topologySpreadConstraints"],
            json!([{
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"kfsched.dev/step": "train"}},
            }])
        );
        assert_eq!(
            spec["affinity"]["podAffinity"],
            json!({"requiredDuringSchedulingIgnoredDuringExecution": [{
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "dataset-cache"}},
            }]})
        );
        assert_eq!(admitted["metadata"]["labels"]["kfsched.dev/step"], "train");
        let again = scope.admit(&recreatable(&admitted)).await.expect("again");
        assert_eq!(scheduling(&again), scheduling(&admitted), "admitted again");

        let report = executor(&ir, "report");
        let left = scope.admit(&report).await.expect("admitted");
        let bare = scope.admit_bare(&report).await.expect("admitted");
        assert_eq!(
            scheduling(&left),
            scheduling(&bare),
            "a task no rule selects"
        );
        assert_eq!(left["spec"]["schedulerName"], "default-scheduler");
        scope.cleanup(&yaml).await;
    });
}
