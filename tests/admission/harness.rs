//! Putting an export on the test control plane and admitting pods through
//! it: each test binds its own admission policies (unique names) to its own
//! namespace (a unique label), so tests run side by side without seeing
//! each other's policies, and pods are created with `dryRun=All`, so the
//! API server runs every admission step and stores nothing.

use std::process::{Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value as Json, json};

use crate::node::cluster::{Cluster, eventually, kubectl, run_bin, unique};

/// One test's namespace and the name prefix of its admission policies.
/// What it applied is deleted when it is dropped, a failing test included:
/// a node policy left behind would apply to every test's nodes.
pub struct Scope {
    pub id: String,
    pub namespace: String,
    /// A namespace no policy is bound to: how the API server admits a pod
    /// without the export.
    pub bare: String,
    pub prefix: String,
    pub cluster: Cluster,
    pub client: Client,
    applied: std::sync::Mutex<Vec<String>>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        let applied = std::mem::take(&mut *self.applied.lock().unwrap_or_else(|e| e.into_inner()));
        for yaml in applied {
            let _ = try_kubectl(
                &self.cluster,
                &["delete", "--ignore-not-found", "--wait=false", "-f", "-"],
                &yaml,
            );
        }
        let _ = try_kubectl(
            &self.cluster,
            &[
                "delete",
                "namespace",
                &self.namespace,
                "--ignore-not-found",
                "--wait=false",
            ],
            "",
        );
    }
}

impl Scope {
    pub async fn new(cluster: Cluster, what: &str) -> Scope {
        let id = unique(what);
        let client = cluster.client().await;
        let ns: Namespace = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": id, "labels": {"kfsched-test-admission": id}},
        }))
        .expect("a namespace");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create the namespace");
        let bare = format!("{id}-bare");
        let ns: Namespace = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": bare},
        }))
        .expect("a namespace");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create the namespace");
        // Pods need the default service account (the ServiceAccount
        // admission plugin), in both namespaces.
        for ns in [&id, &bare] {
            let sa: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
            eventually(
                "the default service account",
                Duration::from_secs(60),
                || {
                    let sa = sa.clone();
                    async move { sa.get_opt("default").await.ok().flatten() }
                },
            )
            .await;
        }
        Scope {
            namespace: id.clone(),
            bare,
            prefix: format!("kfsched-test.{id}."),
            id,
            cluster,
            client,
            applied: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// `kubectl kfsched export admission` bound to this namespace: the
    /// YAML, or the exit code and stderr of a refusal.
    pub fn try_export(&self, args: &[&str]) -> Result<String, (i32, String)> {
        let selector = format!("kfsched-test-admission={}", self.id);
        let mut all = vec![
            "export",
            "admission",
            "--name-prefix",
            &self.prefix,
            "--namespace-selector",
            &selector,
        ];
        all.extend_from_slice(args);
        let r = run_bin(&all, &[]);
        if r.code == 0 {
            Ok(r.stdout)
        } else {
            Err((r.code, r.stderr))
        }
    }

    /// The same, expected to succeed.
    pub fn export(&self, args: &[&str]) -> String {
        self.try_export(args)
            .unwrap_or_else(|(code, err)| panic!("export admission {args:?}: exit {code}:\n{err}"))
    }

    /// `kubectl apply -f -` of the export, as a user would.
    pub fn apply(&self, yaml: &str) {
        self.applied
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(yaml.to_string());
        kubectl_stdin(&self.cluster, &["apply", "-f", "-"], yaml, 0);
    }

    /// The same, server-side (for objects over kubectl's 256 KiB record).
    pub fn apply_server_side(&self, yaml: &str) {
        self.applied
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(yaml.to_string());
        kubectl_stdin(
            &self.cluster,
            &["apply", "--server-side", "-f", "-"],
            yaml,
            0,
        );
    }

    /// Creates the pod with `dryRun=All`: what the API server would store.
    pub async fn admit(&self, pod: &Json) -> Result<Json, String> {
        self.admit_in(&self.namespace, pod).await
    }

    /// The same where no policy is bound.
    pub async fn admit_bare(&self, pod: &Json) -> Result<Json, String> {
        self.admit_in(&self.bare, pod).await
    }

    async fn admit_in(&self, namespace: &str, pod: &Json) -> Result<Json, String> {
        let mut pod = pod.clone();
        pod["metadata"]["namespace"] = json!(namespace);
        let p: Pod = serde_json::from_value(pod).map_err(|e| format!("not a pod: {e}"))?;
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let pp = PostParams {
            dry_run: true,
            ..Default::default()
        };
        api.create(&pp, &p)
            .await
            .map(|p| serde_json::to_value(p).unwrap_or(Json::Null))
            .map_err(|e| e.to_string())
    }

    /// Waits until a pod that the policy selects comes back annotated.
    pub async fn until_active(&self, probe: &Json) {
        eventually(
            "the admission policy to take effect",
            Duration::from_secs(60),
            || async {
                match self.admit(probe).await {
                    Ok(p) => p["metadata"]["annotations"]
                        .get(kfsched::admission::ADMITTED_ANNOTATION)
                        .map(|_| ()),
                    Err(_) => None,
                }
            },
        )
        .await;
    }

    /// Deletes what the test made: its admission policies and namespace.
    pub async fn cleanup(self, yaml: &str) {
        if !yaml.is_empty() {
            kubectl_stdin(
                &self.cluster,
                &["delete", "--ignore-not-found", "-f", "-"],
                yaml,
                0,
            );
        }
        for n in [&self.namespace, &self.bare] {
            let _ = Api::<Namespace>::all(self.client.clone())
                .delete(n, &DeleteParams::default())
                .await;
        }
    }
}

/// Runs the pinned kubectl against the cluster with `stdin`.
fn try_kubectl(
    cluster: &Cluster,
    args: &[&str],
    stdin: &str,
) -> std::io::Result<std::process::Output> {
    use std::io::Write;
    let mut child = Command::new(kubectl())
        .args(["--kubeconfig", &cluster.admin.display().to_string()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut i) = child.stdin.take() {
        i.write_all(stdin.as_bytes())?;
    }
    child.wait_with_output()
}

/// Runs the pinned kubectl against the cluster with `stdin`, expecting `code`.
pub fn kubectl_stdin(cluster: &Cluster, args: &[&str], stdin: &str, code: i32) -> String {
    let out = try_kubectl(cluster, args, stdin).expect("kubectl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "kubectl {args:?}:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The PriorityClasses and RuntimeClasses these policies name, created
/// when missing (they are cluster-wide, and the API server refuses a pod
/// that names one that does not exist, before and after a policy).
pub fn ensure_classes(cluster: &Cluster, policies: &[std::path::PathBuf]) {
    let mut priority = std::collections::BTreeSet::new();
    let mut runtime = std::collections::BTreeSet::new();
    for p in policies {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        for line in text.lines() {
            let t = line.trim().trim_start_matches("- ");
            for (key, set) in [
                ("priorityClassName:", &mut priority),
                ("runtimeClassName:", &mut runtime),
            ] {
                if let Some(v) = t.strip_prefix(key) {
                    let v = v
                        .split('#')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .trim_matches(['"', '\'']);
                    if !v.is_empty() {
                        set.insert(v.to_string());
                    }
                }
            }
        }
    }
    let mut docs = Vec::new();
    for n in priority {
        docs.push(format!("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {n}}}\nvalue: 1000\n"));
    }
    for n in runtime {
        docs.push(format!("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {{name: {n}}}\nhandler: {n}\n"));
    }
    if !docs.is_empty() {
        // Tests calling this at once would race to create the same class.
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        kubectl_stdin(cluster, &["apply", "-f", "-"], &docs.join("---\n"), 0);
    }
}

/// What admission and rewrite may differ in: the scheduling fields and the
/// pod's metadata, with the tolerations DefaultTolerationSeconds adds left
/// out (they come before a policy's at admission and after a template's in
/// a file, an order nobody schedules by).
pub fn scheduling(pod: &Json) -> Json {
    let spec = &pod["spec"];
    let tolerations: Vec<Json> = spec["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| {
            !(t["operator"] == "Exists"
                && t["effect"] == "NoExecute"
                && t["tolerationSeconds"] == 300
                && (t["key"] == "node.kubernetes.io/not-ready"
                    || t["key"] == "node.kubernetes.io/unreachable"))
        })
        .cloned()
        .collect();
    let or_empty = |v: &Json| if v.is_null() { json!({}) } else { v.clone() };
    json!({
        "tolerations": tolerations,
        "nodeSelector": or_empty(&spec["nodeSelector"]),
        "affinity": or_empty(&spec["affinity"]),
        "priorityClassName": spec["priorityClassName"],
        "priority": spec["priority"],
        "preemptionPolicy": spec["preemptionPolicy"],
        "schedulerName": spec["schedulerName"],
        "runtimeClassName": spec["runtimeClassName"],
        "topologySpreadConstraints": spec["topologySpreadConstraints"],
        "labels": or_empty(&pod["metadata"]["labels"]),
        "annotations": or_empty(&pod["metadata"]["annotations"]),
    })
}

/// The same, without the annotation admission adds.
pub fn scheduling_unannotated(pod: &Json) -> Json {
    let mut s = scheduling(pod);
    if let Some(a) = s["annotations"].as_object_mut() {
        a.remove(kfsched::admission::ADMITTED_ANNOTATION);
    }
    s
}

/// A pod as it came back, made into one to create again: what the API
/// server set on it removed.
pub fn recreatable(pod: &Json) -> Json {
    let mut p = pod.clone();
    if let Some(m) = p["metadata"].as_object_mut() {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            m.remove(k);
        }
    }
    if let Some(o) = p.as_object_mut() {
        o.remove("status");
    }
    p
}
