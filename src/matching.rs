//! Which rules select which components, and why: every verdict carries its
//! reason, so `explain` can say which selector failed.

use crate::format::Component;
use crate::policy::{Glob, Rule, Selector};

/// A rule's verdict on one component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Selected,
    /// A `match` key did not match: the key and why.
    Unmatched(String),
    /// An `exclude` selector matched: which key and value.
    Excluded(String),
}

impl Verdict {
    pub fn selected(&self) -> bool {
        matches!(self, Verdict::Selected)
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            Verdict::Selected => None,
            Verdict::Unmatched(r) | Verdict::Excluded(r) => Some(r),
        }
    }
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    let shown: Vec<&str> = v.iter().take(8).map(String::as_str).collect();
    let more = if v.len() > 8 {
        format!(", … {} more", v.len() - 8)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

fn globs(g: &[Glob]) -> String {
    let t: Vec<String> = g.iter().map(|g| format!("{:?}", g.text)).collect();
    format!("[{}]", t.join(", "))
}

/// The first key of `sel` that does not match, with a reason; `None` when all present keys match.
fn first_miss(sel: &Selector, c: &Component, prefix: &str) -> Option<String> {
    let kind = [c.kind.clone()];
    let pipeline: Vec<String> = c.pipeline.iter().cloned().collect();
    type Key<'a> = (&'a str, &'a Option<Vec<Glob>>, &'a [String], &'a str);
    let keys: [Key; 4] = [
        ("names", &sel.names, &c.names, "names"),
        ("images", &sel.images, &c.images, "images"),
        ("pipelines", &sel.pipelines, &pipeline, "pipeline"),
        ("kinds", &sel.kinds, &kind, "kind"),
    ];
    for (key, g, values, what) in keys {
        let Some(g) = g else { continue };
        if !values.iter().any(|v| g.iter().any(|p| p.matches(v))) {
            let detail = if key == "pipelines" && values.is_empty() {
                "a plain workload has no pipeline".to_string()
            } else {
                format!("{what}: {}", list(values))
            };
            return Some(format!(
                "{prefix}.{key} {} matches none ({detail})",
                globs(g)
            ));
        }
    }
    None
}

/// The first `exclude` hit, described.
fn exclusion(sel: &Selector, c: &Component) -> Option<String> {
    if sel.is_empty() || first_miss(sel, c, "exclude").is_some() {
        return None;
    }
    let kind = [c.kind.clone()];
    let pipeline: Vec<String> = c.pipeline.iter().cloned().collect();
    for (key, g, values) in [
        ("names", &sel.names, &c.names[..]),
        ("images", &sel.images, &c.images[..]),
        ("pipelines", &sel.pipelines, &pipeline[..]),
        ("kinds", &sel.kinds, &kind[..]),
    ] {
        if let Some(g) = g {
            for v in values {
                if let Some(p) = g.iter().find(|p| p.matches(v)) {
                    return Some(format!("exclude.{key} {:?} matches {v:?}", p.text));
                }
            }
        }
    }
    Some("excluded".into())
}

/// Whether `rule` selects `c`, and if not, why.
pub fn judge(rule: &Rule, c: &Component) -> Verdict {
    if let Some(miss) = first_miss(&rule.matcher, c, "match") {
        return Verdict::Unmatched(miss);
    }
    if let Some(ex) = exclusion(&rule.exclude, c) {
        return Verdict::Excluded(ex);
    }
    Verdict::Selected
}
