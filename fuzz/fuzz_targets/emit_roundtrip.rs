//! Every renderer's text parses back to the value it rendered.
#![no_main]

mod common;

use arbitrary::Unstructured;
use kfsched::yaml::BlockStyle;
use kfsched::yaml::Tree;
use kfsched::yaml::Value;
use kfsched::yaml::emit::{Emitter, PyProfile};
use kfsched::yaml::value::node_value;
use libfuzzer_sys::fuzz_target;

fn roundtrip(text: &str, want: &Value, what: &str) {
    let tree = match Tree::parse(text) {
        Ok(t) => t,
        Err(e) => panic!("{what}: does not parse: {e}\n{text}"),
    };
    let root = tree
        .documents
        .iter()
        .filter_map(|d| d.root)
        .last()
        .expect("a document");
    let got = node_value(&tree, root);
    assert!(got == *want, "{what}: {got:?} != {want:?}\n{text}");
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(key) = common::word(&mut u) else {
        return;
    };
    let Ok(v) = common::value(&mut u, 0) else {
        return;
    };
    let Ok(indent) = u.int_in_range(0..=6usize) else {
        return;
    };
    let doc = Value::Map(vec![(key.clone(), v.clone())]);
    for profile in [PyProfile::KfpV2, PyProfile::KfpV1] {
        let text = Emitter::next_document(profile, &doc);
        roundtrip(&format!("a: 1\n{text}"), &doc, "next_document");
        let entry = Emitter::block_entry(profile, &key, &v, 0);
        roundtrip(&entry, &doc, "block_entry");
        let nested = format!(
            "{}outer:\n{}",
            "",
            Emitter::block_entry(profile, &key, &v, indent + 2)
        );
        let want = Value::Map(vec![("outer".into(), doc.clone())]);
        roundtrip(&nested, &want, "nested block_entry");
        let item = Emitter::seq_item(profile, &v, 0);
        roundtrip(&item, &Value::Seq(vec![v.clone()]), "seq_item");
    }
    for style in [
        BlockStyle::default(),
        BlockStyle {
            step: 4,
            seq_offset: 4,
            item_offset: 4,
        },
        BlockStyle {
            step: 2,
            seq_offset: 2,
            item_offset: 2,
        },
    ] {
        roundtrip(&style.entry(&key, &v, 0), &doc, "block style entry");
    }
});
