//! Hand-written inputs (comments between keys, 4-space indentation,
//! indented sequences, flow-style maps, CRLF, BOM, no final newline): the
//! rewrite equals `expected.yaml`, and the diff is made of inserted
//! scheduling lines only. `KFSCHED_BLESS=1` rewrites the expected files.

use kfsched::policy::Policy;
use kfsched::rewrite::process;
use kfsched_yaml::value::node_value;
use kfsched_yaml::{BlockStyle, Tree, Value};
use similar::{ChangeTag, TextDiff};

use crate::support::{hand_dirs, rel, show_diff};

/// Cases whose diff legitimately changes existing lines, and why.
const EDITS_LINES: &[(&str, &str)] = &[
    (
        "cronjob-flow-selector",
        "appends inside existing flow-style maps and lists on their own lines",
    ),
    (
        "argo-comments-4space",
        "adds a label inside the existing flow map `labels: {team: data}`",
    ),
    (
        "argo-empty-fields-seeded",
        "fills the template's empty `{}` and `[]` in place, starting from the workflow's values",
    ),
    (
        "no-final-newline",
        "the last line gains a line break before the inserted keys",
    ),
    (
        "empty-flow-metadata-and-spec",
        "fills `metadata: {}` and extends one-line flow maps in place, several keys in one edit",
    ),
    (
        "flow-null-labels",
        "fills an implicit null inside a one-line flow map and adds an entry after it",
    ),
    (
        "json-kubectl-deployment",
        "the last entry of the pod spec gains the `,` before the entries added after it",
    ),
    (
        "json-server-pod",
        "the last entry of the pod spec gains the `,` before the entries added after it",
    ),
    (
        "json-tabs-statefulset",
        "fills the empty `{}` nodeSelector and gives the pod spec's last entry its `,`",
    ),
    (
        "kubectl-list-json",
        "in `kubectl get -o json` of several objects, each selected item's pod spec gains the `,` after its last entry",
    ),
];

/// Cases whose diff replaces existing lines, and why.
const REWRITES_LINES: &[(&str, &str)] = &[
    (
        "kfp-v2-flow-executors",
        "an SDK-style file's empty flow `executors: {}` is written in the SDK's block style",
    ),
    (
        "kfp-v1-flow-template-metadata",
        "a kfp 1.8 file's one-line template that gains fields is written in the compiler's block style",
    ),
    (
        "kfp-v2-replace-affinity-terms",
        "strategy: replace rewrites the node affinity list it replaces",
    ),
    (
        "kfp-v2-replace-keyless-toleration",
        "strategy: replace rewrites the tolerations it replaces",
    ),
    (
        "json-compact-cronjob",
        "the document is one line of JSON: any edit changes that line",
    ),
    (
        "json-dumps-job-empty-fields",
        "the document is one line of JSON: any edit changes that line",
    ),
];

#[test]
fn hand_written_inputs_rewrite_to_their_expected_files() {
    let bless = std::env::var_os("KFSCHED_BLESS").is_some();
    let dirs = hand_dirs();
    assert!(dirs.len() >= 8, "{} hand-written cases", dirs.len());
    let mut failures = Vec::new();
    for dir in dirs {
        let policy = Policy::load(&dir.join("policy.yaml")).expect("policy");
        let input = std::fs::read(dir.join("input.yaml")).expect("input");
        let out = process("input.yaml", &input, &policy)
            .unwrap_or_else(|d| panic!("{}: {d:?}", rel(&dir)));
        let got = out
            .output
            .expect("every hand-written case changes its input");
        if bless {
            std::fs::write(dir.join("expected.yaml"), &got).expect("bless");
            continue;
        }
        let want = std::fs::read_to_string(dir.join("expected.yaml")).expect("expected");
        if got != want {
            failures.push(format!("{}:\n{}", rel(&dir), show_diff(&want, &got)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_diff_only_inserts_scheduling_lines() {
    for dir in hand_dirs() {
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let input = std::fs::read_to_string(dir.join("input.yaml")).expect("input");
        let expected = std::fs::read_to_string(dir.join("expected.yaml")).expect("expected");
        let diff = TextDiff::from_lines(input.as_str(), expected.as_str());
        let deleted: Vec<String> = diff
            .iter_all_changes()
            .filter(|c| c.tag() == ChangeTag::Delete)
            .map(|c| c.value().to_string())
            .collect();
        if let Some((_, why)) = REWRITES_LINES.iter().find(|(n, _)| *n == name) {
            assert!(
                !deleted.is_empty(),
                "{name} is listed as rewriting lines ({why}) but only inserts"
            );
            continue;
        }
        match EDITS_LINES.iter().find(|(n, _)| *n == name) {
            Some((_, why)) => {
                assert!(
                    !deleted.is_empty(),
                    "{name} is listed as editing lines ({why}) but only inserts"
                );
                // An edited line only gains text: what it held, up to its
                // closing bracket, starts one of the inserted lines.
                let inserted: Vec<String> = diff
                    .iter_all_changes()
                    .filter(|c| c.tag() == ChangeTag::Insert)
                    .map(|c| c.value().trim_end().to_string())
                    .collect();
                for d in &deleted {
                    let d = d.trim_end();
                    // A trailing comment stays at the end of the line.
                    let (code, comment) = match d.find(" #") {
                        Some(c) => (d[..c].trim_end(), d[c..].trim()),
                        None => (d, ""),
                    };
                    let kept = code.strip_suffix(['}', ']']).unwrap_or(code);
                    assert!(
                        inserted
                            .iter()
                            .any(|i| i.starts_with(kept) && i.ends_with(comment)),
                        "{name}: the line {d:?} lost text ({why})"
                    );
                }
            }
            None => assert!(
                deleted.is_empty(),
                "{name}: existing lines changed: {deleted:?}"
            ),
        }
        // Whatever was inserted is scheduling: keys and values of tolerations,
        // nodeSelector, affinity and pod metadata, never anything else.
        let inserted: String = diff
            .iter_all_changes()
            .filter(|c| c.tag() == ChangeTag::Insert)
            .map(|c| c.value().to_string())
            .filter(|l| !deleted.iter().any(|d| d.trim_end() == l.trim_end()))
            // An edited line: only what it gained.
            .map(|l| {
                deleted
                    .iter()
                    .map(|d| {
                        let d = d.trim_end();
                        let code = d.find(" #").map_or(d, |c| d[..c].trim_end());
                        code.strip_suffix(['}', ']']).unwrap_or(code).to_string()
                    })
                    .filter(|kept| l.starts_with(kept.as_str()))
                    .max_by_key(String::len)
                    .map_or(l.clone(), |kept| l[kept.len()..].to_string())
            })
            .collect();
        for forbidden in ["image:", "containers:", "name:", "command:"] {
            assert!(
                !inserted.contains(forbidden),
                "{name}: inserted {forbidden:?}"
            );
        }
    }
}

/// JSON inputs (`kubectl get -o json`, `json.dumps`, compact JSON) come out
/// as JSON in their own layout, meaning what the same resource written as
/// block YAML comes out as.
#[test]
fn json_inputs_stay_json_and_mean_what_their_yaml_does() {
    let mut seen = 0;
    for dir in hand_dirs() {
        let input = std::fs::read_to_string(dir.join("input.yaml")).expect("input");
        if !input.starts_with('{') {
            continue;
        }
        seen += 1;
        let name = rel(&dir);
        let policy = Policy::load(&dir.join("policy.yaml")).expect("policy");
        let expected = std::fs::read_to_string(dir.join("expected.yaml")).expect("expected");
        let as_json: serde_json::Value = serde_json::from_str(&expected)
            .unwrap_or_else(|e| panic!("{name}: expected.yaml is not JSON: {e}"));

        // The same resource in block YAML, rewritten.
        let value = |text: &str| {
            let tree = Tree::parse(text).expect("parses");
            node_value(&tree, tree.documents[0].root.expect("a document"))
        };
        let Value::Map(entries) = value(&input) else {
            panic!("{name}: not a mapping");
        };
        let yaml: String = entries
            .iter()
            .map(|(k, v)| BlockStyle::default().entry(k, v, 0))
            .collect();
        assert!(
            !yaml.starts_with('{'),
            "{name}: block YAML expected:\n{yaml}"
        );
        let out = process("input.yaml", yaml.as_bytes(), &policy)
            .expect("the YAML rewrites")
            .output
            .expect("the YAML changes");
        assert_eq!(
            as_json,
            value(&out).to_json(),
            "{name}: the JSON rewrite and the YAML rewrite differ"
        );
    }
    assert!(seen >= 5, "{seen} JSON cases");
}
