//! `check`: will every component schedule? For each component of each
//! input (as it is, or as `rewrite` would make it under a policy), build the
//! pod its creator makes ([`pod`]: the KFP v2 driver in [`kfp`], Argo in
//! [`argo`], a workload controller in [`workload`]), run kube-scheduler's
//! filters for these fields against the nodes ([`filter`], [`node`]) and,
//! when none fits, write the scheduler's own message ([`message`]).
//!
//! Synchronous and pure: the binary reads the files and fetches the live
//! nodes, and renders the [`Report`] ([`report`], [`krm`]).

pub mod argo;
pub mod classes;
pub mod filter;
pub mod kfp;
pub mod krm;
pub mod message;
pub mod node;
pub mod pod;
pub mod quantity;
mod read;
pub mod report;
mod snapshot;
#[cfg(test)]
mod tests;
pub mod workload;

use std::collections::BTreeMap;

use kfsched_yaml::hash::HashMap;

use rayon::prelude::*;

pub use classes::{Classes, PriorityClass};
pub use node::{Node, Nodes, Source};
pub use pod::Pod;

use crate::diag::{Diagnostic, decode_utf8};
use crate::format::{self, Doc, Place};
use crate::matching::Subject;
use crate::outcome::{DocReport, FileOutcome};
use crate::policy::Policy;
use crate::rewrite::{self, Input};
use filter::{Prepared, Status};
use kfsched_yaml::block::is_blank;
use kfsched_yaml::tree::{NodeId, Tree};
use read::{At, Reader};

/// How to check.
#[derive(Clone, Copy, Default)]
pub struct Options<'p> {
    /// Judge the files as `rewrite` would make them under this policy
    /// (`-p`); `None` judges them as they are.
    pub rewrite: Option<&'p Policy>,
    /// With the policy's pools as the nodes (`--pools`): also say whether
    /// each rule's component lands in its rule's pool.
    pub pools: Option<&'p Policy>,
}

/// One component's verdict.
#[derive(Clone, Debug)]
pub struct ComponentCheck {
    pub file: String,
    /// The document (from 1) of the file.
    pub document: usize,
    /// How messages name it: `task "train" (root/train)`.
    pub label: String,
    pub kind: String,
    /// The pipelines it belongs to (see `format::Component::pipelines`).
    pub pipelines: Vec<String>,
    pub names: Vec<String>,
    /// The pod, as the API server admits it.
    pub pod: Pod,
    pub verdict: std::sync::Arc<Verdict>,
    /// Problems that will surely bite (a toleration that tolerates
    /// nothing, a label no node has, more of a resource than any node has).
    pub warnings: Vec<String>,
    /// With `--pools`: each rule with a pool that selects the component,
    /// and whether the component fits that pool.
    pub pools: Vec<PoolLanding>,
    /// Judged against the policy's pools (`--pools`): then only the pools
    /// its rules name count, and a component no such rule selects is not
    /// expected to land in any.
    pub pool_check: bool,
}

impl ComponentCheck {
    /// Its first name, as `-o json`'s `component`.
    pub fn name(&self) -> &str {
        self.names
            .first()
            .map_or(self.label.as_str(), String::as_str)
    }

    /// Whether it fits at least one node; with `--pools`, whether it fits
    /// every pool its rules name (none named: nothing to miss). A pod the
    /// API server refuses fits nowhere; one another scheduler places is
    /// not judged, and does not fail.
    pub fn ok(&self) -> bool {
        if self.pod.refused.is_some() {
            return false;
        }
        if self.pod.other_scheduler().is_some() {
            return true;
        }
        if self.pool_check {
            return self.pools.iter().all(|p| p.lands);
        }
        !self.verdict.fits.is_empty() && self.pools.iter().all(|p| p.lands)
    }
}

/// A rule with `pool:` that selects a component, judged on the pools.
#[derive(Clone, Debug)]
pub struct PoolLanding {
    pub rule: String,
    pub pool: String,
    pub lands: bool,
}

/// The filters' verdict for one pod over all nodes (shared by the
/// components whose pods are the same).
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// The nodes it fits (indices into [`Nodes::nodes`], by name).
    pub fits: Vec<usize>,
    /// Among them, those with the best preferred-affinity score, and the score.
    pub preferred: Vec<usize>,
    pub preferred_score: i64,
    /// Nodes per rejection reason (nodes a PreFilter left out included).
    pub rejected: BTreeMap<String, usize>,
    /// The first sentence of the scheduler's message when it fits none.
    pub first_sentence: Option<String>,
    /// The whole message, PostFilter part included.
    pub message: Option<String>,
    /// The nodes that pass the filters. Usually [`Verdict::fits`]; when a
    /// preferred term does not parse and two or more pass, kube-scheduler
    /// fails the pod in PreScore, so it fits none of them.
    pub passed_filters: Vec<usize>,
}

/// Everything one run found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub components: Vec<ComponentCheck>,
    /// Per file: warnings (from the rewrite, or a skipped document).
    pub warnings: Vec<Diagnostic>,
    /// Per input, in order: what its documents are and, under a rewrite
    /// policy, what each rule selected (without the rewritten text), for
    /// what [`crate::outcome`] says about rules and inputs that do nothing.
    pub outcomes: Vec<FileOutcome>,
}

impl Report {
    /// Whether every component fits somewhere (exit 0 rather than 1).
    pub fn ok(&self) -> bool {
        self.components.iter().all(ComponentCheck::ok)
    }
}

/// Checks every input against the nodes. Bad input (a file that does not
/// parse, a field the API server would refuse) is an `Err` with every
/// problem found.
pub fn run(inputs: &[Input], nodes: &Nodes, opts: Options) -> Result<Report, Vec<Diagnostic>> {
    let per_file: Vec<FileResult> = inputs
        .par_iter()
        .map(|i| components_of(&i.file, &i.bytes, opts.rewrite))
        .collect();
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    let mut outcomes = Vec::new();
    let mut errors = Vec::new();
    for r in per_file {
        match r {
            Ok((f, w, o)) => {
                found.extend(f);
                warnings.extend(w);
                outcomes.push(o);
            }
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut report = judge(found, nodes, opts, warnings);
    report.outcomes = outcomes;
    Ok(report)
}

/// One file's components, warnings and outcome, or its problems.
type FileResult = Result<(Vec<Found>, Vec<Diagnostic>, FileOutcome), Vec<Diagnostic>>;

/// A component and its admitted pod, before judging.
struct Found {
    file: String,
    document: usize,
    component: format::Component,
    pod: Pod,
}

/// Judges the components, evaluating each distinct pod once.
fn judge(mut found: Vec<Found>, nodes: &Nodes, opts: Options, warnings: Vec<Diagnostic>) -> Report {
    for f in &mut found {
        classes::admit(&mut f.pod, &nodes.priority_classes);
        spread_note(&mut f.pod);
        if let Some(r) = &f.pod.runtime_class_name {
            let note = format!(
                "runtimeClassName {r:?}: whether the RuntimeClass exists, and the node selector, tolerations and overhead its `scheduling` and `overhead` add at admission"
            );
            f.pod.unjudged.push(note);
        }
    }
    let keys: Vec<String> = found
        .iter()
        .map(|f| f.pod.spec_json().to_string())
        .collect();
    let mut distinct: HashMap<&str, usize> = HashMap::default();
    let mut pods: Vec<&Pod> = Vec::new();
    for (f, k) in found.iter().zip(&keys) {
        distinct.entry(k.as_str()).or_insert_with(|| {
            pods.push(&f.pod);
            pods.len() - 1
        });
    }
    let verdicts: Vec<std::sync::Arc<Verdict>> = pods
        .par_iter()
        .map(|p| std::sync::Arc::new(evaluate(p, nodes)))
        .collect();
    let mut warned: HashMap<usize, Vec<String>> = HashMap::default();
    let components = found
        .into_iter()
        .zip(&keys)
        .map(|(f, k)| {
            let i = distinct[k.as_str()];
            let verdict = verdicts[i].clone();
            let w = warned
                .entry(i)
                .or_insert_with(|| surely_wrong(&f.pod, &verdict, nodes))
                .clone();
            let pools = opts
                .pools
                .map(|p| landings(p, &f.component, &verdict, nodes))
                .unwrap_or_default();
            ComponentCheck {
                file: f.file,
                document: f.document,
                label: f.component.label,
                kind: f.component.kind,
                pipelines: f.component.pipelines,
                names: f.component.names,
                pod: f.pod,
                verdict,
                warnings: w,
                pools,
                pool_check: opts.pools.is_some(),
            }
        })
        .collect();
    Report {
        components,
        warnings,
        outcomes: Vec::new(),
    }
}

/// Runs the filters over every node.
pub fn evaluate(pod: &Pod, nodes: &Nodes) -> Verdict {
    let p = Prepared::new(pod);
    let mut v = Verdict::default();
    let list = &nodes.nodes;
    let mut statuses: Vec<(usize, Status)> = Vec::new();
    let mut absent = 0usize;
    if !p.conflict {
        let results: Vec<Option<Option<Status>>> = if list.len() >= 2048 {
            list.par_iter().map(|n| judge_node(&p, n)).collect()
        } else {
            list.iter().map(|n| judge_node(&p, n)).collect()
        };
        for (i, r) in results.into_iter().enumerate() {
            match r {
                None => absent += 1,
                Some(None) => v.fits.push(i),
                Some(Some(s)) => statuses.push((i, s)),
            }
        }
    }
    for (_, s) in &statuses {
        for r in &s.reasons {
            *v.rejected.entry(r.clone()).or_insert(0) += 1;
        }
    }
    if absent > 0 {
        v.rejected
            .insert(filter::PREFILTER_EXCLUDED.to_string(), absent);
    }
    if p.conflict && !list.is_empty() {
        v.rejected
            .insert(filter::AFFINITY_CONFLICT.to_string(), list.len());
    }
    v.fits.sort_by(|&a, &b| list[a].name.cmp(&list[b].name));
    if p.has_preferred() {
        let best = v.fits.iter().map(|&i| p.score(&list[i])).max().unwrap_or(0);
        v.preferred_score = best;
        if best > 0 {
            v.preferred = v
                .fits
                .iter()
                .copied()
                .filter(|&i| p.score(&list[i]) == best)
                .collect();
        }
    }
    v.passed_filters = v.fits.clone();
    if v.fits.len() >= 2 && !p.preferred_errors.is_empty() {
        // PreScore runs only when two or more nodes pass the filters.
        let m = format!(
            "running PreScore plugin \"NodeAffinity\": {}",
            filter::aggregate(&p.preferred_errors)
        );
        v.fits.clear();
        v.preferred.clear();
        v.first_sentence = Some(m.clone());
        v.message = Some(m);
        return v;
    }
    if v.fits.is_empty() {
        let u = message::Unschedulable {
            nodes: list,
            statuses: &statuses,
            conflict: p.conflict,
            priority: pod.priority.unwrap_or(0),
            never_preempts: pod.never_preempts,
        };
        v.first_sentence = Some(u.first_sentence());
        v.message = Some(u.message());
    }
    v
}

/// `None`: left out by the PreFilter; `Some(None)`: fits.
fn judge_node(p: &Prepared, n: &Node) -> Option<Option<Status>> {
    if p.names
        .as_ref()
        .is_some_and(|names| !names.contains(&n.name))
    {
        return None;
    }
    Some(p.filter(n))
}

/// What the PodTopologySpread filter is judged on, said once per pod that
/// has constraints.
fn spread_note(pod: &mut Pod) {
    let hard = pod
        .topology_spread
        .iter()
        .any(|c| c.when_unsatisfiable == "DoNotSchedule");
    if pod.topology_spread.is_empty() {
        return;
    }
    pod.unjudged.push(if hard {
        "the skew of topologySpreadConstraints against the pods already running (their DoNotSchedule constraints are judged for the component's first pod, as kube-scheduler's PodTopologySpread filter judges it when no other pod counts: a node without the topologyKey label does not fit)".to_string()
    } else {
        "topologySpreadConstraints with whenUnsatisfiable ScheduleAnyway, a preference of kube-scheduler's scoring".to_string()
    });
}

/// With `--pools`: the rules with a pool that select this component.
fn landings(
    policy: &Policy,
    c: &format::Component,
    v: &Verdict,
    nodes: &Nodes,
) -> Vec<PoolLanding> {
    let subject = Subject {
        names: &c.names,
        images: &c.images,
        pipelines: &c.pipelines,
        kind: &c.kind,
        role: c.role,
    };
    policy
        .rules
        .iter()
        .filter(|r| r.judge(&subject).selected())
        .filter_map(|r| {
            let pool = r.pool.clone()?;
            let lands = v
                .fits
                .iter()
                .any(|&i| nodes.nodes[i].pool.as_deref() == Some(pool.as_str()));
            Some(PoolLanding {
                rule: r.name.clone(),
                pool,
                lands,
            })
        })
        .collect()
}

/// What will surely go wrong, whatever the verdict.
fn surely_wrong(pod: &Pod, v: &Verdict, nodes: &Nodes) -> Vec<String> {
    let mut out = Vec::new();
    let list = &nodes.nodes;
    if list.is_empty() {
        return out;
    }
    let what = if matches!(nodes.source, Source::Pools(_)) {
        "pool"
    } else {
        "node"
    };
    for t in pod.own_tolerations() {
        let cordon = k8s_openapi::api::core::v1::Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        };
        let useful = list.iter().any(|n| {
            n.taints.iter().any(|taint| filter::tolerates(t, taint))
                || (n.unschedulable && filter::tolerates(t, &cordon))
        });
        if !useful {
            out.push(format!(
                "the toleration {} matches no taint of any {what}: it changes nothing (a typo?)",
                report::toleration(t)
            ));
        }
    }
    out.extend(missing_labels(pod, list, what));
    if nodes.resources_known() {
        let r = pod.requests();
        let mut wants: Vec<(String, i64)> = vec![
            ("cpu".into(), r.milli_cpu),
            ("memory".into(), r.memory),
            ("ephemeral-storage".into(), r.ephemeral_storage),
        ];
        wants.extend(r.scalar.clone());
        for (name, want) in wants {
            if want <= 0 {
                continue;
            }
            let (most, on) = list
                .iter()
                .map(|n| (n.allocatable.as_ref().map_or(0, |a| a.get(&name)), &n.name))
                .max_by_key(|(a, _)| *a)
                .unwrap_or((0, &list[0].name));
            if want > most {
                let show = |x: i64| report::amount(&name, x);
                out.push(if most == 0 {
                    format!("it requests {} {name}, and no node has any", show(want))
                } else {
                    format!(
                        "it requests {} {name}, more than any node has (the most is {} on {on})",
                        show(want),
                        show(most)
                    )
                });
            }
        }
    }
    if v.fits.is_empty() && v.passed_filters.len() >= 2 {
        out.push(format!(
            "{} nodes pass the filters, but a preferred node-affinity term does not parse, and kube-scheduler fails the pod (SchedulerError) whenever two or more do",
            v.passed_filters.len()
        ));
    }
    if let Some(n) = &pod.node_name {
        out.push(format!(
            "spec.nodeName {n:?} binds the pod without the scheduler; judged as the scheduler would"
        ));
    }
    out
}

/// nodeSelector pairs and required expressions no node can satisfy.
fn missing_labels(pod: &Pod, list: &[Node], what: &str) -> Vec<String> {
    let mut out = Vec::new();
    let values_of = |key: &str| -> Vec<&str> {
        let mut v: Vec<&str> = list
            .iter()
            .filter_map(|n| n.labels.get(key).map(String::as_str))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let keys = || {
        let mut k: Vec<&str> = list
            .iter()
            .flat_map(|n| n.labels.keys().map(String::as_str))
            .collect();
        k.sort_unstable();
        k.dedup();
        k
    };
    let hint = |key: &str, value: Option<&str>| -> String {
        let have = values_of(key);
        if have.is_empty() {
            return crate::suggest::nearest(key, keys())
                .map(|k| format!("; did you mean the label {k:?}?"))
                .unwrap_or_default();
        }
        match value.and_then(|v| crate::suggest::nearest(v, have.iter().copied())) {
            Some(n) => format!("; did you mean {key}={n}?"),
            None => format!(" ({what}s have {key} = {})", report::list_some(&have, 5)),
        }
    };
    for (k, v) in pod.node_selector.iter().flatten() {
        if !list.iter().any(|n| n.labels.get(k) == Some(v)) {
            out.push(format!(
                "nodeSelector {k}={v}: no {what} has this label{}",
                hint(k, Some(v))
            ));
        }
    }
    for (ti, term) in pod.required.iter().flatten().enumerate() {
        for e in term.match_expressions.iter().flatten() {
            let vals = e.values.clone().unwrap_or_default();
            let dead = match e.operator.as_str() {
                "In" => !list
                    .iter()
                    .any(|n| n.labels.get(&e.key).is_some_and(|v| vals.contains(v))),
                "Exists" | "Gt" | "Lt" => !list.iter().any(|n| n.labels.contains_key(&e.key)),
                _ => false,
            };
            if dead {
                let shown = if vals.is_empty() {
                    format!("{} {}", e.key, e.operator)
                } else {
                    format!("{} {} [{}]", e.key, e.operator, vals.join(", "))
                };
                out.push(format!(
                    "required node-affinity term {}: no {what} has a label for `{shown}`{}",
                    ti + 1,
                    hint(&e.key, vals.first().map(String::as_str))
                ));
            }
        }
    }
    out
}

/// Reads one file (rewritten first under `policy`, when given) into its
/// components and their pods.
fn components_of(file: &str, bytes: &[u8], policy: Option<&Policy>) -> FileResult {
    if let Some(d) = rewrite::python_input(file, None) {
        return Err(vec![d]);
    }
    let original = decode_utf8(file, bytes).map_err(|d| vec![d])?;
    let bare = |docs| FileOutcome {
        file: file.to_string(),
        output: None,
        docs,
        warnings: Vec::new(),
        errors: Vec::new(),
        ambiguous: Vec::new(),
    };
    if is_blank(original) {
        return Ok((
            Vec::new(),
            Vec::new(),
            bare(vec![DocReport::skipped_file("empty file")]),
        ));
    }
    let mut warnings = Vec::new();
    let mut rewrite_outcome = None;
    let rewritten = match policy {
        Some(p) => {
            let mut outcome = rewrite::process(file, bytes, p)?;
            warnings.extend(outcome.warnings.iter().cloned());
            let text = outcome.output.take().map(|p| p.apply(original));
            // Only which rules selected what is kept.
            for c in outcome.docs.iter_mut().flat_map(|d| &mut d.components) {
                c.before = serde_json::Value::Null;
                c.after = serde_json::Value::Null;
            }
            rewrite_outcome = Some(outcome);
            text
        }
        None => None,
    };
    let text = rewritten.as_deref().unwrap_or(original);
    match pods_and_docs(file, text) {
        Ok((found, docs)) => Ok((
            found,
            warnings,
            rewrite_outcome.unwrap_or_else(|| bare(docs)),
        )),
        // Problems in the rewritten text: report them where they are in the
        // file the user has, when they are there too.
        Err(e) if rewritten.is_some() => match pods_of(file, original) {
            Err(orig) => Err(orig),
            Ok(_) => Err(e),
        },
        Err(e) => Err(rewrite::python_input(file, Some(original)).map_or(e, |d| vec![d])),
    }
}

/// The components of a text and their pods.
fn pods_of(file: &str, text: &str) -> Result<Vec<Found>, Vec<Diagnostic>> {
    pods_and_docs(file, text).map(|(found, _)| found)
}

/// The components of a text and their pods, and what each document is.
fn pods_and_docs(file: &str, text: &str) -> Result<(Vec<Found>, Vec<DocReport>), Vec<Diagnostic>> {
    let tree = Tree::parse(text).map_err(|e| {
        vec![Diagnostic {
            file: file.to_string(),
            line: e.line,
            col: e.col,
            path: e.path.clone(),
            message: format!("invalid YAML: {}", e.message),
        }]
    })?;
    let docs = format::detect(&tree).map_err(|(node, msg)| {
        vec![Diagnostic::at(
            &tree,
            file,
            tree.node(node).start as usize,
            &tree.path(node),
            msg,
        )]
    })?;
    let roots: Vec<Option<NodeId>> = tree.documents.iter().map(|d| d.root).collect();
    let mut r = Reader::new(&tree, file);
    let mut out = Vec::new();
    for (i, (doc, root)) in docs.iter().zip(&roots).enumerate() {
        doc_pods(&mut r, doc, *root, i + 1, &mut out);
    }
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let reports = docs
        .iter()
        .enumerate()
        .map(|(index, d)| DocReport {
            index,
            format: d.format_name(),
            skipped_because: match d {
                Doc::Other(why) => Some(why.clone()),
                _ => None,
            },
            components: Vec::new(),
            skipped: Vec::new(),
            selected_skipped: Vec::new(),
        })
        .collect();
    Ok((out, reports))
}

/// The pods of one document (or of a List's items).
fn doc_pods(
    r: &mut Reader,
    doc: &Doc,
    root: Option<NodeId>,
    document: usize,
    out: &mut Vec<Found>,
) {
    let tree = r.tree;
    let found = |c: &format::Component, pod: Pod| Found {
        file: r.file.to_string(),
        document,
        component: c.clone(),
        pod,
    };
    let mut pods: Vec<(&format::Component, Pod)> = Vec::new();
    match doc {
        Doc::KfpV2(p) => {
            let Some(root) = root else { return };
            // A PipelineVersion holds the IR in `spec.pipelineSpec`.
            let root = match &p.manifest {
                Some(m) => match tree.get_value(m.spec, "pipelineSpec") {
                    Some(ir) => ir,
                    None => return,
                },
                None => root,
            };
            let ir = kfp::Ir {
                root,
                platform: p.platform,
            };
            for c in &p.components {
                if let Place::KfpV2 { executor } = &c.place {
                    pods.push((c, ir.pod(r, executor)));
                }
            }
        }
        Doc::Argo(w) => {
            let callers = argo::Callers::of(tree, w);
            for c in &w.components {
                if let Place::Argo { template, .. } = c.place {
                    pods.push((c, argo::pod(r, w, &callers, template)));
                }
            }
        }
        Doc::Workload(w) => {
            if let Place::Workload(pt) = &w.component.place {
                pods.push((
                    &w.component,
                    workload::pod(r, At::Node(pt.spec), &w.component.kind),
                ));
            }
        }
        Doc::List(list) => {
            for (item, item_root) in list.items.iter().zip(&list.roots) {
                doc_pods(r, item, *item_root, document, out);
            }
            return;
        }
        _ => {}
    }
    for (c, pod) in pods {
        out.push(found(c, admitted(pod)));
    }
}

fn admitted(mut pod: Pod) -> Pod {
    pod.admit();
    pod
}
