//! Two readings of one pod held equal: the exported policy's CEL and
//! `explain`'s Rust (`format::pipeline_pod`) say the same role, task path,
//! kind, names, images and pipelines of every pod the admission tests make,
//! and select the same rules of each fixture's policy.
//!
//! The CEL's reading is made visible by a policy built from the export's
//! own variables whose one mutation writes them into an annotation; the
//! pods are admitted through it (`dryRun=All`) and given to
//! `explain -o json` as a List. audit's reading of a pod's JSON text
//! (`pipeline_pod::read_text`) is held equal to the reading of its value on
//! each admitted pod too.

use kfsched::format::pipeline_pod;
use serde_json::{Value as Json, json};

use super::harness::{Scope, kubectl_stdin};
use super::shape;
use crate::node::cluster::{cluster, rt, run_bin};
use crate::support::{golden_dirs, hand_dirs, rel, root};

const READING: &str = "kfsched.test/reading";
const CASE: &str = "kfsched.test/case";

/// The reading policy of case `n`: the export's variables, its match
/// condition and one for the case's pods, and a mutation that writes what
/// the variables say (one line each; lists joined by tabs).
fn reading_policy(export: &str, n: usize, prefix: &str) -> Option<(String, Json, Json)> {
    let docs = shape::documents(export);
    let policy = docs.iter().find(|d| {
        d["kind"] == "MutatingAdmissionPolicy"
            && d["spec"]["matchConstraints"]["resourceRules"][0]["resources"][0] == "pods"
    })?;
    let binding = docs
        .iter()
        .find(|d| {
            d["kind"] == "MutatingAdmissionPolicyBinding"
                && d["spec"]["policyName"] == policy["metadata"]["name"]
        })?
        .clone();
    // The rule variables and the rule names, from the mutation that
    // writes the admitted annotation (`variables.rule_x ? 'x' : ''`).
    let first = policy["spec"]["mutations"][0]["jsonPatch"]["expression"]
        .as_str()
        .unwrap_or_default();
    let rules: Vec<String> = first
        .split("variables.rule_")
        .skip(1)
        .filter_map(|rest| {
            let var: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let name = rest[var.len()..].strip_prefix(" ? '")?;
            let name = &name[..name.find("' : ''")?];
            Some(format!("variables.rule_{var} ? '{name}' : ''"))
        })
        .collect();
    let value = format!(
        "variables.role + '\\n' + variables.path + '\\n' + variables.kinds[0] + '\\n' + \
         variables.names.join('\\t') + '\\n' + variables.images.join('\\t') + '\\n' + \
         variables.pipelines.join('\\t') + '\\n' + [{}].filter(n, n != '').join('\\t')",
        rules.join(", ")
    );
    let key = format!("'{READING}'");
    let mutation = format!(
        "has(object.metadata.annotations) ? \
         [JSONPatch{{op: 'add', path: '/metadata/annotations/kfsched.test~1reading', value: {value}}}] : \
         [JSONPatch{{op: 'add', path: '/metadata/annotations', value: {{{key}: {value}}}}}]"
    );
    let name = format!("{prefix}reading-{n}");
    // Every workflow pod, not only those the policy's gate lets through
    // to its mutation: the reading is of every pod.
    let mut conditions = json!([policy["spec"]["matchConditions"][0].clone()]);
    conditions.as_array_mut()?.push(json!({
        "name": "case",
        "expression": format!("object.metadata.?labels[?'{CASE}'].orValue('') == '{n}'"),
    }));
    let mut reading = policy.clone();
    reading["metadata"]["name"] = json!(name);
    reading["spec"]["matchConditions"] = conditions;
    reading["spec"]["mutations"] =
        json!([{"patchType": "JSONPatch", "jsonPatch": {"expression": mutation}}]);
    reading["spec"]["reinvocationPolicy"] = json!("Never");
    let mut binding = binding;
    binding["metadata"]["name"] = json!(name);
    binding["spec"]["policyName"] = json!(name);
    Some((name, reading, binding))
}

/// What `explain -o json` says of each component, as the reading
/// annotation's lines.
fn rust_readings(policy: &str, pods: &[Json]) -> Vec<String> {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": pods});
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("pods.json");
    std::fs::write(&file, list.to_string()).expect("write");
    let policy = root().join(policy).display().to_string();
    let out = run_bin(
        &[
            "explain",
            "-o",
            "json",
            "-p",
            &policy,
            &file.display().to_string(),
        ],
        &[],
    );
    assert_eq!(out.code, 0, "explain: {}", out.stderr);
    let report: Json = serde_json::from_str(&out.stdout).expect("explain's JSON");
    let mut lines = Vec::new();
    for f in report["files"].as_array().into_iter().flatten() {
        for d in f["documents"].as_array().into_iter().flatten() {
            for c in d["components"].as_array().into_iter().flatten() {
                let join = |k: &str| {
                    c[k].as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Json::as_str)
                        .collect::<Vec<_>>()
                        .join("\t")
                };
                let rules: Vec<&str> = c["rules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|r| r["matched"] == true)
                    .filter_map(|r| r["rule"].as_str())
                    .collect();
                lines.push(format!(
                    "{}\n{}\n{}\n{}\n{}\n{}\n{}",
                    c["role"].as_str().unwrap_or(""),
                    c["taskPath"].as_str().unwrap_or(""),
                    c["kind"].as_str().unwrap_or(""),
                    join("names"),
                    join("images"),
                    join("pipelines"),
                    rules.join("\t")
                ));
            }
        }
    }
    lines
}

#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn the_cel_and_explain_read_every_pod_alike() {
    let _shared = crate::node::cluster::shared();
    rt().block_on(async {
        let scope = Scope::new(cluster(), "reading").await;
        let cases: Vec<(std::path::PathBuf, std::path::PathBuf)> = golden_dirs()
            .into_iter()
            .map(|d| (d.join("plain.yaml"), d.join("policy.yaml")))
            .chain(
                hand_dirs()
                    .into_iter()
                    .map(|d| (d.join("input.yaml"), d.join("policy.yaml"))),
            )
            .collect();
        let mut objects = Vec::new();
        let mut work = Vec::new();
        let mut refused = 0;
        for (n, (file, policy)) in cases.iter().enumerate() {
            let p = rel(policy);
            let Ok(export) = scope.try_export(&["-p", &p]) else {
                refused += 1;
                continue;
            };
            let Some((_, reading, binding)) = reading_policy(&export, n, &scope.prefix) else {
                continue;
            };
            let text = std::fs::read_to_string(file).expect("the fixture");
            let pods: Vec<Json> = shape::file_pods(&text)
                .into_iter()
                .map(|s| {
                    let mut pod = s.pod;
                    pod["metadata"]["labels"][CASE] = json!(n.to_string());
                    pod
                })
                .collect();
            if pods.is_empty() {
                continue;
            }
            objects.push(reading);
            objects.push(binding);
            work.push((rel(file), p, pods));
        }
        assert!(
            work.len() > 10,
            "{} cases to compare ({refused} refused)",
            work.len()
        );
        let yaml: String = objects
            .iter()
            .map(|o| format!("---\n{}\n", serde_json::to_string(o).expect("json")))
            .collect();
        kubectl_stdin(
            &scope.cluster,
            &["apply", "--server-side", "-f", "-"],
            &yaml,
            0,
        );
        let mut compared = 0;
        let mut invalid = 0;
        let mut failures = Vec::new();
        for (file, policy, pods) in &work {
            // Until the case's reading policy acts on its first pod.
            let mut first = None;
            for _ in 0..120 {
                if let Ok(p) = scope.admit(&pods[0]).await {
                    if p["metadata"]["annotations"].get(READING).is_some() {
                        first = Some(p);
                        break;
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            assert!(first.is_some(), "{file}: the reading policy never acted");
            let rust = rust_readings(policy, pods);
            assert_eq!(
                rust.len(),
                pods.len(),
                "{file}: explain read {} of {} pods",
                rust.len(),
                pods.len()
            );
            for (pod, mine) in pods.iter().zip(&rust) {
                let admitted = match scope.admit(pod).await {
                    Ok(p) => p,
                    // A pod the API server refuses with no policy bound
                    // (a fixture's invalid toleration) has no reading.
                    Err(e) => {
                        assert!(
                            scope.admit_bare(pod).await.is_err(),
                            "{file}: {}: {e}",
                            pod["metadata"]["name"]
                        );
                        invalid += 1;
                        continue;
                    }
                };
                let cel = admitted["metadata"]["annotations"][READING]
                    .as_str()
                    .unwrap_or("(no reading)");
                compared += 1;
                // audit reads listed pods from their text, building only
                // what the reading looks at: the same reading.
                let text = serde_json::to_string(&admitted).expect("json");
                assert_eq!(
                    pipeline_pod::read_text(&text).expect("the pod's JSON"),
                    pipeline_pod::read(&admitted),
                    "{file}: pod {}: reading its text differs from reading its value",
                    pod["metadata"]["name"]
                );
                if cel != mine {
                    failures.push(format!(
                        "{file}: pod {}:\n  CEL:  {cel:?}\n  Rust: {mine:?}",
                        pod["metadata"]["name"]
                    ));
                }
            }
        }
        assert!(compared > 500, "only {compared} pods compared");
        assert!(
            failures.is_empty(),
            "{} of {compared} pods read differently:\n{}",
            failures.len(),
            failures
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
        eprintln!(
            "{compared} pods of {} fixtures read alike ({invalid} pods invalid without a policy, {refused} policies refused by the export)",
            work.len()
        );
        scope.cleanup(&yaml).await;
    });
}

/// `explain pod/NAME` reads the pod from the cluster and says what admission gave it: a pod admitted
/// through the export carries what its rules ask; one created in a
/// namespace the export is not bound to is said to lack it, and why.
#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn explain_reads_a_live_pod_as_admission_does() {
    let _shared = crate::node::cluster::shared();
    rt().block_on(async {
        let scope = Scope::new(cluster(), "explain-pod").await;
        let case = root().join("testdata/golden/v2/control_flow");
        let policy = case.join("policy.yaml").display().to_string();
        let yaml = scope.export(&["-p", &policy]);
        scope.apply(&yaml);
        let text = std::fs::read_to_string(case.join("plain.yaml")).expect("fixture");
        let mut fit = shape::file_pods(&text)
            .into_iter()
            .find(|s| {
                s.pod["metadata"]["annotations"]["workflows.argoproj.io/node-name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with(".fit.executor"))
            })
            .expect("the fit executor")
            .pod;
        scope.until_active(&fit).await;
        fit["metadata"]["name"] = json!("fit-pod");
        let client = scope.client.clone();
        let mut stored = Vec::new();
        for ns in [&scope.namespace, &scope.bare] {
            let mut pod = fit.clone();
            pod["metadata"]["namespace"] = json!(ns);
            let p: k8s_openapi::api::core::v1::Pod =
                serde_json::from_value(pod).expect("a pod");
            let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
                kube::Api::namespaced(client.clone(), ns);
            stored.push(
                api.create(&kube::api::PostParams::default(), &p)
                    .await
                    .expect("create the pod"),
            );
        }
        let admin = scope.cluster.admin.display().to_string();
        let explain = |ns: &str| {
            run_bin(
                &[
                    "explain", "-p", &policy, "--rule", "loop-fits", "--kubeconfig", &admin,
                    "-n", ns, "pod/fit-pod",
                ],
                &[],
            )
        };
        let admitted = explain(&scope.namespace);
        assert_eq!(admitted.code, 0, "{}", admitted.stderr);
        assert!(
            admitted.stdout.starts_with("pod/fit-pod\n  document 1: pipeline pod PipelineSpec, pipeline \"control-flow\"\n    Pod \"fit-pod\" (KFP v2 executor of task \"for-loop-2/for-loop-4/fit\", workflow \"control-flow-x7k2p\")\n"),
            "{}",
            admitted.stdout
        );
        assert!(admitted.stdout.contains("      matched  loop-fits\n"), "{}", admitted.stdout);
        assert!(admitted.stdout.contains("(unchanged)"), "the admitted pod carries it: {}", admitted.stdout);
        assert!(!admitted.stdout.contains("warning:"), "{}", admitted.stdout);
        let outside = explain(&scope.bare);
        assert_eq!(outside.code, 0, "{}", outside.stderr);
        assert!(
            outside.stdout.contains("      warning: the pod does not carry what rule \"loop-fits\" asks, and policy \"control-flow\" did not admit it: it was created outside the binding's namespaces"),
            "{}",
            outside.stdout
        );
        let missing = run_bin(
            &["explain", "-p", &policy, "--kubeconfig", &admin, "-n", &scope.bare, "pod/no-such-pod"],
            &[],
        );
        assert_eq!(missing.code, 2, "{}", missing.stderr);
        assert!(missing.stderr.contains(&format!("error: pod/no-such-pod: no such pod in namespace {} (-n/--namespace names another)", scope.bare)), "{}", missing.stderr);
        scope.cleanup(&yaml).await;
    });
}

/// A pipeline's pod in a file (`kubectl get pod -o yaml`) is read as
/// admission reads it, by every command: `explain` says what it lacks and
/// why admission may not have given it; `rewrite` writes nothing to it and
/// says so. Needs no cluster.
#[test]
fn a_pipeline_pod_in_a_file_is_read_as_admission_reads_it() {
    let case = root().join("testdata/golden/v2/control_flow");
    let policy = case.join("policy.yaml").display().to_string();
    let text = std::fs::read_to_string(case.join("plain.yaml")).expect("fixture");
    let fit = shape::file_pods(&text)
        .into_iter()
        .find(|s| {
            s.pod["metadata"]["annotations"]["workflows.argoproj.io/node-name"]
                .as_str()
                .is_some_and(|n| n.ends_with(".fit.executor"))
        })
        .expect("the fit executor")
        .pod;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("pod.json");
    let f = file.display().to_string();
    let explain = |pod: &Json| {
        std::fs::write(&file, serde_json::to_string_pretty(pod).expect("json")).expect("write");
        run_bin(&["explain", "-p", &policy, "--rule", "loop-fits", &f], &[])
    };
    let r = explain(&fit);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("  document 1: pipeline pod PipelineSpec, pipeline \"control-flow\"\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("      names:   fit, for-loop-2/for-loop-4/fit, exec-fit, comp-fit, fit\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("      matched  loop-fits\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("and policy \"control-flow\" did not admit it"),
        "{}",
        r.stdout
    );
    // Admitted by the policy, yet without what the rule asks now.
    let mut admitted = fit.clone();
    admitted["metadata"]["annotations"][kfsched::admission::ADMITTED_ANNOTATION] =
        json!("other:x;control-flow:anything-in-inner-loop");
    let r = explain(&admitted);
    assert!(
        r.stdout.contains("though policy \"control-flow\" admitted it (with rule \"anything-in-inner-loop\"): the policy changed after the export on the cluster was made"),
        "{}",
        r.stdout
    );
    // A driver: `podRoles` absent means executors.
    let driver = shape::file_pods(&text)
        .into_iter()
        .find(|s| {
            s.pod["metadata"]["annotations"]["workflows.argoproj.io/node-name"]
                .as_str()
                .is_some_and(|n| n.ends_with(".fit-driver"))
        })
        .expect("the fit driver")
        .pod;
    let r = explain(&driver);
    assert!(
        r.stdout.contains("(KFP v2 driver of task \"for-loop-2/for-loop-4/fit\"")
            && r.stdout.contains("      not      loop-fits: the rule reaches executors only (no match.podRoles); `podRoles: [driver]` reaches drivers\n"),
        "{}",
        r.stdout
    );
    // rewrite: nothing written, and said.
    std::fs::write(&file, serde_json::to_string_pretty(&fit).expect("json")).expect("write");
    let before = std::fs::read(&file).expect("read");
    let r = run_bin(&["rewrite", "-p", &policy, "--rule", "loop-fits", &f], &[]);
    let _ = r;
    let r = run_bin(&["rewrite", "-p", &policy, &f], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout.as_bytes(),
        before.as_slice(),
        "the pod was rewritten"
    );
    assert!(
        r.stderr.contains("a pipeline's pod is read as admission reads it and never rewritten (rules \"loop-fits\", \"anything-in-inner-loop\" select it)"),
        "{}",
        r.stderr
    );
}
