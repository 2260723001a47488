//! kfsched's offline core: the SchedulingPolicy, the pipeline formats, and
//! the byte-preserving rewrite of compiled pipeline files. Synchronous, and
//! free of any cluster, async runtime or command-line code.
//!
//! Data flows one way, one module per step, each importing only the steps
//! before it (`tests/layering.rs` keeps it so):
//!
//! 1. read: [`discover`] finds the policy and the input files;
//! 2. detect and find components: [`format`](mod@format) says what each document is
//!    and which of its parts become pods, with their names and images;
//! 3. match: [`matching`] judges a rule's selectors against a component;
//!    the rules come from the [`policy`];
//! 4. merge: `merge` combines the selected rules with the component's
//!    [`scheduling`] (SPEC §3);
//! 5. plan and edit: `plan` turns the changed components into edits of the
//!    original text, which the `kfsched_yaml` editor applies;
//! 6. report: [`rewrite`] returns the new text and an [`outcome`] per file,
//!    which [`explain`], [`diff`] and the KRM function ([`krm`]) render, and
//!    from which [`starter`] writes the policy `init` starts a user with.
//!
//! Beside the flow, [`check`] judges placement as kube-scheduler does and
//! [`admission`] exports the policy for the API server to apply at
//! admission.
//!
//! The entry points are [`policy::Policy::load`], [`rewrite::process_all`]
//! and [`krm::run`]; nothing here prints or exits.
#![forbid(unsafe_code)]

pub mod admission;
pub mod check;
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
mod merge;
pub mod outcome;
mod plan;
pub mod policy;
pub mod rewrite;
pub mod scheduling;
pub mod starter;
pub mod suggest;
