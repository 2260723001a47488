//! The [`Drainer`], kubectl's `pkg/drain` Helper: the options, the clients
//! and the caller's event callback in one place, and the drain's order.
//!
//! Cordon every selected node; survey every node's pods and report each
//! pod's fate; refuse, before evicting anything, when a pod is blocked (and
//! undo the cordons this drain added); then per node: evict with bounded
//! concurrency, follow the pods by watch until each is gone or replaced,
//! and report. Ctrl-C and `--timeout` stop new evictions and report; the
//! node stays cordoned.

use std::collections::HashMap;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::FuturesUnordered;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio::sync::{Semaphore, mpsc, watch};

use super::eviction::{EvictCtx, EvictJob, Evicted, Notice, Wakeups, evict_one};
use super::filters::{Fate, PodPlan};
use super::options::DrainOptions;
use super::report::{
    Blocked, CordonsUndone, Counts, DrainReport, Event, Incomplete, NodeFailure, NodeReport,
    NotDrained, PodState, PodStep,
};
use super::survey::{Survey, survey};
use super::watching::{PodChange, pod_changes, wake_on_budgets};
use crate::client::{self, Clients};
use crate::cordon::is_cordoned;
use crate::edit::{Fetched, name_of, resolve};
use crate::{DryRun, Error, FIELD_MANAGER, Targets};

/// After a stop, how long in-flight requests may take to settle.
const SETTLE: Duration = Duration::from_secs(5);
/// How often a draining node's progress is reported and the
/// `--skip-wait-for-delete-timeout` limit checked.
const TICK: Duration = Duration::from_millis(200);

/// Runs `node drain`: a [`Drainer`] with these parts. `cancel` turns true
/// on Ctrl-C; `on_event` hears everything there is to print.
pub async fn run(
    clients: &Clients,
    opts: &DrainOptions,
    cancel: watch::Receiver<bool>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<DrainReport, Error> {
    Drainer::new(clients, opts, cancel, on_event).run().await
}

/// Drains nodes; reports through its callback, prints nothing.
pub struct Drainer<'a> {
    clients: &'a Clients,
    opts: &'a DrainOptions,
    /// Turns true on Ctrl-C.
    cancel: watch::Receiver<bool>,
    on_event: &'a mut dyn FnMut(Event<'_>),
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

/// An error before any eviction, with what became of the cordons.
fn aborted(e: Error, cordons: CordonsUndone) -> Error {
    if cordons == CordonsUndone::Nothing {
        e
    } else {
        Error::DrainAborted {
            source: Box::new(e),
            cordons,
        }
    }
}

/// A later node, looked at again when its turn comes.
enum Resurvey {
    Ready(Survey),
    Interrupted,
    Failed(NodeFailure),
    Denied(Error),
}

impl<'a> Drainer<'a> {
    pub fn new(
        clients: &'a Clients,
        opts: &'a DrainOptions,
        cancel: watch::Receiver<bool>,
        on_event: &'a mut dyn FnMut(Event<'_>),
    ) -> Drainer<'a> {
        Drainer {
            clients,
            opts,
            cancel,
            on_event,
        }
    }

    /// Every selected node is cordoned, then every node's pods are listed
    /// with their fates before anything is evicted: a blocked pod on any
    /// node refuses the whole drain, and the cordons this drain added are
    /// undone.
    pub async fn run(&mut self) -> Result<DrainReport, Error> {
        if matches!(self.opts.targets, Targets::All) {
            return Err(Error::Usage(
                "node drain takes node names or -l/--selector, not --all".into(),
            ));
        }
        // Until the evictions start, Ctrl-C ends a request at once (a server
        // that never answers would otherwise hold the interrupt until the
        // request times out); the nodes stay as they are, cordoned or not.
        let nodes = or_interrupted(&self.cancel, resolve(self.clients, &self.opts.targets)).await?;
        if nodes.is_empty() {
            (self.on_event)(Event::NoNodes);
            return Ok(DrainReport::default());
        }
        let mut failures = Vec::new();
        let cordoned = self.cordon_all(&nodes, &mut failures).await?;
        let surveys = self.survey_all(&cordoned).await?;
        let blocked: Vec<_> = surveys.iter().flat_map(Survey::blocked).collect();
        if !blocked.is_empty() {
            let mut cordons = self.undo_cordons(&cordoned).await;
            if cordons == CordonsUndone::Nothing && self.opts.dry_run == DryRun::None {
                cordons = CordonsUndone::NothingEvicted { there: false };
            }
            return Err(Error::DrainBlocked(Box::new(Blocked {
                pods: blocked,
                cordons,
            })));
        }
        let report = self.drain_all(surveys, nodes.len(), &mut failures).await?;
        if report.interrupted {
            return Err(Error::Interrupted);
        }
        if failures.is_empty() {
            Ok(report)
        } else {
            Err(Error::DrainIncomplete(Box::new(Incomplete {
                selected: nodes.len(),
                failures,
            })))
        }
    }

    /// Cordons every node first, as kubectl does, so pods evicted from one
    /// node do not land on another that is about to be drained. Returns
    /// `(node, this drain cordoned it)`.
    async fn cordon_all(
        &mut self,
        nodes: &[Fetched],
        failures: &mut Vec<NodeFailure>,
    ) -> Result<Vec<(String, bool)>, Error> {
        let node_api: Api<Node> = Api::all(self.clients.main.clone());
        let mut cordoned = Vec::new();
        for n in nodes.iter().map(|f| &f.node) {
            let name = name_of(n).to_string();
            if is_cordoned(n) {
                (self.on_event)(Event::Cordoned {
                    node: &name,
                    already: true,
                });
                cordoned.push((name, false));
                continue;
            }
            if self.opts.dry_run != DryRun::Client {
                let pp = PatchParams {
                    dry_run: self.opts.dry_run == DryRun::Server,
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
                if let Err(e) = or_interrupted(&self.cancel, cordon).await {
                    if matches!(e, Error::Interrupted) {
                        return Err(e);
                    }
                    if e.is_denied() || nodes.len() == 1 {
                        let undone = self.undo_cordons(&cordoned).await;
                        return Err(aborted(e, undone));
                    }
                    failures.push(NodeFailure::NotCordoned {
                        node: name,
                        error: e,
                    });
                    continue;
                }
            }
            (self.on_event)(Event::Cordoned {
                node: &name,
                already: false,
            });
            cordoned.push((name, true));
        }
        Ok(cordoned)
    }

    /// Pre-flight: every node's pods and their fates, before any eviction.
    async fn survey_all(&mut self, cordoned: &[(String, bool)]) -> Result<Vec<Survey>, Error> {
        let mut surveys: Vec<Survey> = Vec::new();
        for (name, we_cordoned) in cordoned {
            let s = survey(self.clients, self.opts, name, *we_cordoned);
            match or_interrupted(&self.cancel, s).await {
                Ok(s) => {
                    (self.on_event)(Event::Planned {
                        node: &s.node,
                        plans: &s.plans,
                        again: false,
                    });
                    surveys.push(s);
                }
                Err(Error::Interrupted) => return Err(Error::Interrupted),
                Err(e) => {
                    // Nothing was evicted yet: leave every node as it was.
                    let undone = self.undo_cordons(cordoned).await;
                    return Err(aborted(e, undone));
                }
            }
        }
        Ok(surveys)
    }

    /// Drains the surveyed nodes one after the other.
    async fn drain_all(
        &mut self,
        surveys: Vec<Survey>,
        selected: usize,
        failures: &mut Vec<NodeFailure>,
    ) -> Result<DrainReport, Error> {
        let mut report = DrainReport::default();
        for (i, s) in surveys.into_iter().enumerate() {
            if *self.cancel.borrow() {
                report.interrupted = true;
                break;
            }
            // Later nodes waited while earlier ones drained: look again.
            let s = if i == 0 {
                s
            } else {
                match self.resurvey(s).await {
                    Resurvey::Ready(fresh) => fresh,
                    Resurvey::Interrupted => {
                        report.interrupted = true;
                        break;
                    }
                    Resurvey::Failed(f) => {
                        failures.push(f);
                        continue;
                    }
                    Resurvey::Denied(e) => return Err(e),
                }
            };
            let node = s.node.clone();
            match self.drain_node(s).await {
                Ok(nr) => {
                    let interrupted = nr.reason == Some(NotDrained::Interrupted);
                    if let Some(reason) = &nr.reason {
                        failures.push(NodeFailure::NotDrained {
                            node: nr.node.clone(),
                            reason: reason.clone(),
                        });
                    }
                    report.nodes.push(nr);
                    if interrupted {
                        report.interrupted = true;
                        break;
                    }
                }
                Err(e) if e.is_denied() || selected == 1 => return Err(e),
                Err(error) => failures.push(NodeFailure::Failed { node, error }),
            }
        }
        Ok(report)
    }

    /// Surveys a later node again, and says so if its pods changed since
    /// the first list.
    async fn resurvey(&mut self, first: Survey) -> Resurvey {
        let name = first.node.clone();
        let again = survey(self.clients, self.opts, &name, first.we_cordoned);
        match or_interrupted(&self.cancel, again).await {
            Err(Error::Interrupted) => Resurvey::Interrupted,
            Ok(fresh) => {
                if fresh.pod_set() != first.pod_set() {
                    (self.on_event)(Event::Planned {
                        node: &name,
                        plans: &fresh.plans,
                        again: true,
                    });
                }
                let pods = fresh.blocked();
                if pods.is_empty() {
                    return Resurvey::Ready(fresh);
                }
                let own = [(name, fresh.we_cordoned)];
                let mut cordons = self.undo_cordons(&own).await;
                if cordons == CordonsUndone::Nothing && self.opts.dry_run == DryRun::None {
                    cordons = CordonsUndone::NothingEvicted { there: true };
                }
                Resurvey::Failed(NodeFailure::Blocked(Blocked { pods, cordons }))
            }
            Err(e) if e.is_denied() => Resurvey::Denied(e),
            Err(error) => Resurvey::Failed(NodeFailure::Failed { node: name, error }),
        }
    }

    /// Undoes the cordons this drain added (`(node, we_cordoned)`), when it
    /// wrote any.
    async fn undo_cordons(&self, cordoned: &[(String, bool)]) -> CordonsUndone {
        if self.opts.dry_run != DryRun::None {
            return CordonsUndone::Nothing;
        }
        let ours: Vec<&str> = cordoned
            .iter()
            .filter(|(_, we)| *we)
            .map(|(n, _)| n.as_str())
            .collect();
        if ours.is_empty() {
            return CordonsUndone::Nothing;
        }
        let node_api: Api<Node> = Api::all(self.clients.main.clone());
        let pp = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let patch = Patch::Merge(json!({"spec": {"unschedulable": null}}));
        let mut failed = Vec::new();
        for n in &ours {
            if let Err(e) = node_api.patch(n, &pp, &patch).await {
                failed.push((n.to_string(), client::describe(&e)));
            }
        }
        if !failed.is_empty() {
            return CordonsUndone::Failed(failed);
        }
        CordonsUndone::Undone {
            only: ours.len() == 1 && cordoned.len() == 1,
            nodes: ours.into_iter().map(str::to_string).collect(),
        }
    }

    /// Drains one node that is cordoned and whose pods were surveyed (none blocked).
    async fn drain_node(&mut self, survey: Survey) -> Result<NodeReport, Error> {
        let started = Instant::now();
        let opts = self.opts;
        let mut d = NodeDrain::new(survey, opts);
        if opts.dry_run == DryRun::Client {
            (self.on_event)(Event::WouldDrain {
                node: &d.node,
                pods: d.states.len(),
            });
            return Ok(d.into_report(None, started.elapsed()));
        }
        (self.on_event)(Event::Draining { node: &d.node });
        let raw = &self.clients.raw;
        // The watch starts before the first eviction; its first list tells
        // which pods went meanwhile.
        let mut pods: Option<Pin<Box<dyn Stream<Item = PodChange> + Send>>> = (opts.dry_run
            == DryRun::None)
            .then(|| Box::pin(pod_changes(raw.clone(), &d.node)) as _);
        let wakeups = Wakeups::default();
        let watch_budgets = d.watch_budgets;
        let budget_client = raw.clone();
        let budget_wakeups = wakeups.clone();
        let mut budgets = pin!(async move {
            if watch_budgets {
                wake_on_budgets(budget_client, budget_wakeups).await;
            }
            futures::future::pending::<()>().await
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        let ctx = EvictCtx {
            client: raw.clone(),
            grace_period: opts.grace_period,
            dry_run: opts.dry_run == DryRun::Server,
            disable_eviction: opts.disable_eviction,
            requests: Arc::new(Semaphore::new(opts.concurrency.max(1))),
        };
        let (notice_tx, mut notice_rx) = mpsc::unbounded_channel::<Notice>();
        let mut in_flight = FuturesUnordered::new();
        let concurrency = opts.concurrency.max(1);
        let deadline = opts
            .timeout
            .filter(|t| !t.is_zero())
            .map(|t| tokio::time::Instant::now() + t);
        let mut tick = tokio::time::interval(TICK);
        let mut cancel = self.cancel.clone();
        let mut cancel_open = true;
        let emit = &mut *self.on_event;
        loop {
            // Launch up to the concurrency bound. Pods a budget holds wait in
            // their own loops without a request permit, so they do not count:
            // pods no budget covers are not starved behind them.
            while d.stop.is_none() && in_flight.len().saturating_sub(d.held()) < concurrency {
                let Some((idx, p)) = d.next_pod() else { break };
                in_flight.push(evict_one(
                    &ctx,
                    EvictJob {
                        idx,
                        ns: p.namespace.clone(),
                        name: p.name.clone(),
                        uid: p.uid.clone(),
                        budgets: wakeups.clone(),
                        stop: stop_rx.clone(),
                        notices: notice_tx.clone(),
                    },
                ));
            }
            if d.states.iter().all(|(_, s)| s.is_settled()) && in_flight.is_empty() {
                break;
            }
            if d.stop.is_some() && in_flight.is_empty() {
                break;
            }
            if d.stopped_at.is_some_and(|t| t.elapsed() > SETTLE) {
                break;
            }
            emit(Event::Progress {
                node: &d.node,
                counts: Counts::of(&d.states),
            });
            let pods_open = pods.is_some();
            tokio::select! {
                Some((si, outcome)) = in_flight.next(), if !in_flight.is_empty() => {
                    d.on_evicted(si, outcome, emit);
                }
                Some(n) = notice_rx.recv() => d.on_notice(n, emit),
                change = async { match pods.as_mut() { Some(s) => s.next().await, None => None } }, if pods_open => {
                    match change {
                        Some(c) => d.on_pod_change(c, emit),
                        None => pods = None,
                    }
                }
                _ = tick.tick() => d.on_tick(),
                _ = async { match deadline { Some(t) => tokio::time::sleep_until(t).await, None => futures::future::pending().await } }, if d.stop.is_none() => {
                    d.stop(NotDrained::TimedOut(opts.timeout.unwrap_or_default()));
                    let _ = stop_tx.send(true);
                }
                r = cancel.changed(), if d.stop.is_none() && cancel_open => {
                    if r.is_err() {
                        cancel_open = false;
                    } else if *cancel.borrow() {
                        d.stop(NotDrained::Interrupted);
                        let _ = stop_tx.send(true);
                    }
                }
                _ = &mut budgets => {}
            }
        }
        let reason = d.reason();
        let report = d.into_report(reason, started.elapsed());
        emit(Event::Finished(&report));
        Ok(report)
    }
}

/// One node's drain while it runs: every pod to remove and where it stands.
struct NodeDrain {
    node: String,
    plans: Vec<PodPlan>,
    /// `(index into plans, state)` for every pod to remove.
    states: Vec<(usize, PodState)>,
    /// By `(ns/name, uid)` and by `ns/name`: where the watch's pods are.
    index_of: HashMap<(String, String), usize>,
    key_index: HashMap<String, usize>,
    /// deletionTimestamps seen by the watch, for `--skip-wait-for-delete-timeout`.
    deleting_since: HashMap<usize, Timestamp>,
    skip_wait: Option<Duration>,
    server_dry_run: bool,
    watch_budgets: bool,
    /// The next state to launch.
    next: usize,
    /// Why and when new evictions stopped (Ctrl-C or `--timeout`).
    stop: Option<NotDrained>,
    stopped_at: Option<tokio::time::Instant>,
}

impl NodeDrain {
    fn new(survey: Survey, opts: &DrainOptions) -> NodeDrain {
        let Survey {
            node,
            plans,
            watch_budgets,
            ..
        } = survey;
        let states: Vec<(usize, PodState)> = plans
            .iter()
            .enumerate()
            .filter(|(_, p)| p.fate == Fate::Remove)
            .map(|(i, _)| (i, PodState::NotStarted))
            .collect();
        let index_of = states
            .iter()
            .enumerate()
            .map(|(si, (pi, _))| ((plans[*pi].key(), plans[*pi].uid.clone()), si))
            .collect();
        let key_index = states
            .iter()
            .enumerate()
            .map(|(si, (pi, _))| (plans[*pi].key(), si))
            .collect();
        NodeDrain {
            node,
            plans,
            states,
            index_of,
            key_index,
            deleting_since: HashMap::new(),
            skip_wait: opts.skip_wait_for_delete_timeout,
            server_dry_run: opts.dry_run == DryRun::Server,
            watch_budgets,
            next: 0,
            stop: None,
            stopped_at: None,
        }
    }

    fn plan(&self, si: usize) -> &PodPlan {
        &self.plans[self.states[si].0]
    }

    /// Pods held by a budget (waiting without a request permit).
    fn held(&self) -> usize {
        self.states
            .iter()
            .filter(|(_, s)| matches!(s, PodState::HeldByBudget(_)))
            .count()
    }

    /// The next pod to evict, marked as evicting.
    fn next_pod(&mut self) -> Option<(usize, &PodPlan)> {
        while self.next < self.states.len() {
            let si = self.next;
            self.next += 1;
            if self.states[si].1 == PodState::NotStarted {
                self.states[si].1 = PodState::Evicting;
                return Some((si, self.plan(si)));
            }
        }
        None
    }

    fn stop(&mut self, why: NotDrained) {
        self.stop = Some(why);
        self.stopped_at = Some(tokio::time::Instant::now());
    }

    fn gone(&mut self, si: usize, replaced: bool, emit: &mut dyn FnMut(Event<'_>)) {
        self.states[si].1 = PodState::Gone;
        emit(Event::Pod {
            pod: self.plan(si),
            step: PodStep::Gone { replaced },
        });
    }

    fn on_evicted(&mut self, si: usize, outcome: Evicted, emit: &mut dyn FnMut(Event<'_>)) {
        let pod = &self.plans[self.states[si].0];
        match outcome {
            Evicted::Accepted if self.states[si].1 != PodState::Gone => {
                self.states[si].1 = if self.server_dry_run {
                    PodState::WouldEvict
                } else {
                    PodState::Terminating
                };
                emit(Event::Pod {
                    pod,
                    step: PodStep::Accepted,
                });
            }
            Evicted::Accepted => {}
            Evicted::Gone => {
                if self.states[si].1 != PodState::Gone {
                    self.gone(si, false, emit);
                }
            }
            Evicted::Failed(m) => {
                emit(Event::Pod {
                    pod,
                    step: PodStep::Failed(&m),
                });
                self.states[si].1 = PodState::Failed(m);
            }
            Evicted::WouldBeRefused(r) => {
                emit(Event::Pod {
                    pod,
                    step: PodStep::WouldBeRefused(&r),
                });
                self.states[si].1 = PodState::WouldBeRefused(r);
            }
            Evicted::Stopped => {
                // A pod held by a budget keeps the server's last word for the report.
                if self.states[si].1 == PodState::Evicting {
                    self.states[si].1 = PodState::NotStarted;
                }
            }
        }
    }

    fn on_notice(&mut self, notice: Notice, emit: &mut dyn FnMut(Event<'_>)) {
        match notice {
            Notice::Started(si) => emit(Event::Pod {
                pod: self.plan(si),
                step: PodStep::Evicting,
            }),
            Notice::Refused {
                idx,
                refusal,
                retry_in,
            } => {
                if self.states[idx].1 != PodState::Gone {
                    self.states[idx].1 = PodState::HeldByBudget(refusal.clone());
                }
                let pod = self.plan(idx);
                let waiting = self
                    .states
                    .iter()
                    .filter(|(pi, s)| {
                        self.plans[*pi].namespace == pod.namespace
                            && matches!(s, PodState::HeldByBudget(r) if r.budget == refusal.budget)
                    })
                    .count();
                emit(Event::Held {
                    pod,
                    refusal: &refusal,
                    waiting,
                    retry_in,
                });
            }
        }
    }

    fn on_pod_change(&mut self, change: PodChange, emit: &mut dyn FnMut(Event<'_>)) {
        let open = |s: &PodState| *s != PodState::Gone && !matches!(s, PodState::Failed(_));
        match change {
            PodChange::Gone { key, uid } => {
                if let Some(&si) = self.index_of.get(&(key, uid))
                    && open(&self.states[si].1)
                {
                    self.gone(si, false, emit);
                }
            }
            PodChange::Present {
                key,
                uid,
                deleting_since,
            } => {
                let Some(&si) = self.key_index.get(&key) else {
                    return;
                };
                if self.plan(si).uid != uid {
                    if self.states[si].1 != PodState::Gone {
                        self.gone(si, true, emit);
                    }
                } else if let Some(t) = deleting_since {
                    self.deleting_since.insert(si, t);
                }
            }
            PodChange::Snapshot(set) => {
                for si in 0..self.states.len() {
                    let p = self.plan(si);
                    if !set.contains(&(p.key(), p.uid.clone())) && open(&self.states[si].1) {
                        self.gone(si, false, emit);
                    }
                }
            }
        }
    }

    /// Stops waiting for pods deleted longer ago than `--skip-wait-for-delete-timeout`.
    fn on_tick(&mut self) {
        let Some(limit) = self.skip_wait else { return };
        let now = Timestamp::now();
        for (si, since) in &self.deleting_since {
            if self.states[*si].1 == PodState::Terminating
                && now.duration_since(*since).as_secs() > limit.as_secs() as i64
            {
                self.states[*si].1 = PodState::SkippedWait;
            }
        }
    }

    /// Why the node is not drained, if it is not.
    fn reason(&self) -> Option<NotDrained> {
        let failed = self
            .states
            .iter()
            .any(|(_, s)| matches!(s, PodState::Failed(_)));
        let pending = self.states.iter().any(|(_, s)| !s.is_settled());
        let refused: Vec<String> = self
            .states
            .iter()
            .filter_map(|(_, s)| match s {
                PodState::WouldBeRefused(r) => Some(r.who("a PodDisruptionBudget")),
                _ => None,
            })
            .collect();
        match &self.stop {
            Some(r) if pending || *r == NotDrained::Interrupted => Some(r.clone()),
            _ if failed => Some(NotDrained::EvictionsFailed),
            _ if !refused.is_empty() => {
                let count = refused.len();
                let mut budgets = refused;
                budgets.sort();
                budgets.dedup();
                Some(NotDrained::WouldBeRefused { count, budgets })
            }
            _ if pending => Some(NotDrained::StillTerminating),
            _ => None,
        }
    }

    fn into_report(self, reason: Option<NotDrained>, elapsed: Duration) -> NodeReport {
        NodeReport {
            node: self.node,
            plans: self.plans,
            states: self.states,
            reason,
            elapsed,
        }
    }
}

#[cfg(test)]
mod tests;
