//! `check` against the real kube-scheduler on the test control plane:
//! hand-written scenarios for every filter, operator and format, and
//! generated ones from a seed. Every test is `#[ignore]`d (they need the
//! cluster of `scripts/cluster.sh`) and holds the cluster exclusively
//! while it runs, since the scheduler's message counts every node.

mod generated;
mod harness;
mod live;
mod scenarios;
