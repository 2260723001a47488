//! `node drain`, in the shape of kubectl's `pkg/drain` Helper: the options
//! and the client in one place, pod filters that each return a verdict and
//! a reason naming the flag that overrides it, and eviction, 429 handling
//! and waiting as separate pieces.
//!
//! Per node: cordon; list the node's pods; give every pod its fate and
//! print the list; refuse, before evicting anything, when a pod is blocked
//! (and undo the cordon this drain added); evict through `policy/v1`
//! Eviction with bounded concurrency (or DELETE with
//! `--disable-eviction`); on 429 retry with backoff, never sooner than the
//! server's `Retry-After` unless a watch on the PodDisruptionBudgets sees
//! one allow a disruption, and name the budget; wait for each pod to be
//! gone (or replaced: UID change) by one watch on the node's pods; report
//! which pods their controller recreates and which will not come back.
//! Ctrl-C and `--timeout` stop new evictions and report; the node stays
//! cordoned.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::time::{Duration, Instant};

use futures::stream::FuturesUnordered;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::{Eviction, PodDisruptionBudget};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    DeleteOptions, LabelSelector as MetaLabelSelector, ObjectMeta, OwnerReference, Preconditions,
};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;
use tokio::sync::{mpsc, watch};

use super::client::{self, Clients, is_not_found};
use super::cordon::is_cordoned;
use super::edit::{CHUNK_SIZE, name_of, resolve};
use super::{DryRun, Error, FIELD_MANAGER, Targets};
use kfsched_core::k8s::LabelSelector;

/// Default `--concurrency`: evictions in flight at once per node.
pub const DEFAULT_CONCURRENCY: usize = 32;
/// The longest wait between two eviction attempts of one pod.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often a budget that keeps refusing is mentioned again.
const NOTICE_EVERY: Duration = Duration::from_secs(10);
/// After a stop, how long in-flight requests may take to settle.
const SETTLE: Duration = Duration::from_secs(5);

/// `node drain`'s options (kubectl's flags plus `concurrency`).
#[derive(Clone, Debug)]
pub struct DrainOptions {
    /// Names or `-l` (SPEC: no `--all` for drain).
    pub targets: Targets,
    pub ignore_daemonsets: bool,
    pub delete_emptydir_data: bool,
    pub force: bool,
    /// `--grace-period`: `None` (kubectl's -1) uses each pod's own.
    pub grace_period: Option<u32>,
    /// `--timeout` per node; `None` waits forever.
    pub timeout: Option<Duration>,
    pub pod_selector: Option<LabelSelector>,
    pub disable_eviction: bool,
    /// `--skip-wait-for-delete-timeout`; `None` is off.
    pub skip_wait_for_delete_timeout: Option<Duration>,
    pub dry_run: DryRun,
    pub concurrency: usize,
    /// stderr is a terminal: draw a progress bar instead of lines.
    pub progress_bar: bool,
}

impl DrainOptions {
    pub fn new(targets: Targets) -> DrainOptions {
        DrainOptions {
            targets,
            ignore_daemonsets: false,
            delete_emptydir_data: false,
            force: false,
            grace_period: None,
            timeout: None,
            pod_selector: None,
            disable_eviction: false,
            skip_wait_for_delete_timeout: None,
            dry_run: DryRun::None,
            concurrency: DEFAULT_CONCURRENCY,
            progress_bar: false,
        }
    }
}

// ---------------------------------------------------------------------------
// Filters: a verdict and a reason for every pod.
// ---------------------------------------------------------------------------

/// What one filter says about a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No objection.
    Remove,
    /// Remove, and say so (`reason` names the flag that allowed it).
    RemoveWithWarning(String),
    /// Leave the pod on the node; no further filter runs.
    Skip(String),
    /// The pod blocks the drain; `reason` names the flag that overrides it.
    Block(String),
}

/// What the drain does with a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Evict (or delete with `--disable-eviction`).
    Remove,
    /// Leave it on the node.
    Skip(String),
    /// Refuse the drain; every reason names its flag.
    Blocked(Vec<String>),
}

/// One pod and what happens to it.
#[derive(Clone, Debug)]
pub struct PodPlan {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub fate: Fate,
    /// `ReplicaSet ns/web-6f7` when a controller recreates the pod.
    pub controller: Option<String>,
    pub warnings: Vec<String>,
    /// The PodDisruptionBudgets that cover the pod, with their allowance.
    pub budgets: Vec<String>,
    /// The same budgets as `ns/name` and the disruptions each allowed when listed.
    pub budget_allows: Vec<(String, i32)>,
    /// Succeeded or Failed: nothing to recreate.
    pub finished: bool,
}

impl PodPlan {
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// What becomes of the pod once it is gone.
    pub fn afterlife(&self) -> String {
        if self.finished {
            "finished pod: nothing to recreate".into()
        } else {
            match &self.controller {
                Some(c) => format!("recreated by {c}"),
                None => "will NOT come back (no controller)".into(),
            }
        }
    }
}

fn controller_ref(pod: &Pod) -> Option<&OwnerReference> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

fn is_finished(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    )
}

/// kubectl's `skipDeletedFilter`.
pub fn skip_deleted_filter(
    pod: &Pod,
    opts: &DrainOptions,
    now: k8s_openapi::jiff::Timestamp,
) -> Verdict {
    let (Some(limit), Some(ts)) = (
        opts.skip_wait_for_delete_timeout,
        pod.metadata.deletion_timestamp.as_ref(),
    ) else {
        return Verdict::Remove;
    };
    let age = now.duration_since(ts.0);
    if age.as_secs() > limit.as_secs() as i64 {
        Verdict::Skip(format!(
            "terminating for {}s, more than --skip-wait-for-delete-timeout={}s",
            age.as_secs(),
            limit.as_secs()
        ))
    } else {
        Verdict::Remove
    }
}

/// kubectl's `daemonSetFilter`. `ds_exists` says whether the pod's
/// DaemonSet still exists.
pub fn daemonset_filter(pod: &Pod, opts: &DrainOptions, ds_exists: Option<bool>) -> Verdict {
    let Some(owner) = controller_ref(pod).filter(|o| o.kind == "DaemonSet") else {
        return Verdict::Remove;
    };
    if is_finished(pod) {
        return Verdict::Remove;
    }
    if ds_exists == Some(false) {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        return if opts.force {
            Verdict::RemoveWithWarning(format!(
                "its DaemonSet {ns}/{} no longer exists: deleted as an orphan (--force)",
                owner.name
            ))
        } else {
            Verdict::Block(format!(
                "its DaemonSet {ns}/{} no longer exists (use --force to override)",
                owner.name
            ))
        };
    }
    if opts.ignore_daemonsets {
        Verdict::Skip("DaemonSet-managed (ignored: --ignore-daemonsets)".into())
    } else {
        Verdict::Block("DaemonSet-managed Pods (use --ignore-daemonsets to ignore)".into())
    }
}

/// kubectl's `mirrorPodFilter`.
pub fn mirror_filter(pod: &Pod) -> Verdict {
    if pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"))
    {
        Verdict::Skip(
            "mirror pod of a static pod (the kubelet owns it; drain never evicts it)".into(),
        )
    } else {
        Verdict::Remove
    }
}

/// kubectl's `localStorageFilter`.
pub fn local_storage_filter(pod: &Pod, opts: &DrainOptions) -> Verdict {
    let has = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .is_some_and(|v| v.iter().any(|v| v.empty_dir.is_some()));
    if !has || is_finished(pod) {
        return Verdict::Remove;
    }
    if opts.delete_emptydir_data {
        Verdict::RemoveWithWarning("its emptyDir data is deleted (--delete-emptydir-data)".into())
    } else {
        Verdict::Block("Pods with local storage (use --delete-emptydir-data to override)".into())
    }
}

/// kubectl's `unreplicatedFilter`.
pub fn unreplicated_filter(pod: &Pod, opts: &DrainOptions) -> Verdict {
    if controller_ref(pod).is_some() || is_finished(pod) {
        return Verdict::Remove;
    }
    if opts.force {
        Verdict::RemoveWithWarning("evicted because of --force".into())
    } else {
        Verdict::Block("Pods that declare no controller (use --force to override)".into())
    }
}

/// Runs the filters in kubectl's order. A skip ends the chain; blocks are
/// all collected, so one run names every flag that is needed.
pub fn classify(
    pod: &Pod,
    opts: &DrainOptions,
    ds_exists: Option<bool>,
    now: k8s_openapi::jiff::Timestamp,
) -> PodPlan {
    let verdicts = [
        skip_deleted_filter(pod, opts, now),
        daemonset_filter(pod, opts, ds_exists),
        mirror_filter(pod),
        local_storage_filter(pod, opts),
        unreplicated_filter(pod, opts),
    ];
    let mut blocks = Vec::new();
    let mut warnings = Vec::new();
    let mut fate = None;
    for v in verdicts {
        match v {
            Verdict::Remove => {}
            Verdict::RemoveWithWarning(w) => warnings.push(w),
            Verdict::Skip(r) => {
                fate = Some(Fate::Skip(r));
                break;
            }
            Verdict::Block(r) => blocks.push(r),
        }
    }
    let fate = fate.unwrap_or(if blocks.is_empty() {
        Fate::Remove
    } else {
        Fate::Blocked(blocks)
    });
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let orphan = ds_exists == Some(false);
    let controller = controller_ref(pod)
        .filter(|_| !orphan)
        .map(|o| format!("{} {ns}/{}", o.kind, o.name));
    PodPlan {
        namespace: ns,
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        fate,
        controller,
        warnings,
        budgets: Vec::new(),
        budget_allows: Vec::new(),
        finished: is_finished(pod),
    }
}

/// Whether a PodDisruptionBudget's selector selects these labels. In
/// policy/v1 a null selector selects nothing and an empty one everything.
pub fn selector_matches(
    sel: Option<&MetaLabelSelector>,
    labels: &BTreeMap<String, String>,
) -> bool {
    let Some(sel) = sel else { return false };
    let labels_ok = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let exprs_ok = sel.match_expressions.iter().flatten().all(|e| {
        let v = labels.get(&e.key);
        let values = e.values.as_deref().unwrap_or(&[]);
        match e.operator.as_str() {
            "In" => v.is_some_and(|v| values.contains(v)),
            "NotIn" => v.is_none_or(|v| !values.contains(v)),
            "Exists" => v.is_some(),
            "DoesNotExist" => v.is_none(),
            _ => false,
        }
    });
    labels_ok && exprs_ok
}

// ---------------------------------------------------------------------------
// Progress on stderr: a bar on a terminal, lines otherwise.
// ---------------------------------------------------------------------------

struct Progress<'w> {
    w: &'w mut dyn Write,
    bar: bool,
    drawn: bool,
    last: Option<Instant>,
    started: Instant,
}

#[derive(Default, Clone, Copy)]
struct Counts {
    total: usize,
    gone: usize,
    in_flight: usize,
    blocked: usize,
    failed: usize,
}

impl<'w> Progress<'w> {
    fn new(w: &'w mut dyn Write, bar: bool) -> Progress<'w> {
        Progress {
            w,
            bar,
            drawn: false,
            last: None,
            started: Instant::now(),
        }
    }

    fn clear(&mut self) {
        if self.drawn {
            let _ = write!(self.w, "\r\x1b[2K");
            self.drawn = false;
        }
    }

    /// A message line (warnings, 429 notices); on a terminal it goes above the bar.
    fn line(&mut self, msg: &str) {
        self.clear();
        let _ = writeln!(self.w, "{msg}");
    }

    /// A per-pod event line, only without the bar (the bar counts them).
    fn event(&mut self, msg: &str) {
        if !self.bar {
            let _ = writeln!(self.w, "{msg}");
        }
    }

    fn draw(&mut self, node: &str, c: Counts, force: bool) {
        if !self.bar {
            return;
        }
        let now = Instant::now();
        if !force
            && self
                .last
                .is_some_and(|l| now.duration_since(l) < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(now);
        let width = 30usize;
        let filled = (c.gone * width).checked_div(c.total).unwrap_or(width);
        let mut s = format!(
            "\r\x1b[2Knode/{node} [{}{}] {}/{} gone",
            "#".repeat(filled),
            "-".repeat(width - filled),
            c.gone,
            c.total
        );
        if c.in_flight > 0 {
            s.push_str(&format!(", {} evicting", c.in_flight));
        }
        if c.blocked > 0 {
            s.push_str(&format!(", {} held by a PodDisruptionBudget", c.blocked));
        }
        if c.failed > 0 {
            s.push_str(&format!(", {} failed", c.failed));
        }
        s.push_str(&format!(" ({}s)", self.started.elapsed().as_secs()));
        let _ = write!(self.w, "{s}");
        let _ = self.w.flush();
        self.drawn = true;
    }
}

// ---------------------------------------------------------------------------
// Eviction and 429 handling.
// ---------------------------------------------------------------------------

/// How one eviction attempt loop ended.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Evicted {
    /// Accepted: the pod is being deleted (or would be, with server dry-run).
    Accepted,
    /// The pod was already gone (404, or its UID no longer matches).
    Gone,
    /// Gave up; the message says why and what to do.
    Failed(String),
    /// Stopped by Ctrl-C or `--timeout` before it was accepted.
    Stopped,
    /// Server dry run: a PodDisruptionBudget refused (429). A dry run
    /// evicts nothing, so the budget can never allow it: no retry.
    WouldBeRefused(String),
}

/// A notice from an eviction loop to the drain loop.
enum Notice {
    /// Sent the first request.
    Started(usize),
    /// 429: `budget` is the PodDisruptionBudget named by the server.
    Refused {
        idx: usize,
        message: String,
        retry_in: Duration,
    },
}

struct EvictCtx {
    client: kube::Client,
    grace_period: Option<u32>,
    dry_run: bool,
    disable_eviction: bool,
    /// `--concurrency` permits, held only while a request is on the wire:
    /// a pod waiting out a 429 gives its permit back.
    requests: std::sync::Arc<tokio::sync::Semaphore>,
}

/// The budget the server names in a 429 cause ("The disruption budget web
/// needs 2 healthy pods and has 2 currently").
fn budget_message(status: &kube::core::Status) -> Option<String> {
    let causes = status
        .details
        .as_ref()
        .map(|d| d.causes.as_slice())
        .unwrap_or(&[]);
    causes
        .iter()
        .find(|c| c.reason == "DisruptionBudget")
        .map(|c| c.message.clone())
}

fn budget_name(message: &str) -> Option<&str> {
    message
        .strip_prefix("The disruption budget ")
        .and_then(|r| r.split_whitespace().next())
}

/// `PodDisruptionBudget ns/name` from a refusal's message about a pod in
/// `ns`, or `otherwise` when the message names none.
fn budget_who(ns: &str, message: &str, otherwise: &str) -> String {
    budget_name(message).map_or_else(
        || otherwise.to_string(),
        |b| format!("PodDisruptionBudget {ns}/{b}"),
    )
}

/// One pod to evict, and the channels its loop talks through.
struct EvictJob {
    idx: usize,
    ns: String,
    name: String,
    uid: String,
    /// Bumped when a PodDisruptionBudget allows a disruption.
    budgets: Wakeups,
    /// Ctrl-C or --timeout.
    stop: watch::Receiver<bool>,
    notices: mpsc::UnboundedSender<Notice>,
}

async fn evict_one(ctx: &EvictCtx, job: EvictJob) -> (usize, Evicted) {
    let EvictJob {
        idx,
        ns,
        name,
        uid,
        budgets,
        mut stop,
        notices,
    } = job;
    let api = Api::<Pod>::namespaced(ctx.client.clone(), &ns);
    let pre = Some(Preconditions {
        uid: Some(uid.clone()),
        resource_version: None,
    });
    let mut attempt = 0u32;
    let _ = notices.send(Notice::Started(idx));
    loop {
        if *stop.borrow() {
            return (idx, Evicted::Stopped);
        }
        attempt += 1;
        let permit = tokio::select! {
            p = ctx.requests.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = stop.changed() => return (idx, Evicted::Stopped),
        };
        let result: Result<(), kube::Error> = if ctx.disable_eviction {
            let dp = DeleteParams {
                dry_run: ctx.dry_run,
                grace_period_seconds: ctx.grace_period,
                preconditions: Some(kube::api::Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: None,
                }),
                ..Default::default()
            };
            api.delete(&name, &dp).await.map(|_| ())
        } else {
            // A typed policy/v1 Eviction: kube-rs's `evict` writes the
            // options under `delete_options`, which the server ignores, so
            // --grace-period and the UID precondition would be lost.
            let body = Eviction {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(ns.clone()),
                    ..Default::default()
                },
                delete_options: Some(DeleteOptions {
                    grace_period_seconds: ctx.grace_period.map(i64::from),
                    preconditions: pre.clone(),
                    dry_run: ctx.dry_run.then(|| vec!["All".to_string()]),
                    ..Default::default()
                }),
            };
            let pp = PostParams {
                dry_run: ctx.dry_run,
                field_manager: None,
            };
            api.create_subresource::<_, kube::core::Status>("eviction", &name, &pp, &body)
                .await
                .map(|_| ())
        };
        drop(permit);
        let e = match result {
            Ok(()) => return (idx, Evicted::Accepted),
            Err(e) => e,
        };
        let kube::Error::Api(status) = &e else {
            return (idx, Evicted::Failed(client::describe(&e)));
        };
        match status.code {
            404 => return (idx, Evicted::Gone),
            // The UID precondition failed: a new pod took the name.
            409 => return (idx, Evicted::Gone),
            429 => {
                let server_says = status
                    .details
                    .as_ref()
                    .map(|d| d.retry_after_seconds)
                    .filter(|s| *s > 0)
                    .unwrap_or(5);
                let backoff = Duration::from_secs(1u64 << attempt.min(5)).min(MAX_BACKOFF);
                let delay = Duration::from_secs(u64::from(server_says)).max(backoff);
                let budget = budget_message(status);
                if ctx.dry_run
                    && let Some(m) = budget
                {
                    return (idx, Evicted::WouldBeRefused(m));
                }
                let message = budget.unwrap_or_else(|| status.message.clone());
                // Wake early only for this pod's budget, and only as many
                // pods as it allows disruptions: no thundering herd.
                let wake = budget_name(&message).map(|b| budgets.get(&format!("{ns}/{b}")));
                let _ = notices.send(Notice::Refused {
                    idx,
                    message,
                    retry_in: delay,
                });
                let woken = async {
                    match &wake {
                        Some(n) => n.notified().await,
                        None => futures::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = woken => {}
                    _ = stop.changed() => return (idx, Evicted::Stopped),
                }
            }
            403 if status
                .details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")) =>
            {
                // The namespace is going away and takes the pod with it.
                return (idx, Evicted::Accepted);
            }
            500 if status.message.contains("more than one PodDisruptionBudget") => {
                return (
                    idx,
                    Evicted::Failed(format!(
                        "{}: the Eviction API refuses a pod that more than one PodDisruptionBudget selects; fix the budgets, or use --disable-eviction to delete it (bypasses every budget)",
                        client::describe(&e)
                    )),
                );
            }
            _ => return (idx, Evicted::Failed(client::describe(&e))),
        }
    }
}

// ---------------------------------------------------------------------------
// Waiting: one watch on the node's pods.
// ---------------------------------------------------------------------------

enum PodEvent {
    /// The pod exists with this UID; `deleting_since` is its deletionTimestamp.
    Present {
        key: String,
        uid: String,
        deleting_since: Option<k8s_openapi::jiff::Timestamp>,
    },
    Gone {
        key: String,
        uid: String,
    },
    /// A fresh list after the watch expired: every pod that exists.
    Snapshot(HashSet<(String, String)>),
}

fn pod_key(p: &Pod) -> (String, String) {
    (
        format!(
            "{}/{}",
            p.metadata.namespace.as_deref().unwrap_or(""),
            p.metadata.name.as_deref().unwrap_or("")
        ),
        p.metadata.uid.clone().unwrap_or_default(),
    )
}

async fn list_pods(
    api: &Api<Pod>,
    field: &str,
    labels: Option<&str>,
) -> Result<(Vec<Pod>, String), kube::Error> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().fields(field).limit(CHUNK_SIZE);
        if let Some(l) = labels {
            lp = lp.labels(l);
        }
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await?;
        out.extend(page.items);
        token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok((out, page.metadata.resource_version.unwrap_or_default()));
        }
    }
}

/// Watches the node's pods from `rv`, relisting when the watch expires.
async fn watch_pods(
    api: Api<Pod>,
    field: String,
    mut rv: String,
    tx: mpsc::UnboundedSender<PodEvent>,
) {
    let mut failures = 0u32;
    loop {
        let wp = WatchParams::default().fields(&field).timeout(290);
        let mut relist = false;
        match api.watch(&wp, &rv).await {
            Ok(stream) => {
                let mut stream = std::pin::pin!(stream);
                loop {
                    match stream.try_next().await {
                        Ok(Some(WatchEvent::Added(p))) | Ok(Some(WatchEvent::Modified(p))) => {
                            failures = 0;
                            rv = p.metadata.resource_version.clone().unwrap_or(rv);
                            let (key, uid) = pod_key(&p);
                            let deleting_since =
                                p.metadata.deletion_timestamp.as_ref().map(|t| t.0);
                            if tx
                                .send(PodEvent::Present {
                                    key,
                                    uid,
                                    deleting_since,
                                })
                                .is_err()
                            {
                                return;
                            }
                        }
                        Ok(Some(WatchEvent::Deleted(p))) => {
                            rv = p.metadata.resource_version.clone().unwrap_or(rv);
                            let (key, uid) = pod_key(&p);
                            if tx.send(PodEvent::Gone { key, uid }).is_err() {
                                return;
                            }
                        }
                        Ok(Some(WatchEvent::Bookmark(b))) => rv = b.metadata.resource_version,
                        Ok(Some(WatchEvent::Error(s))) => {
                            relist = s.code == 410;
                            break;
                        }
                        Ok(None) => break,
                        Err(_) => break,
                    }
                }
            }
            Err(e) => {
                relist = client::status_code(&e) == Some(410);
                failures += 1;
            }
        }
        if failures > 0 {
            tokio::time::sleep(Duration::from_millis(200 * u64::from(failures.min(10)))).await;
        }
        if relist || rv.is_empty() {
            match list_pods(&api, &field, None).await {
                Ok((pods, new_rv)) => {
                    rv = new_rv;
                    let set = pods.iter().map(pod_key).collect();
                    if tx.send(PodEvent::Snapshot(set)).is_err() {
                        return;
                    }
                }
                Err(_) => failures += 1,
            }
        }
    }
}

/// One wake-up signal per PodDisruptionBudget (`ns/name`), shared by the
/// budget watch and the eviction loops that a budget holds.
#[derive(Clone, Default)]
struct Wakeups(
    std::sync::Arc<std::sync::Mutex<HashMap<String, std::sync::Arc<tokio::sync::Notify>>>>,
);

impl Wakeups {
    fn get(&self, key: &str) -> std::sync::Arc<tokio::sync::Notify> {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key.to_string()).or_default().clone()
    }
}

/// Watches the PodDisruptionBudgets; when one allows `n` disruptions, wakes
/// up to `n` of the eviction loops it holds.
async fn watch_budgets(api: Api<PodDisruptionBudget>, mut rv: String, wakeups: Wakeups) {
    loop {
        let wp = WatchParams::default().timeout(290);
        let Ok(stream) = api.watch(&wp, &rv).await else {
            // No rights or no watch: the eviction loops fall back to timed retries.
            return;
        };
        let mut stream = std::pin::pin!(stream);
        while let Ok(Some(ev)) = stream.try_next().await {
            match ev {
                WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                    rv = p.metadata.resource_version.clone().unwrap_or(rv);
                    let allowed = p
                        .status
                        .as_ref()
                        .and_then(|s| s.disruptions_allowed)
                        .unwrap_or(0);
                    if allowed > 0 {
                        let key = format!(
                            "{}/{}",
                            p.metadata.namespace.as_deref().unwrap_or(""),
                            p.metadata.name.as_deref().unwrap_or("")
                        );
                        let n = wakeups.get(&key);
                        for _ in 0..allowed.min(64) {
                            n.notify_one();
                        }
                    }
                }
                WatchEvent::Deleted(p) => rv = p.metadata.resource_version.clone().unwrap_or(rv),
                WatchEvent::Bookmark(b) => rv = b.metadata.resource_version,
                WatchEvent::Error(_) => return,
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The drain itself.
// ---------------------------------------------------------------------------

/// Where a pod to remove stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodState {
    NotStarted,
    Evicting,
    /// 429: held by a budget; the message is the server's.
    HeldByBudget(String),
    /// Accepted; waiting for it to go.
    Terminating,
    Gone,
    /// Server dry-run: the eviction would be accepted.
    WouldEvict,
    /// Waiting skipped: terminating longer than --skip-wait-for-delete-timeout.
    SkippedWait,
    /// Server dry run: a PodDisruptionBudget refused the eviction (the
    /// server's message).
    WouldBeRefused(String),
    Failed(String),
}

/// The outcome for one node.
#[derive(Clone, Debug)]
pub struct NodeReport {
    pub node: String,
    pub plans: Vec<PodPlan>,
    /// Same order as the removable entries of `plans`.
    pub states: Vec<(usize, PodState)>,
    pub drained: bool,
    /// Why not, when not.
    pub reason: Option<String>,
}

/// Everything `node drain` did.
#[derive(Clone, Debug, Default)]
pub struct DrainReport {
    pub nodes: Vec<NodeReport>,
    pub interrupted: bool,
}

/// Runs `node drain`. `cancel` turns true on Ctrl-C.
///
/// Every selected node is cordoned, then every node's pods are listed with
/// their fates before anything is evicted: a blocked pod on any node
/// refuses the whole drain, and the cordons this drain added are undone.
pub async fn run(
    clients: &Clients,
    opts: &DrainOptions,
    cancel: watch::Receiver<bool>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<DrainReport, Error> {
    if matches!(opts.targets, Targets::All) {
        return Err(Error::Usage(
            "node drain takes node names or -l/--selector, not --all".into(),
        ));
    }
    // Until the evictions start, Ctrl-C ends a request at once (a server
    // that never answers would otherwise hold the interrupt until the
    // request times out); the nodes stay as they are, cordoned or not.
    let nodes = or_interrupted(&cancel, resolve(clients, &opts.targets)).await?;
    if nodes.is_empty() {
        let _ = writeln!(
            err,
            "warning: no nodes matched: {}",
            opts.targets.describe()
        );
        return Ok(DrainReport::default());
    }
    // Cordon every node first, as kubectl does, so pods evicted from one
    // node do not land on another that is about to be drained.
    let node_api: Api<Node> = Api::all(clients.main.clone());
    let mut cordoned = Vec::new();
    let mut report = DrainReport::default();
    let mut failures: Vec<String> = Vec::new();
    for n in nodes.iter().map(|f| &f.node) {
        let name = name_of(n).to_string();
        let was = is_cordoned(n);
        if was {
            let _ = writeln!(out, "node/{name} already cordoned{}", opts.dry_run.suffix());
            cordoned.push((name, false));
            continue;
        }
        if opts.dry_run != DryRun::Client {
            let pp = PatchParams {
                dry_run: opts.dry_run == DryRun::Server,
                field_manager: Some(FIELD_MANAGER.into()),
                ..Default::default()
            };
            let patch = Patch::Merge(json!({"spec": {"unschedulable": true}}));
            let cordon = async {
                node_api
                    .patch(&name, &pp, &patch)
                    .await
                    .map_err(|e| Error::api(format!("cannot cordon node/{name}"), e))
            };
            if let Err(e) = or_interrupted(&cancel, cordon).await {
                if matches!(e, Error::Interrupted) {
                    return Err(e);
                }
                if e.is_denied() || nodes.len() == 1 {
                    let undone = undo_cordons(clients, opts, &cordoned).await;
                    return Err(with_suffix(e, &undone));
                }
                failures.push(format!("node/{name} ({e}; it is not drained)"));
                continue;
            }
        }
        let _ = writeln!(out, "node/{name} cordoned{}", opts.dry_run.suffix());
        cordoned.push((name, true));
    }

    // Pre-flight: every node's pods and their fates, before any eviction.
    let mut surveys: Vec<Survey> = Vec::new();
    for (name, we_cordoned) in &cordoned {
        match or_interrupted(&cancel, survey(clients, opts, name, *we_cordoned)).await {
            Ok(s) => {
                print_plan(out, &s.node, &s.plans, opts);
                surveys.push(s);
            }
            Err(Error::Interrupted) => return Err(Error::Interrupted),
            Err(e) => {
                // Nothing was evicted yet: leave every node as it was.
                let undone = undo_cordons(clients, opts, &cordoned).await;
                return Err(with_suffix(e, &undone));
            }
        }
    }
    let blocked: Vec<(&str, Vec<String>)> = surveys
        .iter()
        .map(|s| (s.node.as_str(), s.blocked()))
        .filter(|(_, b)| !b.is_empty())
        .collect();
    if !blocked.is_empty() {
        let mut undone = undo_cordons(clients, opts, &cordoned).await;
        if undone.is_empty() && opts.dry_run == DryRun::None {
            undone = "; nothing was evicted".into();
        }
        return Err(Error::DrainIncomplete(refusal(&blocked, &undone)));
    }

    for (i, s) in surveys.into_iter().enumerate() {
        if *cancel.borrow() {
            report.interrupted = true;
            break;
        }
        let name = s.node.clone();
        // Later nodes waited while earlier ones drained: look again, and
        // say so if their pods changed since the list above.
        let s = if i == 0 {
            s
        } else {
            match or_interrupted(&cancel, survey(clients, opts, &name, s.we_cordoned)).await {
                Err(Error::Interrupted) => {
                    report.interrupted = true;
                    break;
                }
                Ok(fresh) => {
                    if fresh.pod_set() != s.pod_set() {
                        let _ =
                            writeln!(out, "the pods on node/{name} changed since the list above:");
                        print_plan(out, &name, &fresh.plans, opts);
                    }
                    let b = fresh.blocked();
                    if !b.is_empty() {
                        let own = [(name.clone(), fresh.we_cordoned)];
                        let mut undone = undo_cordons(clients, opts, &own).await;
                        if undone.is_empty() && opts.dry_run == DryRun::None {
                            undone = "; nothing was evicted there".into();
                        }
                        failures.push(refusal(&[(name.as_str(), b)], &undone));
                        continue;
                    }
                    fresh
                }
                Err(e) if e.is_denied() => return Err(e),
                Err(e) => {
                    failures.push(format!("node/{name} ({e})"));
                    continue;
                }
            }
        };
        let r = drain_node(clients, opts, s, cancel.clone(), out, err).await;
        match r {
            Ok(nr) => {
                let interrupted = nr.reason.as_deref() == Some("interrupted");
                if !nr.drained {
                    failures.push(format!(
                        "node/{} ({})",
                        nr.node,
                        nr.reason.clone().unwrap_or_default()
                    ));
                }
                report.nodes.push(nr);
                if interrupted {
                    report.interrupted = true;
                    break;
                }
            }
            Err(e) if e.is_denied() || nodes.len() == 1 => return Err(e),
            Err(e) => failures.push(format!("node/{name} ({e})")),
        }
    }
    if report.interrupted {
        return Err(Error::Interrupted);
    }
    match failures.len() {
        0 => Ok(report),
        1 if nodes.len() == 1 => Err(Error::DrainIncomplete(format!(
            "drain not completed: {}",
            failures[0]
        ))),
        _ => Err(Error::DrainIncomplete(format!(
            "drain not completed for {}",
            failures.join(", ")
        ))),
    }
}

/// Runs `fut`, unless Ctrl-C (`cancel`) comes first: then
/// [`Error::Interrupted`] at once.
async fn or_interrupted<T>(
    cancel: &watch::Receiver<bool>,
    fut: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let mut cancel = cancel.clone();
    tokio::select! {
        r = fut => r,
        Ok(_) = cancel.wait_for(|c| *c) => Err(Error::Interrupted),
    }
}

/// Appends what happened to the cordons to an error's one line.
fn with_suffix(e: Error, suffix: &str) -> Error {
    if suffix.is_empty() {
        e
    } else {
        Error::DrainIncomplete(format!("{e}{suffix}"))
    }
}

/// The one line that refuses a drain: every blocked pod with the flags
/// that would lift it, per node.
fn refusal(blocked: &[(&str, Vec<String>)], undone: &str) -> String {
    let count: usize = blocked.iter().map(|(_, b)| b.len()).sum();
    let nodes: Vec<String> = blocked.iter().map(|(n, _)| format!("node/{n}")).collect();
    let list: Vec<String> = if blocked.len() == 1 {
        blocked[0].1.clone()
    } else {
        blocked
            .iter()
            .flat_map(|(n, b)| b.iter().map(move |p| format!("{p} (on node/{n})")))
            .collect()
    };
    format!(
        "cannot drain {}: {count} pod{} blocked: {}{undone}",
        nodes.join(", "),
        if count == 1 { " is" } else { "s are" },
        list.join(", ")
    )
}

/// Undoes the cordons this drain added (`(node, we_cordoned)`), when it
/// wrote any; returns how the refusal line ends.
async fn undo_cordons(
    clients: &Clients,
    opts: &DrainOptions,
    cordoned: &[(String, bool)],
) -> String {
    if opts.dry_run != DryRun::None {
        return String::new();
    }
    let ours: Vec<&str> = cordoned
        .iter()
        .filter(|(_, we)| *we)
        .map(|(n, _)| n.as_str())
        .collect();
    if ours.is_empty() {
        return String::new();
    }
    let node_api: Api<Node> = Api::all(clients.main.clone());
    let pp = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let mut failed = Vec::new();
    for n in &ours {
        if let Err(e) = node_api
            .patch(
                n,
                &pp,
                &Patch::Merge(json!({"spec": {"unschedulable": null}})),
            )
            .await
        {
            failed.push(format!("node/{n}: {}", client::describe(&e)));
        }
    }
    if !failed.is_empty() {
        return format!(
            "; nothing was evicted, and undoing the cordon failed for {}",
            failed.join(", ")
        );
    }
    if ours.len() == 1 && cordoned.len() == 1 {
        "; nothing was evicted and the cordon was undone".into()
    } else {
        let names: Vec<String> = ours.iter().map(|n| format!("node/{n}")).collect();
        format!(
            "; nothing was evicted and the cordon{} this drain added ({}) {} undone",
            plural(ours.len()),
            names.join(", "),
            if ours.len() == 1 { "was" } else { "were" }
        )
    }
}

/// One node's pods and their fates, before anything is evicted.
struct Survey {
    node: String,
    /// This drain cordoned the node (it was schedulable).
    we_cordoned: bool,
    plans: Vec<PodPlan>,
    /// The pod list's resourceVersion: the watch starts there.
    rv: String,
    budgets: Vec<PodDisruptionBudget>,
    pdb_rv: String,
}

impl Survey {
    /// `ns/pod: reasons` for every blocked pod.
    fn blocked(&self) -> Vec<String> {
        self.plans
            .iter()
            .filter_map(|p| match &p.fate {
                Fate::Blocked(r) => Some(format!("{}: {}", p.key(), r.join("; "))),
                _ => None,
            })
            .collect()
    }

    fn pod_set(&self) -> Vec<(String, String)> {
        self.plans
            .iter()
            .map(|p| (p.key(), p.uid.clone()))
            .collect()
    }
}

/// Lists a node's pods and gives each its fate and budgets.
async fn survey(
    clients: &Clients,
    opts: &DrainOptions,
    node: &str,
    we_cordoned: bool,
) -> Result<Survey, Error> {
    let all_pods: Api<Pod> = Api::all(clients.main.clone());
    let field = format!("spec.nodeName={node}");
    let labels = opts.pod_selector.as_ref().map(|s| s.to_query());
    let (pods, rv) = list_pods(&all_pods, &field, labels.as_deref())
        .await
        .map_err(|e| Error::api(format!("cannot list the pods on node/{node}"), e))?;

    // The DaemonSets behind DaemonSet pods: do they still exist?
    let mut ds_exists: HashMap<(String, String), bool> = HashMap::new();
    for p in &pods {
        if let Some(o) = controller_ref(p).filter(|o| o.kind == "DaemonSet") {
            let ns = p.metadata.namespace.clone().unwrap_or_default();
            let key = (ns.clone(), o.name.clone());
            if ds_exists.contains_key(&key) {
                continue;
            }
            let api: Api<DaemonSet> = Api::namespaced(clients.main.clone(), &ns);
            let exists = match api.get_metadata(&o.name).await {
                Ok(_) => true,
                Err(e) if is_not_found(&e) => false,
                // No rights to read DaemonSets: assume it exists, as its pod says.
                Err(_) => true,
            };
            ds_exists.insert(key, exists);
        }
    }
    let now = k8s_openapi::jiff::Timestamp::now();
    let mut plans: Vec<PodPlan> = pods
        .iter()
        .map(|p| {
            let ds = controller_ref(p)
                .filter(|o| o.kind == "DaemonSet")
                .and_then(|o| {
                    ds_exists
                        .get(&(
                            p.metadata.namespace.clone().unwrap_or_default(),
                            o.name.clone(),
                        ))
                        .copied()
                });
            classify(p, opts, ds, now)
        })
        .collect();

    // Budgets (best effort: a user who may not list them still drains).
    let pdb_api: Api<PodDisruptionBudget> = Api::all(clients.main.clone());
    let mut pdb_rv = String::new();
    let mut budgets: Vec<PodDisruptionBudget> = Vec::new();
    if !opts.disable_eviction && plans.iter().any(|p| p.fate == Fate::Remove) {
        if let Ok(list) = pdb_api.list(&ListParams::default()).await {
            pdb_rv = list.metadata.resource_version.clone().unwrap_or_default();
            budgets = list.items;
        }
    }
    let empty = BTreeMap::new();
    for (plan, pod) in plans.iter_mut().zip(&pods) {
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        for b in &budgets {
            if b.metadata.namespace.as_deref() == Some(plan.namespace.as_str())
                && selector_matches(b.spec.as_ref().and_then(|s| s.selector.as_ref()), labels)
            {
                let allowed = b
                    .status
                    .as_ref()
                    .and_then(|s| s.disruptions_allowed)
                    .unwrap_or(0);
                let name = format!(
                    "{}/{}",
                    plan.namespace,
                    b.metadata.name.as_deref().unwrap_or("")
                );
                plan.budgets.push(format!(
                    "PodDisruptionBudget {name} allows {allowed} disruption{}",
                    if allowed == 1 { "" } else { "s" }
                ));
                plan.budget_allows.push((name, allowed));
            }
        }
    }
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by(|&a, &b| plans[a].key().cmp(&plans[b].key()));
    let plans = order.into_iter().map(|i| plans[i].clone()).collect();
    Ok(Survey {
        node: node.to_string(),
        we_cordoned,
        plans,
        rv,
        budgets,
        pdb_rv,
    })
}

/// Drains one node that is cordoned and whose pods were surveyed (none blocked).
async fn drain_node(
    clients: &Clients,
    opts: &DrainOptions,
    survey: Survey,
    mut cancel: watch::Receiver<bool>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<NodeReport, Error> {
    let started = Instant::now();
    let Survey {
        node,
        plans,
        rv,
        budgets,
        pdb_rv,
        ..
    } = survey;
    let node = node.as_str();
    let field = format!("spec.nodeName={node}");
    let removable: Vec<usize> = plans
        .iter()
        .enumerate()
        .filter(|(_, p)| p.fate == Fate::Remove)
        .map(|(i, _)| i)
        .collect();
    let mut states: Vec<(usize, PodState)> = removable
        .iter()
        .map(|&i| (i, PodState::NotStarted))
        .collect();
    if opts.dry_run == DryRun::Client {
        let _ = writeln!(
            out,
            "node/{node} would be drained: {} pod{} evicted (dry run)",
            removable.len(),
            plural(removable.len())
        );
        return Ok(NodeReport {
            node: node.into(),
            plans,
            states,
            drained: true,
            reason: None,
        });
    }

    // Start watching before the first eviction, from the list's version,
    // so no deletion is missed.
    let (pod_tx, mut pod_rx) = mpsc::unbounded_channel();
    let watcher = (opts.dry_run == DryRun::None).then(|| {
        tokio::spawn(watch_pods(
            Api::all(clients.raw.clone()),
            field.clone(),
            rv,
            pod_tx,
        ))
    });
    let wakeups = Wakeups::default();
    let budget_watcher = (!budgets.is_empty() && !pdb_rv.is_empty()).then(|| {
        tokio::spawn(watch_budgets(
            Api::all(clients.raw.clone()),
            pdb_rv,
            wakeups.clone(),
        ))
    });

    let (stop_tx, stop_rx) = watch::channel(false);
    let ctx = EvictCtx {
        client: clients.raw.clone(),
        grace_period: opts.grace_period,
        dry_run: opts.dry_run == DryRun::Server,
        disable_eviction: opts.disable_eviction,
        requests: std::sync::Arc::new(tokio::sync::Semaphore::new(opts.concurrency.max(1))),
    };
    let (notice_tx, mut notice_rx) = mpsc::unbounded_channel::<Notice>();
    let index_of: HashMap<(String, String), usize> = states
        .iter()
        .enumerate()
        .map(|(si, (pi, _))| ((plans[*pi].key(), plans[*pi].uid.clone()), si))
        .collect();
    let key_index: HashMap<String, usize> = states
        .iter()
        .enumerate()
        .map(|(si, (pi, _))| (plans[*pi].key(), si))
        .collect();
    let mut deleting_since: HashMap<usize, k8s_openapi::jiff::Timestamp> = HashMap::new();

    let mut progress = Progress::new(err, opts.progress_bar);
    let mut in_flight = FuturesUnordered::new();
    let mut next = 0usize;
    let concurrency = opts.concurrency.max(1);
    let deadline = opts
        .timeout
        .filter(|t| !t.is_zero())
        .map(|t| tokio::time::Instant::now() + t);
    let mut stop_reason: Option<String> = None;
    let mut stopped_at: Option<tokio::time::Instant> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(if opts.progress_bar {
        200
    } else {
        1000
    }));
    let mut pod_events_open = watcher.is_some();
    let mut cancel_open = true;
    let mut last_notice: HashMap<String, Instant> = HashMap::new();

    let counts = |states: &[(usize, PodState)]| {
        let mut c = Counts {
            total: states.len(),
            ..Default::default()
        };
        for (_, s) in states {
            match s {
                PodState::Gone | PodState::WouldEvict | PodState::SkippedWait => c.gone += 1,
                PodState::Evicting | PodState::Terminating => c.in_flight += 1,
                PodState::HeldByBudget(_) | PodState::WouldBeRefused(_) => c.blocked += 1,
                PodState::Failed(_) => c.failed += 1,
                PodState::NotStarted => {}
            }
        }
        c
    };
    let settled = |s: &PodState| {
        matches!(
            s,
            PodState::Gone
                | PodState::WouldEvict
                | PodState::SkippedWait
                | PodState::Failed(_)
                | PodState::WouldBeRefused(_)
        )
    };

    loop {
        // Launch up to the concurrency bound. Pods a budget holds wait in
        // their own loops without a request permit, so they do not count:
        // pods no budget covers are not starved behind them.
        let held = states
            .iter()
            .filter(|(_, s)| matches!(s, PodState::HeldByBudget(_)))
            .count();
        while stop_reason.is_none()
            && in_flight.len().saturating_sub(held) < concurrency
            && next < states.len()
        {
            let si = next;
            next += 1;
            if states[si].1 != PodState::NotStarted {
                continue;
            }
            let p = &plans[states[si].0];
            states[si].1 = PodState::Evicting;
            in_flight.push(evict_one(
                &ctx,
                EvictJob {
                    idx: si,
                    ns: p.namespace.clone(),
                    name: p.name.clone(),
                    uid: p.uid.clone(),
                    budgets: wakeups.clone(),
                    stop: stop_rx.clone(),
                    notices: notice_tx.clone(),
                },
            ));
        }
        if states.iter().all(|(_, s)| settled(s)) && in_flight.is_empty() {
            break;
        }
        if stop_reason.is_some() && in_flight.is_empty() {
            break;
        }
        if stopped_at.is_some_and(|t| t.elapsed() > SETTLE) {
            break;
        }
        progress.draw(node, counts(&states), false);
        tokio::select! {
            Some((si, outcome)) = in_flight.next(), if !in_flight.is_empty() => {
                let key = plans[states[si].0].key();
                match outcome {
                    Evicted::Accepted => {
                        if states[si].1 != PodState::Gone {
                            if opts.dry_run == DryRun::Server {
                                states[si].1 = PodState::WouldEvict;
                                progress.event(&format!("pod {key} would be evicted (server dry run)"));
                            } else {
                                states[si].1 = PodState::Terminating;
                                let verb = if opts.disable_eviction { "deleted" } else { "evicted" };
                                progress.event(&format!("pod {key} {verb}"));
                            }
                        }
                    }
                    Evicted::Gone => {
                        if states[si].1 != PodState::Gone {
                            states[si].1 = PodState::Gone;
                            progress.event(&format!("pod {key} is gone"));
                        }
                    }
                    Evicted::Failed(m) => {
                        progress.line(&format!("error: cannot evict pod {key}: {m}"));
                        states[si].1 = PodState::Failed(m);
                    }
                    Evicted::WouldBeRefused(m) => {
                        let who = budget_who(
                            &plans[states[si].0].namespace,
                            &m,
                            "a PodDisruptionBudget",
                        );
                        progress.event(&format!("pod {key} would be refused (429) by {who} (server dry run)"));
                        states[si].1 = PodState::WouldBeRefused(m);
                    }
                    Evicted::Stopped => {
                        // A pod held by a budget keeps the server's last word for the report.
                        if states[si].1 == PodState::Evicting {
                            states[si].1 = PodState::NotStarted;
                        }
                    }
                }
            }
            Some(n) = notice_rx.recv() => {
                match n {
                    Notice::Started(si) => {
                        let verb = if opts.disable_eviction { "deleting" } else { "evicting" };
                        progress.event(&format!("{verb} pod {}", plans[states[si].0].key()));
                    }
                    Notice::Refused { idx, message, retry_in } => {
                        if states[idx].1 != PodState::Gone {
                            states[idx].1 = PodState::HeldByBudget(message.clone());
                        }
                        // One line per budget, repeated at most every 10 s
                        // (kubectl prints one per pod every 5 s).
                        let p = &plans[states[idx].0];
                        let budget = budget_name(&message);
                        let who = budget
                            .map(|b| format!("PodDisruptionBudget {}/{b}", p.namespace))
                            .unwrap_or_else(|| "the API server".into());
                        let due = last_notice.get(&who).is_none_or(|t: &Instant| t.elapsed() >= NOTICE_EVERY);
                        if due {
                            last_notice.insert(who.clone(), Instant::now());
                            let held = states
                                .iter()
                                .filter(|(pi, s)| {
                                    plans[*pi].namespace == p.namespace
                                        && matches!(s, PodState::HeldByBudget(m) if budget_name(m) == budget)
                                })
                                .count();
                            progress.line(&format!(
                                "pod {}: eviction refused (429) by {who}: {message}; {held} {} for it; retrying in {}s, or as soon as it allows a disruption",
                                p.key(),
                                if held == 1 { "pod waits" } else { "pods wait" },
                                retry_in.as_secs()
                            ));
                        }
                    }
                }
            }
            ev = pod_rx.recv(), if pod_events_open => {
                match ev {
                    None => pod_events_open = false,
                    Some(PodEvent::Gone { key, uid }) => {
                        if let Some(&si) = index_of.get(&(key.clone(), uid)) {
                            if states[si].1 != PodState::Gone && !matches!(states[si].1, PodState::Failed(_)) {
                                states[si].1 = PodState::Gone;
                                progress.event(&format!("pod {key} is gone"));
                            }
                        }
                    }
                    Some(PodEvent::Present { key, uid, deleting_since: since }) => {
                        if let Some(&si) = key_index.get(&key) {
                            if plans[states[si].0].uid != uid {
                                if states[si].1 != PodState::Gone {
                                    states[si].1 = PodState::Gone;
                                    progress.event(&format!("pod {key} is gone (replaced by a new pod of the same name)"));
                                }
                            } else if let Some(t) = since {
                                deleting_since.insert(si, t);
                            }
                        }
                    }
                    Some(PodEvent::Snapshot(set)) => {
                        for (pi, s) in states.iter_mut() {
                            let p = &plans[*pi];
                            if !set.contains(&(p.key(), p.uid.clone())) && *s != PodState::Gone {
                                *s = PodState::Gone;
                            }
                        }
                    }
                }
            }
            _ = tick.tick() => {
                if let Some(limit) = opts.skip_wait_for_delete_timeout {
                    let now = k8s_openapi::jiff::Timestamp::now();
                    for (si, since) in &deleting_since {
                        if states[*si].1 == PodState::Terminating && now.duration_since(*since).as_secs() > limit.as_secs() as i64 {
                            states[*si].1 = PodState::SkippedWait;
                        }
                    }
                }
            }
            _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => futures::future::pending().await } }, if stop_reason.is_none() => {
                stop_reason = Some(format!("timed out after {} (--timeout)", humanize(opts.timeout.unwrap_or_default())));
                stopped_at = Some(tokio::time::Instant::now());
                let _ = stop_tx.send(true);
            }
            r = cancel.changed(), if stop_reason.is_none() && cancel_open => {
                if r.is_err() {
                    cancel_open = false;
                } else if *cancel.borrow() {
                    stop_reason = Some("interrupted".into());
                    stopped_at = Some(tokio::time::Instant::now());
                    let _ = stop_tx.send(true);
                }
            }
        }
    }
    progress.draw(node, counts(&states), true);
    progress.clear();
    if let Some(w) = watcher {
        w.abort();
    }
    if let Some(w) = budget_watcher {
        w.abort();
    }

    let failed = states.iter().any(|(_, s)| matches!(s, PodState::Failed(_)));
    let pending = states.iter().any(|(_, s)| !settled(s));
    let refused: Vec<String> = states
        .iter()
        .filter_map(|(pi, s)| match s {
            PodState::WouldBeRefused(m) => Some(budget_who(
                &plans[*pi].namespace,
                m,
                "a PodDisruptionBudget",
            )),
            _ => None,
        })
        .collect();
    let reason = if let Some(r) = stop_reason
        .clone()
        .filter(|_| pending || stop_reason.as_deref() == Some("interrupted"))
    {
        Some(r)
    } else if failed {
        Some("some evictions failed".to_string())
    } else if !refused.is_empty() {
        let mut who = refused.clone();
        who.sort();
        who.dedup();
        Some(format!(
            "{} eviction{} would be refused by {} (server dry run)",
            refused.len(),
            plural(refused.len()),
            who.join(", ")
        ))
    } else if pending {
        Some("some pods are still terminating".to_string())
    } else {
        None
    };
    let drained = reason.is_none();
    let nr = NodeReport {
        node: node.into(),
        plans,
        states,
        drained,
        reason,
    };
    print_report(out, &nr, opts, started.elapsed());
    Ok(nr)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn humanize(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 60.0 && s.fract() == 0.0 {
        format!("{}m{}s", d.as_secs() / 60, d.as_secs() % 60)
    } else {
        format!("{s}s")
    }
}

fn print_plan(out: &mut dyn Write, node: &str, plans: &[PodPlan], opts: &DrainOptions) {
    let _ = writeln!(out, "pods on node/{node} ({}):", plans.len());
    let width = plans.iter().map(|p| p.key().len()).max().unwrap_or(0);
    let verb = if opts.disable_eviction {
        "delete"
    } else {
        "evict"
    };
    for p in plans {
        let (word, why) = match &p.fate {
            Fate::Remove => {
                let mut parts = vec![p.afterlife()];
                parts.extend(p.warnings.iter().cloned());
                parts.extend(p.budgets.iter().cloned());
                (verb, parts.join("; "))
            }
            Fate::Skip(r) => ("skip", r.clone()),
            Fate::Blocked(r) => ("BLOCKED", r.join("; ")),
        };
        let _ = writeln!(out, "  {word:<7} {:<width$}  {why}", p.key());
    }
}

fn print_report(out: &mut dyn Write, r: &NodeReport, opts: &DrainOptions, took: Duration) {
    let _ = writeln!(out, "drain report for node/{}:", r.node);
    let width = r.plans.iter().map(|p| p.key().len()).max().unwrap_or(0);
    let removed_word = if opts.disable_eviction {
        "deleted"
    } else {
        "evicted"
    };
    // The rows first: a server dry run's `would be evicted` is wider than
    // the other words, and the pod names stay in one column.
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for (pi, state) in &r.states {
        let p = &r.plans[*pi];
        let (word, why) = match state {
            PodState::Gone => (removed_word.to_string(), p.afterlife()),
            PodState::WouldEvict => (
                format!("would be {removed_word}"),
                format!("{} (server dry run)", p.afterlife()),
            ),
            PodState::Terminating => (
                removed_word.to_string(),
                format!(
                    "{}; still terminating (--skip-wait-for-delete-timeout SECONDS stops waiting for pods deleted longer ago)",
                    p.afterlife()
                ),
            ),
            PodState::SkippedWait => (
                removed_word.to_string(),
                format!(
                    "{}; not waited for (--skip-wait-for-delete-timeout)",
                    p.afterlife()
                ),
            ),
            PodState::Failed(m) => ("FAILED".into(), m.clone()),
            PodState::WouldBeRefused(m) => {
                let who = budget_who(&p.namespace, m, "a PodDisruptionBudget");
                (
                    "REFUSED".into(),
                    format!("would be refused (429) by {who} (server dry run): {m}"),
                )
            }
            PodState::HeldByBudget(m) => {
                let who = budget_who(&p.namespace, m, "the API server");
                let why = r.reason.clone().unwrap_or_else(|| "stopped".into());
                (
                    "pending".into(),
                    format!("not evicted ({why}): {who} refuses: {m}"),
                )
            }
            PodState::NotStarted | PodState::Evicting => (
                "pending".into(),
                format!(
                    "not evicted: {}",
                    r.reason.clone().unwrap_or_else(|| "stopped".into())
                ),
            ),
        };
        rows.push((word, p.key(), why));
    }
    for p in &r.plans {
        if let Fate::Skip(why) = &p.fate {
            rows.push(("left".into(), p.key(), why.clone()));
        }
    }
    let words = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(8);
    for (word, key, why) in rows {
        let _ = writeln!(out, "  {word:<words$} {key:<width$}  {why}");
    }
    let gone_no_controller = r
        .states
        .iter()
        .filter(|(pi, s)| {
            matches!(
                s,
                PodState::Gone | PodState::Terminating | PodState::SkippedWait
            ) && r.plans[*pi].controller.is_none()
                && !r.plans[*pi].finished
        })
        .count();
    if gone_no_controller > 0 {
        let _ = writeln!(
            out,
            "  {gone_no_controller} {removed_word} pod{} had no controller and will not come back",
            plural(gone_no_controller)
        );
    }
    if opts.dry_run == DryRun::Server {
        // Each eviction was checked alone against the budgets as listed: a
        // dry run uses up no disruption, so pods that a budget allows one
        // at a time all "would be evicted".
        let mut covered: BTreeMap<&str, (i32, usize)> = BTreeMap::new();
        for (pi, s) in &r.states {
            if *s == PodState::WouldEvict {
                for (b, allowed) in &r.plans[*pi].budget_allows {
                    covered.entry(b.as_str()).or_insert((*allowed, 0)).1 += 1;
                }
            }
        }
        for (b, (allowed, n)) in covered {
            if n as i64 > i64::from(allowed) {
                let _ = writeln!(
                    out,
                    "  note: a server dry run checks each eviction alone: PodDisruptionBudget {b} allows {allowed} disruption{} now and covers {n} of these pods, so a real drain evicts them as it allows, waiting for replacements",
                    plural(allowed.max(0) as usize)
                );
            }
        }
    }
    match &r.reason {
        None => {
            let _ = writeln!(
                out,
                "node/{} drained{} in {:.1}s",
                r.node,
                opts.dry_run.suffix(),
                took.as_secs_f64()
            );
        }
        Some(why) if opts.dry_run != DryRun::None => {
            let _ = writeln!(out, "node/{} would NOT be drained: {why}", r.node);
        }
        Some(why) => {
            let _ = writeln!(
                out,
                "node/{} NOT drained: {why}; it stays cordoned (uncordon with `kubectl kfsched node uncordon {}`)",
                r.node, r.node
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, PodSpec, PodStatus, Volume};

    fn pod(owner: Option<&str>, empty_dir: bool, phase: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                owner_references: owner.map(|k| {
                    vec![OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: k.into(),
                        name: "c".into(),
                        uid: "u".into(),
                        controller: Some(true),
                        block_owner_deletion: None,
                    }]
                }),
                ..Default::default()
            },
            spec: Some(PodSpec {
                volumes: empty_dir.then(|| {
                    vec![Volume {
                        name: "v".into(),
                        empty_dir: Some(EmptyDirVolumeSource::default()),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                ..Default::default()
            }),
        }
    }

    fn opts() -> DrainOptions {
        DrainOptions::new(Targets::Names(vec!["n".into()]))
    }

    fn fate(p: &Pod, o: &DrainOptions, ds: Option<bool>) -> Fate {
        classify(p, o, ds, k8s_openapi::jiff::Timestamp::now()).fate
    }

    #[test]
    fn every_block_names_its_flag() {
        let o = opts();
        assert_eq!(
            fate(&pod(Some("DaemonSet"), false, "Running"), &o, Some(true)),
            Fate::Blocked(vec![
                "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)".into()
            ])
        );
        assert_eq!(
            fate(&pod(None, true, "Running"), &o, None),
            Fate::Blocked(vec![
                "Pods with local storage (use --delete-emptydir-data to override)".into(),
                "Pods that declare no controller (use --force to override)".into(),
            ])
        );
        assert_eq!(
            fate(&pod(Some("ReplicaSet"), false, "Running"), &o, None),
            Fate::Remove
        );
        assert_eq!(fate(&pod(None, true, "Succeeded"), &o, None), Fate::Remove);
    }

    #[test]
    fn flags_lift_the_blocks() {
        let mut o = opts();
        o.ignore_daemonsets = true;
        o.delete_emptydir_data = true;
        o.force = true;
        assert!(matches!(
            fate(&pod(Some("DaemonSet"), false, "Running"), &o, Some(true)),
            Fate::Skip(_)
        ));
        assert_eq!(
            fate(&pod(Some("DaemonSet"), false, "Running"), &o, Some(false)),
            Fate::Remove
        );
        let p = classify(
            &pod(None, true, "Running"),
            &o,
            None,
            k8s_openapi::jiff::Timestamp::now(),
        );
        assert_eq!(p.fate, Fate::Remove);
        assert_eq!(p.warnings.len(), 2);
        assert_eq!(p.afterlife(), "will NOT come back (no controller)");
        let p = classify(
            &pod(Some("ReplicaSet"), false, "Running"),
            &o,
            None,
            k8s_openapi::jiff::Timestamp::now(),
        );
        assert_eq!(p.afterlife(), "recreated by ReplicaSet ns/c");
    }

    #[test]
    fn orphaned_daemonset_pods_need_force() {
        let mut o = opts();
        o.ignore_daemonsets = true;
        assert!(
            matches!(fate(&pod(Some("DaemonSet"), false, "Running"), &o, Some(false)), Fate::Blocked(r) if r[0].contains("--force"))
        );
    }

    #[test]
    fn budget_names_come_from_the_cause() {
        assert_eq!(
            budget_name("The disruption budget web-pdb needs 2 healthy pods and has 2 currently"),
            Some("web-pdb")
        );
        assert_eq!(budget_name("Cannot evict pod"), None);
    }

    #[test]
    fn budget_selectors() {
        let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        assert!(!selector_matches(None, &labels));
        assert!(selector_matches(
            Some(&MetaLabelSelector::default()),
            &labels
        ));
        let sel = MetaLabelSelector {
            match_labels: Some([("app".to_string(), "db".to_string())].into()),
            match_expressions: None,
        };
        assert!(!selector_matches(Some(&sel), &labels));
    }
}
