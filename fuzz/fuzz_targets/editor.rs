//! The editor on arbitrary YAML: reconciling any node to any value never
//! panics; when it succeeds on YAML that parsed, the output parses too and
//! the node now holds the value.
#![no_main]

mod common;

use arbitrary::Unstructured;
use kfsched::yaml::edit::{Edit, Editor, Flavor, Placement};
use kfsched::yaml::{BlockStyle, Kind, Tree};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(v) = common::value(&mut u, 1) else {
        return;
    };
    let Ok(pick) = u.int_in_range(0..=u32::MAX) else {
        return;
    };
    let Ok(flavor) = u.int_in_range(0..=2u8) else {
        return;
    };
    let Ok(text) = std::str::from_utf8(u.take_rest()) else {
        return;
    };
    let Ok(tree) = Tree::parse(text) else { return };
    if tree.is_empty() {
        return;
    }
    let node = pick % tree.len() as u32;
    // Only values of mappings (what the format adapters edit).
    let Some(parent) = tree.parent(node) else {
        return;
    };
    if tree.kind(parent) != Kind::Map || tree.entries(parent).all(|(_, val)| val != node) {
        return;
    }
    let flavor = match flavor {
        0 => Flavor::KfpV2,
        1 => Flavor::KfpV1,
        _ => Flavor::Generic(BlockStyle::detect(&tree)),
    };
    let mut ed = Editor::new(&tree, flavor);
    if ed
        .apply(Edit::Reconcile {
            node,
            desired: v,
            placement: Placement::AsDesired,
        })
        .is_err()
    {
        return;
    }
    let Ok(out) = ed.finish() else { return };
    if let Err(e) = Tree::parse(&out) {
        panic!("edited text does not parse: {e}\n--- input\n{text}\n--- output\n{out}");
    }
});
