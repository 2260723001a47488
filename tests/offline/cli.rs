//! The command line of SPEC §4: stdin/stdout, in-place writes, diffs and
//! their exit codes, explain, validate, schema, policy discovery, trees.

use std::os::unix::fs::PermissionsExt;

use crate::support::{root, run_in, unmatched_rules_in, without_unmatched_rules};

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: cli}
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

fn job(name: &str, image: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: {image}\n"
    )
}

const TOLERATION: &str = "      tolerations:\n      - effect: NoSchedule\n        key: nvidia.com/gpu\n        operator: Exists\n";

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    for (n, b) in files {
        let p = d.path().join(n);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, b).expect("write");
    }
    d
}

#[test]
fn stdin_to_stdout() {
    let d = dir_with(&[("policy.yaml", POLICY)]);
    let input = job("train", "pytorch/pytorch:2.3");
    let r = run_in(
        d.path(),
        &["rewrite", "-p", "policy.yaml"],
        Some(input.as_bytes()),
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout_str(), format!("{input}{TOLERATION}"));
    let r = run_in(
        d.path(),
        &["rewrite", "-p", "policy.yaml", "-"],
        Some(b"kind: ConfigMap\n"),
        &[],
    );
    assert_eq!(
        (r.code, r.stdout_str()),
        (0, "kind: ConfigMap\n".to_string()),
        "non-pipeline YAML passes through"
    );
}

#[test]
fn in_place_rewrites_atomically_and_keeps_the_mode() {
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("jobs/a.yaml", &job("a", "pytorch/pytorch:2")),
        ("jobs/b.yaml", &job("b", "busybox")),
    ]);
    let a = d.path().join("jobs/a.yaml");
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let b_before = std::fs::metadata(d.path().join("jobs/b.yaml"))
        .expect("meta")
        .modified()
        .expect("mtime");
    let r = run_in(
        d.path(),
        &["rewrite", "-i", "-p", "policy.yaml", "jobs"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&a).expect("read"),
        format!("{}{TOLERATION}", job("a", "pytorch/pytorch:2"))
    );
    assert_eq!(
        std::fs::metadata(&a).expect("meta").permissions().mode() & 0o777,
        0o640
    );
    let b_after = std::fs::metadata(d.path().join("jobs/b.yaml"))
        .expect("meta")
        .modified()
        .expect("mtime");
    assert_eq!(b_before, b_after, "an unchanged file is not rewritten");
    let leftovers: Vec<_> = std::fs::read_dir(d.path().join("jobs"))
        .expect("ls")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 2, "no temporary files left: {leftovers:?}");
}

#[test]
fn in_place_writes_through_symlinks_and_rewrites_each_file_once() {
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("real/a.yaml", &job("a", "pytorch/pytorch:2")),
    ]);
    std::fs::create_dir(d.path().join("links")).expect("mkdir");
    let link = d.path().join("links/a.yaml");
    std::os::unix::fs::symlink("../real/a.yaml", &link).expect("symlink");
    // The same file three times: through the link, by name, and in its directory.
    let r = run_in(
        d.path(),
        &[
            "rewrite",
            "-i",
            "-p",
            "policy.yaml",
            "links/a.yaml",
            "real/a.yaml",
            "real",
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
    let want = format!("{}{TOLERATION}", job("a", "pytorch/pytorch:2"));
    assert_eq!(
        std::fs::read_to_string(d.path().join("real/a.yaml")).expect("read"),
        want
    );
    let r = run_in(
        d.path(),
        &["diff", "-p", "policy.yaml", "links/a.yaml", "real"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "already rewritten: {}", r.stdout_str());
    std::fs::write(d.path().join("real/a.yaml"), job("a", "pytorch/pytorch:2")).expect("reset");
    let r = run_in(
        d.path(),
        &["diff", "-p", "policy.yaml", "links/a.yaml", "real"],
        None,
        &[],
    );
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stdout_str().matches("+++ ").count(),
        1,
        "one diff per file:\n{}",
        r.stdout_str()
    );
    // Under the regular file's name, though the link came first: the file
    // `-i` writes, and one `patch -p1` accepts.
    assert!(
        r.stdout_str()
            .starts_with("--- a/real/a.yaml\n+++ b/real/a.yaml\n"),
        "{}",
        r.stdout_str()
    );
    let left: Vec<_> = std::fs::read_dir(d.path().join("real"))
        .expect("ls")
        .flatten()
        .collect();
    assert_eq!(left.len(), 1, "no temporary files left");
}

#[test]
fn diff_prints_a_unified_diff_and_exits_1_on_differences() {
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("a.yaml", &job("a", "pytorch/pytorch:2")),
        ("b.yaml", &job("b", "busybox")),
    ]);
    let r = run_in(
        d.path(),
        &["diff", "-p", "policy.yaml", "a.yaml", "b.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        r.stdout_str(),
        "--- a/a.yaml\n+++ b/a.yaml\n@@ -8,3 +8,7 @@\n       containers:\n       - name: c\n         image: pytorch/pytorch:2\n+      tolerations:\n+      - effect: NoSchedule\n+        key: nvidia.com/gpu\n+        operator: Exists\n"
    );
    let r = run_in(
        d.path(),
        &["diff", "-p", "policy.yaml", "b.yaml"],
        None,
        &[],
    );
    assert_eq!((r.code, r.stdout.len()), (0, 0));
    let r = run_in(
        d.path(),
        &["diff", "--color", "always", "-p", "policy.yaml", "a.yaml"],
        None,
        &[],
    );
    assert!(
        r.stdout_str()
            .contains("\u{1b}[32m+      tolerations:\u{1b}[0m"),
        "{}",
        r.stdout_str()
    );
    // rewrite --diff shows the same diff and exits 0; with --check it exits 1.
    let r = run_in(
        d.path(),
        &["rewrite", "--diff", "-p", "policy.yaml", "a.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0);
    assert!(r.stdout_str().starts_with("--- a/a.yaml\n+++ b/a.yaml\n"));
    let r = run_in(
        d.path(),
        &[
            "rewrite",
            "--diff",
            "--check",
            "-p",
            "policy.yaml",
            "a.yaml",
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 1);
    assert!(
        std::fs::read_to_string(d.path().join("a.yaml")).expect("read")
            == job("a", "pytorch/pytorch:2")
    );
}

/// Applies `diff` in `dir` with GNU `patch -p1`, the way a user would.
fn patch(dir: &std::path::Path, diff: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let out = Command::new("patch")
        .args(["-p1", "--no-backup-if-mismatch", "--quiet"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().expect("stdin").write_all(diff)?;
            c.wait_with_output()
        })
        .expect("run patch (GNU patch must be installed)");
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "patch refused the diff: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn the_diff_of_every_hand_written_case_applies_with_patch() {
    // CRLF, BOM and no-final-newline cases included: the diff is a patch
    // that turns the input into the rewrite, with the real `patch`.
    let mut applied = 0;
    for case in crate::support::hand_dirs() {
        let d = tempfile::tempdir().expect("tempdir");
        for f in ["input.yaml", "policy.yaml"] {
            std::fs::copy(case.join(f), d.path().join(f)).expect("copy");
        }
        let r = run_in(
            d.path(),
            &["diff", "-p", "policy.yaml", "input.yaml"],
            None,
            &[],
        );
        assert_eq!(r.code, 1, "{}: {}", case.display(), r.stderr);
        if let Err(e) = patch(d.path(), &r.stdout) {
            panic!("{}: {e}\n{}", case.display(), r.stdout_str());
        }
        let patched = std::fs::read(d.path().join("input.yaml")).expect("read");
        let expected = std::fs::read(case.join("expected.yaml")).expect("read");
        assert!(
            patched == expected,
            "{}: the patched input is not expected.yaml",
            case.display()
        );
        applied += 1;
    }
    assert!(applied >= 8, "{applied} cases");
}

#[test]
fn diff_headers_of_odd_file_names_apply_with_patch() {
    // Names with a space end in a tab; names with a tab, quote or backslash
    // are C-quoted, as git writes them.
    let case = root().join("testdata/cases/indentless-tolerations-last");
    let input = std::fs::read_to_string(case.join("input.yaml")).expect("input");
    let expected = std::fs::read_to_string(case.join("expected.yaml")).expect("expected");
    let names = [
        "my file.yaml",
        "tab\tx.yaml",
        "q\"uote.yaml",
        "back\\slash.yaml",
    ];
    let policy = std::fs::read_to_string(case.join("policy.yaml")).expect("policy");
    let mut files: Vec<(&str, &str)> = names.iter().map(|n| (*n, input.as_str())).collect();
    files.push(("policy.yaml", &policy));
    let d = dir_with(&files);
    let r = run_in(d.path(), &["diff", "-p", "policy.yaml", "."], None, &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout_str().contains("--- a/my file.yaml\t\n"),
        "{}",
        r.stdout_str()
    );
    assert!(
        r.stdout_str().contains("--- \"a/tab\\tx.yaml\"\n"),
        "{}",
        r.stdout_str()
    );
    if let Err(e) = patch(d.path(), &r.stdout) {
        panic!("{e}\n{}", r.stdout_str());
    }
    for n in names {
        assert_eq!(
            std::fs::read_to_string(d.path().join(n)).expect("read"),
            expected,
            "{n:?}"
        );
    }
}

#[test]
fn explain_json_gives_kfp_v2_results_in_kubernetes_shape() {
    // The same rule on a KFP v2 task and on a Pod reads back the same:
    // `preference` and an integer weight, tolerationSeconds an integer.
    let policy = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: shapes}
spec:
  rules:
  - name: r
    match: {names: [export-onnx, p]}
    tolerations: [{key: gpu, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In, values: [x]}]}]
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 5, preference: {matchExpressions: [{key: b, operator: Exists}]}}
";
    let v2 =
        std::fs::read_to_string(root().join("testdata/golden/v2/container_components/plain.yaml"))
            .expect("fixture");
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: busybox}]\n";
    let d = dir_with(&[("policy.yaml", policy), ("v2.yaml", &v2), ("pod.yaml", pod)]);
    let after = |file: &str, label_part: &str| -> serde_json::Value {
        let r = run_in(
            d.path(),
            &["explain", "-o", "json", "-p", "policy.yaml", file],
            None,
            &[],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("json");
        let mut comps = Vec::new();
        for doc in j["files"][0]["documents"].as_array().expect("documents") {
            for c in doc["components"].as_array().expect("components") {
                if c["component"]
                    .as_str()
                    .is_some_and(|l| l.contains(label_part))
                {
                    comps.push(c.clone());
                }
            }
        }
        assert_eq!(comps.len(), 1, "{file}: {j}");
        comps[0]["after"].clone()
    };
    let from_v2 = after("v2.yaml", "export-onnx");
    let from_pod = after("pod.yaml", "Pod");
    assert_eq!(
        from_v2["affinity"], from_pod["affinity"],
        "v2 {from_v2}\npod {from_pod}"
    );
    assert_eq!(from_v2["tolerations"], from_pod["tolerations"]);
    assert_eq!(from_pod["tolerations"][0]["tolerationSeconds"], 30);
    assert_eq!(
        from_pod["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
            ["weight"],
        5
    );
}

#[test]
fn explain_names_matches_reasons_and_rules_that_matched_nothing() {
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("a.yaml", &job("a", "pytorch/pytorch:2")),
        ("b.yaml", &job("b", "busybox")),
    ]);
    let r = run_in(
        d.path(),
        &["explain", "-p", "policy.yaml", "a.yaml", "b.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout_str(),
        "a.yaml  (would change)
  document 1: workload Job
    Job \"a\"
      names:   a
      images:  pytorch/pytorch:2
      matched  gpu
      not      never: match.names [\"does-not-exist\"] matches none (names: a)
      result:  {tolerations: [{effect: NoSchedule, key: nvidia.com/gpu, operator: Exists}]}
b.yaml
  document 1: workload Job
    Job \"b\"
      names:   b
      images:  busybox
      not      gpu: match.images [\"pytorch/*\"] matches none (images: busybox)
      not      never: match.names [\"does-not-exist\"] matches none (names: b)
      result:  (none)  (unchanged)
rules that matched nothing: never
"
    );
    let r = run_in(
        d.path(),
        &["explain", "-o", "json", "-p", "policy.yaml", "a.yaml"],
        None,
        &[],
    );
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("json");
    assert_eq!(j["unmatchedRules"], serde_json::json!(["never"]));
    let c = &j["files"][0]["documents"][0]["components"][0];
    assert_eq!(
        c["rules"][0],
        serde_json::json!({"rule": "gpu", "matched": true, "reason": null})
    );
    assert_eq!(c["after"]["tolerations"][0]["key"], "nvidia.com/gpu");
    assert_eq!(c["changed"], true);
}

#[test]
fn explain_rule_limits_it_to_the_named_rules() {
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("a.yaml", &job("a", "pytorch/pytorch:2")),
    ]);
    let r = run_in(
        d.path(),
        &["explain", "-p", "policy.yaml", "--rule", "never", "a.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout_str(),
        "a.yaml
  document 1: workload Job
    Job \"a\"
      names:   a
      images:  pytorch/pytorch:2
      not      never: match.names [\"does-not-exist\"] matches none (names: a)
      result:  (none)  (unchanged)
rules that matched nothing: never
"
    );
    let r = run_in(
        d.path(),
        &["explain", "-p", "policy.yaml", "--rule", "gpus", "a.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: --rule \"gpus\": policy.yaml has no rule of that name; did you mean \"gpu\"? (its rules: gpu, never)\n"
    );
    assert!(r.stdout.is_empty());
}

#[test]
fn validate_and_schema() {
    let d = dir_with(&[("policy.yaml", POLICY)]);
    let r = run_in(d.path(), &["validate", "-p", "policy.yaml"], None, &[]);
    assert_eq!(
        (r.code, r.stdout_str()),
        (
            0,
            "policy.yaml: valid SchedulingPolicy \"cli\": 2 rules, 0 node pools\n".to_string()
        )
    );
    let r = run_in(d.path(), &["schema"], None, &[]);
    let s: serde_json::Value = serde_json::from_slice(&r.stdout).expect("schema is JSON");
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let rule = &s["properties"]["spec"]["properties"]["rules"]["items"];
    assert_eq!(rule["additionalProperties"], false);
    assert_eq!(rule["required"], serde_json::json!(["name"]));
    assert!(
        rule["properties"]["tolerations"]["items"]["properties"]["tolerationSeconds"]["type"]
            == "integer"
    );
    // Operators, effects and weights carry their values for editors.
    let tol = &rule["properties"]["tolerations"]["items"]["properties"];
    assert_eq!(
        tol["operator"]["enum"],
        serde_json::json!(["", "Equal", "Exists"])
    );
    assert_eq!(
        tol["effect"]["enum"],
        serde_json::json!(["", "NoSchedule", "PreferNoSchedule", "NoExecute"])
    );
    let na = &rule["properties"]["affinity"]["properties"]["nodeAffinity"]["properties"];
    let pref = &na["preferredDuringSchedulingIgnoredDuringExecution"]["items"]["properties"];
    assert_eq!(
        (&pref["weight"]["minimum"], &pref["weight"]["maximum"]),
        (&serde_json::json!(1), &serde_json::json!(100))
    );
    let expr = &pref["preference"]["properties"]["matchExpressions"]["items"]["properties"];
    assert_eq!(
        expr["operator"]["enum"],
        serde_json::json!(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    );
}

#[test]
fn policy_discovery_flag_then_env_then_nearest_file_upward() {
    let other = POLICY.replace("pytorch/*", "busybox*");
    let d = dir_with(&[
        (".kfsched.yaml", POLICY),
        ("env-policy.yaml", &other),
        ("deep/er/a.yaml", &job("a", "pytorch/pytorch:2")),
    ]);
    let deep = d.path().join("deep/er");
    let r = run_in(&deep, &["rewrite", "--check", "a.yaml"], None, &[]);
    assert_eq!(
        r.code, 1,
        "the .kfsched.yaml two levels up applies: {}",
        r.stderr
    );
    let env_path = d.path().join("env-policy.yaml");
    let r = run_in(
        &deep,
        &["rewrite", "--check", "a.yaml"],
        None,
        &[("KFSCHED_POLICY", env_path.to_str().expect("utf8"))],
    );
    assert_eq!(
        r.code, 0,
        "$KFSCHED_POLICY wins over .kfsched.yaml: {}",
        r.stderr
    );
    let r = run_in(
        &deep,
        &["rewrite", "--check", "-p", "../../.kfsched.yaml", "a.yaml"],
        None,
        &[("KFSCHED_POLICY", env_path.to_str().expect("utf8"))],
    );
    assert_eq!(r.code, 1, "-p wins over $KFSCHED_POLICY");
}

#[test]
fn directories_are_recursed_and_non_pipeline_yaml_is_skipped() {
    let mut files: Vec<(String, String)> = vec![("policy.yaml".into(), POLICY.into())];
    for i in 0..200 {
        files.push((
            format!("tree/d{}/job-{i}.yaml", i % 7),
            job(
                &format!("j{i}"),
                if i % 2 == 0 {
                    "pytorch/pytorch:2"
                } else {
                    "busybox"
                },
            ),
        ));
    }
    files.push((
        "tree/config.yml".into(),
        "kind: ConfigMap\ndata: {a: b}\n".into(),
    ));
    files.push((
        "tree/mixed.yaml".into(),
        format!(
            "{}---\nkind: ConfigMap\ndata: {{a: b}}\n",
            job("mixed", "busybox")
        ),
    ));
    files.push((
        "tree/.hidden/job.yaml".into(),
        job("hidden", "pytorch/pytorch:2"),
    ));
    files.push(("tree/notes.txt".into(), "not yaml".into()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let d = dir_with(&refs);
    let r = run_in(
        d.path(),
        &["rewrite", "-i", "-v", "-p", "policy.yaml", "tree"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("skipped: tree/config.yml: not a pipeline (ConfigMap)\n"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("skipped: tree/mixed.yaml: document 2: not a pipeline (ConfigMap)\n"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.matches("rewrote ").count(), 100, "{}", r.stderr);
    for i in 0..200 {
        let text = std::fs::read_to_string(d.path().join(format!("tree/d{}/job-{i}.yaml", i % 7)))
            .expect("read");
        assert_eq!(text.contains("nvidia.com/gpu"), i % 2 == 0, "job-{i}");
    }
    let hidden = std::fs::read_to_string(d.path().join("tree/.hidden/job.yaml")).expect("read");
    assert!(
        !hidden.contains("tolerations"),
        "hidden directories are skipped"
    );
}

#[test]
fn version_and_help() {
    let r = run_in(&root(), &["version"], None, &[]);
    assert_eq!(
        r.stdout_str(),
        format!("kfsched v{}\n", env!("CARGO_PKG_VERSION"))
    );
    let r = run_in(&root(), &["--help"], None, &[]);
    assert_eq!(r.code, 0);
    for cmd in [
        "rewrite",
        "diff",
        "explain",
        "validate",
        "schema",
        "check",
        "fn",
        "node",
        "completion",
        "version",
    ] {
        assert!(
            r.stdout_str().contains(&format!("  {cmd} ")),
            "help lists {cmd}:\n{}",
            r.stdout_str()
        );
    }
    let r = run_in(&root(), &["rewrite", "--nope"], None, &[]);
    assert_eq!(r.code, 2, "unknown flags are usage errors");
}

#[test]
fn explain_warns_that_run_time_values_cannot_be_checked_offline() {
    // SPEC §2: tolerationJson / nodeSelectorJson / nodeAffinityJson hold
    // pipeline parameters; explain says so, rewrite stays quiet about it.
    let cases = [
        (
            "testdata/golden/v2/preexisting_config/plain.yaml",
            "step-8",
            "tolerationJson",
        ),
        (
            "testdata/bad/input-v2-node-selector-json/input.yaml",
            "clean-rows",
            "nodeSelectorJson",
        ),
        (
            "testdata/bad/input-v2-node-affinity-json/input.yaml",
            "load-csv",
            "nodeAffinityJson",
        ),
    ];
    let policy = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: runtime}
spec:
  rules:
  - name: gpu
    match: {names: [\"*\"]}
    tolerations:
    - {key: gpu, operator: Exists, effect: NoSchedule}
";
    for (file, task, field) in cases {
        let input = std::fs::read_to_string(root().join(file)).expect("fixture");
        let d = dir_with(&[("policy.yaml", policy), ("p.yaml", &input)]);
        let want = format!(
            "      warning: {field} set from pipeline parameters at run time: kfsched cannot check it offline, and the driver may schedule this task differently from the result shown\n"
        );
        let r = run_in(
            d.path(),
            &["explain", "-p", "policy.yaml", "p.yaml"],
            None,
            &[],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let out = r.stdout_str();
        assert_eq!(out.matches("warning:").count(), 1, "{file}:\n{out}");
        let block = out
            .split("    task ")
            .find(|b| b.starts_with(&format!("\"{task}\"")))
            .expect("the task's block");
        assert!(block.contains(&want), "{file}:\n{block}");

        let r = run_in(
            d.path(),
            &["explain", "-o", "json", "-p", "policy.yaml", "p.yaml"],
            None,
            &[],
        );
        let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("json");
        let comps = j["files"][0]["documents"][0]["components"]
            .as_array()
            .expect("components");
        for c in comps {
            let warned = c["warnings"].as_array().expect("warnings");
            if c["component"] == format!("task \"{task}\"") {
                assert_eq!(warned.len(), 1, "{c}");
                assert!(warned[0].as_str().unwrap().starts_with(field), "{c}");
            } else {
                assert!(warned.is_empty(), "{c}");
            }
        }

        let r = run_in(
            d.path(),
            &["rewrite", "-p", "policy.yaml", "p.yaml"],
            None,
            &[],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(!r.stderr.contains(field), "{}", r.stderr);
    }
}

/// The text report shows the scheduling and the pod metadata the rules set;
/// KFP's own template labels and annotations (a kfp 1.8 template carries a
/// component_spec annotation of kilobytes) are counted, and `-o json` has
/// them whole.
#[test]
fn explain_text_shows_what_the_policy_sets_and_json_keeps_everything() {
    let g = root().join("testdata/golden/v1/reused_components");
    let policy = g.join("policy.yaml").display().to_string();
    let plain = g.join("plain.yaml").display().to_string();
    fn longest(j: &serde_json::Value) -> usize {
        match j {
            serde_json::Value::String(s) => s.len(),
            serde_json::Value::Array(a) => a.iter().map(longest).max().unwrap_or(0),
            serde_json::Value::Object(m) => m.values().map(longest).max().unwrap_or(0),
            _ => 0,
        }
    }
    let r = run_in(
        &root(),
        &["explain", "-o", "json", "-p", &policy, &plain],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("json");
    let long = longest(&j["files"][0]["documents"]);
    assert!(long > 1000, "JSON keeps the annotation whole ({long})");
    assert!(!r.stdout_str().contains(" characters)"));
    let r = run_in(&root(), &["explain", "-p", &policy, &plain], None, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = r.stdout_str();
    assert!(!out.contains("pipelines.kubeflow.org/"), "{out}");
    assert!(
        out.contains("      result:  {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b, us-east1-c]}]}]}}}, podLabels: {app.kubernetes.io/part-of: reused-components}, podAnnotations: {example.com/change-ticket: CHG-1234, example.com/approved-by: release-board}}  (7 more pod labels and annotations: -o json)\n"),
        "{out}"
    );
    assert!(out.lines().all(|l| l.len() < long), "{out}");
    // A long value a rule sets is cut to its start and its length.
    let d = tempfile::tempdir().expect("tempdir");
    let long_note = "n".repeat(200);
    let p = std::fs::read_to_string(&policy).expect("policy").replacen(
        "podAnnotations: {",
        &format!("podAnnotations: {{example.com/long: {long_note}, "),
        1,
    );
    std::fs::write(d.path().join("policy.yaml"), p).expect("write");
    let r = run_in(
        &root(),
        &[
            "explain",
            "-p",
            &d.path().join("policy.yaml").display().to_string(),
            &plain,
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout_str().contains(&format!(
            "example.com/long: {}... (200 characters)",
            &long_note[..60]
        )),
        "{}",
        r.stdout_str()
    );
}

/// A KFP `PipelineVersion` manifest (kfp's `kubernetes_manifest_format`,
/// here with the `Pipeline` document before it) is a KFP v2 pipeline: its
/// tasks are the IR file's components, matched as `kind: PipelineVersion`,
/// and its scheduling goes into `spec.platformSpec`, the same values the IR
/// file's platform document gets from the same rules.
#[test]
fn a_kfp_pipeline_version_is_rewritten_like_its_ir() {
    let g = root().join("testdata/golden/v2/reused_components");
    let d = tempfile::tempdir().expect("tempdir");
    // The IR file's rules without `kinds`, so that they select the same tasks.
    let policy = std::fs::read_to_string(g.join("policy.yaml"))
        .expect("policy")
        .replace("kinds: [\"PipelineSpec\"]", "names: [\"*\"]");
    std::fs::write(d.path().join("policy.yaml"), &policy).expect("write");
    std::fs::copy(g.join("manifest.yaml"), d.path().join("manifest.yaml")).expect("copy");
    std::fs::copy(g.join("plain.yaml"), d.path().join("ir.yaml")).expect("copy");
    let r = run_in(
        d.path(),
        &[
            "rewrite",
            "-i",
            "-p",
            "policy.yaml",
            "manifest.yaml",
            "ir.yaml",
        ],
        None,
        &[],
    );
    // The golden policy's negative cases are said out loud.
    assert_eq!(
        (
            r.code,
            unmatched_rules_in(&r.stderr),
            without_unmatched_rules(&r.stderr)
        ),
        (
            0,
            vec![
                "no-such-task".to_string(),
                "other-pipeline".into(),
                "only-argo".into()
            ],
            "2 files rewritten, 0 files left unchanged\n".to_string()
        )
    );
    let docs = |name: &str| {
        let text = std::fs::read_to_string(d.path().join(name)).expect("read");
        let tree = kfsched_yaml::Tree::parse(&text).expect("parses");
        tree.documents
            .iter()
            .map(|doc| kfsched_yaml::value::node_value(&tree, doc.root.expect("root")).to_json())
            .collect::<Vec<_>>()
    };
    let manifest = docs("manifest.yaml");
    let ir = docs("ir.yaml");
    assert_eq!(
        manifest[1]["spec"]["platformSpec"], ir[1],
        "the manifest's platformSpec is the IR file's platform document"
    );
    assert!(manifest[1]["spec"]["platformSpec"]["platforms"]["kubernetes"]["deploymentSpec"]
        ["executors"]
        .as_object()
        .is_some_and(|e| !e.is_empty()));
    let r = run_in(
        d.path(),
        &["explain", "-v", "-p", "policy.yaml", "manifest.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(
        out.contains(
            "  document 1: skipped: a KFP Pipeline, whose PipelineVersions hold the pipeline spec\n"
        ) && out.contains(
            "  document 2: KFP manifest PipelineVersion, pipeline \"reused-components\"\n"
        ),
        "{out}"
    );
}

/// `kubectl get all -o yaml` (real output) holds Pods and ReplicaSets that
/// controllers make from their own templates: a rule that selects one gets
/// a warning naming the controller to rewrite instead, and the object is
/// left alone; the Deployment and CronJob are rewritten.
#[test]
fn objects_a_controller_manages_are_skipped_with_a_warning() {
    let case = root().join("testdata/cases/kubectl-get-all");
    let input = std::fs::read_to_string(case.join("input.yaml")).expect("input");
    let policy = std::fs::read_to_string(case.join("policy.yaml")).expect("policy");
    let d = dir_with(&[("all.yaml", &input), ("policy.yaml", &policy)]);
    let r = run_in(
        d.path(),
        &["rewrite", "-i", "-p", "policy.yaml", "all.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "warning: all.yaml:120:7: items[1].metadata.ownerReferences[0]: Pod \"train-d674884cc-6fqcm\" (item 2): skipped: its controller, ReplicaSet \"train-d674884cc\", makes it from its own template: rewrite that (or its own controller) instead (rule \"training\" selects it)\n\
         warning: all.yaml:406:7: items[5].metadata.ownerReferences[0]: ReplicaSet \"train-d674884cc\" (item 6): skipped: its controller, Deployment \"train\", makes it from its own template: rewrite that (or its own controller) instead (rule \"training\" selects it)\n\
         1 file rewritten, 0 files left unchanged\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("all.yaml")).expect("read"),
        std::fs::read_to_string(case.join("expected.yaml")).expect("expected")
    );
}

/// A Workflow that a CronWorkflow made (Argo gives it a controller
/// reference, as `kubectl get wf -o yaml` shows) is left alone with the same
/// warning, naming the CronWorkflow, which is rewritten.
#[test]
fn a_workflow_a_cron_workflow_made_is_skipped_with_a_warning() {
    let input = "apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata:
  name: nightly
spec:
  schedule: \"0 2 * * *\"
  workflowSpec:
    entrypoint: train
    templates:
    - name: train
      container:
        image: pytorch/pytorch:2.3
---
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: nightly-1764640800
  labels:
    workflows.argoproj.io/cron-workflow: nightly
  ownerReferences:
  - apiVersion: argoproj.io/v1alpha1
    kind: CronWorkflow
    name: nightly
    uid: 0f6c1a52-7d1e-4b8e-9a55-2b1f3c4d5e6f
    controller: true
    blockOwnerDeletion: true
spec:
  entrypoint: train
  templates:
  - name: train
    container:
      image: pytorch/pytorch:2.3
";
    let policy = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: p}
spec:
  rules:
  - name: training
    match: {names: [train]}
    nodeSelector: {pool: gpu}
";
    let d = dir_with(&[("wf.yaml", input), ("policy.yaml", policy)]);
    let r = run_in(
        d.path(),
        &["rewrite", "-p", "policy.yaml", "wf.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "warning: wf.yaml:21:5: metadata.ownerReferences[0]: Workflow \"nightly-1764640800\": skipped: its controller, CronWorkflow \"nightly\", makes it from its own template: rewrite that (or its own controller) instead (rule \"training\" selects it)\n"
    );
    let out = String::from_utf8_lossy(&r.stdout);
    let (cron, wf) = out.split_once("\n---\n").expect("two documents");
    assert!(
        cron.ends_with("      nodeSelector:\n        pool: gpu"),
        "{cron}"
    );
    assert_eq!(wf, input.split_once("\n---\n").unwrap().1);
    let r = run_in(
        d.path(),
        &["explain", "-p", "policy.yaml", "wf.yaml"],
        None,
        &[],
    );
    assert!(
        String::from_utf8_lossy(&r.stdout)
            .contains("its controller, CronWorkflow \"nightly\", makes it"),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    // The Workflow alone: the rule selected it (the warning says so), so it
    // is not among the rules that matched nothing.
    std::fs::write(d.path().join("wf.yaml"), wf).expect("write");
    let r = run_in(
        d.path(),
        &["explain", "-p", "policy.yaml", "wf.yaml"],
        None,
        &[],
    );
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(out.contains("skipped: its controller"), "{out}");
    assert!(!out.contains("matched nothing"), "{out}");
    let r = run_in(
        d.path(),
        &["explain", "-o", "json", "-p", "policy.yaml", "wf.yaml"],
        None,
        &[],
    );
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("json");
    assert_eq!(j["unmatchedRules"], serde_json::json!([]));
    // In a `v1 List` (`kubectl get wf -o yaml`) the warning names the item.
    let mut list = String::from("apiVersion: v1\nkind: List\nitems:\n");
    for (i, line) in wf.lines().enumerate() {
        list.push_str(if i == 0 { "- " } else { "  " });
        list.push_str(line);
        list.push('\n');
    }
    std::fs::write(d.path().join("wf.yaml"), &list).expect("write");
    let r = run_in(
        d.path(),
        &["rewrite", "--check", "-p", "policy.yaml", "wf.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("items[0].metadata.ownerReferences[0]: Workflow \"nightly-1764640800\" (item 1): skipped: its controller, CronWorkflow \"nightly\""),
        "{}",
        r.stderr
    );
    let r = run_in(
        d.path(),
        &["explain", "-p", "policy.yaml", "wf.yaml"],
        None,
        &[],
    );
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(out.contains("  document 1: v1 List\n"), "{out}");
    assert!(!out.contains("matched nothing"), "{out}");
}

/// `kubectl get -o yaml` of several objects is a `v1 List`: its items are
/// rewritten like documents (the hand cases `kubectl-list-yaml` and
/// `kubectl-list-json` hold real kubectl output). A List of nothing
/// kfsched rewrites is skipped silently; an item kfsched does not rewrite
/// gets the warning a document would, naming the item; an item that
/// cannot be read is an error at its own line, and nothing is written.
#[test]
fn v1_list_items_are_read_like_documents() {
    let policy = std::fs::read_to_string(root().join("examples/.kfsched.yaml")).expect("policy");
    let manifest =
        std::fs::read_to_string(root().join("testdata/golden/v2/reused_components/manifest.yaml"))
            .expect("manifest fixture");
    // The manifest's two documents as the items of a List.
    let mut listed = String::from("apiVersion: v1\nkind: List\nitems:\n");
    for doc in manifest.split("\n---\n") {
        for (i, line) in doc.trim_end().lines().enumerate() {
            listed.push_str(if i == 0 { "- " } else { "  " });
            listed.push_str(line);
            listed.push('\n');
        }
    }
    let configmaps = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n";
    let aliased = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n  data: &spec {}\n- apiVersion: batch/v1\n  kind: Job\n  metadata: {name: train}\n  spec:\n    template: *spec\n";
    let d = dir_with(&[
        ("policy.yaml", &policy),
        ("versions.yaml", &listed),
        ("configmaps.yaml", configmaps),
        ("aliased.yaml", aliased),
    ]);
    let r = run_in(
        d.path(),
        &[
            "rewrite",
            "-i",
            "-p",
            "policy.yaml",
            "versions.yaml",
            "configmaps.yaml",
        ],
        None,
        &[],
    );
    // A List of ConfigMaps holds no workload: named, it is said so.
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            0,
            "warning: configmaps.yaml: holds no pipeline or workload (not a pipeline (v1 List)), so nothing in it can change; kfsched reads KFP v2 IR, KFP PipelineVersions, Argo workflows (KFP v1) and pod-creating workloads\n\
             1 file rewritten, 1 file left unchanged\n"
        )
    );
    // The PipelineVersion item is rewritten as a manifest in its own file
    // is; the Pipeline item before it is left alone.
    let value = |text: &str| {
        let tree = kfsched_yaml::Tree::parse(text).expect("parses");
        kfsched_yaml::value::node_value(&tree, tree.documents[0].root.expect("root")).to_json()
    };
    let before = value(&listed);
    let after = value(&std::fs::read_to_string(d.path().join("versions.yaml")).expect("read"));
    assert_eq!(after["items"][0], before["items"][0]);
    let executors = &after["items"][1]["spec"]["platformSpec"]["platforms"]["kubernetes"]["deploymentSpec"]
        ["executors"];
    assert!(
        executors["exec-publish-model"]["affinity"].is_null()
            && executors["exec-publish-model"]["nodeAffinity"].is_array(),
        "{executors}"
    );
    let r = run_in(
        d.path(),
        &["explain", "-v", "-p", "policy.yaml", "configmaps.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        "configmaps.yaml\n  document 1: skipped: not a pipeline (v1 List)\n\
         rules that matched nothing: training-on-experiment-nodes, publish-not-on-spot\n"
    );
    let r = run_in(
        d.path(),
        &["rewrite", "-i", "-p", "policy.yaml", "aliased.yaml"],
        None,
        &[],
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "error: aliased.yaml:12:15: items[1].spec.template: the pod template is a YAML alias (*name): kfsched does not read or edit through aliases, so it cannot schedule what is behind it; expand the alias in the file\n\
             error: nothing was written (1 problem in aliased.yaml)\n"
        )
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("aliased.yaml")).expect("read"),
        aliased
    );
}

/// A Helm chart's templates are not YAML until rendered: one in a
/// directory is skipped with a warning at its first Go template action, and
/// the pipelines beside it are still rewritten. A workflow with Argo's own
/// `{{inputs.parameters.x}}` tags and a real YAML error is still an error.
#[test]
fn helm_templates_are_skipped_with_a_warning_argo_tags_are_not_templates() {
    let helm = "{{- if .Values.enabled }}\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ include \"chart.fullname\" . }}\n{{- end }}\n";
    let argo = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {generateName: a-}\nspec:\n  entrypoint: main\n  templates:\n  - name: main\n    container: {image: pytorch/pytorch:2, args: [\"{{inputs.parameters.x}}\"]\n";
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("repo/chart/templates/job.yaml", helm),
        ("repo/jobs/a.yaml", &job("a", "pytorch/pytorch:2")),
    ]);
    let r = run_in(
        d.path(),
        &["rewrite", "-i", "-p", "policy.yaml", "repo"],
        None,
        &[],
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            0,
            "warning: repo/chart/templates/job.yaml:1:1: skipped: a Go (Helm) template, which is not YAML until rendered (`{{- if .Values.enabled }}`); rewrite the rendered output (`helm template ... | kubectl kfsched rewrite`), or exclude the templates from the run\n\
             warning: policy.yaml:11:20: spec.rules[1].match.names: rule \"never\" matched no component (its match.names matches none of their names); `kubectl kfsched explain` lists every component with the names a rule can match\n\
             1 file rewritten, 1 file left unchanged\n"
        )
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("repo/jobs/a.yaml")).expect("read"),
        format!("{}{TOLERATION}", job("a", "pytorch/pytorch:2"))
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("repo/chart/templates/job.yaml")).expect("read"),
        helm
    );
    std::fs::write(d.path().join("argo.yaml"), argo).expect("write");
    let r = run_in(
        d.path(),
        &["diff", "-p", "policy.yaml", "argo.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("error: argo.yaml:9:1: "),
        "{}",
        r.stderr
    );
}

/// kubectl's conventions: `-f/--filename` beside positional paths,
/// `validate FILE`, `--version`, `explain -o yaml`; and no silent wait for
/// a terminal when no input is named.
#[test]
fn kubectl_style_flags_and_no_silent_wait_on_a_terminal() {
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("a.yaml", &job("a", "pytorch/pytorch:2")),
        ("more/b.yaml", &job("b", "pytorch/pytorch:2")),
    ]);
    let r = run_in(
        d.path(),
        &["diff", "-p", "policy.yaml", "a.yaml", "-f", "more"],
        None,
        &[],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        r.stdout_str()
            .lines()
            .filter(|l| l.starts_with("+++ "))
            .collect::<Vec<_>>(),
        ["+++ b/a.yaml", "+++ b/more/b.yaml"]
    );
    let r = run_in(d.path(), &["validate", "policy.yaml"], None, &[]);
    assert_eq!(
        (r.code, r.stdout_str().as_str()),
        (
            0,
            "policy.yaml: valid SchedulingPolicy \"cli\": 2 rules, 0 node pools\n"
        )
    );
    let r = run_in(
        d.path(),
        &["validate", "-p", "a.yaml", "policy.yaml"],
        None,
        &[],
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "error: two policies: policy.yaml and -p a.yaml; give one\n"
        )
    );
    let version = run_in(d.path(), &["version"], None, &[]);
    let flag = run_in(d.path(), &["--version"], None, &[]);
    assert_eq!((flag.code, flag.stdout_str()), (0, version.stdout_str()));
    assert!(
        flag.stdout_str().starts_with("kfsched v"),
        "{}",
        flag.stdout_str()
    );

    let explain = |format: &str| {
        let r = run_in(
            d.path(),
            &["explain", "-p", "policy.yaml", "-o", format, "a.yaml"],
            None,
            &[],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.stdout_str()
    };
    let json: serde_json::Value = serde_json::from_str(&explain("json")).expect("json");
    let yaml = explain("yaml");
    let tree = kfsched_yaml::Tree::parse(&yaml).expect("the YAML parses");
    let root = tree.documents[0].root.expect("a document");
    assert_eq!(
        kfsched_yaml::value::node_value(&tree, root).to_json(),
        json,
        "-o yaml says what -o json says:\n{yaml}"
    );

    // A terminal on stdin (through script(1)'s pseudo-terminal) and no
    // input named: an error at once, not a silent wait.
    let cmd = format!("{} explain -p policy.yaml", crate::support::bin());
    let out = std::process::Command::new("timeout")
        .args(["20", "script", "-qec", &cmd, "/dev/null"])
        .current_dir(d.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script(1) runs");
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).replace('\r', "")
        ),
        (
            Some(2),
            "error: no input: give pipeline files or directories (or -f PATH), or pipe YAML into stdin; `-` reads the terminal\n".to_string()
        )
    );
}

/// No kubeconfig anywhere: one line saying where one is looked for. `-p`
/// belongs to the commands that read a policy: given before a command that
/// reads none, it is an error, not silently ignored.
#[test]
fn no_kubeconfig_is_one_line_and_p_is_refused_where_no_policy_is_read() {
    let d = dir_with(&[("policy.yaml", POLICY)]);
    let r = run_in(d.path(), &["node", "cordon", "worker-1"], None, &[]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "error: no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG or create ~/.kube/config\n"
        )
    );
    let r = run_in(
        d.path(),
        &["-p", "policy.yaml", "node", "cordon", "worker-1"],
        None,
        &[],
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "error: -p/--policy: `node cordon` reads no policy (rewrite, diff, explain, check, audit, validate, init, fn, export admission, node apply and node diff do)\n"
        )
    );
    let r = run_in(
        d.path(),
        &["node", "cordon", "-p", "policy.yaml", "worker-1"],
        None,
        &[],
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .starts_with("error: unexpected argument '-p' found"),
        "{}",
        r.stderr
    );
}

/// `explain` is the tool for finding out why: a file whose rules cannot be
/// written (pod affinity on a KFP v2 task) is still explained, with the
/// error on stderr and exit 2, and so is every other file; an unreadable
/// file is an error beside the others' reports.
#[test]
fn explain_shows_the_components_of_a_file_whose_rules_cannot_be_written() {
    let case = root().join("testdata/bad/input-v2-pod-affinity");
    let input = std::fs::read_to_string(case.join("input.yaml")).expect("input");
    let policy = std::fs::read_to_string(case.join("policy.yaml")).expect("policy");
    let d = dir_with(&[
        ("policy.yaml", &policy),
        ("v2.yaml", &input),
        ("broken.yaml", "a: [\n"),
        ("job.yaml", &job("summarize", "python:3")),
    ]);
    let r = run_in(
        d.path(),
        &[
            "explain",
            "-p",
            "policy.yaml",
            "v2.yaml",
            "broken.yaml",
            "job.yaml",
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 2);
    let stderr: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(stderr.len(), 2, "{}", r.stderr);
    assert!(
        stderr[0].starts_with("error: policy.yaml:9:7: spec.rules[0].affinity: rule \"spread\" selects task \"summarize\" in v2.yaml"),
        "{}",
        r.stderr
    );
    assert!(
        stderr[1].starts_with("error: broken.yaml:2:1: "),
        "{}",
        r.stderr
    );
    let out = r.stdout_str();
    assert!(
        out.contains("    task \"summarize\"\n      names:   summarize, comp-summarize, exec-summarize\n      images:  python:3.11-slim\n      matched  spread\n"),
        "{out}"
    );
    assert!(out.contains("job.yaml  (would change)\n"), "{out}");
}
