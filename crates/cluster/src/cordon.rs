//! `node cordon` / `node uncordon`: set or clear `spec.unschedulable`.
//!
//! A scalar field, so the patch needs no resourceVersion guard: two
//! concurrent cordons cannot lose anything. A node already in the wanted
//! state is reported (`already cordoned`) and not written.

use std::io::Write;

use k8s_openapi::api::core::v1::Node;
use serde_json::json;

use super::client::Clients;
use super::edit::{self, Step, Summary};
use super::{DryRun, Error, Targets};

/// Whether the node is cordoned.
pub fn is_cordoned(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

/// Plans one node: `cordon = true` to cordon, `false` to uncordon.
pub fn plan(node: &Node, cordon: bool) -> Step {
    let (done, already) = if cordon {
        ("cordoned", "already cordoned")
    } else {
        ("uncordoned", "already uncordoned")
    };
    if is_cordoned(node) == cordon {
        return Step::Unchanged {
            verb: already.into(),
            notes: vec![],
        };
    }
    // Uncordon removes the field, as kubectl's two-way patch does.
    let value = if cordon { json!(true) } else { json!(null) };
    Step::Write {
        patch: json!({"spec": {"unschedulable": value}}),
        verb: done.into(),
        guard: false,
        notes: vec![],
    }
}

/// `node cordon`'s and `node uncordon`'s options.
#[derive(Clone, Debug)]
pub struct CordonOptions {
    pub targets: Targets,
    /// `true` for cordon, `false` for uncordon.
    pub cordon: bool,
    pub dry_run: DryRun,
}

/// Runs `node cordon` or `node uncordon`.
pub async fn run(
    clients: &Clients,
    opts: &CordonOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Summary, Error> {
    edit::run(
        clients,
        &opts.targets,
        opts.dry_run,
        |n| plan(n, opts.cordon),
        out,
        err,
    )
    .await
}
