//! kfsched's offline core.
#![forbid(unsafe_code)]

pub mod diag;
pub mod diff;
pub mod discover;
pub mod explain;
mod fastpath;
pub mod format;
mod helm;
pub mod k8s;
pub mod krm;
pub mod matching;
pub mod merge;
pub mod outcome;
mod plan;
pub mod policy;
pub mod rewrite;
pub mod scheduling;
pub mod suggest;
