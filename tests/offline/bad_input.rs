//! Bad input gets a precise error (file:line:col, YAML path, what to do),
//! exit code 2, and nothing is written. Each `testdata/bad/<case>/` holds a
//! policy, an input and the exact `stderr.txt`; the file-system cases are
//! set up here. `KFSCHED_BLESS=1` rewrites the stderr files.

use std::os::unix::fs::PermissionsExt;

use crate::support::{run_in, snapshot};

fn good_policy() -> &'static str {
    "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: p}\nspec:\n  rules:\n  - name: gpu\n    tolerations:\n    - {key: gpu, operator: Exists, effect: NoSchedule}\n"
}

fn pod(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: c\n    image: busybox\n"
    )
}

fn setup(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, body) in files {
        let p = dir.path().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, body).expect("write");
    }
    dir
}

fn assert_fails(dir: &tempfile::TempDir, args: &[&str], stderr: &str) {
    let before = snapshot(dir.path());
    let r = run_in(dir.path(), args, None, &[]);
    assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
    assert_eq!(r.stderr, stderr, "{args:?}");
    assert!(snapshot(dir.path()) == before, "{args:?}: files changed");
}

#[test]
fn a_directory_without_yaml_is_an_error() {
    let dir = setup(&[
        ("policy.yaml", good_policy()),
        ("pipelines/README.md", "# no yaml here\n"),
    ]);
    assert_fails(
        &dir,
        &["rewrite", "-i", "-p", "policy.yaml", "pipelines"],
        "error: pipelines: the directory holds no *.yaml, *.yml or *.json file; pass pipeline files or a directory that has some\n",
    );
}

#[test]
fn an_unreadable_input_is_an_error() {
    let dir = setup(&[
        ("policy.yaml", good_policy()),
        ("pipelines/a.yaml", &pod("a")),
    ]);
    std::os::unix::fs::symlink(
        "/nonexistent/target.yaml",
        dir.path().join("pipelines/b.yaml"),
    )
    .expect("symlink");
    assert_fails(
        &dir,
        &["rewrite", "-i", "-p", "policy.yaml", "pipelines"],
        "error: pipelines/b.yaml: cannot read: No such file or directory (os error 2)\n",
    );
    assert_fails(
        &dir,
        &["rewrite", "-i", "-p", "policy.yaml", "missing.yaml"],
        "error: missing.yaml: cannot read: No such file or directory (os error 2)\n",
    );
}

#[test]
fn a_read_only_target_is_refused_with_in_place_and_nothing_is_written() {
    let dir = setup(&[
        ("policy.yaml", good_policy()),
        ("a.yaml", &pod("a")),
        ("b.yaml", &pod("b")),
    ]);
    let b = dir.path().join("b.yaml");
    std::fs::set_permissions(&b, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    assert_fails(
        &dir,
        &["rewrite", "-i", "-p", "policy.yaml", "a.yaml", "b.yaml"],
        "error: b.yaml: the file is read-only; nothing was written (make it writable or leave out --in-place)\n",
    );
}

#[test]
fn one_bad_file_among_many_means_none_is_written() {
    let dir = setup(&[
        ("policy.yaml", good_policy()),
        ("p/a.yaml", &pod("a")),
        (
            "p/b.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: b\n",
        ),
        ("p/c.yaml", &pod("c")),
    ]);
    assert_fails(
        &dir,
        &["rewrite", "-i", "-p", "policy.yaml", "p"],
        "error: p/b.yaml:4:1: metadata: invalid YAML: while parsing a flow mapping, did not find expected ',' or '}'\nerror: nothing was written (1 problem in 3 files under p)\n",
    );
}

#[test]
fn usage_errors() {
    let dir = setup(&[
        ("policy.yaml", good_policy()),
        ("a.yaml", &pod("a")),
        ("b.yaml", &pod("b")),
    ]);
    assert_fails(
        &dir,
        &["rewrite", "-i", "-p", "policy.yaml", "-"],
        "error: --in-place cannot write back to stdin; give file or directory paths\n",
    );
    assert_fails(
        &dir,
        &["rewrite", "-p", "policy.yaml", "a.yaml", "b.yaml"],
        "error: 2 inputs, and without -i/--in-place, --check or --diff only one input can be written (to stdout)\n",
    );
    assert_fails(
        &dir,
        &["rewrite", "-i", "--check", "-p", "policy.yaml", "a.yaml"],
        "error: --in-place and --check exclude each other: --check writes nothing\n",
    );
    assert_fails(
        &dir,
        &["rewrite", "-p", "nope.yaml", "a.yaml"],
        "error: nope.yaml: cannot read the policy: No such file or directory (os error 2)\n",
    );
}

#[test]
fn no_policy_anywhere_is_an_error_that_says_where_to_put_one() {
    let dir = setup(&[("a.yaml", &pod("a"))]);
    let cwd = dir.path().canonicalize().expect("canon");
    assert!(
        cwd.ancestors().all(|a| !a.join(".kfsched.yaml").exists()),
        "a .kfsched.yaml above {} would be found; remove it to run this test",
        cwd.display()
    );
    assert_fails(
        &dir,
        &["rewrite", "a.yaml"],
        &format!(
            "error: no policy: pass -p/--policy FILE, set $KFSCHED_POLICY, or put a .kfsched.yaml in {} or a parent directory (`kubectl kfsched init` writes a starter)\n",
            cwd.display()
        ),
    );
}

/// The KFP SDK writes a pipeline compiled to a `.json` path as one JSON
/// document and refuses to add a platform spec to it; kfsched refuses too
/// rather than append a YAML document that no JSON reader can take. The
/// same text named `.yaml` is YAML, and takes the second document.
#[test]
fn a_kfp_v2_pipeline_compiled_to_json_is_refused() {
    let golden = crate::support::root().join("testdata/golden/v2/reused_components");
    let json = std::fs::read_to_string(golden.join("plain.json")).expect("plain.json");
    let policy = std::fs::read_to_string(golden.join("policy.yaml")).expect("policy");
    let dir = setup(&[
        ("policy.yaml", &policy),
        ("pipeline.json", &json),
        ("as-yaml.yaml", &json),
    ]);
    let why = "this KFP v2 pipeline is JSON, and its scheduling would go into a second YAML document (the platform spec), which a JSON file cannot hold; the KFP SDK refuses too (\"Platform-specific features are only supported when serializing to YAML\"): compile the pipeline to a .yaml file";
    assert_fails(
        &dir,
        &["rewrite", "-i", "-p", "policy.yaml", "pipeline.json"],
        &format!(
            "error: pipeline.json:1:1: {why}\nerror: nothing was written (1 problem in pipeline.json)\n"
        ),
    );
    let r = run_in(
        dir.path(),
        &["rewrite", "-p", "policy.yaml", "-"],
        Some(json.as_bytes()),
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr
            .starts_with(&format!("error: <stdin>:1:1: {why}\n")),
        "{}",
        r.stderr
    );

    let r = run_in(
        dir.path(),
        &["rewrite", "-p", "policy.yaml", "as-yaml.yaml"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = String::from_utf8(r.stdout).expect("UTF-8");
    assert!(out.starts_with(&json), "the JSON document is kept");
    assert!(
        out[json.len()..].starts_with("\n---\nplatforms:\n"),
        "{}",
        &out[json.len()..]
    );
}
