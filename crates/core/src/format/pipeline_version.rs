//! KFP's Kubernetes-native manifests (`pipelines.kubeflow.org/v2beta1`),
//! as kfp writes them with `kubernetes_manifest_format=True` and as
//! `kubectl get pipelineversions -o yaml` prints them.
//!
//! A `PipelineVersion` holds a KFP v2 pipeline IR in `spec.pipelineSpec`:
//! its components, names and images are the IR's, and its scheduling lives
//! in `spec.platformSpec` (the platform document of an IR file, inside the
//! object), created at its sorted place in `spec` when absent. A `Pipeline`
//! holds no spec and is not a pipeline to rewrite.

use kfsched_yaml::Value;
use kfsched_yaml::tree::{Kind, NodeId, Tree};

use super::kfp_v2::Pipeline;
use super::object::controller;
use super::{Doc, TreeNode, field, field_no_alias, field_str};

/// The kind `match.kinds` names a PipelineVersion by.
pub const KIND: &str = "PipelineVersion";

/// Where a PipelineVersion keeps what kfsched reads and writes besides its IR.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// The object's root mapping.
    pub root: NodeId,
    /// `spec`, where `platformSpec` is created when absent.
    pub spec: NodeId,
    /// `metadata`, when present.
    pub metadata: Option<NodeId>,
    /// `metadata.name`.
    pub name: Option<String>,
    /// Whether the object was read back from a cluster (the API server set
    /// its `uid` or `resourceVersion`): KFP refuses to change the spec of a
    /// stored version.
    pub from_cluster: bool,
    /// The controller that manages it, when one does.
    pub owner: Option<(String, NodeId)>,
}

/// The metadata the API server sets, which an object created from a copy
/// must not carry (`kubectl create` refuses a `resourceVersion`).
pub const SERVER_FIELDS: &[&str] = &[
    "creationTimestamp",
    "generation",
    "managedFields",
    "resourceVersion",
    "selfLink",
    "uid",
];

/// What a `pipelines.kubeflow.org/*` document of kind `kind` is.
pub(crate) fn detect(tree: &Tree, root: NodeId, kind: &str) -> Result<Doc, (NodeId, String)> {
    match kind {
        KIND => version(tree, root, None),
        "Pipeline" => Ok(Doc::Other(
            "a KFP Pipeline, whose PipelineVersions hold the pipeline spec".into(),
        )),
        other => Ok(Doc::Other(format!(
            "not a pipeline (pipelines.kubeflow.org {other})"
        ))),
    }
}

/// Reads a PipelineVersion; `skimmed` is its `spec.pipelineSpec` when the
/// fast path read that instead of the tree.
pub(crate) fn version(
    tree: &Tree,
    root: NodeId,
    skimmed: Option<&Value>,
) -> Result<Doc, (NodeId, String)> {
    let metadata = field(tree, root, "metadata").filter(|&m| tree.kind(m) == Kind::Map);
    let name = metadata.and_then(|m| field_str(tree, m, "name").map(str::to_string));
    let what = match &name {
        Some(n) => format!("the PipelineVersion {n:?}"),
        None => "a PipelineVersion".into(),
    };
    let spec = match field_no_alias(tree, root, "spec", "the PipelineVersion's spec")? {
        Some(s) if tree.kind(s) == Kind::Map => s,
        Some(s) => {
            return Err((
                s,
                format!("{what}: spec must be a mapping holding pipelineSpec"),
            ));
        }
        None => {
            return Err((
                root,
                format!(
                    "{what} has no spec.pipelineSpec (the compiled pipeline): compile it with kfp's kubernetes_manifest_format"
                ),
            ));
        }
    };
    let Some(ir) = field_no_alias(tree, spec, "pipelineSpec", "the pipeline spec")? else {
        if field(tree, spec, "pipelineSpecURI").is_some() {
            return Ok(Doc::Other(format!(
                "{what} keeps its pipeline spec at spec.pipelineSpecURI, not in the file: nothing to rewrite offline"
            )));
        }
        return Err((
            spec,
            format!(
                "{what} has no spec.pipelineSpec (the compiled pipeline) and no pipelineSpecURI: compile it with kfp's kubernetes_manifest_format"
            ),
        ));
    };
    if tree.kind(ir) != Kind::Map {
        return Err((
            ir,
            format!("{what}: spec.pipelineSpec must be a mapping (the compiled pipeline IR)"),
        ));
    }
    let platform = match field_no_alias(tree, spec, "platformSpec", "the platform spec")? {
        Some(p) if tree.kind(p) == Kind::Map => Some(p),
        Some(p) => {
            return Err((
                p,
                format!(
                    "{what}: spec.platformSpec must be a mapping (platforms: kubernetes: deploymentSpec: ...), as kfp writes it"
                ),
            ));
        }
        None => None,
    };
    let names: Vec<String> = field_str(tree, spec, "pipelineName")
        .map(str::to_string)
        .into_iter()
        .collect();
    let from_cluster = metadata.is_some_and(|m| {
        field(tree, m, "uid").is_some() || field(tree, m, "resourceVersion").is_some()
    });
    let mut p = match skimmed {
        Some(ir) => Pipeline::read(ir, None, platform, KIND, names),
        None => Pipeline::read(TreeNode { tree, id: ir }, None, platform, KIND, names),
    };
    p.manifest = Some(Manifest {
        root,
        spec,
        metadata,
        name,
        from_cluster,
        owner: controller(tree, root),
    });
    Ok(Doc::KfpV2(p))
}
