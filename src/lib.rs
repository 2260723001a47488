//! kfsched: one SchedulingPolicy for Kubeflow Pipelines scheduling.
//!
//! This crate is the facade the `kubectl-kfsched` binary is built on. The
//! work is done by three crates of the workspace, re-exported here:
//!
//! - [`kfsched_core`] (offline, synchronous): the policy, the pipeline
//!   formats, matching, merging and the byte-preserving rewrite.
//! - [`kfsched_yaml`]: the YAML span tree and surgical editor the core
//!   writes with.
//! - [`kfsched_cluster`] (async): the live `node` commands.
//!
//! The library never prints and never chooses an exit code: the binary in
//! `src/bin/` owns the command line.
#![forbid(unsafe_code)]

pub use kfsched_core::{
    admission, check, diag, diff, discover, explain, format, k8s, krm, outcome, policy, rewrite,
    starter, suggest,
};

/// The live `node` commands (taint, label, cordon, drain, pools).
pub use kfsched_cluster as node;
