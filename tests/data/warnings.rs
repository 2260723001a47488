//! Policies the API server accepts with a warning: per
//! `testdata/warnings/<case>/` (a policy, an input, the exact `stderr.txt`
//! and the rewrite `expected.yaml`), `validate` and `rewrite` print the
//! server's warnings, each at its place in the policy, and exit 0; the
//! rewrite is still made. `KFSCHED_BLESS=1` rewrites `stderr.txt` and
//! `expected.yaml`.

use std::path::Path;

use libtest_mimic::Trial;

use crate::support::{case_dirs, rel, run_in, show_diff};
use crate::{case_name, ensure, trial};

pub fn trials() -> Vec<Trial> {
    case_dirs("testdata/warnings", "policy.yaml")
        .into_iter()
        .map(|dir| {
            let name = format!("warnings::{}", case_name(&dir, "warnings"));
            trial(name, move || warns_and_succeeds(&dir))
        })
        .collect()
}

fn warns_and_succeeds(dir: &Path) -> Result<(), String> {
    let bless = std::env::var_os("KFSCHED_BLESS").is_some();
    let mut failures = Vec::new();
    let validate = run_in(dir, &["validate", "-p", "policy.yaml"], None, &[]);
    let rewrite = run_in(
        dir,
        &["rewrite", "-p", "policy.yaml", "input.yaml"],
        None,
        &[],
    );
    if bless {
        std::fs::write(dir.join("stderr.txt"), &validate.stderr).expect("bless");
        std::fs::write(dir.join("expected.yaml"), &rewrite.stdout).expect("bless");
    }
    let want = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    ensure(
        want.lines().count() > 0 && want.lines().all(|l| l.starts_with("warning: policy.yaml:")),
        || format!("{}: stderr.txt must hold the policy's warnings", rel(dir)),
    )?;
    for (what, r) in [("validate", &validate), ("rewrite", &rewrite)] {
        if r.code != 0 || r.stderr != want {
            failures.push(format!(
                "{} ({what}): exit {} (want 0)\n--- want\n{want}--- got\n{}",
                rel(dir),
                r.code,
                r.stderr
            ));
        }
    }
    if !validate
        .stdout_str()
        .starts_with("policy.yaml: valid SchedulingPolicy")
    {
        failures.push(format!(
            "{}: validate printed {:?}",
            rel(dir),
            validate.stdout_str()
        ));
    }
    let expected = std::fs::read_to_string(dir.join("expected.yaml")).unwrap_or_default();
    let got = rewrite.stdout_str();
    if got != expected {
        failures.push(format!(
            "{}: rewrite\n{}",
            rel(dir),
            show_diff(&expected, &got)
        ));
    }
    ensure(failures.is_empty(), || failures.join("\n\n"))
}
