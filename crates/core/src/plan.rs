//! Planning: for each document of a file (or item of a `v1 List` or KRM
//! ResourceList), judge every rule against every component, merge the
//! selected rules into the component's scheduling, and queue the edits that
//! write the changed components. Errors that come from a rule meeting a
//! file (a field the format cannot hold, a shared KFP v2 executor) point at
//! the rule in the policy. The planner never touches text: the editor does.

use std::sync::Arc;

use kfsched_yaml::BlockStyle;
use kfsched_yaml::Value;
use kfsched_yaml::edit::{Edit, Editor, Flavor, Placement};
use kfsched_yaml::tree::{Kind, NodeId, Style, Tree};
use kfsched_yaml::value::node_value;

use crate::diag::Diagnostic;
use crate::format::kfp_v2::Pipeline;
use crate::format::pipeline_version::{Manifest, SERVER_FIELDS};
use crate::format::{self, Change, Component, Doc, Skipped, Write};
use crate::matching::Verdict;
use crate::merge;
use crate::outcome::{ComponentReport, DocReport, Options};
use crate::policy::Policy;
use crate::scheduling::{Changed, Sched};

/// What planning found: the reports, and the problems.
#[derive(Default)]
pub(crate) struct Planned {
    pub reports: Vec<DocReport>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    /// Of `errors`, those of a rule that selects some of the callers of a
    /// shared Argo template (see [`shared_templates`]).
    pub ambiguous: Vec<Diagnostic>,
}

/// The file being planned and what it is planned against.
struct Ctx<'a, 't> {
    tree: &'a Tree<'t>,
    policy: &'a Policy,
    file: &'a str,
    opts: &'a Options,
    /// Whether kubectl or kustomize wrote the file (see
    /// [`format::written_by_go`]), found out when first needed.
    go_written: std::cell::OnceCell<bool>,
    /// The whole file's indentation (see [`BlockStyle::detect`]), found
    /// out when a hand-written document is first written: once per file,
    /// however many `v1 List`s it holds.
    file_style: std::cell::OnceCell<BlockStyle>,
    /// Whether components' pod labels and annotations are read: when a
    /// rule sets some, or for `explain`.
    metadata: bool,
}

impl Ctx<'_, '_> {
    fn diag_at(&self, offset: usize, path: &str, message: String) -> Diagnostic {
        Diagnostic::at(self.tree, self.file, offset, path, message)
    }

    /// A diagnostic at `node`.
    fn diag_node(&self, node: NodeId, message: String) -> Diagnostic {
        self.diag_at(
            self.tree.node(node).start as usize,
            &self.tree.path(node),
            message,
        )
    }
}

/// Plans the documents of one file: matches rules to their components,
/// merges, and queues the edits in an editor. What is found out once per
/// file (its indentation, who wrote it) is kept between calls, so the items
/// of a KRM ResourceList can be planned one at a time, each with its own
/// errors and warnings, at the cost of one file.
pub(crate) struct Planner<'a, 't>(Ctx<'a, 't>);

impl<'a, 't> Planner<'a, 't> {
    pub(crate) fn new(
        tree: &'a Tree<'t>,
        policy: &'a Policy,
        file: &'a str,
        opts: &'a Options,
    ) -> Self {
        Planner(Ctx::new(tree, policy, file, opts))
    }

    /// Plans `docs`, queuing their edits in `editor`. Used for files and
    /// for the items of a KRM ResourceList. `roots[i]` is the root node of
    /// `docs[i]` (for the indentation of text inserted into it).
    pub(crate) fn plan(
        &self,
        docs: &[Doc],
        roots: &[Option<NodeId>],
        editor: &mut Editor,
    ) -> Planned {
        let mut planned = Planned::default();
        plan_docs(&self.0, docs, roots, editor, &mut planned);
        planned
    }
}

impl<'a, 't> Ctx<'a, 't> {
    fn new(tree: &'a Tree<'t>, policy: &'a Policy, file: &'a str, opts: &'a Options) -> Self {
        Ctx {
            tree,
            policy,
            file,
            opts,
            go_written: std::cell::OnceCell::new(),
            file_style: std::cell::OnceCell::new(),
            metadata: opts.details
                || policy
                    .rules
                    .iter()
                    .any(|r| !r.pod_labels.is_empty() || !r.pod_annotations.is_empty()),
        }
    }
}

/// [`Planner::plan`], for the documents of a file or the items of a `v1 List`
/// (each item planned like a document).
fn plan_docs(
    ctx: &Ctx,
    docs: &[Doc],
    roots: &[Option<NodeId>],
    editor: &mut Editor,
    out: &mut Planned,
) {
    for (index, doc) in docs.iter().enumerate() {
        if let Doc::List(l) = doc {
            let report = plan_list(ctx, index, doc, l, editor, out);
            out.reports.push(report);
            continue;
        }
        let root = roots.get(index).copied().flatten();
        let mut report = DocReport {
            index,
            format: doc.format_name(),
            skipped_because: match doc {
                Doc::Other(why) => Some(why.clone()),
                _ => None,
            },
            components: Vec::new(),
            skipped: doc.skipped().to_vec(),
            selected_skipped: Vec::new(),
        };
        if doc.components().is_empty() {
            out.reports.push(report);
            continue;
        }
        if let Doc::Workload(w) = doc {
            if let Some((_, admitted)) = &w.pipeline_pod {
                pipeline_pod(ctx, doc, admitted.as_deref(), &mut report, out);
                out.reports.push(report);
                continue;
            }
        }
        if let Some((owner, at)) = doc.owner() {
            skip_owned(ctx, doc, owner, *at, &mut report, out);
            out.reports.push(report);
            continue;
        }
        let (changes, verdicts) = plan_components(ctx, doc, &mut report, out);
        let selected_any = verdicts.iter().flatten().any(Verdict::selected);
        if let (Doc::Argo(w), true) = (doc, selected_any) {
            if let Some((node, msg)) = &w.refusal {
                let rules = rule_names(ctx.policy, |i| verdicts.iter().any(|v| v[i].selected()));
                out.errors.push(ctx.diag_node(
                    *node,
                    format!(
                        "{msg} ({} components of this workflow)",
                        rules_select(&rules)
                    ),
                ));
            }
        }
        if let Doc::KfpV2(p) = doc {
            shared_executors(ctx, p, doc.components(), &verdicts, out);
        }
        if let Doc::Argo(w) = doc {
            shared_templates(ctx, w, out);
        }
        let changed: Vec<bool> = report.components.iter().map(|c| c.changed).collect();
        out.reports.push(report);
        // Once an error is found nothing is written; later documents are
        // still planned, for their errors.
        if changes.is_empty() || !out.errors.is_empty() {
            continue;
        }
        write_doc(ctx, doc, root, changes, editor, out);
        if let Doc::KfpV2(Pipeline {
            manifest: Some(m), ..
        }) = doc
        {
            let rules = rule_names(ctx.policy, |i| {
                verdicts
                    .iter()
                    .zip(&changed)
                    .any(|(v, changed)| *changed && v[i].selected())
            });
            new_version(ctx, m, &rules, editor, out);
        }
    }
}

/// A KFP PipelineVersion whose spec changes: KFP keeps a stored version's
/// spec immutable, so with `--version-suffix` it gets a new name (and
/// `spec.versionName` when set), and loses the metadata the API server set,
/// which a create refuses; without, a version read back from a cluster gets
/// a warning that says so.
fn new_version(ctx: &Ctx, m: &Manifest, rules: &[String], editor: &mut Editor, out: &mut Planned) {
    let tree = ctx.tree;
    let name_node = m.metadata.and_then(|md| tree.get_value(md, "name"));
    let at = name_node.unwrap_or(m.root);
    let Some(suffix) = &ctx.opts.version_suffix else {
        if m.from_cluster {
            out.warnings.push(ctx.diag_node(
                at,
                format!(
                    "PipelineVersion {:?}: its spec changes ({} it), and KFP keeps a stored version's spec immutable, so replacing it will be refused: give the rewritten version a new name with --version-suffix SUFFIX and create it",
                    m.name.as_deref().unwrap_or(""),
                    rules_select(rules)
                ),
            ));
        }
        return;
    };
    let (Some(md), Some(name)) = (m.metadata, m.name.as_deref()) else {
        out.errors.push(
            ctx.diag_node(
                at,
                "--version-suffix: this PipelineVersion has no metadata.name to add the suffix to"
                    .into(),
            ),
        );
        return;
    };
    let new_name = format!("{name}-{suffix}");
    let problems = crate::k8s::dns1123_subdomain(&new_name);
    if !problems.is_empty() {
        out.errors.push(ctx.diag_node(
            at,
            format!(
                "--version-suffix: the new name {new_name:?} is not a valid object name: {}",
                problems.join("; ")
            ),
        ));
        return;
    }
    let mut desired = node_value(tree, md);
    desired.set("name", Value::str(&new_name));
    for k in SERVER_FIELDS {
        desired.remove(k);
    }
    let mut edits = vec![Edit::Reconcile {
        node: md,
        desired,
        placement: Placement::AsDesired,
    }];
    // KFP names the version by spec.versionName when it is set (a version
    // created through KFP's API has it): it gets the suffix too.
    if let Some(v) = tree.get_value(m.spec, "versionName") {
        if let Some(old) = tree.str_value(v) {
            edits.push(Edit::Reconcile {
                node: v,
                desired: Value::str(format!("{old}-{suffix}")),
                placement: Placement::AsDesired,
            });
        }
    }
    for edit in edits {
        if let Err(e) = editor.apply(edit) {
            out.errors.push(ctx.diag_at(e.offset, &e.path, e.message));
        }
    }
}

/// Plans the items of the `v1 List` that is document `index`; its report
/// holds every item's components.
fn plan_list(
    ctx: &Ctx,
    index: usize,
    doc: &Doc,
    l: &format::List,
    editor: &mut Editor,
    out: &mut Planned,
) -> DocReport {
    let mut inner = Planned::default();
    plan_docs(ctx, &l.items, &l.roots, editor, &mut inner);
    out.errors.extend(inner.errors);
    out.warnings.extend(inner.warnings);
    out.ambiguous.extend(inner.ambiguous);
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
    report
}

/// A pipeline's pod (`kubectl get pod -o yaml` of a pod a workflow made):
/// judged and merged as the exported admission policy would, never
/// written (its workflow made it). Where the pod lacks what the rules
/// that select it give, the report says why admission may not have
/// applied the policy, from the pod's `kfsched.dev/admitted` annotation.
fn pipeline_pod(
    ctx: &Ctx,
    doc: &Doc,
    admitted: Option<&str>,
    report: &mut DocReport,
    out: &mut Planned,
) {
    let (_, verdicts) = plan_components(ctx, doc, report, out);
    let prefix = format!("{}:", ctx.policy.name);
    let entry: Option<Vec<&str>> = admitted.and_then(|a| {
        a.split(';')
            .find_map(|e| e.strip_prefix(prefix.as_str()))
            .map(|rules| rules.split(',').filter(|r| !r.is_empty()).collect())
    });
    for (c, v) in report.components.iter_mut().zip(&verdicts) {
        let rules = rule_names(ctx.policy, |i| v[i].selected());
        if rules.is_empty() || !c.changed {
            continue;
        }
        let policy = &ctx.policy.name;
        let what = match rules.as_slice() {
            [one] => format!("rule {one} asks"),
            many => format!("rules {} ask", many.join(", ")),
        };
        c.warnings.push(match &entry {
            Some(had) => format!(
                "the pod does not carry what {what}, though policy {policy:?} admitted it (with {}): the policy changed after the export on the cluster was made, or a later admission step changed the pod",
                match had.as_slice() {
                    [] => "no rule".to_string(),
                    [one] => format!("rule {one:?}"),
                    many => format!("rules {}", many.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>().join(", ")),
                }
            ),
            None => format!(
                "the pod does not carry what {what}, and policy {policy:?} did not admit it: it was created outside the binding's namespaces, before the export was applied, or under failurePolicy Ignore when the policy failed (or no export of this policy is on the cluster)"
            ),
        });
    }
    let selected = rule_names(ctx.policy, |i| verdicts.iter().any(|v| v[i].selected()));
    // `rewrite` and `diff` say that nothing is written; `explain` shows it.
    if !selected.is_empty() && !ctx.opts.details {
        if let Some(format::Place::Workload(pt)) = doc.components().first().map(|c| &c.place) {
            out.warnings.push(ctx.diag_node(
                pt.template,
                format!(
                    "{}: a pipeline's pod is read as admission reads it and never rewritten ({} it): rewrite the pipeline's file, or export the policy to admission",
                    doc.label(),
                    rules_select(&selected)
                ),
            ));
        }
    }
}

/// An object a controller manages (a Deployment's ReplicaSet, its Pods, a
/// CronJob's Job, a CronWorkflow's Workflow): the controller recreates it
/// from its own template, so the owner is what to rewrite. Its components
/// are skipped, with a warning when a rule selects one.
fn skip_owned(
    ctx: &Ctx,
    doc: &Doc,
    owner: &str,
    at: NodeId,
    report: &mut DocReport,
    out: &mut Planned,
) {
    let comps = doc.components();
    let reason = format!(
        "its controller, {owner}, makes it from its own template: rewrite that (or its own controller) instead"
    );
    report.selected_skipped = ctx
        .policy
        .rules
        .iter()
        .enumerate()
        .filter(|(_, r)| comps.iter().any(|c| r.judge(&c.subject()).selected()))
        .map(|(i, _)| i)
        .collect();
    let rules: Vec<String> = report
        .selected_skipped
        .iter()
        .map(|&i| format!("{:?}", ctx.policy.rules[i].name))
        .collect();
    if !rules.is_empty() {
        out.warnings.push(ctx.diag_node(
            at,
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
}

/// Judges and merges every rule into every component of `doc`, filling
/// `report`; returns the changed components and each component's verdicts.
fn plan_components<'d>(
    ctx: &Ctx,
    doc: &'d Doc,
    report: &mut DocReport,
    out: &mut Planned,
) -> (Vec<Change<'d>>, Vec<Vec<Verdict>>) {
    let comps = doc.components();
    let mut changes: Vec<Change> = Vec::with_capacity(comps.len());
    let mut verdict_table: Vec<Vec<Verdict>> = Vec::with_capacity(comps.len());
    let mut merged = Merges::default();
    report.components.reserve(comps.len());
    for comp in comps {
        let subject = comp.subject();
        let verdicts: Vec<Verdict> = ctx.policy.rules.iter().map(|r| r.judge(&subject)).collect();
        let (component_report, change) =
            plan_component(ctx, doc, comp, &verdicts, &mut merged, out);
        report.components.push(component_report);
        verdict_table.push(verdicts);
        changes.extend(change);
    }
    (changes, verdict_table)
}

/// The rules merged into a component's scheduling.
struct Merged {
    after: Arc<Sched>,
    changed: Changed,
    /// Each rule's notes, by rule index.
    notes: Vec<(usize, merge::Note)>,
}

/// The merges of components that had no scheduling, by the rules that
/// selected them: the result depends on nothing else, so a pipeline of
/// thousands of such tasks merges each set of rules once and its changes
/// share one result.
#[derive(Default)]
struct Merges(Vec<(Vec<bool>, Merged)>);

/// Merges the rules `verdicts` select into `before`.
fn merge_rules(ctx: &Ctx, doc: &Doc, before: &Sched, verdicts: &[Verdict]) -> Merged {
    let mut after = before.clone();
    let mut changed = Changed::default();
    let mut notes = Vec::new();
    let (shape, target) = (doc.shape(), doc.sched_target());
    for (i, (rule, v)) in ctx.policy.rules.iter().zip(verdicts).enumerate() {
        if !v.selected() {
            continue;
        }
        let (c, n) = merge::apply(&mut after, rule, shape, target);
        changed = changed.or(c);
        notes.extend(n.into_iter().map(|n| (i, n)));
    }
    merge::settle(&mut after, before, &mut changed);
    Merged {
        after: Arc::new(after),
        changed,
        notes,
    }
}

/// Merges the rules that selected `comp` (per `verdicts`) into its
/// scheduling: its report, and the change to write when there is one.
fn plan_component<'c>(
    ctx: &Ctx,
    doc: &Doc,
    comp: &'c Component,
    verdicts: &[Verdict],
    merges: &mut Merges,
    out: &mut Planned,
) -> (ComponentReport, Option<Change<'c>>) {
    let before = doc.read(ctx.tree, comp, ctx.metadata);
    let mut warnings = Vec::new();
    let runtime = before.runtime_values();
    if !runtime.is_empty() {
        warnings.push(format!(
            "{} set from pipeline parameters at run time: kfsched cannot check {} offline, \
             and the driver may schedule this task differently from the result shown",
            runtime.join(", "),
            if runtime.len() == 1 { "it" } else { "them" }
        ));
    }
    let owned;
    let merged = if before.is_empty() {
        let selected: Vec<bool> = verdicts.iter().map(Verdict::selected).collect();
        let at = match merges.0.iter().position(|(s, _)| *s == selected) {
            Some(at) => at,
            None => {
                merges
                    .0
                    .push((selected, merge_rules(ctx, doc, &before, verdicts)));
                merges.0.len() - 1
            }
        };
        &merges.0[at].1
    } else {
        owned = merge_rules(ctx, doc, &before, verdicts);
        &owned
    };
    let changed = merged.changed;
    for (i, n) in &merged.notes {
        let rule = &ctx.policy.rules[*i];
        if n.error {
            let msg = format!(
                "rule {:?} selects {} in {}, and {}",
                rule.name, comp.label, ctx.file, n.message
            );
            out.errors.push(ctx.policy.rule_diag(rule, n.field, msg));
        } else {
            warnings.push(format!("rule {:?}: {}", rule.name, n.message));
            // Like an error of a rule meeting a file: at the rule's field.
            let msg = format!(
                "rule {:?} selects {} in {}: {}",
                rule.name, comp.label, ctx.file, n.message
            );
            out.warnings.push(ctx.policy.rule_diag(rule, n.field, msg));
        }
    }
    if changed.any() {
        if let Some((node, msg)) = doc.write_refusal(ctx.tree, comp, changed) {
            let rules = rule_names(ctx.policy, |i| verdicts[i].selected());
            let d = ctx.diag_node(
                node,
                format!(
                    "{}: {msg} ({} it); nothing was written",
                    comp.label,
                    rules_select(&rules)
                ),
            );
            if !out.errors.contains(&d) {
                out.errors.push(d);
            }
        }
    }
    let details = ctx.opts.details;
    // Only `explain` shows names, images and the scheduling before and after.
    let report = ComponentReport {
        label: comp.label.clone(),
        kind: comp.kind.clone(),
        pipelines: comp.pipelines.clone(),
        names: if details {
            comp.names.clone()
        } else {
            Vec::new()
        },
        images: if details {
            comp.images.clone()
        } else {
            Vec::new()
        },
        task_path: comp.task_path.clone(),
        role: comp.role,
        verdicts: verdicts.to_vec(),
        before: if details {
            before.to_json()
        } else {
            serde_json::Value::Null
        },
        after: if details {
            merged.after.to_json()
        } else {
            serde_json::Value::Null
        },
        changed: changed.any(),
        warnings,
    };
    let change = changed
        .any()
        .then(|| Change::new(doc, comp, before, Arc::clone(&merged.after), changed));
    (report, change)
}

/// KFP v2: a rule must select all or none of the tasks sharing an executor.
fn shared_executors(
    ctx: &Ctx,
    p: &format::kfp_v2::Pipeline,
    comps: &[Component],
    verdicts: &[Vec<Verdict>],
    out: &mut Planned,
) {
    for (label, tasks) in p.executor_tasks.iter().filter(|(_, t)| t.len() > 1) {
        for (ri, rule) in ctx.policy.rules.iter().enumerate() {
            let sel: Vec<&usize> = tasks
                .iter()
                .filter(|&&t| verdicts[t][ri].selected())
                .collect();
            if sel.is_empty() || sel.len() == tasks.len() {
                continue;
            }
            let other = tasks
                .iter()
                .find(|t| !sel.contains(t))
                .copied()
                .unwrap_or(0);
            out.errors.push(ctx.policy.rule_diag(
                rule,
                "match",
                format!(
                    "rule {:?} selects {} but not {} in {}; both run executor {label:?}, whose Kubernetes config they share: select both or neither (or compile the pipeline so each task has its own executor)",
                    rule.name, comps[*sel[0]].label, comps[other].label, ctx.file
                ),
            ));
        }
    }
}

/// Argo: a rule must select all or none of the tasks and steps that run
/// one template, since its scheduling is the template's. Each call is
/// judged by the template's own names and that call's name and path.
fn shared_templates(ctx: &Ctx, w: &format::argo::Workflow, out: &mut Planned) {
    for shared in &w.shared {
        let comp = &w.components[shared.component];
        let names: Vec<Vec<String>> = (0..shared.calls.len()).map(|i| shared.names(i)).collect();
        for rule in &ctx.policy.rules {
            let selected: Vec<bool> = names
                .iter()
                .map(|n| {
                    rule.judge(&crate::matching::Subject {
                        names: n,
                        ..comp.subject()
                    })
                    .selected()
                })
                .collect();
            if selected.iter().all(|&s| s) || !selected.iter().any(|&s| s) {
                continue;
            }
            let calls = |pick: bool| -> String {
                let picked: Vec<String> = shared
                    .calls
                    .iter()
                    .zip(&selected)
                    .filter(|(_, s)| **s == pick)
                    .map(|(c, _)| match c.path == c.name {
                        true => format!("{} {:?}", c.role, c.name),
                        false => format!("{} {:?} ({})", c.role, c.name, c.path),
                    })
                    .collect();
                match picked.as_slice() {
                    [one] => one.clone(),
                    [first, rest @ ..] if rest.len() <= 2 => {
                        format!("{first} and {}", rest.join(" and "))
                    }
                    [first, second, rest @ ..] => {
                        format!("{first}, {second} and {} more", rest.len())
                    }
                    [] => String::new(),
                }
            };
            let (what, how) = match shared.common.first() {
                Some(t) => (
                    format!("template {t:?}"),
                    format!("match the template's name {t:?}, or name every caller"),
                ),
                None => (comp.label.clone(), "name every caller".to_string()),
            };
            let d = ctx.policy.rule_diag(
                rule,
                "match",
                format!(
                    "rule {:?} selects {} but not {} in {}; they all run {what}, whose scheduling they share: select all of its callers or none ({how}), or give the selected ones a template of their own",
                    rule.name,
                    calls(true),
                    calls(false),
                    ctx.file
                ),
            );
            out.ambiguous.push(d.clone());
            out.errors.push(d);
        }
    }
}

/// Queues the edits that write the changed components of one document.
fn write_doc(
    ctx: &Ctx,
    doc: &Doc,
    root: Option<NodeId>,
    changes: Vec<Change>,
    editor: &mut Editor,
    out: &mut Planned,
) {
    // Hand-written documents get inserted text in their own indentation; a
    // KFP manifest printed by kubectl or kustomize gets their scalar styles.
    let flavor = match doc.flavor(BlockStyle::default()) {
        Flavor::KfpV2
            if matches!(doc, Doc::KfpV2(p) if p.manifest.is_some())
                && *ctx
                    .go_written
                    .get_or_init(|| format::written_by_go(ctx.tree)) =>
        {
            Flavor::GoYaml
        }
        Flavor::Generic(_) => {
            let file_style = *ctx.file_style.get_or_init(|| BlockStyle::detect(ctx.tree));
            doc.flavor(match root {
                Some(root) => BlockStyle::detect_under(ctx.tree, root, file_style),
                None => file_style,
            })
        }
        sdk => sdk,
    };
    if let (Doc::KfpV2(p), Some(root)) = (doc, root) {
        if p.platform.is_none() && is_json_file(ctx.tree, root, ctx.file) {
            out.errors.push(ctx.diag_at(
                ctx.tree.node(root).start as usize,
                "",
                "this KFP v2 pipeline is JSON, and its scheduling would go into a second YAML document (the platform spec), which a JSON file cannot hold; the KFP SDK refuses too (\"Platform-specific features are only supported when serializing to YAML\"): compile the pipeline to a .yaml file".into(),
            ));
            return;
        }
    }
    editor.set_flavor(flavor);
    format::write(ctx.tree, doc, flavor, changes, &mut |w| match w {
        Write::Edit(edit) => {
            if let Err(e) = editor.apply(edit) {
                let d = ctx.diag_at(e.offset, &e.path, e.message);
                // Several edits of one refused value give one error.
                if !out.errors.contains(&d) {
                    out.errors.push(d);
                }
            }
        }
        Write::Document {
            before,
            path,
            entries,
        } => editor.add_document(before, path, entries),
    });
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

/// The quoted names of the rules whose index passes `pick`.
fn rule_names(policy: &Policy, pick: impl Fn(usize) -> bool) -> Vec<String> {
    policy
        .rules
        .iter()
        .enumerate()
        .filter(|(i, _)| pick(*i))
        .map(|(_, r)| format!("{:?}", r.name))
        .collect()
}

/// `rule "a" selects` / `rules "a", "b" select`, for quoted rule names.
fn rules_select(rules: &[String]) -> String {
    match rules {
        [one] => format!("rule {one} selects"),
        _ => format!("rules {} select", rules.join(", ")),
    }
}
