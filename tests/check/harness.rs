//! Comparing `check` with the real kube-scheduler: make the nodes of a
//! world on the control plane, snapshot every node (and pod) of the
//! cluster, run `kubectl-kfsched check --nodes SNAPSHOT --usage -o json`,
//! create each component's pod as `check` says its creator makes it
//! (`components[].pod.spec`), and read the scheduler's `PodScheduled`
//! condition.
//!
//! The scheduler counts every node of the cluster in its message, so a
//! world holds the cluster exclusively while it runs (`exclusive()`), and
//! the snapshot is taken just before each run. Pods are created one at a
//! time and deleted before the next, so each meets the nodes as the
//! snapshot shows them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value as Json, json};

use crate::node::cluster::{self, Cluster, WAIT, eventually, run_bin};

/// A node of a world: name (without the world's prefix), labels, taints
/// (`key=value:Effect` / `key:Effect`), allocatable, cordoned.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub taints: Vec<String>,
    pub allocatable: Vec<(String, String)>,
    pub cordoned: bool,
}

/// What the scheduler did with one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    Bound(String),
    Unschedulable(String),
    /// `PodScheduled=False` with reason `SchedulerError`.
    Error(String),
    /// The API server refused to create it (admission), with its message.
    Refused(String),
    /// kube-scheduler left it alone (another scheduler's pod): neither
    /// bound nor given a PodScheduled condition within `IGNORED`.
    Ignored,
}

/// How long an ignored pod is watched: kube-scheduler decides on a pod of
/// its own within milliseconds on this control plane.
const IGNORED: Duration = Duration::from_secs(3);

/// One comparison.
#[derive(Clone, Debug)]
pub struct Compared {
    pub case: String,
    pub component: String,
    /// kfsched's feasible nodes.
    pub predicted: Vec<String>,
    pub predicted_message: Option<String>,
    /// Whether check judged it (not another scheduler's pod).
    pub judged: bool,
    /// Why check says the API server refuses it.
    pub refused: Option<String>,
    pub observed: Observed,
}

impl Compared {
    /// Scheduled versus unschedulable agree, the bound node is feasible,
    /// and the first sentence of the message is the scheduler's.
    /// A refusal is the server's own words; an ignored pod is one check
    /// did not judge.
    pub fn agrees(&self) -> bool {
        match &self.observed {
            Observed::Refused(m) => self
                .refused
                .as_deref()
                .and_then(|r| r.strip_prefix("the API server refuses the pod: "))
                .and_then(|r| r.split(" (the Priority admission plugin)").next())
                .is_some_and(|reason| m.ends_with(reason)),
            Observed::Ignored => !self.judged && self.refused.is_none(),
            _ if !self.judged || self.refused.is_some() => false,
            Observed::Bound(n) => self.predicted.contains(n),
            Observed::Unschedulable(m) | Observed::Error(m) => {
                self.predicted.is_empty()
                    && self.predicted_message.as_deref().map(first_sentence)
                        == Some(first_sentence(m))
            }
        }
    }

    /// The whole message agrees too (the PostFilter part after the first sentence).
    pub fn whole_message_agrees(&self) -> bool {
        match &self.observed {
            Observed::Bound(_) | Observed::Refused(_) | Observed::Ignored => true,
            Observed::Unschedulable(m) | Observed::Error(m) => {
                self.predicted_message.as_deref() == Some(m.as_str())
            }
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "{} / {}: kfsched fits {:?}, message {:?}; scheduler {:?}",
            self.case, self.component, self.predicted, self.predicted_message, self.observed
        )
    }
}

/// `0/N nodes are available: ... .` (up to and including the first `. `).
pub fn first_sentence(m: &str) -> &str {
    match m.find(". ") {
        Some(i) => &m[..=i],
        None => m,
    }
}

/// A world on the control plane: its nodes and a namespace for its pods.
pub struct World {
    pub cluster: Cluster,
    pub client: Client,
    pub prefix: String,
    pub namespace: String,
    pub dir: tempfile::TempDir,
    nodes: Vec<String>,
}

fn taint_json(t: &str) -> Json {
    let (kv, effect) = t.rsplit_once(':').expect("key[=value]:Effect");
    match kv.split_once('=') {
        Some((k, v)) => json!({"key": k, "value": v, "effect": effect}),
        None => json!({"key": kv, "effect": effect}),
    }
}

impl World {
    /// Creates the nodes (Ready, without the `not-ready` taint; cordoned
    /// ones with the `unschedulable` taint node-lifecycle adds) and a namespace.
    pub async fn create(prefix: &str, specs: &[NodeSpec]) -> World {
        let cluster = cluster::cluster();
        let client = cluster.client().await;
        let prefix = cluster::unique(prefix);
        let namespace = prefix.clone();
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("namespace");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
        let api: Api<Node> = Api::all(client.clone());
        let mut nodes = Vec::new();
        for s in specs {
            let name = format!("{prefix}-{}", s.name);
            let mut labels: BTreeMap<String, String> = s.labels.iter().cloned().collect();
            labels.insert("kubernetes.io/hostname".into(), name.clone());
            labels.insert("kfsched-test".into(), prefix.clone());
            let alloc: BTreeMap<String, String> = s.allocatable.iter().cloned().collect();
            let node: Node = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {"taints": s.taints.iter().map(|t| taint_json(t)).collect::<Vec<_>>(), "unschedulable": s.cordoned},
                "status": {"allocatable": alloc, "capacity": alloc},
            }))
            .expect("a node");
            api.create(&PostParams::default(), &node)
                .await
                .expect("create node");
            nodes.push((name, s.cordoned));
        }
        for (name, cordoned) in &nodes {
            let (api, name, cordoned) = (api.clone(), name.clone(), *cordoned);
            eventually(&format!("node {name} ready for scheduling"), WAIT, || {
                let api = api.clone();
                let name = name.clone();
                async move {
                    let n = api.get(&name).await.ok()?;
                    let ready = n
                        .status
                        .as_ref()?
                        .conditions
                        .as_ref()?
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True");
                    let taints = n
                        .spec
                        .as_ref()
                        .and_then(|s| s.taints.clone())
                        .unwrap_or_default();
                    let not_ready = taints
                        .iter()
                        .any(|t| t.key == "node.kubernetes.io/not-ready");
                    let cordon_taint = taints
                        .iter()
                        .any(|t| t.key == "node.kubernetes.io/unschedulable");
                    (ready && !not_ready && cordon_taint == cordoned).then_some(())
                }
            })
            .await;
        }
        World {
            cluster,
            client,
            prefix,
            namespace,
            dir: tempfile::tempdir().expect("tempdir"),
            nodes: nodes.into_iter().map(|(n, _)| n).collect(),
        }
    }

    /// A world node's full name.
    pub fn node(&self, short: &str) -> String {
        format!("{}-{short}", self.prefix)
    }

    /// Every node, pod and PriorityClass of the cluster as a `v1 List`
    /// JSON file, as `kubectl get nodes,pods,priorityclasses -A -o json`
    /// writes it.
    pub async fn snapshot(&self) -> std::path::PathBuf {
        let nodes = Api::<Node>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .expect("list nodes");
        let pods = Api::<Pod>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .expect("list pods");
        let mut items: Vec<Json> = Vec::new();
        for n in nodes.items {
            let mut j = serde_json::to_value(&n).expect("node json");
            j["apiVersion"] = json!("v1");
            j["kind"] = json!("Node");
            items.push(j);
        }
        for p in pods.items {
            let mut j = serde_json::to_value(&p).expect("pod json");
            j["apiVersion"] = json!("v1");
            j["kind"] = json!("Pod");
            items.push(j);
        }
        let classes = Api::<PriorityClass>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .expect("list PriorityClasses");
        for c in classes.items {
            let mut j = serde_json::to_value(&c).expect("class json");
            j["apiVersion"] = json!("scheduling.k8s.io/v1");
            j["kind"] = json!("PriorityClass");
            items.push(j);
        }
        let path = self.dir.path().join("snapshot.json");
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        std::fs::write(&path, serde_json::to_vec_pretty(&list).expect("json"))
            .expect("write snapshot");
        path
    }

    /// Runs `check` on `files` (written into the world's directory) and
    /// compares each component with the scheduler.
    pub async fn compare(
        &self,
        case: &str,
        files: &[(&str, String)],
        policy: Option<&str>,
    ) -> Vec<Compared> {
        let mut args: Vec<String> = vec!["check".into()];
        if let Some(p) = policy {
            let path = self.dir.path().join(format!("{case}-policy.yaml"));
            std::fs::write(&path, p).expect("write policy");
            args.extend(["-p".into(), path.display().to_string()]);
        }
        let snapshot = self.snapshot().await;
        args.extend([
            "--nodes".into(),
            snapshot.display().to_string(),
            "--usage".into(),
            "-o".into(),
            "json".into(),
        ]);
        for (name, text) in files {
            let path = self.dir.path().join(format!("{case}-{name}"));
            std::fs::write(&path, text).expect("write input");
            args.push(path.display().to_string());
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = run_bin(&refs, &[]);
        assert!(
            run.code == 0 || run.code == 1,
            "{case}: check failed (exit {})\n{}",
            run.code,
            run.stderr
        );
        let report: Json = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{case}: not JSON ({e}): {}", run.stdout));
        let components = report["components"].as_array().expect("components").clone();
        assert!(
            !components.is_empty(),
            "{case}: no component found\n{}",
            run.stderr
        );
        let mut out = Vec::new();
        for c in components {
            let observed = self.schedule(&c["pod"]["spec"]).await;
            out.push(Compared {
                case: case.to_string(),
                component: c["component"].as_str().unwrap_or("").to_string(),
                predicted: c["nodes"]
                    .as_array()
                    .expect("nodes")
                    .iter()
                    .map(|n| n.as_str().unwrap_or("").to_string())
                    .collect(),
                predicted_message: c["message"].as_str().map(str::to_string),
                judged: c["judged"].as_bool().unwrap_or(true),
                refused: c["refused"].as_str().map(str::to_string),
                observed,
            });
        }
        out
    }

    /// Puts a running pod with these requests on a node, bypassing the
    /// scheduler (`spec.nodeName`), as the pods `--usage` counts; waits
    /// until it runs.
    pub async fn occupy(&self, node: &str, cpu: &str, memory: &str) {
        let name = cluster::unique("occupant");
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "nodeName": node,
                "terminationGracePeriodSeconds": 0,
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            },
        }))
        .expect("a pod");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        api.create(&PostParams::default(), &pod)
            .await
            .expect("create occupant");
        eventually(&format!("occupant {name} running"), WAIT, || {
            let api = api.clone();
            let name = name.clone();
            async move {
                let p = api.get(&name).await.ok()?;
                (p.status?.phase.as_deref() == Some("Running")).then_some(())
            }
        })
        .await;
    }

    /// Creates a pod with `spec`, waits for its PodScheduled condition, deletes it.
    pub async fn schedule(&self, spec: &Json) -> Observed {
        let mut spec = spec.clone();
        for key in ["containers", "initContainers"] {
            if let Some(cs) = spec.get_mut(key).and_then(Json::as_array_mut) {
                for c in cs {
                    c["image"] = json!("registry.k8s.io/pause:3.10");
                }
            }
        }
        spec["terminationGracePeriodSeconds"] = json!(0);
        let name = cluster::unique("pod");
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": spec,
        }))
        .expect("a pod");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        match api.create(&PostParams::default(), &pod).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 403 => return Observed::Refused(e.message),
            Err(e) => panic!("create pod {spec}: {e}"),
        }
        let other_scheduler = spec["schedulerName"]
            .as_str()
            .is_some_and(|s| s != "default-scheduler");
        let wait = if other_scheduler { IGNORED } else { WAIT };
        let observed = eventually_or(
            &format!("pod {name} PodScheduled"),
            wait,
            other_scheduler,
            || {
                let api = api.clone();
                let name = name.clone();
                async move {
                    let p = api.get(&name).await.ok()?;
                    if let Some(n) = p.spec.as_ref().and_then(|s| s.node_name.clone()) {
                        return Some(Observed::Bound(n));
                    }
                    let c = p
                        .status?
                        .conditions?
                        .into_iter()
                        .find(|c| c.type_ == "PodScheduled")?;
                    let message = c.message.unwrap_or_default();
                    match (c.status.as_str(), c.reason.as_deref()) {
                        ("False", Some("Unschedulable")) => Some(Observed::Unschedulable(message)),
                        ("False", Some("SchedulerError")) => Some(Observed::Error(message)),
                        _ => None,
                    }
                }
            },
        )
        .await
        .unwrap_or(Observed::Ignored);
        let _ = api
            .delete(
                &name,
                &DeleteParams {
                    grace_period_seconds: Some(0),
                    ..DeleteParams::default()
                },
            )
            .await;
        let start = Instant::now();
        while api.get_opt(&name).await.ok().flatten().is_some() && start.elapsed() < WAIT {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        observed
    }

    /// Deletes the world's nodes and namespace.
    pub async fn delete(mut self) {
        remove(&self.client, &self.nodes, &self.namespace).await;
        self.nodes.clear();
    }
}

async fn remove(client: &Client, nodes: &[String], namespace: &str) {
    let api: Api<Node> = Api::all(client.clone());
    for n in nodes {
        let _ = api.delete(n, &DeleteParams::default()).await;
    }
    let _ = Api::<Namespace>::all(client.clone())
        .delete(namespace, &DeleteParams::default())
        .await;
}

impl Drop for World {
    /// A failed test still removes its nodes, so the next world's messages
    /// do not count them (on a runtime of its own: the test's may be gone).
    fn drop(&mut self) {
        if self.nodes.is_empty() {
            return;
        }
        let (cluster, nodes, ns) = (
            self.cluster.clone(),
            std::mem::take(&mut self.nodes),
            self.namespace.clone(),
        );
        let _ = std::thread::spawn(move || {
            cluster::rt().block_on(async {
                let client = cluster.client().await;
                remove(&client, &nodes, &ns).await;
            })
        })
        .join();
    }
}

/// [`eventually`], or `None` when `quiet_ok` and nothing happened in time
/// (a pod kube-scheduler leaves alone).
async fn eventually_or<T, F, Fut>(what: &str, wait: Duration, quiet_ok: bool, f: F) -> Option<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    if !quiet_ok {
        return Some(eventually(what, wait, f).await);
    }
    let start = Instant::now();
    while start.elapsed() < wait {
        if let Some(v) = f().await {
            return Some(v);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Writes a summary line for the test log.
pub fn summary(what: &str, all: &[Compared], took: Duration) -> String {
    let agree = all.iter().filter(|c| c.agrees()).count();
    let whole = all.iter().filter(|c| c.whole_message_agrees()).count();
    let unsched = all
        .iter()
        .filter(|c| !matches!(c.observed, Observed::Bound(_)))
        .count();
    format!(
        "{what}: {agree}/{} agree ({unsched} unschedulable; whole message equal in {whole}) in {:.1?}",
        all.len(),
        took
    )
}

/// How many of the observed messages carry each reason (what the cases covered).
pub fn coverage(all: &[Compared]) -> String {
    let reasons = [
        "were unschedulable",
        "untolerated taint",
        "didn't match Pod's node affinity/selector",
        "didn't satisfy plugin(s) [NodeAffinity]",
        "pod affinity terms conflict",
        "Too many pods",
        "Insufficient cpu",
        "Insufficient memory",
        "Insufficient nvidia.com/gpu",
        "No preemption victims found",
        "running PreScore plugin",
        "didn't match pod topology spread constraints",
    ];
    let parts: Vec<String> = reasons
        .iter()
        .map(|r| {
            let n = all
                .iter()
                .filter(|c| matches!(&c.observed, Observed::Unschedulable(m) | Observed::Error(m) if m.contains(r)))
                .count();
            format!("{r}: {n}")
        })
        .collect();
    parts.join("; ")
}

/// Where a test writes its results, for the docs (`target/check-agreement.txt`).
pub fn record(line: &str) {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-agreement.txt");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    text.push_str(line);
    text.push('\n');
    let _ = std::fs::write(path, text);
}
