//! KFP v2 driver pods on a cluster whose every node is tainted: without
//! the exported policy they stay Pending (nothing in a compiled pipeline
//! reaches them); with a `podRoles: [driver]` rule they run. The pods are
//! held to this test's nodes by a node selector of their own, so the nodes
//! other tests make at the same time do not count.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value as Json, json};

use super::harness::Scope;
use super::kfp;
use crate::node::cluster::{cluster, create_named_nodes, eventually, rt};

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: drivers}
spec:
  nodePools:
  - name: system
    labels: {kfsched.dev/pool: system}
    taints:
    - {key: kfsched.dev/pool, value: system, effect: NoSchedule}
  rules:
  - name: kfp-drivers
    match: {podRoles: [driver]}
    pool: system
";

/// Where the pod ended: `Ok(node)` once bound, `Err(message)` once the
/// scheduler has said it cannot place it.
async fn fate(api: &Api<Pod>, name: &str) -> Result<String, String> {
    eventually(
        &format!("pod {name} to be scheduled or refused"),
        Duration::from_secs(60),
        || async {
            let p = api.get(name).await.ok()?;
            if let Some(n) = p.spec.as_ref().and_then(|s| s.node_name.clone()) {
                return Some(Ok(n));
            }
            let cond = p.status?.conditions?.into_iter().find(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.reason.as_deref() == Some("Unschedulable")
            })?;
            Some(Err(cond.message.unwrap_or_default()))
        },
    )
    .await
}

#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn drivers_run_on_an_all_tainted_cluster_with_the_policy_and_stay_pending_without_it() {
    let _shared = crate::node::cluster::shared();
    rt().block_on(async {
        let scope = Scope::new(cluster(), "drv").await;
        let id = scope.id.clone();
        let (a, b) = (format!("{id}-sys-0"), format!("{id}-gpu-0"));
        let sys: &[(&str, &str)] = &[("kfsched.dev/pool", "system")];
        let gpu: &[(&str, &str)] = &[("accelerator", "a100")];
        let nodes = create_named_nodes(&scope.client, &id, &[(a.as_str(), sys), (b.as_str(), gpu)]).await;
        // Every node of the test tainted.
        for (n, t) in [(&a, "kfsched.dev/pool=system:NoSchedule"), (&b, "nvidia.com/gpu=present:NoSchedule")] {
            let r = crate::node::cluster::cluster().kfsched("taint", &[n, t]);
            assert_eq!(r.code, 0, "{}", r.stderr);
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = dir.path().join("policy.yaml");
        std::fs::write(&policy, POLICY).expect("write");
        let yaml = scope.export(&["-p", &policy.display().to_string()]);
        scope.apply(&yaml);
        // The drivers of a pipeline, held to this test's nodes.
        let ir = json!({
            "pipelineInfo": {"name": "nightly-train"},
            "root": {"dag": {"tasks": {"train": {"componentRef": {"name": "comp-train"}, "taskInfo": {"name": "Train"}}}}},
            "components": {"comp-train": {"executorLabel": "exec-train"}},
            "deploymentSpec": {"executors": {"exec-train": {"container": {"image": "pytorch/pytorch:2.1"}}}},
        });
        let mut pods: Vec<Json> = kfp::pods(&ir, &Json::Null)
            .into_iter()
            .map(|s| s.pod)
            .filter(|p| p["metadata"]["annotations"]["pipelines.kubeflow.org/runtime-role"] == "driver")
            .collect();
        assert_eq!(pods.len(), 2, "the root DAG driver and the container driver");
        for p in &mut pods {
            p["spec"]["nodeSelector"] = json!({"kfsched-test": id});
        }
        scope.until_active(&pods[0]).await;
        // With the policy, in the bound namespace: scheduled on the system node.
        let api: Api<Pod> = Api::namespaced(scope.client.clone(), &scope.namespace);
        for p in &pods {
            let mut p = p.clone();
            p["metadata"]["namespace"] = json!(scope.namespace);
            let pod: Pod = serde_json::from_value(p).expect("a pod");
            let created = api.create(&PostParams::default(), &pod).await.expect("created");
            let name = created.metadata.name.clone().unwrap_or_default();
            assert_eq!(fate(&api, &name).await, Ok(a.clone()), "{name} with the policy");
        }
        // Without it (a namespace the policy is not bound to): Pending, untolerated taints.
        let other = Scope::new(cluster(), "drv-off").await;
        let api: Api<Pod> = Api::namespaced(other.client.clone(), &other.namespace);
        for p in &pods {
            let mut p = p.clone();
            p["metadata"]["namespace"] = json!(other.namespace);
            let pod: Pod = serde_json::from_value(p).expect("a pod");
            let created = api.create(&PostParams::default(), &pod).await.expect("created");
            let name = created.metadata.name.clone().unwrap_or_default();
            let f = fate(&api, &name).await;
            assert!(
                matches!(&f, Err(m) if m.contains("untolerated taint")),
                "{name} without the policy: {f:?}"
            );
        }
        other.cleanup("").await;
        crate::node::cluster::delete_nodes(&scope.client, &nodes).await;
        scope.cleanup(&yaml).await;
    });
}
