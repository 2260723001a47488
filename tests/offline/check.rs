//! `kubectl kfsched check` offline (SPEC §4): exit codes, the JSON keys
//! scripts rely on, snapshots in every form, -p, --pools, bad input with
//! its place, what will surely go wrong, the text report and `--krm`.
//! Agreement with the real scheduler is tested in `tests/check/`.

use serde_json::Value as Json;

use crate::support::run_in;

/// Three nodes: a CPU node, a tainted GPU node, a cordoned one.
const NODES: &str = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: cpu-1
    labels: {pool: cpu, zone: a}
  status:
    allocatable: {cpu: '4', memory: 8Gi, pods: '110'}
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-1
    labels: {pool: gpu, zone: a}
  spec:
    taints:
    - {key: gpu, value: 'true', effect: NoSchedule}
  status:
    allocatable: {cpu: '16', memory: 64Gi, pods: '110', nvidia.com/gpu: '2'}
- apiVersion: v1
  kind: Node
  metadata:
    name: old-1
    labels: {pool: cpu, zone: b}
  spec:
    unschedulable: true
    taints:
    - {key: node.kubernetes.io/unschedulable, effect: NoSchedule}
  status:
    allocatable: {cpu: '4', memory: 8Gi, pods: '110'}
";

fn job(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n{spec}      containers:\n      - name: c\n        image: pytorch/pytorch:2.3\n"
    )
}

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: check}
spec:
  nodePools:
  - name: gpu
    labels: {pool: gpu}
    taints: [{key: gpu, value: 'true', effect: NoSchedule}]
  rules:
  - name: train-on-gpu
    match: {names: [train]}
    pool: gpu
";

fn dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    for (n, b) in files {
        std::fs::write(d.path().join(n), b).expect("write");
    }
    d
}

fn json_of(r: &crate::support::Run) -> Json {
    serde_json::from_slice(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout_str(), r.stderr))
}

#[test]
fn exit_0_when_every_component_fits_1_when_one_fits_none() {
    let d = dir(&[
        ("nodes.yaml", NODES),
        ("ok.yaml", &job("prep", "")),
        (
            "bad.yaml",
            &job("train", "      nodeSelector: {pool: gpu}\n"),
        ),
    ]);
    let r = run_in(
        d.path(),
        &["check", "--nodes", "nodes.yaml", "ok.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = run_in(
        d.path(),
        &["check", "--nodes", "nodes.yaml", "ok.yaml", "bad.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    // -p: as rewrite would make it (the pool's toleration and label), nothing written.
    std::fs::write(d.path().join("policy.yaml"), POLICY).expect("write");
    let before = std::fs::read(d.path().join("bad.yaml")).expect("read");
    let r = run_in(
        d.path(),
        &[
            "check",
            "-p",
            "policy.yaml",
            "--nodes",
            "nodes.yaml",
            "bad.yaml",
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout_str(), r.stderr);
    assert_eq!(
        std::fs::read(d.path().join("bad.yaml")).expect("read"),
        before
    );
}

#[test]
fn json_has_the_keys_scripts_rely_on() {
    let d = dir(&[
        ("nodes.yaml", NODES),
        (
            "jobs.yaml",
            &format!(
                "{}---\n{}",
                job("prep", ""),
                job("train", "      nodeSelector: {pool: gpu}\n")
            ),
        ),
    ]);
    let r = run_in(
        d.path(),
        &["check", "--nodes", "nodes.yaml", "-o", "json", "jobs.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let j = json_of(&r);
    let c = j["components"].as_array().expect("components");
    assert_eq!(c.len(), 2);
    assert_eq!(c[0]["file"], "jobs.yaml");
    assert_eq!(c[0]["component"], "prep");
    assert_eq!(c[0]["names"], serde_json::json!(["prep"]));
    assert_eq!(c[0]["nodes"], serde_json::json!(["cpu-1"]));
    assert!(c[0]["message"].is_null());
    assert_eq!(c[1]["nodes"], serde_json::json!([]));
    assert_eq!(
        c[1]["message"],
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
    assert_eq!(j["nodes"]["count"], 3);
    assert_eq!(j["nodes"]["resourcesJudged"], true);
    // -o yaml says the same.
    let y = run_in(
        d.path(),
        &["check", "--nodes", "nodes.yaml", "-o", "yaml", "jobs.yaml"],
        None,
        &[],
    );
    let text = y.stdout_str();
    let tree = kfsched_yaml::Tree::parse(&text).expect("YAML");
    let root = tree.documents[0].root.expect("a document");
    assert_eq!(kfsched_yaml::value::node_value(&tree, root).to_json(), j);
}

#[test]
fn snapshots_in_every_form_read_alike() {
    // The fast readers (kubectl's YAML, JSON) and the full parser (a
    // comment the fast reader does not take) give the same verdicts.
    let json = "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [
      {\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"cpu-1\", \"labels\": {\"pool\": \"cpu\", \"zone\": \"a\"}}, \"status\": {\"allocatable\": {\"cpu\": \"4\", \"memory\": \"8Gi\", \"pods\": \"110\"}}},
      {\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"gpu-1\", \"labels\": {\"pool\": \"gpu\", \"zone\": \"a\"}}, \"spec\": {\"taints\": [{\"key\": \"gpu\", \"value\": \"true\", \"effect\": \"NoSchedule\"}]}, \"status\": {\"allocatable\": {\"cpu\": \"16\", \"memory\": \"64Gi\", \"pods\": \"110\", \"nvidia.com/gpu\": \"2\"}}},
      {\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"old-1\", \"labels\": {\"pool\": \"cpu\", \"zone\": \"b\"}}, \"spec\": {\"unschedulable\": true, \"taints\": [{\"key\": \"node.kubernetes.io/unschedulable\", \"effect\": \"NoSchedule\"}]}, \"status\": {\"allocatable\": {\"cpu\": \"4\", \"memory\": \"8Gi\", \"pods\": \"110\"}}}]}";
    let block = NODES.replace(
        "    labels: {pool: cpu, zone: a}\n",
        "    labels:\n      pool: cpu\n      zone: a\n",
    );
    let commented = format!("# kubectl get nodes -o yaml\n{NODES}");
    let input = format!(
        "{}---\n{}",
        job("a", "      tolerations: [{key: gpu, operator: Exists}]\n"),
        job("b", "      resources: {}\n      nodeSelector: {zone: a}\n")
    );
    let d = dir(&[
        ("n.json", json),
        ("block.yaml", &block),
        ("commented.yaml", &commented),
        ("nodes.yaml", NODES),
        ("in.yaml", &input),
    ]);
    let out = |f: &str| {
        let r = run_in(
            d.path(),
            &["check", "--nodes", f, "-o", "json", "in.yaml"],
            None,
            &[],
        );
        assert!(r.code <= 1, "{f}: {}", r.stderr);
        let mut j = json_of(&r);
        j["nodes"]["source"] = Json::Null;
        j
    };
    let want = out("nodes.yaml");
    for f in ["n.json", "block.yaml", "commented.yaml"] {
        assert_eq!(out(f), want, "{f}");
    }
    // The snapshot from stdin.
    let r = run_in(
        d.path(),
        &["check", "--nodes", "-", "-o", "json", "in.yaml"],
        Some(NODES.as_bytes()),
        &[],
    );
    let mut j = json_of(&r);
    j["nodes"]["source"] = Json::Null;
    assert_eq!(j, want);
}

#[test]
fn pools_say_whether_each_rules_component_lands_in_its_pool() {
    let d = dir(&[
        ("policy.yaml", POLICY),
        (
            "train.yaml",
            &job("train", "      nodeSelector: {zone: a}\n"),
        ),
    ]);
    let r = run_in(
        d.path(),
        &[
            "check",
            "--pools",
            "-p",
            "policy.yaml",
            "-o",
            "json",
            "train.yaml",
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let j = json_of(&r);
    // -p applied the pool's toleration and label, but the file's own
    // nodeSelector zone=a is a label the pool does not declare.
    assert_eq!(
        j["components"][0]["pools"],
        serde_json::json!([{"rule": "train-on-gpu", "pool": "gpu", "fits": false}])
    );
    assert_eq!(j["nodes"]["resourcesJudged"], false);
    // A component no pool rule selects runs outside the pools: it is
    // listed, and does not fail the check.
    let d = dir(&[
        ("policy.yaml", POLICY),
        ("train.yaml", &job("train", "")),
        ("prep.yaml", &job("prep", "")),
    ]);
    let r = run_in(
        d.path(),
        &[
            "check",
            "--pools",
            "-p",
            "policy.yaml",
            "train.yaml",
            "prep.yaml",
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout_str(), r.stderr);
    assert_eq!(
        r.stdout_str(),
        "train.yaml\n  Job \"train\": fits 1 of 1 pools: gpu\nprep.yaml\n  Job \"prep\": no rule puts it in a pool\nnodes: 1 pool of policy.yaml as nodes (their labels and taints; resources are not judged for pools)\n2 components: each lands in the pools its rules name\n"
    );
    // Without -p, --pools finds the policy as every command does (and judges the file as it is).
    std::fs::rename(d.path().join("policy.yaml"), d.path().join(".kfsched.yaml")).expect("rename");
    let r = run_in(d.path(), &["check", "--pools", "train.yaml"], None, &[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout_str(), r.stderr);
    assert!(
        r.stdout_str().contains(
            "error: rule \"train-on-gpu\" puts it in pool \"gpu\", where it does not fit"
        ),
        "{}",
        r.stdout_str()
    );
}

#[test]
fn bad_input_is_reported_where_it_is_and_exits_2() {
    let d = dir(&[
        ("nodes.yaml", NODES),
        ("job.yaml", &job("j", "      nodeSelector: {gpu: yes}\n")),
        (
            "bad-nodes.yaml",
            &NODES.replace("cpu: '4', memory: 8Gi", "cpu: four, memory: 8Gi"),
        ),
    ]);
    let r = run_in(
        d.path(),
        &["check", "--nodes", "nodes.yaml", "job.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: job.yaml:9:27: spec.template.spec.nodeSelector.gpu: nodeSelector value of gpu must be a string, and true is read as a boolean: quote it ('true')\nerror: nothing was checked (1 problem in job.yaml)\n"
    );
    assert!(r.stdout.is_empty());
    let r = run_in(
        d.path(),
        &["check", "--nodes", "bad-nodes.yaml", "nodes.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.starts_with("error: bad-nodes.yaml:10:24: items[0].status.allocatable.cpu: \"four\" is not a quantity"), "{}", r.stderr);
    let r = run_in(
        d.path(),
        &["check", "--nodes", "job.yaml", "nodes.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("a Job, not a Node"), "{}", r.stderr);
    let r = run_in(d.path(), &["check", "--nodes", "-", "-"], Some(b""), &[]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--nodes - reads the snapshot from stdin"),
        "{}",
        r.stderr
    );
    let r = run_in(
        d.path(),
        &["check", "--nodes", "nodes.yaml", "--pools", "job.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 2, "--nodes and --pools exclude each other");
}

#[test]
fn an_unreachable_cluster_exits_3() {
    let d = dir(&[("job.yaml", &job("j", ""))]);
    let r = run_in(
        d.path(),
        &[
            "check",
            "--server",
            "https://127.0.0.1:1",
            "--insecure-skip-tls-verify",
            "--request-timeout",
            "5s",
            "job.yaml",
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("error: cannot list nodes: "),
        "{}",
        r.stderr
    );
}

#[test]
fn what_will_surely_go_wrong_is_said_even_when_it_fits() {
    let spec = "      tolerations: [{key: gpu, value: ture, effect: NoSchedule}]\n      nodeSelector: {pool: gpus}\n";
    let d = dir(&[
        ("nodes.yaml", NODES),
        ("a.yaml", &job("a", spec)),
        (
            "b.yaml",
            &job("b", "      tolerations: [{key: gpu, operator: Exists}]\n").replace(
                "image: pytorch/pytorch:2.3\n",
                "image: x\n        resources: {limits: {nvidia.com/gpu: 4}}\n",
            ),
        ),
    ]);
    let r = run_in(
        d.path(),
        &["check", "--nodes", "nodes.yaml", "a.yaml", "b.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 1);
    let out = r.stdout_str();
    for want in [
        "warning: the toleration {key: gpu, value: ture, effect: NoSchedule} matches no taint of any node: it changes nothing (a typo?)",
        "warning: nodeSelector pool=gpus: no node has this label; did you mean pool=gpu?",
        "warning: it requests 4 nvidia.com/gpu, more than any node has (the most is 2 on gpu-1)",
    ] {
        assert!(out.contains(want), "{want}\n{out}");
    }
}

#[test]
fn the_text_report() {
    let d = dir(&[
        ("nodes.yaml", NODES),
        (
            "jobs.yaml",
            &format!(
                "{}---\n{}",
                job("prep", ""),
                job("train", "      nodeSelector: {pool: gpu}\n")
            ),
        ),
    ]);
    let r = run_in(
        d.path(),
        &["check", "--nodes", "nodes.yaml", "jobs.yaml"],
        None,
        &[],
    );
    assert_eq!(
        r.stdout_str(),
        "jobs.yaml
  Job \"prep\": fits 1 of 3 nodes: cpu-1
  Job \"train\": fits no node
      0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.
nodes: 3 nodes (1 cordoned) from the snapshot nodes.yaml; requests judged against allocatable; the pods already running are not counted (--usage counts them)
2 components: 1 fits no node
"
    );
}

#[test]
fn krm_results_say_which_components_fit_no_node() {
    let list = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{}{}",
        job("prep", "")
            .lines()
            .map(|l| format!("  {l}\n"))
            .collect::<String>()
            .replacen("  apiVersion", "- apiVersion", 1),
        job("train", "      nodeSelector: {pool: gpu}\n")
            .lines()
            .map(|l| format!("  {l}\n"))
            .collect::<String>()
            .replacen("  apiVersion", "- apiVersion", 1),
    );
    let d = dir(&[("nodes.yaml", NODES)]);
    let r = run_in(
        d.path(),
        &["check", "--krm", "--nodes", "nodes.yaml"],
        Some(list.as_bytes()),
        &[],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let out = r.stdout_str();
    assert!(out.starts_with(&list), "the items are untouched:\n{out}");
    assert!(
        out.contains(
            "- message: 'kfsched check: Job \"prep\" fits 1 node: cpu-1'\n  severity: info\n"
        ),
        "{out}"
    );
    assert!(out.contains("severity: error"), "{out}");
    assert!(
        r.stderr
            .contains("kfsched check: Job \"train\" fits no node: 0/3 nodes are available"),
        "{}",
        r.stderr
    );
}

/// A PipelineVersion is checked as its IR is: with `-p` as `rewrite` would
/// make it, so `check -p POLICY plain` judges exactly what `check expected`
/// (the SDK's own output with the same scheduling) judges.
#[test]
fn pipeline_version_with_p_is_judged_as_the_sdk_file_with_the_scheduling() {
    let nodes = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: a100-b
    labels: {cloud.example.com/accelerator: nvidia-a100, topology.kubernetes.io/zone: us-east1-b, example.com/local-nvme: 'yes'}
  spec:
    taints:
    - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
  status:
    allocatable: {cpu: '16', memory: 64Gi, pods: '110'}
- apiVersion: v1
  kind: Node
  metadata:
    name: batch-1
    labels: {pool: batch}
  spec:
    taints:
    - {key: workload, value: batch, effect: NoSchedule}
  status:
    allocatable: {cpu: '8', memory: 32Gi, pods: '110'}
";
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let case = repo.join("testdata/golden/pv/basic");
    let d = dir(&[("nodes.yaml", nodes)]);
    let judged = |args: &[&str]| {
        let mut all = vec!["check", "--nodes", "nodes.yaml", "-o", "json"];
        all.extend_from_slice(args);
        let r = run_in(d.path(), &all, None, &[]);
        let j = json_of(&r);
        let verdicts: Vec<(Json, Json, Json)> = j["components"]
            .as_array()
            .expect("components")
            .iter()
            .map(|c| {
                (
                    c["component"].clone(),
                    c["nodes"].clone(),
                    c["pipelines"].clone(),
                )
            })
            .collect();
        (r.code, verdicts)
    };
    let policy = case.join("policy.yaml");
    let plain = case.join("plain.yaml");
    let expected = case.join("expected.yaml");
    let with_p = judged(&["-p", policy.to_str().unwrap(), plain.to_str().unwrap()]);
    let sdk = judged(&[expected.to_str().unwrap()]);
    assert_eq!(with_p, sdk);
    let by_name = |n: &str| {
        sdk.1
            .iter()
            .find(|(c, _, _)| c == n)
            .unwrap_or_else(|| panic!("no component {n}: {:?}", sdk.1))
            .clone()
    };
    // train tolerates the GPU taint and needs the A100 label; preprocess
    // tolerates only the batch taint; report tolerates nothing.
    assert_eq!(by_name("train").1, serde_json::json!(["a100-b"]));
    assert_eq!(by_name("preprocess").1, serde_json::json!(["batch-1"]));
    assert_eq!(by_name("report").1, serde_json::json!([]));
    assert_eq!(sdk.0, 1, "report fits no node");
    assert!(
        by_name("train").2.as_array().is_some_and(|p| !p.is_empty()),
        "the pipeline's name: {:?}",
        by_name("train")
    );
}
