//! Reading the documents of the formats: one interface over a span-tree node
//! and a skimmed value, and the lookups every format uses.

use kfsched_yaml::tree::{Kind, NodeId, Tree};

/// Read-only access to maps and scalars: a span-tree node, or a [`Value`](kfsched_yaml::Value)
/// (such as a skimmed projection). Lookups ignore nulls; with duplicate
/// keys the last one wins, as in PyYAML.
pub trait View<'s>: Copy {
    fn field(self, key: &str) -> Option<Self>;
    /// Scalar text, when the node is a non-null scalar.
    fn text(self) -> Option<&'s str>;
    /// A map's entries, in order (empty for anything else).
    fn entries(self) -> Vec<(&'s str, Self)>;
    fn is_map(self) -> bool;
}

/// A node of a span tree as a [`View`].
#[derive(Clone, Copy)]
pub struct TreeNode<'t, 'a> {
    pub tree: &'t Tree<'a>,
    pub id: NodeId,
}

impl<'t> View<'t> for TreeNode<'t, '_> {
    fn field(self, key: &str) -> Option<Self> {
        field(self.tree, self.id, key).map(|id| TreeNode {
            tree: self.tree,
            id,
        })
    }
    fn text(self) -> Option<&'t str> {
        self.tree.str_value(self.id)
    }
    fn entries(self) -> Vec<(&'t str, Self)> {
        if self.tree.kind(self.id) != Kind::Map {
            return Vec::new();
        }
        self.tree
            .effective_entries(self.id)
            .into_iter()
            .map(|(k, v)| {
                (
                    self.tree.scalar(k),
                    TreeNode {
                        tree: self.tree,
                        id: v,
                    },
                )
            })
            .collect()
    }
    fn is_map(self) -> bool {
        self.tree.kind(self.id) == Kind::Map
    }
}

impl<'v> View<'v> for &'v kfsched_yaml::Value {
    fn field(self, key: &str) -> Option<Self> {
        self.as_map()?
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .filter(|v| !v.is_null())
    }
    fn text(self) -> Option<&'v str> {
        self.as_str()
    }
    fn entries(self) -> Vec<(&'v str, Self)> {
        self.as_map()
            .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default()
    }
    fn is_map(self) -> bool {
        matches!(self, kfsched_yaml::Value::Map(_))
    }
}

/// Follows a path of keys through a [`View`].
pub(crate) fn at<'s, V: View<'s>>(mut v: V, path: &[&str]) -> Option<V> {
    for k in path {
        v = v.field(k)?;
    }
    Some(v)
}

/// Follows a path of keys through a span tree.
pub(crate) fn at_node(tree: &Tree, node: NodeId, path: &[&str]) -> Option<NodeId> {
    at(TreeNode { tree, id: node }, path).map(|n| n.id)
}

/// The value of `key` in map `m` when it is not null, as YAML readers see
/// it: merged from a merge key (`<<`) when `m` does not have it itself,
/// aliases resolved.
pub(crate) fn field(tree: &Tree, m: NodeId, key: &str) -> Option<NodeId> {
    tree.lookup(m, key).filter(|&v| !tree.is_null(v))
}

/// The value of `key` written in `m` itself when it is not null: where an
/// edit of it goes (a merged value is written as a key of `m`'s own).
pub(crate) fn field_own(tree: &Tree, m: NodeId, key: &str) -> Option<NodeId> {
    tree.get_value(m, key).filter(|&v| !tree.is_null(v))
}

/// `m.key` when it is not a YAML alias: a pod template, workflow spec or
/// template list written as `*name` hides the components behind it, which
/// kfsched neither reads nor edits through, so the file is refused rather
/// than a component silently skipped.
pub(crate) fn field_no_alias(
    tree: &Tree,
    m: NodeId,
    key: &str,
    what: &str,
) -> Result<Option<NodeId>, (NodeId, String)> {
    match field_own(tree, m, key) {
        Some(n) if tree.kind(n) == Kind::Alias => Err((n, alias_refusal(what))),
        _ => Ok(field(tree, m, key)),
    }
}

/// The refusal for a structural alias.
pub(crate) fn alias_refusal(what: &str) -> String {
    format!(
        "{what} is a YAML alias (*name): kfsched does not read or edit through aliases, so it cannot schedule what is behind it; expand the alias in the file"
    )
}

/// A string scalar at `m.key`.
pub(crate) fn field_str<'t>(tree: &'t Tree, m: NodeId, key: &str) -> Option<&'t str> {
    field(tree, m, key).and_then(|v| tree.str_value(v))
}

pub(crate) fn push_unique(v: &mut Vec<String>, s: &str) {
    if !s.is_empty() && !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}
