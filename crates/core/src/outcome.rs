//! What processing a file found: per document and component, what the
//! rules did and why (what `explain` and KRM results show), the rewritten
//! text when it changed, and the file's warnings and errors.

use crate::diag::Diagnostic;
use crate::format::Skipped;
use crate::matching::Verdict;

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
