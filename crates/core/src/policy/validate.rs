//! Validation as the API server validates: the policy's JSON (read by
//! `schema`) becomes the typed model, with every error and warning at the
//! place in the file that draws it. This file holds the validator's
//! plumbing (where a path sits, errors and warnings) and the policy's
//! pools and rules; the Kubernetes field shapes are in `affinity`,
//! `tolerations`, `metadata` and `selector`.

use kfsched_yaml::hash::HashSet;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use serde_json::Value as Json;

use super::schema::{self, Locations};
use super::warnings;
use super::{NodePool, Policy, PolicyErrors, Rule, Strategy};
use crate::diag::Diagnostic;
use crate::k8s::{self, LabelSelector};
use crate::matching::Glob;
use crate::scheduling::{Shape, tol_from_raw, tol_value};
use crate::suggest::nearest;

pub(super) struct Validator {
    pub(super) file: String,
    /// Where each path's value sits.
    pub(super) locs: Locations,
    /// Where each map entry's key sits.
    pub(super) keys: Locations,
    pub(super) diags: Vec<Diagnostic>,
    pub(super) warnings: Vec<Diagnostic>,
    /// What `validate` says about a valid policy (see [`Policy::advice`]).
    advice: Vec<Diagnostic>,
}

/// Validates the policy's JSON and builds the typed model: every error,
/// or the policy with the warnings the API server would give.
pub(super) fn policy(
    file: &str,
    json: &Json,
    locs: Locations,
    keys: Locations,
    diags: Vec<Diagnostic>,
) -> Result<Policy, PolicyErrors> {
    let mut v = Validator {
        file: file.to_string(),
        locs,
        keys,
        diags,
        warnings: Vec::new(),
        advice: Vec::new(),
    };
    let mut policy = v.build(json);
    if v.diags.is_empty() {
        // As the API server, which warns only about what it accepts.
        v.warnings.sort_by_key(|d| (d.line, d.col));
        v.warnings.dedup();
        policy.warnings = v.warnings;
        policy.advice = v.advice;
        Ok(policy)
    } else {
        v.diags.sort_by_key(|d| (d.line, d.col));
        v.diags.dedup();
        Err(PolicyErrors(v.diags))
    }
}

pub(super) fn get<'j>(j: &'j Json, key: &str) -> Option<&'j Json> {
    j.get(key).filter(|v| !v.is_null())
}

pub(super) fn str_of(j: &Json, key: &str) -> String {
    get(j, key).and_then(Json::as_str).unwrap_or("").to_string()
}

pub(super) fn pairs(j: Option<&Json>) -> Vec<(String, String)> {
    j.and_then(Json::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn typed<T: serde::de::DeserializeOwned + Default>(j: Option<&Json>) -> T {
    j.and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

impl Validator {
    pub(super) fn has_errors_under(&self, path: &str) -> bool {
        self.diags.iter().any(|d| {
            d.path == path
                || d.path.starts_with(&format!("{path}."))
                || d.path.starts_with(&format!("{path}["))
        })
    }

    /// An error about the value at `path`.
    pub(super) fn err(&mut self, path: &str, message: impl Into<String>) {
        let at = self.loc(path);
        self.err_at(at, path, message.into());
    }

    /// An error about the key of the map entry at `path`.
    pub(super) fn err_key(&mut self, path: &str, message: impl Into<String>) {
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
    pub(super) fn warn(&mut self, path: &str, message: impl Into<String>) {
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
    pub(super) fn warn_key(&mut self, path: &str, message: impl Into<String>) {
        let (line, col) = self.key_loc(path);
        self.warnings.push(Diagnostic {
            file: self.file.clone(),
            line,
            col,
            path: path.to_string(),
            message: message.into(),
        });
    }

    pub(super) fn key_loc(&self, path: &str) -> (usize, usize) {
        self.keys
            .get(path)
            .copied()
            .unwrap_or_else(|| self.loc(path))
    }

    pub(super) fn loc(&self, path: &str) -> (usize, usize) {
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

    pub(super) fn build(&mut self, j: &Json) -> Policy {
        let name = get(j, "metadata")
            .map(|m| str_of(m, "name"))
            .unwrap_or_default();
        let spec = get(j, "spec").cloned().unwrap_or(Json::Null);
        let mut pools = Vec::new();
        let mut pool_names: HashSet<String> = HashSet::default();
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
        let mut rule_names: HashSet<String> = HashSet::default();
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
        self.pools_that_set_nothing(&pools, &rules);
        self.advise(j, &name, &pools, &rules);
        Policy {
            file: self.file.clone(),
            name,
            pools,
            rules,
            warnings: Vec::new(),
            advice: Vec::new(),
            locs: std::mem::take(&mut self.locs),
        }
    }

    /// A rule that only names a pool sets what the pool has: with neither
    /// labels nor taints, nothing. That is said at the pool, which is
    /// what needs them; the rule's own check stays quiet for these.
    fn pools_that_set_nothing(&mut self, pools: &[NodePool], rules: &[Rule]) {
        for (i, pool) in pools.iter().enumerate() {
            if !pool.labels.is_empty() || !pool.taints.is_empty() {
                continue;
            }
            let only_pool: Vec<String> = rules
                .iter()
                .filter(|r| r.pool.as_ref() == Some(&pool.name) && sets_nothing(r))
                .map(|r| {
                    let (line, _) = self.loc(&format!("spec.rules[{}]", r.index));
                    format!("{:?} at line {line}", r.name)
                })
                .collect();
            if only_pool.is_empty() {
                continue;
            }
            let path = format!("spec.nodePools[{i}]");
            if self.has_errors_under(&path) {
                continue;
            }
            let message = match only_pool.as_slice() {
                [one] => format!(
                    "node pool {:?} has no labels and no taints, so rule {one}, which only names it, sets nothing: give the pool labels or taints (the rule then requires the labels and tolerates the taints), or give the rule tolerations, nodeSelector or affinity",
                    pool.name
                ),
                many => format!(
                    "node pool {:?} has no labels and no taints, so the rules that only name it set nothing ({}): give the pool labels or taints (its rules then require the labels and tolerate the taints), or give the rules tolerations, nodeSelector or affinity",
                    pool.name,
                    many.join(", ")
                ),
            };
            self.err(&path, message);
        }
    }

    /// What `validate` says about a policy the API server would take as
    /// it is, but that is probably not what was meant.
    fn advise(&mut self, j: &Json, name: &str, pools: &[NodePool], rules: &[Rule]) {
        let advise = |v: &Self, path: &str, message: String| {
            let (line, col) = v.loc(path);
            Diagnostic {
                file: v.file.clone(),
                line,
                col,
                path: path.to_string(),
                message,
            }
        };
        let mut out = Vec::new();
        if name.is_empty() {
            let path = if get(j, "metadata").is_some() {
                "metadata"
            } else {
                ""
            };
            out.push(advise(self, path, "no metadata.name: node apply and node diff record what they add under the policy's name and refuse to run without one (the offline commands do not need it)".into()));
        }
        if pools.is_empty() && rules.is_empty() {
            let path = if get(j, "spec").is_some() { "spec" } else { "" };
            out.push(advise(self, path, "the policy has no rules and no node pools: it changes nothing; add rules (spec.rules) or node pools (spec.nodePools)".into()));
        }
        for (i, pool) in pools.iter().enumerate() {
            if pool.nodes.is_empty() && pool.node_selector.is_none() {
                out.push(advise(
                    self,
                    &format!("spec.nodePools[{i}]"),
                    format!(
                        "node pool {:?} selects no nodes (neither nodes nor nodeSelector): node apply and node diff leave it alone, while rules that name it still apply to pipelines; give it nodes or nodeSelector",
                        pool.name
                    ),
                ));
            }
        }
        self.advice = out;
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
        let mut seen: HashSet<(String, String)> = HashSet::default();
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
        if let Some(m) = rule_name_problem(&name) {
            self.err(&format!("{path}.name"), m);
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
        let [priority_class_name, scheduler_name, runtime_class_name] = self.pod_names(r, path);
        let topology_spread_constraints = self.topology_spread(r, path);
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
            priority_class_name,
            scheduler_name,
            runtime_class_name,
            names_topology_spread: get(r, "topologySpreadConstraints").is_some(),
            topology_spread_constraints,
            names_tolerations,
            names_node_selector,
            names_affinity,
            tolerations_by_shape,
        };
        if rule.strategy == Strategy::Replace {
            self.replace_clears_nothing(&rule, r, path);
        }
        // With a pool (that exists), the pool is what lacks something:
        // `pools_that_set_nothing` says so there.
        if sets_nothing(&rule)
            && rule.pool.is_none()
            && pool_name_ok(&rule, pools)
            && !self.has_errors_under(path)
        {
            self.err(
                path,
                "the rule sets nothing: give it a pool, tolerations, nodeSelector, affinity, topologySpreadConstraints, priorityClassName, schedulerName, runtimeClassName, podLabels or podAnnotations",
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
            (
                "topologySpreadConstraints",
                rule.names_topology_spread && rule.topology_spread_constraints.is_empty(),
            ),
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
}

/// Whether applying the rule would write nothing at all.
fn sets_nothing(rule: &Rule) -> bool {
    rule.tolerations.is_empty()
        && rule.node_selector.is_empty()
        && rule.required.is_empty()
        && rule.preferred.is_empty()
        && !rule.has_pod_affinity()
        && rule.pod_labels.is_empty()
        && rule.pod_annotations.is_empty()
        && rule.priority_class_name.is_none()
        && rule.scheduler_name.is_none()
        && rule.runtime_class_name.is_none()
        && rule.topology_spread_constraints.is_empty()
}

fn pool_name_ok(rule: &Rule, pools: &[NodePool]) -> bool {
    rule.pool
        .as_ref()
        .is_none_or(|p| pools.iter().any(|x| &x.name == p))
}

/// Why a rule cannot have this name: admission lists the names of the
/// rules that selected a pod in one annotation, separated by `,`, `;` and
/// `:` (see `admission::ADMITTED_ANNOTATION`), so a rule's name holds none
/// of them, for every command alike: `validate` refuses what the export would.
fn rule_name_problem(name: &str) -> Option<String> {
    name.contains([',', ';', ':']).then(|| {
        format!(
            "rule {name:?}: admission lists rule names in the kfsched.dev/admitted annotation, separated by `,`, `;` and `:`; rename the rule without them"
        )
    })
}
