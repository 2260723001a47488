//! The whole rewrite on arbitrary YAML and policies: it never panics, its
//! output parses whenever the input did, and a second run changes nothing.
#![no_main]

mod common;

use arbitrary::Unstructured;
use kfsched::policy::Policy;
use kfsched::rewrite::process;
use kfsched::yaml::Tree;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(policy_text) = common::policy(&mut u) else {
        return;
    };
    let input = u.take_rest();
    let Ok(policy) = Policy::from_bytes("policy.yaml", policy_text.as_bytes()) else {
        return;
    };
    let Ok(outcome) = process("input.yaml", input, &policy) else {
        return;
    };
    let Some(out) = outcome.output else { return };
    let text = std::str::from_utf8(input).expect("accepted input is UTF-8");
    if Tree::parse(text).is_ok() {
        if let Err(e) = Tree::parse(&out) {
            panic!("output does not parse: {e}\n--- input\n{text}\n--- output\n{out}");
        }
    }
    match process("input.yaml", out.as_bytes(), &policy) {
        Ok(again) => assert!(
            again.output.is_none(),
            "second rewrite changed the output\n--- output\n{out}\n--- again\n{}",
            again.output.unwrap_or_default()
        ),
        Err(d) => panic!("the output is refused: {d:?}\n--- output\n{out}"),
    }
});
