//! Replays every input under `fuzz/regressions/<target>/` through the same
//! checks the cargo-fuzz targets run, so a crash once found stays fixed.
//! Add a file there whenever `cargo fuzz` finds one (see README, Fuzzing).

#[path = "../fuzz/fuzz_targets/checks.rs"]
mod checks;
#[path = "../fuzz/fuzz_targets/common.rs"]
mod common;

use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("{} fails the {target} check again", path.display());
        }
        n += 1;
    }
    // The corpus of each target is committed with at least one input.
    assert!(n > 0, "no inputs in {}", dir.display());
}

#[test]
fn editor_regressions() {
    replay("editor", checks::editor);
}

#[test]
fn rewrite_regressions() {
    replay("rewrite", checks::rewrite);
}

#[test]
fn emit_roundtrip_regressions() {
    replay("emit_roundtrip", checks::emit_roundtrip);
}

#[test]
fn krm_regressions() {
    replay("krm", checks::krm);
}

#[test]
fn quick_regressions() {
    replay("quick", checks::quick);
}
