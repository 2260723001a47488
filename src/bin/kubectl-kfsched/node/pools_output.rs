//! What `node apply` and `node diff` print: every node's plan (`+`, `~`,
//! `-`, `!`, `?` lines) and, for a diff with nothing to do, why not. The
//! warnings about the policy's pools come earlier, with the policy, before
//! the cluster is read.

use std::io::Write;

use kfsched::node::Error;
use kfsched::node::client::Clients;
use kfsched::node::edit::Summary;
use kfsched::node::pools::{self, NodePlan, PoolOptions};
use kfsched::policy::Policy;

/// `node diff`: prints the plan; returns how many changes `node apply`
/// (with the same `--overwrite` / `--prune`) would make.
pub async fn diff(
    clients: &Clients,
    policy: &Policy,
    opts: &PoolOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<usize, Error> {
    let planned = pools::plan(clients, policy, opts).await?;
    for p in &planned.plans {
        print_plan(out, err, p);
    }
    let total = planned.differences();
    if total == 0 {
        let _ = writeln!(err, "{}", no_differences(&planned.plans));
    }
    Ok(total)
}

/// `node apply`: prints the plan, then writes it.
pub async fn apply(
    clients: &Clients,
    policy: &Policy,
    opts: &PoolOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Summary, Error> {
    let planned = pools::plan(clients, policy, opts).await?;
    planned.check()?;
    for p in &planned.plans {
        print_plan(out, err, p);
    }
    pools::apply(clients, policy, planned, opts, out, err).await
}

fn header(p: &NodePlan) -> String {
    if p.pools.is_empty() {
        format!("node/{} (in no pool now):", p.node)
    } else {
        format!(
            "node/{} (pool{} {}):",
            p.node,
            if p.pools.len() == 1 { "" } else { "s" },
            p.pools.join(", ")
        )
    }
}

/// A node's notes, then its changes under a header (nothing when none).
fn print_plan(out: &mut dyn Write, err: &mut dyn Write, p: &NodePlan) {
    for n in &p.notes {
        let _ = writeln!(err, "warning: {n}");
    }
    if p.changes.is_empty() {
        return;
    }
    let _ = writeln!(out, "{}", header(p));
    for c in &p.changes {
        let _ = writeln!(out, "  {}", c.render());
    }
}

/// What `node diff` says when there is nothing to do: only the nodes that
/// are in a pool are counted (plans also hold nodes that are in no pool
/// any more but carry an earlier apply's record).
/// Entries listed with `?` (no longer declared, kept without `--prune`)
/// are named too, so the listing above it does not read as a contradiction.
fn no_differences(plans: &[NodePlan]) -> String {
    let members = plans.iter().filter(|p| !p.pools.is_empty()).count();
    let mut s = match members {
        0 => "no differences: no node is in any of the policy's pools".to_string(),
        1 => "no differences: the 1 node in the policy's pools already matches them".into(),
        n => format!("no differences: the {n} nodes in the policy's pools already match them"),
    };
    let stale = plans
        .iter()
        .flat_map(|p| &p.changes)
        .filter(|c| !c.is_difference())
        .count();
    match stale {
        0 => {}
        1 => s.push_str(" (1 value marked ? stays until node apply --prune)"),
        n => s.push_str(&format!(
            " ({n} values marked ? stay until node apply --prune)"
        )),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use kfsched::node::pools::Change;

    #[test]
    fn no_differences_counts_pool_members_only() {
        let plan = |node: &str, pools: &[&str]| NodePlan {
            node: node.into(),
            pools: pools.iter().map(|p| p.to_string()).collect(),
            changes: Vec::new(),
            patch: None,
            notes: Vec::new(),
        };
        let plans = [plan("a", &["gpu"]), plan("b", &[]), plan("c", &[])];
        assert_eq!(
            no_differences(&plans),
            "no differences: the 1 node in the policy's pools already matches them"
        );
        let plans = [
            plan("a", &["gpu"]),
            plan("b", &["gpu", "x"]),
            plan("c", &[]),
        ];
        assert_eq!(
            no_differences(&plans),
            "no differences: the 2 nodes in the policy's pools already match them"
        );
        assert_eq!(
            no_differences(&[plan("c", &[])]),
            "no differences: no node is in any of the policy's pools"
        );
        let mut stale = plan("a", &["gpu"]);
        stale.changes = vec![
            Change::StaleLabel {
                key: "k".into(),
                value: "v".into(),
            },
            Change::StaleTaint("k=v:NoSchedule".into()),
        ];
        assert_eq!(
            no_differences(&[stale, plan("b", &[])]),
            "no differences: the 1 node in the policy's pools already matches them (2 values marked ? stay until node apply --prune)"
        );
    }
}
