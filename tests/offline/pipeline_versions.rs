//! KFP PipelineVersion manifests beyond the byte-level golden cases: a
//! version read back from a cluster gets a warning when its spec would
//! change (KFP keeps it immutable), `--version-suffix` gives it a new name
//! and drops what the API server set, and a version whose spec lives at a
//! URI has nothing to rewrite offline.

use crate::support::{root, run_in, unmatched_rules_in, without_unmatched_rules};

fn list_case() -> (tempfile::TempDir, String) {
    let g = root().join("testdata/golden/pv/list");
    let d = tempfile::tempdir().expect("tempdir");
    for f in ["plain.yaml", "policy.yaml"] {
        std::fs::copy(g.join(f), d.path().join(f)).expect("copy");
    }
    let plain = std::fs::read_to_string(g.join("plain.yaml")).expect("read");
    (d, plain)
}

fn items(text: &str) -> Vec<serde_json::Value> {
    let tree = kfsched_yaml::Tree::parse(text).expect("parses");
    let v = kfsched_yaml::value::node_value(&tree, tree.documents[0].root.expect("root")).to_json();
    v["items"].as_array().expect("items").clone()
}

#[test]
fn a_version_from_a_cluster_whose_spec_changes_gets_a_warning_naming_the_rules() {
    let (d, plain) = list_case();
    let r = run_in(
        d.path(),
        &["rewrite", "-p", "policy.yaml", "plain.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Besides the golden policy's rules that match nothing on purpose.
    let rest = without_unmatched_rules(&r.stderr);
    let warnings: Vec<&str> = rest.lines().collect();
    assert_eq!(warnings.len(), 3, "{}", r.stderr);
    assert_eq!(
        warnings[0],
        "warning: plain.yaml:11:11: items[0].metadata.name: PipelineVersion \"pv-basic\": its spec changes (rules \"basic.gpu-train\", \"basic.cpu-batch\" select it), and KFP keeps a stored version's spec immutable, so replacing it will be refused: give the rewritten version a new name with --version-suffix SUFFIX and create it"
    );
    // The names stay: only the spec changed.
    let (before, after) = (items(&plain), items(&String::from_utf8_lossy(&r.stdout)));
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(a["metadata"], b["metadata"]);
        assert_ne!(a["spec"], b["spec"]);
    }
}

#[test]
fn version_suffix_renames_changed_versions_and_drops_server_metadata() {
    let (d, plain) = list_case();
    let r = run_in(
        d.path(),
        &[
            "rewrite",
            "-i",
            "--version-suffix",
            "gpu",
            "-p",
            "policy.yaml",
            "plain.yaml",
        ],
        None,
        &[],
    );
    assert_eq!(
        (r.code, without_unmatched_rules(&r.stderr).as_str()),
        (0, "1 file rewritten, 0 files left unchanged\n")
    );
    let out = std::fs::read_to_string(d.path().join("plain.yaml")).expect("read");
    let (before, after) = (items(&plain), items(&out));
    for (b, a) in before.iter().zip(&after) {
        let name = b["metadata"]["name"].as_str().expect("name");
        assert_eq!(a["metadata"]["name"], format!("{name}-gpu"));
        for server_set in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
            assert!(a["metadata"][server_set].is_null(), "{server_set} kept");
            assert!(!b["metadata"][server_set].is_null());
        }
        // What the version belongs to stays: namespace, labels, owner.
        for kept in ["namespace", "labels", "ownerReferences"] {
            assert_eq!(a["metadata"][kept], b["metadata"][kept]);
        }
        assert!(a["spec"]["platformSpec"].is_object());
    }
    // Idempotent: the renamed versions are scheduled already.
    let again = run_in(
        d.path(),
        &[
            "rewrite",
            "--check",
            "--version-suffix",
            "gpu",
            "-p",
            "policy.yaml",
            "plain.yaml",
        ],
        None,
        &[],
    );
    assert_eq!(
        (again.code, without_unmatched_rules(&again.stderr).as_str()),
        (0, "")
    );
}

#[test]
fn a_version_suffix_that_makes_an_invalid_name_is_an_error() {
    let (d, plain) = list_case();
    let r = run_in(
        d.path(),
        &[
            "rewrite",
            "-i",
            "--version-suffix",
            "GPU_1",
            "-p",
            "policy.yaml",
            "plain.yaml",
        ],
        None,
        &[],
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.starts_with("error: plain.yaml:11:11: items[0].metadata.name: --version-suffix: the new name \"pv-basic-GPU_1\" is not a valid object name: "),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("plain.yaml")).expect("read"),
        plain
    );
}

#[test]
fn a_version_whose_spec_is_at_a_uri_has_nothing_to_rewrite_offline() {
    let d = tempfile::tempdir().expect("tempdir");
    let policy = std::fs::read_to_string(root().join("testdata/golden/pv/basic/policy.yaml"))
        .expect("policy");
    std::fs::write(d.path().join("policy.yaml"), policy).expect("write");
    let uri = "apiVersion: pipelines.kubeflow.org/v2beta1\nkind: PipelineVersion\nmetadata:\n  name: v1\nspec:\n  pipelineName: p\n  pipelineSpecURI: gs://bucket/pipeline.yaml\n";
    std::fs::write(d.path().join("v.yaml"), uri).expect("write");
    let r = run_in(
        d.path(),
        &["rewrite", "-i", "-v", "-p", "policy.yaml", "v.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("skipped: v.yaml: the PipelineVersion \"v1\" keeps its pipeline spec at spec.pipelineSpecURI, not in the file: nothing to rewrite offline\n"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("v.yaml")).expect("read"),
        uri
    );
}

/// A PipelineVersion that a controller manages (a GitOps operator that
/// makes versions from a template of its own, say) is left alone with the
/// warning other controller-owned objects get: the controller would put
/// its own spec back.
#[test]
fn a_version_a_controller_manages_is_skipped_with_a_warning() {
    let g = root().join("testdata/golden/pv/basic");
    let plain = std::fs::read_to_string(g.join("plain.yaml")).expect("read");
    let owned = plain.replacen(
        "metadata:\n  name: pv-basic\n",
        "metadata:\n  name: pv-basic\n  ownerReferences:\n  - apiVersion: example.com/v1\n    kind: PipelineSource\n    name: nightly\n    uid: 0f5e8a2c-1d2b-4c8e-9a6f-3b7d2e1c4a50\n    controller: true\n",
        1,
    );
    assert_ne!(owned, plain);
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(d.path().join("pv.yaml"), &owned).expect("write");
    std::fs::copy(g.join("policy.yaml"), d.path().join("policy.yaml")).expect("copy");
    let r = run_in(
        d.path(),
        &["rewrite", "-i", "-p", "policy.yaml", "pv.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The rules that select the version matched it; the golden policy's
    // rule for IR files matched nothing.
    assert_eq!(unmatched_rules_in(&r.stderr), ["only-ir"]);
    assert_eq!(
        without_unmatched_rules(&r.stderr),
        "warning: pv.yaml:6:5: metadata.ownerReferences[0]: PipelineVersion \"pv-basic\": skipped: its controller, PipelineSource \"nightly\", makes it from its own template: rewrite that (or its own controller) instead (rules \"gpu-train\", \"cpu-batch\" select it)\n\
         0 files rewritten, 1 file left unchanged\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("pv.yaml")).expect("read"),
        owned,
        "nothing written"
    );
    // Without the controller reference the same file is rewritten.
    std::fs::write(d.path().join("pv.yaml"), &plain).expect("write");
    let r = run_in(
        d.path(),
        &["rewrite", "--check", "-p", "policy.yaml", "pv.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
}
