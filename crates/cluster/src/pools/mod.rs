//! `node apply` / `node diff`: make the nodes of every `spec.nodePools`
//! entry carry the pool's labels and taints, and remember what was added.
//!
//! - [`record`](MANAGED_ANNOTATION): the `kfsched.dev/managed` annotation
//!   that says what each policy's applies added, so `--prune` removes
//!   exactly those entries, and only while the node still carries the
//!   value apply wrote;
//! - `plan` (pure): the pools a node is in, what they want, and the
//!   changes and merge patch that get it there;
//! - `apply` (async): list the nodes, plan, and write.
//!
//! Nothing here prints plans: the binary renders [`NodePlan`]s.

mod apply;
mod plan;
mod record;

pub use apply::{Planned, apply, plan, warnings};
pub use plan::{
    Change, Desired, NodePlan, PoolOptions, desired, plan_all, plan_node, require_name, selects,
};
pub use record::{MANAGED_ANNOTATION, Managed, Record};
