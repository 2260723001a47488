//! kubectl's pod filters: each returns a [`Verdict`], and every verdict
//! that blocks or warns carries a reason naming the flag that overrides it
//! ("use --ignore-daemonsets to ignore"). [`classify`] runs them in
//! kubectl's order and gives the pod its [`Fate`].

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;

use super::options::DrainOptions;

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

/// A PodDisruptionBudget that covers a pod, as listed before the drain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    /// `namespace/name`.
    pub name: String,
    /// `status.disruptionsAllowed` when listed.
    pub allowed: i32,
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
    /// The PodDisruptionBudgets that cover the pod.
    pub budgets: Vec<Budget>,
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

    /// Why the pod blocks the drain, when it does: `ns/pod: reasons`.
    pub fn blocked(&self) -> Option<String> {
        match &self.fate {
            Fate::Blocked(r) => Some(format!("{}: {}", self.key(), r.join("; "))),
            _ => None,
        }
    }
}

/// The pod's managing controller, if any.
pub(super) fn controller_ref(pod: &Pod) -> Option<&OwnerReference> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// The DaemonSet that manages the pod, if one does.
pub(super) fn daemonset_of(pod: &Pod) -> Option<&OwnerReference> {
    controller_ref(pod).filter(|o| o.kind == "DaemonSet")
}

fn is_finished(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    )
}

/// kubectl's `skipDeletedFilter`.
pub fn skip_deleted_filter(pod: &Pod, opts: &DrainOptions, now: Timestamp) -> Verdict {
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
    let Some(owner) = daemonset_of(pod) else {
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
    now: Timestamp,
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
        finished: is_finished(pod),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Targets;
    use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, PodSpec, PodStatus, Volume};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

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
        classify(p, o, ds, Timestamp::now()).fate
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
        let p = classify(&pod(None, true, "Running"), &o, None, Timestamp::now());
        assert_eq!(p.fate, Fate::Remove);
        assert_eq!(p.warnings.len(), 2);
        assert_eq!(p.afterlife(), "will NOT come back (no controller)");
        let p = classify(
            &pod(Some("ReplicaSet"), false, "Running"),
            &o,
            None,
            Timestamp::now(),
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
}
