//! What programs read (the Python API above all): `KFSCHED_DIAGNOSTICS=json`
//! turns every error, warning and note on stderr into one JSON object per
//! line that says exactly what the text line says, and `rewrite -o json`
//! and `validate -o json` report on stdout what the text forms say.

use serde_json::Value;

use crate::support::{Run, run_in};

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: machine}
spec:
  nodePools:
  - name: gpu
    labels: {pool: gpu}
    taints: [{key: gpu, effect: NoSchedule}]
  rules:
  - name: train
    match: {images: [\"pytorch/*\"]}
    pool: gpu
  - name: arch
    nodeSelector: {beta.kubernetes.io/arch: amd64}
";

const BAD_POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: bad}
spec:
  rules:
  - name: a
    tolerations: [{key: k, operator: Bad}]
    nodeSelectr: {a: b}
";

fn job(name: &str, image: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: {image}\n"
    )
}

fn setup() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    for (name, text) in [
        ("policy.yaml", POLICY.to_string()),
        ("bad-policy.yaml", BAD_POLICY.to_string()),
        ("jobs/train.yaml", job("train", "pytorch/pytorch:2.3")),
        ("jobs/serve.yaml", job("serve", "nginx")),
        (
            "broken/bad.yaml",
            "apiVersion: v1\nkind: Pod\nspec: [\n".into(),
        ),
        ("notes.txt", "not YAML\n".into()),
    ] {
        let p = d.path().join(name);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    d
}

fn json_lines(r: &Run) -> Vec<Value> {
    r.stderr
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("stderr line is not JSON ({e}): {l:?}\n{}", r.stderr))
        })
        .collect()
}

/// A JSON diagnostic as the text line says it.
fn as_text(d: &Value) -> String {
    let keys = [
        "level", "category", "file", "line", "column", "path", "message",
    ];
    let obj = d.as_object().expect("an object");
    assert_eq!(
        obj.keys().map(String::as_str).collect::<Vec<_>>(),
        keys,
        "every key, in order: {d}"
    );
    let level = d["level"].as_str().expect("level");
    assert!(
        ["error", "warning", "info"].contains(&level),
        "level {level}"
    );
    let category = d["category"].as_str().expect("category");
    assert!(
        ["policy", "input", "usage", "cluster"].contains(&category),
        "category {category}"
    );
    let mut s = match level {
        "error" => "error: ".to_string(),
        "warning" => "warning: ".to_string(),
        _ => String::new(),
    };
    if let Some(f) = d["file"].as_str() {
        s.push_str(f);
        if let (Some(l), Some(c)) = (d["line"].as_u64(), d["column"].as_u64()) {
            s.push_str(&format!(":{l}:{c}"));
        } else {
            assert!(d["line"].is_null() && d["column"].is_null(), "{d}");
        }
        if let Some(p) = d["path"].as_str() {
            s.push_str(": ");
            s.push_str(p);
        }
        s.push_str(": ");
    } else {
        assert!(d["line"].is_null() && d["path"].is_null(), "{d}");
    }
    s.push_str(d["message"].as_str().expect("message"));
    s
}

const JSON: &[(&str, &str)] = &[("KFSCHED_DIAGNOSTICS", "json")];

#[test]
fn json_diagnostics_say_what_the_text_says_with_the_same_exit_and_stdout() {
    let d = setup();
    let cases: &[(&[&str], i32, &[&str])] = &[
        // (args, exit, the categories of the errors)
        (&["validate", "bad-policy.yaml"], 2, &["policy"]),
        (
            &["rewrite", "--check", "-p", "bad-policy.yaml", "jobs"],
            2,
            &["policy"],
        ),
        (
            &["rewrite", "--check", "-p", "policy.yaml", "broken", "jobs"],
            2,
            &["input"],
        ),
        (
            &["rewrite", "-p", "policy.yaml", "missing.yaml"],
            2,
            &["input"],
        ),
        (
            &["explain", "-p", "policy.yaml", "--rule", "tran", "jobs"],
            2,
            &["usage"],
        ),
        (
            &["rewrite", "-i", "--check", "-p", "policy.yaml", "jobs"],
            2,
            &["usage"],
        ),
        (&["rewrite", "-p", "nowhere.yaml", "jobs"], 2, &["policy"]),
        // Warnings and notes, with the command's own exit code.
        (
            &[
                "rewrite",
                "-v",
                "--check",
                "-p",
                "policy.yaml",
                "jobs",
                "notes.txt",
            ],
            1,
            &[],
        ),
        (&["validate", "policy.yaml"], 0, &[]),
        (
            &["export", "admission", "-p", "policy.yaml", "jobs"],
            0,
            &[],
        ),
        (
            &["export", "admission", "-p", "policy.yaml", "broken"],
            2,
            &["input"],
        ),
    ];
    for (args, code, categories) in cases {
        let text = run_in(d.path(), args, None, &[]);
        let json = run_in(d.path(), args, None, JSON);
        assert_eq!(text.code, *code, "{args:?}: {}", text.stderr);
        assert_eq!(json.code, *code, "{args:?}: {}", json.stderr);
        assert_eq!(json.stdout, text.stdout, "{args:?}: stdout");
        let lines = json_lines(&json);
        assert!(!lines.is_empty(), "{args:?}: nothing on stderr");
        let rendered: String = lines.iter().map(|l| format!("{}\n", as_text(l))).collect();
        assert_eq!(rendered, text.stderr, "{args:?}");
        let mut got: Vec<&str> = lines
            .iter()
            .filter(|l| l["level"] == "error")
            .map(|l| l["category"].as_str().unwrap_or_default())
            .collect();
        got.dedup();
        assert_eq!(got, *categories, "{args:?}: {}", json.stderr);
    }
}

#[test]
fn json_diagnostics_carry_the_location_and_the_yaml_path() {
    let d = setup();
    let r = run_in(d.path(), &["validate", "bad-policy.yaml"], None, JSON);
    assert_eq!(r.code, 2);
    let lines = json_lines(&r);
    assert_eq!(
        lines[0],
        serde_json::json!({
            "level": "error", "category": "policy", "file": "bad-policy.yaml",
            "line": 7, "column": 38, "path": "spec.rules[0].tolerations[0].operator",
            "message": "Unsupported value: \"Bad\": supported values: \"Equal\", \"Exists\"",
        })
    );
    assert_eq!(lines[1]["path"], "spec.rules[0].nodeSelectr");
    assert_eq!(
        (&lines[1]["line"], &lines[1]["column"]),
        (&8.into(), &5.into())
    );
    // The policy's warning, with its place.
    let r = run_in(d.path(), &["validate", "policy.yaml"], None, JSON);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let w = &json_lines(&r)[0];
    assert_eq!(
        (&w["level"], &w["category"], &w["line"], &w["path"]),
        (
            &"warning".into(),
            &"policy".into(),
            &14.into(),
            &"spec.rules[1].nodeSelector[\"beta.kubernetes.io/arch\"]".into()
        ),
        "{w}"
    );
}

#[test]
fn usage_errors_of_the_parser_are_json_too_and_an_unknown_format_is_refused() {
    let d = setup();
    let r = run_in(d.path(), &["rewrite", "--bogus"], None, JSON);
    assert_eq!(r.code, 2);
    let lines = json_lines(&r);
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    assert_eq!(
        (&lines[0]["level"], &lines[0]["category"]),
        (&"error".into(), &"usage".into())
    );
    assert!(
        lines[0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("unexpected argument '--bogus' found")),
        "{}",
        r.stderr
    );
    // Help and the version are output, not diagnostics.
    let r = run_in(d.path(), &["version"], None, JSON);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    let r = run_in(
        d.path(),
        &["version"],
        None,
        &[("KFSCHED_DIAGNOSTICS", "xml")],
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: KFSCHED_DIAGNOSTICS=xml: expected `text` (the default) or `json`\n"
    );
    assert!(r.stdout.is_empty());
    let r = run_in(
        d.path(),
        &["version"],
        None,
        &[("KFSCHED_DIAGNOSTICS", "text")],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn rewrite_reports_every_file_and_its_diff_as_json() {
    let d = setup();
    let before = crate::support::snapshot(d.path());
    let diff = run_in(
        d.path(),
        &["diff", "--color", "always", "-p", "policy.yaml", "jobs"],
        None,
        &[],
    );
    assert_eq!(diff.code, 1, "{}", diff.stderr);
    let plain_diff = run_in(d.path(), &["diff", "-p", "policy.yaml", "jobs"], None, &[]);

    let check = run_in(
        d.path(),
        &[
            "rewrite",
            "--check",
            "-o",
            "json",
            "--color",
            "always",
            "-p",
            "policy.yaml",
            "jobs",
        ],
        None,
        &[],
    );
    assert_eq!(
        check.code, 1,
        "--check exits 1 with -o json too: {}",
        check.stderr
    );
    assert_eq!(crate::support::snapshot(d.path()), before, "--check wrote");
    let report: Value = serde_json::from_slice(&check.stdout).expect("JSON on stdout");
    let files = report["files"].as_array().expect("files");
    assert_eq!(
        files
            .iter()
            .map(|f| (
                f["file"].as_str().unwrap_or_default(),
                f["changed"].as_bool()
            ))
            .collect::<Vec<_>>(),
        [
            ("jobs/serve.yaml", Some(true)),
            ("jobs/train.yaml", Some(true))
        ],
    );
    // The diffs, uncoloured, are the diff command's.
    let joined: String = files.iter().filter_map(|f| f["diff"].as_str()).collect();
    assert_eq!(joined, plain_diff.stdout_str());
    assert!(!joined.contains('\x1b'));
    assert!(
        diff.stdout_str().contains('\x1b'),
        "the comparison is not vacuous"
    );

    // In place: the files hold what `rewrite` writes to stdout.
    let want =
        |f: &str| run_in(d.path(), &["rewrite", "-p", "policy.yaml", f], None, &[]).stdout_str();
    let (train, serve) = (want("jobs/train.yaml"), want("jobs/serve.yaml"));
    let done = run_in(
        d.path(),
        &["rewrite", "-i", "-o", "json", "-p", "policy.yaml", "jobs"],
        None,
        &[],
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    let report: Value = serde_json::from_slice(&done.stdout).expect("JSON on stdout");
    assert_eq!(report["files"].as_array().map(Vec::len), Some(2));
    let read = |f: &str| std::fs::read_to_string(d.path().join(f)).expect("read");
    assert_eq!(
        (read("jobs/train.yaml"), read("jobs/serve.yaml")),
        (train, serve)
    );
    // Again: nothing changes, and the report says so.
    let again = run_in(
        d.path(),
        &[
            "rewrite",
            "--check",
            "-o",
            "json",
            "-p",
            "policy.yaml",
            "jobs",
        ],
        None,
        &[],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    let report: Value = serde_json::from_slice(&again.stdout).expect("JSON on stdout");
    assert!(
        report["files"].as_array().is_some_and(|fs| fs
            .iter()
            .all(|f| f["changed"] == false && f["diff"].is_null())),
        "{report}"
    );
    // -o without --in-place, --check or --diff is refused: the output is the file.
    let r = run_in(
        d.path(),
        &[
            "rewrite",
            "-o",
            "json",
            "-p",
            "policy.yaml",
            "jobs/train.yaml",
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 2);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr
            .contains("error: -o reports what --in-place, --check or --diff did"),
        "{}",
        r.stderr
    );
}

#[test]
fn validate_reports_the_policy_as_json() {
    let d = setup();
    let r = run_in(
        d.path(),
        &["validate", "-o", "json", "policy.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: Value = serde_json::from_slice(&r.stdout).expect("JSON");
    assert_eq!(
        j,
        serde_json::json!({"file": "policy.yaml", "name": "machine", "rules": ["train", "arch"], "pools": ["gpu"]})
    );
    let r = run_in(
        d.path(),
        &["validate", "-o", "json", "bad-policy.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stdout.is_empty(),
        "nothing on stdout for an invalid policy"
    );
}
