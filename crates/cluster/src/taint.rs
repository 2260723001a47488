//! `node taint`: kubectl's taint syntax and validation, planned per node
//! and written through the resourceVersion-guarded engine.
//!
//! Forms: `key=value:Effect` and `key:Effect` add; `key=value:Effect-` and
//! `key:Effect-` remove that key and effect; `key-` removes every effect of
//! the key. A taint's identity is key + effect (kubectl's `MatchTaint`).
//! Where kfsched differs from kubectl, on purpose: adding a taint that is
//! already there with the same value is a no-op (kubectl errors without
//! `--overwrite`), and removing a taint that is not there is a warning
//! (`taint "k:NoSchedule" not found on node/x`) rather than an error, so a
//! command over `-l`/`--all` is idempotent; this matches `kubectl label k-`.

use std::io::Write;

use k8s_openapi::api::core::v1::{Node, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

use super::client::Clients;
use super::edit::{self, Step, Summary, name_of};
use super::{DryRun, Error, Refusal, RefusalKind, Targets};
use kfsched_core::k8s;

/// The effects the API server accepts.
pub const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// One change asked for on the command line.
#[derive(Clone, Debug, PartialEq)]
pub enum TaintChange {
    /// Add (or with `--overwrite`, change the value of) a taint.
    Add(Taint),
    /// Remove the key's taint with this effect, or every effect of the key.
    Remove { key: String, effect: Option<String> },
}

impl TaintChange {
    /// How the change reads in messages (`key=value:Effect`, `key:Effect-`, `key-`).
    pub fn display(&self) -> String {
        match self {
            TaintChange::Add(t) => display(t),
            TaintChange::Remove {
                key,
                effect: Some(e),
            } => format!("{key}:{e}-"),
            TaintChange::Remove { key, effect: None } => format!("{key}-"),
        }
    }
}

/// `key=value:Effect` or `key:Effect`.
pub fn display(t: &Taint) -> String {
    match t.value.as_deref().filter(|v| !v.is_empty()) {
        Some(v) => format!("{}={}:{}", t.key, v, t.effect),
        None => format!("{}:{}", t.key, t.effect),
    }
}

/// Whether a command-line word is a taint change rather than a node name
/// (node names never contain `=` or `:` nor end with `-`).
pub fn is_change(arg: &str) -> bool {
    arg.contains('=') || arg.contains(':') || arg.ends_with('-')
}

/// Splits `NODE... TAINT...` into node names and parsed changes.
pub fn split_args(args: &[String]) -> Result<(Vec<String>, Vec<TaintChange>), Error> {
    let mut nodes = Vec::new();
    let mut changes = Vec::new();
    for a in args {
        if is_change(a) {
            changes.push(parse_change(a).map_err(Error::Usage)?);
        } else if !changes.is_empty() {
            return Err(Error::Usage(format!(
                "node names go before the taint changes: {a:?} comes after {:?}",
                changes.last().map(TaintChange::display).unwrap_or_default()
            )));
        } else {
            nodes.push(a.clone());
        }
    }
    if changes.is_empty() {
        return Err(Error::Usage(
            "at least one taint change is required: key=value:Effect, key:Effect, key:Effect- or key-".into(),
        ));
    }
    validate_changes(&changes)?;
    Ok((nodes, changes))
}

/// Parses one taint change with kubectl's rules and the API server's
/// validation of keys, values and effects.
pub fn parse_change(spec: &str) -> Result<TaintChange, String> {
    if let Some(body) = spec.strip_suffix('-') {
        // kubectl's forms: key-, key:Effect-, key=value:Effect- (the last
        // removes by key and effect, whatever the value).
        let (kv, effect) = match body.split_once(':') {
            Some((_, e)) if e.contains(':') => {
                return Err(format!(
                    "invalid taint spec {spec:?}: more than one ':'; to remove a taint write key-, key:Effect- or key=value:Effect-"
                ));
            }
            Some((kv, e)) => (kv, Some(e)),
            None => (body, None),
        };
        let (key, value) = match kv.split_once('=') {
            Some((k, _)) if effect.is_none() => {
                return Err(format!(
                    "invalid taint spec {spec:?}: a removal by value needs the effect too ({k}=VALUE:Effect-, which removes {k} with that effect whatever its value), or write {k}- to remove every effect of {k}"
                ));
            }
            Some((_, v)) if v.contains('=') => {
                return Err(format!(
                    "invalid taint spec {spec:?}: more than one '='; the form is key=value:Effect-"
                ));
            }
            Some((k, v)) => (k, Some(v)),
            None => (kv, None),
        };
        check_key(spec, key)?;
        if let Some(v) = value {
            check_value(spec, v)?;
        }
        if let Some(e) = effect {
            check_effect(spec, e)?;
        }
        return Ok(TaintChange::Remove {
            key: key.to_string(),
            effect: effect.map(str::to_string),
        });
    }
    let Some((kv, effect)) = spec.split_once(':') else {
        return Err(format!(
            "invalid taint spec {spec:?}: a taint needs an effect, e.g. {spec}:NoSchedule (effects: NoSchedule, PreferNoSchedule, NoExecute); to remove a taint write {}-",
            spec.split_once('=').map(|(k, _)| k).unwrap_or(spec)
        ));
    };
    if effect.contains(':') {
        return Err(format!(
            "invalid taint spec {spec:?}: more than one ':'; the form is key=value:Effect"
        ));
    }
    let (key, value) = match kv.split_once('=') {
        Some((k, v)) => {
            if v.contains('=') {
                return Err(format!(
                    "invalid taint spec {spec:?}: more than one '='; the form is key=value:Effect"
                ));
            }
            (k, Some(v))
        }
        None => (kv, None),
    };
    check_key(spec, key)?;
    if let Some(v) = value {
        check_value(spec, v)?;
    }
    check_effect(spec, effect)?;
    Ok(TaintChange::Add(Taint {
        key: key.to_string(),
        value: value.filter(|v| !v.is_empty()).map(str::to_string),
        effect: effect.to_string(),
        time_added: None,
    }))
}

fn check_key(spec: &str, key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err(format!("invalid taint spec {spec:?}: the key is empty"));
    }
    let errs = k8s::qualified_name(key);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid taint spec {spec:?}: key {key:?}: {}",
            errs.join("; ")
        ))
    }
}

fn check_value(spec: &str, value: &str) -> Result<(), String> {
    let errs = k8s::label_value(value);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid taint spec {spec:?}: value {value:?}: {}",
            errs.join("; ")
        ))
    }
}

fn check_effect(spec: &str, effect: &str) -> Result<(), String> {
    if EFFECTS.contains(&effect) {
        return Ok(());
    }
    let hint = kfsched_core::suggest::nearest(effect, EFFECTS)
        .map(|n| format!("; did you mean {n:?}?"))
        .unwrap_or_default();
    Err(format!(
        "invalid taint spec {spec:?}: unsupported taint effect {effect:?}: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"{hint}"
    ))
}

/// kubectl's cross-checks: no two additions with one key and effect, no
/// key (and effect) both added and removed.
pub fn validate_changes(changes: &[TaintChange]) -> Result<(), Error> {
    let adds: Vec<&Taint> = changes
        .iter()
        .filter_map(|c| match c {
            TaintChange::Add(t) => Some(t),
            _ => None,
        })
        .collect();
    for (i, a) in adds.iter().enumerate() {
        if adds[..i]
            .iter()
            .any(|b| b.key == a.key && b.effect == a.effect)
        {
            return Err(Error::Usage(format!(
                "taint {}:{} is given twice: a node has at most one taint per key and effect",
                a.key, a.effect
            )));
        }
    }
    // A removal that an earlier one already covers would report "not found".
    let removals: Vec<(&String, &Option<String>, &TaintChange)> = changes
        .iter()
        .filter_map(|c| match c {
            TaintChange::Remove { key, effect } => Some((key, effect, c)),
            _ => None,
        })
        .collect();
    for (i, (key, effect, c)) in removals.iter().enumerate() {
        if let Some((_, _, first)) = removals[..i]
            .iter()
            .find(|(k, e, _)| k == key && (e.is_none() || effect.is_none() || e == effect))
        {
            return Err(Error::Usage(format!(
                "taint removal {} overlaps {}: give each removal once",
                c.display(),
                first.display()
            )));
        }
    }
    for c in changes {
        if let TaintChange::Remove { key, effect } = c
            && let Some(a) = adds
                .iter()
                .find(|a| &a.key == key && effect.as_ref().is_none_or(|e| e == &a.effect))
        {
            return Err(Error::Usage(format!(
                "cannot both add and remove taint {} in one command ({} and {})",
                display(a),
                display(a),
                c.display()
            )));
        }
    }
    Ok(())
}

fn same_value(a: &Option<String>, b: &Option<String>) -> bool {
    a.as_deref().unwrap_or("") == b.as_deref().unwrap_or("")
}

/// The node's taints after the changes, or a refusal naming `--overwrite`.
/// Existing taints keep their order; new ones go at the end.
pub fn apply_changes(
    node: &Node,
    changes: &[TaintChange],
    overwrite: bool,
) -> Result<(Vec<Taint>, Outcome), String> {
    let name = name_of(node);
    let mut taints: Vec<Taint> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let mut outcome = Outcome::default();
    let mut conflicts = Vec::new();
    for c in changes {
        match c {
            TaintChange::Remove { key, effect } => {
                let before = taints.len();
                taints
                    .retain(|t| !(&t.key == key && effect.as_ref().is_none_or(|e| e == &t.effect)));
                if taints.len() == before {
                    let what = match effect {
                        Some(e) => format!("{key}:{e}"),
                        None => key.clone(),
                    };
                    outcome
                        .notes
                        .push(format!("taint {what:?} not found on node/{name}"));
                } else {
                    outcome.removed = true;
                }
            }
            TaintChange::Add(t) => {
                let mut new = t.clone();
                if new.effect == "NoExecute" {
                    new.time_added = Some(Time(k8s_openapi::jiff::Timestamp::now()));
                }
                match taints
                    .iter_mut()
                    .find(|x| x.key == t.key && x.effect == t.effect)
                {
                    Some(existing) if same_value(&existing.value, &t.value) => {}
                    Some(existing) if overwrite => {
                        *existing = new;
                        outcome.added = true;
                    }
                    Some(existing) => conflicts.push(display(existing)),
                    None => {
                        taints.push(new);
                        outcome.added = true;
                    }
                }
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(format!(
            "node/{name} already has taint(s) {} with the same key and effect but another value; use --overwrite to replace the value",
            conflicts.join(", ")
        ));
    }
    Ok((taints, outcome))
}

/// What a plan did to one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub added: bool,
    pub removed: bool,
    pub notes: Vec<String>,
}

impl Outcome {
    /// kubectl's result word (its `reorganizeTaints`: `modified` when
    /// taints were both added and removed, or whenever `--overwrite` is
    /// given). `unchanged` is kfsched's: nothing is written.
    pub fn verb(&self, overwrite: bool) -> &'static str {
        match (self.added, self.removed) {
            (false, false) => "unchanged",
            _ if overwrite => "modified",
            (true, true) => "modified",
            (true, false) => "tainted",
            (false, true) => "untainted",
        }
    }
}

/// Plans one node.
pub fn plan(node: &Node, changes: &[TaintChange], overwrite: bool) -> Step {
    match apply_changes(node, changes, overwrite) {
        Err(m) => Step::Refuse(Refusal::new(RefusalKind::NeedsOverwrite, m)),
        Ok((_, o)) if !o.added && !o.removed => Step::Unchanged {
            verb: o.verb(overwrite).into(),
            notes: o.notes,
        },
        Ok((taints, o)) => {
            let value = if taints.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::to_value(&taints).unwrap_or(serde_json::Value::Null)
            };
            Step::Write {
                patch: json!({"spec": {"taints": value}}),
                verb: o.verb(overwrite).into(),
                guard: true,
                notes: o.notes,
            }
        }
    }
}

/// `node taint`'s options.
#[derive(Clone, Debug)]
pub struct TaintOptions {
    pub targets: Targets,
    pub changes: Vec<TaintChange>,
    pub overwrite: bool,
    pub dry_run: DryRun,
}

/// Runs `node taint`.
pub async fn run(
    clients: &Clients,
    opts: &TaintOptions,
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
    use k8s_openapi::api::core::v1::NodeSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(taints: &[&str]) -> Node {
        let taints = taints
            .iter()
            .map(|t| match parse_change(t).unwrap() {
                TaintChange::Add(t) => t,
                _ => unreachable!(),
            })
            .collect();
        Node {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: Some(taints),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn taints_after(n: &Node, specs: &[&str], overwrite: bool) -> Result<Vec<String>, String> {
        let changes: Vec<TaintChange> = specs.iter().map(|s| parse_change(s).unwrap()).collect();
        apply_changes(n, &changes, overwrite).map(|(t, _)| t.iter().map(display).collect())
    }

    #[test]
    fn every_form_parses() {
        assert!(
            matches!(parse_change("k=v:NoSchedule"), Ok(TaintChange::Add(t)) if t.value.as_deref() == Some("v"))
        );
        assert!(
            matches!(parse_change("k:NoExecute"), Ok(TaintChange::Add(t)) if t.value.is_none())
        );
        assert_eq!(
            parse_change("k=v:NoSchedule-"),
            Ok(TaintChange::Remove {
                key: "k".into(),
                effect: Some("NoSchedule".into())
            })
        );
        assert_eq!(
            parse_change("k:PreferNoSchedule-"),
            Ok(TaintChange::Remove {
                key: "k".into(),
                effect: Some("PreferNoSchedule".into())
            })
        );
        assert_eq!(
            parse_change("example.com/k-"),
            Ok(TaintChange::Remove {
                key: "example.com/k".into(),
                effect: None
            })
        );
    }

    #[test]
    fn invalid_forms_say_why() {
        assert!(parse_change("k=v").unwrap_err().contains("needs an effect"));
        assert!(
            parse_change("k=v:NoSchedul")
                .unwrap_err()
                .contains("did you mean \"NoSchedule\"")
        );
        assert!(parse_change("k=a=b:NoSchedule").is_err());
        assert!(parse_change("-k=v:NoSchedule").is_err());
        assert!(parse_change("k=v v:NoSchedule").is_err());
        assert!(parse_change(&format!("k={}:NoSchedule", "x".repeat(64))).is_err());
        assert!(parse_change(":NoSchedule").is_err());
        assert!(parse_change("k:NoSchedule:x").is_err());
    }

    #[test]
    fn removals_are_validated_like_kubectl() {
        // kubectl's parseTaint: `a=zzz-` is no form of removal.
        let e = parse_change("a=zzz-").unwrap_err();
        assert!(e.contains("needs the effect too"), "{e}");
        assert!(e.contains("a- to remove every effect"), "{e}");
        // The value of key=value:Effect- is checked, and then ignored.
        assert!(
            parse_change("a=b c:NoSchedule-")
                .unwrap_err()
                .contains("value \"b c\"")
        );
        assert!(parse_change(&format!("a={}:NoSchedule-", "x".repeat(64))).is_err());
        assert_eq!(
            parse_change(&format!("a={}:NoSchedule-", "x".repeat(63))),
            Ok(TaintChange::Remove {
                key: "a".into(),
                effect: Some("NoSchedule".into())
            })
        );
        assert!(parse_change("a=b=c:NoSchedule-").is_err());
        assert!(parse_change("a:NoSchedule:x-").is_err());
        assert!(
            parse_change("a:NoSchedul-")
                .unwrap_err()
                .contains("did you mean")
        );
        assert!(parse_change("-").unwrap_err().contains("the key is empty"));
        assert!(parse_change("=v:NoSchedule-").is_err());
        assert!(parse_change("b@d-").is_err());
    }

    #[test]
    fn result_words_are_kubectls() {
        let n = node(&["a=1:NoSchedule", "b:NoExecute"]);
        let verb = |specs: &[&str], overwrite: bool| {
            let changes: Vec<TaintChange> =
                specs.iter().map(|s| parse_change(s).unwrap()).collect();
            apply_changes(&n, &changes, overwrite)
                .unwrap()
                .1
                .verb(overwrite)
        };
        assert_eq!(verb(&["c:NoSchedule"], false), "tainted");
        assert_eq!(verb(&["b-"], false), "untainted");
        assert_eq!(verb(&["c:NoSchedule", "b-"], false), "modified");
        // kubectl: `(added && deleted) || overwrite` is MODIFIED.
        assert_eq!(verb(&["c:NoSchedule"], true), "modified");
        assert_eq!(verb(&["a=2:NoSchedule"], true), "modified");
        assert_eq!(verb(&["b-"], true), "modified");
        assert_eq!(verb(&["a=1:NoSchedule"], true), "unchanged");
    }

    #[test]
    fn cross_checks() {
        let e = split_args(&["n".into(), "k=a:NoSchedule".into(), "k=b:NoSchedule".into()])
            .unwrap_err();
        assert!(e.to_string().contains("given twice"));
        let e = split_args(&["n".into(), "k=a:NoSchedule".into(), "k-".into()]).unwrap_err();
        assert!(e.to_string().contains("both add and remove"));
        assert!(split_args(&["n".into(), "k=a:NoSchedule".into(), "k:NoExecute-".into()]).is_ok());
        let e = split_args(&["k=a:NoSchedule".into(), "n".into()]).unwrap_err();
        assert!(e.to_string().contains("go before"));
        // A removal an earlier one covers would report "not found".
        for pair in [
            ["k-", "k-"],
            ["k-", "k:NoSchedule-"],
            ["k:NoSchedule-", "k-"],
        ] {
            let e = split_args(&["n".into(), pair[0].into(), pair[1].into()]).unwrap_err();
            assert!(
                e.to_string().contains("give each removal once"),
                "{pair:?}: {e}"
            );
        }
        assert!(split_args(&["n".into(), "k:NoSchedule-".into(), "k:NoExecute-".into()]).is_ok());
        assert!(split_args(&["n".into()]).is_err());
    }

    #[test]
    fn identity_is_key_and_effect() {
        let n = node(&["a=1:NoSchedule", "b:NoExecute"]);
        assert_eq!(
            taints_after(&n, &["a=1:NoSchedule"], false).unwrap(),
            ["a=1:NoSchedule", "b:NoExecute"]
        );
        assert!(
            taints_after(&n, &["a=2:NoSchedule"], false)
                .unwrap_err()
                .contains("--overwrite")
        );
        assert_eq!(
            taints_after(&n, &["a=2:NoSchedule"], true).unwrap(),
            ["a=2:NoSchedule", "b:NoExecute"]
        );
        assert_eq!(
            taints_after(&n, &["a=2:PreferNoSchedule"], false).unwrap(),
            ["a=1:NoSchedule", "b:NoExecute", "a=2:PreferNoSchedule"]
        );
        assert_eq!(taints_after(&n, &["a-"], false).unwrap(), ["b:NoExecute"]);
        assert_eq!(
            taints_after(&n, &["a:NoExecute-"], false).unwrap(),
            ["a=1:NoSchedule", "b:NoExecute"]
        );
    }

    #[test]
    fn removing_an_absent_taint_is_a_note() {
        let n = node(&["a=1:NoSchedule"]);
        let changes = vec![parse_change("zz-").unwrap()];
        let (_, o) = apply_changes(&n, &changes, false).unwrap();
        assert_eq!(o.notes, ["taint \"zz\" not found on node/n1"]);
        assert!(matches!(plan(&n, &changes, false), Step::Unchanged { .. }));
    }
}
