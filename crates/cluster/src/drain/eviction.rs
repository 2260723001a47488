//! Evicting one pod: the `policy/v1` Eviction API (or DELETE with
//! `--disable-eviction`), with the UID precondition and `--grace-period`;
//! on 429 a retry with backoff, never sooner than the server's
//! `Retry-After` unless the budget watch sees the PodDisruptionBudget that
//! the server named allow a disruption.
//!
//! The retry loop is written here rather than taken from a backoff crate
//! because it waits on two things at once: the timer and the wake-up of the
//! one budget that holds this pod (and Ctrl-C or `--timeout`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    DeleteOptions, LabelSelector as MetaLabelSelector, ObjectMeta, Preconditions,
};
use kube::api::{Api, DeleteParams, PostParams};
use kube::core::{Selector, SelectorExt};
use tokio::sync::{Notify, Semaphore, mpsc, watch};

use crate::client;

/// The longest wait between two eviction attempts of one pod.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The wait after a 429 that carries no `Retry-After`.
const DEFAULT_RETRY_AFTER: u32 = 5;

/// A 429 from the Eviction API: the server's words and the
/// PodDisruptionBudget they name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvictionRefusal {
    /// The server's message: the budget's cause ("The disruption budget web
    /// needs 2 healthy pods and has 2 currently") or the status message.
    pub message: String,
    /// The budget the message names, as `namespace/name`.
    pub budget: Option<String>,
}

impl EvictionRefusal {
    /// A refusal of an eviction in `namespace` (a budget is in its pod's namespace).
    pub fn new(namespace: &str, message: String) -> EvictionRefusal {
        let budget = budget_name(&message).map(|b| format!("{namespace}/{b}"));
        EvictionRefusal { message, budget }
    }

    /// `PodDisruptionBudget ns/name`, or `otherwise` when the server named none.
    pub fn who(&self, otherwise: &str) -> String {
        self.budget.as_ref().map_or_else(
            || otherwise.to_string(),
            |b| format!("PodDisruptionBudget {b}"),
        )
    }
}

/// The budget the server names in a 429 cause.
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

/// Whether a PodDisruptionBudget's selector selects these labels. In
/// policy/v1 a null selector selects nothing and an empty one everything.
pub fn selector_matches(
    sel: Option<&MetaLabelSelector>,
    labels: &BTreeMap<String, String>,
) -> bool {
    let Some(sel) = sel else { return false };
    Selector::try_from(sel.clone()).is_ok_and(|s| s.matches(labels))
}

/// How one eviction attempt loop ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Evicted {
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
    WouldBeRefused(EvictionRefusal),
}

/// A notice from an eviction loop to the drain loop.
pub(super) enum Notice {
    /// Sent the first request.
    Started(usize),
    /// 429: held, retried in `retry_in` or when the budget allows one.
    Refused {
        idx: usize,
        refusal: EvictionRefusal,
        retry_in: Duration,
    },
}

/// One wake-up signal per PodDisruptionBudget (`ns/name`), shared by the
/// budget watch and the eviction loops that a budget holds.
#[derive(Clone, Default)]
pub(super) struct Wakeups(Arc<Mutex<HashMap<String, Arc<Notify>>>>);

impl Wakeups {
    pub(super) fn get(&self, key: &str) -> Arc<Notify> {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key.to_string()).or_default().clone()
    }
}

/// What every eviction of one node shares.
pub(super) struct EvictCtx {
    pub client: kube::Client,
    pub grace_period: Option<u32>,
    pub dry_run: bool,
    pub disable_eviction: bool,
    /// `--concurrency` permits, held only while a request is on the wire:
    /// a pod waiting out a 429 gives its permit back.
    pub requests: Arc<Semaphore>,
}

/// One pod to evict, and the channels its loop talks through.
pub(super) struct EvictJob {
    pub idx: usize,
    pub ns: String,
    pub name: String,
    pub uid: String,
    /// Bumped when a PodDisruptionBudget allows a disruption.
    pub budgets: Wakeups,
    /// Ctrl-C or --timeout.
    pub stop: watch::Receiver<bool>,
    pub notices: mpsc::UnboundedSender<Notice>,
}

/// What the server's answer to one attempt means.
enum Answer {
    Done(Evicted),
    /// 429: wait this long (or for the budget), then try again.
    Retry(EvictionRefusal, Duration),
}

/// Evicts one pod, retrying on 429 until it is accepted, gone, fails or is stopped.
pub(super) async fn evict_one(ctx: &EvictCtx, job: EvictJob) -> (usize, Evicted) {
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
        let result = send(ctx, &api, &ns, &name, &uid).await;
        drop(permit);
        let (refusal, delay) = match judge(ctx, &ns, attempt, result) {
            Answer::Done(e) => return (idx, e),
            Answer::Retry(r, d) => (r, d),
        };
        // Wake early only for this pod's budget, and only as many pods as
        // it allows disruptions: no thundering herd.
        let wake = refusal.budget.as_deref().map(|b| budgets.get(b));
        let _ = notices.send(Notice::Refused {
            idx,
            refusal,
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
}

/// One eviction (or delete) request.
async fn send(
    ctx: &EvictCtx,
    api: &Api<Pod>,
    ns: &str,
    name: &str,
    uid: &str,
) -> Result<(), kube::Error> {
    if ctx.disable_eviction {
        let dp = DeleteParams {
            dry_run: ctx.dry_run,
            grace_period_seconds: ctx.grace_period,
            preconditions: Some(kube::api::Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        return api.delete(name, &dp).await.map(|_| ());
    }
    // A typed policy/v1 Eviction: kube-rs's `evict` writes the options
    // under `delete_options`, which the server ignores, so --grace-period
    // and the UID precondition would be lost.
    let body = Eviction {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(ns.to_string()),
            ..Default::default()
        },
        delete_options: Some(DeleteOptions {
            grace_period_seconds: ctx.grace_period.map(i64::from),
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            dry_run: ctx.dry_run.then(|| vec!["All".to_string()]),
            ..Default::default()
        }),
    };
    let pp = PostParams {
        dry_run: ctx.dry_run,
        field_manager: None,
    };
    api.create_subresource::<_, kube::core::Status>("eviction", name, &pp, &body)
        .await
        .map(|_| ())
}

/// What an attempt's result means for the pod.
fn judge(ctx: &EvictCtx, ns: &str, attempt: u32, result: Result<(), kube::Error>) -> Answer {
    let e = match result {
        Ok(()) => return Answer::Done(Evicted::Accepted),
        Err(e) => e,
    };
    let kube::Error::Api(status) = &e else {
        return Answer::Done(Evicted::Failed(client::describe(&e)));
    };
    let namespace_terminating = status
        .details
        .as_ref()
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"));
    match status.code {
        404 => Answer::Done(Evicted::Gone),
        // The UID precondition failed: a new pod took the name.
        409 => Answer::Done(Evicted::Gone),
        429 => {
            let server_says = status
                .details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0)
                .unwrap_or(DEFAULT_RETRY_AFTER);
            let backoff = Duration::from_secs(1u64 << attempt.min(5)).min(MAX_BACKOFF);
            let delay = Duration::from_secs(u64::from(server_says)).max(backoff);
            let budget = budget_message(status);
            if ctx.dry_run
                && let Some(m) = budget
            {
                return Answer::Done(Evicted::WouldBeRefused(EvictionRefusal::new(ns, m)));
            }
            let message = budget.unwrap_or_else(|| status.message.clone());
            Answer::Retry(EvictionRefusal::new(ns, message), delay)
        }
        // The namespace is going away and takes the pod with it.
        403 if namespace_terminating => Answer::Done(Evicted::Accepted),
        500 if status.message.contains("more than one PodDisruptionBudget") => {
            Answer::Done(Evicted::Failed(format!(
                "{}: the Eviction API refuses a pod that more than one PodDisruptionBudget selects; fix the budgets, or use --disable-eviction to delete it (bypasses every budget)",
                client::describe(&e)
            )))
        }
        _ => Answer::Done(Evicted::Failed(client::describe(&e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_names_come_from_the_cause() {
        assert_eq!(
            budget_name("The disruption budget web-pdb needs 2 healthy pods and has 2 currently"),
            Some("web-pdb")
        );
        assert_eq!(budget_name("Cannot evict pod"), None);
        let r = EvictionRefusal::new(
            "ns",
            "The disruption budget web-pdb needs 2 healthy pods".into(),
        );
        assert_eq!(r.who("the API server"), "PodDisruptionBudget ns/web-pdb");
        let r = EvictionRefusal::new("ns", "Cannot evict pod".into());
        assert_eq!(r.who("the API server"), "the API server");
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
