//! The record `node apply` keeps on every node it writes, in annotation
//! [`MANAGED_ANNOTATION`]: what each policy added, by the policy's
//! `metadata.name` (`{"policies":{"p":{"labels":{"k":"v"},"taints":["k=v:NoSchedule"]}}}`),
//! so `--prune` removes exactly those entries and two policies applied to
//! one cluster never prune each other's. A record of kfsched 0.1 (one set of
//! entries, no policy names) is read too, and rewritten on the next write.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use serde::{Deserialize, Serialize};

use super::plan::Desired;
use crate::taint::display;

/// The annotation that records what `node apply` added (and what the
/// exported node policy added when the node registered).
pub use kfsched_core::admission::MANAGED_ANNOTATION;

/// What one policy's applies added to a node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Managed {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// `key=value:Effect` / `key:Effect`, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<String>,
}

impl Managed {
    pub(super) fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.taints.is_empty()
    }
}

/// The content of [`MANAGED_ANNOTATION`]: what each policy added, by the
/// policy's `metadata.name`, so two policies applied to one cluster (two
/// teams, disjoint pools) never prune each other's values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub policies: BTreeMap<String, Managed>,
}

/// A node's record, split into the applying policy's part and the rest.
#[derive(Clone, Debug, Default)]
pub(super) struct Split {
    pub own: Managed,
    pub others: BTreeMap<String, Managed>,
    /// Entries of no policy: a kfsched 0.1 record (one set of entries, no
    /// policy names), kept under the name `""`. A policy adopts the ones
    /// it declares with the value the node has, and no policy prunes the
    /// rest.
    pub unowned: Managed,
    /// The annotation is in the 0.1 form, so writing the node rewrites it.
    pub old_form: bool,
    /// The annotation is not a record kfsched can read: nothing is written
    /// on the node until it is fixed or removed.
    pub invalid: Option<String>,
}

impl Split {
    /// The annotation's new value with `own` replaced by `next`; `None`
    /// deletes it.
    pub(super) fn annotation(&self, policy: &str, next: &Managed) -> Option<String> {
        let mut policies = self.others.clone();
        if !next.is_empty() {
            policies.insert(policy.to_string(), next.clone());
        }
        if !self.unowned.is_empty() {
            policies.insert(String::new(), self.unowned.clone());
        }
        (!policies.is_empty())
            .then(|| serde_json::to_string(&Record { policies }).unwrap_or_default())
    }

    /// The other policy whose record holds this label value.
    pub(super) fn label_owner(&self, key: &str, value: &str) -> Option<&str> {
        self.others
            .iter()
            .find(|(_, m)| m.labels.get(key).map(String::as_str) == Some(value))
            .map(|(p, _)| p.as_str())
    }

    pub(super) fn taint_owner(&self, taint: &str) -> Option<&str> {
        self.others
            .iter()
            .find(|(_, m)| m.taints.iter().any(|t| t == taint))
            .map(|(p, _)| p.as_str())
    }
}

/// The node's record, split into `policy`'s part and the rest.
pub(super) fn read_record(node: &Node, policy: &str) -> Split {
    let Some(raw) = node
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(MANAGED_ANNOTATION))
    else {
        return Split::default();
    };
    if let Ok(mut r) = serde_json::from_str::<Record>(raw) {
        return Split {
            own: r.policies.remove(policy).unwrap_or_default(),
            unowned: r.policies.remove("").unwrap_or_default(),
            others: r.policies,
            ..Default::default()
        };
    }
    match serde_json::from_str::<Managed>(raw) {
        Ok(m) => Split {
            unowned: m,
            old_form: true,
            ..Default::default()
        },
        Err(e) => Split {
            invalid: Some(e.to_string()),
            ..Default::default()
        },
    }
}

impl Split {
    /// Moves the unowned entries this policy declares, with the value the
    /// node has, into its own; says which moved.
    pub(super) fn adopt(&mut self, want: &Desired, node: &Node) -> Vec<String> {
        let mut moved = Vec::new();
        let empty = BTreeMap::new();
        let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
        let unowned = std::mem::take(&mut self.unowned.labels);
        for (k, v) in unowned {
            let declared = want.labels.get(&k).is_some_and(|(w, _)| *w == v);
            if declared && labels.get(&k) == Some(&v) {
                moved.push(format!("+ label {k}={v} (from an older kfsched's record)"));
                self.own.labels.insert(k, v);
            } else {
                self.unowned.labels.insert(k, v);
            }
        }
        let on_node: Vec<String> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .map(|t| t.iter().map(display).collect())
            .unwrap_or_default();
        let unowned = std::mem::take(&mut self.unowned.taints);
        for t in unowned {
            let declared = want.taints.iter().any(|(w, _)| display(w) == t);
            if declared && on_node.contains(&t) {
                moved.push(format!("+ taint {t} (from an older kfsched's record)"));
                self.own.taints.push(t);
            } else {
                self.unowned.taints.push(t);
            }
        }
        self.own.taints.sort();
        self.own.taints.dedup();
        moved
    }
}
