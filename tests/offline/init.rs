//! Starting from one's own pipelines (SPEC §4): `explain` without a policy
//! lists every component with the names a rule can match, and `init`
//! writes a starter `.kfsched.yaml` that is valid, commented, changes
//! nothing until edited, and never overwrites a file.

use crate::support::{root, run_in, snapshot};

/// A work directory with the bundled example pipelines and no policy
/// anywhere above it.
fn pipelines() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    crate::support::copy_tree(
        &root().join("examples/pipelines"),
        &d.path().join("pipelines"),
    );
    assert!(
        d.path()
            .ancestors()
            .all(|a| !a.join(".kfsched.yaml").exists()),
        "a .kfsched.yaml above the temporary directory would be found"
    );
    d
}

#[test]
fn explain_without_a_policy_lists_the_components_and_their_names() {
    let d = pipelines();
    let r = run_in(d.path(), &["explain", "pipelines"], None, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "note: no policy (no -p, $KFSCHED_POLICY or .kfsched.yaml here or above): listing every component with the names a rule can match; `kubectl kfsched init` writes a starter policy from them\n"
    );
    let out = r.stdout_str();
    // Task keys, display names, component names, executor labels; images;
    // the pipeline and kind per document; the scheduling as it is.
    for want in [
        "pipelines/basic-train-v1.yaml\n  document 1: KFP v1 (Argo) Workflow, pipeline \"basic-train\"\n",
        "    template \"train\" (container)\n      names:   train, Train linear model, Train\n      images:  python:3.9\n      now:     (none)",
        "pipelines/reused-components-v2.yaml\n  document 1: KFP v2 IR PipelineSpec, pipeline \"reused-components\"\n",
        "    task \"publish-model\"\n      names:   publish-model, Publish to staging, comp-publish-model, exec-publish-model\n      images:  python:3.11-slim\n",
    ] {
        assert!(out.contains(want), "{want:?} not in\n{out}");
    }
    assert!(!out.contains("rules that matched nothing"), "{out}");
    assert!(!out.contains("would change"), "{out}");
    let r = run_in(d.path(), &["explain", "-o", "json", "pipelines"], None, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("json");
    assert!(j["policy"].is_null());
    assert_eq!(
        j["files"][0]["documents"][0]["components"][2]["names"][0],
        "train"
    );
    // --rule needs rules; a policy named but missing is still an error.
    let r = run_in(
        d.path(),
        &["explain", "--rule", "x", "pipelines"],
        None,
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("error: --rule needs a policy"),
        "{}",
        r.stderr
    );
    let r = run_in(
        d.path(),
        &["explain", "-p", "nope.yaml", "pipelines"],
        None,
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("nope.yaml"), "{}", r.stderr);
}

#[test]
fn init_writes_a_valid_starter_that_changes_nothing_until_edited() {
    let d = pipelines();
    let r = run_in(d.path(), &["init", "pipelines"], None, &[]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            0,
            "wrote .kfsched.yaml: a starter policy with one node pool and one example rule, listing the 13 components of 2 files under pipelines; it changes nothing until you edit it (the file's header says how)\n"
        )
    );
    let starter = std::fs::read_to_string(d.path().join(".kfsched.yaml")).expect("written");
    assert!(
        starter.starts_with("# A starter SchedulingPolicy"),
        "{starter}"
    );
    for want in [
        "#   template \"train\" (container) (kind Workflow, pipeline \"basic-train\")\n#     names:  train, Train linear model, Train\n#     images: python:3.9\n",
        "#   task \"publish-model\" (kind PipelineSpec, pipeline \"reused-components\")\n",
        "      names: [\"EDIT-ME\"]\n",
    ] {
        assert!(starter.contains(want), "{want:?} not in\n{starter}");
    }
    // Valid, with one pool and one rule; the pool has no nodes yet.
    let r = run_in(d.path(), &["validate"], None, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout_str()
            .ends_with("valid SchedulingPolicy \"ml-platform\": 1 rule, 1 node pool\n"),
        "{}",
        r.stdout_str()
    );
    assert!(
        r.stderr.contains("node pool \"example\" selects no nodes"),
        "{}",
        r.stderr
    );
    // Nothing applied: no diff, and a warning that says why.
    let before = snapshot(d.path());
    let r = run_in(d.path(), &["rewrite", "-i", "pipelines"], None, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.starts_with(&format!(
            "warning: {}:",
            d.path().join(".kfsched.yaml").display()
        )) && r.stderr.contains("rule \"example\" matched no component"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .ends_with("0 files rewritten, 2 files left unchanged\n"),
        "{}",
        r.stderr
    );
    assert_eq!(snapshot(d.path()), before);
    let r = run_in(d.path(), &["diff", "--strict", "pipelines"], None, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    // Edited as the header says, it schedules what it names.
    let edited = starter.replace("[\"EDIT-ME\"]", "[\"train\"]");
    std::fs::write(d.path().join(".kfsched.yaml"), edited).expect("edit");
    let r = run_in(d.path(), &["diff", "--strict", "pipelines"], None, &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout_str().contains(
            "+      - {effect: NoSchedule, key: kfsched.dev/pool, operator: Equal, value: example}"
        ) || r.stdout_str().contains("kfsched.dev/pool"),
        "{}",
        r.stdout_str()
    );
}

#[test]
fn init_never_overwrites_and_can_print_instead() {
    let d = pipelines();
    std::fs::write(d.path().join(".kfsched.yaml"), "# mine\n").expect("write");
    let r = run_in(d.path(), &["init", "pipelines"], None, &[]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "error: .kfsched.yaml exists already; nothing was written (init never overwrites: edit that file, remove it, or write elsewhere with -p FILE)\n"
        )
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join(".kfsched.yaml")).expect("read"),
        "# mine\n"
    );
    let r = run_in(d.path(), &["init", "-p", "-", "pipelines"], None, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout_str().contains("kind: SchedulingPolicy\n"));
    // Elsewhere: the other commands are told how to find it.
    let r = run_in(
        d.path(),
        &["init", "-p", "platform.yaml", "pipelines"],
        None,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.ends_with(&format!(
            "note: the other commands read {} here (the nearest .kfsched.yaml upward from {}); pass them -p platform.yaml\n",
            d.path().join(".kfsched.yaml").display(),
            d.path().display()
        )),
        "{}",
        r.stderr
    );
    // With no path, the current directory; a file that does not parse is
    // left out with a warning.
    std::fs::write(d.path().join("pipelines/broken.yaml"), "a: [\n").expect("write");
    let r = run_in(d.path(), &["init", "-p", "-"], None, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("warning: ./pipelines/broken.yaml:2:1: ")
            && r.stderr.contains("(left out of the starter policy)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout_str()
            .contains("# ./pipelines/basic-train-v1.yaml\n"),
        "{}",
        r.stdout_str()
    );
}
