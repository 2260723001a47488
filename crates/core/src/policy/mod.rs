//! The SchedulingPolicy: reading it strictly, validating it with the API
//! server's rules, and the typed model the rest of kfsched works with.
//!
//! Reading follows kustomize's function-config discipline: parse strictly
//! (unknown fields and wrong types are errors, `schema`), then default, then
//! validate (`validate`, with the Kubernetes field shapes in `affinity`,
//! `tolerations`, `metadata` and `selector`), and report every problem at
//! once with its location. This file holds the typed model and the entry
//! points.

mod affinity;
mod annotations;
mod metadata;
mod pod_spec;
pub mod schema;
mod selector;
#[cfg(test)]
mod tests;
mod tolerations;
mod validate;
mod warnings;

use std::path::Path;

use k8s_openapi::api::core::v1::{
    NodeSelectorTerm, PodAffinityTerm, PreferredSchedulingTerm, Taint, Toleration,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};

use crate::diag::{Diagnostic, decode_utf8};
use crate::k8s::LabelSelector;
use crate::matching::{self, Glob, Selector, Subject, Verdict};
use crate::scheduling::{Shape, Tol};
use kfsched_yaml::tree::{Kind, Tree};
use schema::{Locations, Reader};

/// The API version and kind a policy must declare.
pub use crate::discover::{POLICY_API_VERSION as API_VERSION, POLICY_KIND as KIND};

/// A validated SchedulingPolicy.
#[derive(Clone, Debug)]
pub struct Policy {
    /// The file it was read from, as given (for messages).
    pub file: String,
    pub name: String,
    pub pools: Vec<NodePool>,
    pub rules: Vec<Rule>,
    /// What the API server would accept with a warning (deprecated node
    /// labels and annotations, preferred values that never match, pod
    /// affinity terms without a selector), in file order.
    pub warnings: Vec<Diagnostic>,
    /// What is valid but probably not meant, which `validate` says and
    /// the other commands do not repeat on every run: no `metadata.name`
    /// (the node commands need it), a policy that holds nothing, a pool
    /// that selects no node.
    pub advice: Vec<Diagnostic>,
    locs: Locations,
}

/// A named group of nodes.
#[derive(Clone, Debug)]
pub struct NodePool {
    pub name: String,
    pub nodes: Vec<Glob>,
    pub node_selector: Option<LabelSelector>,
    pub labels: Vec<(String, String)>,
    pub taints: Vec<Taint>,
}

/// How a rule combines with what a component already has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    Merge,
    Replace,
}

/// One rule, with the pool's contributions already expanded in front of
/// the rule's own entries.
#[derive(Clone, Debug)]
pub struct Rule {
    pub index: usize,
    pub name: String,
    pub matcher: Selector,
    pub exclude: Selector,
    pub pool: Option<String>,
    pub strategy: Strategy,
    /// Pool tolerations, then the rule's own.
    pub tolerations: Vec<Toleration>,
    pub node_selector: Vec<(String, String)>,
    /// Required node-affinity requirements, ANDed in order: the pool's
    /// single term first, then the rule's own terms (which are ORed).
    pub required: Vec<Vec<NodeSelectorTerm>>,
    pub preferred: Vec<PreferredSchedulingTerm>,
    pub pod_affinity_required: Vec<PodAffinityTerm>,
    pub pod_affinity_preferred: Vec<WeightedPodAffinityTerm>,
    pub pod_anti_affinity_required: Vec<PodAffinityTerm>,
    pub pod_anti_affinity_preferred: Vec<WeightedPodAffinityTerm>,
    pub pod_labels: Vec<(String, String)>,
    pub pod_annotations: Vec<(String, String)>,
    /// The pod's `priorityClassName`, `schedulerName` and
    /// `runtimeClassName`: each replaces a different value.
    pub priority_class_name: Option<String>,
    pub scheduler_name: Option<String>,
    pub runtime_class_name: Option<String>,
    /// Appended unless one with the same topologyKey and
    /// whenUnsatisfiable is there.
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// Whether the rule names these fields (for `strategy: replace`).
    pub names_tolerations: bool,
    pub names_node_selector: bool,
    pub names_affinity: bool,
    pub names_topology_spread: bool,
    /// `tolerations` as entries of each file shape (see [`Rule::tolerations_as`]).
    tolerations_by_shape: [Vec<Tol>; 2],
}

impl Rule {
    pub(crate) fn has_pod_affinity(&self) -> bool {
        !(self.pod_affinity_required.is_empty()
            && self.pod_affinity_preferred.is_empty()
            && self.pod_anti_affinity_required.is_empty()
            && self.pod_anti_affinity_preferred.is_empty())
    }

    /// Whether the rule sets a field that KFP v2's platform spec cannot
    /// carry (pod affinity aside): these reach KFP v2 pods only at admission.
    pub(crate) fn kfp_v2_cannot_carry(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.priority_class_name.is_some() {
            out.push("priorityClassName");
        }
        if self.scheduler_name.is_some() {
            out.push("schedulerName");
        }
        if self.runtime_class_name.is_some() {
            out.push("runtimeClassName");
        }
        if !self.topology_spread_constraints.is_empty() {
            out.push("topologySpreadConstraints");
        }
        out
    }

    /// Whether the rule can select a component of a file: its `podRoles`
    /// reach executors. One that reaches only drivers or importers acts at
    /// admission only, and matching nothing in files is what it should do.
    pub fn reaches_files(&self) -> bool {
        self.matcher.reaches(crate::matching::PodRole::Executor)
    }

    pub(crate) fn has_required(&self) -> bool {
        !self.required.is_empty()
    }

    /// Whether the rule selects the subject, and if not, why.
    pub fn judge(&self, s: &Subject) -> Verdict {
        matching::judge(&self.matcher, &self.exclude, s)
    }

    /// Why the rule did not select the subject, in words (see [`Verdict::reason`]).
    pub fn reason(&self, v: &Verdict, s: Subject) -> Option<String> {
        v.reason(&self.matcher, &self.exclude, s)
    }

    /// The rule's tolerations as entries in a file's shape, built once
    /// when the policy is read.
    pub(crate) fn tolerations_as(&self, shape: Shape) -> &[Tol] {
        &self.tolerations_by_shape[usize::from(shape == Shape::KfpV2)]
    }
}

/// Why a policy could not be loaded: every problem found.
#[derive(Clone, Debug)]
pub struct PolicyErrors(pub Vec<Diagnostic>);

impl std::fmt::Display for PolicyErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PolicyErrors {}

impl Policy {
    /// A policy with no rules and no pools: running it changes nothing and
    /// reports every component (`explain` without a policy, `init`).
    pub fn empty(file: &str) -> Policy {
        Policy {
            file: file.to_string(),
            name: String::new(),
            pools: Vec::new(),
            rules: Vec::new(),
            warnings: Vec::new(),
            advice: Vec::new(),
            locs: Locations::default(),
        }
    }

    /// Reads and validates a policy file.
    pub fn load(path: &Path) -> Result<Policy, PolicyErrors> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| {
            PolicyErrors(vec![Diagnostic::file(
                &file,
                format!("cannot read the policy: {e}"),
            )])
        })?;
        Policy::from_bytes(&file, &bytes)
    }

    /// Reads and validates a policy from bytes; `file` names it in messages.
    pub fn from_bytes(file: &str, bytes: &[u8]) -> Result<Policy, PolicyErrors> {
        let text = decode_utf8(file, bytes).map_err(|d| PolicyErrors(vec![d]))?;
        let tree = Tree::parse(text).map_err(|e| {
            PolicyErrors(vec![Diagnostic {
                file: file.to_string(),
                line: e.line,
                col: e.col,
                path: e.path.clone(),
                message: format!("invalid YAML: {}", e.message),
            }])
        })?;
        if let Some(what) = input_kind(&tree) {
            return Err(PolicyErrors(vec![Diagnostic {
                file: file.to_string(),
                line: 1,
                col: 1,
                path: String::new(),
                message: format!(
                    "this file is {what}, not a SchedulingPolicy: give it as an input file, and the policy with -p POLICY (or a .kfsched.yaml here or above)"
                ),
            }]));
        }
        // A document that is only `---` holds nothing either.
        let docs: Vec<_> = tree
            .documents
            .iter()
            .filter_map(|d| d.root.filter(|&r| !tree.is_null(r)).map(|r| (d, r)))
            .collect();
        let root = match docs.as_slice() {
            [] => {
                return Err(PolicyErrors(vec![Diagnostic {
                    file: file.to_string(),
                    line: 1,
                    col: 1,
                    path: String::new(),
                    message: "the policy file is empty; it must hold one SchedulingPolicy document"
                        .into(),
                }]));
            }
            [(_, r)] => *r,
            [_, (second, r), ..] => {
                // At its `---`, or its content when it has none.
                let (line, col) = if second.explicit_start {
                    kfsched_yaml::tree::line_col(text, second.start as usize)
                } else {
                    tree.position(*r)
                };
                return Err(PolicyErrors(vec![Diagnostic {
                    file: file.to_string(),
                    line,
                    col,
                    path: String::new(),
                    message: "the policy file holds more than one YAML document; keep only the SchedulingPolicy".into(),
                }]));
            }
        };
        Policy::from_tree(file, &tree, root)
    }

    /// Reads a policy from a node of an already parsed file (a KRM functionConfig).
    pub(crate) fn from_tree(
        file: &str,
        tree: &Tree,
        root: kfsched_yaml::NodeId,
    ) -> Result<Policy, PolicyErrors> {
        if tree.kind(root) != Kind::Map {
            let (line, col) = tree.position(root);
            return Err(PolicyErrors(vec![Diagnostic {
                file: file.to_string(),
                line,
                col,
                path: String::new(),
                message: format!(
                    "a SchedulingPolicy must be a mapping with apiVersion: {API_VERSION} and kind: {KIND}"
                ),
            }]));
        }
        let mut reader = Reader::new(tree, file);
        let json = reader.read(root, schema::Shape::Object(schema::POLICY), "");
        let Reader {
            diags, locs, keys, ..
        } = reader;
        validate::policy(file, &json, locs, keys, diags)
    }

    /// Where a YAML path of the policy sits, for errors that come from a rule meeting a file.
    pub fn location(&self, path: &str) -> (usize, usize) {
        let mut p = path;
        loop {
            if let Some(&l) = self.locs.get(p) {
                return l;
            }
            match p.rfind(['.', '[']) {
                Some(i) => p = &p[..i],
                None => return (1, 1),
            }
        }
    }

    /// A diagnostic about a rule, pointing at the rule in the policy file.
    pub(crate) fn rule_diag(&self, rule: &Rule, field: &str, message: String) -> Diagnostic {
        let base = format!("spec.rules[{}]", rule.index);
        let path = if field.is_empty() {
            base
        } else {
            format!("{base}.{field}")
        };
        let (line, col) = self.location(&path);
        Diagnostic {
            file: self.file.clone(),
            line,
            col,
            path,
            message,
        }
    }

    pub fn pool(&self, name: &str) -> Option<&NodePool> {
        self.pools.iter().find(|p| p.name == name)
    }
}

/// What a file given as the policy is when it is an input kfsched rewrites
/// (a pipeline, a workflow or a workload) rather than a policy.
fn input_kind(tree: &Tree) -> Option<&'static str> {
    use crate::format::{Doc, argo};
    let first = tree
        .documents
        .iter()
        .find_map(|d| d.root.filter(|&r| !tree.is_null(r)))?;
    let kind = tree
        .get_value(first, "kind")
        .and_then(|v| tree.str_value(v));
    if tree.kind(first) != Kind::Map || kind == Some(KIND) {
        return None;
    }
    let what = |d: &Doc| match d {
        Doc::KfpV2(p) if p.manifest.is_some() => Some("a KFP v2 pipeline (a PipelineVersion)"),
        Doc::KfpV2(_) => Some("a KFP v2 pipeline (IR YAML)"),
        Doc::Argo(w) if w.kfp_v1 => Some("a KFP v1 pipeline (an Argo Workflow)"),
        Doc::Argo(_) => Some("an Argo workflow"),
        Doc::Workload(_) => Some("a Kubernetes workload"),
        Doc::List(_) => Some("a List of workflows or workloads"),
        _ => None,
    };
    match crate::format::detect(tree) {
        Ok(docs) => docs.iter().find_map(what),
        Err((_, m)) if m == argo::KFP_BACKEND_REFUSAL => {
            Some("a KFP v2 pipeline (a Workflow compiled by KFP's backend)")
        }
        Err(_) => None,
    }
}

/// The document kinds `match.kinds` can name (SPEC §1): the formats kfsched reads.
pub(crate) fn known_kinds() -> impl Iterator<Item = &'static str> + Clone {
    [
        crate::format::kfp_v2::KIND,
        crate::format::pipeline_version::KIND,
    ]
    .into_iter()
    .chain(crate::format::argo::KINDS.iter().copied())
    .chain(crate::format::workload::KINDS.iter().copied())
}
