//! The Python API (SPEC §5) as a compile script uses it: a fresh virtual
//! environment with kfp and the kfsched wheel (from local wheels, no index),
//! a real pipeline compiled by kfp, then `kfsched.rewrite/explain/check/
//! validate` on it. Each answer must be exactly what the command line writes
//! for the same files; every bad-input case of `testdata/bad` must raise
//! `PolicyError` or `InputError` carrying exactly the diagnostics the command
//! line prints, with nothing written; the dictionaries returned must have
//! the shape the package's TypedDicts declare.
//!
//! Needs `$KFSCHED_WHEEL_DIST` (see wheels.rs) and `$KFSCHED_KFP_WHEELHOUSE`
//! (kfp's wheels, which scripts/setup-integrations.sh builds).

use serde_json::Value;

use super::release::plain;
use super::wheels::{Wheels, pip_install, python_version, venv};
use super::{Out, run};
use crate::support::{case_dirs, copy_tree, rel, root, snapshot};

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: api}
spec:
  nodePools:
  - name: gpu
    labels: {pool: gpu}
    taints: [{key: gpu, value: 'true', effect: NoSchedule}]
  rules:
  - name: train-on-gpu
    match: {names: [train]}
    pool: gpu
  - name: publish-on-amd64
    match: {names: [publish]}
    nodeSelector: {beta.kubernetes.io/arch: amd64}
";

const NODES: &str = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-1
    labels: {pool: gpu, beta.kubernetes.io/arch: amd64}
  spec:
    taints: [{key: gpu, value: 'true', effect: NoSchedule}]
  status:
    allocatable: {cpu: '8', memory: 32Gi, pods: '110'}
- apiVersion: v1
  kind: Node
  metadata:
    name: cpu-1
    labels: {beta.kubernetes.io/arch: amd64}
  status:
    allocatable: {cpu: '4', memory: 16Gi, pods: '110'}
";

/// A cluster that refuses connections.
const UNREACHABLE: &str = "apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
";

/// The compile script: kfp compiles the pipeline, a pristine copy of the
/// project is kept for the command line, then the API runs; what it returns
/// is printed as JSON. argv: the bad-input case directories.
const SCRIPT: &str = r#"
import json, shutil, sys, warnings
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

from kfp import compiler, dsl
import kfsched


@dsl.component(base_image="pytorch/pytorch:2.3")
def train(epochs: int) -> str:
    return f"model after {epochs} epochs"


@dsl.component(base_image="python:3.11")
def publish(model: str):
    print(model)


@dsl.pipeline(name="nightly-train")
def nightly(epochs: int = 3):
    publish(model=train(epochs=epochs).output)


compiler.Compiler().compile(nightly, "pipelines/nightly.yaml")
shutil.copytree(".", "../pristine")


def shape(value: Any, tp: Any, where: str) -> None:
    """The value has the keys and types the TypedDict declares."""
    if is_typeddict(tp):
        hints = get_type_hints(tp)
        assert isinstance(value, dict), where
        assert set(value) == set(hints), f"{where}: keys {sorted(value)}, declared {sorted(hints)}"
        for k, t in hints.items():
            shape(value[k], t, f"{where}.{k}")
    elif get_origin(tp) is list:
        assert isinstance(value, list), where
        for i, v in enumerate(value):
            shape(v, get_args(tp)[0], f"{where}[{i}]")
    elif get_origin(tp) is dict:
        assert isinstance(value, dict), where
        for k, v in value.items():
            shape(v, get_args(tp)[1], f"{where}.{k}")
    elif get_origin(tp) is Union:
        if value is not None:
            shape(value, next(a for a in get_args(tp) if a is not type(None)), where)
    elif tp in (str, int, bool):
        assert type(value) is tp, f"{where}: {value!r} is not {tp.__name__}"


def diags(ds):
    return ["%s: %s" % (d.level, d) for d in ds]


out = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    checked = kfsched.rewrite("pipelines", policy="policy.yaml", check=True)
out["check"] = {"changed": checked.changed, "unchanged": checked.unchanged,
                "diff": checked.diff, "written": checked.written,
                "warnings": diags(checked.warnings)}
out["python_warnings"] = [(w.category.__name__, str(w.message)) for w in caught]
out["after_check"] = open("pipelines/nightly.yaml").read()

done = kfsched.rewrite(["pipelines/nightly.yaml"], policy="policy.yaml")
out["rewrite"] = {"changed": done.changed, "diff": done.diff, "written": done.written,
                  "diffs": done.diffs}
out["rewritten"] = open("pipelines/nightly.yaml").read()
again = kfsched.rewrite("pipelines", policy="policy.yaml", check=True)
out["again"] = {"changed": again.changed, "unchanged": again.unchanged}

explained = kfsched.explain("../pristine/pipelines", policy="policy.yaml")
shape(explained.report, kfsched.ExplainReport, "explain")
out["explain"] = explained.report

judged = kfsched.check("../pristine/pipelines", policy="policy.yaml", nodes="nodes.yaml")
shape(judged.report, kfsched.CheckReport, "check")
out["check_nodes"] = {"report": judged.report, "ok": judged.ok,
                      "unschedulable": judged.unschedulable}
tainted = kfsched.check("../pristine/pipelines", nodes="gpu-only.yaml")
out["check_tainted"] = {"ok": tainted.ok,
                        "unschedulable": [c["message"] for c in tainted.unschedulable]}
# The pools are nodes of the gpu pool alone: publish fits none of them, but
# no rule of it names a pool, so it passes.
pooled = kfsched.check("../pristine/pipelines", policy="policy.yaml", pools=True)
out["check_pools"] = {"ok": pooled.ok,
                      "unschedulable": [c["component"] for c in pooled.unschedulable],
                      "fit_none": [c["component"] for c in pooled.report["components"]
                                   if not c["nodes"]]}

try:
    kfsched.check("../pristine/pipelines", kubeconfig="unreachable.kubeconfig")
    out["cluster"] = {"raised": None}
except kfsched.ClusterError as e:
    out["cluster"] = {"raised": type(e).__name__, "exit_code": e.exit_code,
                      "stderr": "".join(l + "\n" for l in diags(e.diagnostics)),
                      "category": e.diagnostics[0].category}

v = kfsched.validate("policy.yaml")
out["validate"] = {"file": v.file, "name": v.name, "rules": v.rules, "pools": v.pools,
                   "warnings": diags(v.warnings)}

bad = {}
for case in sys.argv[1:]:
    try:
        kfsched.rewrite("input.yaml", policy="policy.yaml", cwd=case)
        bad[case] = {"raised": None}
    except kfsched.KfschedError as e:
        assert all(isinstance(d, kfsched.Diagnostic) for d in e.diagnostics)
        bad[case] = {"raised": type(e).__name__, "exit_code": e.exit_code,
                     "stderr": "".join(l + "\n" for l in diags(e.warnings) + diags(e.diagnostics)),
                     "first": vars(e.diagnostics[0]) if e.diagnostics else None}
out["bad"] = bad
print(json.dumps(out))
"#;

fn json(out: &Out) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

#[test]
#[ignore = "needs the wheels and the kfp wheels: scripts/test.sh sets them up"]
fn a_compile_script_gets_from_the_api_exactly_what_the_command_line_writes() {
    let Some(wheels) = Wheels::get("Python API") else {
        return;
    };
    let kfp = std::env::var_os("KFSCHED_KFP_WHEELHOUSE")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root().join(".cache/kfp-wheelhouse"));
    assert!(
        kfp.is_dir(),
        "{}: no kfp wheels: run scripts/setup-integrations.sh",
        kfp.display()
    );
    let scratch = tempfile::tempdir().expect("tempdir");
    let bin = venv(&scratch.path().join("venv"));
    let links = scratch.path().join("links");
    std::fs::create_dir_all(&links).expect("mkdir");
    let wheel = wheels.wheel("x86_64");
    std::fs::copy(&wheel, links.join(wheel.file_name().expect("name"))).expect("copy");
    let lock = root().join("testdata/pipelines/requirements-v2.txt");
    pip_install(
        &bin,
        &kfp,
        &[
            "--no-deps",
            "-r",
            &lock.display().to_string(),
            "--find-links",
            &links.display().to_string(),
            &format!("kfsched=={}", python_version()),
        ],
    );

    let work = scratch.path().join("work");
    for (name, text) in [
        ("policy.yaml", POLICY.to_string()),
        ("nodes.yaml", NODES.to_string()),
        (
            "gpu-only.yaml",
            NODES[..NODES
                .find("- apiVersion: v1\n  kind: Node\n  metadata:\n    name: cpu-1")
                .expect("cpu-1")]
                .to_string(),
        ),
        ("compile.py", SCRIPT.to_string()),
        ("unreachable.kubeconfig", UNREACHABLE.to_string()),
    ] {
        std::fs::create_dir_all(work.join("pipelines")).expect("mkdir");
        std::fs::write(work.join(name), text).expect("write");
    }
    // The bad-input cases, copied: the API must write nothing into them.
    let cases = scratch.path().join("bad");
    let bad = case_dirs("testdata/bad", "policy.yaml");
    assert!(bad.len() >= 50, "{} bad-input cases", bad.len());
    let mut copies = Vec::new();
    for dir in &bad {
        let to = cases.join(rel(dir));
        copy_tree(dir, &to);
        copies.push(to);
    }
    let before = snapshot(&cases);

    let path = format!("{}:/usr/bin:/bin", bin.display());
    let mut script = plain(bin.join("python"));
    script
        .arg("compile.py")
        .args(&copies)
        .current_dir(&work)
        .env("PATH", &path)
        .env("HOME", scratch.path());
    let ran = run(&mut script, None);
    ran.ok();
    let got = json(&ran);
    assert_eq!(
        snapshot(&cases),
        before,
        "the API wrote into a bad-input case"
    );

    // The command line of the same wheel, on the pristine copy.
    let pristine = scratch.path().join("pristine");
    let cli = |args: &[&str]| -> Out {
        run(
            plain(bin.join("kubectl-kfsched"))
                .args(args)
                .current_dir(&pristine)
                .env("HOME", scratch.path()),
            None,
        )
    };
    let diff = cli(&["diff", "-p", "policy.yaml", "pipelines"]);
    diff.code(1);
    assert!(
        diff.stdout.contains("+++ b/pipelines/nightly.yaml"),
        "{diff}"
    );
    let check = cli(&["rewrite", "--check", "-p", "policy.yaml", "pipelines"]);
    check.code(1);
    let warnings: Vec<String> = check
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .map(String::from)
        .collect();
    assert!(
        !warnings.is_empty(),
        "the policy's deprecated label warns: {check}"
    );

    assert_eq!(
        got["check"]["changed"],
        serde_json::json!(["pipelines/nightly.yaml"])
    );
    assert_eq!(got["check"]["diff"], diff.stdout.as_str());
    assert_eq!(got["check"]["written"], false);
    assert_eq!(
        got["check"]["warnings"],
        serde_json::json!(warnings),
        "the result's warnings are the command line's"
    );
    let issued: Vec<Value> = warnings
        .iter()
        .map(|w| serde_json::json!(["KfschedWarning", w.trim_start_matches("warning: ")]))
        .collect();
    assert_eq!(got["python_warnings"], serde_json::json!(issued));
    let compiled = std::fs::read_to_string(pristine.join("pipelines/nightly.yaml")).expect("read");
    assert_eq!(got["after_check"], compiled.as_str(), "check=True wrote");
    assert!(
        compiled.contains("pytorch/pytorch:2.3"),
        "kfp compiled the pipeline"
    );

    let rewritten = cli(&["rewrite", "-p", "policy.yaml", "pipelines/nightly.yaml"]);
    rewritten.ok();
    assert_eq!(got["rewritten"], rewritten.stdout.as_str());
    assert_ne!(rewritten.stdout, compiled);
    assert_eq!(got["rewrite"]["diff"], diff.stdout.as_str());
    assert_eq!(got["rewrite"]["written"], true);
    assert_eq!(got["again"]["changed"], serde_json::json!([]));
    assert_eq!(
        got["again"]["unchanged"],
        serde_json::json!(["pipelines/nightly.yaml"])
    );

    let explain = cli(&["explain", "-o", "json", "-p", "policy.yaml", "pipelines"]);
    explain.ok();
    let mut want = json(&explain);
    // The API named the directory from the script's own directory.
    let text = serde_json::to_string(&got["explain"]).expect("json");
    let mine: Value =
        serde_json::from_str(&text.replace("../pristine/pipelines/", "pipelines/")).expect("json");
    want["policy"] = mine["policy"].clone();
    assert_eq!(mine, want, "explain");
    assert_eq!(mine["policy"], "policy.yaml");

    let judged = cli(&[
        "check",
        "-o",
        "json",
        "--nodes",
        "nodes.yaml",
        "-p",
        "policy.yaml",
        "pipelines",
    ]);
    judged.ok();
    let text = serde_json::to_string(&got["check_nodes"]["report"]).expect("json");
    let mine: Value =
        serde_json::from_str(&text.replace("../pristine/pipelines/", "pipelines/")).expect("json");
    assert_eq!(mine, json(&judged), "check");
    assert_eq!(got["check_nodes"]["ok"], true);
    assert_eq!(got["check_nodes"]["unschedulable"], serde_json::json!([]));
    let tainted = cli(&["check", "--nodes", "gpu-only.yaml", "pipelines"]);
    tainted.code(1);
    assert_eq!(got["check_tainted"]["ok"], false);
    let messages = got["check_tainted"]["unschedulable"]
        .as_array()
        .expect("list");
    assert_eq!(messages.len(), 2, "{got}");
    for m in messages {
        let m = m.as_str().expect("message");
        assert!(
            m.starts_with("0/1 nodes are available: 1 node(s) had untolerated taint(s)"),
            "{m}"
        );
        assert!(tainted.stdout.contains(m), "{tainted}");
    }
    // With the pools, `unschedulable` is what fails the check, as `ok` and
    // the exit code say: a component that fits no pool but is expected in
    // none is not in it.
    cli(&["check", "--pools", "-p", "policy.yaml", "pipelines"]).ok();
    assert_eq!(got["check_pools"]["ok"], true, "{got}");
    assert_eq!(got["check_pools"]["unschedulable"], serde_json::json!([]));
    assert_eq!(
        got["check_pools"]["fit_none"],
        serde_json::json!(["publish"]),
        "{got}"
    );

    let unreachable = cli(&[
        "check",
        "--kubeconfig",
        "unreachable.kubeconfig",
        "pipelines",
    ]);
    unreachable.code(3);
    assert_eq!(
        got["cluster"],
        serde_json::json!({"raised": "ClusterError", "exit_code": 3,
            "stderr": unreachable.stderr, "category": "cluster"})
    );

    let validate = cli(&["validate", "-o", "json", "policy.yaml"]);
    validate.ok();
    let mut v = json(&validate);
    // validate also gives its advice (a pool that selects no node).
    let advice: Vec<&str> = validate
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert!(advice.len() > warnings.len(), "{validate}");
    v["warnings"] = serde_json::json!(advice);
    assert_eq!(got["validate"], v);

    // Bad input: the exception carries exactly what the command line prints;
    // PolicyError exactly when the policy alone is invalid.
    let mut failures = Vec::new();
    for (dir, copy) in bad.iter().zip(&copies) {
        let case = &got["bad"][copy.display().to_string()];
        let want = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
        let policy_alone = run(
            plain(bin.join("kubectl-kfsched"))
                .args(["validate", "policy.yaml"])
                .current_dir(dir),
            None,
        );
        let kind = if policy_alone.code == 2 {
            "PolicyError"
        } else {
            "InputError"
        };
        if case["raised"] != kind || case["exit_code"] != 2 || case["stderr"] != want.as_str() {
            failures.push(format!(
                "{}: want {kind}, exit 2,\n{want}got {}",
                rel(dir),
                serde_json::to_string_pretty(case).unwrap_or_default()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} bad-input cases:\n{}",
        failures.len(),
        bad.len(),
        failures.join("\n")
    );
    // A located diagnostic keeps its parts.
    let located = copies
        .iter()
        .map(|c| &got["bad"][c.display().to_string()]["first"])
        .find(|f| f["line"].is_u64() && f["path"].is_string())
        .expect("a case with a located diagnostic");
    assert!(
        located["file"].is_string() && located["column"].is_u64(),
        "{located}"
    );
}
