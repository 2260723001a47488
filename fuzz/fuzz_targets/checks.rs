//! The checks of the fuzz targets, shared with `tests/fuzz_regressions.rs`,
//! which replays every input under `fuzz/regressions/` on each test run.
#![allow(dead_code)]

use crate::common;
use arbitrary::Unstructured;
use kfsched_core::diag::Diagnostic;
use kfsched_core::krm::{KrmInputError, ResourceList};
use kfsched_core::outcome::Options;
use kfsched_core::policy::Policy;
use kfsched_core::rewrite::process;
use kfsched_yaml::edit::{Edit, Editor, Flavor, Placement};
use kfsched_yaml::emit::{Emitter, PyProfile};
use kfsched_yaml::value::node_value;
use kfsched_yaml::{BlockStyle, Kind, NodeId, Tree, Value};

/// The editor on arbitrary YAML: reconciling any mapping value to any value
/// never panics; when it succeeds on YAML that parsed, the output parses, the
/// node holds the value and every other value is unchanged.
pub fn editor(data: &[u8]) {
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
            desired: v.clone(),
            placement: Placement::AsDesired,
        })
        .is_err()
    {
        return;
    }
    let Ok(out) = ed.finish() else { return };
    let edited = match Tree::parse(&out) {
        Ok(t) => t,
        Err(e) => panic!("edited text does not parse: {e}\n--- input\n{text}\n--- output\n{out}"),
    };
    // Every document holds what it held, except that the node now holds the value.
    let want: Vec<Value> = tree
        .documents
        .iter()
        .filter_map(|d| d.root)
        .map(|r| substituted(&tree, r, node, &v))
        .collect();
    let got: Vec<Value> = edited
        .documents
        .iter()
        .filter_map(|d| d.root)
        .map(|r| node_value(&edited, r))
        .collect();
    assert!(
        got == want,
        "edited documents differ from the request at {}\n--- input\n{text}\n--- output\n{out}\n--- want\n{want:?}\n--- got\n{got:?}",
        tree.path(node)
    );
}

/// `node_value` of `id`, with the subtree at `target` replaced by `desired`.
fn substituted(tree: &Tree, id: NodeId, target: NodeId, desired: &Value) -> Value {
    if id == target {
        return desired.clone();
    }
    match tree.kind(id) {
        Kind::Seq => Value::Seq(
            tree.items(id)
                .map(|c| substituted(tree, c, target, desired))
                .collect(),
        ),
        Kind::Map => Value::Map(
            tree.entries(id)
                .map(|(k, v)| {
                    (
                        tree.scalar(k).to_string(),
                        substituted(tree, v, target, desired),
                    )
                })
                .collect(),
        ),
        _ => node_value(tree, id),
    }
}

/// The whole rewrite on arbitrary YAML and policies: it never panics, its
/// output parses whenever the input did, and a second run changes nothing.
pub fn rewrite(data: &[u8]) {
    let Some((policy, input)) = policy_and_input(data) else {
        return;
    };
    let outcome = match process("input.yaml", input, &policy) {
        Ok(o) => o,
        Err(d) => return refused(&d, input),
    };
    let Some(out) = outcome.text(input) else {
        return;
    };
    let text = std::str::from_utf8(input).expect("accepted input is UTF-8");
    if Tree::parse(text).is_ok() {
        match Tree::parse(&out) {
            Err(e) => panic!("output does not parse: {e}\n--- input\n{text}\n--- output\n{out}"),
            // JSON in, JSON out (unless a KFP v2 platform document was added).
            Ok(t)
                if t.documents.len() == 1
                    && text.trim_start().starts_with('{')
                    && serde_json::from_str::<serde_json::Value>(text).is_ok() =>
            {
                if let Err(e) = serde_json::from_str::<serde_json::Value>(&out) {
                    panic!(
                        "JSON input, output not JSON: {e}\n--- input\n{text}\n--- output\n{out}"
                    );
                }
            }
            Ok(_) => {}
        }
    }
    match process("input.yaml", out.as_bytes(), &policy) {
        Ok(again) => assert!(
            again.output.is_none(),
            "second rewrite changed the output\n--- output\n{out}\n--- again\n{}",
            again.text(out.as_bytes()).unwrap_or_default()
        ),
        Err(d) => panic!("the output is refused: {d:?}\n--- output\n{out}"),
    }
}

/// The KRM function on an arbitrary ResourceList under a generated policy
/// (the fallback when its functionConfig is not one): no input causes an
/// internal error, and when it runs, the ResourceList it writes parses,
/// each item's rewrite being checked by its inserted lines alone.
pub fn krm(data: &[u8]) {
    let Some((policy, input)) = policy_and_input(data) else {
        return;
    };
    let list = ResourceList::read(input);
    let outcome = match list.run(Some(&policy), &Options::default(), Default::default()) {
        Ok(o) => o,
        Err(KrmInputError(d)) => return refused(&d, input),
    };
    if let Err(e) = Tree::parse(&outcome.output) {
        panic!(
            "output does not parse: {e}\n--- input\n{}\n--- output\n{}",
            String::from_utf8_lossy(input),
            outcome.output
        );
    }
    assert!(
        list.is_resource_list(),
        "a run on what is not a ResourceList"
    );
}

/// A generated policy (most inputs give a valid one) and the rest of the
/// bytes as the input.
fn policy_and_input(data: &[u8]) -> Option<(Policy, &[u8])> {
    let mut u = Unstructured::new(data);
    let policy_text = common::policy(&mut u).ok()?;
    let input = u.take_rest();
    let policy = Policy::from_bytes("policy.yaml", policy_text.as_bytes()).ok()?;
    Some((policy, input))
}

/// Refusing input is fine; a self-check failing is a bug.
fn refused(diags: &[Diagnostic], input: &[u8]) {
    if let Some(e) = diags.iter().find(|e| e.message.contains("internal error")) {
        panic!("{e}\n--- input\n{}", String::from_utf8_lossy(input));
    }
}

fn roundtrip(text: &str, want: &Value, what: &str) {
    let tree = match Tree::parse(text) {
        Ok(t) => t,
        Err(e) => panic!("{what}: does not parse: {e}\n{text}"),
    };
    let root = tree
        .documents
        .iter()
        .filter_map(|d| d.root)
        .next_back()
        .expect("a document");
    let got = node_value(&tree, root);
    assert!(got == *want, "{what}: {got:?} != {want:?}\n{text}");
}

/// Every renderer's text parses back to the value it rendered.
pub fn emit_roundtrip(data: &[u8]) {
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
}

/// The quick syntax check never accepts what the parser refuses.
pub fn quick(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if kfsched_yaml::quick::accepts(text) {
        assert!(
            kfsched_yaml::tree::check_syntax(text),
            "the quick check accepts text the parser refuses:\n{text}"
        );
    }
    // The tree built by the check on the way is the parser's.
    if let Some(quick) = Tree::parse_quick(text, 0) {
        let by_parser = Tree::parse_by_parser(text).map(|t| t.dump());
        assert_eq!(
            Ok(quick.dump()),
            by_parser,
            "the quick tree differs:\n{text}"
        );
    }
}
