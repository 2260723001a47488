//! A rule's `match` and `exclude`: the globs of each key.

use serde_json::Value as Json;

use super::known_kinds;
use super::validate::{Validator, get};
use crate::matching::{Glob, PodRole, Selector};
use crate::suggest::nearest;

impl Validator {
    pub(super) fn selector(&mut self, j: Option<&Json>, path: &str) -> Selector {
        let mut s = Selector::default();
        let Some(j) = j else { return s };
        for key in ["names", "images", "pipelines", "kinds"] {
            let Some(list) = get(j, key).and_then(Json::as_array) else {
                continue;
            };
            let p = format!("{path}.{key}");
            if list.is_empty() {
                self.err(&p, format!("Required value: an empty list matches nothing; list at least one glob or remove {key:?}"));
            }
            let mut globs = Vec::new();
            for (i, g) in list.iter().enumerate() {
                let text = g.as_str().unwrap_or("");
                match Glob::new(text, key == "names") {
                    // A kind is one of a closed set: a glob that can match
                    // none of them is a typo that would select nothing.
                    Ok(g) if key == "kinds" && !known_kinds().any(|k| g.matches(k)) => {
                        let hint = nearest(text, known_kinds())
                            .or_else(|| {
                                known_kinds()
                                    .find(|k| k.eq_ignore_ascii_case(text.trim_end_matches('s')))
                            })
                            .map(|n| format!("; did you mean {n:?}?"))
                            .unwrap_or_default();
                        self.err(
                            &format!("{p}[{i}]"),
                            format!(
                                "Unsupported value: {text:?}: matches no kind kfsched reads ({}){hint}",
                                known_kinds().collect::<Vec<_>>().join(", ")
                            ),
                        );
                    }
                    Ok(g) => globs.push(g),
                    Err(e) => self.err(&format!("{p}[{i}]"), e),
                }
            }
            match key {
                "names" => s.names = Some(globs),
                "images" => s.images = Some(globs),
                "pipelines" => s.pipelines = Some(globs),
                _ => s.kinds = Some(globs),
            }
        }
        if let Some(list) = get(j, "podRoles").and_then(Json::as_array) {
            let p = format!("{path}.podRoles");
            if list.is_empty() {
                self.err(&p, "Required value: an empty list matches nothing; list at least one of executor, driver, importer, or remove \"podRoles\"");
            }
            // Unknown roles are reported by the schema; read as none.
            let mut roles: Vec<PodRole> = list
                .iter()
                .filter_map(|r| r.as_str().and_then(PodRole::parse))
                .collect();
            roles.sort();
            roles.dedup();
            s.pod_roles = Some(roles);
        }
        s
    }
}
