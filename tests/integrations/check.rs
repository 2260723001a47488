//! `check --krm` under the real orchestrators: kustomize runs it after
//! kfsched's own rewriting function (the transformers list: kustomize's
//! `validators:` refuses exec functions that hand the items back, see the
//! guide), and `kpt fn eval --exec` runs it on a package. A component that
//! fits no node of the snapshot fails the build or the evaluation with the
//! scheduler's message; the files are never changed.

use super::{Sandbox, built_tool, example, run, tool};

const NODES: &str = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: worker-1
    labels: {key: experiment}
  spec:
    taints:
    - {key: key, value: experiment, effect: NoSchedule}
  status:
    allocatable: {cpu: '8', memory: 32Gi, pods: '110'}
";

/// The README's training job: `train` is what the example policy pins to the
/// experiment pool.
const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: pytorch/pytorch:2.3
";

/// kustomize runs an exec function in the kustomization's directory, so
/// the snapshot's path is relative to it.
const CHECK: &str = "apiVersion: kfsched.dev/v1alpha1
kind: PlacementCheck
metadata:
  name: placement
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: kubectl-kfsched
        args: [check, --krm, --nodes, ../nodes.yaml]
";

/// The example policy as kustomize's exec transformer.
fn rewriter() -> String {
    example(".kfsched.yaml").replacen(
        "metadata:\n  name: ml-platform\n",
        "metadata:\n  name: ml-platform\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: kubectl-kfsched\n        args: [fn]\n",
        1,
    )
}

#[test]
#[ignore = "needs the integration tools: scripts/test.sh sets them up"]
fn kustomize_fails_the_build_when_a_component_fits_no_node() {
    let sb = Sandbox::new();
    let build = |dir: &str| {
        run(
            sb.cmd(built_tool("kustomize")).args([
                "build",
                "--enable-alpha-plugins",
                "--enable-exec",
                dir,
            ]),
            None,
        )
    };
    // Rewritten by the policy first, the job tolerates the pool's taint and
    // requires its label: it fits worker-1.
    sb.write(&[
        ("nodes.yaml", NODES),
        ("ok/job.yaml", JOB),
        ("ok/kfsched.yaml", &rewriter()),
        ("ok/check.yaml", CHECK),
        (
            "ok/kustomization.yaml",
            "resources: [job.yaml]\ntransformers: [kfsched.yaml, check.yaml]\n",
        ),
        ("bad/job.yaml", JOB),
        ("bad/check.yaml", CHECK),
        (
            "bad/kustomization.yaml",
            "resources: [job.yaml]\ntransformers: [check.yaml]\n",
        ),
    ]);
    let ok = build("ok");
    ok.ok();
    assert!(
        ok.stdout.contains("key: key") && ok.stdout.contains("value: experiment"),
        "{ok}"
    );
    // As written, it fits no node: kustomize fails and shows why.
    let bad = build("bad");
    bad.failed();
    assert!(bad.stdout.is_empty(), "{bad}");
    assert!(
        bad.stderr.contains("kfsched check: Job \"train\" fits no node: 0/1 nodes are available: 1 node(s) had untolerated taint(s)."),
        "{bad}"
    );
}

#[test]
#[ignore = "needs the integration tools: scripts/test.sh sets them up"]
fn kpt_fn_eval_reports_the_results_and_leaves_the_files() {
    let sb = Sandbox::new();
    sb.write(&[("nodes.yaml", NODES), ("pkg/job.yaml", JOB)]);
    let kpt = tool("KFSCHED_KPT", "kpt");
    let eval = || {
        run(
            sb.cmd(&kpt).args([
                "fn",
                "eval",
                "--exec",
                "kubectl-kfsched check --krm --nodes nodes.yaml",
                "pkg",
            ]),
            None,
        )
    };
    let bad = eval();
    bad.failed();
    assert!(
        bad.all()
            .contains("[error] batch/v1/Job/train: kfsched check: Job \"train\" fits no node"),
        "{bad}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.work.join("pkg/job.yaml")).expect("read"),
        JOB
    );
    let tolerating = JOB.replace(
        "      containers:",
        "      tolerations: [{key: key, operator: Exists}]\n      containers:",
    );
    sb.write(&[("pkg/job.yaml", &tolerating)]);
    let ok = eval();
    ok.ok();
    assert!(
        ok.all().contains(
            "[info] batch/v1/Job/train: kfsched check: Job \"train\" fits 1 node: worker-1"
        ),
        "{ok}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.work.join("pkg/job.yaml")).expect("read"),
        tolerating
    );
}
