//! What every Kubernetes object of the formats has: its metadata.

use super::{field, field_str};
use kfsched_yaml::tree::{Kind, NodeId, Tree};

/// The controller among `metadata.ownerReferences`, when there is one.
pub(crate) fn controller(tree: &Tree, root: NodeId) -> Option<(String, NodeId)> {
    let refs = field(tree, root, "metadata").and_then(|m| field(tree, m, "ownerReferences"))?;
    if tree.kind(refs) != Kind::Seq {
        return None;
    }
    tree.items(refs).find_map(|r| {
        let is_controller = field(tree, r, "controller")
            .and_then(|v| tree.str_value(v))
            .is_some_and(|v| v == "true");
        let kind = field_str(tree, r, "kind")?;
        let name = field_str(tree, r, "name")?;
        is_controller.then(|| (format!("{kind} {name:?}"), r))
    })
}
