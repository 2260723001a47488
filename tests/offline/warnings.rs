//! The API server's warnings about a policy's content are printed by every
//! command that loads the policy, on stderr and without changing its exit
//! code; the KRM function reports them as warning results. (Each warning
//! kind and its place: `testdata/warnings/`.)

use crate::support::run_in;

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: legacy}
spec:
  nodePools:
  - name: amd64
    nodes: [worker-*]
    labels: {kubernetes.io/arch: amd64}
  rules:
  - name: amd64
    pool: amd64
    nodeSelector: {beta.kubernetes.io/arch: amd64}
";

const WARNING: &str = "warning: policy.yaml:12:20: spec.rules[0].nodeSelector[\"beta.kubernetes.io/arch\"]: deprecated since v1.14; use \"kubernetes.io/arch\" instead\n";

const POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: c
    image: busybox
";

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("policy.yaml"), POLICY).expect("policy");
    std::fs::write(dir.path().join("pod.yaml"), POD).expect("pod");
    dir
}

#[test]
fn every_offline_command_prints_the_warnings_and_keeps_its_exit_code() {
    let dir = setup();
    for (args, code) in [
        (&["validate", "-p", "policy.yaml"][..], 0),
        (&["rewrite", "-p", "policy.yaml", "pod.yaml"], 0),
        (&["rewrite", "--check", "-p", "policy.yaml", "pod.yaml"], 1),
        (&["diff", "-p", "policy.yaml", "pod.yaml"], 1),
        (&["explain", "-p", "policy.yaml", "pod.yaml"], 0),
    ] {
        let r = run_in(dir.path(), args, None, &[]);
        assert_eq!(r.code, code, "{args:?}: {}", r.stderr);
        let got: String = r
            .stderr
            .lines()
            .filter(|l| l.starts_with("warning: "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(got, WARNING, "{args:?}");
    }
    // And the rewrite is made: the warning does not stop it.
    let r = run_in(
        dir.path(),
        &["rewrite", "-p", "policy.yaml", "pod.yaml"],
        None,
        &[],
    );
    assert!(
        r.stdout_str().contains("beta.kubernetes.io/arch: amd64"),
        "{}",
        r.stdout_str()
    );
}

#[test]
fn the_legacy_exec_plugin_prints_the_warnings() {
    let dir = setup();
    let r = run_in(
        dir.path(),
        &["fn", "policy.yaml"],
        Some(POD.as_bytes()),
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stderr, WARNING);
}

#[test]
fn node_commands_print_the_warnings_before_they_reach_the_cluster() {
    let dir = setup();
    let r = run_in(
        dir.path(),
        &[
            "node",
            "diff",
            "-p",
            "policy.yaml",
            "--kubeconfig",
            "missing-kubeconfig",
        ],
        None,
        &[],
    );
    assert_ne!(r.code, 0, "no cluster here");
    assert!(r.stderr.starts_with(WARNING), "{}", r.stderr);
}

#[test]
fn the_krm_function_reports_the_warnings_as_results() {
    let dir = setup();
    let mut config = String::new();
    for line in POLICY.lines() {
        config.push_str("  ");
        config.push_str(line);
        config.push('\n');
    }
    let list = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n{config}"
    );
    let r = run_in(dir.path(), &["fn"], Some(list.as_bytes()), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = r.stdout_str();
    // The policy's line 12, column 20 is the ResourceList's line 16, column 22.
    let result = "- message: 'ResourceList:16:22: functionConfig.spec.rules[0].nodeSelector[\"beta.kubernetes.io/arch\"]: deprecated since v1.14; use \"kubernetes.io/arch\" instead'\n  severity: warning\n";
    assert!(out.contains(result), "{out}");
}

/// A value the rule replaces is reported like an error of a rule meeting a
/// file: at the rule's field, naming the file and the component.
#[test]
fn a_replaced_value_is_reported_at_the_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: p}\nspec:\n  rules:\n  - name: ssd\n    nodeSelector: {disktype: ssd}\n";
    let pod = format!("{POD}  nodeSelector: {{disktype: hdd}}\n");
    std::fs::write(dir.path().join("policy.yaml"), policy).expect("policy");
    std::fs::write(dir.path().join("pod.yaml"), pod).expect("pod");
    let r = run_in(
        dir.path(),
        &["rewrite", "-p", "policy.yaml", "pod.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "warning: policy.yaml:7:19: spec.rules[0].nodeSelector: rule \"ssd\" selects Pod \"p\" in pod.yaml: nodeSelector disktype=hdd replaced by disktype=ssd\n"
    );
}
