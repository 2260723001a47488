//! Where a function's policy came from. Kustomize and kpt send the policy
//! as the ResourceList's `functionConfig`, so its problems are found at
//! `ResourceList:LINE:COL`, a place the user never sees. When the
//! functionConfig is the content of one of the user's files (the file kpt's
//! annotations name, a transformer of the kustomization, the policy found
//! as every command finds it), the policy is read from that file instead,
//! so that every message points into it, with the ResourceList's position
//! as a second location.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::diag::Diagnostic;
use crate::outcome::Input;
use crate::policy::Policy;
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::node_value;

use super::str_at;

/// The annotations kpt (and kustomize's kyaml) put on a resource read from a file.
const PATH: [&str; 2] = [
    "internal.config.kubernetes.io/path",
    "config.kubernetes.io/path",
];
const PACKAGE_PATH: &str = "internal.config.kubernetes.io/package-path";

/// The file a ResourceList's functionConfig says it was read from (kpt's
/// `fn render` annotates it with its package and path), to offer as a
/// candidate.
pub(super) fn config_paths(tree: &Tree) -> Vec<PathBuf> {
    let Some(root) = tree.documents.first().and_then(|d| d.root) else {
        return Vec::new();
    };
    if tree.kind(root) != Kind::Map {
        return Vec::new();
    }
    let Some(fc) = tree.get_value(root, "functionConfig") else {
        return Vec::new();
    };
    let ann = |k: &str| str_at(tree, fc, &["metadata", "annotations", k]);
    let Some(path) = PATH.iter().find_map(|k| ann(k)) else {
        return Vec::new();
    };
    match ann(PACKAGE_PATH) {
        Some(pkg) => vec![Path::new(pkg).join(path)],
        None => vec![PathBuf::from(path)],
    }
}

/// The files a kustomization runs as functions (`transformers`,
/// `generators`, `validators`): kustomize runs an exec function in the
/// kustomization's directory, so these paths are relative to it.
pub fn kustomization_configs(kustomization: &str) -> Vec<String> {
    let Ok(tree) = Tree::parse(kustomization) else {
        return Vec::new();
    };
    let Some(root) = tree.documents.first().and_then(|d| d.root) else {
        return Vec::new();
    };
    if tree.kind(root) != Kind::Map {
        return Vec::new();
    }
    let mut out = Vec::new();
    for key in ["transformers", "generators", "validators"] {
        let Some(list) = tree
            .get_value(root, key)
            .filter(|&l| tree.kind(l) == Kind::Seq)
        else {
            continue;
        };
        for item in tree.items(list) {
            if let Some(s) = tree.str_value(item) {
                // A whole resource inline (not a path) spans lines.
                if !s.contains('\n') {
                    out.push(s.to_string());
                }
            }
        }
    }
    out
}

/// The functionConfig's content as JSON, without the annotations that
/// the orchestrators add or drop.
fn content(tree: &Tree, node: NodeId) -> Json {
    let mut j = node_value(tree, node).to_json();
    if let Some(m) = j.get_mut("metadata").and_then(Json::as_object_mut) {
        m.remove("annotations");
    }
    j
}

/// The policy read from the first candidate file that holds exactly the
/// functionConfig `fc` (one of its documents): `Ok` when it is valid, else
/// its errors, located in that file. `None` when no candidate holds it.
pub(super) fn from_files(
    tree: &Tree,
    fc: NodeId,
    files: &[Input],
) -> Option<Result<Policy, Vec<Diagnostic>>> {
    let want = content(tree, fc);
    for f in files {
        let Ok(text) = std::str::from_utf8(&f.bytes) else {
            continue;
        };
        let Ok(ftree) = Tree::parse(text) else {
            continue;
        };
        for doc in &ftree.documents {
            let Some(root) = doc.root.filter(|&r| ftree.kind(r) == Kind::Map) else {
                continue;
            };
            if content(&ftree, root) != want {
                continue;
            }
            return Some(Policy::from_tree(&f.file, &ftree, root).map_err(|e| e.0));
        }
    }
    None
}

/// Adds the ResourceList's position of the same problem to a diagnostic
/// about the policy file: `(ResourceList:LINE:COL)`.
pub(super) fn with_second_location(mut d: Diagnostic, at: (usize, usize)) -> Diagnostic {
    d.message = format!("{} (ResourceList:{}:{})", d.message, at.0, at.1);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_from_kpt_annotations_and_a_kustomization() {
        let list = "kind: ResourceList\nitems: []\nfunctionConfig:\n  kind: SchedulingPolicy\n  metadata:\n    annotations:\n      config.kubernetes.io/path: 'kfsched.yaml'\n      internal.config.kubernetes.io/package-path: '/pkg'\n      internal.config.kubernetes.io/path: 'kfsched.yaml'\n";
        let paths = |text: &str| super::super::ResourceList::read(text.as_bytes()).config_paths();
        assert_eq!(paths(list), [PathBuf::from("/pkg/kfsched.yaml")]);
        assert!(paths("kind: ResourceList\nfunctionConfig: {kind: X}\n").is_empty());
        let k = "resources: [a.yaml]\ntransformers:\n- kfsched.yaml\n- |\n  apiVersion: x\n  kind: Y\nvalidators: [placement.yaml]\n";
        assert_eq!(kustomization_configs(k), ["kfsched.yaml", "placement.yaml"]);
    }
}
