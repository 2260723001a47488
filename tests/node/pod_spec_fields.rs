//! The pod-spec fields (`priorityClassName`, `schedulerName`,
//! `runtimeClassName`, `topologySpreadConstraints`) on the real control
//! plane. Every fixture whose policy sets one of them (hand-written cases,
//! the kfp 1.8 golden cases) and every recipe of the guide is rewritten by
//! kfsched, then:
//! - the whole rewritten file (workloads, `v1 List` items, Argo workflows
//!   under CRDs that type the fields kfsched writes) is accepted by the API
//!   server (a server-side dry run, admission included: the PriorityClasses
//!   and RuntimeClasses it names exist);
//! - the pod Argo's controller builds from each template and its
//!   podSpecPatch (`argo-pods`, with apimachinery's strategic merge patch,
//!   the workflow's patch then the template's) is accepted too, and carries
//!   the fields `explain` says the component ends up with.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::cluster::*;
use crate::support::root;

const FIELDS: [&str; 4] = [
    "priorityClassName",
    "schedulerName",
    "runtimeClassName",
    "topologySpreadConstraints",
];

/// (name, input, policy text) of every fixture whose policy sets a pod-spec
/// field, and of every recipe of the guide (its policy read from the guide).
fn cases() -> Vec<(String, PathBuf, String)> {
    let mut out = Vec::new();
    for (dir, input) in [
        ("testdata/cases", "input.yaml"),
        ("testdata/golden/v1", "plain.yaml"),
    ] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let text = std::fs::read_to_string(p.join("policy.yaml")).unwrap_or_default();
            if p.join(input).is_file() {
                out.push((crate::support::rel(&p), p.join(input), text));
            }
        }
    }
    out.retain(|(_, _, text)| FIELDS.iter().any(|f| text.contains(&format!("{f}:"))));
    // Every recipe: queueing and autoscaling metadata must reach the server too.
    for (name, text) in crate::support::recipes() {
        let dir = root().join("testdata/recipes").join(&name);
        out.push((format!("recipe {name}"), dir.join("input.yaml"), text));
    }
    out.sort();
    out
}

/// The PriorityClasses and RuntimeClasses the fixtures name (the
/// policies' and the inputs' own), cluster-wide and idempotent.
const CLASSES: &[&str] = &[
    "ml-high",
    "ml-batch",
    "batch-high",
    "high",
    "low",
    "pipelines",
    "ml-team",
];
const RUNTIMES: &[&str] = &["nvidia", "gvisor", "kata", "runc"];

fn classes_yaml() -> String {
    let mut s = String::new();
    // The value every test that creates a class gives it: a class's value
    // cannot change, and the admission tests create some of these names too.
    for c in CLASSES {
        s.push_str(&format!(
            "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {c}}}\nvalue: 1000\n"
        ));
    }
    for r in RUNTIMES {
        s.push_str(&format!(
            "---\napiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {{name: {r}}}\nhandler: {r}\n"
        ));
    }
    s
}

fn kubectl_in(c: &Cluster, args: &[&str], stdin: Option<&str>) -> Run {
    let mut cmd = Command::new(kubectl());
    cmd.args(args)
        .env("KUBECONFIG", &c.admin)
        .current_dir(root())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("kubectl runs");
    if let Some(s) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(s.as_bytes())
            .expect("write");
    }
    Run::from(child.wait_with_output().expect("kubectl ends"))
}

fn argo_pods() -> PathBuf {
    crate::integrations::built_tool("argo-pods")
}

#[test]
#[ignore = "needs the control plane: scripts/cluster.sh start"]
fn rewritten_workloads_and_the_pods_argo_builds_are_accepted_with_the_fields() {
    let _g = shared();
    let c = cluster();
    kubectl_in(&c, &["apply", "-f", "testdata/argo/crds.yaml"], None).ok();
    kubectl_in(&c, &["apply", "-f", "testdata/kfp/crds.yaml"], None).ok();
    kubectl_in(
        &c,
        &[
            "wait",
            "--for",
            "condition=established",
            "--timeout=60s",
            "crd/workflows.argoproj.io",
            "crd/workflowtemplates.argoproj.io",
            "crd/clusterworkflowtemplates.argoproj.io",
            "crd/cronworkflows.argoproj.io",
            "crd/pipelineversions.pipelines.kubeflow.org",
        ],
        None,
    )
    .ok();
    kubectl_in(&c, &["apply", "-f", "-"], Some(&classes_yaml())).ok();
    // A fixture read back from a cluster keeps its namespace.
    let ns = kubectl_in(&c, &["create", "namespace", "ml"], None);
    assert!(
        ns.code == 0 || ns.stderr.contains("AlreadyExists"),
        "{}",
        ns.stderr
    );
    let cases = cases();
    assert!(
        cases.len() >= 8,
        "only {} fixtures set the fields",
        cases.len()
    );
    let (mut objects, mut argo) = (0, 0);
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, input, text) in &cases {
        let policy = dir.path().join("policy.yaml");
        std::fs::write(&policy, text).expect("write the policy");
        let out = run_bin(
            &[
                "rewrite",
                "-p",
                policy.to_str().expect("a path"),
                input.to_str().expect("a path"),
            ],
            &[],
        );
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        let created = kubectl_in(
            &c,
            &["create", "--dry-run=server", "-o", "json", "-f", "-"],
            Some(&out.stdout),
        );
        assert_eq!(
            created.code, 0,
            "{name}: the server refuses it: {}",
            created.stderr
        );
        objects += 1;
        let explain = run_bin(
            &[
                "explain",
                "-o",
                "json",
                "-p",
                policy.to_str().expect("a path"),
                input.to_str().expect("a path"),
            ],
            &[],
        );
        let explain: Value = serde_json::from_str(&explain.stdout).expect("explain JSON");
        let pods = argo_pods_of(&out.stdout);
        if pods.is_empty() {
            continue;
        }
        let created = kubectl_in(
            &c,
            &["create", "--dry-run=server", "-o", "json", "-f", "-"],
            Some(&pods),
        );
        assert_eq!(
            created.code, 0,
            "{name}: the server refuses the pods Argo builds: {}\n{pods}",
            created.stderr
        );
        // One object, a List, or several objects one after the other.
        let items: Vec<Value> = serde_json::Deserializer::from_str(&created.stdout)
            .into_iter::<Value>()
            .map(|v| v.expect("kubectl's JSON"))
            .flat_map(|v| match v["kind"].as_str() {
                Some("List") => v["items"].as_array().cloned().unwrap_or_default(),
                _ => vec![v],
            })
            .collect();
        for comp in explain["files"][0]["documents"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|d| d["components"].as_array().cloned().unwrap_or_default())
        {
            let (Some(template), Some(pipeline)) =
                (comp["names"][0].as_str(), comp["pipeline"].as_str())
            else {
                continue;
            };
            let pod_name = pod_name(pipeline, template);
            let Some(pod) = items
                .iter()
                .find(|p| p["metadata"]["name"] == pod_name.as_str())
            else {
                continue;
            };
            argo += 1;
            same_fields(name, &pod_name, &comp["after"], &pod["spec"]);
        }
    }
    assert!(argo >= 6, "only {argo} Argo pods compared");
    eprintln!(
        "{} fixtures: {objects} rewritten files and {argo} Argo pods accepted by the server",
        cases.len()
    );
}

/// The pods Argo's controller builds from a file's workflows.
fn argo_pods_of(text: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("wf.yaml");
    std::fs::write(&f, text).expect("write");
    let out = Command::new(argo_pods())
        .arg(&f)
        .output()
        .expect("argo-pods runs");
    assert!(
        out.status.success(),
        "argo-pods: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// argo-pods' pod name for a workflow's template.
fn pod_name(workflow: &str, template: &str) -> String {
    let n: String = format!("{workflow}-{template}")
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    n.trim_matches('-')
        .chars()
        .take(63)
        .collect::<String>()
        .trim_end_matches('-')
        .to_string()
}

/// The pod carries the fields kfsched says the component has. Spread
/// constraints compare by topologyKey, whenUnsatisfiable and maxSkew:
/// the server merges the pod's labels for `matchLabelKeys` into the
/// selector, and a strategic merge may order them differently.
fn same_fields(case: &str, pod: &str, after: &Value, spec: &Value) {
    for f in ["priorityClassName", "schedulerName", "runtimeClassName"] {
        if let Some(want) = after.get(f) {
            assert_eq!(&spec[f], want, "{case}: pod {pod}: {f}");
        }
    }
    let key = |c: &Value| {
        format!(
            "{}/{}/{}",
            c["topologyKey"], c["whenUnsatisfiable"], c["maxSkew"]
        )
    };
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_array().into_iter().flatten().map(key).collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&spec["topologySpreadConstraints"]),
        keys(&after["topologySpreadConstraints"]),
        "{case}: pod {pod}: topologySpreadConstraints"
    );
}
