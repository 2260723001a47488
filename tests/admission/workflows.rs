//! Real workflows through Argo's own workflow controller (`scripts/cluster.sh
//! argo`, built from its Go module): the controller makes the pods, the
//! exported policy admits them, kube-scheduler binds them to kwok nodes,
//! and kwok ends them (`scripts/kwok/pod-complete-workflow.yaml`). The
//! selected step lands on its tainted pool, the other step on a node
//! without taints, and the workflow succeeds.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::json;

use super::harness::Scope;
use crate::node::cluster::{cluster, create_named_nodes, eventually, rt};

fn policy(id: &str) -> String {
    format!(
        "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {{name: workflows}}
spec:
  nodePools:
  - name: gpu
    labels: {{kfsched-test-pool: {id}}}
    taints:
    - {{key: kfsched-test-pool, value: {id}, effect: NoSchedule}}
  rules:
  - name: train-on-gpu
    match: {{names: [train]}}
    pool: gpu
"
    )
}

fn workflow_api(scope: &Scope, namespace: &str) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: "argoproj.io".into(),
        version: "v1alpha1".into(),
        api_version: "argoproj.io/v1alpha1".into(),
        kind: "Workflow".into(),
        plural: "workflows".into(),
    };
    Api::namespaced_with(scope.client.clone(), namespace, &ar)
}

/// Submits `wf` in `namespace`, waits until it ends, and says how, with
/// each pod's Argo node name, node, and admitted annotation.
async fn run(
    scope: &Scope,
    namespace: &str,
    wf: serde_json::Value,
) -> (String, Vec<(String, String, String)>) {
    let api = workflow_api(scope, namespace);
    let obj: DynamicObject = serde_json::from_value(wf).expect("a workflow");
    let created = api
        .create(&PostParams::default(), &obj)
        .await
        .expect("created");
    let name = created.metadata.name.clone().expect("a name");
    let phase = eventually(
        &format!("workflow {name} to finish"),
        Duration::from_secs(180),
        || {
            let api = api.clone();
            let name = name.clone();
            async move {
                let w = api.get(&name).await.ok()?;
                let p = w.data["status"]["phase"].as_str()?.to_string();
                (p == "Succeeded" || p == "Failed" || p == "Error").then_some(p)
            }
        },
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(scope.client.clone(), namespace);
    let list = pods
        .list(&ListParams::default().labels(&format!("workflows.argoproj.io/workflow={name}")))
        .await
        .expect("pods");
    let placed = list
        .items
        .iter()
        .map(|p| {
            let a = p.metadata.annotations.clone().unwrap_or_default();
            (
                a.get("workflows.argoproj.io/node-name")
                    .cloned()
                    .unwrap_or_default(),
                p.spec
                    .as_ref()
                    .and_then(|s| s.node_name.clone())
                    .unwrap_or_default(),
                a.get("kfsched.dev/admitted").cloned().unwrap_or_default(),
            )
        })
        .collect();
    let _ = api.delete(&name, &Default::default()).await;
    (phase, placed)
}

#[test]
#[ignore = "needs the test control plane with Argo's controller (scripts/test.sh)"]
fn argo_runs_a_workflow_whose_selected_step_lands_on_its_pool() {
    let _shared = crate::node::cluster::shared();
    // The controller runs beside the control plane; start it when it does not.
    let started = std::process::Command::new(crate::support::root().join("scripts/cluster.sh"))
        .arg("argo")
        .status()
        .expect("scripts/cluster.sh argo");
    assert!(started.success(), "scripts/cluster.sh argo failed");
    rt().block_on(async {
        let scope = Scope::new(cluster(), "argo").await;
        let id = scope.id.clone();
        let (gpu, cpu) = (format!("{id}-gpu-0"), format!("{id}-cpu-0"));
        let mine: &[(&str, &str)] = &[("kfsched-test", id.as_str())];
        let pool: &[(&str, &str)] = &[("kfsched-test", id.as_str()), ("kfsched-test-pool", id.as_str())];
        let nodes =
            create_named_nodes(&scope.client, &id, &[(gpu.as_str(), pool), (cpu.as_str(), mine)])
                .await;
        let taint = format!("kfsched-test-pool={id}:NoSchedule");
        let r = cluster().kfsched("taint", &[&gpu, &taint]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("policy.yaml");
        std::fs::write(&file, policy(&id)).expect("write");
        let yaml = scope.export(&["-p", &file.display().to_string()]);
        scope.apply(&yaml);
        // The policy is in force once a probe pod of a train step is admitted with it.
        let probe = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "wf-abcde-train-1", "labels": {"workflows.argoproj.io/workflow": "wf-abcde"},
                         "annotations": {"workflows.argoproj.io/node-name": "wf-abcde[0].train"}},
            "spec": {"containers": [{"name": "main", "image": "alpine:3.20", "command": ["true"]}]},
        });
        scope.until_active(&probe).await;
        // The namespace of the rewritten file needs its default service account.
        let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
            Api::namespaced(scope.client.clone(), &scope.bare);
        eventually("the default service account", Duration::from_secs(60), || {
            let sas = sas.clone();
            async move { sas.get_opt("default").await.ok().flatten() }
        })
        .await;
        // Two steps, the second one `train`; every pod held to this test's nodes.
        let wf = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
            "metadata": {"generateName": "nightly-",
                         "labels": {"workflows.argoproj.io/controller-instanceid": "kfsched-test"}},
            "spec": {
                "entrypoint": "main",
                "nodeSelector": {"kfsched-test": id},
                "templates": [
                    {"name": "main", "steps": [[{"name": "prep", "template": "prep"}], [{"name": "train", "template": "train"}]]},
                    {"name": "prep", "container": {"image": "alpine:3.20", "command": ["sh", "-c", "echo prep"]}},
                    {"name": "train", "container": {"image": "pytorch/pytorch:2.1", "command": ["python", "-c", "print('train')"]}},
                ],
            },
        });
        // Admission: the workflow as written, in the namespace the export is bound to.
        let (phase, placed) = run(&scope, &scope.namespace, wf.clone()).await;
        assert_eq!(phase, "Succeeded", "{placed:?}");
        assert_eq!(placed.len(), 2, "{placed:?}");
        for (node_name, node, admitted) in &placed {
            if node_name.ends_with(".train") {
                assert_eq!(node, &gpu, "{placed:?}");
                assert_eq!(admitted, "workflows:train-on-gpu", "{placed:?}");
            } else {
                assert!(node_name.ends_with(".prep"), "{placed:?}");
                assert_eq!(node, &cpu, "{placed:?}");
                assert_eq!(admitted, "", "{placed:?}");
            }
        }
        // Rewrite: the file rewritten offline, in a namespace no policy is bound
        // to. The pods land where admission put them.
        let wf_file = dir.path().join("wf.yaml");
        std::fs::write(&wf_file, serde_json::to_string_pretty(&wf).expect("json")).expect("write");
        let r = crate::node::cluster::run_bin(
            &["rewrite", "-p", &file.display().to_string(), &wf_file.display().to_string()],
            &[],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let rewritten: serde_json::Value = serde_json::from_str(&r.stdout).expect("rewritten JSON");
        let (phase, placed_rw) = run(&scope, &scope.bare, rewritten).await;
        assert_eq!(phase, "Succeeded", "{placed_rw:?}");
        let by_step = |p: &[(String, String, String)]| {
            let mut v: Vec<(String, String)> = p
                .iter()
                .map(|(n, node, _)| (n.rsplit('.').next().unwrap_or_default().to_string(), node.clone()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(by_step(&placed_rw), by_step(&placed), "rewrite and admission place the steps alike");
        assert!(placed_rw.iter().all(|(_, _, a)| a.is_empty()), "{placed_rw:?}");
        crate::node::cluster::delete_nodes(&scope.client, &nodes).await;
        scope.cleanup(&yaml).await;
    });
}

/// One pod as `scripts/e2e.sh` reports it: (workflow without its generated
/// suffix, Argo node name after the workflow's, pool, rules).
type Placed = (String, String, Option<String>, Vec<String>);

fn e2e(mode: &str) -> Vec<Placed> {
    let root = crate::support::root();
    let out = std::process::Command::new(root.join("scripts/e2e.sh"))
        .current_dir(&root)
        .args(["-p", "testdata/e2e/policy.yaml", "--mode", mode])
        .args([
            "testdata/e2e/dag-loop-exit.yaml",
            "testdata/e2e/steps-inline.yaml",
            "testdata/e2e/recursion.yaml",
        ])
        .output()
        .expect("scripts/e2e.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{mode}: {stdout}\n{stderr}");
    let mut placed: Vec<Placed> = stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            let wf = v["workflow"].as_str().unwrap_or_default();
            let node = v["node"].as_str().unwrap_or_default();
            // `check` said it fits where the scheduler put it.
            let pool = v["pool"].as_str().unwrap_or_default();
            let predicted = v["predicted"].as_array().cloned().unwrap_or_default();
            assert!(
                predicted.iter().any(|p| p.as_str() == Some(pool)),
                "{mode}: {node} landed in pool {pool:?}, check predicted {predicted:?}: {l}"
            );
            (
                wf[..wf.len().saturating_sub(6)].to_string(),
                node[wf.len().min(node.len())..].to_string(),
                v["pool"].as_str().map(str::to_string),
                v["rules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r.as_str().map(str::to_string))
                    .collect(),
            )
        })
        .collect();
    placed.sort();
    placed
}

/// `scripts/e2e.sh` with the same workflows (a DAG with a loop, a template
/// two tasks share and an exit handler; steps with an inline template and a
/// nested steps template; a DAG template that calls itself three levels
/// deep) and a policy of a tainted GPU pool, a tainted
/// system pool and a general pool: with the export and with the rewritten
/// files, every pod lands in the same pool, the pool of its rule, where
/// `check` said it would fit, and no pod without a rule on a tainted pool.
#[test]
#[ignore = "needs the test control plane with Argo's controller (scripts/test.sh)"]
fn the_export_and_the_rewrite_put_every_pod_of_real_workflows_on_the_same_pool() {
    let _shared = crate::node::cluster::shared();
    let admission = e2e("admission");
    let rewrite = e2e("rewrite");
    assert_eq!(admission, rewrite, "the two modes place the pods alike");
    assert_eq!(admission.len(), 15, "{admission:?}");
    for (wf, node, pool, rules) in &admission {
        let want = match rules.as_slice() {
            [] => "general",
            [r] if r == "train-on-gpu" => "gpu",
            [r] if r == "cleanup-on-system" => "system",
            [r] if r == "report-on-general" => "general",
            _ => panic!("{wf}{node}: rules {rules:?}"),
        };
        assert_eq!(pool.as_deref(), Some(want), "{wf}{node}: {rules:?}");
    }
    // The exit handler and both loop iterations are among them.
    assert!(
        admission
            .iter()
            .any(|(_, n, p, _)| n == ".onExit" && p.as_deref() == Some("system"))
    );
    assert_eq!(
        admission
            .iter()
            .filter(|(_, n, _, _)| n.starts_with(".train("))
            .count(),
        2
    );
    // The recursion's third level.
    assert!(admission.iter().any(|(wf, n, p, _)| wf == "recursion"
        && n == ".graph.deeper.deeper.train-level"
        && p.as_deref() == Some("gpu")));
}
