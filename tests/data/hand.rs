//! Hand-written inputs (comments between keys, 4-space indentation,
//! indented sequences, flow-style maps, CRLF, BOM, no final newline, JSON),
//! per case: the rewrite equals `expected.yaml`; the diff is made of
//! inserted scheduling lines only; and a JSON input comes out as JSON in its
//! own layout, meaning what the same resource written as block YAML comes
//! out as. `KFSCHED_BLESS=1` rewrites the expected files.

use std::path::Path;

use kfsched::policy::Policy;
use kfsched::rewrite::process;
use kfsched_yaml::value::node_value;
use kfsched_yaml::{BlockStyle, Tree, Value};
use libtest_mimic::Trial;
use similar::{ChangeTag, TextDiff};

use crate::support::{hand_dirs, rel, show_diff};
use crate::{case_name, ensure, trial};

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
        "argo-pod-spec-patch-json",
        "a template's one-line JSON podSpecPatch string gains the fields: the string is written anew",
    ),
    (
        "kubectl-list-pod-spec-fields",
        "the server's `schedulerName: default-scheduler` is replaced by the policy's scheduler",
    ),
    (
        "pod-replace-topology-spread",
        "strategy: replace rewrites the topology spread constraints and the runtime class it replaces",
    ),
    (
        "json-dumps-job-empty-fields",
        "the document is one line of JSON: any edit changes that line",
    ),
];

pub fn trials() -> Vec<Trial> {
    let dirs = hand_dirs();
    let (n, json) = (dirs.len(), dirs.iter().filter(|d| is_json(d)).count());
    let mut out = vec![trial("hand::there_are_enough_cases".into(), move || {
        ensure(n >= 8, || format!("{n} hand-written cases"))?;
        ensure(json >= 5, || format!("{json} JSON cases"))
    })];
    for dir in dirs {
        let name = format!("hand::{}", case_name(&dir, "cases"));
        let d = dir.clone();
        out.push(trial(format!("{name}::rewrites_to_expected"), move || {
            rewrites_to_expected(&d)
        }));
        let d = dir.clone();
        out.push(Trial::test(
            format!("{name}::diff_only_inserts_scheduling_lines"),
            move || {
                diff_only_inserts_scheduling_lines(&d);
                Ok(())
            },
        ));
        if is_json(&dir) {
            out.push(Trial::test(
                format!("{name}::json_stays_json_and_means_what_yaml_does"),
                move || {
                    json_stays_json(&dir);
                    Ok(())
                },
            ));
        }
    }
    out
}

fn is_json(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("input.yaml")).is_ok_and(|t| t.starts_with('{'))
}

fn rewrites_to_expected(dir: &Path) -> Result<(), String> {
    let policy = Policy::load(&dir.join("policy.yaml")).expect("policy");
    let input = std::fs::read(dir.join("input.yaml")).expect("input");
    let out = process("input.yaml", &input, &policy).map_err(|d| format!("{}: {d:?}", rel(dir)))?;
    let got = out
        .text(&input)
        .ok_or("every hand-written case changes its input")?;
    if std::env::var_os("KFSCHED_BLESS").is_some() {
        std::fs::write(dir.join("expected.yaml"), &got).expect("bless");
        return Ok(());
    }
    let want = std::fs::read_to_string(dir.join("expected.yaml")).expect("expected");
    ensure(got == want, || {
        format!("{}:\n{}", rel(dir), show_diff(&want, &got))
    })
}

fn diff_only_inserts_scheduling_lines(dir: &Path) {
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
        return;
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

fn json_stays_json(dir: &Path) {
    let input = std::fs::read_to_string(dir.join("input.yaml")).expect("input");
    let name = rel(dir);
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
        .text(yaml.as_bytes())
        .expect("the YAML changes");
    assert_eq!(
        as_json,
        value(&out).to_json(),
        "{name}: the JSON rewrite and the YAML rewrite differ"
    );
}
