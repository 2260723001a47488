//! `node drain` against the real control plane: DaemonSet pods, a bare
//! pod, emptyDir, ReplicaSet pods rescheduled by the real scheduler, a
//! PodDisruptionBudget that holds an eviction until a replacement is Ready
//! (the disruption controller is running), `--timeout`, SIGINT mid-drain,
//! dry runs, and whether `--grace-period` reaches the server.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use futures::TryStreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Client;
use kube::api::{Api, EvictParams, WatchEvent, WatchParams};
use serde_json::json;

use super::cluster::{
    BIN, Cluster, TestNodes, WAIT, cluster, create, create_namespace, create_nodes,
    delete_namespace, delete_nodes, eventually, is_ready, node_of, pods, rt, shared, unique,
    unschedulable,
};

fn deployment(name: &str, replicas: i32, id: &str, empty_dir: bool) -> serde_json::Value {
    let mut spec = json!({
        "nodeSelector": {"kfsched-test": id},
        "terminationGracePeriodSeconds": 30,
        "containers": [{"name": "c", "image": "example.invalid/app:1"}],
    });
    if empty_dir {
        spec["volumes"] = json!([{"name": "scratch", "emptyDir": {}}]);
    }
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    })
}

/// Waits until `count` pods with `app=<app>` are Ready, on `node` when given.
async fn ready_pods(
    client: &Client,
    ns: &str,
    app: &str,
    count: usize,
    node: Option<&str>,
) -> Vec<Pod> {
    eventually(
        &format!("{count} Ready pods of {ns}/{app} on {node:?}"),
        WAIT,
        || async {
            let all: Vec<Pod> = pods(client, ns)
                .await
                .into_iter()
                .filter(|p| {
                    p.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("app"))
                        .map(String::as_str)
                        == Some(app)
                })
                .collect();
            let live: Vec<Pod> = all
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .cloned()
                .collect();
            let ok = live.len() == count
                && live
                    .iter()
                    .all(|p| is_ready(p) && node.is_none_or(|n| node_of(p) == n));
            ok.then_some(live)
        },
    )
    .await
}

async fn wait_budget(client: &Client, ns: &str, name: &str, allowed: i32) {
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    eventually(
        &format!("PodDisruptionBudget {ns}/{name} to allow {allowed}"),
        WAIT,
        || async {
            let p = api.get(name).await.ok()?;
            let s = p.status?;
            (s.observed_generation == p.metadata.generation
                && s.disruptions_allowed == Some(allowed))
            .then_some(())
        },
    )
    .await
}

/// A drain running in the background, its stderr streamed line by line.
struct Background {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    reader: std::thread::JoinHandle<String>,
}

impl Background {
    fn start(c: &Cluster, args: &[&str]) -> Background {
        let mut child = Command::new(BIN)
            .args(["node", "drain", "--kubeconfig"])
            .arg(&c.admin)
            .args(args)
            .env_clear()
            .env("HOME", std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn drain");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                all.push_str(&line);
                all.push('\n');
                let _ = tx.send(line);
            }
            all
        });
        Background {
            child,
            lines,
            reader,
        }
    }

    /// Blocks until a stderr line contains `pat`.
    fn wait_for(&self, pat: &str) -> String {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(pat) => return line,
                Ok(_) => {}
                Err(e) => panic!("the drain never printed {pat:?}: {e}"),
            }
        }
    }

    /// Blocks until, for each `(pattern, n)`, `n` stderr lines contain the
    /// pattern, in any order (the drain reports evictions and 429 notices as
    /// they come, and their order between pods is not fixed); returns the
    /// matching lines.
    fn wait_for_all(&self, want: &[(&str, usize)]) -> Vec<String> {
        let deadline = std::time::Instant::now() + WAIT;
        let mut seen = vec![0usize; want.len()];
        let mut matched = Vec::new();
        while want.iter().zip(&seen).any(|((_, n), s)| s < n) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let mut hit = false;
                    for (i, (pat, _)) in want.iter().enumerate() {
                        if line.contains(pat) {
                            seen[i] += 1;
                            hit = true;
                        }
                    }
                    if hit {
                        matched.push(line);
                    }
                }
                Err(e) => panic!("the drain never printed all of {want:?} (saw {seen:?}): {e}"),
            }
        }
        matched
    }

    /// Waits for the exit: (code, stdout, stderr).
    fn finish(self) -> (Option<i32>, String, String) {
        let out = self.child.wait_with_output().expect("wait");
        let err = self.reader.join().unwrap_or_default();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            err,
        )
    }
}

fn uids(pods: &[Pod]) -> Vec<String> {
    let mut u: Vec<String> = pods.iter().filter_map(|p| p.metadata.uid.clone()).collect();
    u.sort();
    u
}

/// Two nodes; `web` Deployment pods placed on the first (the second is
/// cordoned while they are scheduled).
async fn two_nodes_with_pods_on_first(
    c: &Cluster,
    client: &Client,
    prefix: &str,
) -> (TestNodes, String) {
    let id = unique(prefix);
    let nodes = create_nodes(client, &id, 2, &[]).await;
    create_namespace(client, &id).await;
    c.kfsched("cordon", &[&nodes.names[1]]).ok();
    (nodes, id)
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn drain_names_the_flags_then_evicts() {
    let _g = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let (nodes, id) = two_nodes_with_pods_on_first(&c, &client, "dr").await;
        let (a, b) = (nodes.names[0].as_str(), nodes.names[1].as_str());
        let ns = id.as_str();
        create::<Deployment>(&client, ns, deployment("web", 2, &id, false)).await;
        create::<Deployment>(&client, ns, deployment("cache", 1, &id, true)).await;
        create::<DaemonSet>(
            &client,
            ns,
            json!({
                "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                "spec": {
                    "selector": {"matchLabels": {"app": "agent"}},
                    "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
                        "nodeSelector": {"kfsched-test": id},
                        "containers": [{"name": "c", "image": "example.invalid/agent:1"}],
                    }},
                },
            }),
        )
        .await;
        create::<Pod>(
            &client,
            ns,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "labels": {"app": "bare"}},
                   "spec": {"nodeName": a, "containers": [{"name": "c", "image": "example.invalid/bare:1"}]}}),
        )
        .await;
        let web = ready_pods(&client, ns, "web", 2, Some(a)).await;
        ready_pods(&client, ns, "cache", 1, Some(a)).await;
        ready_pods(&client, ns, "bare", 1, Some(a)).await;
        ready_pods(&client, ns, "agent", 2, None).await;
        c.kfsched("uncordon", &[b]).ok();
        let before = uids(&pods(&client, ns).await);

        // Client dry run: the plan, no cordon, no eviction.
        let r = c.kfsched("drain", &[a, "--dry-run=client"]);
        r.code(3);
        assert!(!unschedulable(&client, a).await, "a client dry run cordoned the node");

        // Without flags: every blocked pod names the flag that lifts it,
        // nothing is evicted and the cordon is undone.
        let r = c.kfsched("drain", &[a]);
        r.code(3);
        let blocked: Vec<&str> = r.stdout.lines().filter(|l| l.trim_start().starts_with("BLOCKED")).collect();
        assert_eq!(blocked.len(), 3, "{}", r.stdout);
        assert!(r.stdout.contains("(use --ignore-daemonsets to ignore)"), "{}", r.stdout);
        assert!(r.stdout.contains("(use --delete-emptydir-data to override)"), "{}", r.stdout);
        assert!(r.stdout.contains("(use --force to override)"), "{}", r.stdout);
        assert!(r.stderr.contains("nothing was evicted and the cordon was undone"), "{}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(!unschedulable(&client, a).await);
        assert_eq!(uids(&pods(&client, ns).await), before, "a refused drain evicted something");

        // Server dry run: the server accepts every eviction, nothing happens.
        let flags = ["--ignore-daemonsets", "--delete-emptydir-data", "--force"];
        let mut args = vec![a];
        args.extend(flags);
        args.push("--dry-run=server");
        let r = c.kfsched("drain", &args);
        r.ok();
        assert_eq!(r.stdout.matches("would be evicted").count(), 4, "{}", r.stdout);
        // The report's pod names line up, `would be evicted` and `left` alike.
        let report = r.stdout.split("drain report for").nth(1).expect("a report");
        let columns: std::collections::BTreeSet<usize> = report
            .lines()
            .filter(|l| l.starts_with("  "))
            .map(|l| l.find(&format!(" {ns}/")).expect("a pod key"))
            .collect();
        assert_eq!(columns.len(), 1, "{}", r.stdout);
        assert!(!unschedulable(&client, a).await);
        assert_eq!(uids(&pods(&client, ns).await), before, "a server dry run evicted something");

        // With the flags: drained.
        let mut args = vec![a];
        args.extend(flags);
        let r = c.kfsched("drain", &args);
        r.ok();
        let bare_line = r.stdout.lines().find(|l| l.contains("evicted") && l.contains(&format!("{ns}/bare"))).unwrap_or_default();
        assert!(bare_line.contains("will NOT come back (no controller)"), "{}", r.stdout);
        for p in &web {
            let name = p.metadata.name.clone().unwrap();
            let line = r.stdout.lines().find(|l| l.contains("evicted") && l.contains(&name)).unwrap_or_default();
            assert!(line.contains("recreated by ReplicaSet"), "{name}: {}", r.stdout);
        }
        assert!(r.stdout.lines().any(|l| l.trim_start().starts_with("left") && l.contains("agent-")), "{}", r.stdout);
        assert!(r.stdout.contains(&format!("node/{a} drained")), "{}", r.stdout);

        // Afterwards: cordoned; only the DaemonSet pod is left on it; the
        // ReplicaSet pods are Ready on the other node (the real scheduler
        // placed them); the bare pod is gone for good.
        assert!(unschedulable(&client, a).await);
        let new_web = ready_pods(&client, ns, "web", 2, Some(b)).await;
        assert!(uids(&new_web).iter().all(|u| !uids(&web).contains(u)));
        ready_pods(&client, ns, "cache", 1, Some(b)).await;
        for p in &new_web {
            assert_eq!(p.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()), Some("default-scheduler"));
        }
        let on_a: Vec<String> = pods(&client, ns)
            .await
            .iter()
            .filter(|p| node_of(p) == a && p.metadata.deletion_timestamp.is_none())
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(on_a.len(), 1, "{on_a:?}");
        assert!(on_a[0].starts_with("agent-"));
        assert!(!pods(&client, ns).await.iter().any(|p| p.metadata.name.as_deref() == Some("bare")));

        c.kfsched("uncordon", &[a]).ok();
        assert!(!unschedulable(&client, a).await);
        delete_namespace(&client, ns).await;
        delete_nodes(&client, &nodes).await;
    });
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn drain_waits_for_the_budget_until_a_replacement_is_ready() {
    let _g = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let (nodes, id) = two_nodes_with_pods_on_first(&c, &client, "pdb").await;
        let (a, b) = (nodes.names[0].as_str(), nodes.names[1].as_str());
        let ns = id.as_str();
        create::<Deployment>(&client, ns, deployment("web", 2, &id, false)).await;
        let web = ready_pods(&client, ns, "web", 2, Some(a)).await;
        create::<PodDisruptionBudget>(
            &client,
            ns,
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                   "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        )
        .await;
        wait_budget(&client, ns, "web", 1).await;

        // The other node stays cordoned at first: the first eviction uses
        // the budget's one disruption, its replacement cannot be placed, so
        // the second eviction gets 429 until the node opens and the
        // replacement is Ready there.
        let drain = Background::start(&c, &[a, "--timeout", "120s"]);
        let line = drain.wait_for("(429)");
        assert!(line.contains(&format!("PodDisruptionBudget {ns}/web")), "the 429 names the budget: {line}");
        assert!(line.contains("The disruption budget web "), "{line}");
        c.kfsched("uncordon", &[b]).ok();
        let (code, stdout, stderr) = drain.finish();
        assert_eq!(code, Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
        assert!(stdout.contains(&format!("node/{a} drained")), "{stdout}");
        let now = ready_pods(&client, ns, "web", 2, Some(b)).await;
        assert!(uids(&now).iter().all(|u| !uids(&web).contains(u)));
        assert!(unschedulable(&client, a).await);
        delete_namespace(&client, ns).await;
        delete_nodes(&client, &nodes).await;
    });
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn drain_timeout_and_sigint_leave_the_node_cordoned() {
    let _g = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let (nodes, id) = two_nodes_with_pods_on_first(&c, &client, "stop").await;
        let (a, b) = (nodes.names[0].as_str(), nodes.names[1].as_str());
        let ns = id.as_str();
        // `web` is held by a budget that never allows a disruption; `worker`
        // (sorted after it, so evicted after it) is covered by no budget.
        create::<Deployment>(&client, ns, deployment("web", 2, &id, false)).await;
        create::<Deployment>(&client, ns, deployment("worker", 2, &id, false)).await;
        let web = ready_pods(&client, ns, "web", 2, Some(a)).await;
        let workers = ready_pods(&client, ns, "worker", 2, Some(a)).await;
        create::<PodDisruptionBudget>(
            &client,
            ns,
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "all"},
                   "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}),
        )
        .await;
        wait_budget(&client, ns, "all", 0).await;
        c.kfsched("uncordon", &[b]).ok();

        // SIGINT mid-drain, after the pods no budget covers went: even with
        // one eviction at a time, the pods the budget holds do not keep the
        // slot. Stop, report both kinds, exit 130, still cordoned.
        let drain = Background::start(&c, &[a, "--concurrency", "1"]);
        let lines = drain.wait_for_all(&[("(429)", 1), (" evicted", 2)]);
        for line in lines.iter().filter(|l| l.contains(" evicted")) {
            assert!(line.contains(&format!("pod {ns}/worker-")), "{line}");
        }
        let pid = drain.child.id().to_string();
        let killed = Command::new("kill").args(["-INT", &pid]).status().expect("kill");
        assert!(killed.success());
        let (code, stdout, err) = drain.finish();
        assert_eq!(code, Some(130), "stdout:\n{stdout}\nstderr:\n{err}");
        assert!(stdout.contains("drain report for node/"), "{stdout}");
        assert!(stdout.contains("NOT drained: interrupted; it stays cordoned"), "{stdout}");
        let report = |word: &str, app: &str| {
            stdout
                .lines()
                .filter(|l| l.trim_start().starts_with(word) && l.contains(&format!("{ns}/{app}-")))
                .count()
        };
        assert_eq!(report("pending", "web"), 2, "{stdout}");
        assert_eq!(report("evicted", "worker"), 2, "{stdout}");
        assert!(unschedulable(&client, a).await, "the node stays cordoned after Ctrl-C");
        assert_eq!(uids(&ready_pods(&client, ns, "web", 2, Some(a)).await), uids(&web));
        let moved = ready_pods(&client, ns, "worker", 2, Some(b)).await;
        assert!(uids(&moved).iter().all(|u| !uids(&workers).contains(u)));

        // --timeout: the budget never allows a disruption.
        let start = std::time::Instant::now();
        let r = c.kfsched("drain", &[a, "--timeout", "3s"]);
        r.code(3);
        assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
        assert!(r.stdout.contains("NOT drained: timed out after 3s (--timeout)"), "{}", r.stdout);
        assert_eq!(r.stdout.lines().filter(|l| l.trim_start().starts_with("pending")).count(), 2, "{}", r.stdout);
        assert!(r.stdout.contains("The disruption budget all needs 2 healthy pods"), "{}", r.stdout);
        assert!(unschedulable(&client, a).await, "the node stays cordoned after a timeout");
        assert_eq!(uids(&ready_pods(&client, ns, "web", 2, Some(a)).await), uids(&web));

        c.kfsched("uncordon", &[a]).ok();
        delete_namespace(&client, ns).await;
        delete_nodes(&client, &nodes).await;
    });
}

/// The largest `deletionGracePeriodSeconds` the pod showed before it went.
async fn grace_seen(
    client: &Client,
    ns: &str,
    name: &str,
    evict: impl std::future::Future<Output = ()>,
) -> Option<i64> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let p = api.get(name).await.expect("pod");
    let rv = p.metadata.resource_version.clone().unwrap_or_default();
    let wp = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(60);
    let stream = api.watch(&wp, &rv).await.expect("watch");
    evict.await;
    let mut stream = std::pin::pin!(stream);
    let mut seen = None;
    while let Ok(Some(ev)) = stream.try_next().await {
        match ev {
            WatchEvent::Modified(p) => seen = seen.max(p.metadata.deletion_grace_period_seconds),
            WatchEvent::Deleted(p) => {
                seen = seen.max(p.metadata.deletion_grace_period_seconds);
                break;
            }
            _ => {}
        }
    }
    seen
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn grace_period_reaches_the_server() {
    let _g = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let id = unique("grace");
        let nodes = create_nodes(&client, &id, 1, &[]).await;
        let a = nodes.names[0].as_str();
        create_namespace(&client, &id).await;
        let ns = id.as_str();
        for name in ["via-kfsched", "via-kube-rs"] {
            create::<Pod>(
                &client,
                ns,
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
                       "spec": {"nodeName": a, "terminationGracePeriodSeconds": 30,
                                "containers": [{"name": "c", "image": "example.invalid/x:1"}]}}),
            )
            .await;
            ready_pods(&client, ns, name, 1, Some(a)).await;
        }
        let sel = "app=via-kfsched".to_string();
        let seen = grace_seen(&client, ns, "via-kfsched", async {
            c.kfsched("drain", &[a, "--force", "--grace-period", "7", "--pod-selector", &sel]).ok();
        })
        .await;
        assert_eq!(seen, Some(7), "kfsched's typed Eviction carries --grace-period");

        // kube-rs's own Api::evict, for the record in README.md, Nodes.
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        let ep = EvictParams {
            delete_options: Some(kube::api::DeleteParams::default().grace_period(7)),
            ..Default::default()
        };
        let seen = grace_seen(&client, ns, "via-kube-rs", async {
            api.evict("via-kube-rs", &ep).await.expect("evict");
        })
        .await;
        eprintln!("kube-rs Api::evict with grace_period(7): the server used deletionGracePeriodSeconds={seen:?}");
        c.kfsched("uncordon", &[a]).ok();
        delete_namespace(&client, ns).await;
        delete_nodes(&client, &nodes).await;
    });
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn server_dry_run_reports_budget_refusals_at_once() {
    let _g = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let id = unique("sdr");
        let nodes = create_nodes(&client, &id, 1, &[]).await;
        let a = nodes.names[0].as_str();
        create_namespace(&client, &id).await;
        let ns = id.as_str();
        create::<Deployment>(&client, ns, deployment("web", 3, &id, false)).await;
        let web = ready_pods(&client, ns, "web", 3, Some(a)).await;
        let budget = |min: i32| {
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                   "spec": {"minAvailable": min, "selector": {"matchLabels": {"app": "web"}}}})
        };
        create::<PodDisruptionBudget>(&client, ns, budget(3)).await;
        wait_budget(&client, ns, "web", 0).await;

        // The budget refuses (429): a server dry run evicts nothing, so it
        // never will allow it. Reported at once, not retried; exit 3.
        let start = std::time::Instant::now();
        let r = c.kfsched("drain", &[a, "--dry-run=server"]);
        r.code(3);
        assert!(start.elapsed() < Duration::from_secs(15), "took {:?}", start.elapsed());
        assert!(!r.stderr.contains("retrying"), "{}", r.stderr);
        let refused = r
            .stdout
            .lines()
            .filter(|l| l.trim_start().starts_with("REFUSED"))
            .collect::<Vec<_>>();
        assert_eq!(refused.len(), 3, "{}", r.stdout);
        for l in &refused {
            assert!(l.contains(&format!("would be refused (429) by PodDisruptionBudget {ns}/web (server dry run)")), "{l}");
        }
        assert!(
            r.stdout.contains(&format!(
                "node/{a} would NOT be drained: 3 evictions would be refused by PodDisruptionBudget {ns}/web (server dry run)"
            )),
            "{}",
            r.stdout
        );
        assert_eq!(r.stderr.lines().filter(|l| l.starts_with("error: ")).count(), 1, "{}", r.stderr);
        assert!(!unschedulable(&client, a).await, "a server dry run cordoned the node");
        assert_eq!(uids(&pods(&client, ns).await), uids(&web), "a server dry run evicted something");

        // A budget that allows 1 disruption: the server checks each
        // eviction alone, so all three would be evicted; the report says
        // that a real drain goes one disruption at a time.
        Api::<PodDisruptionBudget>::namespaced(client.clone(), ns)
            .delete("web", &Default::default())
            .await
            .expect("delete budget");
        create::<PodDisruptionBudget>(&client, ns, budget(2)).await;
        wait_budget(&client, ns, "web", 1).await;
        let r = c.kfsched("drain", &[a, "--dry-run=server"]);
        r.ok();
        assert_eq!(r.stdout.matches("would be evicted").count(), 3, "{}", r.stdout);
        assert!(
            r.stdout.contains(&format!(
                "note: a server dry run checks each eviction alone: PodDisruptionBudget {ns}/web allows 1 disruption now and covers 3 of these pods"
            )),
            "{}",
            r.stdout
        );
        assert!(!unschedulable(&client, a).await);
        assert_eq!(uids(&pods(&client, ns).await), uids(&web));
        delete_namespace(&client, ns).await;
        delete_nodes(&client, &nodes).await;
    });
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn a_blocked_pod_on_any_node_refuses_before_any_eviction() {
    let _g = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let (nodes, id) = two_nodes_with_pods_on_first(&c, &client, "multi").await;
        let (a, b) = (nodes.names[0].as_str(), nodes.names[1].as_str());
        let ns = id.as_str();
        // node a: only pods a drain may evict; node b: a bare pod.
        create::<Deployment>(&client, ns, deployment("web", 2, &id, false)).await;
        let web = ready_pods(&client, ns, "web", 2, Some(a)).await;
        create::<Pod>(
            &client,
            ns,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "labels": {"app": "bare"}},
                   "spec": {"nodeName": b, "containers": [{"name": "c", "image": "example.invalid/bare:1"}]}}),
        )
        .await;
        ready_pods(&client, ns, "bare", 1, Some(b)).await;
        c.kfsched("uncordon", &[b]).ok();
        let before = uids(&pods(&client, ns).await);

        let sel = format!("kfsched-test={id}");
        for args in [vec![a, b], vec!["-l", sel.as_str()]] {
            let r = c.kfsched("drain", &args);
            r.code(3);
            // Both nodes' pods are listed before anything happens.
            assert!(r.stdout.contains(&format!("pods on node/{a} (2):")), "{}", r.stdout);
            assert!(r.stdout.contains(&format!("pods on node/{b} (1):")), "{}", r.stdout);
            assert!(!r.stdout.contains("drain report"), "{}", r.stdout);
            // One error line, naming the pod, the flag and what was undone.
            assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
            assert!(
                r.stderr.starts_with(&format!("error: cannot drain node/{b}: 1 pod is blocked: {ns}/bare: "))
                    && r.stderr.contains("(use --force to override)")
                    && r.stderr.contains(&format!(
                        "nothing was evicted and the cordons this drain added (node/{a}, node/{b}) were undone"
                    )),
                "{}",
                r.stderr
            );
            // Afterwards: nothing evicted on either node, both schedulable.
            assert_eq!(uids(&pods(&client, ns).await), before, "a refused drain evicted something");
            assert_eq!(uids(&ready_pods(&client, ns, "web", 2, Some(a)).await), uids(&web));
            assert!(!unschedulable(&client, a).await, "node/{a} stayed cordoned");
            assert!(!unschedulable(&client, b).await, "node/{b} stayed cordoned");
        }

        // A node that was cordoned already stays cordoned.
        c.kfsched("cordon", &[a]).ok();
        let r = c.kfsched("drain", &[a, b]);
        r.code(3);
        assert!(
            r.stderr.contains(&format!("nothing was evicted and the cordon this drain added (node/{b}) was undone")),
            "{}",
            r.stderr
        );
        assert!(unschedulable(&client, a).await);
        assert!(!unschedulable(&client, b).await);
        assert_eq!(uids(&pods(&client, ns).await), before);

        c.kfsched("uncordon", &[a]).ok();
        delete_namespace(&client, ns).await;
        delete_nodes(&client, &nodes).await;
    });
}

/// Flag errors stop `node drain` and `node cordon` before any request.
#[test]
fn drain_and_cordon_flags_are_checked_like_kubectl() {
    let run = |args: &[&str]| super::cluster::run_bin(args, &[]);
    // --timeout is a Go duration: a unit is required (time.ParseDuration).
    let r = run(&["node", "drain", "n1", "--timeout", "5"]);
    r.code(2);
    assert_eq!(
        r.stderr,
        "error: --timeout: invalid duration \"5\": missing unit (h, m, s, ms), e.g. 5s\n"
    );
    // ... except 0 (wait forever), which passes the parser: the next
    // failure is the missing kubeconfig, exit 2, not a --timeout error.
    let r = run(&[
        "node",
        "drain",
        "n1",
        "--timeout",
        "0",
        "--kubeconfig",
        "/nonexistent",
    ]);
    assert!(!r.stderr.contains("--timeout"), "{}", r.stderr);
    // cordon and drain take no --all, so their messages do not offer it.
    for sub in ["cordon", "uncordon", "drain"] {
        let r = run(&["node", sub]);
        r.code(2);
        assert_eq!(
            r.stderr, "error: no nodes: give node names or -l/--selector SELECTOR\n",
            "{sub}"
        );
    }
    let r = run(&["node", "taint", "a=1:NoSchedule"]);
    r.code(2);
    assert!(r.stderr.contains("or --all"), "{}", r.stderr);
    // kubectl's `key>N` / `key<N` compare integers: anything else is a usage error.
    let r = run(&["node", "drain", "-l", "gen>6x"]);
    r.code(2);
    assert!(
        r.stderr
            .contains("for '>' and '<' the value must be an integer"),
        "{}",
        r.stderr
    );
    let r = run(&["node", "drain", "n1", "--pod-selector", "gen<"]);
    r.code(2);
    assert!(
        r.stderr.contains("(--pod-selector)") && r.stderr.contains("integer"),
        "{}",
        r.stderr
    );
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn ctrl_c_ends_a_drain_whose_server_never_answers() {
    let _g = shared();
    let c = cluster();
    // A server that accepts the connection and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let dir = tempfile::tempdir().expect("tempdir");
    let hung = dir.path().join("silent.kubeconfig");
    let admin = std::fs::read_to_string(&c.admin).expect("admin kubeconfig");
    std::fs::write(
        &hung,
        admin.replace(&c.server, &format!("https://127.0.0.1:{port}")),
    )
    .expect("write");
    let hung = Cluster {
        admin: hung,
        ..c.clone()
    };
    let drain = Background::start(&hung, &["n1", "--ignore-daemonsets"]);
    std::thread::sleep(Duration::from_millis(1500));
    let sent = std::time::Instant::now();
    let pid = drain.child.id().to_string();
    let killed = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let (code, stdout, stderr) = drain.finish();
    assert_eq!(code, Some(130), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "took {:?} after Ctrl-C",
        sent.elapsed()
    );
    drop(silent);
}
