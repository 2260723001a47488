//! `node drain`, in the shape of kubectl's `pkg/drain`: a Helper-like
//! [`Drainer`] holds the options, the clients and the caller's event
//! callback; every pod filter returns a verdict and a reason naming the
//! flag that overrides it; eviction with its 429 handling, and waiting,
//! are separate pieces.
//!
//! - [`options`](DrainOptions): the flags as a plain struct;
//! - `filters`: every pod's [`Fate`] from kubectl's filters;
//! - `survey`: a node's pods, the DaemonSets behind them and the
//!   PodDisruptionBudgets that cover them, before anything is evicted;
//! - `eviction`: the Eviction API, 429 with `Retry-After` and backoff, the
//!   budget the server names;
//! - `watching`: kube-runtime watchers on the node's pods and on the
//!   budgets, which recover from errors;
//! - `orchestration`: the [`Drainer`]'s order of work;
//! - `report`: the [`Event`]s it reports and the typed reasons it stops.
//!
//! Nothing here prints: the binary renders the events.

mod eviction;
mod filters;
mod options;
mod orchestration;
mod report;
mod survey;
mod watching;

pub use eviction::{EvictionRefusal, selector_matches};
pub use filters::{
    Budget, Fate, PodPlan, Verdict, classify, daemonset_filter, local_storage_filter,
    mirror_filter, skip_deleted_filter, unreplicated_filter,
};
pub use options::{DEFAULT_CONCURRENCY, DrainOptions};
pub use orchestration::{Drainer, run};
pub use report::{
    Blocked, BlockedPod, CordonsUndone, Counts, DrainReport, Event, Incomplete, NodeFailure,
    NodeReport, NotDrained, PodState, PodStep,
};
