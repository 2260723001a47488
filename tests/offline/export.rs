//! `export admission` offline: the bytes it writes (golden cases under
//! `testdata/admission/`, blessed with `KFSCHED_BLESS`), what it says of
//! each rule, what it refuses, and the shapes of the JSON Patches it emits.
//! What the API server does with the export is in `tests/admission/`.

use std::path::Path;

use crate::support::{rel, root, run_in, show_diff};

/// One case: `policy.yaml`, optional `args` (one argument per line, paths
/// relative to the repository), the expected `export.yaml`, `stderr.txt`
/// and `code` (default 0).
fn run_case(dir: &Path) {
    let policy = dir.join("policy.yaml");
    let mut args: Vec<String> = vec![
        "export".into(),
        "admission".into(),
        "-p".into(),
        rel(&policy),
    ];
    if let Ok(extra) = std::fs::read_to_string(dir.join("args")) {
        args.extend(extra.lines().filter(|l| !l.is_empty()).map(str::to_string));
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let first = run_in(&root(), &argv, None, &[]);
    let again = run_in(&root(), &argv, None, &[]);
    assert_eq!(
        first.stdout,
        again.stdout,
        "{}: the export is not deterministic",
        rel(dir)
    );
    let code: i32 = std::fs::read_to_string(dir.join("code"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    assert_eq!(
        first.code,
        code,
        "{}: exit code; stderr:\n{}",
        rel(dir),
        first.stderr
    );
    let stdout = first.stdout_str();
    if code != 0 {
        assert!(stdout.is_empty(), "{}: wrote output and failed", rel(dir));
    }
    for (file, got) in [("export.yaml", &stdout), ("stderr.txt", &first.stderr)] {
        let path = dir.join(file);
        if file == "export.yaml" && code != 0 {
            continue;
        }
        if std::env::var_os("KFSCHED_BLESS").is_some() {
            std::fs::write(&path, got).expect("bless");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run with KFSCHED_BLESS=1 and review it",
                rel(&path)
            )
        });
        assert!(
            want == *got,
            "{} differs:\n{}",
            rel(&path),
            show_diff(&want, got)
        );
    }
}

#[test]
fn golden_exports() {
    let dirs = crate::support::case_dirs("testdata/admission", "policy.yaml");
    assert!(dirs.len() >= 5, "the admission cases are missing");
    for d in dirs {
        run_case(&d);
    }
}

/// The YAML stream and the JSON List hold the same objects, which are the
/// two admission kinds, paired with their bindings.
#[test]
fn yaml_and_json_say_the_same() {
    let p = "testdata/admission/drivers-and-pools/policy.yaml";
    let y = run_in(&root(), &["export", "admission", "-p", p], None, &[]);
    let j = run_in(
        &root(),
        &["export", "admission", "-p", p, "-o", "json"],
        None,
        &[],
    );
    assert_eq!((y.code, j.code), (0, 0), "{}{}", y.stderr, j.stderr);
    let list: serde_json::Value = serde_json::from_slice(&j.stdout).expect("JSON");
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().expect("items");
    let text = y.stdout_str();
    let tree = kfsched_yaml::Tree::parse(&text).expect("the YAML parses");
    let docs: Vec<serde_json::Value> = tree
        .documents
        .iter()
        .map(|d| kfsched_yaml::value::node_value(&tree, d.root.expect("a document")).to_json())
        .collect();
    assert_eq!(&docs, items);
    let kinds: Vec<&str> = items
        .iter()
        .map(|i| i["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        kinds,
        [
            "MutatingAdmissionPolicy",
            "MutatingAdmissionPolicyBinding",
            "MutatingAdmissionPolicy",
            "MutatingAdmissionPolicyBinding"
        ]
    );
    assert_eq!(items[0]["metadata"]["name"], "kfsched.platform");
    assert_eq!(items[1]["spec"]["policyName"], "kfsched.platform");
    assert_eq!(items[2]["metadata"]["name"], "kfsched.platform.nodes");
    // The pod policy is one mutation, run once: every mutation costs the
    // API server whole passes over the pod.
    assert_eq!(items[0]["spec"]["reinvocationPolicy"], "Never");
    assert_eq!(
        items[0]["spec"]["mutations"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(items[2]["spec"]["reinvocationPolicy"], "IfNeeded");
    for policy in [&items[0], &items[2]] {
        assert_eq!(policy["spec"]["failurePolicy"], "Fail");
        assert_eq!(
            policy["spec"]["matchConstraints"]["resourceRules"][0]["operations"],
            serde_json::json!(["CREATE"])
        );
    }
}

/// Every `value:` of every JSON Patch the generator writes is a string, a
/// string map, `[]`, one Object initializer or an existing element: never
/// a list of Object initializers, which crashes kube-apiserver 1.36.3.
#[test]
fn no_patch_value_is_a_list_of_object_initializers() {
    let mut policies: Vec<String> = crate::support::case_dirs("testdata/admission", "policy.yaml")
        .into_iter()
        .map(|d| rel(&d.join("policy.yaml")))
        .collect();
    policies.extend(
        crate::support::golden_dirs()
            .into_iter()
            .map(|d| rel(&d.join("policy.yaml"))),
    );
    let mut checked = 0;
    for p in &policies {
        let r = run_in(
            &root(),
            &["export", "admission", "-p", p, "-o", "json"],
            None,
            &[],
        );
        // Policies with rules admission cannot express are exported without them.
        let r = if r.code == 0 {
            r
        } else {
            let skip = refused(&r.stderr);
            let mut args = vec!["export", "admission", "-p", p.as_str(), "-o", "json"];
            for s in &skip {
                args.push("--skip-rule");
                args.push(s);
            }
            run_in(&root(), &args, None, &[])
        };
        if r.code != 0 {
            continue;
        }
        let list: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON");
        for item in list["items"].as_array().into_iter().flatten() {
            for m in item["spec"]["mutations"].as_array().into_iter().flatten() {
                let e = m["jsonPatch"]["expression"]
                    .as_str()
                    .expect("an expression");
                for (i, _) in e.match_indices("value: ") {
                    let rest = &e[i + "value: ".len()..];
                    let ok = rest.starts_with("[]")
                        || rest.starts_with("Object.")
                        || rest.starts_with('\'')
                        || rest.starts_with("{'")
                        || rest.starts_with("x}")
                        || rest.starts_with("v}")
                        || rest.starts_with("p.value}");
                    assert!(
                        ok,
                        "{p}: a patch value of a shape not known to be safe: {}",
                        &rest[..rest.len().min(80)]
                    );
                    checked += 1;
                }
            }
            // The pod policy's operations are data computed in variables:
            // no Object initializer at all.
            if item["metadata"]["name"]
                .as_str()
                .is_some_and(|n| !n.ends_with(".nodes"))
            {
                for v in item["spec"]["variables"].as_array().into_iter().flatten() {
                    let e = v["expression"].as_str().expect("an expression");
                    assert!(!e.contains("Object."), "{p}: an Object initializer in {e}");
                    checked += e.matches("'value': dyn(").count();
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} patch values checked");
}

/// The rule names a refusal names (`rule "x" cannot be enforced`).
fn refused(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| {
            let i = l.find("rule \"")? + 6;
            let j = l[i..].find('"')?;
            l.contains("cannot be enforced")
                .then(|| l[i..i + j].to_string())
        })
        .collect()
}

#[test]
fn skip_rule_leaves_out_what_admission_cannot_express() {
    let p = "testdata/admission/cannot-express/policy.yaml";
    let r = run_in(
        &root(),
        &[
            "export",
            "admission",
            "-p",
            p,
            "--skip-rule",
            "deployments",
            "--skip-rule",
            "cron-only",
            "--skip-rule",
            "reads-node-name",
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("rule \"deployments\": left out (--skip-rule)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("rule \"fine\": exact (KFP v1 and Argo workflow pods)"),
        "{}",
        r.stderr
    );
    let unknown = run_in(
        &root(),
        &["export", "admission", "-p", p, "--skip-rule", "deployment"],
        None,
        &[],
    );
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("did you mean \"deployments\"?"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn bad_flags_are_usage_errors_and_write_nothing() {
    let p = "testdata/admission/seed/policy.yaml";
    for args in [
        vec!["--namespace-selector", "team in ("],
        vec!["--namespace-selector", "size>3"],
        vec!["--name-prefix", "Not_A_Name."],
        vec!["--failure-policy", "fail"],
    ] {
        let mut all = vec!["export", "admission", "-p", p];
        all.extend(args.iter());
        let r = run_in(&root(), &all, None, &[]);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?} wrote output");
    }
}

/// A rule whose podRoles reach only drivers or importers acts at admission
/// only: matching nothing in files is not a mistake, so neither `rewrite`
/// nor `--strict` says so; `explain` says where it acts.
#[test]
fn admission_only_rules_are_not_rules_that_match_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: p}\nspec:\n  rules:\n  - name: drivers\n    match: {podRoles: [driver]}\n    nodeSelector: {pool: system}\n",
    )
    .expect("write");
    let file = root().join("testdata/golden/v2/control_flow/plain.yaml");
    let (p, f) = (policy.display().to_string(), file.display().to_string());
    let r = run_in(
        &root(),
        &["rewrite", "--check", "--strict", "-p", &p, &f],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("matched no component"), "{}", r.stderr);
    let e = run_in(&root(), &["explain", "-p", &p, &f], None, &[]);
    assert!(
        e.stdout_str()
            .contains("match.podRoles [\"driver\"] does not reach executors"),
        "{}",
        e.stdout_str()
    );
}

/// `validate` refuses a rule name that `export admission` cannot list in
/// its annotation, at the same place and in the same words, so a CI that
/// runs `validate` catches what the export would refuse.
#[test]
fn validate_refuses_what_the_export_refuses_in_the_same_words() {
    let p = "testdata/bad/policy-rule-name-separator/policy.yaml";
    let validate = run_in(&root(), &["validate", "-p", p], None, &[]);
    let export = run_in(&root(), &["export", "admission", "-p", p], None, &[]);
    assert_eq!((validate.code, export.code), (2, 2));
    let first = |stderr: &str| stderr.lines().next().unwrap_or("").to_string();
    let line = first(&validate.stderr);
    assert_eq!(
        line,
        format!(
            "error: {p}:7:11: spec.rules[0].name: rule \"team-a:gpu-train\": admission lists rule names in the kfsched.dev/admitted annotation, separated by `,`, `;` and `:`; rename the rule without them"
        )
    );
    assert_eq!(first(&export.stderr), line, "{}", export.stderr);
    assert!(export.stdout.is_empty());
}

/// Without pipeline files the export reads no stdin, as its `--help` says:
/// a pipeline piped in is not read (the rules stay approximate), and `-`
/// reads it.
#[test]
fn the_export_reads_stdin_only_when_told() {
    let p = "testdata/golden/v2/control_flow/policy.yaml";
    let pipeline =
        std::fs::read(root().join("testdata/golden/v2/control_flow/plain.yaml")).expect("fixture");
    let help = run_in(&root(), &["export", "admission", "--help"], None, &[]);
    assert!(
        help.stdout_str()
            .contains("stdin is read only when - is given"),
        "{}",
        help.stdout_str()
    );
    let piped = run_in(
        &root(),
        &["export", "admission", "-p", p],
        Some(&pipeline),
        &[],
    );
    let named = run_in(
        &root(),
        &["export", "admission", "-p", p, "-"],
        Some(&pipeline),
        &[],
    );
    let without = run_in(&root(), &["export", "admission", "-p", p], None, &[]);
    assert_eq!((piped.code, named.code, without.code), (0, 0, 0));
    assert_eq!(piped.stdout, without.stdout, "stdin was read");
    assert_ne!(named.stdout, without.stdout, "`-` did not read stdin");
    assert!(
        named.stderr.contains("exact for the tasks of"),
        "{}",
        named.stderr
    );
}

/// With pipeline files, a rule that selects nothing in them is said, as
/// `rewrite` says it, and `--strict` makes it an error with nothing
/// written; each rule's statement stays one short line however many
/// pipelines the files hold, and `-v` names them.
#[test]
fn the_export_says_what_does_nothing_in_the_files_in_short() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: p}\nspec:\n  rules:\n  - name: everything\n    tolerations: [{key: k, operator: Exists, effect: NoSchedule}]\n  - name: nothing\n    match: {names: [no-such-task]}\n    tolerations: [{key: k, operator: Exists, effect: NoSchedule}]\n",
    )
    .expect("write");
    let p = policy.display().to_string();
    let files: Vec<String> = crate::support::case_dirs("testdata/golden/v2", "plain.yaml")
        .iter()
        .map(|d| rel(&d.join("plain.yaml")))
        .collect();
    assert!(files.len() > 3, "{files:?}");
    let mut args = vec!["export", "admission", "-p", p.as_str()];
    args.extend(files.iter().map(String::as_str));
    let r = run_in(&root(), &args, None, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.is_empty());
    let warning = "spec.rules[1].match.names: rule \"nothing\" matched no component";
    assert!(
        r.stderr
            .lines()
            .any(|l| l.starts_with("warning: ") && l.contains(warning)),
        "{}",
        r.stderr
    );
    let statement = r
        .stderr
        .lines()
        .find(|l| l.starts_with("rule \"nothing\": exact for the tasks of "))
        .unwrap_or_else(|| panic!("{}", r.stderr));
    assert!(
        statement.contains(" pipelines (0 tasks selected; -v lists the pipelines)"),
        "{statement}"
    );
    assert!(statement.len() < 500, "{statement}");

    args.push("-v");
    let verbose = run_in(&root(), &args, None, &[]);
    let listed = verbose
        .stderr
        .lines()
        .find(|l| l.starts_with("rule \"nothing\": exact for the tasks of "))
        .unwrap_or_else(|| panic!("{}", verbose.stderr));
    assert!(
        listed.contains(", control-flow, ") && !listed.contains("-v lists"),
        "{listed}"
    );

    args.pop();
    args.push("--strict");
    let strict = run_in(&root(), &args, None, &[]);
    assert_eq!(strict.code, 2, "{}", strict.stderr);
    assert!(strict.stdout.is_empty(), "--strict wrote the export");
    assert!(
        strict
            .stderr
            .lines()
            .any(|l| l.starts_with("error: ") && l.contains(warning)),
        "{}",
        strict.stderr
    );
    assert!(
        strict
            .stderr
            .ends_with("error: nothing was exported (--strict: 1 problem above)\n"),
        "{}",
        strict.stderr
    );
}

/// What the API server would refuse is refused before anything is written,
/// naming the rule and the limit: a CEL expression over 100,000 code
/// points, an object over etcd's 1.5 MiB.
#[test]
fn the_export_checks_the_api_servers_limits_before_writing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("policy.yaml");
    let rule = |name: &str, size: usize| {
        format!(
            "  - name: {name}\n    match: {{names: [train]}}\n    podAnnotations: {{note: '{}'}}\n",
            "x".repeat(size)
        )
    };
    let head = "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: p}\nspec:\n  rules:\n";
    // One rule whose mutation is over the expression limit.
    std::fs::write(
        &policy,
        format!("{head}{}{}", rule("small", 10), rule("huge", 120_000)),
    )
    .expect("write");
    let p = policy.display().to_string();
    let r = run_in(&root(), &["export", "admission", "-p", &p], None, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "something was written");
    let line = r
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("{}", r.stderr));
    assert!(
        line.contains("policy.yaml:9:5: "),
        "located at the rule: {line}"
    );
    assert!(
        line.contains("spec.rules[1]: rule \"huge\" cannot be exported: its variable r1_ops is "),
        "{line}"
    );
    assert!(
        line.contains("over the API server's limit of 100000 per expression"),
        "{line}"
    );
    assert!(line.contains("--skip-rule huge"), "{line}");
    assert_eq!(
        r.stderr.matches("cannot be exported").count(),
        1,
        "{}",
        r.stderr
    );

    // Sixty rules each within the limit, together over what etcd stores.
    let rules: String = (0..60).map(|i| rule(&format!("r{i}"), 30_000)).collect();
    std::fs::write(&policy, format!("{head}{rules}")).expect("write");
    let r = run_in(&root(), &["export", "admission", "-p", &p], None, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "something was written");
    assert!(
        r.stderr
            .contains("MutatingAdmissionPolicy kfsched.p would be ")
            && r.stderr
                .contains(" bytes, over the 1572864 bytes the API server stores in one object"),
        "{}",
        r.stderr
    );
}
