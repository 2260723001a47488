//! The starter policy `init` writes: valid, commented, one node pool and one
//! example rule, built from the components found in the user's files, and
//! changing nothing until it is edited. The example rule's `match` names no
//! component yet (every command then says that it matched nothing, and
//! `--strict` fails), and the pool selects no node until its `nodes` or
//! `nodeSelector` line is filled in; the files' components are listed in
//! comments with the names a rule can match them by.

use serde_json::Value as Json;

use crate::outcome::{ComponentReport, FileOutcome};

/// The name of the example rule and of its pool.
pub const EXAMPLE: &str = "example";

/// The placeholder the example rule matches: no component is named so.
pub const PLACEHOLDER: &str = "EDIT-ME";

/// What the starter's pool holds.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pool {
    labels: Vec<(String, String)>,
    /// Key, value, effect.
    taints: Vec<(String, Option<String>, String)>,
    /// Which component the labels and taints were taken from, when any.
    from: Option<String>,
}

impl Pool {
    fn generic() -> Pool {
        Pool {
            labels: vec![("kfsched.dev/pool".into(), EXAMPLE.into())],
            taints: vec![(
                "kfsched.dev/pool".into(),
                Some(EXAMPLE.into()),
                "NoSchedule".into(),
            )],
            from: None,
        }
    }

    /// The labels and taints that the first component already scheduled
    /// (by the SDK's `add_toleration` / `add_node_selector`, say) asks for:
    /// its node selector as the pool's labels, its tolerations with a key
    /// as the pool's taints.
    fn from_components(outcomes: &[FileOutcome]) -> Option<Pool> {
        for o in outcomes {
            for c in o.docs.iter().flat_map(|d| &d.components) {
                let labels: Vec<(String, String)> = c
                    .before
                    .get("nodeSelector")
                    .and_then(Json::as_object)
                    .map(|m| {
                        m.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                            .collect()
                    })
                    .unwrap_or_default();
                let mut taints: Vec<(String, Option<String>, String)> = Vec::new();
                for t in c
                    .before
                    .get("tolerations")
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten()
                {
                    let key = t.get("key").and_then(Json::as_str).unwrap_or("");
                    if key.is_empty() {
                        continue;
                    }
                    let value = t
                        .get("value")
                        .and_then(Json::as_str)
                        .filter(|v| !v.is_empty())
                        .map(str::to_string);
                    let effect = t
                        .get("effect")
                        .and_then(Json::as_str)
                        .filter(|e| matches!(*e, "NoSchedule" | "PreferNoSchedule" | "NoExecute"))
                        .unwrap_or("NoSchedule");
                    if !taints.iter().any(|(k, _, e)| k == key && e == effect) {
                        taints.push((key.to_string(), value, effect.to_string()));
                    }
                }
                if labels.is_empty() && taints.is_empty() {
                    continue;
                }
                return Some(Pool {
                    labels,
                    taints,
                    from: Some(format!("{} in {}", c.label, o.file)),
                });
            }
        }
        None
    }
}

/// The starter policy for the components of `outcomes` (a run under
/// [`crate::policy::Policy::empty`] with details), read from `read` (as
/// the header says it, such as `pipelines/ (2 files)`). Always valid: a
/// pool built from the files that would not validate gives way to the
/// generic one.
pub fn policy(outcomes: &[FileOutcome], read: &str) -> String {
    let pool = Pool::from_components(outcomes).unwrap_or_else(Pool::generic);
    let text = render(outcomes, read, &pool);
    if crate::policy::Policy::from_bytes(crate::discover::POLICY_FILE, text.as_bytes()).is_ok() {
        return text;
    }
    render(outcomes, read, &Pool::generic())
}

/// How many components `outcomes` hold.
pub fn components(outcomes: &[FileOutcome]) -> usize {
    outcomes
        .iter()
        .flat_map(|o| &o.docs)
        .map(|d| d.components.len())
        .sum()
}

/// A YAML scalar that reads back as the string `s`: plain when that is
/// safe (a letter first, then letters, digits and `._/-`, and no word YAML
/// reads as a boolean or null), else double-quoted (JSON's escapes are YAML's).
fn quoted(s: &str) -> String {
    let plain = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "null"
        );
    if plain {
        return s.to_string();
    }
    json_string(s)
}

/// A double-quoted string, as JSON and YAML both read it.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// One line of a comment: line breaks and other control characters become spaces.
fn flat(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn render(outcomes: &[FileOutcome], read: &str, pool: &Pool) -> String {
    let n = components(outcomes);
    let first: Option<&ComponentReport> = outcomes
        .iter()
        .flat_map(|o| &o.docs)
        .flat_map(|d| &d.components)
        .next();
    let mut out = String::new();
    let found = match n {
        0 => format!("no component (nothing in {read} holds a pipeline or workload)"),
        1 => format!("the one component in {read}"),
        n => format!("the {n} components in {read}"),
    };
    out.push_str(&format!(
        "# A starter SchedulingPolicy, written by `kubectl kfsched init` from\n# {}.\n",
        flat(&found)
    ));
    out.push_str(
        "#
# It changes nothing until you edit it: rule \"example\" matches no component
# yet (every command says so until it does, and --strict makes that an error),
# and the pool has no nodes. To put it to work:
#   1. under match.names, put the names of the components the rule is for
#      (globs such as \"train*\"; the components and their names are listed at
#      the end of this file), and run `kubectl kfsched diff` on the files;
#   2. give the pool its nodes (nodes or nodeSelector) and run
#      `kubectl kfsched node diff`, then `kubectl kfsched node apply`, to
#      taint and label them.
# `kubectl kfsched validate` checks this file; the user guide (docs/guide.md)
# explains every field.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: ml-platform      # node apply and node diff record what they add under this name
spec:
  nodePools:
  - name: example
    # The pool's nodes, by name globs or by a label selector (kubectl's syntax):
    # nodes: [\"gpu-node-*\"]
    # nodeSelector: \"accelerator=nvidia-a100\"
",
    );
    match &pool.from {
        Some(from) => out.push_str(&format!(
            "    # Labels and taints as {} already asks for:\n",
            flat(from)
        )),
        None => {
            out.push_str("    # Every node of the pool carries these (node apply adds them):\n")
        }
    }
    if !pool.labels.is_empty() {
        out.push_str("    labels:\n");
        for (k, v) in &pool.labels {
            out.push_str(&format!("      {}: {}\n", quoted(k), quoted(v)));
        }
    }
    if !pool.taints.is_empty() {
        out.push_str("    taints:\n");
        for (k, v, e) in &pool.taints {
            let value = v
                .as_deref()
                .map(|v| format!(", value: {}", quoted(v)))
                .unwrap_or_default();
            out.push_str(&format!(
                "    - {{key: {}{value}, effect: {e}}}\n",
                quoted(k)
            ));
        }
    }
    let example = first
        .and_then(|c| c.names.first())
        .map(|n| format!("for example [{}]", json_string(&flat(n))))
        .unwrap_or_else(|| "for example [\"train*\"]".into());
    out.push_str(&format!(
        "  rules:
  - name: example
    match:
      # Globs against any of a component's names, {example};
      # also images, pipelines and kinds (every key given must match).
      names: [\"{PLACEHOLDER}\"]
    pool: example        # tolerate the pool's taints and require its labels
"
    ));
    out.push_str(
        "
# The components found, with what a rule matches them by: match.names takes
# any of the names (task keys, display names, component names, task paths),
# match.images the images, match.pipelines the pipeline, match.kinds the kind.
",
    );
    for o in outcomes {
        let comps: Vec<&ComponentReport> = o.docs.iter().flat_map(|d| &d.components).collect();
        if comps.is_empty() {
            continue;
        }
        out.push_str(&format!("#\n# {}\n", flat(&o.file)));
        for c in comps {
            let pipeline = match c.pipelines.as_slice() {
                [] => String::new(),
                p => format!(
                    ", pipeline {}",
                    p.iter()
                        .map(|p| json_string(&flat(p)))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            };
            out.push_str(&format!(
                "#   {} (kind {}{pipeline})\n",
                flat(&c.label),
                flat(&c.kind)
            ));
            out.push_str(&format!("#     names:  {}\n", flat(&c.names.join(", "))));
            if !c.images.is_empty() {
                out.push_str(&format!("#     images: {}\n", flat(&c.images.join(", "))));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use crate::rewrite::{Input, Options, process_all};

    fn outcomes(files: &[(&str, &str)]) -> Vec<FileOutcome> {
        let inputs: Vec<Input> = files
            .iter()
            .map(|(f, b)| Input {
                file: f.to_string(),
                bytes: b.as_bytes().to_vec(),
            })
            .collect();
        let opts = Options {
            details: true,
            ..Options::default()
        };
        process_all(&inputs, &Policy::empty(""), &opts)
            .into_iter()
            .map(|r| r.expect("processes"))
            .collect()
    }

    const JOB: &str = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: pytorch/pytorch:2}]\n";

    #[test]
    fn the_starter_is_valid_and_its_rule_matches_nothing() {
        let o = outcomes(&[("job.yaml", JOB)]);
        let text = policy(&o, "job.yaml");
        let p = Policy::from_bytes(".kfsched.yaml", text.as_bytes())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!((p.pools.len(), p.rules.len()), (1, 1), "{text}");
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        // The rule changes nothing: applied to the same files, no output.
        let inputs = [Input {
            file: "job.yaml".into(),
            bytes: JOB.as_bytes().to_vec(),
        }];
        let r = process_all(&inputs, &p, &Options::default());
        let out = r[0].as_ref().expect("ok");
        assert!(out.output.is_none());
        assert_eq!(out.rule_hits(1), [0]);
        assert!(text.contains("#   Job \"train\" (kind Job)\n#     names:  train\n#     images: pytorch/pytorch:2\n"), "{text}");
        assert!(text.contains("for example [\"train\"]"), "{text}");
    }

    #[test]
    fn the_pool_takes_the_scheduling_a_component_already_has() {
        let scheduled = format!(
            "{JOB}      nodeSelector: {{accelerator: a100}}\n      tolerations:\n      - {{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}\n"
        );
        let o = outcomes(&[("job.yaml", &scheduled)]);
        let text = policy(&o, "job.yaml");
        let p = Policy::from_bytes(".kfsched.yaml", text.as_bytes())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(p.pools[0].labels, [("accelerator".into(), "a100".into())]);
        assert_eq!(p.pools[0].taints[0].key, "nvidia.com/gpu");
        assert_eq!(p.pools[0].taints[0].value, None);
        assert!(
            text.contains("# Labels and taints as Job \"train\" in job.yaml already asks for:"),
            "{text}"
        );
        // A label the API server would refuse gives the generic pool.
        let bad = scheduled.replace("accelerator: a100", "\"bad key!\": a100");
        let text = policy(&outcomes(&[("job.yaml", &bad)]), "job.yaml");
        let p = Policy::from_bytes(".kfsched.yaml", text.as_bytes()).expect("valid");
        assert_eq!(
            p.pools[0].labels,
            [("kfsched.dev/pool".into(), "example".into())]
        );
    }

    #[test]
    fn no_component_still_gives_a_valid_starter() {
        let o = outcomes(&[("cm.yaml", "apiVersion: v1\nkind: ConfigMap\n")]);
        let text = policy(&o, "cm.yaml");
        assert!(
            text.contains(
                "from\n# no component (nothing in cm.yaml holds a pipeline or workload)."
            ),
            "{text}"
        );
        Policy::from_bytes(".kfsched.yaml", text.as_bytes()).expect("valid");
    }
}
