//! kfsched: one SchedulingPolicy for Kubeflow Pipelines scheduling.
//!
//! Data flows one way: read → detect format → find components → match rules
//! → plan edits → apply edits to the original bytes → report. Each arrow is a
//! module boundary. The library never prints or exits; the binary in
//! `src/bin/` owns the command line.
#![forbid(unsafe_code)]

pub mod completion;
pub mod diag;
pub mod diff;
pub mod discover;
pub mod exit;
pub mod explain;
pub mod format;
pub mod k8s;
pub mod krm;
pub mod matching;
pub mod node;
pub mod policy;
pub mod rewrite;
pub mod sched;
pub mod yaml;
