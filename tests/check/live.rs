//! `check` against the live cluster (the default) and against the real
//! `kubectl get nodes -o yaml` / `-o json` of it: the same verdicts, the
//! pods already running counted with `--usage`, and both agreeing with
//! the scheduler.

use std::path::PathBuf;

use serde_json::Value as Json;

use super::harness::{NodeSpec, Observed, World};
use crate::node::cluster::{exclusive, rt, run_bin};

fn nodes() -> Vec<NodeSpec> {
    let n = |name: &str, cpu: &str, taints: &[&str]| NodeSpec {
        name: name.into(),
        labels: vec![("pool".into(), "live".into())],
        taints: taints.iter().map(|t| t.to_string()).collect(),
        allocatable: vec![
            ("cpu".into(), cpu.into()),
            ("memory".into(), "4Gi".into()),
            ("pods".into(), "110".into()),
        ],
        cordoned: false,
    };
    vec![n("a", "2", &[]), n("b", "4", &["gpu=true:NoSchedule"])]
}

const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {pool: live}
      tolerations: [{key: gpu, operator: Exists}]
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: 1500m}}
";

fn kubectl() -> PathBuf {
    std::env::var_os("KFSCHED_KUBECTL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("kubectl"))
}

fn verdict(args: &[&str]) -> Json {
    let r = run_bin(args, &[]);
    assert!(r.code <= 1, "{args:?}: exit {}\n{}", r.code, r.stderr);
    let mut j: Json = serde_json::from_str(&r.stdout).expect("JSON");
    j["nodes"]["source"] = Json::Null;
    j
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn live_nodes_and_kubectls_snapshots_give_the_same_verdicts() {
    let _all = exclusive();
    rt().block_on(async {
        let world = World::create("live", &nodes()).await;
        let admin = world.cluster.admin.display().to_string();
        let job = world.dir.path().join("job.yaml");
        std::fs::write(&job, JOB).expect("write");
        let job = job.display().to_string();
        let live = verdict(&["check", "--kubeconfig", &admin, "-o", "json", &job]);
        let names: Vec<String> = live["components"][0]["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .map(|n| n.as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(names, [world.node("a"), world.node("b")]);
        for format in ["yaml", "json"] {
            let out = std::process::Command::new(kubectl())
                .args(["--kubeconfig", &admin, "get", "nodes", "-o", format])
                .output()
                .expect("kubectl runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let snap = world.dir.path().join(format!("nodes.{format}"));
            std::fs::write(&snap, &out.stdout).expect("write");
            let s = snap.display().to_string();
            assert_eq!(
                verdict(&["check", "--nodes", &s, "-o", "json", &job]),
                live,
                "kubectl get nodes -o {format}"
            );
        }
        // A running pod takes 1 cpu of node a: with --usage, 1.5 cpu fits only b.
        world.occupy(&world.node("a"), "1", "128Mi").await;
        let usage = verdict(&[
            "check",
            "--kubeconfig",
            &admin,
            "--usage",
            "-o",
            "json",
            &job,
        ]);
        let fits = &usage["components"][0]["nodes"];
        assert_eq!(fits, &serde_json::json!([world.node("b")]), "{usage}");
        assert_eq!(usage["nodes"]["usageCounted"], true);
        let spec = &usage["components"][0]["pod"]["spec"];
        assert_eq!(world.schedule(spec).await, Observed::Bound(world.node("b")));
        world.delete().await;
    });
}
