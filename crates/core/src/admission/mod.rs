//! `export admission`: the policy as Kubernetes MutatingAdmissionPolicies
//! (admissionregistration.k8s.io/v1, in process in kube-apiserver 1.36), so
//! the cluster applies the rules to every pod a pipeline creates (KFP v2
//! drivers and importers included) and the pools' labels and taints to
//! every node as it registers — with SPEC §3's merge, the same as `rewrite`.
//!
//! What a rule can select at admission is what the pod carries: this
//! module also says, rule by rule, whether that is exactly what `rewrite`
//! selects ([`Exactness`]), and refuses what cannot be expressed. Pipeline
//! files given to the export make the rules exact for their pipelines.

mod cel;
mod nodes;
mod ops;
mod pods;
mod regex;
mod render;
mod state;
mod terms;

use std::collections::BTreeSet;

use serde_json::{Value as Json, json};

pub use nodes::forbidden_for_kubelets;
pub use regex::glob_to_re2;
pub use render::{json_list, yaml};

use crate::diag::Diagnostic;
use crate::k8s::{self, LabelSelector, SelOp};
use crate::matching::{PodRole, Selector, Subject, matches_globs};
use crate::outcome::{FileOutcome, Input, Options as RewriteOptions};
use crate::policy::{Policy, Rule};
use crate::rewrite::process_all;

pub use crate::format::pipeline_pod::ADMITTED_ANNOTATION;

/// The annotation in which `node apply` records what it added to a node,
/// and which the node policy writes for a node it adds a pool's labels and
/// taints to as it registers (see `kfsched_cluster::pools`).
pub const MANAGED_ANNOTATION: &str = "kfsched.dev/managed";

/// How the export is written.
#[derive(Clone, Debug)]
pub struct Options {
    /// Prepended to the policy's name: the objects' names.
    pub name_prefix: String,
    /// `Fail` (a pod the policy cannot judge is refused) or `Ignore`.
    pub failure_policy: FailurePolicy,
    /// The pod binding's namespace selector, kubectl syntax.
    pub namespace_selector: Option<String>,
    /// Rules left out by name.
    pub skip_rules: Vec<String>,
    /// The API version the objects are written in.
    pub api_version: ApiVersion,
}

/// Which `admissionregistration.k8s.io` version the objects are written in:
/// the spec, mutation and binding fields are the same in both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApiVersion {
    /// GA: served by Kubernetes 1.36 and later.
    #[default]
    V1,
    /// Served by 1.34 and 1.35 with the `MutatingAdmissionPolicy` feature
    /// gate and `--runtime-config=admissionregistration.k8s.io/v1beta1=true`.
    V1beta1,
}

impl ApiVersion {
    pub fn group_version(self) -> &'static str {
        match self {
            ApiVersion::V1 => "admissionregistration.k8s.io/v1",
            ApiVersion::V1beta1 => "admissionregistration.k8s.io/v1beta1",
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            name_prefix: "kfsched.".into(),
            failure_policy: FailurePolicy::Fail,
            namespace_selector: None,
            skip_rules: Vec::new(),
            api_version: ApiVersion::V1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

impl FailurePolicy {
    fn name(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// How faithfully admission applies a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exactness {
    /// The pods the rule selects are the components `rewrite` selects.
    Exact,
    /// Selected from what the pods carry, which lacks something a glob may
    /// be meant for; each reason says what and in which direction.
    Approximate(Vec<String>),
}

/// What the export says about one rule.
#[derive(Clone, Debug)]
pub struct RuleReport {
    pub name: String,
    /// The pods it reaches (`KFP v2 executor pods`, `Argo workflow pods`, ...).
    pub reaches: Vec<&'static str>,
    pub exactness: Exactness,
    /// Pipelines of the given files whose pods it selects exactly.
    pub exact_pipelines: Vec<String>,
    /// How many tasks of those pipelines it selects.
    pub exact_tasks: usize,
}

/// What the export says about one node pool.
#[derive(Clone, Debug)]
pub struct PoolReport {
    pub name: String,
    /// Why the pool is not in the node policy, when it is not.
    pub left_out: Option<String>,
}

/// The exported objects and what they do.
#[derive(Clone, Debug, Default)]
pub struct Export {
    /// The pod policy and its binding, then the node policy and its binding
    /// when a pool has labels or taints.
    pub objects: Vec<Json>,
    pub rules: Vec<RuleReport>,
    pub skipped_rules: Vec<String>,
    pub pools: Vec<PoolReport>,
    /// What the pipeline files given to the export hold, as `rewrite`
    /// reads them (for the rules that select nothing in them).
    pub outcomes: Vec<FileOutcome>,
}

/// Pod families a rule's kinds can reach, and the kinds admission cannot see.
struct Reach {
    kfp_v2: bool,
    argo: bool,
    /// Kinds the globs match that no pod says it came from.
    invisible: Vec<&'static str>,
}

fn reach(sel: &Selector) -> Reach {
    let Some(globs) = &sel.kinds else {
        return Reach {
            kfp_v2: true,
            argo: true,
            invisible: Vec::new(),
        };
    };
    let any = |k: &str| globs.iter().any(|g| g.matches(k));
    Reach {
        kfp_v2: any(crate::format::kfp_v2::KIND),
        argo: any("Workflow"),
        invisible: crate::policy::known_kinds()
            .filter(|k| *k != crate::format::kfp_v2::KIND && *k != "Workflow" && any(k))
            .collect(),
    }
}

/// Keys of pod metadata that the pod policy reads to recognise a pod: a
/// rule that set them would change what later rules see.
fn read_by_admission(key: &str) -> bool {
    key == ADMITTED_ANNOTATION
        || key.starts_with("workflows.argoproj.io/")
        || key.starts_with("pipelines.kubeflow.org/")
}

/// The export of one policy. `inputs` are pipeline files that resolve the
/// rules to the exact tasks they select in them.
pub fn export(
    policy: &Policy,
    inputs: &[Input],
    opts: &Options,
) -> Result<Export, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    if policy.name.is_empty() {
        errors.push(Diagnostic {
            file: policy.file.clone(),
            line: policy.location("metadata").0,
            col: policy.location("metadata").1,
            path: "metadata.name".into(),
            message:
                "the policy needs metadata.name: it names the admission policies (kfsched.<name>)"
                    .into(),
        });
    }
    for s in &opts.skip_rules {
        if !policy.rules.iter().any(|r| &r.name == s) {
            let hint = crate::suggest::nearest(s, policy.rules.iter().map(|r| r.name.as_str()))
                .map(|n| format!("; did you mean {n:?}?"))
                .unwrap_or_default();
            errors.push(Diagnostic::file(
                &policy.file,
                format!("--skip-rule {s:?}: the policy has no rule of that name{hint}"),
            ));
        }
    }
    let selector = match opts.namespace_selector.as_deref().map(LabelSelector::parse) {
        Some(Err(e)) => {
            errors.push(Diagnostic::file(
                "--namespace-selector",
                format!("invalid label selector: {e}"),
            ));
            None
        }
        Some(Ok(s))
            if s.requirements
                .iter()
                .any(|r| matches!(r.op, SelOp::GreaterThan | SelOp::LessThan)) =>
        {
            errors.push(Diagnostic::file(
                "--namespace-selector",
                "a namespace selector takes =, ==, !=, in, notin, key and !key, not > or <",
            ));
            None
        }
        Some(Ok(s)) => Some(s),
        None => None,
    };
    let (resolution, outcomes) = resolve(policy, inputs).map_err(|mut d| {
        d.append(&mut errors);
        d
    })?;
    let mut exported: Vec<&Rule> = Vec::new();
    let mut reports = Vec::new();
    let mut skipped = Vec::new();
    for rule in &policy.rules {
        if opts.skip_rules.contains(&rule.name) {
            skipped.push(rule.name.clone());
            continue;
        }
        for (field, pairs) in [
            ("podLabels", &rule.pod_labels),
            ("podAnnotations", &rule.pod_annotations),
        ] {
            for (k, _) in pairs.iter().filter(|(k, _)| read_by_admission(k)) {
                errors.push(policy.rule_diag(
                    rule,
                    field,
                    format!("rule {:?} sets {k}, which admission reads to recognise pipeline pods (it would change what the rules see); remove it, or leave the rule out with --skip-rule {}", rule.name, rule.name),
                ));
            }
        }
        match report(rule, resolution.as_ref()) {
            Ok(r) => {
                reports.push(r);
                exported.push(rule);
            }
            Err(why) => errors.push(policy.rule_diag(
                rule,
                "match",
                format!(
                    "rule {:?} cannot be enforced at admission: {why}; leave it out with --skip-rule {}",
                    rule.name, rule.name
                ),
            )),
        }
    }
    let mut pools = Vec::new();
    let mut node_pools = Vec::new();
    for (i, pool) in policy.pools.iter().enumerate() {
        for (k, _) in &pool.labels {
            if let Some(why) = forbidden_for_kubelets(k) {
                let path =
                    crate::policy::schema::entry_path(&format!("spec.nodePools[{i}].labels"), k);
                let (line, col) = policy.location(&path);
                errors.push(Diagnostic {
                    file: policy.file.clone(),
                    line,
                    col,
                    path,
                    message: format!(
                        "pool {:?}: label {k} cannot be added when a node registers: {why}",
                        pool.name
                    ),
                });
            }
        }
        let left_out = if pool.labels.is_empty() && pool.taints.is_empty() {
            Some("it has no labels or taints to add".to_string())
        } else if pool.nodes.is_empty() && pool.node_selector.is_none() {
            Some("it has neither nodes nor nodeSelector, so no node joins it".to_string())
        } else {
            node_pools.push(pool);
            None
        };
        pools.push(PoolReport {
            name: pool.name.clone(),
            left_out,
        });
    }
    let name = format!("{}{}", opts.name_prefix, policy.name);
    let node_name = format!("{name}.nodes");
    if !policy.name.is_empty() {
        for n in [&name, &node_name] {
            for m in k8s::node_name(n) {
                errors.push(Diagnostic::file(
                    "--name-prefix",
                    format!("the admission policy name {n:?} is not valid: {m}"),
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let fp = opts.failure_policy.name();
    let mut objects = Vec::new();
    if !exported.is_empty() {
        match pods::policy(&name, &policy.name, &exported, resolution.as_ref(), fp) {
            Ok(o) => objects.push(o),
            Err(over) => {
                for (rule, m) in over {
                    errors.push(match rule.and_then(|i| policy.rules.get(i)) {
                        Some(r) => policy.rule_diag(
                            r,
                            "",
                            format!("rule {:?} cannot be exported: {m}; split the rule, or leave it out with --skip-rule {}", r.name, r.name),
                        ),
                        None => Diagnostic::file(
                            &policy.file,
                            format!("the pod policy cannot be exported: {m}"),
                        ),
                    });
                }
            }
        }
        objects.push(binding(&name, selector.as_ref()));
    }
    if !node_pools.is_empty() {
        objects.push(nodes::policy(&node_name, &policy.name, &node_pools, fp));
        objects.push(binding(&node_name, None));
    }
    for o in &mut objects {
        o["apiVersion"] = json!(opts.api_version.group_version());
        let size = serde_json::to_vec(o).map_or(0, |b| b.len());
        if size > OBJECT_BYTES {
            errors.push(Diagnostic::file(
                &policy.file,
                format!(
                    "{} {} would be {size} bytes, over the {OBJECT_BYTES} bytes the API server stores in one object (etcd's default request limit); give the export fewer pipeline files or fewer rules, or export the rules as several policies",
                    o["kind"].as_str().unwrap_or_default(),
                    o["metadata"]["name"].as_str().unwrap_or_default()
                ),
            ));
        }
    }
    // Nothing is written when any object would be refused: `kubectl apply`
    // creates the others, so a partial export would take effect in part.
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Export {
        objects,
        rules: reports,
        skipped_rules: skipped,
        pools,
        outcomes,
    })
}

/// The API server's limit on the code points of one CEL expression.
const EXPRESSION_CODE_POINTS: usize = 100_000;

/// The bytes of one stored object: etcd's default `--max-request-bytes`
/// (1.5 MiB), which the JSON of the object, larger than what is stored,
/// must fit.
const OBJECT_BYTES: usize = 1_572_864;

/// What is wrong with a CEL expression the API server would refuse for its
/// size, said as a message's end.
fn expression_over_limit(e: &Json) -> Option<String> {
    let n = e.as_str()?.chars().count();
    (n > EXPRESSION_CODE_POINTS).then(|| {
        format!("is {n} code points of CEL, over the API server's limit of {EXPRESSION_CODE_POINTS} per expression")
    })
}

/// `<policy>:` entries of the annotation naming what admission applied:
/// `policy:rule,rule;other-policy:rule`, one entry per exported policy, so
/// the policies of two teams keep each other's.
fn entry_prefix(policy: &str) -> String {
    format!("{policy}:")
}

/// Sets this policy's entry of the annotation to the names whose
/// selection expression holds (removing it when none does), keeping the
/// other policies' entries, sorted.
fn admitted_mutation(policy: &str, selections: &[(String, String)]) -> String {
    let prefix = entry_prefix(policy);
    let names: Vec<String> = selections
        .iter()
        .map(|(e, n)| format!("{e} ? {} : ''", cel::lit(n)))
        .collect();
    let key = cel::lit(ADMITTED_ANNOTATION);
    let path = cel::lit(&format!(
        "/metadata/annotations/{}",
        cel::pointer_segment(ADMITTED_ANNOTATION)
    ));
    format!(
        "[object.metadata.?annotations[?{key}].orValue('')].map(now,\n  \
         [[{names}].filter(n, n != '').join(',')].map(mine,\n  \
         [(now.split(';').filter(e, e != '' && !e.startsWith({p})) + (mine == '' ? [] : [{p} + mine])).sort().join(';')].map(v,\n  \
         v == now ? [] :\n  \
         v == '' ? [JSONPatch{{op: 'remove', path: {path}}}] :\n  \
         has(object.metadata.annotations) ? [JSONPatch{{op: 'add', path: {path}, value: v}}] :\n  \
         [JSONPatch{{op: 'add', path: '/metadata/annotations', value: {{{key}: v}}}}])[0])[0])[0]",
        names = names.join(",\n    "),
        p = cel::lit(&prefix),
    )
}

fn binding(name: &str, namespaces: Option<&LabelSelector>) -> Json {
    let mut spec = json!({"policyName": name});
    if let Some(sel) = namespaces {
        let exprs: Vec<Json> = sel
            .requirements
            .iter()
            .map(|r| {
                let (op, values) = match r.op {
                    SelOp::Equals | SelOp::In => ("In", Some(&r.values)),
                    SelOp::NotEquals | SelOp::NotIn => ("NotIn", Some(&r.values)),
                    SelOp::Exists => ("Exists", None),
                    SelOp::DoesNotExist => ("DoesNotExist", None),
                    // Refused when the options are read.
                    SelOp::GreaterThan | SelOp::LessThan => ("", None),
                };
                match values {
                    Some(v) => json!({"key": r.key, "operator": op, "values": v}),
                    None => json!({"key": r.key, "operator": op}),
                }
            })
            .collect();
        spec["matchResources"] = json!({"namespaceSelector": {"matchExpressions": exprs}});
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// The KFP v2 components of the pipeline files, and which each rule
/// selects; and what `rewrite` found in the files.
fn resolve(
    policy: &Policy,
    inputs: &[Input],
) -> Result<(Option<pods::Resolution>, Vec<FileOutcome>), Vec<Diagnostic>> {
    if inputs.is_empty() {
        return Ok((None, Vec::new()));
    }
    let opts = RewriteOptions {
        details: true,
        report_errors: true,
        version_suffix: None,
    };
    let mut outcomes: Vec<FileOutcome> = Vec::new();
    let mut errors = Vec::new();
    for r in process_all(inputs, policy, &opts) {
        match r {
            // A rule that selects some callers of a shared Argo template is
            // as ambiguous for admission as for rewrite.
            Ok(o) => {
                errors.extend(o.ambiguous.iter().cloned());
                outcomes.push(o);
            }
            Err(d) => errors.extend(d),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut res = pods::Resolution {
        selected: vec![BTreeSet::new(); policy.rules.len()],
        matched: vec![BTreeSet::new(); policy.rules.len()],
        ..Default::default()
    };
    let no_roles = |s: &Selector| Selector {
        pod_roles: None,
        ..s.clone()
    };
    for o in &outcomes {
        for d in &o.docs {
            for c in &d.components {
                let Some(path) = &c.task_path else { continue };
                let subject = Subject {
                    role: c.role,
                    names: &c.names,
                    images: &c.images,
                    pipelines: &c.pipelines,
                    kind: &c.kind,
                };
                for p in &c.pipelines {
                    res.known.insert((p.clone(), path.clone()));
                }
                for r in &policy.rules {
                    if !matches_globs(&no_roles(&r.matcher), &subject) {
                        continue;
                    }
                    let ex = no_roles(&r.exclude);
                    let excluded = !r.exclude.is_empty() && matches_globs(&ex, &subject);
                    for p in &c.pipelines {
                        res.matched[r.index].insert((p.clone(), path.clone()));
                        if !excluded {
                            res.selected[r.index].insert((p.clone(), path.clone()));
                        }
                    }
                }
            }
        }
    }
    Ok((Some(res), outcomes))
}

/// What the rule reaches at admission and how exactly, or why it cannot
/// be expressed.
fn report(rule: &Rule, resolution: Option<&pods::Resolution>) -> Result<RuleReport, String> {
    let mut r = reach(&rule.matcher);
    // A PipelineVersion's runs make the same pods as its IR's: given the
    // files, their tasks are known by pipeline and path.
    let pv = crate::format::pipeline_version::KIND;
    if resolution.is_some() && r.invisible.contains(&pv) {
        r.kfp_v2 = true;
        r.invisible.retain(|k| *k != pv);
    }
    let roles = rule
        .matcher
        .pod_roles
        .clone()
        .unwrap_or_else(|| vec![PodRole::Executor]);
    let v2_roles: Vec<PodRole> = if r.kfp_v2 { roles.clone() } else { Vec::new() };
    let argo = r.argo && roles.contains(&PodRole::Executor);
    let mut reaches = Vec::new();
    for role in &v2_roles {
        reaches.push(match role {
            PodRole::Executor => "KFP v2 executor pods",
            PodRole::Driver => "KFP v2 driver pods",
            PodRole::Importer => "KFP v2 importer pods",
        });
    }
    if argo {
        reaches.push("KFP v1 and Argo workflow pods");
    }
    let exact_pipelines: Vec<String> = resolution
        .filter(|_| !v2_roles.is_empty())
        .map(|res| {
            let mut p: Vec<String> = res.known.iter().map(|(p, _)| p.clone()).collect();
            p.dedup();
            p
        })
        .unwrap_or_default();
    let exact_tasks = resolution
        .filter(|_| !v2_roles.is_empty())
        .map_or(0, |res| res.selected[rule.index].len());
    if reaches.is_empty() {
        let why = if !r.invisible.is_empty() {
            format!(
                "match.kinds selects only {}, which no pod says it came from (plain workloads' pods carry controller-made names, and a workflow's pods do not say a CronWorkflow or template made it); rewrite reaches them offline",
                r.invisible.join(", ")
            )
        } else {
            "match.podRoles reaches only KFP v2 drivers or importers, and match.kinds excludes KFP v2 pods".to_string()
        };
        return Err(why);
    }
    let mut approx = Vec::new();
    for (sel, what, direction) in [
        (&rule.matcher, "match", ""),
        (
            &rule.exclude,
            "exclude",
            " (so it may apply where rewrite excludes)",
        ),
    ] {
        if sel.names.is_some() && v2_roles.contains(&PodRole::Executor) {
            approx.push(format!(
                "{what}.names: KFP v2 executor pods carry no display names, and their component names are read from the executor label{direction}"
            ));
        }
        if sel.names.is_some() && argo {
            approx.push(format!(
                "{what}.names: KFP v1 pods' component names are read from the component_spec annotation by pattern{direction}"
            ));
        }
        if sel.pipelines.is_some() && argo {
            approx.push(format!(
                "{what}.pipelines: KFP v1 and Argo pods carry their workflow's name, read without its generated suffix{direction}"
            ));
        }
    }
    if !r.invisible.is_empty() {
        approx.push(format!(
            "match.kinds also names {}, whose pods do not say so",
            r.invisible.join(", ")
        ));
    }
    let exactness = if approx.is_empty() {
        Exactness::Exact
    } else {
        Exactness::Approximate(approx)
    };
    Ok(RuleReport {
        name: rule.name.clone(),
        reaches,
        exactness,
        exact_pipelines,
        exact_tasks,
    })
}
