//! One test per data case, so that `cargo test --test data NAME` runs one
//! case alone: every SDK-compiled golden pair (`testdata/golden/`), every
//! hand-written case (`testdata/cases/`), every bad-input case
//! (`testdata/bad/`), every policy accepted with warnings
//! (`testdata/warnings/`) and every recipe of the guide (`testdata/recipes/`)
//! is a test of its own, named after its directory.
//! The cases are found when the binary starts (libtest-mimic), so a new case
//! directory is a new test without code. `KFSCHED_BLESS=1` rewrites the
//! expected files of hand-written, bad-input and warning cases.

#[path = "../support.rs"]
mod support;

mod bad;
mod golden;
mod hand;
mod recipes;
mod warnings;

use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    trials.extend(golden::trials());
    trials.extend(hand::trials());
    trials.extend(bad::trials());
    trials.extend(warnings::trials());
    trials.extend(recipes::trials());
    libtest_mimic::run(&args, trials).exit();
}

/// A trial whose body reports failure as a message.
fn trial(name: String, f: impl FnOnce() -> Result<(), String> + Send + 'static) -> Trial {
    Trial::test(name, move || f().map_err(Failed::from))
}

/// `group::case` of a case directory under `testdata/<kind>/`.
fn case_name(dir: &std::path::Path, kind: &str) -> String {
    let rel = support::rel(dir);
    let rel = rel
        .strip_prefix(&format!("testdata/{kind}/"))
        .unwrap_or(&rel);
    rel.replace('/', "::")
}

/// Fails with `message` unless `cond` holds.
fn ensure(cond: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if cond { Ok(()) } else { Err(message()) }
}
