//! The KFP v2 fast path. An SDK-written KFP v2 pipeline document is only
//! read, never edited (scheduling goes into the platform document after
//! it, or into a PipelineVersion's `spec.platformSpec` beside it), so
//! instead of building a span tree of it, the few fields kfsched needs are
//! skimmed, while its syntax is checked beside that, in pieces and on all
//! cores. If the check fails, the caller's full parse reports the error
//! exactly.

use std::ops::Range;

use rayon::prelude::*;

use kfsched_yaml::Value;
use kfsched_yaml::block::is_blank;
use kfsched_yaml::skim::{self, Projection};
use kfsched_yaml::tree::{MAX_DEPTH, check_syntax_within};

use crate::format::kfp_v2;

/// What the fast path read.
pub(crate) enum Head {
    /// The file's first document, a pipeline IR, which ends at `end`: the
    /// span tree covers the text after it.
    Ir { value: Value, end: usize },
    /// A PipelineVersion's `spec.pipelineSpec`, the whole lines `region`
    /// of the file, which the span tree leaves out
    /// ([`kfsched_yaml::tree::Tree::parse_eliding`]).
    Version { ir: Value, region: Range<usize> },
}

/// Runs `process` on what the fast path read when `text` is an SDK-written
/// pipeline IR or PipelineVersion, checking the syntax of the skimmed text
/// meanwhile. `None` when the file is neither or the check fails: then
/// parse it whole.
pub(crate) fn run<T: Send>(text: &str, process: impl FnOnce(Head) -> T + Send) -> Option<T> {
    // `above`: how many collections hold the skimmed document's own.
    let (head, skimmed, splits, above) = if let Some(p) = skim_kfp_v2(text) {
        let Projection { value, end, splits } = p;
        (Head::Ir { value, end }, &text[..end], splits, 0)
    } else {
        let (Projection { value, splits, .. }, region) = skim_pipeline_version(text)?;
        let skimmed = &text[region.clone()];
        // The manifest's mapping and its `spec`.
        (Head::Version { ir: value, region }, skimmed, splits, 2)
    };
    let process = || process(head);
    let check = || check_pieces(skimmed, &splits, above);
    // The processing runs on this thread and the check beside it: the
    // allocations then stay in this thread's allocator arena (a second
    // arena would keep its freed pages and add to the peak RSS).
    let (result, syntax_ok) = if rayon::current_thread_index().is_some() {
        rayon::join(process, check)
    } else {
        std::thread::scope(|s| {
            let checker = s.spawn(check);
            let result = process();
            (result, checker.join().unwrap_or(false))
        })
    };
    syntax_ok.then_some(result)
}

/// The IR in `spec.pipelineSpec` of a PipelineVersion as kfp writes it
/// (PyYAML, sorted keys, two-space indentation), and the whole lines it
/// takes: from the line after `  pipelineSpec:` up to the next line
/// indented less than its keys. `None` for anything else, a stream of
/// several versions included.
fn skim_pipeline_version(text: &str) -> Option<(Projection, Range<usize>)> {
    const KEY: &str = "\n  pipelineSpec:\n";
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = body.lines().find(|l| !is_blank(l) && !l.starts_with('#'))?;
    if !first.starts_with("apiVersion: pipelines.kubeflow.org/")
        || memchr::memchr(b'\r', text.as_bytes()).is_some()
    {
        return None;
    }
    let at = text.find(KEY)?;
    if text[at + KEY.len()..].contains(KEY) {
        return None;
    }
    // The key belongs to the top-level `spec:`.
    let parent = text[..at]
        .lines()
        .rev()
        .find(|l| !l.is_empty() && !l.starts_with(' '))?;
    if parent != "spec:" {
        return None;
    }
    let start = at + KEY.len();
    let mut end = text.len();
    let mut pos = start;
    let mut last_blank = false;
    while pos < text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let line = &text[pos..line_end];
        let rest = line.trim_start_matches(' ');
        if !rest.is_empty() && line.len() - rest.len() < 4 {
            // The region ends at a key, a document marker or the end, never
            // at a comment (the lines after it could still be the IR's).
            if rest.starts_with('#') {
                return None;
            }
            end = pos;
            break;
        }
        last_blank = rest.is_empty();
        pos = line_end + 1;
    }
    if last_blank || end <= start || !text[start..].starts_with("    ") {
        return None;
    }
    let p = skim::project_indented(&text[start..end], kfp_v2::PROJECTION, 4)?;
    if p.end != end - start || !is_sdk_ir(&p.value) {
        return None;
    }
    Some((p, start..end))
}

/// Written by the SDK: `sdkVersion: kfp-...` and the keys every IR has.
fn is_sdk_ir(v: &Value) -> bool {
    let sdk = v
        .get("sdkVersion")
        .and_then(Value::as_str)
        .is_some_and(|s| s.starts_with("kfp-"));
    sdk && v.get("pipelineInfo").is_some()
        && v.get("root").is_some()
        && v.get("deploymentSpec").is_some()
}

/// The projection of an SDK-written KFP v2 pipeline document, when the file is one.
fn skim_kfp_v2(text: &str) -> Option<Projection> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = body.lines().find(|l| !is_blank(l) && !l.starts_with('#'))?;
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
    is_sdk_ir(&p.value).then_some(p)
}

/// Checks the syntax of the skimmed document in pieces that parse on their
/// own: quickly where the text is plain PyYAML output, else with the parser.
fn check_pieces(text: &str, splits: &[(usize, u8)], above: usize) -> bool {
    let end = text.len();
    let target = (end / 8).max(16 * 1024);
    // Each piece with the depth of the mapping its first key is in.
    let mut pieces: Vec<(usize, usize, u8)> = Vec::new();
    let mut start = 0usize;
    let mut depth = 1u8;
    for &(off, d) in splits {
        if off == 0 {
            continue;
        }
        if d < depth || off - start >= target {
            pieces.push((start, off, depth));
            start = off;
            depth = d;
        }
    }
    pieces.push((start, end, depth));
    // A piece parses on its own with its first mapping at the top: it may
    // nest as deep as the whole text may, less the collections around it
    // (the full parse refuses what is nested deeper).
    let room = |d: u8| MAX_DEPTH.saturating_sub(above + usize::from(d) - 1);
    // The quick check runs here, beside the processing; only the pieces it
    // does not recognise go to the parser, on all cores.
    pieces.retain(|&(a, b, d)| !kfsched_yaml::quick::accepts_within(&text[a..b], room(d)));
    pieces.is_empty()
        || pieces
            .par_iter()
            .all(|&(a, b, d)| check_syntax_within(&text[a..b], room(d)))
}
