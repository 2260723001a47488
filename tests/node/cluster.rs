//! The shared control plane the live tests run against, and helpers to
//! create per-test nodes, run the real binary and poll the API.
//!
//! The cluster comes from the environment that `scripts/cluster.sh env`
//! exports. Without it a cluster test fails with a message saying how to
//! start one: an ignored test that is asked to run must not pass vacuously.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Taint};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_kubectl-kfsched");

/// The kubectl the tests compare with and pipe through: `$KFSCHED_KUBECTL`
/// (the pinned build `scripts/setup-integrations.sh env` exports), else
/// `kubectl` on PATH.
pub fn kubectl() -> PathBuf {
    std::env::var_os("KFSCHED_KUBECTL")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("kubectl"))
}

/// PATH with the plugin's directory and the pinned kubectl's first.
pub fn tool_path() -> String {
    let plugin = std::path::Path::new(BIN)
        .parent()
        .map(std::path::Path::to_path_buf);
    let kubectl = kubectl().parent().map(std::path::Path::to_path_buf);
    let mut dirs: Vec<PathBuf> = plugin
        .into_iter()
        .chain(kubectl)
        .filter(|d| !d.as_os_str().is_empty())
        .collect();
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Tests that touch every node (`--all`) take this exclusively; every
/// other cluster test holds it shared, so they never see each other's.
/// (Tests that run `node apply` use a policy of their own name, which
/// reaches only their own nodes and records.)
static ALL_NODES: RwLock<()> = RwLock::new(());

pub fn shared() -> RwLockReadGuard<'static, ()> {
    ALL_NODES.read().unwrap_or_else(|e| e.into_inner())
}

pub fn exclusive() -> RwLockWriteGuard<'static, ()> {
    ALL_NODES.write().unwrap_or_else(|e| e.into_inner())
}

/// The control plane, from `scripts/cluster.sh env`.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub admin: PathBuf,
    pub readonly: PathBuf,
    pub server: String,
}

fn var(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "${name} is not set: this test needs the control plane. Start it with \
             `scripts/cluster.sh start && eval \"$(scripts/cluster.sh env)\"` (or run scripts/test.sh), \
             then run `cargo test -- --include-ignored`"
        ),
    }
}

pub fn cluster() -> Cluster {
    let c = Cluster {
        admin: PathBuf::from(var("KFSCHED_ADMIN_KUBECONFIG")),
        readonly: PathBuf::from(var("KFSCHED_READONLY_KUBECONFIG")),
        server: var("KFSCHED_API_SERVER"),
    };
    assert!(
        c.admin.is_file(),
        "KFSCHED_ADMIN_KUBECONFIG={} does not exist: is the cluster running?",
        c.admin.display()
    );
    c
}

/// A runtime for one test.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

impl Cluster {
    pub async fn client(&self) -> Client {
        let kc = Kubeconfig::read_from(&self.admin).expect("admin kubeconfig");
        let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .expect("admin config");
        Client::try_from(cfg).expect("admin client")
    }

    /// Runs `kubectl-kfsched node SUB --kubeconfig ADMIN ARGS...` with a
    /// clean environment.
    pub fn kfsched(&self, sub: &str, args: &[&str]) -> Run {
        let mut all = vec!["node", sub, "--kubeconfig"];
        let admin = self.admin.display().to_string();
        all.push(&admin);
        all.extend_from_slice(args);
        run_bin(&all, &[])
    }
}

/// Runs the binary with exactly these arguments and environment.
pub fn run_bin(args: &[&str], env: &[(&str, &str)]) -> Run {
    let home = std::env::temp_dir().join("kfsched-test-home");
    let _ = std::fs::create_dir_all(&home);
    let mut c = Command::new(BIN);
    c.args(args)
        .env_clear()
        .env("HOME", &home)
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.stdin(Stdio::null()).output().expect("the binary runs");
    Run::from(out)
}

/// A finished process.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    #[track_caller]
    pub fn ok(&self) -> &Run {
        assert_eq!(
            self.code, 0,
            "expected exit 0\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    #[track_caller]
    pub fn code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code, code,
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// A name unique to this run: `prefix-xxxxxx`.
pub fn unique(prefix: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    format!("{prefix}-{:06x}", h.finish() & 0xff_ffff)
}

/// Polls `f` with backoff (50 ms doubling to 1 s) until it returns `Some`, or panics after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    let mut delay = Duration::from_millis(50);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(1));
    }
}

pub const WAIT: Duration = Duration::from_secs(90);

/// Nodes created for one test, all labelled `kfsched-test=<id>`.
pub struct TestNodes {
    pub names: Vec<String>,
}

/// Creates `n` nodes `<id>-0..n` with `labels` plus `kfsched-test=<id>`,
/// and waits until kwok reports them Ready and node-lifecycle has removed
/// the `not-ready` taint that admission adds at create.
pub async fn create_nodes(
    client: &Client,
    id: &str,
    n: usize,
    labels: &[(&str, &str)],
) -> TestNodes {
    let specs: Vec<(String, Vec<(&str, &str)>)> = (0..n)
        .map(|i| (format!("{id}-{i}"), labels.to_vec()))
        .collect();
    let specs: Vec<(&str, &[(&str, &str)])> = specs
        .iter()
        .map(|(n, l)| (n.as_str(), l.as_slice()))
        .collect();
    create_named_nodes(client, id, &specs).await
}

/// Creates nodes with these names and labels (plus `kfsched-test=<id>`), Ready.
pub async fn create_named_nodes(
    client: &Client,
    id: &str,
    specs: &[(&str, &[(&str, &str)])],
) -> TestNodes {
    let api: Api<Node> = Api::all(client.clone());
    let mut names = Vec::new();
    for (name, labels) in specs {
        let mut l: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        l.insert("kfsched-test".into(), id.into());
        l.insert("kubernetes.io/hostname".into(), name.to_string());
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": l},
        }))
        .expect("a node");
        api.create(&PostParams::default(), &node)
            .await
            .expect("create node");
        names.push(name.to_string());
    }
    for name in &names {
        eventually(
            &format!("node {name} Ready without the not-ready taint"),
            WAIT,
            || {
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
                    let tainted =
                        n.spec
                            .as_ref()
                            .and_then(|s| s.taints.as_ref())
                            .is_some_and(|t| {
                                t.iter().any(|t| t.key.starts_with("node.kubernetes.io/"))
                            });
                    (ready && !tainted).then_some(())
                }
            },
        )
        .await;
    }
    TestNodes { names }
}

/// Deletes the test's nodes (best effort).
pub async fn delete_nodes(client: &Client, nodes: &TestNodes) {
    let api: Api<Node> = Api::all(client.clone());
    for n in &nodes.names {
        let _ = api.delete(n, &DeleteParams::default()).await;
    }
}

pub async fn get_node(client: &Client, name: &str) -> Node {
    Api::<Node>::all(client.clone())
        .get(name)
        .await
        .expect("get node")
}

/// The node's taints as `key=value:Effect`, without the `node.kubernetes.io/*`
/// ones the control plane manages.
pub async fn taints(client: &Client, name: &str) -> Vec<String> {
    let n = get_node(client, name).await;
    let list: Vec<Taint> = n.spec.and_then(|s| s.taints).unwrap_or_default();
    list.iter()
        .filter(|t| !t.key.starts_with("node.kubernetes.io/"))
        .map(|t| match t.value.as_deref().filter(|v| !v.is_empty()) {
            Some(v) => format!("{}={}:{}", t.key, v, t.effect),
            None => format!("{}:{}", t.key, t.effect),
        })
        .collect()
}

/// The node's labels without the ones the test harness sets.
pub async fn labels(client: &Client, name: &str) -> BTreeMap<String, String> {
    let n = get_node(client, name).await;
    let mut l = n.metadata.labels.unwrap_or_default();
    l.remove("kfsched-test");
    l.remove("kubernetes.io/hostname");
    l
}

pub async fn unschedulable(client: &Client, name: &str) -> bool {
    get_node(client, name)
        .await
        .spec
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

/// Creates a namespace and waits for its default ServiceAccount.
pub async fn create_namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    )
    .expect("ns");
    api.create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
    let sa: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(client.clone(), name);
    eventually(&format!("ServiceAccount {name}/default"), WAIT, || {
        let sa = sa.clone();
        async move { sa.get("default").await.ok().map(|_| ()) }
    })
    .await;
}

pub async fn delete_namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
}

/// The pods of a namespace.
pub async fn pods(client: &Client, ns: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("list pods")
        .items
}

pub fn is_ready(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
        && p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub fn node_of(p: &Pod) -> String {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

/// Creates any object from JSON through kubectl-like dynamic apply.
pub async fn create<K>(client: &Client, ns: &str, value: serde_json::Value) -> K
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    <K as kube::Resource>::DynamicType: Default,
{
    let obj: K = serde_json::from_value(value).expect("object json");
    Api::<K>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &obj)
        .await
        .expect("create object")
}
