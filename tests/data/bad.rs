//! Bad input gets a precise error (file:line:col, YAML path, what to do),
//! exit code 2, and nothing is written: per `testdata/bad/<case>/` (a
//! policy, an input and the exact `stderr.txt`, where every problem has
//! its line and column). `KFSCHED_BLESS=1` rewrites the stderr files.

use std::path::Path;

use libtest_mimic::Trial;

use crate::support::{case_dirs, copy_to_temp, rel, run_in, snapshot};
use crate::{case_name, ensure, trial};

pub fn trials() -> Vec<Trial> {
    let dirs = case_dirs("testdata/bad", "policy.yaml");
    let n = dirs.len();
    let mut out = vec![trial("bad::there_are_enough_cases".into(), move || {
        ensure(n >= 50, || format!("{n} bad-input cases"))
    })];
    for dir in dirs {
        let name = format!("bad::{}", case_name(&dir, "bad"));
        out.push(trial(name, move || fails_with_its_message(&dir)));
    }
    out
}

/// The case fails with exit 2 and exactly its `stderr.txt`, writes nothing
/// to stdout, and leaves every file as it was.
fn fails_with_its_message(dir: &Path) -> Result<(), String> {
    let bless = std::env::var_os("KFSCHED_BLESS").is_some();
    let mut failures = Vec::new();
    let tmp = copy_to_temp(dir);
    let before = snapshot(tmp.path());
    // --in-place: the strongest way to prove nothing is written.
    let r = run_in(
        tmp.path(),
        &["rewrite", "-i", "-p", "policy.yaml", "input.yaml"],
        None,
        &[],
    );
    if bless {
        std::fs::write(dir.join("stderr.txt"), &r.stderr).expect("bless");
    }
    let want = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    // Every problem of a case lies in one of its files: each is reported
    // at its line and column (the summary line is about the run).
    for line in want
        .lines()
        .filter(|l| !l.starts_with("error: nothing was written ("))
    {
        if !has_place(line) {
            failures.push(format!("{}: no FILE:LINE:COL in {line:?}", rel(dir)));
        }
    }
    if r.code != 2 || r.stderr != want {
        failures.push(format!(
            "{}: exit {} (want 2)\n--- want\n{want}--- got\n{}",
            rel(dir),
            r.code,
            r.stderr
        ));
    }
    if !r.stdout.is_empty() {
        failures.push(format!("{}: wrote to stdout", rel(dir)));
    }
    let after = snapshot(tmp.path());
    let stray: Vec<_> = after
        .iter()
        .filter(|(p, ..)| !before.iter().any(|(q, ..)| q == p))
        .map(|(p, ..)| p.clone())
        .collect();
    if after.len() != before.len()
        || before
            .iter()
            .zip(&after)
            .any(|(a, b)| a.0 != b.0 || a.1 != b.1 || a.2 != b.2)
    {
        failures.push(format!("{}: files changed (new: {stray:?})", rel(dir)));
    }
    ensure(failures.is_empty(), || failures.join("\n\n"))
}

/// Whether a diagnostic line reads `error: FILE:LINE:COL: ...`.
fn has_place(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("error: ") else {
        return false;
    };
    let mut parts = rest.splitn(4, ':');
    let (_file, line_no, col) = (parts.next(), parts.next(), parts.next());
    [line_no, col]
        .iter()
        .all(|p| p.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
        && parts.next().is_some_and(|r| r.starts_with(' '))
}
