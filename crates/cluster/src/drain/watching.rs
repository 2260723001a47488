//! The drain's two watches: the node's pods (one watch for all of them),
//! so the drain sees each evicted pod go or be replaced (a new UID under
//! the same name), relisting when the watch expires; and the
//! PodDisruptionBudgets, so a pod held by a 429 is retried as soon as its
//! budget allows a disruption.

use std::collections::HashSet;
use std::time::Duration;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, WatchEvent, WatchParams};
use tokio::sync::mpsc;

use super::eviction::Wakeups;
use super::survey::list_pods;
use crate::client;

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
    /// A fresh list after the watch expired: every pod that exists, as
    /// `(ns/name, uid)`; any other is gone.
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

/// Watches the node's pods from `rv`, relisting when the watch expires.
pub(super) async fn watch_pods(
    api: Api<Pod>,
    field: String,
    mut rv: String,
    tx: mpsc::UnboundedSender<PodChange>,
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
                                .send(PodChange::Present {
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
                            if tx.send(PodChange::Gone { key, uid }).is_err() {
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
                    if tx.send(PodChange::Snapshot(set)).is_err() {
                        return;
                    }
                }
                Err(_) => failures += 1,
            }
        }
    }
}

/// Watches the PodDisruptionBudgets; when one allows `n` disruptions, wakes
/// up to `n` of the eviction loops it holds.
pub(super) async fn watch_budgets(api: Api<PodDisruptionBudget>, mut rv: String, wakeups: Wakeups) {
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
