//! Nodes as they register: a Node created under a kubelet identity
//! (`system:node:<name>` in `system:nodes`, with the Node authorizer and
//! the NodeRestriction plugin on, as a real kubelet registers) comes back
//! with its pools' labels and taints already on it, so no pod can land on
//! it before they are; and a label NodeRestriction forbids a kubelet is
//! really refused by the server, which is why the export refuses it.

use std::sync::Mutex;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams};
use serde_json::{Value as Json, json};

use super::harness::{Scope, kubectl_stdin};
use crate::node::cluster::{cluster, rt, run_bin};

/// The cluster has one kubelet identity, for one node name.
static KUBELET: Mutex<()> = Mutex::new(());

fn kubelet() -> (String, String) {
    let var = |n: &str| {
        std::env::var(n).unwrap_or_else(|_| {
            panic!("${n} is not set: start the control plane with scripts/cluster.sh and export its env")
        })
    };
    (
        var("KFSCHED_KUBELET_KUBECONFIG"),
        var("KFSCHED_KUBELET_NODE"),
    )
}

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: registration}
spec:
  nodePools:
  - name: system
    nodeSelector: \"node-group=system\"
    labels: {kfsched.dev/pool: system}
    taints:
    - {key: kfsched.dev/pool, value: system, effect: NoSchedule}
  - name: named
    nodes: [\"kfsched-kubelet-*\"]
    labels: {kfsched.dev/registered: \"true\", node.kubernetes.io/pool-member: named}
    taints:
    - {key: kfsched.dev/named, effect: PreferNoSchedule}
";

/// Registers the kubelet's node with these labels; the Node as created, or
/// the server's refusal.
fn register(kubeconfig: &str, name: &str, labels: Json) -> Result<Json, String> {
    let node =
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}});
    let out = std::process::Command::new(crate::node::cluster::kubectl())
        .args([
            "--kubeconfig",
            kubeconfig,
            "create",
            "-o",
            "json",
            "-f",
            "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .expect("stdin")
                .write_all(node.to_string().as_bytes())?;
            c.wait_with_output()
        })
        .expect("kubectl runs");
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).expect("a Node"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

async fn delete_node(scope: &Scope, name: &str) {
    let _ = Api::<Node>::all(scope.client.clone())
        .delete(name, &DeleteParams::default())
        .await;
}

#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn a_registering_node_gets_its_pools_labels_and_taints_under_node_restriction() {
    let _one = KUBELET.lock().unwrap_or_else(|e| e.into_inner());
    let _shared = crate::node::cluster::shared();
    let (kubeconfig, name) = kubelet();
    rt().block_on(async {
        let scope = Scope::new(cluster(), "reg").await;
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = dir.path().join("policy.yaml");
        std::fs::write(&policy, POLICY).expect("write");
        // Unique policy names: the node policy is cluster-wide.
        let yaml = scope.export(&["-p", &policy.display().to_string()]);
        scope.apply(&yaml);
        delete_node(&scope, &name).await;
        // The node policy takes about a second to be in force.
        let mut created = None;
        for _ in 0..60 {
            let n = register(&kubeconfig, &name, json!({"node-group": "system"}))
                .expect("the kubelet registers");
            if n["metadata"]["annotations"]
                .get(kfsched::admission::ADMITTED_ANNOTATION)
                .is_some()
            {
                created = Some(n);
                break;
            }
            delete_node(&scope, &name).await;
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        let node = created.expect("the node policy took effect");
        let labels = &node["metadata"]["labels"];
        assert_eq!(labels["kfsched.dev/pool"], "system", "{node}");
        assert_eq!(labels["kfsched.dev/registered"], "true");
        assert_eq!(labels["node.kubernetes.io/pool-member"], "named");
        assert_eq!(labels["node-group"], "system", "the node's own labels stay");
        let taints: Vec<String> = node["spec"]["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                format!(
                    "{}={}:{}",
                    t["key"].as_str().unwrap_or(""),
                    t["value"].as_str().unwrap_or(""),
                    t["effect"].as_str().unwrap_or("")
                )
            })
            .collect();
        // The node is created tainted: there is no moment a pod could land on it untainted.
        assert!(
            taints.contains(&"kfsched.dev/pool=system:NoSchedule".to_string()),
            "{taints:?}"
        );
        assert!(
            taints.contains(&"kfsched.dev/named=:PreferNoSchedule".to_string()),
            "{taints:?}"
        );
        assert_eq!(
            node["metadata"]["annotations"][kfsched::admission::ADMITTED_ANNOTATION],
            "registration:system,named"
        );
        // What node apply would do on it now: nothing (exit 0 from node diff).
        let diff = run_bin(
            &[
                "node",
                "diff",
                "-p",
                &policy.display().to_string(),
                "--kubeconfig",
                &scope.cluster.admin.display().to_string(),
            ],
            &[],
        );
        assert!(
            diff.code == 0 || !diff.stdout.contains(&name),
            "node diff after admission: {}\n{}",
            diff.stdout,
            diff.stderr
        );
        // The node is the pools' as if `node apply` had labelled it: the
        // record says what admission added, so an apply of a changed
        // policy changes its values without --overwrite, and --prune
        // removes what the policy dropped.
        let record: Json = serde_json::from_str(
            node["metadata"]["annotations"][kfsched::admission::MANAGED_ANNOTATION]
                .as_str()
                .unwrap_or_else(|| panic!("no record: {node}")),
        )
        .expect("the record is JSON");
        assert_eq!(
            record,
            json!({"policies": {"registration": {
                "labels": {
                    "kfsched.dev/pool": "system",
                    "kfsched.dev/registered": "true",
                    "node.kubernetes.io/pool-member": "named",
                },
                "taints": ["kfsched.dev/named:PreferNoSchedule", "kfsched.dev/pool=system:NoSchedule"],
            }}})
        );
        let changed = dir.path().join("changed.yaml");
        std::fs::write(
            &changed,
            POLICY
                .replace("value: system, effect", "value: system-2, effect")
                .replace("kfsched.dev/registered: \"true\", ", ""),
        )
        .expect("write");
        let admin = scope.cluster.admin.display().to_string();
        let changed_p = changed.display().to_string();
        let diff = run_bin(
            &["node", "diff", "--prune", "-p", &changed_p, "--kubeconfig", &admin],
            &[],
        );
        assert_eq!(diff.code, 1, "{}\n{}", diff.stdout, diff.stderr);
        let ours = diff
            .stdout
            .split("node/")
            .find(|s| s.starts_with(&name))
            .unwrap_or_else(|| panic!("{name} is not in the diff: {}", diff.stdout));
        assert!(
            ours.contains("- label kfsched.dev/registered=true")
                && ours.contains("kfsched.dev/pool=system-2:NoSchedule")
                && !ours.contains("--overwrite"),
            "{}",
            diff.stdout
        );
        let applied = run_bin(
            &["node", "apply", "--prune", "-p", &changed_p, "--kubeconfig", &admin],
            &[],
        );
        assert_eq!(applied.code, 0, "{}\n{}", applied.stdout, applied.stderr);
        let now = Api::<Node>::all(scope.client.clone())
            .get(&name)
            .await
            .expect("the node");
        let labels = now.metadata.labels.clone().unwrap_or_default();
        assert!(!labels.contains_key("kfsched.dev/registered"), "{labels:?}");
        assert_eq!(labels.get("node-group").map(String::as_str), Some("system"));
        let taints: Vec<String> = now
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .iter()
            .map(|t| format!("{}={}:{}", t.key, t.value.clone().unwrap_or_default(), t.effect))
            .collect();
        assert!(
            taints.contains(&"kfsched.dev/pool=system-2:NoSchedule".to_string())
                && !taints.contains(&"kfsched.dev/pool=system:NoSchedule".to_string()),
            "{taints:?}"
        );
        // A node the pools do not select registers as it is.
        delete_node(&scope, &name).await;
        std::fs::write(&policy, POLICY.replace("kfsched-kubelet-*", "other-*")).expect("write");
        let yaml2 = scope.export(&["-p", &policy.display().to_string()]);
        scope.apply(&yaml2);
        let mut plain = None;
        for _ in 0..60 {
            let n = register(&kubeconfig, &name, json!({"node-group": "batch"}))
                .expect("the kubelet registers");
            delete_node(&scope, &name).await;
            if n["metadata"]["annotations"]
                .get(kfsched::admission::ADMITTED_ANNOTATION)
                .is_none()
            {
                plain = Some(n);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        let n = plain.expect("the changed node policy took effect");
        assert!(
            n["metadata"]["labels"].get("kfsched.dev/pool").is_none(),
            "{n}"
        );
        scope.cleanup(&yaml).await;
    });
}

/// The reason the export refuses a pool label such as
/// node-role.kubernetes.io/gpu, on the server: a policy that adds it makes
/// the kubelet's registration fail.
#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn node_restriction_refuses_a_registering_node_a_kubernetes_label() {
    let _one = KUBELET.lock().unwrap_or_else(|e| e.into_inner());
    let _shared = crate::node::cluster::shared();
    let (kubeconfig, name) = kubelet();
    rt().block_on(async {
        let scope = Scope::new(cluster(), "nr").await;
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = dir.path().join("policy.yaml");
        std::fs::write(
            &policy,
            POLICY.replace(
                "node.kubernetes.io/pool-member",
                "node-role.kubernetes.io/gpu",
            ),
        )
        .expect("write");
        let refused = run_bin(
            &["export", "admission", "-p", &policy.display().to_string()],
            &[],
        );
        assert_eq!(refused.code, 2, "{}", refused.stderr);
        assert!(
            refused
                .stderr
                .contains("node-role.kubernetes.io/gpu cannot be added when a node registers"),
            "{}",
            refused.stderr
        );
        // The same policy with the export's check bypassed: what the server does.
        let ok = std::fs::read_to_string(&policy)
            .expect("read")
            .replace("node-role.kubernetes.io/gpu", "kfsched.dev/role-gpu");
        std::fs::write(&policy, ok).expect("write");
        let yaml = scope
            .export(&["-p", &policy.display().to_string()])
            .replace("kfsched.dev~1role-gpu", "node-role.kubernetes.io~1gpu")
            .replace("kfsched.dev/role-gpu", "node-role.kubernetes.io/gpu");
        scope.apply(&yaml);
        delete_node(&scope, &name).await;
        let mut why = None;
        for _ in 0..60 {
            match register(&kubeconfig, &name, json!({})) {
                Err(e) => {
                    why = Some(e);
                    break;
                }
                Ok(_) => delete_node(&scope, &name).await,
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        let why = why.expect("the registration was refused");
        assert!(
            why.contains("is not allowed to set the following labels: node-role.kubernetes.io/gpu"),
            "{why}"
        );
        kubectl_stdin(&scope.cluster, &["delete", "-f", "-"], &yaml, 0);
        scope.cleanup("").await;
    });
}
