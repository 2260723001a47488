//! What processing a file found: per document and component, what the
//! rules did and why (what `explain` and KRM results show), the rewritten
//! text when it changed, and the file's warnings and errors; and, over a
//! whole run, the mistakes that do nothing (a rule that selects no
//! component, an input that holds no pipeline), as data for the caller.

use kfsched_yaml::Patch;

use crate::diag::Diagnostic;
use crate::format::Skipped;
use crate::matching::Verdict;
use crate::policy::Policy;

/// What `explain` shows about one component.
#[derive(Clone, Debug)]
pub struct ComponentReport {
    pub label: String,
    pub kind: String,
    pub pipelines: Vec<String>,
    pub names: Vec<String>,
    pub images: Vec<String>,
    /// A KFP v2 task's path (see `format::Component::task_path`).
    pub task_path: Option<String>,
    /// The pod's role (see `format::Component::role`).
    pub role: Option<crate::matching::PodRole>,
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
    pub(crate) fn skipped_file(why: &str) -> DocReport {
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
    /// The rewrite, as splices over the input's bytes, when it differs
    /// from the input: [`Patch::write`] streams the rewritten file,
    /// [`FileOutcome::text`] builds it.
    pub output: Option<Patch>,
    pub docs: Vec<DocReport>,
    pub warnings: Vec<Diagnostic>,
    /// What the rules cannot write here (a field the format cannot hold, a
    /// shared KFP v2 executor...), kept beside the reports only with
    /// [`Options::report_errors`]; otherwise such a file is an `Err`.
    pub errors: Vec<Diagnostic>,
    /// Of [`FileOutcome::errors`], those of a rule that selects some of the
    /// tasks or steps running one Argo template and not the others: the
    /// file cannot say which of their pods the rule means, for admission
    /// either.
    pub ambiguous: Vec<Diagnostic>,
}

impl FileOutcome {
    pub fn changed(&self) -> bool {
        self.output.is_some()
    }

    /// The rewritten text of `input` (the bytes this outcome was made
    /// from), when it changed.
    pub fn text(&self, input: &[u8]) -> Option<String> {
        let src = std::str::from_utf8(input).ok()?;
        self.output.as_ref().map(|p| p.apply(src))
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
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Fill [`ComponentReport::before`] and [`ComponentReport::after`]
    /// (for `explain`); otherwise they are null, which saves time and memory.
    pub details: bool,
    /// Return the reports of a file whose rules cannot be written, with
    /// the errors in [`FileOutcome::errors`] (for `explain`, which shows
    /// what matched even then). Its output is then `None`.
    pub report_errors: bool,
    /// Give each KFP PipelineVersion whose spec changes a new name,
    /// `<name>-<suffix>`, and drop the metadata the API server set, so that
    /// it can be created beside the stored version (KFP keeps a version's
    /// spec immutable).
    pub version_suffix: Option<String>,
}

/// One input: a name for messages and its bytes.
pub struct Input {
    pub file: String,
    pub bytes: Vec<u8>,
}

/// How many components each rule selected, over every file.
pub fn rule_hits(policy: &Policy, outcomes: &[FileOutcome]) -> Vec<usize> {
    let mut hits = vec![0usize; policy.rules.len()];
    for o in outcomes {
        for (h, n) in hits.iter_mut().zip(o.rule_hits(policy.rules.len())) {
            *h += n;
        }
    }
    hits
}

/// The rules that selected no component of `outcomes`, each as a
/// diagnostic at the rule in the policy: at the one `match` (or `exclude`)
/// key that every component failed on, else at the rule. Whether that is a
/// warning or an error is the caller's choice (`--strict`).
pub fn unmatched_rules(policy: &Policy, outcomes: &[FileOutcome]) -> Vec<Diagnostic> {
    let hits = rule_hits(policy, outcomes);
    let verdicts = |i: usize| {
        outcomes
            .iter()
            .flat_map(|o| &o.docs)
            .flat_map(|d| &d.components)
            .filter_map(move |c| c.verdicts.get(i).copied())
    };
    policy
        .rules
        .iter()
        .enumerate()
        .filter(|&(i, rule)| hits[i] == 0 && rule.reaches_files())
        .map(|(i, rule)| {
            let mut all = verdicts(i);
            let first = all.next();
            let same = first.filter(|f| all.all(|v| v == *f));
            let (field, why) = match same {
                None if first.is_none() => (String::new(), " (there is no component)".to_string()),
                Some(Verdict::Unmatched(k)) => (
                    format!("match.{}", k.name()),
                    format!(" (its match.{0} matches none of their {0})", k.name()),
                ),
                Some(Verdict::Excluded(k)) => (
                    format!("exclude.{}", k.name()),
                    format!(" (its exclude.{} leaves out every component it matches)", k.name()),
                ),
                _ => ("match".to_string(), String::new()),
            };
            policy.rule_diag(
                rule,
                &field,
                format!(
                    "rule {:?} matched no component{why}; `kubectl kfsched explain` lists every component with the names a rule can match",
                    rule.name
                ),
            )
        })
        .collect()
}

/// A command-line input (a file, `-` or a directory: `outcomes` are its
/// files) that holds no pipeline or workload, as a diagnostic naming it;
/// `None` when it holds one, or when each of its files was already
/// reported as skipped with a warning (a Helm template).
pub fn empty_input(name: &str, outcomes: &[&FileOutcome], directory: bool) -> Option<Diagnostic> {
    if outcomes.iter().any(|o| o.is_pipeline())
        || (!outcomes.is_empty() && outcomes.iter().all(|o| !o.warnings.is_empty()))
    {
        return None;
    }
    let mut reasons: Vec<&str> = Vec::new();
    for d in outcomes.iter().flat_map(|o| &o.docs) {
        let why = d
            .skipped_because
            .as_deref()
            .unwrap_or("a KFP v2 platform spec without its pipeline");
        if !reasons.contains(&why) {
            reasons.push(why);
        }
    }
    let shown = match reasons.len() {
        0 => String::new(),
        1..=3 => format!(" ({})", reasons.join("; ")),
        n => format!(" ({}; and {} more)", reasons[..3].join("; "), n - 3),
    };
    let what = if directory {
        format!(
            "none of the {} file{} under it holds a pipeline or workload",
            outcomes.len(),
            if outcomes.len() == 1 { "" } else { "s" }
        )
    } else {
        "holds no pipeline or workload".to_string()
    };
    Some(Diagnostic::file(
        name,
        format!(
            "{what}{shown}, so nothing in it can change; kfsched reads KFP v2 IR, KFP PipelineVersions, Argo workflows (KFP v1) and pod-creating workloads"
        ),
    ))
}
