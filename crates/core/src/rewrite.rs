//! One file through the whole flow: read → detect → components → match →
//! merge → plan edits → apply to the original bytes → verify → report.
//!
//! Synchronous and pure: bytes in, bytes and a report out. The binary does
//! the file system and the printing; many files run in parallel.

use rayon::prelude::*;

use kfsched_yaml::Value;
use kfsched_yaml::edit::{Editor, Flavor};
use kfsched_yaml::tree::{Kind, NodeId, Tree};

use crate::diag::{Diagnostic, decode_utf8};
use crate::format::{self, Doc, kfp_v2};
pub use crate::outcome::{ComponentReport, DocReport, FileOutcome, Input, Options};
use crate::plan::{Planned, plan};
use crate::policy::Policy;
use crate::{fastpath, helm};

/// Processes many files in parallel; results are in input order.
pub fn process_all(
    inputs: &[Input],
    policy: &Policy,
    opts: &Options,
) -> Vec<Result<FileOutcome, Vec<Diagnostic>>> {
    if let [one] = inputs {
        // On the calling thread (see `fastpath::run`).
        return vec![process_with(&one.file, &one.bytes, policy, opts)];
    }
    inputs
        .par_iter()
        .map(|i| process_with(&i.file, &i.bytes, policy, opts))
        .collect()
}

/// Rewrites one file's text under a policy.
pub fn process(file: &str, bytes: &[u8], policy: &Policy) -> Result<FileOutcome, Vec<Diagnostic>> {
    let opts = Options {
        details: true,
        ..Options::default()
    };
    process_with(file, bytes, policy, &opts)
}

/// Rewrites one file's text under a policy, with [`Options`].
pub(crate) fn process_with(
    file: &str,
    bytes: &[u8],
    policy: &Policy,
    opts: &Options,
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
    let file = File {
        name: file,
        text,
        bytes,
        policy,
        opts,
    };
    if let Some(result) = fastpath::run(text, |value, end| file.process(Some((value, end)))) {
        return result;
    }
    file.process(None)
}

/// One file being processed.
struct File<'a> {
    name: &'a str,
    text: &'a str,
    bytes: &'a [u8],
    policy: &'a Policy,
    opts: &'a Options,
}

impl File<'_> {
    /// Processes the file; `head` is the skimmed KFP v2 pipeline document
    /// (its value, and where it ends) when the fast path read it, and the
    /// span tree then covers only the text after it.
    fn process(&self, head: Option<(Value, usize)>) -> Result<FileOutcome, Vec<Diagnostic>> {
        let base = head.as_ref().map_or(0, |h| h.1);
        let skimmed = head.is_some();
        let tree = match Tree::parse_from(self.text, base) {
            Ok(t) => t,
            Err(e) => return self.unparsed(e),
        };
        let docs = self.detect(&tree, head)?;
        let skimmed_docs = usize::from(skimmed);
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
        } = plan(
            &tree,
            &docs,
            &roots,
            self.policy,
            self.name,
            self.opts,
            &mut editor,
        );
        if !errors.is_empty() {
            if self.opts.report_errors {
                return Ok(FileOutcome {
                    file: self.name.to_string(),
                    output: None,
                    docs: reports,
                    warnings,
                    errors,
                });
            }
            return Err(errors);
        }
        let output = self.write(&tree, editor, if skimmed { base } else { 0 })?;
        Ok(FileOutcome {
            file: self.name.to_string(),
            output: output.filter(|o| o.as_bytes() != self.bytes),
            docs: reports,
            warnings,
            errors: vec![],
        })
    }

    /// A file that does not parse: a Helm chart's template is skipped with
    /// a warning (a hook over every `*.yaml` meets them), anything else is
    /// an error.
    fn unparsed(&self, e: kfsched_yaml::SyntaxError) -> Result<FileOutcome, Vec<Diagnostic>> {
        let Some(at) = helm::template_action(self.text) else {
            return Err(vec![Diagnostic {
                file: self.name.to_string(),
                line: e.line,
                col: e.col,
                path: e.path.clone(),
                message: format!("invalid YAML: {}; nothing was written", e.message),
            }]);
        };
        let (line, col) = kfsched_yaml::tree::line_col(self.text, at);
        let action: String = self.text[at..]
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect();
        Ok(FileOutcome {
            file: self.name.to_string(),
            output: None,
            docs: vec![DocReport::skipped_file(
                "a Go (Helm) template, not YAML until rendered",
            )],
            warnings: vec![Diagnostic {
                file: self.name.to_string(),
                line,
                col,
                path: String::new(),
                message: format!(
                    "skipped: a Go (Helm) template, which is not YAML until rendered (`{}`); rewrite the rendered output (`helm template ... | kubectl kfsched rewrite`), or exclude the templates from the run",
                    action.trim_end()
                ),
            }],
            errors: vec![],
        })
    }

    /// What each document is; with a skimmed pipeline, that first, then the
    /// documents of the tree.
    fn detect(
        &self,
        tree: &Tree,
        head: Option<(Value, usize)>,
    ) -> Result<Vec<Doc>, Vec<Diagnostic>> {
        let to_diag = |(node, msg): (NodeId, String)| {
            let n = tree.node(node);
            vec![Diagnostic::at(
                tree,
                self.name,
                n.start as usize,
                &tree.path(node),
                msg,
            )]
        };
        let Some((value, _)) = head else {
            return format::detect(tree).map_err(to_diag);
        };
        let roots: Vec<Option<NodeId>> = tree.documents.iter().map(|d| d.root).collect();
        let platform = roots.first().copied().flatten().filter(|&r| {
            tree.kind(r) == Kind::Map
                && tree.get_value(r, "platforms").is_some()
                && tree.get_value(r, "pipelineInfo").is_none()
        });
        // The tree starts after the skimmed pipeline: its first document
        // (if any) is the next one.
        let next = (!tree.documents.is_empty()).then_some(0);
        let mut docs = vec![Doc::KfpV2(kfp_v2::Pipeline::parse(&value, next, platform))];
        drop(value);
        let rest = if platform.is_some() {
            docs.push(Doc::KfpV2Platform);
            &roots[1..]
        } else {
            &roots[..]
        };
        let first = roots.len() - rest.len();
        docs.extend(format::detect_roots_from(tree, rest, first).map_err(to_diag)?);
        Ok(docs)
    }

    /// Applies the queued edits to the original text, `None` when there are
    /// none. Splices into existing text are re-parsed from the start of the
    /// first edited document (from `parsed_from` at the earliest): a
    /// rewrite must never produce YAML that does not parse. A whole
    /// appended document is the emitter's own output, whose round trip the
    /// emitter's tests and fuzz target check.
    fn write(
        &self,
        tree: &Tree,
        editor: Editor,
        parsed_from: usize,
    ) -> Result<Option<String>, Vec<Diagnostic>> {
        if editor.is_empty() {
            return Ok(None);
        }
        let first = editor.first_offset().unwrap_or(0);
        let appends_only = editor.only_appends_documents();
        // Whole lines inserted between complete lines leave every other line
        // as it was: the result parses when each inserted text does, which
        // is far cheaper to check than the file.
        let inserts_ok = editor.only_line_inserts() && {
            // Rules write the same text into many components: each once.
            let distinct: std::collections::HashSet<&str> = editor.inserted_texts().collect();
            distinct.into_iter().all(kfsched_yaml::tree::check_syntax)
        };
        let out = editor.finish().map_err(|e| {
            vec![Diagnostic::at(
                tree, self.name, e.offset, &e.path, e.message,
            )]
        })?;
        if !appends_only && !inserts_ok {
            let start = tree
                .documents
                .iter()
                .enumerate()
                // Strictly before: text inserted at the very start of a
                // `---` marker ends the document before it.
                .filter(|(i, d)| *i > 0 && d.explicit_start && (d.start as usize) < first)
                .map(|(_, d)| d.start as usize)
                .next_back()
                .unwrap_or(parsed_from);
            verify(self.name, &out, start)?;
        }
        Ok(Some(out))
    }
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
