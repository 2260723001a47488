//! `check` against the real kube-scheduler on the test control plane:
//! hand-written scenarios for every filter, operator and format (the
//! pod-spec fields' in `pod_spec_fields`), and
//! generated ones from a seed. Every test is `#[ignore]`d (they need the
//! cluster of `scripts/cluster.sh`) and holds the cluster exclusively
//! while it runs, since the scheduler's message counts every node.

mod generated;
mod harness;
mod live;
mod pod_spec_fields;
mod scenarios;
