//! The KRM function (`kubectl kfsched fn`): a `ResourceList` in, the same
//! `ResourceList` out with its items rewritten and `results` added.
//!
//! As kustomize's `kyaml/fn/framework` separates `Execute` from `Process`,
//! this module separates the ResourceList envelope from the rewrite: the
//! items are edited in place inside the ResourceList text with the same
//! byte-preserving editor as files, so comments, key order and the
//! orchestrator's `internal.config.kubernetes.io/*` annotations survive
//! untouched. Results are written even when the policy is invalid. Where
//! the policy came from one of the user's files, messages point into that
//! file (the private `source` module).

mod source;

use std::borrow::Cow;

use crate::diag::{Diagnostic, decode_utf8};
use crate::format::{self, Doc};
use crate::outcome::{DocReport, Input, Options};
use crate::plan::{Planned, Planner};
use crate::policy::Policy;
use kfsched_yaml::BlockStyle;
use kfsched_yaml::edit::{Edit, Editor, Flavor, Placement};
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::Value;

/// The outcome of one function run.
pub struct KrmOutcome {
    /// The ResourceList to write to stdout.
    pub output: String,
    /// Whether an error result was written (the process then exits 1).
    pub failed: bool,
    /// The messages of the error results, for stderr: kustomize shows a
    /// failing function's stderr but not its results.
    pub errors: Vec<String>,
}

pub use source::kustomization_configs;

/// What a run takes besides the rewrite's options.
#[derive(Clone, Copy, Default)]
pub struct Context<'a> {
    /// `--strict`: a rule that matches no component is an error result,
    /// and then nothing is rewritten, rather than a warning.
    pub strict: bool,
    /// Files the functionConfig may have been read from (see
    /// [`ResourceList::config_paths`], [`kustomization_configs`]): the first that holds
    /// it is where its messages point.
    pub policy_files: &'a [Input],
}

/// Why the input could not be handled at all (exit 2, written to stderr).
#[derive(Debug)]
pub struct KrmInputError(pub Vec<Diagnostic>);

/// A ResourceList as read from stdin, parsed once: what the binary asks of
/// it before the run (whether it is one, whether its functionConfig is a
/// policy, which file that came from) and the run itself share one span
/// tree of a text that can be megabytes long.
pub struct ResourceList<'a> {
    bytes: &'a [u8],
    read: Result<(&'a str, Tree<'a>), KrmInputError>,
}

impl<'a> ResourceList<'a> {
    pub fn read(bytes: &'a [u8]) -> ResourceList<'a> {
        let read = decode_utf8("<stdin>", bytes)
            .map_err(|d| KrmInputError(vec![d]))
            .and_then(|text| {
                Tree::parse(text).map(|tree| (text, tree)).map_err(|e| {
                    KrmInputError(vec![Diagnostic {
                        file: "<stdin>".into(),
                        line: e.line,
                        col: e.col,
                        path: e.path.clone(),
                        message: format!("invalid YAML: {}", e.message),
                    }])
                })
            });
        ResourceList { bytes, read }
    }

    /// `f` of the span tree. A text the run refuses (not UTF-8, a bare
    /// carriage return) is read with its bad bytes replaced, so that it
    /// still counts as a ResourceList and the run says what is wrong.
    fn with_tree<T>(&self, f: impl FnOnce(&Tree) -> T) -> Option<T> {
        match &self.read {
            Ok((_, tree)) => Some(f(tree)),
            Err(_) => {
                let text = String::from_utf8_lossy(self.bytes);
                Tree::parse(&text).ok().map(|tree| f(&tree))
            }
        }
    }

    /// Whether it is a ResourceList (for the no-argument entry point).
    pub fn is_resource_list(&self) -> bool {
        self.with_tree(|tree| {
            let root = tree.documents.first().and_then(|d| d.root);
            root.and_then(|r| tree.get_value(r, "kind"))
                .and_then(|k| tree.str_value(k))
                == Some("ResourceList")
        }) == Some(true)
    }

    /// Whether its functionConfig is a SchedulingPolicy (then a policy
    /// found on disk is not needed as a fallback).
    pub fn has_policy(&self) -> bool {
        self.with_tree(|tree| {
            tree.documents
                .first()
                .and_then(|d| d.root)
                .filter(|&r| tree.kind(r) == Kind::Map)
                .and_then(|r| tree.get_value(r, "functionConfig"))
                .filter(|&f| tree.kind(f) == Kind::Map)
                .and_then(|f| str_at(tree, f, &["kind"]))
                == Some("SchedulingPolicy")
        }) == Some(true)
    }

    /// The file its functionConfig says it was read from (kpt's `fn
    /// render` annotates it with its package and path), to offer as a
    /// candidate.
    pub fn config_paths(&self) -> Vec<std::path::PathBuf> {
        self.with_tree(source::config_paths).unwrap_or_default()
    }

    /// Runs the function over it. `fallback` is the policy to use when the
    /// functionConfig is absent or is not a SchedulingPolicy (kpt passes a
    /// ConfigMap for `-- key=value` arguments).
    pub fn run(
        &self,
        fallback: Option<&Policy>,
        opts: &Options,
        cx: Context,
    ) -> Result<KrmOutcome, KrmInputError> {
        match &self.read {
            Ok((text, tree)) => run_tree(text, tree, fallback, opts, cx),
            Err(e) => Err(KrmInputError(e.0.clone())),
        }
    }
}

struct Result1 {
    severity: &'static str,
    message: String,
    resource: Option<Value>,
    file: Option<(String, i64)>,
}

impl Result1 {
    fn value(&self) -> Value {
        let mut m: Vec<(String, Value)> = vec![
            ("message".into(), Value::str(&self.message)),
            ("severity".into(), Value::str(self.severity)),
        ];
        if let Some(r) = &self.resource {
            m.push(("resourceRef".into(), r.clone()));
        }
        if let Some((path, index)) = &self.file {
            let mut f = vec![("path".to_string(), Value::str(path))];
            if *index > 0 {
                f.push(("index".into(), Value::Int(*index)));
            }
            m.push(("file".into(), Value::Map(f)));
        }
        Value::Map(m)
    }
}

pub(crate) fn str_at<'t>(tree: &'t Tree, node: NodeId, path: &[&str]) -> Option<&'t str> {
    let mut n = node;
    for k in path {
        n = tree.get_value(n, k)?;
    }
    tree.str_value(n)
}

/// apiVersion/kind/name/namespace of an item, for `resourceRef`.
pub(crate) fn resource_ref(tree: &Tree, item: NodeId) -> Value {
    let mut m = Vec::new();
    for (k, path) in [
        ("apiVersion", &["apiVersion"][..]),
        ("kind", &["kind"]),
        ("name", &["metadata", "name"]),
        ("namespace", &["metadata", "namespace"]),
    ] {
        if let Some(v) = str_at(tree, item, path) {
            m.push((k.to_string(), Value::str(v)));
        }
    }
    Value::Map(m)
}

/// Where the orchestrator says an item came from.
pub(crate) fn file_ref(tree: &Tree, item: NodeId) -> Option<(String, i64)> {
    let ann = tree
        .get_value(item, "metadata")
        .and_then(|m| tree.get_value(m, "annotations"))?;
    let path = [
        "internal.config.kubernetes.io/path",
        "config.kubernetes.io/path",
    ]
    .iter()
    .find_map(|k| tree.get_value(ann, k).and_then(|v| tree.str_value(v)))?;
    let index = [
        "internal.config.kubernetes.io/index",
        "config.kubernetes.io/index",
    ]
    .iter()
    .find_map(|k| tree.get_value(ann, k).and_then(|v| tree.str_value(v)))
    .and_then(|s| s.parse().ok())
    .unwrap_or(0);
    Some((path.to_string(), index))
}

/// Runs the function over a ResourceList ([`ResourceList::run`] without
/// `--strict` or policy files).
pub fn run(
    bytes: &[u8],
    fallback: Option<&Policy>,
    opts: &Options,
) -> Result<KrmOutcome, KrmInputError> {
    ResourceList::read(bytes).run(fallback, opts, Context::default())
}

fn run_tree(
    text: &str,
    tree: &Tree,
    fallback: Option<&Policy>,
    opts: &Options,
    cx: Context,
) -> Result<KrmOutcome, KrmInputError> {
    let root = tree
        .documents
        .first()
        .and_then(|d| d.root)
        .filter(|&r| tree.kind(r) == Kind::Map);
    let Some(root) = root.filter(|&r| str_at(tree, r, &["kind"]) == Some("ResourceList")) else {
        // At the kind that is not ResourceList, else at the document.
        let first = tree.documents.first().and_then(|d| d.root);
        let kind = first.and_then(|r| {
            (tree.kind(r) == Kind::Map)
                .then(|| tree.get_value(r, "kind"))
                .flatten()
        });
        let at = kind.or(first).map_or(0, |n| tree.node(n).start as usize);
        return Err(KrmInputError(vec![Diagnostic::at(
            tree,
            "<stdin>",
            at,
            if kind.is_some() { "kind" } else { "" },
            "fn expects a KRM ResourceList on stdin (kind: ResourceList, as kustomize and kpt send); to rewrite files use `kubectl kfsched rewrite`".into(),
        )]));
    };
    let items: Vec<NodeId> = tree
        .get_value(root, "items")
        .filter(|&i| tree.kind(i) == Kind::Seq)
        .map(|i| tree.items(i).collect())
        .unwrap_or_default();
    let mut run = Run {
        tree,
        items,
        results: Vec::new(),
        failed: false,
        strict: cx.strict,
        listed: None,
    };
    let mut editor = Editor::new(tree, Flavor::Generic(BlockStyle::detect(tree)));
    match function_policy(tree, root, fallback, cx.policy_files) {
        Err(diags) => {
            for d in diags {
                run.error(format!("invalid SchedulingPolicy: {d}"), None);
            }
        }
        Ok((policy, listed)) => {
            run.listed = listed;
            for w in &policy.warnings {
                let w = run.locate(w.clone());
                run.push("warning", w.to_string(), None);
            }
            run.process(policy.as_ref(), opts, &mut editor)
        }
    }
    if run.failed {
        // Nothing is rewritten when anything failed: only results are
        // added, and none says that an item was changed.
        editor = Editor::new(tree, Flavor::Generic(BlockStyle::detect(tree)));
        run.results.retain(|r| r.severity != "info");
    }
    let Run {
        results, failed, ..
    } = run;
    add_results(tree, root, &results, &mut editor)?;
    // Whole lines inserted (an item's new entries, the results at the end)
    // need only their own text checked; anything else, the whole output.
    let inserts_ok = editor.is_empty() || editor.line_inserts_parse();
    let output = if editor.is_empty() {
        text.to_string()
    } else {
        editor.finish().map_err(|e| {
            KrmInputError(vec![Diagnostic::at(
                tree, "<stdin>", e.offset, &e.path, e.message,
            )])
        })?
    };
    if let Some(e) = (!inserts_ok).then(|| Tree::parse(&output).err()).flatten() {
        return Err(KrmInputError(vec![Diagnostic::file(
            "<stdin>",
            format!(
                "internal error: the rewritten ResourceList does not parse ({e}); please report this"
            ),
        )]));
    }
    let errors = results
        .iter()
        .filter(|r| r.severity == "error")
        .map(|r| r.message.clone())
        .collect();
    Ok(KrmOutcome {
        output,
        failed,
        errors,
    })
}

/// The policy (the functionConfig when it is a SchedulingPolicy, else
/// `fallback`) and, when it was read from one of `files`, the policy as the
/// ResourceList holds it (for the second location of each message). Its
/// errors point into that file too, each with the ResourceList's position.
fn function_policy<'p>(
    tree: &Tree,
    root: NodeId,
    fallback: Option<&'p Policy>,
    files: &[Input],
) -> Result<(Cow<'p, Policy>, Option<Policy>), Vec<Diagnostic>> {
    let fc = tree
        .get_value(root, "functionConfig")
        .filter(|&f| tree.kind(f) == Kind::Map);
    match (fc, fc.and_then(|f| str_at(tree, f, &["kind"]))) {
        (Some(f), Some("SchedulingPolicy")) => {
            let listed = Policy::from_tree(FUNCTION_CONFIG, tree, f)
                .map_err(|e| e.0.into_iter().map(in_resource_list).collect::<Vec<_>>());
            match (source::from_files(tree, f, files), listed) {
                (None, listed) => listed.map(|p| (Cow::Owned(p), None)),
                (Some(Ok(p)), Ok(listed)) => Ok((Cow::Owned(p), Some(listed))),
                (Some(Err(in_file)), Err(in_list)) => Err(in_file
                    .into_iter()
                    .map(|d| {
                        let path = format!("{FUNCTION_CONFIG}.{}", d.path);
                        match in_list
                            .iter()
                            .find(|l| l.message == d.message && (l.path == path || d.path.is_empty()))
                        {
                            Some(l) if l.line > 0 => source::with_second_location(d, (l.line, l.col)),
                            _ => d,
                        }
                    })
                    .collect()),
                // The same content read twice cannot disagree; if it ever
                // did, the ResourceList's reading stands.
                (Some(_), listed) => listed.map(|p| (Cow::Owned(p), None)),
            }
        }
        _ => fallback.map(|p| (Cow::Borrowed(p), None)).ok_or_else(|| {
            // At the functionConfig that is not a policy, else the ResourceList.
            let (line, col) =
                tree.position(tree.get_value(root, "functionConfig").unwrap_or(root));
            vec![Diagnostic {
                file: "ResourceList".into(),
                line,
                col,
                path: "functionConfig".into(),
                message: "no SchedulingPolicy: give it as the functionConfig (kustomize: the transformer file itself; kpt: --fn-config policy.yaml) or pass -p/--policy".into(),
            }]
        }),
    }
}

/// The items of one run and the results found so far.
struct Run<'t, 'a> {
    tree: &'t Tree<'a>,
    items: Vec<NodeId>,
    results: Vec<Result1>,
    failed: bool,
    /// `--strict`: a rule that matches nothing is an error.
    strict: bool,
    /// The policy as the ResourceList holds it, when the policy was read
    /// from the user's file: where each of its messages also sits.
    listed: Option<Policy>,
}

impl Run<'_, '_> {
    /// A diagnostic about the policy, as the user finds it: in the
    /// ResourceList, or in the policy's file with the ResourceList's
    /// position as a second location.
    fn locate(&self, d: Diagnostic) -> Diagnostic {
        match &self.listed {
            Some(listed) if d.line > 0 && d.file != "ResourceList" => {
                let at = listed.location(&d.path);
                source::with_second_location(d, at)
            }
            _ => in_resource_list(d),
        }
    }

    fn push(&mut self, severity: &'static str, message: String, item: Option<NodeId>) {
        self.failed |= severity == "error";
        self.results.push(Result1 {
            severity,
            message,
            resource: item.map(|i| resource_ref(self.tree, i)),
            file: item.and_then(|i| file_ref(self.tree, i)),
        });
    }

    fn error(&mut self, message: String, item: Option<NodeId>) {
        self.push("error", message, item);
    }

    /// Rewrites the items under `policy` into `editor`, collecting results.
    fn process(&mut self, policy: &Policy, opts: &Options, editor: &mut Editor) {
        let tree = self.tree;
        let roots: Vec<Option<NodeId>> = self.items.iter().map(|&i| Some(i)).collect();
        let mut docs = match format::detect_roots(tree, &roots) {
            Ok(docs) => docs,
            Err((node, msg)) => {
                let item = self.items.iter().copied().find(|&i| tree.contains(i, node));
                self.error(msg, item);
                return;
            }
        };
        self.set_aside_kfp_v2(&mut docs);
        let reports = self.plan_items(&docs, policy, opts, editor);
        self.summarize(&reports, policy);
    }

    /// KFP v2 IR is not rewritten here: its scheduling goes into a second
    /// YAML document, which an item cannot carry.
    fn set_aside_kfp_v2(&mut self, docs: &mut [Doc]) {
        for (doc, &item) in docs.iter_mut().zip(&self.items) {
            match doc {
                Doc::KfpV2(p) if p.manifest.is_none() => {
                    self.results.push(Result1 {
                        severity: "warning",
                        message: "kfsched: a KFP v2 pipeline spec is not rewritten by the KRM function (its scheduling goes into a separate platform document, which a ResourceList item cannot carry); run `kubectl kfsched rewrite` on the file".into(),
                        // IR has no apiVersion, kind or name.
                        resource: Some(resource_ref(self.tree, item))
                            .filter(|r| r.as_map().is_some_and(|m| !m.is_empty())),
                        file: file_ref(self.tree, item),
                    });
                    *doc = Doc::Other("KFP v2 IR (use rewrite)".into());
                }
                Doc::KfpV2Platform => {
                    *doc = Doc::Other("KFP v2 platform spec (use rewrite)".into());
                }
                _ => {}
            }
        }
    }

    /// Plans one item at a time, so that each error and warning names the
    /// item it is about.
    fn plan_items(
        &mut self,
        docs: &[Doc],
        policy: &Policy,
        opts: &Options,
        editor: &mut Editor,
    ) -> Vec<DocReport> {
        let planner = Planner::new(self.tree, policy, "ResourceList", opts);
        let items: Vec<NodeId> = self.items.iter().take(docs.len()).copied().collect();
        let mut reports = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let Planned {
                reports: r,
                errors,
                warnings,
                ..
            } = planner.plan(&docs[i..=i], &[Some(item)], editor);
            reports.extend(r);
            for e in errors {
                let e = if e.file == policy.file {
                    self.locate(e)
                } else {
                    in_resource_list(e)
                };
                self.error(e.to_string(), Some(item));
            }
            for w in warnings {
                self.push("warning", w.message, Some(item));
            }
        }
        reports
    }

    /// An info result per changed item naming the rules that changed it,
    /// and a warning per rule that matched no component.
    fn summarize(&mut self, reports: &[DocReport], policy: &Policy) {
        let mut hits = vec![0usize; policy.rules.len()];
        for (report, item) in reports.iter().zip(self.items.clone()) {
            let mut rules: Vec<&str> = Vec::new();
            for c in &report.components {
                for (i, v) in c.verdicts.iter().enumerate() {
                    if v.selected() {
                        hits[i] += 1;
                        if c.changed && !rules.contains(&policy.rules[i].name.as_str()) {
                            rules.push(&policy.rules[i].name);
                        }
                    }
                }
            }
            if report.components.iter().any(|c| c.changed) {
                let message = format!(
                    "kfsched: scheduling set by rule{} {}",
                    if rules.len() == 1 { "" } else { "s" },
                    rules.join(", ")
                );
                self.push("info", message, Some(item));
            }
        }
        for (rule, h) in policy.rules.iter().zip(hits) {
            if h == 0 && rule.reaches_files() {
                let d = policy.rule_diag(rule, "match", String::new());
                let at = match &self.listed {
                    Some(listed) if d.file != FUNCTION_CONFIG => {
                        let (l, c) = listed.location(&d.path);
                        format!("{}:{}:{}, ResourceList:{l}:{c}", d.file, d.line, d.col)
                    }
                    _ if d.file == FUNCTION_CONFIG => {
                        format!("ResourceList:{}:{}", d.line, d.col)
                    }
                    _ => format!("{}:{}:{}", d.file, d.line, d.col),
                };
                let message = format!(
                    "kfsched: rule {:?} matched no component (its {} is at {at}; {})",
                    rule.name,
                    d.path,
                    if self.strict {
                        "an error under --strict; nothing was rewritten"
                    } else {
                        "`kubectl kfsched explain` lists the names a rule can match"
                    }
                );
                self.push(if self.strict { "error" } else { "warning" }, message, None);
            }
        }
    }
}

/// Appends `results` to the ResourceList's `results` (created when absent).
fn add_results(
    tree: &Tree,
    root: NodeId,
    results: &[Result1],
    editor: &mut Editor,
) -> Result<(), KrmInputError> {
    let new_results: Vec<Value> = results.iter().map(Result1::value).collect();
    if new_results.is_empty() {
        return Ok(());
    }
    let edit = match tree.get_value(root, "results") {
        Some(node) if tree.kind(node) == Kind::Seq => {
            let mut all: Vec<Value> = tree
                .items(node)
                .map(|i| kfsched_yaml::value::node_value(tree, i))
                .collect();
            all.extend(new_results);
            Edit::Reconcile {
                node,
                desired: Value::Seq(all),
                placement: Placement::End,
            }
        }
        Some(node) => Edit::Reconcile {
            node,
            desired: Value::Seq(new_results),
            placement: Placement::End,
        },
        None => Edit::Insert {
            map: root,
            key: "results".into(),
            value: Value::Seq(new_results),
            placement: Placement::End,
        },
    };
    editor.apply(edit).map_err(|e| {
        KrmInputError(vec![Diagnostic::at(
            tree,
            "<stdin>",
            e.offset,
            &e.path,
            format!("cannot add results: {}", e.message),
        )])
    })
}

/// The file name the functionConfig's policy is read under; its
/// diagnostics are then relabelled by [`in_resource_list`].
const FUNCTION_CONFIG: &str = "functionConfig";

/// A diagnostic about the functionConfig as the ResourceList sees it: the
/// line and column are counted in the whole ResourceList, so the label is
/// `ResourceList:LINE:COL: functionConfig.spec...`, as for items
/// (`ResourceList:LINE:COL: items[0].spec...`).
fn in_resource_list(mut d: Diagnostic) -> Diagnostic {
    if d.file == FUNCTION_CONFIG {
        d.file = "ResourceList".into();
        d.path = if d.path.is_empty() {
            FUNCTION_CONFIG.into()
        } else {
            format!("{FUNCTION_CONFIG}.{}", d.path)
        };
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_reading_answers_what_the_binary_asks_before_the_run() {
        let list = ResourceList::read(
            b"kind: ResourceList\nitems: []\nfunctionConfig:\n  kind: SchedulingPolicy\n",
        );
        assert!(list.is_resource_list());
        assert!(list.has_policy());
        let other = ResourceList::read(b"kind: ResourceList\nfunctionConfig: {kind: ConfigMap}\n");
        assert!(other.is_resource_list() && !other.has_policy());
        assert!(!ResourceList::read(b"kind: Pod\n").is_resource_list());
        assert!(!ResourceList::read(b"kind: [ResourceList\n").is_resource_list());
    }

    #[test]
    fn a_resource_list_that_is_not_utf8_is_still_one_and_the_run_says_why_not() {
        let list = ResourceList::read(b"kind: ResourceList\nitems: []\nnote: \xff\n");
        assert!(list.is_resource_list());
        let Err(KrmInputError(d)) = list.run(None, &Options::default(), Context::default()) else {
            panic!("a ResourceList that is not UTF-8 ran");
        };
        assert_eq!((d[0].file.as_str(), d[0].line), ("<stdin>", 3), "{d:?}");
    }
}
