//! The live side of `node apply` / `node diff`: list the nodes, plan them
//! ([`plan`]), and write the plans through the resourceVersion-guarded
//! engine, re-planning a node that changed meanwhile ([`apply`]).

use std::io::Write;

use k8s_openapi::api::core::v1::Node;

use super::plan::{Change, NodePlan, PoolOptions, desired, plan_all, plan_node, require_name};
use crate::client::Clients;
use crate::edit::{self, Fetched, Step, Summary, list_nodes};
use crate::{Error, Refusal, RefusalKind};
use kfsched_core::policy::Policy;

/// What is worth a warning in the policy's pools before anything is read:
/// a pool with neither `nodes` nor `nodeSelector` selects nothing.
pub fn warnings(policy: &Policy) -> Vec<String> {
    policy
        .pools
        .iter()
        .filter(|p| p.nodes.is_empty() && p.node_selector.is_none())
        .map(|p| {
            format!(
                "pool {:?} selects no nodes: give it nodes or nodeSelector",
                p.name
            )
        })
        .collect()
}

/// The nodes as read and their plans.
#[derive(Clone, Debug)]
pub struct Planned {
    /// Sorted by node name: every node a pool selects or whose record
    /// holds entries of this policy.
    pub plans: Vec<NodePlan>,
    nodes: Vec<Fetched>,
}

impl Planned {
    /// How many changes `node apply` (with the same flags) would make.
    pub fn differences(&self) -> usize {
        self.plans.iter().map(NodePlan::differences).sum()
    }

    /// Refuses the plans when a pool's value conflicts with one already on
    /// a node (someone else's, without `--overwrite`) or a record cannot be
    /// read: [`Error::PoolConflicts`], before anything is written.
    pub fn check(&self) -> Result<(), Error> {
        let conflicts: Vec<Refusal> = self
            .plans
            .iter()
            .flat_map(|p| {
                p.conflicts()
                    .into_iter()
                    .map(move |c| Refusal::new(kind(c), format!("node/{}: {}", p.node, c.render())))
            })
            .collect();
        if conflicts.is_empty() {
            Ok(())
        } else {
            Err(Error::PoolConflicts(conflicts))
        }
    }
}

fn kind(c: &Change) -> RefusalKind {
    match c {
        Change::BadRecord { .. } => RefusalKind::UnreadableRecord,
        _ => RefusalKind::NeedsOverwrite,
    }
}

/// Lists every node and plans the policy's pools on them (`node diff`, and
/// `node apply` before it writes).
pub async fn plan(
    clients: &Clients,
    policy: &Policy,
    opts: &PoolOptions,
) -> Result<Planned, Error> {
    require_name(policy)?;
    let nodes = list_nodes(clients, None).await?;
    let plans = plan_all(policy, &nodes, opts)?;
    Ok(Planned { plans, nodes })
}

/// `node apply`: writes every node's plan, each re-planned if the node
/// changed since it was read. Conflicts refuse the whole apply before
/// anything is written. Result lines go to `out`, warnings to `err`.
pub async fn apply(
    clients: &Clients,
    policy: &Policy,
    planned: Planned,
    opts: &PoolOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Summary, Error> {
    planned.check()?;
    let Planned { plans, nodes } = planned;
    let targets: Vec<Fetched> = nodes
        .into_iter()
        .filter(|n| plans.iter().any(|p| p.node == n.name()))
        .collect();
    let opts = *opts;
    let planner = |n: &Node| step(policy, n, &opts);
    // Pools are read by listing every node, so a node deleted since is one
    // the policy no longer reaches.
    edit::write_nodes(
        clients,
        targets,
        opts.dry_run,
        edit::Vanished::Skip,
        &planner,
        out,
        err,
    )
    .await
}

/// What the write engine does with one node (as read, or read again).
fn step(policy: &Policy, n: &Node, opts: &PoolOptions) -> Step {
    let d = match desired(policy, n) {
        Err(r) => return Step::Refuse(r),
        Ok(d) => d,
    };
    let p = plan_node(n, &d, opts);
    let conflicts = p.conflicts();
    if !conflicts.is_empty() {
        let c: Vec<String> = conflicts.iter().map(|c| c.render()).collect();
        let kind = kind(conflicts[0]);
        return Step::Refuse(Refusal::new(
            kind,
            format!("node/{}: {}", p.node, c.join("; ")),
        ));
    }
    let verb = if p.node_differences() > 0 {
        "configured"
    } else {
        "unchanged (the record of earlier applies updated)"
    };
    match p.patch {
        Some(patch) => Step::Write {
            patch,
            verb: verb.into(),
            guard: true,
            notes: vec![],
        },
        None => Step::Unchanged {
            verb: "unchanged".into(),
            notes: vec![],
        },
    }
}
