//! Live node commands against the real control plane.
//!
//! Every test here is `#[ignore]`d and needs the cluster that
//! `scripts/cluster.sh start` runs (see `cluster`); each one makes its own
//! nodes and namespace, so they run in parallel on one control plane, and
//! asserts the cluster's state afterwards through the API.

mod access;
pub(crate) mod cluster;
mod concurrency;
mod drain;
mod live_objects;
mod noexecute;
mod pipeline_versions;
mod pod_spec_fields;
mod pools;
mod taint_label;
mod validation;
