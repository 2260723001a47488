//! kfsched's offline core.
#![forbid(unsafe_code)]

pub mod diag;
pub mod diff;
pub mod discover;
pub mod explain;
pub mod format;
pub mod k8s;
pub mod krm;
pub mod matching;
pub mod merge;
pub mod policy;
pub mod rewrite;
pub mod scheduling;
pub mod suggest;
