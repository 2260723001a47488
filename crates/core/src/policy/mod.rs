//! The SchedulingPolicy: reading it strictly, validating it with the API
//! server's rules, and the typed model the rest of kfsched works with.
//!
//! Reading follows kustomize's function-config discipline: parse strictly
//! (unknown fields and wrong types are errors), then default, then
//! validate, and report every problem at once with its location.

mod annotations;
pub mod schema;
mod warnings;

use std::collections::HashSet;
use std::path::Path;

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm, PreferredSchedulingTerm, Taint,
    Toleration, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as MetaLabelSelector;
use serde_json::Value as Json;

use crate::diag::{Diagnostic, decode_utf8};
use crate::k8s::{self, LabelSelector};
use crate::matching::{self, Glob, Selector, Subject, Verdict};
use crate::scheduling::{Shape, Tol, tol_from_raw, tol_value};
use crate::suggest::nearest;
use kfsched_yaml::tree::{Kind, Tree};
use schema::{Locations, Reader};

/// The API version and kind a policy must declare.
pub const API_VERSION: &str = "kfsched.dev/v1alpha1";
pub const KIND: &str = "SchedulingPolicy";

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
    /// Whether the rule names these fields (for `strategy: replace`).
    pub names_tolerations: bool,
    pub names_node_selector: bool,
    pub names_affinity: bool,
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

/// Pod affinity and anti-affinity terms, required and preferred.
type PodAffinityLists = (
    Vec<PodAffinityTerm>,
    Vec<WeightedPodAffinityTerm>,
    Vec<PodAffinityTerm>,
    Vec<WeightedPodAffinityTerm>,
);

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
        let mut v = Validator {
            file: file.to_string(),
            locs,
            keys,
            diags,
            warnings: Vec::new(),
        };
        let mut policy = v.build(&json);
        if v.diags.is_empty() {
            // As the API server, which warns only about what it accepts.
            v.warnings.sort_by_key(|d| (d.line, d.col));
            v.warnings.dedup();
            policy.warnings = v.warnings;
            Ok(policy)
        } else {
            v.diags.sort_by_key(|d| (d.line, d.col));
            v.diags.dedup();
            Err(PolicyErrors(v.diags))
        }
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

struct Validator {
    file: String,
    /// Where each path's value sits.
    locs: Locations,
    /// Where each map entry's key sits.
    keys: Locations,
    diags: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

fn get<'j>(j: &'j Json, key: &str) -> Option<&'j Json> {
    j.get(key).filter(|v| !v.is_null())
}

fn str_of(j: &Json, key: &str) -> String {
    get(j, key).and_then(Json::as_str).unwrap_or("").to_string()
}

fn pairs(j: Option<&Json>) -> Vec<(String, String)> {
    j.and_then(Json::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn typed<T: serde::de::DeserializeOwned + Default>(j: Option<&Json>) -> T {
    j.and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

impl Validator {
    fn has_errors_under(&self, path: &str) -> bool {
        self.diags.iter().any(|d| {
            d.path == path
                || d.path.starts_with(&format!("{path}."))
                || d.path.starts_with(&format!("{path}["))
        })
    }

    /// An error about the value at `path`.
    fn err(&mut self, path: &str, message: impl Into<String>) {
        let at = self.loc(path);
        self.err_at(at, path, message.into());
    }

    /// An error about the key of the map entry at `path`.
    fn err_key(&mut self, path: &str, message: impl Into<String>) {
        let at = self.key_loc(path);
        self.err_at(at, path, message.into());
    }

    fn err_at(&mut self, (line, col): (usize, usize), path: &str, message: String) {
        // One error per place: the first (structural) one says it.
        if self
            .diags
            .iter()
            .any(|d| d.path == path && (d.line, d.col) == (line, col))
        {
            return;
        }
        self.diags.push(Diagnostic {
            file: self.file.clone(),
            line,
            col,
            path: path.to_string(),
            message,
        });
    }

    /// A warning about the value at `path`.
    fn warn(&mut self, path: &str, message: impl Into<String>) {
        let (line, col) = self.loc(path);
        self.warnings.push(Diagnostic {
            file: self.file.clone(),
            line,
            col,
            path: path.to_string(),
            message: message.into(),
        });
    }

    /// A warning about the key of the map entry at `path`.
    fn warn_key(&mut self, path: &str, message: impl Into<String>) {
        let (line, col) = self.key_loc(path);
        self.warnings.push(Diagnostic {
            file: self.file.clone(),
            line,
            col,
            path: path.to_string(),
            message: message.into(),
        });
    }

    fn key_loc(&self, path: &str) -> (usize, usize) {
        self.keys
            .get(path)
            .copied()
            .unwrap_or_else(|| self.loc(path))
    }

    fn loc(&self, path: &str) -> (usize, usize) {
        let mut p = path;
        loop {
            if let Some(&l) = self.locs.get(p) {
                return l;
            }
            match p.rfind(['.', '[']) {
                Some(i) => p = &p[..i],
                None => return self.locs.get("").copied().unwrap_or((1, 1)),
            }
        }
    }

    fn build(&mut self, j: &Json) -> Policy {
        let name = get(j, "metadata")
            .map(|m| str_of(m, "name"))
            .unwrap_or_default();
        let spec = get(j, "spec").cloned().unwrap_or(Json::Null);
        let mut pools = Vec::new();
        let mut pool_names: HashSet<String> = HashSet::new();
        if let Some(list) = get(&spec, "nodePools").and_then(Json::as_array) {
            for (i, p) in list.iter().enumerate() {
                let path = format!("spec.nodePools[{i}]");
                let pool = self.pool(p, &path);
                if !pool.name.is_empty() && !pool_names.insert(pool.name.clone()) {
                    self.err(
                        &format!("{path}.name"),
                        format!(
                            "Duplicate value: {:?}: node pool names must be unique",
                            pool.name
                        ),
                    );
                }
                pools.push(pool);
            }
        }
        let mut rules = Vec::new();
        let mut rule_names: HashSet<String> = HashSet::new();
        if let Some(list) = get(&spec, "rules").and_then(Json::as_array) {
            for (i, r) in list.iter().enumerate() {
                let path = format!("spec.rules[{i}]");
                let rule = self.rule(r, i, &path, &pools);
                if !rule.name.is_empty() && !rule_names.insert(rule.name.clone()) {
                    self.err(
                        &format!("{path}.name"),
                        format!(
                            "Duplicate value: {:?}: rule names must be unique",
                            rule.name
                        ),
                    );
                }
                rules.push(rule);
            }
        }
        self.pool_label_warnings(&pools, &rules);
        Policy {
            file: self.file.clone(),
            name,
            pools,
            rules,
            warnings: Vec::new(),
            locs: std::mem::take(&mut self.locs),
        }
    }

    /// A pool's labels reach the pods of every rule that names the pool,
    /// as a required node-affinity term: a deprecated key draws the
    /// server's warning there, reported here at the label.
    fn pool_label_warnings(&mut self, pools: &[NodePool], rules: &[Rule]) {
        for (i, pool) in pools.iter().enumerate() {
            if !rules.iter().any(|r| r.pool.as_ref() == Some(&pool.name)) {
                continue;
            }
            for (k, _) in &pool.labels {
                if let Some(m) = warnings::deprecated_node_label(k) {
                    let p = schema::entry_path(&format!("spec.nodePools[{i}].labels"), k);
                    self.warn_key(&p, format!("{k} is {m}"));
                }
            }
        }
    }

    fn pool(&mut self, p: &Json, path: &str) -> NodePool {
        let name = str_of(p, "name");
        if get(p, "name").is_some() {
            for m in k8s::dns1123_label(&name) {
                self.err(
                    &format!("{path}.name"),
                    format!("Invalid value: {name:?}: {m}"),
                );
            }
        }
        let mut nodes = Vec::new();
        if let Some(list) = get(p, "nodes").and_then(Json::as_array) {
            if list.is_empty() {
                self.err(
                    &format!("{path}.nodes"),
                    "must not be empty: list at least one node-name glob, or remove the key",
                );
            }
            for (i, n) in list.iter().enumerate() {
                match Glob::new(n.as_str().unwrap_or(""), false) {
                    Ok(g) => nodes.push(g),
                    Err(e) => self.err(&format!("{path}.nodes[{i}]"), e),
                }
            }
        }
        let node_selector =
            get(p, "nodeSelector").and_then(Json::as_str).and_then(
                |s| match LabelSelector::parse(s) {
                    // Like `nodes: []`: an empty selector matches every node.
                    Ok(_) if s.trim().is_empty() => {
                        self.err(
                            &format!("{path}.nodeSelector"),
                            "must not be empty (it would select every node): give a label selector, or remove the key",
                        );
                        None
                    }
                    Ok(sel) => Some(sel),
                    Err(e) => {
                        self.err(
                            &format!("{path}.nodeSelector"),
                            format!("invalid label selector {s:?}: {e}"),
                        );
                        None
                    }
                },
            );
        let labels = pairs(get(p, "labels"));
        self.labels(&labels, &format!("{path}.labels"));
        let mut taints = Vec::new();
        let mut seen: HashSet<(String, String)> = HashSet::new();
        if let Some(list) = get(p, "taints").and_then(Json::as_array) {
            for (i, t) in list.iter().enumerate() {
                let tp = format!("{path}.taints[{i}]");
                let taint = Taint {
                    key: str_of(t, "key"),
                    value: get(t, "value").and_then(Json::as_str).map(str::to_string),
                    effect: str_of(t, "effect"),
                    time_added: None,
                };
                self.label_name(&taint.key, &format!("{tp}.key"));
                let value = taint.value.clone().unwrap_or_default();
                let errs = k8s::label_value(&value);
                if !errs.is_empty() {
                    self.err(
                        &format!("{tp}.value"),
                        format!("Invalid value: {value:?}: {}", errs.join(";")),
                    );
                }
                if get(t, "effect").is_some() {
                    self.taint_effect(&taint.effect, false, &format!("{tp}.effect"));
                }
                if !seen.insert((taint.key.clone(), taint.effect.clone())) {
                    self.err(
                        &tp,
                        format!(
                            "Duplicate value: taints must be unique by key and effect pair ({}:{})",
                            taint.key, taint.effect
                        ),
                    );
                }
                taints.push(taint);
            }
        }
        NodePool {
            name,
            nodes,
            node_selector,
            labels,
            taints,
        }
    }

    fn rule(&mut self, r: &Json, index: usize, path: &str, pools: &[NodePool]) -> Rule {
        let name = str_of(r, "name");
        if get(r, "name").is_some() && name.is_empty() {
            self.err(
                &format!("{path}.name"),
                "Required value: a rule needs a name",
            );
        }
        let matcher = self.selector(get(r, "match"), &format!("{path}.match"));
        let exclude = self.selector(get(r, "exclude"), &format!("{path}.exclude"));
        let strategy = match get(r, "strategy").and_then(Json::as_str) {
            Some("replace") => Strategy::Replace,
            _ => Strategy::Merge,
        };
        let pool_name = get(r, "pool").and_then(Json::as_str).map(str::to_string);
        let pool = pool_name
            .as_deref()
            .and_then(|p| self.rule_pool(p, path, pools));
        let tolerations = self.rule_tolerations(r, path, pool);
        let node_selector = pairs(get(r, "nodeSelector"));
        self.labels(&node_selector, &format!("{path}.nodeSelector"));
        for (k, _) in &node_selector {
            if let Some(m) = warnings::deprecated_node_label(k) {
                self.warn_key(&schema::entry_path(&format!("{path}.nodeSelector"), k), m);
            }
        }
        let pod_labels = pairs(get(r, "podLabels"));
        self.labels(&pod_labels, &format!("{path}.podLabels"));
        let pod_annotations = pairs(get(r, "podAnnotations"));
        self.annotations(&pod_annotations, &format!("{path}.podAnnotations"));
        let aff = get(r, "affinity");
        let (required, preferred) = self.node_affinity(aff, path, pool);
        let (
            pod_affinity_required,
            pod_affinity_preferred,
            pod_anti_affinity_required,
            pod_anti_affinity_preferred,
        ) = self.pod_affinity(aff, path);
        let names_tolerations = !tolerations.is_empty();
        let names_node_selector = get(r, "nodeSelector").is_some();
        let names_affinity = aff.is_some() || pool.is_some_and(|p| !p.labels.is_empty());
        let tolerations_by_shape = [Shape::K8s, Shape::KfpV2].map(|shape| {
            tolerations
                .iter()
                .map(|t| tol_from_raw(&tol_value(t, shape)))
                .collect()
        });
        let rule = Rule {
            index,
            name,
            matcher,
            exclude,
            pool: pool_name,
            strategy,
            tolerations,
            node_selector,
            required,
            preferred,
            pod_affinity_required,
            pod_affinity_preferred,
            pod_anti_affinity_required,
            pod_anti_affinity_preferred,
            pod_labels,
            pod_annotations,
            names_tolerations,
            names_node_selector,
            names_affinity,
            tolerations_by_shape,
        };
        if rule.strategy == Strategy::Replace {
            self.replace_clears_nothing(&rule, r, path);
        }
        let does_nothing = rule.tolerations.is_empty()
            && rule.node_selector.is_empty()
            && rule.required.is_empty()
            && rule.preferred.is_empty()
            && !rule.has_pod_affinity()
            && rule.pod_labels.is_empty()
            && rule.pod_annotations.is_empty();
        if does_nothing && pool_name_ok(&rule, pools) && !self.has_errors_under(path) {
            self.err(
                path,
                "the rule sets nothing: give it a pool, tolerations, nodeSelector, affinity, podLabels or podAnnotations",
            );
        }
        rule
    }

    /// The pool a rule names, or an error that suggests one.
    fn rule_pool<'p>(
        &mut self,
        p: &str,
        path: &str,
        pools: &'p [NodePool],
    ) -> Option<&'p NodePool> {
        let found = pools.iter().find(|x| x.name == p);
        if found.is_none() {
            let hint = nearest(p, pools.iter().map(|x| x.name.as_str()))
                .map(|n| format!("; did you mean {n:?}?"))
                .unwrap_or_else(|| {
                    if pools.is_empty() {
                        "; declare it under spec.nodePools".to_string()
                    } else {
                        // Each name once (duplicates and empty names are errors of their own).
                        let mut names: Vec<&str> = Vec::new();
                        for n in pools.iter().map(|x| x.name.as_str()) {
                            if !n.is_empty() && !names.contains(&n) {
                                names.push(n);
                            }
                        }
                        format!("; known pools: {}", names.join(", "))
                    }
                });
            self.err(
                &format!("{path}.pool"),
                format!("unknown node pool {p:?}{hint}"),
            );
        }
        found
    }

    /// The pool's tolerations first, one per taint, then the rule's own.
    fn rule_tolerations(
        &mut self,
        r: &Json,
        path: &str,
        pool: Option<&NodePool>,
    ) -> Vec<Toleration> {
        let mut tolerations: Vec<Toleration> = Vec::new();
        for t in pool.map_or(&[][..], |p| &p.taints) {
            let value = t.value.clone().filter(|v| !v.is_empty());
            tolerations.push(Toleration {
                key: Some(t.key.clone()),
                operator: Some(if value.is_some() { "Equal" } else { "Exists" }.to_string()),
                value,
                effect: Some(t.effect.clone()),
                toleration_seconds: None,
            });
        }
        let own = get(r, "tolerations")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default();
        for (i, t) in own.iter().enumerate() {
            let tol: Toleration = typed(Some(t));
            let tp = format!("{path}.tolerations[{i}]");
            if !self.has_errors_under(&tp) {
                self.toleration(&tol, &tp);
            }
            tolerations.push(tol);
        }
        tolerations
    }

    /// Required node-affinity steps (the pool's single term first, then the
    /// rule's own terms) and preferred terms.
    fn node_affinity(
        &mut self,
        aff: Option<&Json>,
        path: &str,
        pool: Option<&NodePool>,
    ) -> (Vec<Vec<NodeSelectorTerm>>, Vec<PreferredSchedulingTerm>) {
        let mut required = Vec::new();
        if let Some(pool) = pool.filter(|p| !p.labels.is_empty()) {
            required.push(vec![NodeSelectorTerm {
                match_expressions: Some(
                    pool.labels
                        .iter()
                        .map(|(k, v)| NodeSelectorRequirement {
                            key: k.clone(),
                            operator: "In".into(),
                            values: Some(vec![v.clone()]),
                        })
                        .collect(),
                ),
                match_fields: None,
            }]);
        }
        let mut preferred = Vec::new();
        let Some(na) = aff.and_then(|a| get(a, "nodeAffinity")) else {
            return (required, preferred);
        };
        let ap = format!("{path}.affinity.nodeAffinity");
        if let Some(req) = get(na, "requiredDuringSchedulingIgnoredDuringExecution") {
            let rp = format!("{ap}.requiredDuringSchedulingIgnoredDuringExecution");
            let terms = get(req, "nodeSelectorTerms")
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default();
            if terms.is_empty() {
                self.err(
                    &format!("{rp}.nodeSelectorTerms"),
                    "Required value: must have at least one node selector term",
                );
            }
            let mut own = Vec::new();
            for (i, t) in terms.iter().enumerate() {
                let term: NodeSelectorTerm = typed(Some(t));
                let tp = format!("{rp}.nodeSelectorTerms[{i}]");
                if term.match_expressions.as_ref().is_none_or(Vec::is_empty)
                    && term.match_fields.as_ref().is_none_or(Vec::is_empty)
                {
                    self.err(&tp, "Invalid value: an empty node selector term matches no node; give it matchExpressions or matchFields");
                }
                self.node_selector_term(&term, true, &tp);
                own.push(term);
            }
            if !own.is_empty() {
                required.push(own);
            }
        }
        if let Some(list) =
            get(na, "preferredDuringSchedulingIgnoredDuringExecution").and_then(Json::as_array)
        {
            let pp = format!("{ap}.preferredDuringSchedulingIgnoredDuringExecution");
            for (i, t) in list.iter().enumerate() {
                let term: PreferredSchedulingTerm = typed(Some(t));
                let tp = format!("{pp}[{i}]");
                self.weight(term.weight, &tp);
                self.node_selector_term(&term.preference, false, &format!("{tp}.preference"));
                preferred.push(term);
            }
        }
        (required, preferred)
    }

    /// Pod affinity and anti-affinity: [affinity required, affinity
    /// preferred, anti-affinity required, anti-affinity preferred].
    fn pod_affinity(&mut self, aff: Option<&Json>, path: &str) -> PodAffinityLists {
        let mut pa = [Vec::new(), Vec::new()];
        let mut pw = [Vec::new(), Vec::new()];
        for (slot, key) in ["podAffinity", "podAntiAffinity"].iter().enumerate() {
            let Some(pj) = aff.and_then(|a| get(a, key)) else {
                continue;
            };
            let base = format!("{path}.affinity.{key}");
            if let Some(list) =
                get(pj, "requiredDuringSchedulingIgnoredDuringExecution").and_then(Json::as_array)
            {
                for (i, t) in list.iter().enumerate() {
                    let term: PodAffinityTerm = typed(Some(t));
                    self.pod_affinity_term(
                        &term,
                        &format!("{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"),
                    );
                    pa[slot].push(term);
                }
            }
            if let Some(list) =
                get(pj, "preferredDuringSchedulingIgnoredDuringExecution").and_then(Json::as_array)
            {
                for (i, t) in list.iter().enumerate() {
                    let term: WeightedPodAffinityTerm = typed(Some(t));
                    let tp = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
                    self.weight(term.weight, &tp);
                    self.pod_affinity_term(
                        &term.pod_affinity_term,
                        &format!("{tp}.podAffinityTerm"),
                    );
                    pw[slot].push(term);
                }
            }
        }
        let [affinity_required, anti_required] = pa;
        let [affinity_preferred, anti_preferred] = pw;
        (
            affinity_required,
            affinity_preferred,
            anti_required,
            anti_preferred,
        )
    }

    /// A preferred term's weight: 1-100.
    fn weight(&mut self, weight: i32, term_path: &str) {
        if weight <= 0 || weight > 100 {
            self.err(
                &format!("{term_path}.weight"),
                format!("Invalid value: {weight}: must be in the range 1-100"),
            );
        }
    }

    /// Replacing a field with nothing would mean clearing it, which kfsched
    /// does not do: an Argo template without a value falls back to the
    /// workflow's, so "cleared" could not be written.
    fn replace_clears_nothing(&mut self, rule: &Rule, r: &Json, path: &str) {
        let aff = get(r, "affinity");
        let empty_aff =
            rule.required.is_empty() && rule.preferred.is_empty() && !rule.has_pod_affinity();
        for (field, empty) in [
            (
                "tolerations",
                get(r, "tolerations").is_some() && rule.tolerations.is_empty(),
            ),
            (
                "nodeSelector",
                rule.names_node_selector && rule.node_selector.is_empty(),
            ),
            ("affinity", aff.is_some() && empty_aff),
        ] {
            let p = format!("{path}.{field}");
            if empty && !self.has_errors_under(&p) {
                self.err(
                    &p,
                    format!("Invalid value: an empty {field} under `strategy: replace` would clear the components' {field}, which kfsched does not do; list what they should have, or remove {field} from the rule"),
                );
            }
        }
    }

    fn selector(&mut self, j: Option<&Json>, path: &str) -> Selector {
        let mut s = Selector::default();
        let Some(j) = j else { return s };
        for key in ["names", "images", "pipelines", "kinds"] {
            let Some(list) = get(j, key).and_then(Json::as_array) else {
                continue;
            };
            let p = format!("{path}.{key}");
            if list.is_empty() {
                self.err(&p, format!("Required value: an empty list matches nothing; list at least one glob or remove {key:?}"));
            }
            let mut globs = Vec::new();
            for (i, g) in list.iter().enumerate() {
                let text = g.as_str().unwrap_or("");
                match Glob::new(text, key == "names") {
                    // A kind is one of a closed set: a glob that can match
                    // none of them is a typo that would select nothing.
                    Ok(g) if key == "kinds" && !known_kinds().any(|k| g.matches(k)) => {
                        let hint = nearest(text, known_kinds())
                            .or_else(|| {
                                known_kinds()
                                    .find(|k| k.eq_ignore_ascii_case(text.trim_end_matches('s')))
                            })
                            .map(|n| format!("; did you mean {n:?}?"))
                            .unwrap_or_default();
                        self.err(
                            &format!("{p}[{i}]"),
                            format!(
                                "Unsupported value: {text:?}: matches no kind kfsched reads ({}){hint}",
                                known_kinds().collect::<Vec<_>>().join(", ")
                            ),
                        );
                    }
                    Ok(g) => globs.push(g),
                    Err(e) => self.err(&format!("{p}[{i}]"), e),
                }
            }
            match key {
                "names" => s.names = Some(globs),
                "images" => s.images = Some(globs),
                "pipelines" => s.pipelines = Some(globs),
                _ => s.kinds = Some(globs),
            }
        }
        s
    }

    /// A label key held in a field's value (`key: KEY`).
    fn label_name(&mut self, key: &str, path: &str) {
        let errs = k8s::qualified_name(key);
        for m in errs {
            self.err(path, format!("Invalid value: {key:?}: {m}"));
        }
    }

    /// A label map: a bad key is reported at the key, a bad value at the value.
    fn labels(&mut self, labels: &[(String, String)], path: &str) {
        for (k, v) in labels {
            let p = schema::entry_path(path, k);
            for m in k8s::qualified_name(k) {
                self.err_key(&p, format!("Invalid value: {k:?}: {m}"));
            }
            let errs = k8s::label_value(v);
            for m in errs {
                self.err(&p, format!("Invalid value: {v:?}: {m}"));
            }
        }
    }

    fn annotations(&mut self, ann: &[(String, String)], path: &str) {
        let mut total = 0usize;
        for (k, v) in ann {
            let p = schema::entry_path(path, k);
            for m in k8s::qualified_name(&k.to_lowercase()) {
                self.err_key(&p, format!("Invalid value: {k:?}: {m}"));
            }
            for m in annotations::value_errors(k, v) {
                self.err(&p, format!("Invalid value: {v:?}: {m}"));
            }
            if let Some(m) = annotations::deprecated(k) {
                self.warn_key(&p, m);
            }
            total += k.len() + v.len();
        }
        if total > 256 * 1024 {
            self.err(
                path,
                format!("Too long: may not be more than 262144 bytes (got {total})"),
            );
        }
    }

    fn taint_effect(&mut self, effect: &str, allow_empty: bool, path: &str) {
        if effect.is_empty() {
            if !allow_empty {
                self.err(path, "Required value: a taint needs an effect: NoSchedule, PreferNoSchedule or NoExecute");
            }
            return;
        }
        if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            let hint = nearest(effect, ["NoSchedule", "PreferNoSchedule", "NoExecute"])
                .map(|n| format!("; did you mean {n:?}?"))
                .unwrap_or_default();
            self.err(
                path,
                format!("Unsupported value: {effect:?}: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"{hint}"),
            );
        }
    }

    fn toleration(&mut self, t: &Toleration, path: &str) {
        let key = t.key.clone().unwrap_or_default();
        let op = t.operator.clone().unwrap_or_default();
        let value = t.value.clone().unwrap_or_default();
        let effect = t.effect.clone().unwrap_or_default();
        if !key.is_empty() {
            self.label_name(&key, &format!("{path}.key"));
        }
        if key.is_empty() && op != "Exists" {
            self.err(
                &format!("{path}.operator"),
                format!("Invalid value: {op:?}: operator must be Exists when `key` is empty, which means \"match all values and all keys\""),
            );
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            self.err(
                &format!("{path}.effect"),
                format!("Invalid value: {effect:?}: effect must be 'NoExecute' when `tolerationSeconds` is set"),
            );
        }
        match op.as_str() {
            "Equal" | "" => {
                let errs = k8s::label_value(&value);
                if !errs.is_empty() {
                    self.err(
                        &format!("{path}.value"),
                        format!("Invalid value: {value:?}: {}", errs.join(";")),
                    );
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    self.err(&format!("{path}.value"), format!("Invalid value: {value:?}: value must be empty when `operator` is 'Exists'"));
                }
            }
            other => {
                let hint = nearest(other, ["Equal", "Exists"])
                    .map(|n| format!("; did you mean {n:?}?"))
                    .unwrap_or_default();
                self.err(&format!("{path}.operator"), format!("Unsupported value: {other:?}: supported values: \"Equal\", \"Exists\"{hint}"));
            }
        }
        self.taint_effect(&effect, true, &format!("{path}.effect"));
    }

    fn node_selector_term(&mut self, term: &NodeSelectorTerm, required: bool, path: &str) {
        for (j, rq) in term.match_expressions.iter().flatten().enumerate() {
            let rp = format!("{path}.matchExpressions[{j}]");
            let values = rq.values.clone().unwrap_or_default();
            // Values of the wrong type are reported already, and read as none.
            let values_bad = self.has_errors_under(&format!("{rp}.values"));
            match rq.operator.as_str() {
                "In" | "NotIn" => {
                    if values.is_empty() && !values_bad {
                        self.err(
                            &format!("{rp}.values"),
                            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                        );
                    }
                }
                "Exists" | "DoesNotExist" => {
                    if !values.is_empty() && !values_bad {
                        self.err(&format!("{rp}.values"), "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
                    }
                }
                "Gt" | "Lt" => {
                    if values_bad {
                    } else if values.len() != 1 {
                        self.err(&format!("{rp}.values"), "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'");
                    } else if values[0].parse::<i64>().is_err() {
                        self.err(
                            &format!("{rp}.values[0]"),
                            format!(
                                "Invalid value: {:?}: must be an integer when `operator` is 'Gt' or 'Lt' (the scheduler ignores the requirement otherwise; kfsched is stricter than the API server here)",
                                values[0]
                            ),
                        );
                    }
                }
                other => {
                    let hint =
                        nearest(other, ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
                            .map(|n| format!("; did you mean {n:?}?"))
                            .unwrap_or_default();
                    self.err(
                        &format!("{rp}.operator"),
                        format!("Invalid value: {other:?}: not a valid selector operator{hint}"),
                    );
                }
            }
            self.label_name(&rq.key, &format!("{rp}.key"));
            if let Some(m) = warnings::deprecated_node_label(&rq.key) {
                self.warn(&format!("{rp}.key"), format!("{} is {m}", rq.key));
            }
            for (vi, v) in values.iter().enumerate() {
                let vp = format!("{rp}.values[{vi}]");
                if required {
                    for m in k8s::label_value(v) {
                        self.err(&vp, format!("Invalid value: {v:?}: {m}"));
                    }
                } else {
                    // Accepted, since the term may still serve a cluster
                    // of one node, but it never matches.
                    for m in warnings::invalid_preferred_value(v) {
                        self.warn(&vp, m);
                    }
                }
            }
        }
        for (j, rq) in term.match_fields.iter().flatten().enumerate() {
            let rp = format!("{path}.matchFields[{j}]");
            let values = rq.values.clone().unwrap_or_default();
            let values_bad = self.has_errors_under(&format!("{rp}.values"));
            match rq.operator.as_str() {
                "In" | "NotIn" => {
                    if values_bad {
                    } else if values.len() != 1 {
                        self.err(
                            &format!("{rp}.values"),
                            "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector (write one term per node name: terms are ORed)",
                        );
                    }
                }
                other => self.err(&format!("{rp}.operator"), format!("Invalid value: {other:?}: not a valid selector operator (matchFields takes In or NotIn)")),
            }
            if rq.key != "metadata.name" {
                self.err(
                    &format!("{rp}.key"),
                    format!(
                        "Invalid value: {:?}: not a valid field selector key (only metadata.name)",
                        rq.key
                    ),
                );
            } else {
                for (vi, v) in values.iter().enumerate() {
                    for m in k8s::node_name(v) {
                        self.err(
                            &format!("{rp}.values[{vi}]"),
                            format!("Invalid value: {v:?}: {m}"),
                        );
                    }
                }
            }
        }
    }

    fn label_selector(&mut self, s: &MetaLabelSelector, path: &str) {
        let labels: Vec<(String, String)> = s
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.labels(&labels, &format!("{path}.matchLabels"));
        for (i, e) in s.match_expressions.iter().flatten().enumerate() {
            let p = format!("{path}.matchExpressions[{i}]");
            let values = e.values.clone().unwrap_or_default();
            let values_bad = self.has_errors_under(&format!("{p}.values"));
            match e.operator.as_str() {
                "In" | "NotIn" => {
                    if values.is_empty() && !values_bad {
                        self.err(
                            &format!("{p}.values"),
                            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                        );
                    }
                }
                "Exists" | "DoesNotExist" => {
                    if !values.is_empty() && !values_bad {
                        self.err(&format!("{p}.values"), "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
                    }
                }
                other => self.err(
                    &format!("{p}.operator"),
                    format!("Invalid value: {other:?}: not a valid selector operator"),
                ),
            }
            self.label_name(&e.key, &format!("{p}.key"));
            for (vi, v) in values.iter().enumerate() {
                for m in k8s::label_value(v) {
                    self.err(
                        &format!("{p}.values[{vi}]"),
                        format!("Invalid value: {v:?}: {m}"),
                    );
                }
            }
        }
    }

    fn pod_affinity_term(&mut self, t: &PodAffinityTerm, path: &str) {
        match &t.label_selector {
            Some(s) => self.label_selector(s, &format!("{path}.labelSelector")),
            None => self.warn(
                &format!("{path}.labelSelector"),
                warnings::NULL_LABEL_SELECTOR,
            ),
        }
        if let Some(s) = &t.namespace_selector {
            self.label_selector(s, &format!("{path}.namespaceSelector"));
        }
        for (i, ns) in t.namespaces.iter().flatten().enumerate() {
            for m in k8s::dns1123_label(ns) {
                self.err(
                    &format!("{path}.namespaces[{i}]"),
                    format!("Invalid value: {ns:?}: {m}"),
                );
            }
        }
        if t.topology_key.is_empty() {
            self.err(
                &format!("{path}.topologyKey"),
                "Required value: can not be empty",
            );
        } else {
            self.label_name(&t.topology_key, &format!("{path}.topologyKey"));
        }
    }
}

fn pool_name_ok(rule: &Rule, pools: &[NodePool]) -> bool {
    rule.pool
        .as_ref()
        .is_none_or(|p| pools.iter().any(|x| &x.name == p))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn load(s: &str) -> Result<Policy, PolicyErrors> {
        Policy::from_bytes("p.yaml", s.as_bytes())
    }

    #[test]
    fn pool_shorthand_expands() {
        let p = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: x}\nspec:\n  nodePools:\n  - name: gpu\n    labels: {a: b}\n    taints: [{key: k, value: v, effect: NoSchedule}, {key: j, effect: NoExecute}]\n  rules:\n  - name: r\n    pool: gpu\n",
        )
        .unwrap();
        let r = &p.rules[0];
        assert_eq!(r.tolerations.len(), 2);
        assert_eq!(r.tolerations[0].operator.as_deref(), Some("Equal"));
        assert_eq!(r.tolerations[1].operator.as_deref(), Some("Exists"));
        assert_eq!(r.required.len(), 1);
    }

    #[test]
    fn every_error_is_reported_with_its_place() {
        let err = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  rules:\n  - name: r\n    toleration: []\n    tolerations:\n    - {key: a, operator: Equals}\n    - {operator: Equal}\n    nodeSelector: {gpu: true}\n",
        )
        .unwrap_err();
        let msgs: Vec<String> = err.0.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            msgs,
            vec![
                "p.yaml:6:5: spec.rules[0].toleration: unknown field \"toleration\"; did you mean \"tolerations\"?",
                "p.yaml:8:26: spec.rules[0].tolerations[0].operator: Unsupported value: \"Equals\": supported values: \"Equal\", \"Exists\"; did you mean \"Equal\"?",
                "p.yaml:9:18: spec.rules[0].tolerations[1].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                "p.yaml:10:25: spec.rules[0].nodeSelector.gpu: must be a string, got a boolean (true); quote it: \"true\"",
            ]
        );
    }

    #[test]
    fn an_unknown_pool_lists_each_known_pool_once() {
        let err = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  nodePools:\n  - {name: gpu-a, nodes: [a], labels: {x: y}}\n  - {name: gpu-a, nodes: [b], labels: {x: y}}\n  - {name: '', nodes: [c], labels: {x: y}}\n  rules:\n  - {name: r, pool: zzzzzzzz}\n",
        )
        .unwrap_err();
        let last = err.0.last().map(|d| d.to_string()).unwrap_or_default();
        assert_eq!(
            last,
            "p.yaml:9:21: spec.rules[0].pool: unknown node pool \"zzzzzzzz\"; known pools: gpu-a"
        );
    }

    /// The API server's warnings, at the policy's path: a deprecated key
    /// at the key, a value that never matches at the value.
    #[test]
    fn warnings_point_at_what_draws_them() {
        let p = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  nodePools:\n  - {name: old, labels: {beta.kubernetes.io/os: linux}}\n  rules:\n  - name: r\n    pool: old\n    nodeSelector: {beta.kubernetes.io/arch: amd64}\n    podAnnotations: {scheduler.alpha.kubernetes.io/critical-pod: \"\"}\n    affinity:\n      nodeAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 1\n          preference:\n            matchExpressions:\n            - {key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [us west]}\n      podAntiAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n        - topologyKey: kubernetes.io/hostname\n          labelSelector:\n",
        )
        .unwrap();
        let msgs: Vec<String> = p.warnings.iter().map(|d| d.to_string()).collect();
        let pref = "spec.rules[0].affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0]";
        assert_eq!(
            msgs,
            vec![
                "p.yaml:5:26: spec.nodePools[0].labels[\"beta.kubernetes.io/os\"]: beta.kubernetes.io/os is deprecated since v1.14; use \"kubernetes.io/os\" instead".to_string(),
                "p.yaml:9:20: spec.rules[0].nodeSelector[\"beta.kubernetes.io/arch\"]: deprecated since v1.14; use \"kubernetes.io/arch\" instead".into(),
                "p.yaml:10:22: spec.rules[0].podAnnotations[\"scheduler.alpha.kubernetes.io/critical-pod\"]: non-functional in v1.16+; use the \"priorityClassName\" field instead".into(),
                format!("p.yaml:17:21: {pref}.key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead"),
                format!("p.yaml:17:84: {pref}.values[0]: us west is invalid, {}", warnings::LABEL_VALUE_FORMAT),
                "p.yaml:21:11: spec.rules[0].affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: a null labelSelector results in matching no pod".into(),
            ]
        );
        // A null selector stays null: `{}` would select every pod.
        assert!(
            p.rules[0].pod_anti_affinity_required[0]
                .label_selector
                .is_none()
        );
    }

    /// As the API server, which warns only about what it accepts.
    #[test]
    fn an_invalid_policy_has_errors_only() {
        let err = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  rules:\n  - name: r\n    nodeSelector: {beta.kubernetes.io/arch: amd 64}\n",
        )
        .unwrap_err();
        assert_eq!(err.0.len(), 1, "{err}");
        assert!(
            err.0[0].message.starts_with("Invalid value: \"amd 64\""),
            "{err}"
        );
    }

    #[test]
    fn values_of_the_wrong_type_are_one_error_not_also_missing_values() {
        let err = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  rules:\n  - name: r\n    affinity:\n      nodeAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 1\n          preference:\n            matchExpressions:\n            - {key: z, operator: In, values: [1]}\n            - {key: x, operator: In}\n",
        )
        .unwrap_err();
        let msgs: Vec<String> = err.0.iter().map(|d| d.to_string()).collect();
        let base = "spec.rules[0].affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions";
        assert_eq!(
            msgs,
            vec![
                format!(
                    "p.yaml:12:47: {base}[0].values[0]: must be a string, got an integer (1); quote it: \"1\""
                ),
                format!(
                    "p.yaml:13:15: {base}[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
                ),
            ]
        );
    }
}
