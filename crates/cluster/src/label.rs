//! `node label`: `key=value` sets, `key-` removes; kubectl's rules.
//!
//! Without `--overwrite` a different existing value is refused (and
//! nothing is written); the same value is a no-op. Removing a label that is
//! not there prints `label "k" not found on node/x` and continues, as
//! kubectl does. The merge patch carries only the changed keys plus the
//! resourceVersion that was read, so the `--overwrite` check holds even
//! against a concurrent editor.

use std::io::Write;

use k8s_openapi::api::core::v1::Node;
use serde_json::{Map, Value as Json, json};

use super::client::Clients;
use super::edit::{self, Step, Summary, name_of};
use super::{DryRun, Error, Refusal, RefusalKind, Targets};
use kfsched_core::k8s;

/// One change asked for on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelChange {
    Set(String, String),
    Remove(String),
}

impl LabelChange {
    pub fn key(&self) -> &str {
        match self {
            LabelChange::Set(k, _) | LabelChange::Remove(k) => k,
        }
    }
}

/// Whether a command-line word is a label change rather than a node name.
pub fn is_change(arg: &str) -> bool {
    arg.contains('=') || arg.ends_with('-')
}

/// Parses `key=value` or `key-`, validating key and value as the API server does.
pub fn parse_change(spec: &str) -> Result<LabelChange, String> {
    if let Some((k, v)) = spec.split_once('=') {
        if v.contains('=') {
            return Err(format!(
                "invalid label spec {spec:?}: at most one '=' (the form is key=value)"
            ));
        }
        check_key(spec, k)?;
        let errs = k8s::label_value(v);
        if !errs.is_empty() {
            return Err(format!(
                "invalid label spec {spec:?}: value {v:?}: {}",
                errs.join("; ")
            ));
        }
        return Ok(LabelChange::Set(k.into(), v.into()));
    }
    if let Some(k) = spec.strip_suffix('-') {
        check_key(spec, k)?;
        return Ok(LabelChange::Remove(k.into()));
    }
    Err(format!(
        "invalid label spec {spec:?}: use key=value to set or key- to remove"
    ))
}

fn check_key(spec: &str, key: &str) -> Result<(), String> {
    let errs = k8s::qualified_name(key);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid label spec {spec:?}: key {key:?}: {}",
            errs.join("; ")
        ))
    }
}

/// Splits `NODE... LABEL...` into node names and parsed changes.
pub fn split_args(args: &[String]) -> Result<(Vec<String>, Vec<LabelChange>), Error> {
    let mut nodes = Vec::new();
    let mut changes: Vec<LabelChange> = Vec::new();
    for a in args {
        if is_change(a) {
            changes.push(parse_change(a).map_err(Error::Usage)?);
        } else if !changes.is_empty() {
            return Err(Error::Usage(format!(
                "node names go before the label changes: {a:?} comes after them"
            )));
        } else {
            nodes.push(a.clone());
        }
    }
    if changes.is_empty() {
        return Err(Error::Usage(
            "at least one label change is required: key=value or key-".into(),
        ));
    }
    for (i, c) in changes.iter().enumerate() {
        for d in &changes[..i] {
            if d.key() != c.key() {
                continue;
            }
            match (c, d) {
                (LabelChange::Set(_, a), LabelChange::Set(_, b)) if a == b => {}
                (LabelChange::Remove(_), LabelChange::Remove(_)) => {
                    // The second would report "not found".
                    return Err(Error::Usage(format!(
                        "label {:?} is removed twice: give each removal once",
                        c.key()
                    )));
                }
                (LabelChange::Set(..), LabelChange::Set(..)) => {
                    return Err(Error::Usage(format!(
                        "label {:?} is given two different values",
                        c.key()
                    )));
                }
                _ => {
                    return Err(Error::Usage(format!(
                        "cannot both modify and remove label {:?} in one command",
                        c.key()
                    )));
                }
            }
        }
    }
    // `a=b a=b`: once is enough.
    let mut once: Vec<LabelChange> = Vec::with_capacity(changes.len());
    for c in changes {
        if !once.contains(&c) {
            once.push(c);
        }
    }
    Ok((nodes, once))
}

/// What the changes do to one node.
#[derive(Clone, Debug, PartialEq)]
pub struct LabelPlan {
    /// The merge patch's `labels` map: changed keys, `null` for removals.
    pub patch: Map<String, Json>,
    /// kubectl's result word.
    pub verb: &'static str,
    pub notes: Vec<String>,
}

/// The plan for one node, or a refusal naming `--overwrite`.
pub fn apply_changes(
    node: &Node,
    changes: &[LabelChange],
    overwrite: bool,
) -> Result<LabelPlan, String> {
    let name = name_of(node);
    let empty = Default::default();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let mut patch = Map::new();
    let mut notes = Vec::new();
    let mut conflicts = Vec::new();
    let (mut set, mut removed) = (false, false);
    for c in changes {
        match c {
            LabelChange::Set(k, v) => match labels.get(k) {
                Some(cur) if cur == v => {}
                Some(cur) if !overwrite => {
                    conflicts.push(format!("'{k}' already has a value ({cur})"))
                }
                _ => {
                    patch.insert(k.clone(), Json::String(v.clone()));
                    set = true;
                }
            },
            LabelChange::Remove(k) => {
                if labels.contains_key(k) {
                    if !patch.contains_key(k) {
                        patch.insert(k.clone(), Json::Null);
                    }
                    removed = true;
                } else {
                    notes.push(format!("label {k:?} not found on node/{name}"));
                }
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(format!(
            "node/{name}: {}, and --overwrite is false",
            conflicts.join(", ")
        ));
    }
    // kubectl's updateDataChangeMsg: `unlabeled` only without --overwrite.
    let verb = match (set, removed) {
        (true, _) => "labeled",
        (false, true) if overwrite => "labeled",
        (false, true) => "unlabeled",
        (false, false) => "not labeled",
    };
    Ok(LabelPlan { patch, verb, notes })
}

/// Plans one node.
pub fn plan(node: &Node, changes: &[LabelChange], overwrite: bool) -> Step {
    match apply_changes(node, changes, overwrite) {
        Err(m) => Step::Refuse(Refusal::new(RefusalKind::NeedsOverwrite, m)),
        Ok(LabelPlan { patch, verb, notes }) if patch.is_empty() => Step::Unchanged {
            verb: verb.into(),
            notes,
        },
        Ok(LabelPlan { patch, verb, notes }) => Step::Write {
            patch: json!({"metadata": {"labels": patch}}),
            verb: verb.into(),
            guard: true,
            notes,
        },
    }
}

/// `node label`'s options.
#[derive(Clone, Debug)]
pub struct LabelOptions {
    pub targets: Targets,
    pub changes: Vec<LabelChange>,
    pub overwrite: bool,
    pub dry_run: DryRun,
}

/// Runs `node label`.
pub async fn run(
    clients: &Clients,
    opts: &LabelOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Summary, Error> {
    edit::run(
        clients,
        &opts.targets,
        opts.dry_run,
        |n| plan(n, &opts.changes, opts.overwrite),
        out,
        err,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(labels: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn forms_and_validation() {
        assert_eq!(
            parse_change("a=b"),
            Ok(LabelChange::Set("a".into(), "b".into()))
        );
        assert_eq!(
            parse_change("a="),
            Ok(LabelChange::Set("a".into(), "".into()))
        );
        assert_eq!(
            parse_change("x.io/a-"),
            Ok(LabelChange::Remove("x.io/a".into()))
        );
        assert!(parse_change("a=b=c").is_err());
        assert!(parse_change("a=b c").is_err());
        assert!(parse_change("-a=b").is_err());
        assert!(parse_change("a/b/c=d").is_err());
    }

    #[test]
    fn overwrite_and_absent_keys() {
        let n = node(&[("a", "1")]);
        let ch = |s: &[&str]| {
            s.iter()
                .map(|x| parse_change(x).unwrap())
                .collect::<Vec<_>>()
        };
        assert!(matches!(
            plan(&n, &ch(&["a=1"]), false),
            Step::Unchanged { .. }
        ));
        assert!(
            matches!(plan(&n, &ch(&["a=2"]), false), Step::Refuse(m) if m.message.contains("'a' already has a value (1), and --overwrite is false"))
        );
        assert!(matches!(plan(&n, &ch(&["a=2"]), true), Step::Write { .. }));
        match plan(&n, &ch(&["zz-"]), false) {
            Step::Unchanged { verb, notes } => {
                assert_eq!(verb, "not labeled");
                assert_eq!(notes, ["label \"zz\" not found on node/n1"]);
            }
            other => panic!("{other:?}"),
        }
        match plan(&n, &ch(&["a-", "b=2"]), false) {
            Step::Write { patch, verb, .. } => {
                assert_eq!(
                    patch,
                    json!({"metadata": {"labels": {"a": null, "b": "2"}}})
                );
                assert_eq!(verb, "labeled");
            }
            other => panic!("{other:?}"),
        }
        // kubectl 1.32, checked by hand: `label n a-` prints `unlabeled`,
        // `label n a- --overwrite` prints `labeled`.
        let verb = |specs: &[&str], overwrite: bool| match plan(&n, &ch(specs), overwrite) {
            Step::Write { verb, .. } | Step::Unchanged { verb, .. } => verb,
            other => panic!("{other:?}"),
        };
        assert_eq!(verb(&["a-"], false), "unlabeled");
        assert_eq!(verb(&["a-"], true), "labeled");
        assert_eq!(verb(&["a=2"], true), "labeled");
        assert_eq!(verb(&["zz-"], true), "not labeled");
    }

    #[test]
    fn cross_checks() {
        assert!(split_args(&["n".into(), "a=1".into(), "a-".into()]).is_err());
        assert!(split_args(&["n".into(), "a=1".into(), "a=2".into()]).is_err());
        assert!(split_args(&["n".into()]).is_err());
        let e = split_args(&["n".into(), "a-".into(), "a-".into()]).unwrap_err();
        assert!(e.to_string().contains("removed twice"), "{e}");
        let (_, once) = split_args(&["n".into(), "a=1".into(), "a=1".into()]).unwrap();
        assert_eq!(once, [LabelChange::Set("a".into(), "1".into())]);
        let e = parse_change("a=b:c").unwrap_err();
        assert!(e.contains("value \"b:c\""), "{e}");
    }
}
