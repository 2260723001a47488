//! SDK-compiled files beyond the per-case byte checks (tests/data): the
//! quick syntax check covers what the SDK writes, and a created platform
//! document goes where the SDK puts it.

use kfsched::policy::Policy;
use kfsched::rewrite::process;

use crate::support::{golden_dirs, rel};

/// The pipeline documents the SDK writes are in the subset the quick syntax
/// check recognises, so a rewrite does not spend its time in the parser.
#[test]
fn sdk_v2_pipeline_documents_take_the_quick_syntax_check() {
    for dir in golden_dirs().into_iter().filter(|d| rel(d).contains("v2/")) {
        for name in ["plain.yaml", "expected.yaml"] {
            let text = std::fs::read_to_string(dir.join(name)).expect("read");
            let end = text.find("\n---").map_or(text.len(), |i| i + 1);
            assert_eq!(
                kfsched_yaml::quick::gives_up_at(&text[..end]),
                None,
                "{}/{name}",
                rel(&dir)
            );
        }
    }
}

/// A platform document kfsched creates goes right after its pipeline (where
/// the SDK writes it), not at the end of the file, so in a file with more
/// documents it is read back as that pipeline's: a second run is a no-op,
/// and the other pipeline gets a platform document of its own.
#[test]
fn a_new_platform_document_follows_its_pipeline() {
    let dir = crate::support::root().join("testdata/golden/corpus-v2");
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).expect("read");
    let (a, b) = (
        read("p01_simple_python/plain.yaml"),
        read("p02_container_gpu/plain.yaml"),
    );
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n";
    let policy = |pipeline: &str| {
        let text = format!(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {{name: t}}\nspec:\n  rules:\n  - name: r\n    match: {{pipelines: [{pipeline}], kinds: [PipelineSpec]}}\n    podLabels: {{team: a}}\n"
        );
        Policy::from_bytes("policy.yaml", text.as_bytes()).expect("policy")
    };
    let rewrite = |text: &str, p: &Policy| {
        process("in.yaml", text.as_bytes(), p)
            .unwrap_or_else(|d| panic!("{d:?}"))
            .text(text.as_bytes())
    };
    let first = policy("simple-python-etl");
    let second = policy("container-gpu-training");
    let platform = "---\nplatforms:\n  kubernetes:\n    deploymentSpec:\n      executors:\n        exec-clean-rows:\n";
    for (input, what) in [
        (format!("{a}---\n{b}"), "two pipelines"),
        (format!("{a}---\n{pod}"), "a pipeline and a Pod"),
        (format!("{a}---\n{b}---\n{pod}"), "two pipelines and a Pod"),
    ] {
        let once = rewrite(&input, &first).unwrap_or_else(|| panic!("{what}: no change"));
        // The new document sits between the first pipeline and what followed it.
        let (head, tail) = once.split_at(a.len());
        assert_eq!(head, a, "{what}");
        assert!(
            tail.starts_with(platform),
            "{what}: {}",
            &tail[..tail.len().min(200)]
        );
        assert!(tail.ends_with(&input[a.len()..]), "{what}");
        assert_eq!(rewrite(&once, &first), None, "{what}: second run");
        if input.contains("container-gpu-training") {
            let twice = rewrite(&once, &second).expect("second pipeline");
            assert_eq!(rewrite(&twice, &second), None, "{what}");
            assert_eq!(rewrite(&twice, &first), None, "{what}");
            assert_eq!(twice.matches("\nplatforms:\n").count(), 2, "{what}");
            assert!(
                twice.starts_with(&once[..once.find(&b).expect("b")]),
                "{what}"
            );
        }
    }
}
