//! Nothing silent (SPEC §4 `--strict`): a rule that matches nothing and a
//! named input that holds no pipeline or workload are warnings from
//! `rewrite`, `diff`, `--check`, `explain` and `check`, and errors (exit 2)
//! under `--strict`; `rewrite -i` ends with a summary line unless `-q`;
//! `-v` names the policy file and why it was chosen.

use crate::support::{run_in, snapshot};

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: noops}
spec:
  rules:
  - name: gpu
    match: {images: [\"pytorch/*\"]}
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
  - name: never
    match: {names: [\"does-not-exist\"]}
    nodeSelector: {a: b}
";

const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  template:
    spec:
      containers:
      - {name: c, image: pytorch/pytorch:2}
";

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n";

const NODES: &str = "apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: '4', memory: 8Gi, pods: '110'}
";

const RULE: &str = "policy.yaml:11:20: spec.rules[1].match.names: rule \"never\" matched no component (its match.names matches none of their names); `kubectl kfsched explain` lists every component with the names a rule can match";
const EMPTY: &str = "cm.yaml: holds no pipeline or workload (not a pipeline (v1 ConfigMap)), so nothing in it can change; kfsched reads KFP v2 IR, KFP PipelineVersions, Argo workflows (KFP v1) and pod-creating workloads";

fn setup() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    for (name, text) in [
        ("policy.yaml", POLICY),
        ("job.yaml", JOB),
        ("cm.yaml", CONFIG_MAP),
        ("nodes.yaml", NODES),
    ] {
        std::fs::write(d.path().join(name), text).expect("write");
    }
    d
}

fn run(d: &tempfile::TempDir, args: &[&str]) -> crate::support::Run {
    let mut all = vec![args[0], "-p", "policy.yaml"];
    all.extend(&args[1..]);
    run_in(d.path(), &all, None, &[])
}

/// The same two mistakes, said by every command that reads inputs, as
/// warnings that do not change the exit code.
#[test]
fn every_reading_command_warns_about_a_rule_and_an_input_that_do_nothing() {
    let d = setup();
    let both = format!("warning: {RULE}\nwarning: {EMPTY}\n");
    let r = run(&d, &["diff", "job.yaml", "cm.yaml"]);
    assert_eq!((r.code, r.stderr.as_str()), (1, both.as_str()));
    let r = run(&d, &["rewrite", "--check", "job.yaml", "cm.yaml"]);
    assert_eq!(
        (r.code, r.stderr.clone()),
        (1, format!("{both}would rewrite job.yaml\n"))
    );
    let r = run(&d, &["explain", "job.yaml", "cm.yaml"]);
    assert_eq!((r.code, r.stderr.as_str()), (0, both.as_str()));
    assert!(
        r.stdout_str()
            .contains("rules that matched nothing: never\n")
    );
    let r = run(
        &d,
        &["check", "--nodes", "nodes.yaml", "job.yaml", "cm.yaml"],
    );
    assert_eq!((r.code, r.stderr.as_str()), (0, both.as_str()));
    // check without -p judges the files as they are: no rule to warn about.
    let r = run_in(
        d.path(),
        &["check", "--nodes", "nodes.yaml", "job.yaml", "cm.yaml"],
        None,
        &[],
    );
    assert_eq!(
        (r.code, r.stderr.clone()),
        (0, format!("warning: {EMPTY}\n"))
    );
    // In place: the warnings, then one summary line (none with -q).
    let r = run(&d, &["rewrite", "-i", "job.yaml", "cm.yaml"]);
    assert_eq!(
        (r.code, r.stderr.clone()),
        (
            0,
            format!("{both}1 file rewritten, 1 file left unchanged\n")
        )
    );
    let r = run(&d, &["rewrite", "-i", "-q", "job.yaml", "cm.yaml"]);
    assert_eq!((r.code, r.stderr.as_str()), (0, both.as_str()));
    // The rule that matched is quiet; an input in a directory is judged
    // with the directory, which holds a pipeline.
    std::fs::create_dir(d.path().join("tree")).expect("mkdir");
    std::fs::write(d.path().join("tree/job.yaml"), JOB).expect("write");
    std::fs::write(d.path().join("tree/cm.yaml"), CONFIG_MAP).expect("write");
    let r = run(&d, &["diff", "tree"]);
    assert_eq!(
        (r.code, r.stderr.clone()),
        (1, format!("warning: {RULE}\n"))
    );
    // A directory with nothing in it to rewrite is one input that does
    // nothing (job.yaml was rewritten above: no diff either).
    std::fs::remove_file(d.path().join("tree/job.yaml")).expect("rm");
    std::fs::write(d.path().join("tree/more.yaml"), CONFIG_MAP).expect("write");
    let r = run(&d, &["diff", "job.yaml", "tree"]);
    assert_eq!(
        (r.code, r.stderr.clone()),
        (
            0,
            format!(
                "warning: {RULE}\nwarning: tree: none of the 2 files under it holds a pipeline or workload (not a pipeline (v1 ConfigMap)), so nothing in it can change; kfsched reads KFP v2 IR, KFP PipelineVersions, Argo workflows (KFP v1) and pod-creating workloads\n"
            )
        )
    );
}

/// `--strict` turns the same warnings into errors and exit 2: `rewrite`
/// and `diff` then write and print nothing; `explain` and `check` still
/// print their report.
#[test]
fn strict_makes_them_errors_and_nothing_is_written() {
    let d = setup();
    let errors = format!("error: {RULE}\nerror: {EMPTY}\n");
    let before = snapshot(d.path());
    let r = run(&d, &["rewrite", "-i", "--strict", "job.yaml", "cm.yaml"]);
    assert_eq!(
        (r.code, r.stderr.clone()),
        (
            2,
            format!("{errors}error: nothing was written (--strict: 2 problems above)\n")
        )
    );
    assert_eq!(snapshot(d.path()), before, "nothing written");
    let r = run(&d, &["rewrite", "--strict", "job.yaml"]);
    assert_eq!(
        (r.code, r.stderr.clone(), r.stdout.is_empty()),
        (
            2,
            format!("error: {RULE}\nerror: nothing was written (--strict: 1 problem above)\n"),
            true
        )
    );
    let r = run(&d, &["diff", "--strict", "job.yaml", "cm.yaml"]);
    assert_eq!(
        (r.code, r.stderr.clone(), r.stdout.is_empty()),
        (
            2,
            format!("{errors}error: no diff was made (--strict: 2 problems above)\n"),
            true
        )
    );
    let r = run(
        &d,
        &["rewrite", "--check", "--strict", "job.yaml", "cm.yaml"],
    );
    assert_eq!(
        (r.code, r.stderr.clone()),
        (
            2,
            format!("{errors}error: nothing was checked (--strict: 2 problems above)\n")
        )
    );
    let r = run(&d, &["explain", "--strict", "job.yaml", "cm.yaml"]);
    assert_eq!(
        (r.code, r.stderr.clone()),
        (2, format!("{errors}error: --strict: 2 problems above\n"))
    );
    assert!(r.stdout_str().contains("    Job \"train\"\n"));
    let r = run(
        &d,
        &[
            "check",
            "--strict",
            "--nodes",
            "nodes.yaml",
            "job.yaml",
            "cm.yaml",
        ],
    );
    assert_eq!(
        (r.code, r.stderr.clone()),
        (2, format!("{errors}error: --strict: 2 problems above\n"))
    );
    assert!(r.stdout_str().contains("Job \"train\""));
    // Without a mistake, --strict changes nothing.
    let only_gpu = POLICY.split("  - name: never").next().expect("first rule");
    std::fs::write(d.path().join("policy.yaml"), only_gpu).expect("write");
    let r = run(&d, &["rewrite", "--check", "--strict", "job.yaml"]);
    assert_eq!((r.code, r.stderr.as_str()), (1, "would rewrite job.yaml\n"));
}

/// The KRM function gives the rule's warning as a result; under
/// `--strict` it is an error result, nothing is rewritten, and the exit
/// is 1 (KRM error results).
#[test]
fn fn_strict_makes_a_rule_that_matches_nothing_an_error_result() {
    let d = setup();
    let indented: String = JOB
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{}{l}\n", if i == 0 { "- " } else { "  " }))
        .collect();
    let policy: String = POLICY.lines().map(|l| format!("  {l}\n")).collect();
    let list = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{indented}functionConfig:\n{policy}"
    );
    let r = run_in(d.path(), &["fn"], Some(list.as_bytes()), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = r.stdout_str();
    assert!(out.contains("severity: warning"), "{out}");
    assert!(
        out.contains("kfsched: rule \"never\" matched no component (its spec.rules[1].match is at ResourceList:"),
        "{out}"
    );
    assert!(out.contains("nvidia.com/gpu"), "rewritten: {out}");
    let r = run_in(d.path(), &["fn", "--strict"], Some(list.as_bytes()), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let out = r.stdout_str();
    assert!(out.starts_with(&list), "items untouched:\n{out}");
    assert!(!out.contains("severity: info"), "{out}");
    assert!(
        r.stderr
            .contains("an error under --strict; nothing was rewritten"),
        "{}",
        r.stderr
    );
}

/// `-v` says which policy file was used and why: the flag, the
/// environment variable, or the nearest `.kfsched.yaml` upward.
#[test]
fn verbose_names_the_policy_file_and_why() {
    let d = setup();
    std::fs::write(d.path().join(".kfsched.yaml"), POLICY).expect("write");
    std::fs::create_dir(d.path().join("sub")).expect("mkdir");
    let first_line = |r: &crate::support::Run| r.stderr.lines().next().unwrap_or("").to_string();
    let r = run(&d, &["diff", "-v", "job.yaml"]);
    assert_eq!(first_line(&r), "policy: policy.yaml (from -p/--policy)");
    let r = run_in(
        d.path(),
        &["validate", "-v"],
        None,
        &[("KFSCHED_POLICY", "policy.yaml")],
    );
    assert_eq!(
        (r.code, first_line(&r)),
        (0, "policy: policy.yaml (from $KFSCHED_POLICY)".to_string())
    );
    let sub = d.path().join("sub");
    let r = run_in(&sub, &["explain", "-v", "../job.yaml"], None, &[]);
    assert_eq!(
        first_line(&r),
        format!(
            "policy: {} (the nearest .kfsched.yaml upward from {})",
            d.path().join(".kfsched.yaml").display(),
            sub.display()
        )
    );
    // Given before the command, -v and -p are handed to it.
    let r = run_in(
        d.path(),
        &["-v", "-p", "policy.yaml", "rewrite", "--check", "job.yaml"],
        None,
        &[],
    );
    assert_eq!(
        (r.code, first_line(&r)),
        (1, "policy: policy.yaml (from -p/--policy)".to_string())
    );
}
