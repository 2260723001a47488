//! `check --krm`: the check as a KRM validator. A `ResourceList` in; the
//! same list out, its items untouched, with a result per component: an
//! `error` for one that fits no node (the scheduler's message), a
//! `warning` for what will surely go wrong, an `info` for one that fits.
//! Works as a kustomize `validators:` exec function and with `kpt fn eval
//! --exec`.

use crate::diag::{Diagnostic, decode_utf8};
use crate::format;
use crate::krm::{resource_ref, str_at};
use crate::policy::Policy;
use kfsched_yaml::BlockStyle;
use kfsched_yaml::edit::{Edit, Editor, Flavor, Placement};
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::Value;

use super::node::Nodes;
use super::read::Reader;
use super::{Found, Options, doc_pods, judge};

/// The outcome of one validator run.
pub struct KrmCheck {
    /// The ResourceList to write to stdout.
    pub output: String,
    /// Whether an error result was written (exit 1).
    pub failed: bool,
    /// The error results' messages, for stderr.
    pub errors: Vec<String>,
}

/// Where the orchestrator says an item came from, as a result's `file`.
fn file_ref(tree: &Tree, item: NodeId) -> Option<Value> {
    let (path, index) = crate::krm::file_ref(tree, item)?;
    let mut f = vec![("path".to_string(), Value::str(&path))];
    if index > 0 {
        f.push(("index".into(), Value::Int(index)));
    }
    Some(Value::Map(f))
}

fn result(severity: &str, message: String, item: Option<(&Tree, NodeId)>) -> Value {
    let mut m = vec![
        ("message".to_string(), Value::str(message)),
        ("severity".to_string(), Value::str(severity)),
    ];
    if let Some((tree, i)) = item {
        m.push(("resourceRef".into(), resource_ref(tree, i)));
        if let Some(f) = file_ref(tree, i) {
            m.push(("file".into(), f));
        }
    }
    Value::Map(m)
}

fn input_error(message: impl Into<String>) -> Vec<Diagnostic> {
    vec![Diagnostic::file("<stdin>", message)]
}

/// Runs the check over a ResourceList's items. `nodes` is `None` for
/// `--pools`: the functionConfig's SchedulingPolicy (else `policy`) gives them.
pub fn run(
    bytes: &[u8],
    nodes: Option<&Nodes>,
    policy: Option<&Policy>,
) -> Result<KrmCheck, Vec<Diagnostic>> {
    let text = decode_utf8("<stdin>", bytes).map_err(|d| vec![d])?;
    let tree =
        Tree::parse(text).map_err(|e| input_error(format!("invalid YAML: {}", e.message)))?;
    let root = tree
        .documents
        .first()
        .and_then(|d| d.root)
        .filter(|&r| tree.kind(r) == Kind::Map && str_at(&tree, r, &["kind"]) == Some("ResourceList"))
        .ok_or_else(|| input_error("check --krm expects a KRM ResourceList on stdin (kind: ResourceList, as kustomize and kpt send)"))?;
    let items: Vec<NodeId> = tree
        .get_value(root, "items")
        .filter(|&i| tree.kind(i) == Kind::Seq)
        .map(|i| tree.items(i).collect())
        .unwrap_or_default();
    let config_policy = function_policy(&tree, root)?;
    let pool_policy = config_policy.as_ref().or(policy);
    let pool_nodes;
    let nodes = match nodes {
        Some(n) => n,
        None => {
            let p = pool_policy.ok_or_else(|| {
                input_error(
                    "--pools needs a SchedulingPolicy: give it as the functionConfig or with -p",
                )
            })?;
            pool_nodes = Nodes::from_pools(p);
            &pool_nodes
        }
    };
    let roots: Vec<Option<NodeId>> = items.iter().map(|&i| Some(i)).collect();
    let docs = format::detect_roots(&tree, &roots).map_err(|(n, m)| {
        vec![Diagnostic::at(
            &tree,
            "ResourceList",
            tree.node(n).start as usize,
            &tree.path(n),
            m,
        )]
    })?;
    let mut r = Reader::new(&tree, "ResourceList");
    let mut found: Vec<Found> = Vec::new();
    let mut item_of: Vec<NodeId> = Vec::new();
    let mut results = Vec::new();
    for (i, (doc, &item)) in docs.iter().zip(&items).enumerate() {
        if matches!(doc, format::Doc::KfpV2(_)) {
            results.push(result("warning", "kfsched check: a KFP v2 pipeline spec is not a Kubernetes object; run `kubectl kfsched check` on the file".into(), Some((&tree, item))));
            continue;
        }
        let before = found.len();
        doc_pods(&mut r, doc, Some(item), i + 1, &mut found);
        item_of.extend(std::iter::repeat_n(item, found.len() - before));
    }
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let opts = Options {
        rewrite: None,
        pools: nodes
            .nodes
            .iter()
            .any(|n| n.pool.is_some())
            .then_some(pool_policy)
            .flatten(),
    };
    let report = judge(found, nodes, opts, Vec::new());
    let mut failed = false;
    let mut errors = Vec::new();
    for (c, &item) in report.components.iter().zip(&item_of) {
        let at = Some((&tree, item));
        let v = &c.verdict;
        if let Some(r) = &c.pod.refused {
            let msg = format!("kfsched check: {}: {r}", c.label);
            errors.push(msg.clone());
            results.push(result("error", msg, at));
            failed = true;
        } else if let Some(s) = c.pod.other_scheduler() {
            results.push(result(
                "info",
                format!(
                    "kfsched check: {}: not judged: {}",
                    c.label,
                    super::report::other_scheduler(s)
                ),
                at,
            ));
        } else if c.pool_check && c.pools.is_empty() {
            results.push(result(
                "info",
                format!("kfsched check: {}: no rule puts it in a pool", c.label),
                at,
            ));
        } else if let Some(m) = &v.message {
            let msg = format!("kfsched check: {} fits no node: {m}", c.label);
            errors.push(msg.clone());
            results.push(result("error", msg, at));
            failed = true;
        } else {
            let names: Vec<&str> = v
                .fits
                .iter()
                .map(|&i| nodes.nodes[i].name.as_str())
                .collect();
            results.push(result(
                "info",
                format!(
                    "kfsched check: {} fits {} node{}: {}",
                    c.label,
                    names.len(),
                    if names.len() == 1 { "" } else { "s" },
                    super::report::list_some(&names, 5)
                ),
                at,
            ));
        }
        for p in c.pools.iter().filter(|p| !p.lands) {
            let msg = format!(
                "kfsched check: {}: rule {:?} puts it in pool {:?}, where it does not fit",
                c.label, p.rule, p.pool
            );
            errors.push(msg.clone());
            results.push(result("error", msg, at));
            failed = true;
        }
        for w in &c.warnings {
            results.push(result(
                "warning",
                format!("kfsched check: {}: {w}", c.label),
                at,
            ));
        }
    }
    let output = with_results(&tree, root, text, results)?;
    Ok(KrmCheck {
        output,
        failed,
        errors,
    })
}

/// The functionConfig, when it is a SchedulingPolicy (for `--pools`).
fn function_policy(tree: &Tree, root: NodeId) -> Result<Option<Policy>, Vec<Diagnostic>> {
    let Some(fc) = tree
        .get_value(root, "functionConfig")
        .filter(|&f| tree.kind(f) == Kind::Map)
    else {
        return Ok(None);
    };
    if str_at(tree, fc, &["kind"]) != Some("SchedulingPolicy") {
        return Ok(None);
    }
    Policy::from_tree("functionConfig", tree, fc)
        .map(Some)
        .map_err(|e| e.0)
}

/// The ResourceList text with `results` added (or extended).
fn with_results(
    tree: &Tree,
    root: NodeId,
    text: &str,
    results: Vec<Value>,
) -> Result<String, Vec<Diagnostic>> {
    if results.is_empty() {
        return Ok(text.to_string());
    }
    let mut editor = Editor::new(tree, Flavor::Generic(BlockStyle::detect(tree)));
    let edit = match tree.get_value(root, "results") {
        Some(node) => {
            let mut all: Vec<Value> = if tree.kind(node) == Kind::Seq {
                tree.items(node)
                    .map(|i| kfsched_yaml::value::node_value(tree, i))
                    .collect()
            } else {
                Vec::new()
            };
            all.extend(results);
            Edit::Reconcile {
                node,
                desired: Value::Seq(all),
                placement: Placement::End,
            }
        }
        None => Edit::Insert {
            map: root,
            key: "results".into(),
            value: Value::Seq(results),
            placement: Placement::End,
        },
    };
    editor
        .apply(edit)
        .map_err(|e| input_error(format!("cannot add results: {e}")))?;
    editor
        .finish()
        .map_err(|e| input_error(format!("cannot add results: {e}")))
}
