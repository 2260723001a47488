//! The pod-spec fields of a rule (`priorityClassName`, `schedulerName`,
//! `runtimeClassName`, `topologySpreadConstraints`) on the command line:
//! `schema` describes them, `explain` shows them before and after, the
//! KRM function writes them, and a KFP v2 file refuses them naming the rule
//! and admission.

use crate::support::{root, run_in};

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: fields}
spec:
  rules:
  - name: gpu
    match: {images: [\"pytorch/*\"]}
    priorityClassName: ml-high
    schedulerName: volcano
    runtimeClassName: nvidia
    topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: DoNotSchedule
      labelSelector: {matchLabels: {app: train}}
";

const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      priorityClassName: low
      containers:
      - name: c
        image: pytorch/pytorch:2.1
";

fn dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(d.path().join("policy.yaml"), POLICY).expect("policy");
    std::fs::write(d.path().join("job.yaml"), JOB).expect("job");
    d
}

#[test]
fn schema_describes_the_fields_for_editors() {
    let d = dir();
    let r = run_in(d.path(), &["schema"], None, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s: serde_json::Value = serde_json::from_slice(&r.stdout).expect("schema is JSON");
    let rule = &s["properties"]["spec"]["properties"]["rules"]["items"]["properties"];
    for k in ["priorityClassName", "schedulerName", "runtimeClassName"] {
        assert_eq!(rule[k]["type"], "string", "{k}");
        assert!(
            rule[k]["description"]
                .as_str()
                .is_some_and(|d| d.contains("export admission")),
            "{k}: {}",
            rule[k]
        );
    }
    let tsc = &rule["topologySpreadConstraints"]["items"];
    assert_eq!(tsc["additionalProperties"], false);
    assert_eq!(
        tsc["required"],
        serde_json::json!(["maxSkew", "topologyKey", "whenUnsatisfiable"])
    );
    let p = &tsc["properties"];
    assert_eq!(
        p["whenUnsatisfiable"]["enum"],
        serde_json::json!(["DoNotSchedule", "ScheduleAnyway"])
    );
    assert_eq!(
        p["nodeTaintsPolicy"]["enum"],
        serde_json::json!(["Honor", "Ignore"])
    );
    assert_eq!(p["maxSkew"]["minimum"], 1);
    assert_eq!(p["minDomains"]["minimum"], 1);
    assert_eq!(
        p["labelSelector"]["properties"]["matchExpressions"]["items"]["properties"]["operator"]["enum"],
        serde_json::json!(["In", "NotIn", "Exists", "DoesNotExist"])
    );
}

#[test]
fn explain_shows_the_fields_before_and_after() {
    let d = dir();
    let r = run_in(
        d.path(),
        &["explain", "-p", "policy.yaml", "job.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = r.stdout_str();
    assert!(
        text.contains("      result:  {priorityClassName: ml-high, schedulerName: volcano, runtimeClassName: nvidia, topologySpreadConstraints: [{labelSelector: {matchLabels: {app: train}}, maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]}\n"),
        "{text}"
    );
    assert!(
        text.contains("      warning: rule \"gpu\": priorityClassName low replaced by ml-high\n"),
        "{text}"
    );
    let r = run_in(
        d.path(),
        &["explain", "-o", "json", "-p", "policy.yaml", "job.yaml"],
        None,
        &[],
    );
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON");
    let c = &j["files"][0]["documents"][0]["components"][0];
    assert_eq!(c["before"], serde_json::json!({"priorityClassName": "low"}));
    assert_eq!(c["after"]["priorityClassName"], "ml-high");
    assert_eq!(c["after"]["schedulerName"], "volcano");
    assert_eq!(c["after"]["runtimeClassName"], "nvidia");
    assert_eq!(
        c["after"]["topologySpreadConstraints"][0]["topologyKey"],
        "topology.kubernetes.io/zone"
    );
    assert_eq!(c["changed"], true);
}

#[test]
fn the_krm_function_writes_the_fields() {
    let d = dir();
    let items = "items:\n- apiVersion: batch/v1\n  kind: Job\n  metadata: {name: train}\n  spec:\n    template:\n      spec:\n        containers:\n        - {name: c, image: pytorch/pytorch:2.1}\n";
    let config: String = POLICY.lines().map(|l| format!("  {l}\n")).collect();
    let list = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n{config}{items}"
    );
    let r = run_in(d.path(), &["fn"], Some(list.as_bytes()), &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout_str());
    let out = r.stdout_str();
    for want in [
        "        priorityClassName: ml-high\n",
        "        schedulerName: volcano\n",
        "        runtimeClassName: nvidia\n",
        "          topologyKey: topology.kubernetes.io/zone\n",
    ] {
        assert!(out.contains(want), "{want}:\n{out}");
    }
}

/// Every golden KFP v2 IR and PipelineVersion refuses the fields, naming
/// the rule, the task and the file, and pointing at admission; a rule that
/// excludes the PipelineSpec kind leaves them alone.
#[test]
fn kfp_v2_files_refuse_the_fields_and_point_at_admission() {
    let d = dir();
    let ir = root().join("testdata/golden/v2/control_flow/plain.yaml");
    let pv = root().join("testdata/golden/pv/basic/plain.yaml");
    let policy = POLICY.replace("    match: {images: [\"pytorch/*\"]}\n", "");
    std::fs::write(d.path().join("all.yaml"), &policy).expect("policy");
    for input in [&ir, &pv] {
        let r = run_in(
            d.path(),
            &["rewrite", "-p", "all.yaml", input.to_str().expect("a path")],
            None,
            &[],
        );
        assert_eq!(r.code, 2, "{}", r.stderr);
        let first = r.stderr.lines().next().unwrap_or("");
        assert!(
            first.starts_with("error: all.yaml:7:24: spec.rules[0].priorityClassName: rule \"gpu\" selects task ")
                && first.contains(&format!(" in {}, and sets priorityClassName, schedulerName, runtimeClassName, topologySpreadConstraints, which a KFP v2 pipeline cannot carry", input.display()))
                && first.ends_with("`kubectl kfsched export admission` sets them on the task's pod when it is created: enforce this rule there, or exclude this task from it"),
            "{}",
            r.stderr
        );
        assert!(r.stdout.is_empty());
    }
    let excluded = policy.replace(
        "  - name: gpu\n",
        "  - name: gpu\n    exclude: {kinds: [PipelineSpec, PipelineVersion]}\n",
    );
    std::fs::write(d.path().join("excluded.yaml"), excluded).expect("policy");
    let r = run_in(
        d.path(),
        &[
            "rewrite",
            "--check",
            "-p",
            "excluded.yaml",
            ir.to_str().expect("a path"),
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

const SNAPSHOT: &str = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: zoned
    labels: {topology.kubernetes.io/zone: z1}
  status:
    allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}
- apiVersion: v1
  kind: Node
  metadata:
    name: bare
  status:
    allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: ml-high}
  value: 1000
";

/// check under `-p`: a scheduler that is not kube-scheduler's is not
/// judged (exit 0), a PriorityClass the snapshot lacks is the API server's
/// refusal (exit 1), and the spread needs the topology label.
#[test]
fn check_judges_the_fields_as_the_api_server_and_kube_scheduler_do() {
    let d = dir();
    std::fs::write(d.path().join("nodes.yaml"), SNAPSHOT).expect("snapshot");
    let run = |policy: &str, nodes: &str| {
        std::fs::write(d.path().join("p.yaml"), policy).expect("policy");
        run_in(
            d.path(),
            &[
                "check", "-p", "p.yaml", "--nodes", nodes, "-o", "json", "job.yaml",
            ],
            None,
            &[],
        )
    };
    let r = run(POLICY, "nodes.yaml");
    assert_eq!(
        r.code, 0,
        "another scheduler's pod is not judged: {}",
        r.stderr
    );
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON");
    let c = &j["components"][0];
    assert_eq!(c["judged"], false);
    assert_eq!(c["refused"], serde_json::Value::Null);
    assert_eq!(
        c["nodes"],
        serde_json::json!(["zoned"]),
        "as kube-scheduler's filters would"
    );
    assert_eq!(c["pod"]["spec"]["priority"], 1000);
    let kube_scheduler = POLICY.replace("    schedulerName: volcano\n", "");
    let r = run(&kube_scheduler, "nodes.yaml");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON");
    assert_eq!(j["components"][0]["judged"], true);
    let missing = kube_scheduler.replace("ml-high", "ml-hihg");
    let r = run(&missing, "nodes.yaml");
    assert_eq!(r.code, 1, "{}", r.stderr);
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON");
    assert_eq!(
        j["components"][0]["refused"],
        "the API server refuses the pod: no PriorityClass with name ml-hihg was found (the Priority admission plugin)"
    );
    // A snapshot without PriorityClasses cannot tell: not judged, and said.
    let no_classes = &SNAPSHOT[..SNAPSHOT.find("- apiVersion: scheduling").expect("a class")];
    std::fs::write(d.path().join("bare.yaml"), no_classes).expect("snapshot");
    let r = run(&missing, "bare.yaml");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON");
    let notes = j["components"][0]["notJudged"].to_string();
    assert!(
        notes.contains("priorityClassName \\\"ml-hihg\\\": whether the cluster has this PriorityClass is not judged (the snapshot holds no PriorityClass: take it with `kubectl get nodes,priorityclasses -o yaml`)"),
        "{notes}"
    );
    let rack = kube_scheduler.replace("topology.kubernetes.io/zone", "rack");
    let r = run(&rack, "nodes.yaml");
    assert_eq!(r.code, 1, "{}", r.stderr);
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON");
    assert_eq!(
        j["components"][0]["message"],
        "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints (missing required label). no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
}
