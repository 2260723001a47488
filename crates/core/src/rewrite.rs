//! One file through the whole flow: read → detect → components → match →
//! merge → plan edits → apply to the original bytes → verify → report.
//!
//! Synchronous and pure: bytes in, bytes and a report out. The binary does
//! the file system and the printing; many files run in parallel.

use rayon::prelude::*;

use kfsched_yaml::block::is_blank;
use kfsched_yaml::edit::{Editor, Flavor};
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::{Patch, Value};

use crate::diag::{Diagnostic, decode_utf8};
use crate::fastpath::{self, Head};
use crate::format::{self, Doc, kfp_v2};
use crate::helm;
pub use crate::outcome::{ComponentReport, DocReport, FileOutcome, Input, Options};
use crate::plan::{Planned, Planner};
use crate::policy::Policy;

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
    if let Some(d) = python_input(file, None) {
        return Err(vec![d]);
    }
    let text = decode_utf8(file, bytes).map_err(|d| vec![d])?;
    if is_blank(text) {
        return Ok(FileOutcome {
            file: file.to_string(),
            output: None,
            docs: vec![DocReport::skipped_file("empty file")],
            warnings: vec![],
            errors: vec![],
            ambiguous: vec![],
        });
    }
    let file = File {
        name: file,
        text,
        bytes,
        policy,
        opts,
    };
    if let Some(Some(result)) = fastpath::run(text, |head| file.process(Some(head))) {
        return result;
    }
    file.process(None)
        .expect("the full parse always gives a result")
}

/// A Python file given as a pipeline: named `.py`, or (with `text`, which
/// did not parse as YAML) a KFP pipeline's source.
pub(crate) fn python_input(file: &str, unparsed: Option<&str>) -> Option<Diagnostic> {
    (file.ends_with(".py") || unparsed.is_some_and(looks_like_kfp_python))
        .then(|| Diagnostic::file(file, python_file(file)))
}

/// What to do with a Python file given as a pipeline.
fn python_file(file: &str) -> String {
    let stem = match std::path::Path::new(file).file_stem() {
        Some(s) if file != "<stdin>" => s.to_string_lossy(),
        _ => "pipeline".into(),
    };
    format!(
        "a Python file: compile it first, e.g. `kfp dsl compile --py {stem}.py --output {stem}.yaml` (or `kfp.compiler.Compiler().compile(my_pipeline, \"{stem}.yaml\")` in the script), and give kfsched the compiled YAML"
    )
}

/// Whether text that is not YAML is a KFP pipeline's Python source: a line
/// of its own that imports kfp or declares a pipeline.
fn looks_like_kfp_python(text: &str) -> bool {
    text.lines().take(500).any(|l| {
        l.starts_with("from kfp")
            || l.starts_with("import kfp")
            || l.starts_with("@dsl.pipeline")
            || l.starts_with("@kfp.dsl.pipeline")
    })
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
    /// Processes the file; `head` is what the fast path read, if it did
    /// (see [`Head`]). `None` when the fast path's reading cannot be used
    /// after all (the caller then processes the file without it).
    fn process(&self, head: Option<Head>) -> Option<Result<FileOutcome, Vec<Diagnostic>>> {
        let (tree, base, head) = match head {
            None => match Tree::parse(self.text) {
                Ok(t) => (t, 0, None),
                Err(e) => return Some(self.unparsed(e)),
            },
            Some(Head::Ir { value, end }) => match Tree::parse_from(self.text, end) {
                Ok(t) => (t, end, Some(Skimmed::Ir(value))),
                Err(e) => return Some(self.unparsed(e)),
            },
            Some(Head::Version { ir, region }) => {
                match Tree::parse_eliding(self.text, region.clone()) {
                    Ok(t) => (t, 0, Some(Skimmed::Version(ir, region))),
                    Err(_) => return None,
                }
            }
        };
        let skimmed = matches!(head, Some(Skimmed::Ir(_)));
        let docs = match self.detect(&tree, head) {
            Some(Ok(d)) => d,
            Some(Err(e)) => return Some(Err(e)),
            None => return None,
        };
        Some(self.finish(&tree, &docs, skimmed, base))
    }

    /// Plans and writes the detected documents.
    fn finish(
        &self,
        tree: &Tree,
        docs: &[Doc],
        skimmed: bool,
        base: usize,
    ) -> Result<FileOutcome, Vec<Diagnostic>> {
        let skimmed_docs = usize::from(skimmed);
        // The root of each document in `docs`: the skimmed pipeline has none
        // in the tree.
        let roots: Vec<Option<NodeId>> = std::iter::repeat_n(None, skimmed_docs)
            .chain(tree.documents.iter().map(|d| d.root))
            .collect();
        let mut editor = Editor::new(tree, Flavor::KfpV2);
        let Planned {
            reports,
            errors,
            warnings,
            ambiguous,
        } = Planner::new(tree, self.policy, self.name, self.opts).plan(docs, &roots, &mut editor);
        if !errors.is_empty() {
            if self.opts.report_errors {
                return Ok(FileOutcome {
                    file: self.name.to_string(),
                    output: None,
                    docs: reports,
                    warnings,
                    errors,
                    ambiguous,
                });
            }
            return Err(errors);
        }
        let output = self.write(tree, editor, if skimmed { base } else { 0 })?;
        Ok(FileOutcome {
            file: self.name.to_string(),
            output: output.filter(|p| p.changes(self.bytes)),
            docs: reports,
            warnings,
            errors: vec![],
            ambiguous: vec![],
        })
    }

    /// A file that does not parse: a Helm chart's template is skipped with
    /// a warning (a hook over every `*.yaml` meets them), anything else is
    /// an error.
    fn unparsed(&self, e: kfsched_yaml::SyntaxError) -> Result<FileOutcome, Vec<Diagnostic>> {
        if let Some(d) = python_input(self.name, Some(self.text)) {
            return Err(vec![d]);
        }
        let Some(at) = helm::template_action(self.text) else {
            return Err(vec![Diagnostic {
                file: self.name.to_string(),
                line: e.line,
                col: e.col,
                path: e.path.clone(),
                message: format!("invalid YAML: {}", e.message),
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
            ambiguous: vec![],
        })
    }

    /// What each document is: with a skimmed pipeline IR, that first, then
    /// the documents of the tree; with a skimmed PipelineVersion IR, the
    /// documents of the tree, that version read with it. `None` when the
    /// masked lines turn out not to be a PipelineVersion's pipeline spec.
    fn detect(
        &self,
        tree: &Tree,
        head: Option<Skimmed>,
    ) -> Option<Result<Vec<Doc>, Vec<Diagnostic>>> {
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
        let value = match head {
            None => return Some(format::detect(tree).map_err(to_diag)),
            Some(Skimmed::Version(ir, region)) => {
                return with_skimmed_version(tree, ir, region).map(|r| r.map_err(to_diag));
            }
            Some(Skimmed::Ir(value)) => value,
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
        Some(
            format::detect_roots_from(tree, rest, first)
                .map(|more| {
                    docs.extend(more);
                    docs
                })
                .map_err(to_diag),
        )
    }

    /// The queued edits as a patch of the original text, `None` when there
    /// are none. Splices into existing text are re-parsed from the start
    /// of the first edited document (from `parsed_from` at the earliest): a
    /// rewrite must never produce YAML that does not parse. A whole
    /// appended document is the emitter's own output, whose round trip the
    /// emitter's tests and fuzz target check.
    fn write(
        &self,
        tree: &Tree,
        editor: Editor,
        parsed_from: usize,
    ) -> Result<Option<Patch>, Vec<Diagnostic>> {
        if editor.is_empty() {
            return Ok(None);
        }
        let first = editor.first_offset().unwrap_or(0);
        let appends_only = editor.only_appends_documents();
        let inserts_ok = !appends_only && editor.line_inserts_parse();
        let patch = editor.finish_patch().map_err(|e| {
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
            verify(self.name, &patch.apply(self.text), start)?;
        }
        Ok(Some(patch))
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
                "internal error: the rewritten text does not parse ({e}). Please report this with the input file and policy"
            ),
        )]),
    }
}

/// What the fast path read, once the span tree is built.
enum Skimmed {
    /// The first document, a pipeline IR.
    Ir(Value),
    /// The `spec.pipelineSpec` of a PipelineVersion, the lines `region` of
    /// the file (left out of the tree).
    Version(Value, std::ops::Range<usize>),
}

/// The documents of a tree that left out the lines of one PipelineVersion's
/// pipeline spec: that version is read with the skimmed IR. `None` when no
/// PipelineVersion's `spec.pipelineSpec` is the mapping left out.
fn with_skimmed_version(
    tree: &Tree,
    ir: Value,
    region: std::ops::Range<usize>,
) -> Option<Result<Vec<Doc>, (NodeId, String)>> {
    let mut docs = match format::detect(tree) {
        Ok(d) => d,
        // A problem elsewhere in the file: the full parse reports it.
        Err(_) => return None,
    };
    let masked = |m: &format::pipeline_version::Manifest| {
        tree.get_value(m.spec, "pipelineSpec")
            .is_some_and(|n| region.contains(&(tree.node(n).start as usize)))
    };
    let at = docs
        .iter()
        .position(|d| matches!(d, Doc::KfpV2(p) if p.manifest.as_ref().is_some_and(masked)))?;
    let root = match &docs[at] {
        Doc::KfpV2(p) => p.manifest.as_ref()?.root,
        _ => return None,
    };
    match format::pipeline_version::version(tree, root, Some(&ir)) {
        Ok(doc) => docs[at] = doc,
        Err(e) => return Some(Err(e)),
    }
    Some(Ok(docs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pv_dir(case: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/golden/pv")
            .join(case)
    }

    fn policy_of(dir: &std::path::Path) -> Policy {
        let bytes = std::fs::read(dir.join("policy.yaml")).expect("policy");
        Policy::from_bytes("policy.yaml", &bytes).expect("valid policy")
    }

    /// Whether the fast path took `bytes`, what it gave, and what the full
    /// parse gives.
    fn both_paths(policy: &Policy, name: &str, bytes: &[u8]) -> (bool, String, String) {
        let text = std::str::from_utf8(bytes).expect("utf-8");
        let opts = Options {
            details: true,
            ..Options::default()
        };
        let file = File {
            name,
            text,
            bytes,
            policy,
            opts: &opts,
        };
        let show = |r: Result<FileOutcome, Vec<Diagnostic>>| match r {
            Ok(o) => format!(
                "{}\n{:?}\n{:?}",
                o.text(bytes).unwrap_or_default(),
                o.docs,
                o.warnings
            ),
            Err(d) => format!("{d:?}"),
        };
        let fast = fastpath::run(text, |head| file.process(Some(head))).flatten();
        let took = fast.is_some();
        let slow = file.process(None).expect("the full parse gives a result");
        (took, fast.map(show).unwrap_or_default(), show(slow))
    }

    /// The fast path reads every SDK-written PipelineVersion fixture, and
    /// gives what the full parse gives: the same bytes, reports and warnings.
    #[test]
    fn the_pipeline_version_fast_path_gives_what_the_full_parse_gives() {
        let root = pv_dir("");
        let mut fast = 0;
        for case in std::fs::read_dir(&root).expect("pv fixtures") {
            let dir = case.expect("entry").path();
            let policy = policy_of(&dir);
            for input in ["plain.yaml", "expected.yaml"] {
                let bytes = std::fs::read(dir.join(input)).expect("input");
                let (took, fast_out, full_out) = both_paths(&policy, input, &bytes);
                // Streams and Lists of versions take the full parse; a
                // single version (after its Pipeline or not) the fast path.
                let several = dir.ends_with("stream") || dir.ends_with("list");
                assert_eq!(took, !several, "{}/{input}", dir.display());
                if took {
                    fast += 1;
                    assert_eq!(fast_out, full_out, "{}/{input}", dir.display());
                }
            }
        }
        assert!(fast >= 20, "the fast path read only {fast} fixtures");
    }

    /// Whatever is wrong inside the skimmed pipeline spec, the result is the
    /// full parse's: the same error at the same place, or the same output.
    #[test]
    fn bad_lines_in_a_pipeline_versions_spec_get_the_full_parses_result() {
        let dir = pv_dir("basic");
        let policy = policy_of(&dir);
        let text = std::fs::read_to_string(dir.join("plain.yaml")).expect("input");
        let at = text
            .find("\n    components:\n")
            .expect("the IR's components")
            + 1;
        for bad in [
            "    broken: [unclosed\n",
            "    components: {}\n",
            "\tx: 1\n",
            "    - item\n",
            "  # a comment\n      indented: 1\n",
        ] {
            let input = format!("{}{bad}{}", &text[..at], &text[at..]);
            let (took, fast_out, full_out) = both_paths(&policy, "v.yaml", input.as_bytes());
            if took {
                assert_eq!(fast_out, full_out, "{bad:?}");
            }
            let via_process = match process("v.yaml", input.as_bytes(), &policy) {
                Ok(o) => format!(
                    "{}\n{:?}\n{:?}",
                    o.text(input.as_bytes()).unwrap_or_default(),
                    o.docs,
                    o.warnings
                ),
                Err(d) => format!("{d:?}"),
            };
            assert_eq!(via_process, full_out, "{bad:?}");
        }
    }
}
