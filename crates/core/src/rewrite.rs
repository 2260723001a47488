//! One file through the whole flow: read → detect → components → match →
//! merge → plan edits → apply to the original bytes → verify → report.
//!
//! Synchronous and pure: bytes in, bytes and a report out. The binary does
//! the file system and the printing; many files run in parallel.

use rayon::prelude::*;

use crate::diag::{Diagnostic, decode_utf8};
use crate::format::kfp_v2;
use crate::format::{self, Change, Doc, Skipped};
use crate::matching::Verdict;
use crate::policy::Policy;
use crate::scheduling::Changed;
use kfsched_yaml::edit::{Editor, Flavor};
use kfsched_yaml::skim::{self, Projection};
use kfsched_yaml::tree::{Kind, NodeId, Style, Tree, check_syntax};
use kfsched_yaml::value::Value;

/// What `explain` shows about one component.
#[derive(Clone, Debug)]
pub struct ComponentReport {
    pub label: String,
    pub kind: String,
    pub pipeline: Option<String>,
    pub names: Vec<String>,
    pub images: Vec<String>,
    /// One verdict per rule, in policy order.
    pub verdicts: Vec<Verdict>,
    pub before: serde_json::Value,
    pub after: serde_json::Value,
    pub changed: bool,
    /// Warnings from merging (a nodeSelector value replaced, ...).
    pub warnings: Vec<String>,
}

/// What `explain` shows about one document.
#[derive(Clone, Debug)]
pub struct DocReport {
    pub index: usize,
    pub format: &'static str,
    /// Why the document was skipped, for non-pipeline documents.
    pub skipped_because: Option<String>,
    pub components: Vec<ComponentReport>,
    pub skipped: Vec<Skipped>,
    /// Rules (by index) that select a component of an object its controller
    /// manages: skipped with a warning, but the rule did match something.
    pub selected_skipped: Vec<usize>,
}

impl DocReport {
    /// The one report of a file that is not read as YAML documents.
    fn skipped_file(why: &str) -> DocReport {
        DocReport {
            index: 0,
            format: "other",
            skipped_because: Some(why.into()),
            components: vec![],
            skipped: vec![],
            selected_skipped: vec![],
        }
    }
}

/// The result of processing one file.
#[derive(Clone, Debug)]
pub struct FileOutcome {
    pub file: String,
    /// The rewritten text, when it differs from the input.
    pub output: Option<String>,
    pub docs: Vec<DocReport>,
    pub warnings: Vec<Diagnostic>,
    /// What the rules cannot write here (a field the format cannot hold, a
    /// shared KFP v2 executor...), kept beside the reports only with
    /// [`Options::report_errors`]; otherwise such a file is an `Err`.
    pub errors: Vec<Diagnostic>,
}

impl FileOutcome {
    pub fn changed(&self) -> bool {
        self.output.is_some()
    }

    /// Whether the file holds any pipeline or workload.
    pub fn is_pipeline(&self) -> bool {
        self.docs
            .iter()
            .any(|d| d.skipped_because.is_none() && d.format != "KFP v2 platform spec")
    }

    /// How many components each rule selected.
    pub fn rule_hits(&self, rules: usize) -> Vec<usize> {
        let mut hits = vec![0; rules];
        for d in &self.docs {
            for &i in &d.selected_skipped {
                hits[i] += 1;
            }
            for c in &d.components {
                for (i, v) in c.verdicts.iter().enumerate() {
                    if v.selected() {
                        hits[i] += 1;
                    }
                }
            }
        }
        hits
    }
}

/// What to compute besides the rewrite.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Fill [`ComponentReport::before`] and [`ComponentReport::after`]
    /// (for `explain`); otherwise they are null, which saves time and memory.
    pub details: bool,
    /// Return the reports of a file whose rules cannot be written, with
    /// the errors in [`FileOutcome::errors`] (for `explain`, which shows
    /// what matched even then). Its output is then `None`.
    pub report_errors: bool,
}

/// One input: a name for messages and its bytes.
pub struct Input {
    pub file: String,
    pub bytes: Vec<u8>,
}

/// Processes many files in parallel; results are in input order.
pub fn process_all(
    inputs: &[Input],
    policy: &Policy,
    opts: Options,
) -> Vec<Result<FileOutcome, Vec<Diagnostic>>> {
    if let [one] = inputs {
        // On the calling thread (see `process_with`).
        return vec![process_with(&one.file, &one.bytes, policy, opts)];
    }
    inputs
        .par_iter()
        .map(|i| process_with(&i.file, &i.bytes, policy, opts))
        .collect()
}

/// `rule "a" selects` / `rules "a", "b" select`, for quoted rule names.
fn rules_select(rules: &[String]) -> String {
    match rules {
        [one] => format!("rule {one} selects"),
        _ => format!("rules {} select", rules.join(", ")),
    }
}

fn diag_at(tree: &Tree, file: &str, offset: usize, path: &str, message: String) -> Diagnostic {
    let (line, col) = kfsched_yaml::tree::line_col(tree.src(), offset);
    Diagnostic {
        file: file.to_string(),
        line,
        col,
        path: path.to_string(),
        message,
    }
}

/// Whether a document is JSON that has to stay JSON: its root is a flow
/// mapping (`{"pipelineInfo": ...}`, as `json.dump` and `kubectl get -o json`
/// write) and the file is not named `.yaml`/`.yml` (a `.json` file, or
/// stdin), so a second YAML document would make it unreadable as JSON.
fn is_json_file(tree: &Tree, root: NodeId, file: &str) -> bool {
    let n = tree.node(root);
    n.kind == Kind::Map
        && n.style == Style::Flow
        && !(file.ends_with(".yaml") || file.ends_with(".yml"))
}

/// The refusal of a YAML merge key `key` (see [`Tree::merge_keys`]).
pub(crate) fn merge_key_error(tree: &Tree, file: &str, key: NodeId) -> Diagnostic {
    let path = tree.parent(key).map_or_else(String::new, |m| tree.path(m));
    diag_at(
        tree,
        file,
        tree.node(key).start as usize,
        &path,
        "YAML merge key `<<`: kfsched does not expand merge keys, so it would miss the merged fields and override them with the ones it writes; write the merged keys out in this map; nothing was written".to_string(),
    )
}

/// Rewrites one file's text under a policy.
pub fn process(file: &str, bytes: &[u8], policy: &Policy) -> Result<FileOutcome, Vec<Diagnostic>> {
    process_with(
        file,
        bytes,
        policy,
        Options {
            details: true,
            report_errors: false,
        },
    )
}

/// Rewrites one file's text under a policy, with [`Options`].
pub fn process_with(
    file: &str,
    bytes: &[u8],
    policy: &Policy,
    opts: Options,
) -> Result<FileOutcome, Vec<Diagnostic>> {
    let text = decode_utf8(file, bytes).map_err(|d| vec![d])?;
    if text.trim().is_empty() {
        return Ok(FileOutcome {
            file: file.to_string(),
            output: None,
            docs: vec![DocReport::skipped_file("empty file")],
            warnings: vec![],
            errors: vec![],
        });
    }
    if let Some(Projection { value, end, splits }) = skim_kfp_v2(text) {
        // The pipeline document is only read: take what is needed from the
        // skimmed projection while its syntax is checked beside it (see
        // `check_pieces`). If the check fails, the full parse below reports
        // the error exactly.
        // The processing runs on this thread and the check beside it: the
        // allocations then stay in this thread's allocator arena (a second
        // arena would keep its freed pages and add to the peak RSS).
        let process = || process_parsed(file, text, bytes, policy, opts, Some((value, end)));
        let check = || check_pieces(text, end, &splits);
        let (result, syntax_ok) = if rayon::current_thread_index().is_some() {
            rayon::join(process, check)
        } else {
            std::thread::scope(|s| {
                let checker = s.spawn(check);
                let result = process();
                (result, checker.join().unwrap_or(false))
            })
        };
        if syntax_ok {
            return result;
        }
    }
    process_parsed(file, text, bytes, policy, opts, None)
}

/// The projection of an SDK-written KFP v2 pipeline document, when the file is one.
fn skim_kfp_v2(text: &str) -> Option<Projection> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = body
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))?;
    if ![
        "components:",
        "deploymentSpec:",
        "pipelineInfo:",
        "root:",
        "schemaVersion:",
        "sdkVersion:",
    ]
    .iter()
    .any(|k| first.starts_with(k))
    {
        return None;
    }
    let p = skim::project(text, kfp_v2::PROJECTION)?;
    let v = &p.value;
    let sdk = v
        .get("sdkVersion")
        .and_then(Value::as_str)
        .is_some_and(|s| s.starts_with("kfp-"));
    (sdk && v.get("pipelineInfo").is_some()
        && v.get("root").is_some()
        && v.get("deploymentSpec").is_some())
    .then_some(p)
}

/// Checks the syntax of the skimmed document in pieces that parse on their
/// own: quickly where the text is plain PyYAML output, else with the parser.
fn check_pieces(text: &str, end: usize, splits: &[(usize, u8)]) -> bool {
    let target = (end / 8).max(16 * 1024);
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let mut start = 0usize;
    let mut depth = 1u8;
    for &(off, d) in splits {
        if off == 0 {
            continue;
        }
        if d < depth || off - start >= target {
            pieces.push((start, off));
            start = off;
            depth = d;
        }
    }
    pieces.push((start, end));
    // The quick check runs here, beside the processing; only the pieces it
    // does not recognise go to the parser, on all cores.
    pieces.retain(|&(a, b)| !kfsched_yaml::quick::accepts(&text[a..b]));
    pieces.is_empty() || pieces.par_iter().all(|&(a, b)| check_syntax(&text[a..b]))
}

fn process_parsed(
    file: &str,
    text: &str,
    bytes: &[u8],
    policy: &Policy,
    opts: Options,
    head: Option<(Value, usize)>,
) -> Result<FileOutcome, Vec<Diagnostic>> {
    let base = head.as_ref().map_or(0, |h| h.1);
    let skimmed = head.is_some();
    let tree = match Tree::parse_from(text, base) {
        Ok(t) => t,
        // A Helm chart's `templates/*.yaml` is not YAML until rendered;
        // a hook over every `*.yaml` meets it. Skipped, with a warning.
        Err(_) if let Some(at) = go_template_action(text) => {
            let (line, col) = kfsched_yaml::tree::line_col(text, at);
            let action: String = text[at..]
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(60)
                .collect();
            return Ok(FileOutcome {
                file: file.to_string(),
                output: None,
                docs: vec![DocReport::skipped_file(
                    "a Go (Helm) template, not YAML until rendered",
                )],
                warnings: vec![Diagnostic {
                    file: file.to_string(),
                    line,
                    col,
                    path: String::new(),
                    message: format!(
                        "skipped: a Go (Helm) template, which is not YAML until rendered (`{}`); rewrite the rendered output (`helm template ... | kubectl kfsched rewrite`), or exclude the templates from the run",
                        action.trim_end()
                    ),
                }],
                errors: vec![],
            });
        }
        Err(e) => {
            return Err(vec![Diagnostic {
                file: file.to_string(),
                line: e.line,
                col: e.col,
                path: e.path.clone(),
                message: format!("invalid YAML: {}; nothing was written", e.message),
            }]);
        }
    };
    let to_diag = |(node, msg): (NodeId, String)| {
        let n = tree.node(node);
        vec![diag_at(
            &tree,
            file,
            n.start as usize,
            &tree.path(node),
            msg,
        )]
    };
    let docs = match head {
        None => format::detect(&tree).map_err(to_diag)?,
        Some((value, _)) => {
            let roots: Vec<Option<NodeId>> = tree.documents.iter().map(|d| d.root).collect();
            let platform = roots.first().copied().flatten().filter(|&r| {
                tree.kind(r) == Kind::Map
                    && tree.get_value(r, "platforms").is_some()
                    && tree.get_value(r, "pipelineInfo").is_none()
            });
            // The tree starts after the skimmed pipeline: its first
            // document (if any) is the next one.
            let next = (!tree.documents.is_empty()).then_some(0);
            let mut docs = vec![Doc::KfpV2(kfp_v2::Pipeline::parse(&value, next, platform))];
            drop(value);
            let rest = if platform.is_some() {
                &roots[1..]
            } else {
                &roots[..]
            };
            if platform.is_some() {
                docs.push(Doc::KfpV2Platform);
            }
            let first = roots.len() - rest.len();
            docs.extend(format::detect_roots_from(&tree, rest, first).map_err(to_diag)?);
            docs
        }
    };
    // YAML 1.1 merge keys (`<<: *base`): the readers see only the keys
    // written in a map, so a merged field would be missed, and one written
    // next to the merge would override it. Refused in every document kfsched
    // reads.
    // The skimmed pipeline is docs[0] and not in the tree.
    let skimmed_docs = usize::from(skimmed);
    let merges: Vec<Diagnostic> = tree
        .merge_keys()
        .into_iter()
        .filter(|&(i, _)| {
            !matches!(
                docs.get(i + skimmed_docs),
                None | Some(Doc::Other(_) | Doc::Unsupported { .. })
            )
        })
        .map(|(_, k)| merge_key_error(&tree, file, k))
        .collect();
    if !merges.is_empty() {
        return Err(merges);
    }
    // The root of each document in `docs`: the skimmed pipeline has none
    // in the tree.
    let roots: Vec<Option<NodeId>> = std::iter::repeat_n(None, skimmed_docs)
        .chain(tree.documents.iter().map(|d| d.root))
        .collect();
    let mut editor = Editor::new(&tree, Flavor::KfpV2);
    let Planned {
        reports,
        errors,
        warnings,
    } = plan(&tree, &docs, &roots, policy, file, opts, &mut editor);

    if !errors.is_empty() {
        if opts.report_errors {
            return Ok(FileOutcome {
                file: file.to_string(),
                output: None,
                docs: reports,
                warnings,
                errors,
            });
        }
        return Err(errors);
    }
    let first = editor.first_offset().unwrap_or(0);
    let appends_only = editor.only_appends_documents();
    let output = if editor.is_empty() {
        None
    } else {
        let out = editor
            .finish()
            .map_err(|e| vec![diag_at(&tree, file, e.offset, &e.path, e.message)])?;
        // Splices into existing text are re-parsed from the start of the
        // first edited document: a rewrite must never produce YAML that does
        // not parse. A whole appended document is the emitter's own output,
        // whose round trip the emitter's tests and fuzz target check.
        if !appends_only {
            let start = tree
                .documents
                .iter()
                .enumerate()
                // Strictly before: text inserted at the very start of a
                // `---` marker ends the document before it.
                .filter(|(i, d)| *i > 0 && d.explicit_start && (d.start as usize) < first)
                .map(|(_, d)| d.start as usize)
                .next_back()
                .unwrap_or(if skimmed { base } else { 0 });
            verify(file, &out, start)?;
        }
        Some(out)
    };
    Ok(FileOutcome {
        file: file.to_string(),
        output: output.filter(|o| o.as_bytes() != bytes),
        docs: reports,
        warnings,
        errors: vec![],
    })
}

/// What planning found: the reports, and the problems.
pub(crate) struct Planned {
    pub reports: Vec<DocReport>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
}

/// Matches rules to the components of `docs`, merges, and queues the edits
/// in `editor`. Used for files and for the items of a KRM ResourceList.
/// `roots[i]` is the root node of `docs[i]` (for the indentation of text
/// inserted into it).
pub(crate) fn plan(
    tree: &Tree,
    docs: &[Doc],
    roots: &[Option<NodeId>],
    policy: &Policy,
    file: &str,
    opts: Options,
    editor: &mut Editor,
) -> Planned {
    plan_docs(tree, docs, roots, policy, file, opts, editor, None)
}

/// [`plan`], for the documents of a file (`list` is `None`) or the items of
/// the `v1 List` that is document `list` (each item planned like a
/// document; the List's report holds all their components).
#[allow(clippy::too_many_arguments)]
fn plan_docs(
    tree: &Tree,
    docs: &[Doc],
    roots: &[Option<NodeId>],
    policy: &Policy,
    file: &str,
    opts: Options,
    editor: &mut Editor,
    list: Option<usize>,
) -> Planned {
    let mut errors: Vec<Diagnostic> = Vec::new();
    let mut warnings: Vec<Diagnostic> = Vec::new();
    let mut reports = Vec::new();
    let mut file_style: Option<kfsched_yaml::BlockStyle> = None;
    for (index, doc) in docs.iter().enumerate() {
        if let Doc::List(l) = doc {
            let inner = plan_docs(
                tree,
                &l.items,
                &l.roots,
                policy,
                file,
                opts,
                editor,
                Some(index),
            );
            errors.extend(inner.errors);
            warnings.extend(inner.warnings);
            let mut report = DocReport {
                index,
                format: doc.format_name(),
                skipped_because: None,
                components: Vec::new(),
                skipped: Vec::new(),
                selected_skipped: Vec::new(),
            };
            for r in inner.reports {
                report.components.extend(r.components);
                report.skipped.extend(r.skipped);
                report.selected_skipped.extend(r.selected_skipped);
            }
            reports.push(report);
            continue;
        }
        let comps = doc.components();
        let mut report = DocReport {
            index,
            format: doc.format_name(),
            skipped_because: match doc {
                Doc::Other(why) => Some(why.clone()),
                Doc::Unsupported { why, .. } => Some(why.to_string()),
                _ => None,
            },
            components: Vec::with_capacity(comps.len()),
            skipped: doc.skipped().to_vec(),
            selected_skipped: Vec::new(),
        };
        if comps.is_empty() {
            if let Doc::Unsupported { why, fix } = doc {
                let at = roots
                    .get(index)
                    .copied()
                    .flatten()
                    .map_or(0, |r| tree.node(r).start as usize);
                warnings.push(diag_at(
                    tree,
                    file,
                    at,
                    "",
                    match list {
                        None => format!("document {}: skipped: {why}; {fix}", index + 1),
                        Some(d) => format!(
                            "document {}, item {}: skipped: {why}; {fix}",
                            d + 1,
                            index + 1
                        ),
                    },
                ));
            }
            reports.push(report);
            continue;
        }
        // An object a controller manages (a Deployment's ReplicaSet, its
        // Pods, a CronJob's Job): the controller recreates it from its own
        // template, so the owner is what to rewrite.
        // A CronWorkflow's Workflow likewise.
        if let Some((owner, at)) = doc.owner() {
            let reason = format!(
                "its controller, {owner}, makes it from its own template: rewrite that (or its own controller) instead"
            );
            report.selected_skipped = policy
                .rules
                .iter()
                .enumerate()
                .filter(|(_, r)| comps.iter().any(|c| r.judge(&c.subject()).selected()))
                .map(|(i, _)| i)
                .collect();
            let rules: Vec<String> = report
                .selected_skipped
                .iter()
                .map(|&i| format!("{:?}", policy.rules[i].name))
                .collect();
            if !rules.is_empty() {
                warnings.push(diag_at(
                    tree,
                    file,
                    tree.node(*at).start as usize,
                    &tree.path(*at),
                    format!(
                        "{}: skipped: {reason} ({} it)",
                        doc.label(),
                        rules_select(&rules)
                    ),
                ));
            }
            report.skipped.extend(comps.iter().map(|c| Skipped {
                label: c.label.clone(),
                reason: reason.clone(),
            }));
            reports.push(report);
            continue;
        }
        let shape = doc.shape();
        let target = doc.sched_target();
        let mut changes: Vec<Change> = Vec::with_capacity(comps.len());
        let mut selected_any = false;
        let mut verdict_table: Vec<Vec<Verdict>> = Vec::with_capacity(comps.len());
        for comp in comps {
            let subject = comp.subject();
            let verdicts: Vec<Verdict> = policy.rules.iter().map(|r| r.judge(&subject)).collect();
            let before = doc.read(tree, comp);
            let mut after = before.clone();
            let mut changed = Changed::default();
            let mut comp_warnings = Vec::new();
            let runtime = before.runtime_values();
            if !runtime.is_empty() {
                comp_warnings.push(format!(
                    "{} set from pipeline parameters at run time: kfsched cannot check {} offline, \
                     and the driver may schedule this task differently from the result shown",
                    runtime.join(", "),
                    if runtime.len() == 1 { "it" } else { "them" }
                ));
            }
            for (rule, v) in policy.rules.iter().zip(&verdicts) {
                if !v.selected() {
                    continue;
                }
                selected_any = true;
                let (c, notes) = crate::merge::apply(&mut after, rule, shape, target);
                changed = Changed {
                    tolerations: changed.tolerations || c.tolerations,
                    node_selector: changed.node_selector || c.node_selector,
                    required: changed.required || c.required,
                    preferred: changed.preferred || c.preferred,
                    pod_affinity: changed.pod_affinity || c.pod_affinity,
                    labels: changed.labels || c.labels,
                    annotations: changed.annotations || c.annotations,
                    replaced_affinity: changed.replaced_affinity || c.replaced_affinity,
                };
                for n in notes {
                    if n.error {
                        let msg = format!(
                            "rule {:?} selects {} in {file}, and {}",
                            rule.name, comp.label, n.message
                        );
                        errors.push(policy.rule_diag(rule, n.field, msg));
                    } else {
                        let w = format!("rule {:?}: {}", rule.name, n.message);
                        comp_warnings.push(w.clone());
                        warnings.push(Diagnostic::file(file, format!("{}: {w}", comp.label)));
                    }
                }
            }
            crate::merge::settle(&mut after, &before, &mut changed);
            report.components.push(ComponentReport {
                label: comp.label.clone(),
                kind: comp.kind.clone(),
                pipeline: comp.pipeline.clone(),
                // Only `explain` shows them.
                names: if opts.details {
                    comp.names.clone()
                } else {
                    Vec::new()
                },
                images: if opts.details {
                    comp.images.clone()
                } else {
                    Vec::new()
                },
                verdicts: verdicts.clone(),
                before: if opts.details {
                    before.to_json()
                } else {
                    serde_json::Value::Null
                },
                after: if opts.details {
                    after.to_json()
                } else {
                    serde_json::Value::Null
                },
                changed: changed.any(),
                warnings: comp_warnings,
            });
            verdict_table.push(verdicts);
            if changed.any() {
                changes.push(Change {
                    component: comp,
                    before,
                    after,
                    changed,
                });
            }
        }
        // Argo: scheduling on templateDefaults or DAG/steps templates.
        if let (Doc::Argo(w), true) = (doc, selected_any) {
            if let Some((node, msg)) = &w.refusal {
                let rules: Vec<String> = policy
                    .rules
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| verdict_table.iter().any(|v| v[*i].selected()))
                    .map(|(_, r)| format!("{:?}", r.name))
                    .collect();
                errors.push(diag_at(
                    tree,
                    file,
                    tree.node(*node).start as usize,
                    &tree.path(*node),
                    format!(
                        "{msg} ({} components of this workflow); nothing was written",
                        rules_select(&rules)
                    ),
                ));
            }
        }
        // KFP v2: a rule must select all or none of the tasks sharing an executor.
        if let Doc::KfpV2(p) = doc {
            for (label, tasks) in p.executor_tasks.iter().filter(|(_, t)| t.len() > 1) {
                for (ri, rule) in policy.rules.iter().enumerate() {
                    let sel: Vec<&usize> = tasks
                        .iter()
                        .filter(|&&t| verdict_table[t][ri].selected())
                        .collect();
                    if !sel.is_empty() && sel.len() < tasks.len() {
                        let other = tasks
                            .iter()
                            .find(|t| !sel.contains(t))
                            .copied()
                            .unwrap_or(0);
                        errors.push(policy.rule_diag(
                            rule,
                            "match",
                            format!(
                                "rule {:?} selects {} but not {} in {file}; both run executor {label:?}, whose Kubernetes config they share: select both or neither (or compile the pipeline so each task has its own executor)",
                                rule.name, comps[*sel[0]].label, comps[other].label
                            ),
                        ));
                    }
                }
            }
        }
        reports.push(report);
        if changes.is_empty() || !errors.is_empty() {
            continue;
        }
        // Hand-written documents get inserted text in their own indentation.
        let flavor = match doc.flavor(kfsched_yaml::BlockStyle::default()) {
            Flavor::Generic(_) => {
                let file_style =
                    *file_style.get_or_insert_with(|| kfsched_yaml::BlockStyle::detect(tree));
                doc.flavor(match roots.get(index).copied().flatten() {
                    Some(root) => kfsched_yaml::BlockStyle::detect_under(tree, root, file_style),
                    None => file_style,
                })
            }
            sdk => sdk,
        };
        if let (Doc::KfpV2(p), Some(Some(root))) = (doc, roots.get(index)) {
            if p.platform.is_none() && is_json_file(tree, *root, file) {
                errors.push(diag_at(
                    tree,
                    file,
                    tree.node(*root).start as usize,
                    "",
                    "this KFP v2 pipeline is JSON, and its scheduling would go into a second YAML document (the platform spec), which a JSON file cannot hold; the KFP SDK refuses too (\"Platform-specific features are only supported when serializing to YAML\"): compile the pipeline to a .yaml file; nothing was written".into(),
                ));
                continue;
            }
        }
        editor.set_flavor(flavor);
        let edits = format::write(tree, doc, flavor, &changes);
        // The edits carry what they need; free the merged scheduling first.
        drop(changes);
        for edit in edits {
            if let Err(e) = editor.apply(edit) {
                let d = diag_at(
                    tree,
                    file,
                    e.offset,
                    &e.path,
                    format!("{}; nothing was written", e.message),
                );
                // Several edits of one refused value give one error.
                if !errors.contains(&d) {
                    errors.push(d);
                }
            }
        }
    }
    Planned {
        reports,
        errors,
        warnings,
    }
}

/// The offset of the first Go template action (`{{ .Values.x }}`,
/// `{{- if ... }}`, `{{/* ... */}}`) in `text`. Argo's own `{{inputs.x}}`
/// and `{{=expr}}` tags are not Go actions: a workflow with a YAML error is
/// still an error.
fn go_template_action(text: &str) -> Option<usize> {
    const WORDS: &[&str] = &[
        "if ",
        "else",
        "end",
        "range ",
        "with ",
        "define ",
        "template ",
        "block ",
        "include ",
        "toYaml ",
        "tpl ",
        "required ",
        "default ",
        "quote ",
        "printf ",
        "$",
    ];
    let mut from = 0;
    while let Some(p) = text[from..].find("{{") {
        let at = from + p;
        let rest = &text[at + 2..];
        let rest = rest.strip_prefix('-').unwrap_or(rest);
        let inner = rest.trim_start_matches([' ', '\t']);
        let spaced = inner.len() < rest.len();
        let closes = rest.lines().next().is_some_and(|l| l.contains("}}"));
        if (inner.starts_with("/*")
            || inner.starts_with('.') && (spaced || rest.starts_with('.'))
            || spaced && WORDS.iter().any(|w| inner.starts_with(w)))
            && (closes || inner.starts_with("/*"))
        {
            return Some(at);
        }
        from = at + 2;
    }
    None
}

/// Checks that the rewritten text parses from `start` on.
fn verify(file: &str, out: &str, start: usize) -> Result<(), Vec<Diagnostic>> {
    let start = if out.is_char_boundary(start) {
        start
    } else {
        0
    };
    match Tree::parse(&out[start..]) {
        Ok(_) => Ok(()),
        Err(e) => Err(vec![Diagnostic::file(
            file,
            format!(
                "internal error: the rewritten text does not parse ({e}); nothing was written. Please report this with the input file and policy"
            ),
        )]),
    }
}

#[cfg(test)]
mod template_tests {
    use super::go_template_action;

    #[test]
    fn go_template_actions_are_told_from_argo_tags() {
        for helm in [
            "{{- if .Values.enabled }}",
            "name: {{ .Release.Name }}",
            "name: {{.Release.Name}}",
            "{{/* a comment */}}",
            "{{ include \"x\" . | nindent 4 }}",
            "{{- range $k, $v := .Values.m }}",
            "{{ $x := 1 }}",
            "{{- end }}",
        ] {
            assert!(go_template_action(helm).is_some(), "{helm}");
        }
        for argo in [
            "args: [\"{{inputs.parameters.x}}\"]",
            "value: \"{{workflow.name}}\"",
            "when: \"{{steps.flip.outputs.result}} == heads\"",
            "value: \"{{=sprig.upper(inputs.parameters.x)}}\"",
            "value: \"{{ inputs.parameters.x }}\"",
            "value: \"{{item}}\"",
            "{{",
        ] {
            assert_eq!(go_template_action(argo), None, "{argo}");
        }
    }
}
