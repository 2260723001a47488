//! SPEC §2 byte preservation, per SDK-compiled pair: `rewrite(plain,
//! policy)` is the SDK's own scheduled output, byte for byte; rewriting that
//! output again changes nothing; and for the corpus the binary writes the
//! same bytes to stdout.

use std::path::Path;

use kfsched::policy::Policy;
use kfsched::rewrite::process;
use libtest_mimic::Trial;

use crate::support::{golden_dirs, rel, run_in, show_diff};
use crate::{case_name, ensure, trial};

pub fn trials() -> Vec<Trial> {
    let dirs = golden_dirs();
    let names: Vec<String> = dirs.iter().map(|d| rel(d)).collect();
    let mut out = vec![trial(
        "golden::there_are_sdk_pairs_for_both_sdks_and_the_corpus".into(),
        move || {
            for group in [
                "golden/corpus-v1/",
                "golden/corpus-v2/",
                "golden/v1/",
                "golden/v2/",
            ] {
                let n = names.iter().filter(|d| d.contains(group)).count();
                ensure(n >= 5, || format!("too few cases in {group}: {names:?}"))?;
            }
            ensure(names.len() >= 37, || {
                format!("{} golden cases", names.len())
            })
        },
    )];
    for dir in dirs {
        let name = format!("golden::{}", case_name(&dir, "golden"));
        let d = dir.clone();
        out.push(trial(
            format!("{name}::rewrite_gives_the_sdk_bytes"),
            move || same_as_expected(&d, "plain.yaml"),
        ));
        let d = dir.clone();
        out.push(trial(
            format!("{name}::second_rewrite_changes_nothing"),
            move || same_as_expected(&d, "expected.yaml"),
        ));
        if rel(&dir).contains("corpus") {
            out.push(trial(
                format!("{name}::binary_writes_the_same_bytes"),
                move || binary_stdout(&dir),
            ));
        }
    }
    out
}

fn rewrite_file(dir: &Path, name: &str) -> Result<String, String> {
    let policy =
        Policy::load(&dir.join("policy.yaml")).map_err(|e| format!("{}: {e}", rel(dir)))?;
    let bytes = std::fs::read(dir.join(name)).map_err(|e| format!("{name}: {e}"))?;
    match process(name, &bytes, &policy) {
        Ok(o) => Ok(o
            .text(&bytes)
            .unwrap_or_else(|| String::from_utf8(bytes).expect("utf8"))),
        Err(d) => Err(format!(
            "{}: {}",
            rel(dir),
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )),
    }
}

/// Rewriting `name` gives `expected.yaml`.
fn same_as_expected(dir: &Path, name: &str) -> Result<(), String> {
    let got = rewrite_file(dir, name)?;
    let want = std::fs::read_to_string(dir.join("expected.yaml")).expect("expected.yaml");
    ensure(got == want, || {
        format!("{}/{name}:\n{}", rel(dir), show_diff(&want, &got))
    })
}

fn binary_stdout(dir: &Path) -> Result<(), String> {
    let r = run_in(
        dir,
        &["rewrite", "-p", "policy.yaml", "plain.yaml"],
        None,
        &[],
    );
    ensure(r.code == 0, || format!("{}: {}", rel(dir), r.stderr))?;
    let want = std::fs::read(dir.join("expected.yaml")).expect("expected");
    ensure(r.stdout == want, || format!("{}: stdout differs", rel(dir)))
}
