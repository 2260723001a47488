//! What a drain reports: [`Event`]s while it runs, from which the binary
//! prints the pod lists and draws the progress, and a [`NodeReport`] per
//! node; and the typed reasons a drain stops short ([`NotDrained`],
//! [`Blocked`], [`Incomplete`]), whose messages name the flag or command
//! that changes the outcome.

use std::fmt;
use std::time::Duration;

use super::eviction::EvictionRefusal;
use super::filters::PodPlan;
use crate::Error;

/// Where a pod to remove stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodState {
    NotStarted,
    Evicting,
    /// 429: held by a budget; the server's last word.
    HeldByBudget(EvictionRefusal),
    /// Accepted; waiting for it to go.
    Terminating,
    Gone,
    /// Server dry-run: the eviction would be accepted.
    WouldEvict,
    /// Waiting skipped: terminating longer than --skip-wait-for-delete-timeout.
    SkippedWait,
    /// Server dry run: a PodDisruptionBudget refused the eviction.
    WouldBeRefused(EvictionRefusal),
    Failed(String),
}

impl PodState {
    /// Nothing more will happen to the pod.
    pub fn is_settled(&self) -> bool {
        matches!(
            self,
            PodState::Gone
                | PodState::WouldEvict
                | PodState::SkippedWait
                | PodState::Failed(_)
                | PodState::WouldBeRefused(_)
        )
    }
}

/// How a node's pods stand, for a progress display.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: usize,
    /// Gone, would be evicted (server dry run), or no longer waited for.
    pub gone: usize,
    /// Requested or terminating.
    pub in_flight: usize,
    /// Held (or, in a server dry run, refused) by a PodDisruptionBudget.
    pub blocked: usize,
    pub failed: usize,
}

impl Counts {
    pub fn of(states: &[(usize, PodState)]) -> Counts {
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
    }
}

/// Why a node was not drained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotDrained {
    /// Ctrl-C.
    Interrupted,
    /// `--timeout` ran out.
    TimedOut(Duration),
    /// At least one eviction failed for good.
    EvictionsFailed,
    /// Server dry run: PodDisruptionBudgets would refuse `count` evictions.
    WouldBeRefused {
        count: usize,
        /// `PodDisruptionBudget ns/name` (or `a PodDisruptionBudget`), sorted, once each.
        budgets: Vec<String>,
    },
    /// Evicted pods have not gone yet.
    StillTerminating,
}

impl fmt::Display for NotDrained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotDrained::Interrupted => f.write_str("interrupted"),
            NotDrained::TimedOut(d) => write!(f, "timed out after {} (--timeout)", humanize(*d)),
            NotDrained::EvictionsFailed => f.write_str("some evictions failed"),
            NotDrained::WouldBeRefused { count, budgets } => write!(
                f,
                "{count} eviction{} would be refused by {} (server dry run)",
                plural(*count),
                budgets.join(", ")
            ),
            NotDrained::StillTerminating => f.write_str("some pods are still terminating"),
        }
    }
}

/// `s` unless there is one.
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

/// The outcome for one node.
#[derive(Clone, Debug)]
pub struct NodeReport {
    pub node: String,
    pub plans: Vec<PodPlan>,
    /// `(index into plans, state)` for every pod to remove, in plan order.
    pub states: Vec<(usize, PodState)>,
    /// Why not drained, when not.
    pub reason: Option<NotDrained>,
    /// From the first eviction to the end.
    pub elapsed: Duration,
}

impl NodeReport {
    pub fn drained(&self) -> bool {
        self.reason.is_none()
    }
}

/// Everything `node drain` did.
#[derive(Clone, Debug, Default)]
pub struct DrainReport {
    pub nodes: Vec<NodeReport>,
    pub interrupted: bool,
}

/// What a drain tells its caller while it runs, in kubectl's `pkg/drain`
/// spirit (it computes and reports through callbacks; the command prints).
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// No node matched the targets: nothing to drain.
    NoNodes,
    /// `node` is cordoned; `already`: it was before this drain.
    Cordoned { node: &'a str, already: bool },
    /// A node's pods and their fates, before anything is evicted there;
    /// `again`: listed anew because they changed since the first list.
    Planned {
        node: &'a str,
        plans: &'a [PodPlan],
        again: bool,
    },
    /// Client dry run: the node would be drained, `pods` pods evicted.
    WouldDrain { node: &'a str, pods: usize },
    /// The evictions on `node` start.
    Draining { node: &'a str },
    /// A pod's eviction moved on.
    Pod { pod: &'a PodPlan, step: PodStep<'a> },
    /// A 429: `refusal` holds `pod`, and `waiting` pods (this one
    /// included) wait for the same budget; retried in `retry_in`, or as
    /// soon as the budget allows a disruption. Sent for every refusal.
    Held {
        pod: &'a PodPlan,
        refusal: &'a EvictionRefusal,
        waiting: usize,
        retry_in: Duration,
    },
    /// How the node's pods stand: after every change, and at least every
    /// 200 ms while the node drains.
    Progress { node: &'a str, counts: Counts },
    /// The node's drain ended (not sent for a client dry run).
    Finished(&'a NodeReport),
}

/// A step of one pod's eviction.
#[derive(Clone, Copy, Debug)]
pub enum PodStep<'a> {
    /// The first eviction (or delete) request goes out.
    Evicting,
    /// Accepted: the pod terminates (with a server dry run: it would be evicted).
    Accepted,
    /// The pod is gone; `replaced`: a new pod took its name.
    Gone { replaced: bool },
    /// The eviction failed for good; the message says why and what to do.
    Failed(&'a str),
    /// Server dry run: a budget would refuse the eviction.
    WouldBeRefused(&'a EvictionRefusal),
}

/// One pod that blocks a drain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockedPod {
    pub node: String,
    /// `ns/pod: reasons`, every reason naming the flag that overrides it.
    pub why: String,
}

/// What became of the cordons a drain added, when it stopped before any
/// eviction; the suffix of its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CordonsUndone {
    /// A dry run, or no cordon of this drain: nothing to say.
    Nothing,
    /// No cordon to undo, and nothing was evicted (`there`: on that node).
    NothingEvicted { there: bool },
    /// The cordons this drain added were undone.
    Undone {
        nodes: Vec<String>,
        /// The only node selected, and this drain cordoned it.
        only: bool,
    },
    /// Undoing these cordons failed: `(node, why)`.
    Failed(Vec<(String, String)>),
}

impl fmt::Display for CordonsUndone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CordonsUndone::Nothing => Ok(()),
            CordonsUndone::NothingEvicted { there: false } => f.write_str("; nothing was evicted"),
            CordonsUndone::NothingEvicted { there: true } => {
                f.write_str("; nothing was evicted there")
            }
            CordonsUndone::Undone { only: true, .. } => {
                f.write_str("; nothing was evicted and the cordon was undone")
            }
            CordonsUndone::Undone { nodes, only: false } => {
                let names: Vec<String> = nodes.iter().map(|n| format!("node/{n}")).collect();
                write!(
                    f,
                    "; nothing was evicted and the cordon{} this drain added ({}) {} undone",
                    plural(nodes.len()),
                    names.join(", "),
                    if nodes.len() == 1 { "was" } else { "were" }
                )
            }
            CordonsUndone::Failed(failed) => {
                let list: Vec<String> = failed
                    .iter()
                    .map(|(n, why)| format!("node/{n}: {why}"))
                    .collect();
                write!(
                    f,
                    "; nothing was evicted, and undoing the cordon failed for {}",
                    list.join(", ")
                )
            }
        }
    }
}

/// Pods that block a drain: nothing was evicted on their nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// In node order; every node has at least one.
    pub pods: Vec<BlockedPod>,
    pub cordons: CordonsUndone,
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut nodes: Vec<&str> = Vec::new();
        for p in &self.pods {
            if !nodes.contains(&p.node.as_str()) {
                nodes.push(&p.node);
            }
        }
        let count = self.pods.len();
        let list: Vec<String> = if nodes.len() == 1 {
            self.pods.iter().map(|p| p.why.clone()).collect()
        } else {
            self.pods
                .iter()
                .map(|p| format!("{} (on node/{})", p.why, p.node))
                .collect()
        };
        let names: Vec<String> = nodes.iter().map(|n| format!("node/{n}")).collect();
        write!(
            f,
            "cannot drain {}: {count} pod{} blocked: {}{}",
            names.join(", "),
            if count == 1 { " is" } else { "s are" },
            list.join(", "),
            self.cordons
        )
    }
}

/// Why one node of a drain was not drained.
#[derive(Debug)]
pub enum NodeFailure {
    /// Its drain ran and stopped short.
    NotDrained { node: String, reason: NotDrained },
    /// Pods on it blocked the drain when its turn came.
    Blocked(Blocked),
    /// Cordoning it failed, so it was not drained.
    NotCordoned { node: String, error: Error },
    /// A request for it failed.
    Failed { node: String, error: Error },
}

impl fmt::Display for NodeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeFailure::NotDrained { node, reason } => write!(f, "node/{node} ({reason})"),
            NodeFailure::Blocked(b) => b.fmt(f),
            NodeFailure::NotCordoned { node, error } => {
                write!(f, "node/{node} ({error}; it is not drained)")
            }
            NodeFailure::Failed { node, error } => write!(f, "node/{node} ({error})"),
        }
    }
}

/// A drain that did not complete on every node.
#[derive(Debug)]
pub struct Incomplete {
    /// How many nodes were selected.
    pub selected: usize,
    pub failures: Vec<NodeFailure>,
}

impl fmt::Display for Incomplete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.selected == 1 && self.failures.len() == 1 {
            return write!(f, "drain not completed: {}", self.failures[0]);
        }
        let list: Vec<String> = self.failures.iter().map(ToString::to_string).collect();
        write!(f, "drain not completed for {}", list.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_every_pod_and_the_cordons() {
        let pod = |node: &str, why: &str| BlockedPod {
            node: node.into(),
            why: why.into(),
        };
        let one = Blocked {
            pods: vec![pod(
                "a",
                "ns/bare: Pods that declare no controller (use --force to override)",
            )],
            cordons: CordonsUndone::Undone {
                nodes: vec!["a".into()],
                only: true,
            },
        };
        assert_eq!(
            one.to_string(),
            "cannot drain node/a: 1 pod is blocked: ns/bare: Pods that declare no controller (use --force to override); nothing was evicted and the cordon was undone"
        );
        let two = Blocked {
            pods: vec![pod("a", "ns/x: r"), pod("b", "ns/y: s")],
            cordons: CordonsUndone::Undone {
                nodes: vec!["a".into(), "b".into()],
                only: false,
            },
        };
        assert_eq!(
            two.to_string(),
            "cannot drain node/a, node/b: 2 pods are blocked: ns/x: r (on node/a), ns/y: s (on node/b); nothing was evicted and the cordons this drain added (node/a, node/b) were undone"
        );
        assert_eq!(
            NotDrained::TimedOut(Duration::from_secs(90)).to_string(),
            "timed out after 1m30s (--timeout)"
        );
        assert_eq!(
            NotDrained::TimedOut(Duration::from_secs(3)).to_string(),
            "timed out after 3s (--timeout)"
        );
    }
}
