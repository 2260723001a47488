//! Planning, pure: which pools a node is in, what they want on it
//! ([`desired`]), and the [`NodePlan`] that gets it there from what the node
//! carries and what its record says an earlier apply added ([`plan_node`]).
//!
//! A node belongs to a pool when its name matches one of the pool's
//! `nodes` globs **or** its labels match the pool's `nodeSelector` (either
//! form alone is enough; a pool with neither selects nothing). Labels and
//! taints that were already on the node, or that someone changed since an
//! apply wrote them, are never touched by prune. A value apply itself wrote
//! may be changed by a later apply without `--overwrite`; anyone else's
//! value needs `--overwrite`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Taint};
use serde_json::{Map, Value as Json, json};

use super::record::{MANAGED_ANNOTATION, Managed, Split, read_record};
use crate::edit::{Fetched, name_of};
use crate::taint::{TaintChange, display, parse_change};
use crate::{DryRun, Error, Refusal, RefusalKind};
use kfsched_core::policy::{NodePool, Policy};

#[derive(Clone, Copy, Debug, Default)]
pub struct PoolOptions {
    pub overwrite: bool,
    pub prune: bool,
    pub dry_run: DryRun,
}

/// What the pools want on one node.
#[derive(Clone, Debug, Default)]
pub struct Desired {
    /// The policy's `metadata.name`: whose record entries these are.
    pub policy: String,
    pub pools: Vec<String>,
    /// key → (value, pool)
    pub labels: BTreeMap<String, (String, String)>,
    pub taints: Vec<(Taint, String)>,
}

/// One line of a node's plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    AddLabel {
        key: String,
        value: String,
    },
    SetLabel {
        key: String,
        from: String,
        to: String,
    },
    /// Someone else's value; needs `--overwrite`.
    LabelConflict {
        key: String,
        have: String,
        want: String,
        pool: String,
        /// Another policy whose apply added `have`.
        owner: Option<String>,
    },
    /// `--prune`: added by an earlier apply, no longer declared.
    RemoveLabel {
        key: String,
        value: String,
    },
    /// Would be pruned with `--prune` (not a difference by itself).
    StaleLabel {
        key: String,
        value: String,
    },
    AddTaint(String),
    SetTaint {
        from: String,
        to: String,
    },
    TaintConflict {
        have: String,
        want: String,
        pool: String,
        owner: Option<String>,
    },
    RemoveTaint(String),
    StaleTaint(String),
    /// The annotation is not a record kfsched can read; refuses the node.
    BadRecord {
        node: String,
        error: String,
    },
    /// Only the record changes (entries forgotten or taken over): the
    /// node's labels and taints stay as they are.
    Record(Vec<String>),
}

impl Change {
    /// Whether `node apply` with the same flags would write it.
    pub fn is_difference(&self) -> bool {
        !matches!(self, Change::StaleLabel { .. } | Change::StaleTaint(_))
    }

    pub fn render(&self) -> String {
        match self {
            Change::AddLabel { key, value } => format!("+ label {key}={value}"),
            Change::SetLabel { key, from, to } => format!("~ label {key}: {from} -> {to}"),
            Change::LabelConflict {
                key,
                have,
                want,
                pool,
                owner,
            } => {
                format!(
                    "! label {key}={have}{}: pool {pool:?} wants {key}={want} (use --overwrite to replace it)",
                    added_by(owner)
                )
            }
            Change::RemoveLabel { key, value } => {
                format!(
                    "- label {key}={value} (added by an earlier apply, no longer in the policy)"
                )
            }
            Change::StaleLabel { key, value } => {
                format!(
                    "? label {key}={value} is no longer in the policy (use --prune to remove it)"
                )
            }
            Change::AddTaint(t) => format!("+ taint {t}"),
            Change::SetTaint { from, to } => format!("~ taint {from} -> {to}"),
            Change::TaintConflict {
                have,
                want,
                pool,
                owner,
            } => {
                format!(
                    "! taint {have}{}: pool {pool:?} wants {want} (use --overwrite to replace it)",
                    added_by(owner)
                )
            }
            Change::RemoveTaint(t) => {
                format!("- taint {t} (added by an earlier apply, no longer in the policy)")
            }
            Change::StaleTaint(t) => {
                format!("? taint {t} is no longer in the policy (use --prune to remove it)")
            }
            Change::Record(what) => format!(
                "~ record {MANAGED_ANNOTATION}: {} (labels and taints stay as they are)",
                what.join(", ")
            ),
            Change::BadRecord { node, error } => format!(
                "! annotation {MANAGED_ANNOTATION} is not a kfsched record ({error}): nothing is written on this node until it is fixed or removed (kubectl annotate node {node} {MANAGED_ANNOTATION}-)"
            ),
        }
    }
}

fn added_by(owner: &Option<String>) -> String {
    owner
        .as_ref()
        .map(|p| format!(" (added by policy {p:?})"))
        .unwrap_or_default()
}

/// A node's plan: its changes and the patch that makes them.
#[derive(Clone, Debug)]
pub struct NodePlan {
    pub node: String,
    pub pools: Vec<String>,
    pub changes: Vec<Change>,
    /// The merge patch, when `node apply` would write.
    pub patch: Option<Json>,
    pub notes: Vec<String>,
}

impl NodePlan {
    pub fn differences(&self) -> usize {
        self.changes.iter().filter(|c| c.is_difference()).count()
    }

    /// Differences in the node's labels and taints (not the record alone).
    pub fn node_differences(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| c.is_difference() && !matches!(c, Change::Record(_)))
            .count()
    }

    pub fn conflicts(&self) -> Vec<&Change> {
        self.changes
            .iter()
            .filter(|c| {
                matches!(
                    c,
                    Change::LabelConflict { .. }
                        | Change::TaintConflict { .. }
                        | Change::BadRecord { .. }
                )
            })
            .collect()
    }
}

/// Whether a pool selects a node.
pub fn selects(pool: &NodePool, node: &Node) -> bool {
    let empty = BTreeMap::new();
    selects_with(
        pool,
        name_of(node),
        node.metadata.labels.as_ref().unwrap_or(&empty),
    )
}

fn selects_with(pool: &NodePool, name: &str, labels: &BTreeMap<String, String>) -> bool {
    pool.nodes.iter().any(|g| g.matches(name))
        || pool
            .node_selector
            .as_ref()
            .is_some_and(|sel| sel.matches(labels))
}

/// The pools a node belongs to once applied, in policy order: a pool whose
/// selector matches a label another pool adds takes the node too, so one
/// `node apply` reaches what a second would (and `node diff` agrees).
fn pools_of<'p>(policy: &'p Policy, node: &Node) -> Vec<&'p NodePool> {
    let name = name_of(node);
    let mut labels = node.metadata.labels.clone().unwrap_or_default();
    let mut selected = vec![false; policy.pools.len()];
    loop {
        let mut grew = false;
        for (i, pool) in policy.pools.iter().enumerate() {
            if !selected[i] && selects_with(pool, name, &labels) {
                selected[i] = true;
                grew = true;
                for (k, v) in &pool.labels {
                    labels.insert(k.clone(), v.clone());
                }
            }
        }
        if !grew {
            break;
        }
    }
    policy
        .pools
        .iter()
        .zip(selected)
        .filter_map(|(p, s)| s.then_some(p))
        .collect()
}

/// What every pool wants on this node; pools that disagree are an error.
pub fn desired(policy: &Policy, node: &Node) -> Result<Desired, Refusal> {
    let mut d = Desired {
        policy: policy.name.clone(),
        ..Default::default()
    };
    let name = name_of(node);
    for pool in pools_of(policy, node) {
        d.pools.push(pool.name.clone());
        for (k, v) in &pool.labels {
            if let Some((other, by)) = d.labels.get(k)
                && other != v
            {
                return Err(Refusal::new(
                    RefusalKind::PoolsDisagree,
                    format!(
                        "node/{name} is in pools {by:?} and {:?}, which want label {k}={other} and {k}={v}; give the node one pool or make the pools agree",
                        pool.name
                    ),
                ));
            }
            d.labels.insert(k.clone(), (v.clone(), pool.name.clone()));
        }
        for t in &pool.taints {
            if let Some((other, by)) = d
                .taints
                .iter()
                .find(|(o, _)| o.key == t.key && o.effect == t.effect)
            {
                if display(other) != display(t) {
                    return Err(Refusal::new(
                        RefusalKind::PoolsDisagree,
                        format!(
                            "node/{name} is in pools {by:?} and {:?}, which want taints {} and {}; give the node one pool or make the pools agree",
                            pool.name,
                            display(other),
                            display(t)
                        ),
                    ));
                }
                continue;
            }
            d.taints.push((t.clone(), pool.name.clone()));
        }
    }
    Ok(d)
}

pub(super) fn taint_from(s: &str) -> Option<Taint> {
    match parse_change(s) {
        Ok(TaintChange::Add(t)) => Some(t),
        _ => None,
    }
}

fn same_value(a: &Taint, b: &Taint) -> bool {
    a.value.as_deref().unwrap_or("") == b.value.as_deref().unwrap_or("")
}

/// Plans one node against what the pools want.
pub fn plan_node(node: &Node, want: &Desired, opts: &PoolOptions) -> NodePlan {
    let name = name_of(node).to_string();
    let mut split = read_record(node, &want.policy);
    if let Some(e) = &split.invalid {
        return NodePlan {
            node: name.clone(),
            pools: want.pools.clone(),
            changes: vec![Change::BadRecord {
                node: name,
                error: e.clone(),
            }],
            patch: None,
            notes: Vec::new(),
        };
    }
    let adopted = split.adopt(want, node);
    let empty = BTreeMap::new();
    let mut p = Planner {
        split: &split,
        labels: node.metadata.labels.as_ref().unwrap_or(&empty),
        taints: node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default(),
        changes: Vec::new(),
        label_patch: Map::new(),
        taints_changed: false,
        next: Managed::default(),
    };
    p.labels(want, opts);
    p.taints(want, opts);
    let has_conflict = p.changes.iter().any(|c| {
        matches!(
            c,
            Change::LabelConflict { .. } | Change::TaintConflict { .. }
        )
    });
    // An entry someone changed or removed since is dropped from the record
    // even when nothing else changes: kept, a later `--prune` would remove
    // a value the user set again by hand.
    let record_changed = p.next != split.own || !adopted.is_empty() || split.old_form;
    if record_changed && !has_conflict && !p.changes.iter().any(Change::is_difference) {
        // Only the record changes: say what, so `node diff` shows what
        // `node apply` writes.
        let what = p.record_only(adopted);
        p.changes.push(Change::Record(what));
    }
    let writes = (p.changes.iter().any(Change::is_difference) || record_changed) && !has_conflict;
    let patch = writes.then(|| p.patch(record_changed, &want.policy));
    NodePlan {
        node: name,
        pools: want.pools.clone(),
        changes: p.changes,
        patch,
        notes: Vec::new(),
    }
}

/// One node's plan while it is made.
struct Planner<'a> {
    split: &'a Split,
    /// The node's labels as read.
    labels: &'a BTreeMap<String, String>,
    /// The node's taints, changed as planned.
    taints: Vec<Taint>,
    changes: Vec<Change>,
    /// The merge patch's `metadata.labels`.
    label_patch: Map<String, Json>,
    taints_changed: bool,
    /// This policy's record entries after the write.
    next: Managed,
}

impl Planner<'_> {
    /// The pools' labels, then the labels an earlier apply added that no
    /// pool declares any more.
    fn labels(&mut self, want: &Desired, opts: &PoolOptions) {
        let managed = &self.split.own;
        for (k, (v, pool)) in &want.labels {
            match self.labels.get(k) {
                None => {
                    self.changes.push(Change::AddLabel {
                        key: k.clone(),
                        value: v.clone(),
                    });
                    self.label_patch.insert(k.clone(), Json::String(v.clone()));
                    self.next.labels.insert(k.clone(), v.clone());
                }
                Some(cur) if cur == v => {
                    // Ours, or another policy's that this one declares too: then
                    // it is both's, and neither's prune removes it while the
                    // other still records it.
                    if managed.labels.get(k) == Some(v) || self.split.label_owner(k, v).is_some() {
                        self.next.labels.insert(k.clone(), v.clone());
                    }
                }
                Some(cur) => {
                    let ours = managed.labels.get(k) == Some(cur);
                    if ours || opts.overwrite {
                        self.changes.push(Change::SetLabel {
                            key: k.clone(),
                            from: cur.clone(),
                            to: v.clone(),
                        });
                        self.label_patch.insert(k.clone(), Json::String(v.clone()));
                        self.next.labels.insert(k.clone(), v.clone());
                    } else {
                        self.changes.push(Change::LabelConflict {
                            key: k.clone(),
                            have: cur.clone(),
                            want: v.clone(),
                            pool: pool.clone(),
                            owner: self.split.label_owner(k, cur).map(str::to_string),
                        });
                    }
                }
            }
        }
        for (k, v) in &managed.labels {
            if want.labels.contains_key(k) || self.labels.get(k) != Some(v) {
                // Still declared (handled above), or changed/removed by someone else: no longer ours.
                continue;
            }
            if self.split.label_owner(k, v).is_some() {
                // Another policy records it too: only our entry goes.
                continue;
            }
            if opts.prune {
                self.changes.push(Change::RemoveLabel {
                    key: k.clone(),
                    value: v.clone(),
                });
                self.label_patch.insert(k.clone(), Json::Null);
            } else {
                self.changes.push(Change::StaleLabel {
                    key: k.clone(),
                    value: v.clone(),
                });
                self.next.labels.insert(k.clone(), v.clone());
            }
        }
    }

    /// The pools' taints, then the taints an earlier apply added that no
    /// pool declares any more.
    fn taints(&mut self, want: &Desired, opts: &PoolOptions) {
        let managed_taints: Vec<Taint> = self
            .split
            .own
            .taints
            .iter()
            .filter_map(|s| taint_from(s))
            .collect();
        let is_managed = |t: &Taint| {
            managed_taints
                .iter()
                .any(|m| m.key == t.key && m.effect == t.effect && same_value(m, t))
        };
        for (t, pool) in &want.taints {
            match self
                .taints
                .iter()
                .position(|x| x.key == t.key && x.effect == t.effect)
            {
                None => {
                    self.changes.push(Change::AddTaint(display(t)));
                    let mut new = t.clone();
                    if new.effect == "NoExecute" {
                        new.time_added =
                            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                                k8s_openapi::jiff::Timestamp::now(),
                            ));
                    }
                    self.taints.push(new);
                    self.taints_changed = true;
                    self.next.taints.push(display(t));
                }
                Some(i) if same_value(&self.taints[i], t) => {
                    if is_managed(t) || self.split.taint_owner(&display(t)).is_some() {
                        self.next.taints.push(display(t));
                    }
                }
                Some(i) => {
                    let cur = self.taints[i].clone();
                    if is_managed(&cur) || opts.overwrite {
                        self.changes.push(Change::SetTaint {
                            from: display(&cur),
                            to: display(t),
                        });
                        self.taints[i] = Taint {
                            time_added: cur.time_added.clone(),
                            ..t.clone()
                        };
                        self.taints_changed = true;
                        self.next.taints.push(display(t));
                    } else {
                        self.changes.push(Change::TaintConflict {
                            have: display(&cur),
                            want: display(t),
                            pool: pool.clone(),
                            owner: self.split.taint_owner(&display(&cur)).map(str::to_string),
                        });
                    }
                }
            }
        }
        for m in &managed_taints {
            if want
                .taints
                .iter()
                .any(|(t, _)| t.key == m.key && t.effect == m.effect)
            {
                continue;
            }
            let Some(i) = self
                .taints
                .iter()
                .position(|x| x.key == m.key && x.effect == m.effect && same_value(x, m))
            else {
                continue;
            };
            if self.split.taint_owner(&display(m)).is_some() {
                continue;
            }
            if opts.prune {
                self.changes.push(Change::RemoveTaint(display(m)));
                self.taints.remove(i);
                self.taints_changed = true;
            } else {
                self.changes.push(Change::StaleTaint(display(m)));
                self.next.taints.push(display(m));
            }
        }
        self.next.taints.sort();
        self.next.taints.dedup();
    }

    /// What changes in the record when nothing else does.
    fn record_only(&self, adopted: Vec<String>) -> Vec<String> {
        let managed = &self.split.own;
        let mut what = adopted;
        for (k, v) in &self.next.labels {
            if managed.labels.get(k) != Some(v) {
                let by = self.split.label_owner(k, v).unwrap_or_default();
                what.push(format!("+ label {k}={v} (recorded by policy {by:?} too)"));
            }
        }
        for t in &self.next.taints {
            if !managed.taints.contains(t) {
                let by = self.split.taint_owner(t).unwrap_or_default();
                what.push(format!("+ taint {t} (recorded by policy {by:?} too)"));
            }
        }
        for (k, v) in &managed.labels {
            if self.next.labels.get(k) != Some(v) {
                what.push(if self.labels.get(k) == Some(v) {
                    let by = self.split.label_owner(k, v).unwrap_or_default();
                    format!("- label {k}={v} (policy {by:?} still records it, so it stays)")
                } else {
                    format!("- label {k}={v} (changed or removed since)")
                });
            }
        }
        let on_node: Vec<String> = self.taints.iter().map(display).collect();
        for t in &managed.taints {
            if !self.next.taints.contains(t) {
                what.push(if on_node.contains(t) {
                    let by = self.split.taint_owner(t).unwrap_or_default();
                    format!("- taint {t} (policy {by:?} still records it, so it stays)")
                } else {
                    format!("- taint {t} (changed or removed since)")
                });
            }
        }
        if what.is_empty() {
            what.push("rewritten per policy".into());
        }
        what
    }

    /// The merge patch that writes the plan.
    fn patch(&self, record_changed: bool, policy: &str) -> Json {
        let mut meta = Map::new();
        if !self.label_patch.is_empty() {
            meta.insert("labels".into(), Json::Object(self.label_patch.clone()));
        }
        if record_changed {
            let value = self
                .split
                .annotation(policy, &self.next)
                .map(Json::String)
                .unwrap_or(Json::Null);
            meta.insert("annotations".into(), json!({ MANAGED_ANNOTATION: value }));
        }
        let mut p = Map::new();
        if !meta.is_empty() {
            p.insert("metadata".into(), Json::Object(meta));
        }
        if self.taints_changed {
            let v = if self.taints.is_empty() {
                Json::Null
            } else {
                serde_json::to_value(&self.taints).unwrap_or(Json::Null)
            };
            p.insert("spec".into(), json!({ "taints": v }));
        }
        Json::Object(p)
    }
}

pub fn plan_all(
    policy: &Policy,
    nodes: &[Fetched],
    opts: &PoolOptions,
) -> Result<Vec<NodePlan>, Error> {
    let mut plans = Vec::new();
    let mut errors = Vec::new();
    for n in nodes.iter().map(|f| &f.node) {
        let annotated = !read_record(n, &policy.name).own.is_empty();
        match desired(policy, n) {
            Err(e) => errors.push(e),
            Ok(d) if d.pools.is_empty() && !annotated => {}
            Ok(d) => plans.push(plan_node(n, &d, opts)),
        }
    }
    if !errors.is_empty() {
        return Err(Error::PoolsDisagree(errors));
    }
    plans.sort_by(|a, b| a.node.cmp(&b.node));
    Ok(plans)
}

/// The record keeps each policy's entries under its name, so pools need one.
pub fn require_name(policy: &Policy) -> Result<(), Error> {
    if !policy.name.is_empty() {
        return Ok(());
    }
    let (line, col) = policy.location("metadata.name");
    Err(Error::Usage(format!(
        "{}:{line}:{col}: metadata.name: Required value: node apply and node diff record what they add under the policy's name (annotation {MANAGED_ANNOTATION}); give the policy a metadata.name",
        policy.file
    )))
}

#[cfg(test)]
mod tests;
