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

/// The compiled pipelines of the golden tests copied for enough teams to
/// make about 1,500 files, each copy's pipeline renamed `<name>-team-<n>`.
fn team_copies(dir: &std::path::Path, teams: usize) -> Vec<std::path::PathBuf> {
    let mut written = Vec::new();
    for case in [
        "affinity_matrix",
        "container_components",
        "control_flow",
        "exit_handler_importer",
        "nested_subpipelines",
        "preexisting_config",
        "reused_components",
        "toleration_matrix",
    ] {
        let text =
            std::fs::read_to_string(root().join(format!("testdata/golden/v2/{case}/plain.yaml")))
                .expect("fixture");
        let info = text.find("\npipelineInfo:").expect("pipelineInfo");
        let at = info + text[info..].find("\n  name: ").expect("pipelineInfo.name") + 9;
        let end = at + text[at..].find('\n').expect("line end");
        for team in 1..=teams {
            let copy = format!("{}-team-{team}{}", &text[..end], &text[end..]);
            let path = dir.join(format!("{case}-{team}.yaml"));
            std::fs::write(&path, copy).expect("write");
            written.push(path);
        }
    }
    written
}

#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn an_export_for_1500_pipeline_files_is_accepted_whole_and_acts_on_the_last_team() {
    let _shared = crate::node::cluster::shared();
    let dir = tempfile::tempdir().expect("tempdir");
    let teams = 188;
    let files = team_copies(dir.path(), teams);
    assert!(files.len() >= 1_500, "{}", files.len());
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: org}\nspec:\n  rules:\n  - name: fit-on-gpu\n    match: {names: [\"*fit*\"]}\n    tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]\n  - name: reports-off-spot\n    match: {names: [\"*report*\"]}\n    nodeSelector: {lifecycle: on-demand}\n",
    )
    .expect("write");
    rt().block_on(async {
        let scope = Scope::new(cluster(), "scale").await;
        let p = policy.display().to_string();
        let d = dir.path().display().to_string();
        let yaml = scope.export(&["-p", &p, &d]);
        // Every CEL expression within the API server's limit, and the whole
        // export accepted (kubectl exits 0 only when every object is).
        for line in yaml.lines() {
            assert!(
                line.chars().count() < 100_000,
                "an expression line of {} code points",
                line.len()
            );
        }
        scope.apply_server_side(&yaml);
        // The last team's control-flow pipeline: its fit executor is
        // selected (exactly, by the files), its flip-coin executor is not.
        let last = std::fs::read_to_string(dir.path().join(format!("control_flow-{teams}.yaml")))
            .expect("last team's file");
        let pods = super::shape::file_pods(&last);
        let executor = |task: &str| {
            pods.iter()
                .find(|s| s.node.ends_with(".executor") && s.node.contains(task))
                .unwrap_or_else(|| {
                    panic!(
                        "no {task} executor among {:?}",
                        pods.iter().map(|s| &s.node).collect::<Vec<_>>()
                    )
                })
                .pod
                .clone()
        };
        let fit = executor("fit");
        scope.until_active(&fit).await;
        let admitted = scope.admit(&fit).await.expect("admitted");
        assert_eq!(
            admitted["metadata"]["annotations"][kfsched::admission::ADMITTED_ANNOTATION],
            "org:fit-on-gpu"
        );
        assert!(
            admitted["spec"]["tolerations"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["key"] == "gpu")),
            "{}",
            admitted["spec"]
        );
        let flip = scope.admit(&executor("flip-coin")).await.expect("admitted");
        assert!(
            flip["metadata"]["annotations"]
                .get(kfsched::admission::ADMITTED_ANNOTATION)
                .is_none(),
            "{}",
            flip["metadata"]
        );
        scope.cleanup(&yaml).await;
    });
}
