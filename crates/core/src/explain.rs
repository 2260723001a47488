//! `explain`: every component, its names and images, which rules matched,
//! why the others did not, and the scheduling that results. Without a
//! policy, the components and the names a rule can match them by.

use serde_json::{Value as Json, json};

use crate::matching::Subject;
use crate::outcome::ComponentReport;
use crate::outcome::FileOutcome;
use crate::policy::Policy;
use kfsched_yaml::Value;
use kfsched_yaml::block::flow_text;

/// Rules that selected no component in any of the files.
pub(crate) fn unmatched_rules<'p>(policy: &'p Policy, outcomes: &[FileOutcome]) -> Vec<&'p str> {
    let hits = crate::outcome::rule_hits(policy, outcomes);
    policy
        .rules
        .iter()
        .zip(hits)
        .filter(|(r, h)| *h == 0 && r.reaches_files())
        .map(|(r, _)| r.name.as_str())
        .collect()
}

fn subject(c: &ComponentReport) -> Subject<'_> {
    Subject {
        names: &c.names,
        images: &c.images,
        pipelines: &c.pipelines,
        kind: &c.kind,
        role: c.role,
    }
}

/// The result in flow style; in text, long strings (kfp 1.8's
/// `component_spec` annotation runs to kilobytes) are cut to their start and
/// their length. `-o json` has them whole.
fn flow(j: &Json) -> String {
    flow_text(&Value::from_json(&shorten(j)))
}

const SHOWN: usize = 60;

fn shorten(j: &Json) -> Json {
    match j {
        Json::String(s) if s.chars().count() > SHOWN + 20 => {
            let head: String = s.chars().take(SHOWN).collect();
            Json::String(format!("{head}... ({} characters)", s.chars().count()))
        }
        Json::Array(a) => Json::Array(a.iter().map(shorten).collect()),
        Json::Object(m) => Json::Object(m.iter().map(|(k, v)| (k.clone(), shorten(v))).collect()),
        other => other.clone(),
    }
}

/// The text report.
pub fn text(policy: &Policy, outcomes: &[FileOutcome], verbose: bool) -> String {
    report(Some(policy), outcomes, verbose)
}

/// The text report without a policy: every component with the names,
/// images, pipeline and kind a rule can match it by, and its scheduling
/// as it is. `outcomes` come from a run under [`Policy::empty`].
pub fn components(outcomes: &[FileOutcome], verbose: bool) -> String {
    report(None, outcomes, verbose)
}

fn report(policy: Option<&Policy>, outcomes: &[FileOutcome], verbose: bool) -> String {
    let none = Policy::empty("");
    let listing = policy.is_none();
    let policy = policy.unwrap_or(&none);
    let mut out = String::new();
    for o in outcomes {
        if !o.is_pipeline() && !verbose {
            continue;
        }
        out.push_str(&format!(
            "{}{}\n",
            o.file,
            if o.changed() && !listing {
                "  (would change)"
            } else {
                ""
            }
        ));
        for d in &o.docs {
            if let Some(why) = &d.skipped_because {
                if verbose {
                    out.push_str(&format!("  document {}: skipped: {why}\n", d.index + 1));
                }
                continue;
            }
            let pipelines = d
                .components
                .first()
                .map(|c| c.pipelines.clone())
                .unwrap_or_default();
            let kind = if d.format == "v1 List" {
                // Items may be of several kinds.
                let mut kinds: Vec<&str> = Vec::new();
                for c in &d.components {
                    if !kinds.contains(&c.kind.as_str()) {
                        kinds.push(&c.kind);
                    }
                }
                if kinds.is_empty() {
                    // Every item skipped (made by a controller, say).
                    String::new()
                } else {
                    format!("of {}", kinds.join(", "))
                }
            } else {
                d.components
                    .first()
                    .map(|c| c.kind.clone())
                    .unwrap_or_default()
            };
            out.push_str(&format!(
                "  document {}: {}{}{}\n",
                d.index + 1,
                d.format,
                if kind.is_empty() {
                    String::new()
                } else {
                    format!(" {kind}")
                },
                match pipelines.as_slice() {
                    [] => String::new(),
                    [one] => format!(", pipeline {one:?}"),
                    many => format!(
                        ", pipelines {}",
                        many.iter()
                            .map(|p| format!("{p:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            ));
            for c in &d.components {
                out.push_str(&format!("    {}\n", c.label));
                out.push_str(&format!("      names:   {}\n", c.names.join(", ")));
                if !c.images.is_empty() {
                    out.push_str(&format!("      images:  {}\n", c.images.join(", ")));
                }
                for (rule, v) in policy.rules.iter().zip(&c.verdicts) {
                    match rule.reason(v, subject(c)) {
                        None => out.push_str(&format!("      matched  {}\n", rule.name)),
                        Some(why) => {
                            out.push_str(&format!("      not      {}: {why}\n", rule.name))
                        }
                    }
                }
                let (shown, hidden) = scheduling_and_rule_metadata(policy, c);
                let result = if shown.as_object().is_some_and(|m| m.is_empty()) {
                    "(none)".to_string()
                } else {
                    flow(&shown)
                };
                let hidden = match hidden {
                    0 => String::new(),
                    1 => "  (1 more pod label or annotation: -o json)".into(),
                    n => format!("  ({n} more pod labels and annotations: -o json)"),
                };
                if listing {
                    out.push_str(&format!("      now:     {result}{hidden}\n"));
                } else {
                    out.push_str(&format!(
                        "      result:  {result}{}{hidden}\n",
                        if c.changed { "" } else { "  (unchanged)" }
                    ));
                }
                for w in &c.warnings {
                    out.push_str(&format!("      warning: {w}\n"));
                }
            }
            for s in &d.skipped {
                out.push_str(&format!("    {}: skipped: {}\n", s.label, s.reason));
            }
        }
    }
    let unmatched = unmatched_rules(policy, outcomes);
    if !unmatched.is_empty() {
        out.push_str(&format!(
            "rules that matched nothing: {}\n",
            unmatched.join(", ")
        ));
    }
    out
}

/// The component's resulting scheduling as the text report shows it: the
/// scheduling fields, and of its pod labels and annotations only the keys
/// that a rule selecting it sets (a KFP v1 template carries KFP's own, the
/// long `component_spec` among them). Also how many were left out.
fn scheduling_and_rule_metadata(policy: &Policy, c: &ComponentReport) -> (Json, usize) {
    let mut shown = c.after.clone();
    let mut hidden = 0;
    let selected: Vec<&crate::policy::Rule> = policy
        .rules
        .iter()
        .zip(&c.verdicts)
        .filter(|(_, v)| v.selected())
        .map(|(r, _)| r)
        .collect();
    for (field, set) in [
        (
            "podLabels",
            selected
                .iter()
                .flat_map(|r| r.pod_labels.iter().map(|(k, _)| k.as_str()))
                .collect::<Vec<_>>(),
        ),
        (
            "podAnnotations",
            selected
                .iter()
                .flat_map(|r| r.pod_annotations.iter().map(|(k, _)| k.as_str()))
                .collect::<Vec<_>>(),
        ),
    ] {
        let Some(Json::Object(m)) = shown.get_mut(field) else {
            continue;
        };
        let before = m.len();
        m.retain(|k, _| set.contains(&k.as_str()));
        hidden += before - m.len();
        if m.is_empty() {
            if let Some(o) = shown.as_object_mut() {
                o.remove(field);
            }
        }
    }
    (shown, hidden)
}

/// The JSON report (`-o json`).
pub fn json(policy: &Policy, outcomes: &[FileOutcome]) -> Json {
    let files: Vec<Json> = outcomes
        .iter()
        .map(|o| {
            let docs: Vec<Json> = o
                .docs
                .iter()
                .map(|d| {
                    let comps: Vec<Json> = d
                        .components
                        .iter()
                        .map(|c| {
                            let rules: Vec<Json> = policy
                                .rules
                                .iter()
                                .zip(&c.verdicts)
                                .map(|(r, v)| json!({"rule": r.name, "matched": v.selected(), "reason": r.reason(v, subject(c))}))
                                .collect();
                            json!({
                                "component": c.label,
                                "kind": c.kind,
                                "pipeline": c.pipelines.first(),
                                "pipelines": c.pipelines,
                                "role": c.role.map(|r| r.name()),
                                "taskPath": c.task_path,
                                "names": c.names,
                                "images": c.images,
                                "rules": rules,
                                "before": c.before,
                                "after": c.after,
                                "changed": c.changed,
                                "warnings": c.warnings,
                            })
                        })
                        .collect();
                    let skipped: Vec<Json> = d.skipped.iter().map(|s| json!({"component": s.label, "reason": s.reason})).collect();
                    json!({
                        "document": d.index + 1,
                        "format": d.format,
                        "skippedBecause": d.skipped_because,
                        "components": comps,
                        "skipped": skipped,
                    })
                })
                .collect();
            json!({
                "file": o.file,
                "changed": o.changed(),
                "documents": docs,
                "warnings": o.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "policy": (!policy.file.is_empty()).then_some(&policy.file),
        "files": files,
        "unmatchedRules": unmatched_rules(policy, outcomes),
    })
}

/// A JSON report (such as [`json`](fn@json)'s) as block YAML, for `-o yaml`.
pub fn yaml(j: &Json) -> String {
    let v = Value::from_json(j);
    let style = kfsched_yaml::BlockStyle::default();
    let mut out = String::new();
    for (k, v) in v.as_map().unwrap_or_default() {
        out.push_str(&style.entry(k, v, 0));
    }
    out
}
