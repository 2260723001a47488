//! The drain's two watches, on `kube::runtime`'s watcher with its default
//! backoff, so an error or an expired resourceVersion relists and resumes
//! instead of ending the watch:
//!
//! - [`pod_changes`]: the node's pods (one watch for all of them, not one
//!   `await_condition(is_deleted(uid))` per pod), so the drain sees each
//!   evicted pod go or be replaced (a new UID under the same name);
//! - [`wake_on_budgets`]: the PodDisruptionBudgets, so a pod held by a 429
//!   is retried as soon as its budget allows a disruption.
//!
//! Neither polls: each (re)start is one LIST, then a WATCH from there.

use std::collections::HashSet;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};

use super::eviction::Wakeups;

/// What the pod watch saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum PodChange {
    /// The pod exists with this UID; `deleting_since` is its deletionTimestamp.
    Present {
        key: String,
        uid: String,
        deleting_since: Option<Timestamp>,
    },
    /// The pod with this UID was deleted.
    Gone { key: String, uid: String },
    /// A complete list (at the start, and after the watch restarted): every
    /// pod that exists, as `(ns/name, uid)`; any other is gone.
    Snapshot(HashSet<(String, String)>),
}

fn pod_key(meta: &PartialObjectMeta<Pod>) -> (String, String) {
    let m = &meta.metadata;
    (
        format!(
            "{}/{}",
            m.namespace.as_deref().unwrap_or(""),
            m.name.as_deref().unwrap_or("")
        ),
        m.uid.clone().unwrap_or_default(),
    )
}

fn present(meta: &PartialObjectMeta<Pod>) -> PodChange {
    let (key, uid) = pod_key(meta);
    PodChange::Present {
        key,
        uid,
        deleting_since: meta.metadata.deletion_timestamp.as_ref().map(|t| t.0),
    }
}

/// The pods on `node`, watched by metadata only (the drain needs names,
/// UIDs and deletion timestamps). Errors are retried with the watcher's
/// backoff and never end the stream.
pub(super) fn pod_changes(
    client: kube::Client,
    node: &str,
) -> impl Stream<Item = PodChange> + Send + use<> {
    let config = watcher::Config::default().fields(&format!("spec.nodeName={node}"));
    let mut listing: Option<HashSet<(String, String)>> = None;
    watcher::watcher(Api::<PartialObjectMeta<Pod>>::all(client), config)
        .default_backoff()
        .filter_map(move |event| {
            let change = match event {
                Ok(Event::Apply(p)) => Some(present(&p)),
                Ok(Event::Delete(p)) => {
                    let (key, uid) = pod_key(&p);
                    Some(PodChange::Gone { key, uid })
                }
                Ok(Event::Init) => {
                    listing = Some(HashSet::new());
                    None
                }
                Ok(Event::InitApply(p)) => {
                    if let Some(set) = listing.as_mut() {
                        set.insert(pod_key(&p));
                    }
                    Some(present(&p))
                }
                Ok(Event::InitDone) => listing.take().map(PodChange::Snapshot),
                // The backoff retries; the next list says what changed meanwhile.
                Err(_) => None,
            };
            futures::future::ready(change)
        })
}

/// Watches the PodDisruptionBudgets; when one allows `n` disruptions, wakes
/// up to `n` of the eviction loops it holds. Never returns.
///
/// The first list is what the drain's own list of budgets already said, so
/// it wakes nobody; a list after a restart may report a disruption that was
/// allowed while the watch was down, so it wakes as any change does.
pub(super) async fn wake_on_budgets(client: kube::Client, wakeups: Wakeups) {
    let mut first_list = true;
    watcher::watcher(
        Api::<PodDisruptionBudget>::all(client),
        watcher::Config::default(),
    )
    .default_backoff()
    .for_each(|event| {
        match event {
            Ok(Event::Apply(b)) => wake(&b, &wakeups),
            Ok(Event::InitApply(b)) if !first_list => wake(&b, &wakeups),
            Ok(Event::InitDone) => first_list = false,
            _ => {}
        }
        futures::future::ready(())
    })
    .await;
}

fn wake(budget: &PodDisruptionBudget, wakeups: &Wakeups) {
    let allowed = budget
        .status
        .as_ref()
        .and_then(|s| s.disruptions_allowed)
        .unwrap_or(0);
    if allowed <= 0 {
        return;
    }
    let key = format!(
        "{}/{}",
        budget.metadata.namespace.as_deref().unwrap_or(""),
        budget.metadata.name.as_deref().unwrap_or("")
    );
    let n = wakeups.get(&key);
    for _ in 0..allowed.min(64) {
        n.notify_one();
    }
}
