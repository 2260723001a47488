//! Errors under KRM functions point into the user's policy file: when the
//! ResourceList's functionConfig is the content of a file the user has (a
//! `transformers:` entry of the kustomization kustomize runs the function
//! beside, the file kpt's annotations name, the policy found as every
//! command finds it), its problems are reported at that file's line and
//! column, with the ResourceList's position second. The ResourceLists here
//! are shaped as kustomize 5.8 and kpt 1.0 send them (kustomize re-sorts
//! the functionConfig's keys; kpt keeps its text and adds annotations).

use crate::support::run_in;

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: ml-platform
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: kubectl-kfsched
        args: [fn]
spec:
  rules:
  - name: gpu
    match: {names: [\"train*\"]}
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedul}
";

const ITEMS: &str = "apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: batch/v1
  kind: Job
  metadata:
    name: train
  spec:
    template:
      spec:
        containers:
        - image: pytorch/pytorch:2
          name: c
";

/// The functionConfig as kustomize sends it: keys sorted, block style,
/// the local-config annotation added.
fn as_kustomize_sends(effect: &str) -> String {
    format!(
        "{ITEMS}functionConfig:
  apiVersion: kfsched.dev/v1alpha1
  kind: SchedulingPolicy
  metadata:
    annotations:
      config.kubernetes.io/function: |
        exec:
          path: kubectl-kfsched
          args: [fn]
      config.kubernetes.io/local-config: 'true'
    name: ml-platform
  spec:
    rules:
    - match:
        names:
        - train*
      name: gpu
      tolerations:
      - effect: {effect}
        key: nvidia.com/gpu
        operator: Exists
"
    )
}

/// The functionConfig as kpt sends it: the file's text, indented, with
/// kpt's annotations added (`fn render` names the file and its package).
fn as_kpt_sends(policy: &str, package: Option<&std::path::Path>) -> String {
    let mut fc = String::new();
    for line in policy.lines() {
        fc.push_str(&format!("  {line}\n"));
        if line == "  annotations:" {
            fc.push_str("      config.kubernetes.io/index: '0'\n");
            if let Some(p) = package {
                fc.push_str("      config.kubernetes.io/path: 'kfsched.yaml'\n");
                fc.push_str(&format!(
                    "      internal.config.kubernetes.io/package-path: '{}'\n",
                    p.display()
                ));
                fc.push_str("      internal.config.kubernetes.io/path: 'kfsched.yaml'\n");
            }
        }
    }
    format!("{ITEMS}functionConfig:\n{fc}")
}

/// LINE:COL of the first `needle` in `text`.
fn at(text: &str, needle: &str) -> String {
    let i = text.find(needle).expect("needle");
    let line = text[..i].matches('\n').count() + 1;
    let col = i - text[..i].rfind('\n').map_or(0, |n| n + 1) + 1;
    format!("{line}:{col}")
}

const WHY: &str = "spec.rules[0].tolerations[0].effect: Unsupported value: \"NoSchedul\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"; did you mean \"NoSchedule\"?";

fn first_error(stderr: &str) -> &str {
    stderr.lines().next().unwrap_or("")
}

#[test]
fn kustomize_policy_errors_point_into_the_transformer_file() {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(d.path().join("kfsched.yaml"), POLICY).expect("write");
    std::fs::write(
        d.path().join("kustomization.yaml"),
        "resources: [job.yaml]\ntransformers:\n- kfsched.yaml\n",
    )
    .expect("write");
    let list = as_kustomize_sends("NoSchedul");
    // kustomize runs an exec function in the kustomization's directory.
    let r = run_in(d.path(), &["fn"], Some(list.as_bytes()), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    // Named in full: kustomize may have been run from anywhere.
    let file = d.path().join("kfsched.yaml");
    assert_eq!(
        first_error(&r.stderr),
        format!(
            "error: invalid SchedulingPolicy: {}:{}: {WHY} (ResourceList:{})",
            file.display(),
            at(POLICY, "NoSchedul"),
            at(&list, "NoSchedul")
        )
    );
    // The result in the ResourceList says the same.
    assert!(
        r.stdout_str()
            .contains(&format!("{}:{}", file.display(), at(POLICY, "NoSchedul"))),
        "{}",
        r.stdout_str()
    );
    // A functionConfig that is not the file's content stays in the ResourceList.
    let other = list.replace("name: ml-platform", "name: other");
    let r = run_in(d.path(), &["fn"], Some(other.as_bytes()), &[]);
    assert_eq!(
        first_error(&r.stderr),
        format!(
            "error: invalid SchedulingPolicy: ResourceList:{}: functionConfig.{WHY}",
            at(&other, "NoSchedul")
        )
    );
}

#[test]
fn kpt_policy_errors_point_into_the_package_file_or_the_nearest_policy() {
    // kpt fn render: the annotations name the package and the file.
    let pkg = tempfile::tempdir().expect("tempdir");
    std::fs::write(pkg.path().join("kfsched.yaml"), POLICY).expect("write");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let list = as_kpt_sends(POLICY, Some(pkg.path()));
    let r = run_in(elsewhere.path(), &["fn"], Some(list.as_bytes()), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        first_error(&r.stderr),
        format!(
            "error: invalid SchedulingPolicy: {}:{}: {WHY} (ResourceList:{})",
            pkg.path().join("kfsched.yaml").display(),
            at(POLICY, "NoSchedul"),
            at(&list, "NoSchedul")
        )
    );
    // kpt fn eval --fn-config .kfsched.yaml: no path in the annotations;
    // the policy found as every command finds it is the user's file.
    std::fs::write(elsewhere.path().join(".kfsched.yaml"), POLICY).expect("write");
    let list = as_kpt_sends(POLICY, None);
    let r = run_in(elsewhere.path(), &["fn"], Some(list.as_bytes()), &[]);
    assert_eq!(
        first_error(&r.stderr),
        format!(
            "error: invalid SchedulingPolicy: {}:{}: {WHY} (ResourceList:{})",
            elsewhere.path().join(".kfsched.yaml").display(),
            at(POLICY, "NoSchedul"),
            at(&list, "NoSchedul")
        )
    );
}

/// A valid policy's messages point into the file too: a rule that matched
/// nothing, at its `match` in the file and in the ResourceList.
#[test]
fn a_rule_that_matches_nothing_is_located_in_the_file_too() {
    let d = tempfile::tempdir().expect("tempdir");
    let policy = POLICY
        .replace("NoSchedul}", "NoSchedule}")
        .replace("train*", "nothing-here");
    std::fs::write(d.path().join("kfsched.yaml"), &policy).expect("write");
    std::fs::write(
        d.path().join("kustomization.yaml"),
        "transformers: [kfsched.yaml]\n",
    )
    .expect("write");
    let list = as_kustomize_sends("NoSchedule").replace("train*", "nothing-here");
    let r = run_in(d.path(), &["fn"], Some(list.as_bytes()), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let want = format!(
        "kfsched: rule \"gpu\" matched no component (its spec.rules[0].match is at {}:{}, ResourceList:{};",
        d.path().join("kfsched.yaml").display(),
        at(&policy, "{names:"),
        at(&list, "names:\n")
    );
    assert!(r.stdout_str().contains(&want), "{want}\n{}", r.stdout_str());
}
