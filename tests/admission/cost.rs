//! A 100-rule policy (`testdata/admission-large/rules-100.yaml`, written by
//! `bench/alt/make_admission_policy.py`) within the API server's limits:
//! its export is accepted (CEL compiles within the cost limits; the object
//! fits etcd) and admits pods, a selected one getting its rule's
//! scheduling. Too large for kubectl's client-side apply (its
//! last-applied annotation holds 256 KiB), it is applied server-side, as
//! the export says on stderr.

use serde_json::json;

use super::harness::Scope;
use super::kfp;
use crate::node::cluster::{cluster, rt};
use crate::support::root;

#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn a_hundred_rule_policy_is_accepted_and_admits_pods() {
    let _shared = crate::node::cluster::shared();
    rt().block_on(async {
        let scope = Scope::new(cluster(), "cost").await;
        let policy = root().join("testdata/admission-large/rules-100.yaml");
        let selector = format!("kfsched-test-admission={}", scope.id);
        let r = crate::node::cluster::run_bin(
            &[
                "export", "admission", "-p", &policy.display().to_string(),
                "--name-prefix", &scope.prefix, "--namespace-selector", &selector,
            ],
            &[],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stderr.contains("--server-side"), "the export says how to apply it: {}", r.stderr);
        let yaml = r.stdout;
        scope.apply_server_side(&yaml);
        // rule-3 selects task step-3 (by name and image) of any pipeline.
        let ir = json!({
            "pipelineInfo": {"name": "bench"},
            "root": {"dag": {"tasks": {"step-3": {"componentRef": {"name": "comp-step-3"}, "taskInfo": {"name": "step-3"}}}}},
            "components": {"comp-step-3": {"executorLabel": "exec-step-3"}},
            "deploymentSpec": {"executors": {"exec-step-3": {"container": {"image": "pytorch/pytorch:2.1"}}}},
        });
        let pods = kfp::pods(&ir, &serde_json::Value::Null);
        let executor = pods
            .iter()
            .find(|p| p.node.ends_with(".executor"))
            .expect("the executor")
            .pod
            .clone();
        scope.until_active(&executor).await;
        let admitted = scope.admit(&executor).await.expect("admitted");
        assert_eq!(
            admitted["metadata"]["annotations"][kfsched::admission::ADMITTED_ANNOTATION],
            "rules-100:rule-3"
        );
        assert_eq!(admitted["spec"]["nodeSelector"]["kfsched.dev/rack"], "rack-3");
        assert_eq!(admitted["metadata"]["labels"]["kfsched.dev/rule"], "rule-3");
        let terms = &admitted["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        assert_eq!(terms.as_array().map(Vec::len), Some(2), "pool ∧ (arch ∧ gen | spare): {terms}");
        // Every other pod of the pipeline is admitted too.
        for p in &pods {
            scope.admit(&p.pod).await.unwrap_or_else(|e| panic!("{}: {e}", p.node));
        }
        scope.cleanup(&yaml).await;
    });
}
