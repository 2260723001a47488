//! The message kube-scheduler 1.36 puts in an unschedulable pod's
//! `PodScheduled` condition (`FitError.Error()`,
//! `pkg/scheduler/framework/types.go`):
//!
//! `0/N nodes are available: <reasons>.` then the PostFilter part, which
//! starts with dynamic resource allocation's `no new claims to deallocate`
//! and goes on with preemption's own `0/N nodes are available: ...`.
//!
//! Each reason of each node counts once per node; nodes a PreFilter left
//! out count under the absent-node reason; the `"<count> <reason>"`
//! strings are sorted as strings (`sort.Strings`), so `10 ...` comes
//! before `2 ...` and capitalised reasons before `node(s) ...`.

use std::collections::BTreeMap;

use super::filter::{Code, Status};
use super::node::Node;

/// `ErrNoNodesAvailable`.
pub const NO_NODES: &str = "no nodes available to schedule pods";
const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
const NO_CLAIMS: &str = "no new claims to deallocate";

/// The histogram sentence: `0/N nodes are available: a, b.`
pub fn fit_error<'s>(
    all: usize,
    explicit: impl Iterator<Item = &'s Status>,
    absent: usize,
    absent_reason: &str,
) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for s in explicit {
        for r in &s.reasons {
            *counts.entry(r.as_str()).or_insert(0) += 1;
        }
    }
    if absent > 0 {
        *counts.entry(absent_reason).or_insert(0) += absent;
    }
    let mut parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    let mut msg = format!("0/{all} nodes are available:");
    if !parts.is_empty() {
        msg.push_str(&format!(" {}.", parts.join(", ")));
    }
    msg
}

/// The whole condition message for a pod that fits no node.
///
/// `statuses` holds the status of every node that was evaluated (by index
/// into `nodes`); the other nodes were left out by NodeAffinity's
/// PreFilter. `conflict` is that PreFilter's own rejection. `priority` is
/// the pod's, for preemption's victims (pods of lower priority).
pub struct Unschedulable<'a> {
    pub nodes: &'a [Node],
    pub statuses: &'a [(usize, Status)],
    pub conflict: bool,
    pub priority: i32,
    pub never_preempts: bool,
}

impl Unschedulable<'_> {
    /// The first sentence alone (`0/N nodes are available: ... .`).
    pub fn first_sentence(&self) -> String {
        let n = self.nodes.len();
        if n == 0 {
            return NO_NODES.to_string();
        }
        if self.conflict {
            return format!(
                "0/{n} nodes are available: {}.",
                super::filter::AFFINITY_CONFLICT
            );
        }
        fit_error(
            n,
            self.statuses.iter().map(|(_, s)| s),
            n - self.statuses.len(),
            super::filter::PREFILTER_EXCLUDED,
        )
    }

    /// The full message, with the PostFilter part.
    pub fn message(&self) -> String {
        let first = self.first_sentence();
        if self.nodes.is_empty() {
            return first;
        }
        if self.conflict {
            // The PreFilter rejection stopped DynamicResources' PreFilter,
            // so its PostFilter finds no state and fails; preemption never runs.
            return format!("{first} not found");
        }
        format!("{first} {NO_CLAIMS}, {}", self.preemption())
    }

    /// DefaultPreemption's PostFilter message.
    fn preemption(&self) -> String {
        if self.never_preempts {
            return "preemption: not eligible due to preemptionPolicy=Never.".into();
        }
        // Only nodes whose status is Unschedulable are tried; a node without
        // pods of lower priority has no victims.
        let mut tried: Vec<Status> = Vec::new();
        for (i, s) in self.statuses {
            if s.code != Code::Unschedulable {
                continue;
            }
            let node = &self.nodes[*i];
            let victims = node.pods.iter().any(|p| p.priority < self.priority);
            tried.push(if victims {
                // Would fit once they are gone: the real scheduler would
                // preempt; kfsched reports the node's own reasons.
                s.clone()
            } else {
                Status {
                    code: Code::UnschedulableAndUnresolvable,
                    reasons: vec![NO_VICTIMS.to_string()],
                    plugin: "DefaultPreemption",
                }
            });
        }
        let n = self.nodes.len();
        format!(
            "preemption: {}",
            fit_error(n, tried.iter(), n - tried.len(), NOT_HELPFUL)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::filter::{AFFINITY, TAINTS, UNSCHEDULABLE};
    use super::*;

    fn st(code: Code, reasons: &[&str]) -> Status {
        Status {
            code,
            reasons: reasons.iter().map(|r| r.to_string()).collect(),
            plugin: "test",
        }
    }

    fn nodes(n: usize) -> Vec<Node> {
        (0..n)
            .map(|i| Node {
                name: format!("n{i}"),
                ..Node::default()
            })
            .collect()
    }

    #[test]
    fn reasons_are_counted_per_node_and_sorted_as_strings() {
        // The shared note's observed message: counts sum past N and sort as text.
        let u = Code::UnschedulableAndUnresolvable;
        let s = Code::Unschedulable;
        let mut statuses = Vec::new();
        for i in 0..12 {
            let status = match i {
                0 => st(s, &["Too many pods"]),
                1..=3 => st(
                    u,
                    &[
                        "Insufficient memory",
                        "Insufficient nvidia.com/gpu",
                        "Insufficient cpu",
                    ],
                ),
                4..=5 => st(u, &["Insufficient nvidia.com/gpu", "Insufficient cpu"]),
                6 => st(u, &["Insufficient cpu"]),
                _ => st(u, &[AFFINITY]),
            };
            statuses.push((i, status));
        }
        let ns = nodes(12);
        let m = Unschedulable {
            nodes: &ns,
            statuses: &statuses,
            conflict: false,
            priority: 0,
            never_preempts: false,
        };
        assert_eq!(
            m.first_sentence(),
            "0/12 nodes are available: 1 Too many pods, 3 Insufficient memory, 5 Insufficient nvidia.com/gpu, 5 node(s) didn't match Pod's node affinity/selector, 6 Insufficient cpu."
        );
        assert_eq!(
            m.message(),
            format!(
                "{} no new claims to deallocate, preemption: 0/12 nodes are available: 1 No preemption victims found for incoming pod, 11 Preemption is not helpful for scheduling.",
                m.first_sentence()
            )
        );
    }

    #[test]
    fn ten_sorts_before_two() {
        let u = Code::UnschedulableAndUnresolvable;
        let statuses: Vec<(usize, Status)> = (0..12)
            .map(|i| (i, st(u, &[if i < 10 { TAINTS } else { UNSCHEDULABLE }])))
            .collect();
        let ns = nodes(12);
        let m = Unschedulable {
            nodes: &ns,
            statuses: &statuses,
            conflict: false,
            priority: 0,
            never_preempts: true,
        };
        assert_eq!(
            m.message(),
            "0/12 nodes are available: 10 node(s) had untolerated taint(s), 2 node(s) were unschedulable. no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
        );
    }

    #[test]
    fn prefilter_exclusions_and_conflicts() {
        let ns = nodes(5);
        let statuses = vec![(0, st(Code::UnschedulableAndUnresolvable, &[TAINTS]))];
        let m = Unschedulable {
            nodes: &ns,
            statuses: &statuses,
            conflict: false,
            priority: 0,
            never_preempts: false,
        };
        assert_eq!(
            m.first_sentence(),
            "0/5 nodes are available: 1 node(s) had untolerated taint(s), 4 node(s) didn't satisfy plugin(s) [NodeAffinity]."
        );
        let m = Unschedulable {
            conflict: true,
            ..m
        };
        assert_eq!(
            m.message(),
            "0/5 nodes are available: pod affinity terms conflict. not found"
        );
        let none: Vec<Node> = Vec::new();
        let m = Unschedulable { nodes: &none, ..m };
        assert_eq!(m.message(), "no nodes available to schedule pods");
    }
}
