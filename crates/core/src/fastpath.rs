//! The KFP v2 fast path. An SDK-written KFP v2 pipeline document is only
//! read, never edited (scheduling goes into the platform document after
//! it), so instead of building a span tree of it, the few fields kfsched
//! needs are skimmed, while its syntax is checked beside that, in pieces
//! and on all cores. If the check fails, the caller's full parse reports
//! the error exactly.

use rayon::prelude::*;

use kfsched_yaml::Value;
use kfsched_yaml::skim::{self, Projection};
use kfsched_yaml::tree::check_syntax;

use crate::format::kfp_v2;

/// Runs `process` on the skimmed pipeline document (its projection, and
/// the offset where it ends) when `text` starts with one, checking the
/// document's syntax meanwhile. `None` when the file is not an SDK-written
/// KFP v2 pipeline or its syntax check fails: then parse it whole.
pub(crate) fn run<T: Send>(
    text: &str,
    process: impl FnOnce(Value, usize) -> T + Send,
) -> Option<T> {
    let Projection { value, end, splits } = skim_kfp_v2(text)?;
    let process = || process(value, end);
    let check = || check_pieces(text, end, &splits);
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
