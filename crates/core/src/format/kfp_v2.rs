//! KFP v2 pipeline IR (`PipelineSpec`) and its Kubernetes platform document.
//!
//! Components are the tasks, at any DAG depth, whose component runs a
//! `container` executor (importers are skipped: KFP applies no Kubernetes
//! config to them). Scheduling lives in the second document at
//! `platforms.kubernetes.deploymentSpec.executors.<executor label>`, which
//! is created when something is first written into it.

use std::collections::BTreeMap;

use kfsched_yaml::hash::HashMap;

use super::{
    Change, Component, Place, Skipped, View, Write, at, at_node, field, field_own, push_unique,
};
use crate::scheduling::{Sched, opaque, pref_from_v2, term_from_raw, tol_from_raw};
use kfsched_yaml::edit::{Edit, Flavor, Placement};
use kfsched_yaml::skim::{Pattern, Then};
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::{Value, effective_value};

/// The kind `match.kinds` names a KFP v2 pipeline by (SPEC §1).
pub const KIND: &str = "PipelineSpec";

/// One pipeline document (and the platform document after it, if any).
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// The index (in the parsed tree) of the document after this one, where
    /// a new platform document goes; `None` when this one is the last.
    pub next_doc: Option<usize>,
    /// Written by the KFP SDK (`sdkVersion: kfp-...`).
    pub sdk: bool,
    pub name: String,
    pub components: Vec<Component>,
    pub skipped: Vec<Skipped>,
    /// Root of the platform document.
    pub platform: Option<NodeId>,
    /// Executor label → indices of the components that use it.
    pub executor_tasks: BTreeMap<String, Vec<usize>>,
    /// Set when the pipeline is the `spec.pipelineSpec` of a KFP
    /// `PipelineVersion` manifest: its platform spec is `spec.platformSpec`.
    pub manifest: Option<super::pipeline_version::Manifest>,
}

/// The spellings of the executor config keys kfsched reads and edits
/// (protojson accepts both; kfsched writes camelCase).
const TOLERATIONS: (&str, &str) = ("tolerations", "tolerations");
const NODE_SELECTOR: (&str, &str) = ("nodeSelector", "node_selector");
const NODE_AFFINITY: (&str, &str) = ("nodeAffinity", "node_affinity");
const POD_METADATA: (&str, &str) = ("podMetadata", "pod_metadata");

fn spelled(v: &Value, names: (&str, &str)) -> Option<(String, Value)> {
    for n in [names.0, names.1] {
        if let Some(x) = v.get(n) {
            return Some((n.to_string(), x.clone()));
        }
    }
    None
}

/// What the KFP v2 reader needs from a pipeline document.
pub const PROJECTION: &[Pattern] = &[
    Pattern {
        key: "pipelineInfo",
        then: Then::Map(
            &[Pattern {
                key: "name",
                then: Then::Scalar,
            }],
            false,
        ),
    },
    Pattern {
        key: "sdkVersion",
        then: Then::Scalar,
    },
    Pattern {
        key: "root",
        then: Then::Map(DAG_HOLDER, false),
    },
    Pattern {
        key: "components",
        then: Then::Map(
            &[Pattern {
                key: "*",
                then: Then::Map(COMPONENT, false),
            }],
            false,
        ),
    },
    Pattern {
        key: "deploymentSpec",
        then: Then::Map(
            &[Pattern {
                key: "executors",
                then: Then::Map(
                    &[Pattern {
                        key: "*",
                        then: Then::Map(EXECUTOR, true),
                    }],
                    false,
                ),
            }],
            false,
        ),
    },
];
const NAME: &[Pattern] = &[Pattern {
    key: "name",
    then: Then::Scalar,
}];
const TASK: &[Pattern] = &[
    Pattern {
        key: "componentRef",
        then: Then::Map(NAME, false),
    },
    Pattern {
        key: "taskInfo",
        then: Then::Map(NAME, false),
    },
];
const DAG: &[Pattern] = &[Pattern {
    key: "tasks",
    then: Then::Map(
        &[Pattern {
            key: "*",
            then: Then::Map(TASK, false),
        }],
        false,
    ),
}];
const DAG_HOLDER: &[Pattern] = &[Pattern {
    key: "dag",
    then: Then::Map(DAG, false),
}];
const COMPONENT: &[Pattern] = &[
    Pattern {
        key: "executorLabel",
        then: Then::Scalar,
    },
    Pattern {
        key: "dag",
        then: Then::Map(DAG, false),
    },
];
const EXECUTOR: &[Pattern] = &[Pattern {
    key: "container",
    then: Then::Map(
        &[Pattern {
            key: "image",
            then: Then::Scalar,
        }],
        true,
    ),
}];

impl Pipeline {
    /// Reads a pipeline document: a span-tree node or a skimmed [`PROJECTION`].
    pub fn parse<'s, V: View<'s>>(
        root: V,
        next_doc: Option<usize>,
        platform: Option<NodeId>,
    ) -> Pipeline {
        Pipeline::read(root, next_doc, platform, KIND, Vec::new())
    }

    /// Reads a pipeline IR whose components are of document kind `kind`
    /// and whose pipeline is also called by `names` (besides
    /// `pipelineInfo.name`, which comes last).
    pub(crate) fn read<'s, V: View<'s>>(
        root: V,
        next_doc: Option<usize>,
        platform: Option<NodeId>,
        kind: &str,
        mut pipelines: Vec<String>,
    ) -> Pipeline {
        let name = at(root, &["pipelineInfo", "name"])
            .and_then(V::text)
            .unwrap_or("")
            .to_string();
        push_unique(&mut pipelines, &name);
        let sdk = root
            .field("sdkVersion")
            .and_then(V::text)
            .is_some_and(|s| s.starts_with("kfp-"));
        let components_map: HashMap<&str, V> = root
            .field("components")
            .map(|m| m.entries().into_iter().collect())
            .unwrap_or_default();
        let executors: HashMap<&str, V> = at(root, &["deploymentSpec", "executors"])
            .map(|m| m.entries().into_iter().collect())
            .unwrap_or_default();
        let mut p = Pipeline {
            next_doc,
            sdk,
            name: name.clone(),
            components: Vec::new(),
            skipped: Vec::new(),
            platform,
            executor_tasks: BTreeMap::new(),
            manifest: None,
        };
        let Some(root_tasks) = at(root, &["root", "dag", "tasks"]) else {
            return p;
        };
        // Depth-first over nested DAGs without recursion; `chain` guards against cycles.
        let mut stack: Vec<(V, String, Vec<String>)> =
            vec![(root_tasks, String::new(), Vec::new())];
        while let Some((tasks, prefix, chain)) = stack.pop() {
            if !tasks.is_map() {
                continue;
            }
            let mut nested = Vec::new();
            for (key, task) in tasks.entries() {
                let path = format!("{prefix}{key}");
                let comp_name = at(task, &["componentRef", "name"])
                    .and_then(V::text)
                    .unwrap_or("")
                    .to_string();
                let comp = components_map.get(comp_name.as_str()).copied();
                let display = at(task, &["taskInfo", "name"])
                    .and_then(V::text)
                    .unwrap_or("")
                    .to_string();
                let label = if path == key {
                    format!("task {key:?}")
                } else {
                    format!("task {key:?} ({path})")
                };
                let Some(comp) = comp else {
                    p.skipped.push(Skipped {
                        label,
                        reason: format!("its component {comp_name:?} is not in `components`"),
                    });
                    continue;
                };
                if let Some(dag_tasks) = at(comp, &["dag", "tasks"]) {
                    if chain.contains(&comp_name) {
                        p.skipped.push(Skipped {
                            label,
                            reason: format!("component {comp_name:?} contains itself"),
                        });
                        continue;
                    }
                    let mut c2 = chain.clone();
                    c2.push(comp_name.clone());
                    nested.push((dag_tasks, format!("{path}/"), c2));
                    continue;
                }
                let Some(exec_label) = comp
                    .field("executorLabel")
                    .and_then(V::text)
                    .map(str::to_string)
                else {
                    p.skipped.push(Skipped {
                        label,
                        reason: "its component has neither a dag nor an executorLabel".into(),
                    });
                    continue;
                };
                let exec = executors.get(exec_label.as_str()).copied();
                let Some(container) = exec.and_then(|e| e.field("container")) else {
                    let what = exec
                        .and_then(|e| e.entries().first().map(|(k, _)| k.to_string()))
                        .unwrap_or_else(|| "missing".into());
                    p.skipped.push(Skipped {
                        label,
                        reason: if what == "importer" {
                            "importer: KFP applies no Kubernetes config to importers".into()
                        } else {
                            format!("executor {exec_label:?} is not a container executor ({what})")
                        },
                    });
                    continue;
                };
                let mut names = Vec::new();
                push_unique(&mut names, key);
                push_unique(&mut names, &display);
                push_unique(&mut names, &comp_name);
                push_unique(
                    &mut names,
                    comp_name.strip_prefix("comp-").unwrap_or(&comp_name),
                );
                push_unique(&mut names, &exec_label);
                push_unique(&mut names, &path);
                let images: Vec<String> = container
                    .field("image")
                    .and_then(V::text)
                    .map(|i| vec![i.to_string()])
                    .unwrap_or_default();
                p.executor_tasks
                    .entry(exec_label.clone())
                    .or_default()
                    .push(p.components.len());
                p.components.push(Component {
                    kind: kind.to_string(),
                    pipelines: pipelines.clone(),
                    names,
                    images,
                    task_path: Some(path.clone()),
                    role: Some(crate::matching::PodRole::Executor),
                    label,
                    place: Place::KfpV2 {
                        executor: exec_label,
                    },
                });
            }
            stack.extend(nested.into_iter().rev());
        }
        p
    }

    fn executors_node(&self, tree: &Tree) -> Option<NodeId> {
        at_node(
            tree,
            self.platform?,
            &["platforms", "kubernetes", "deploymentSpec", "executors"],
        )
    }

    fn config_node(&self, tree: &Tree, executor: &str) -> Option<NodeId> {
        field(tree, self.executors_node(tree)?, executor)
    }

    /// Reads an executor's current config.
    pub fn read_executor(&self, tree: &Tree, executor: &str) -> Sched {
        let mut s = Sched::default();
        let Some(cfg) = self.config_node(tree, executor) else {
            return s;
        };
        let cfg = effective_value(tree, cfg);
        if let Some((_, Value::Seq(items))) = spelled(&cfg, TOLERATIONS) {
            s.tolerations = items.iter().map(tol_from_raw).collect();
        }
        if let Some((_, ns)) = spelled(&cfg, NODE_SELECTOR) {
            if let Some(Value::Map(labels)) = ns.get("labels") {
                s.node_selector = labels.clone();
            }
            s.node_selector_json = ns
                .get("nodeSelectorJson")
                .or_else(|| ns.get("node_selector_json"))
                .filter(|v| !v.is_null())
                .cloned();
        }
        if let Some((_, Value::Seq(terms))) = spelled(&cfg, NODE_AFFINITY) {
            for t in &terms {
                if t.get("nodeAffinityJson")
                    .or_else(|| t.get("node_affinity_json"))
                    .is_some()
                {
                    s.affinity_json.push(t.clone());
                } else if t.get("weight").is_some_and(|w| !w.is_null()) {
                    s.preferred.push(pref_from_v2(t));
                } else {
                    let term = term_from_raw(t);
                    if !term.reqs.is_empty() {
                        s.required.push(term);
                    }
                }
            }
        }
        if let Some((_, pm)) = spelled(&cfg, POD_METADATA) {
            if let Some(Value::Map(l)) = pm.get("labels") {
                s.labels = l.clone();
            }
            if let Some(Value::Map(a)) = pm.get("annotations") {
                s.annotations = a.clone();
            }
        }
        let _ = opaque;
        s
    }

    /// The executor config an executor should have after the change.
    fn desired(&self, tree: &Tree, executor: &str, ch: &Change) -> Value {
        let existing = self
            .config_node(tree, executor)
            .map(|n| effective_value(tree, n))
            .unwrap_or(Value::Map(vec![]));
        let mut cfg = existing.clone();
        let after = &ch.after;
        let mut c = ch.changed;
        if c.replaced_affinity {
            c.required = true;
            c.preferred = true;
        }
        if c.tolerations {
            let key = spelled(&existing, TOLERATIONS)
                .map(|(k, _)| k)
                .unwrap_or_else(|| "tolerations".into());
            cfg.set(
                &key,
                Value::Seq(
                    after
                        .tolerations
                        .iter()
                        .map(|t| Value::clone(&t.raw))
                        .collect(),
                ),
            );
        }
        if c.node_selector {
            let (key, mut ns) = spelled(&existing, NODE_SELECTOR)
                .unwrap_or_else(|| ("nodeSelector".into(), Value::Map(vec![])));
            if !matches!(ns, Value::Map(_)) {
                ns = Value::Map(vec![]);
            }
            ns.set("labels", Value::Map(after.node_selector.clone()));
            if after.node_selector_json.is_none() {
                ns.remove("nodeSelectorJson");
                ns.remove("node_selector_json");
            }
            cfg.set(&key, ns);
        }
        if c.affinity() {
            let (key, list) = spelled(&existing, NODE_AFFINITY)
                .unwrap_or_else(|| ("nodeAffinity".into(), Value::Seq(vec![])));
            let original: Vec<Value> = list.as_seq().map(<[Value]>::to_vec).unwrap_or_default();
            let mut new_prefs: Vec<(u32, Value)> = after
                .preferred
                .iter()
                .map(|p| (p.added.unwrap_or(0), p.raw.clone()))
                .collect();
            let mut out = Vec::new();
            let mut placed = !c.required;
            let original = if c.replaced_affinity {
                Vec::new()
            } else {
                original
            };
            for item in &original {
                let is_json = item
                    .get("nodeAffinityJson")
                    .or_else(|| item.get("node_affinity_json"))
                    .is_some();
                if is_json {
                    if !after.affinity_json.is_empty() {
                        out.push(item.clone());
                    }
                } else if item.get("weight").is_some_and(|w| !w.is_null()) {
                    if let Some(pos) = new_prefs.iter().position(|p| &p.1 == item) {
                        out.push(new_prefs.remove(pos).1);
                    }
                } else if term_from_raw(item).reqs.is_empty() || !c.required {
                    // Empty terms stay; so do required terms nothing changed.
                    out.push(item.clone());
                } else if !placed {
                    out.extend(after.required.iter().map(|t| t.raw.clone()));
                    placed = true;
                }
            }
            // New entries in the order the rules added them.
            let mut tail: Vec<(u32, Vec<Value>)> =
                new_prefs.into_iter().map(|(s, v)| (s, vec![v])).collect();
            if !placed {
                tail.push((
                    after.required_at.unwrap_or(0),
                    after.required.iter().map(|t| t.raw.clone()).collect(),
                ));
            }
            tail.sort_by_key(|(s, _)| *s);
            out.extend(tail.into_iter().flat_map(|(_, v)| v));
            if out.is_empty() {
                cfg.remove(&key);
            } else {
                cfg.set(&key, Value::Seq(out));
            }
        }
        if c.labels || c.annotations {
            let (key, mut pm) = spelled(&existing, POD_METADATA)
                .unwrap_or_else(|| ("podMetadata".into(), Value::Map(vec![])));
            if !matches!(pm, Value::Map(_)) {
                pm = Value::Map(vec![]);
            }
            if c.labels {
                pm.set("labels", Value::Map(after.labels.clone()));
            }
            if c.annotations {
                pm.set("annotations", Value::Map(after.annotations.clone()));
            }
            cfg.set(&key, pm);
        }
        cfg
    }

    /// Writes the changed executors of this pipeline into `out`, one
    /// executor at a time: each change is dropped once its executor config
    /// is built, and a new platform document goes out entry by entry
    /// ([`Write::Document`]), so a pipeline of thousands of tasks never
    /// holds all its configs at once.
    pub fn write(
        &self,
        tree: &Tree,
        _flavor: Flavor,
        mut changes: Vec<Change>,
        out: &mut dyn FnMut(Write<'_>),
    ) {
        fn executor<'c>(ch: &Change<'c>) -> Option<&'c str> {
            match &ch.component.place {
                Place::KfpV2 { executor } => Some(executor),
                _ => None,
            }
        }
        changes.retain(|ch| executor(ch).is_some());
        // By executor, in the order the SDK writes them (sorted); the first
        // change of an executor writes it (tasks sharing one agree).
        changes.sort_by(|a, b| executor(a).cmp(&executor(b)));
        changes.dedup_by(|later, first| executor(later) == executor(first));
        if changes.is_empty() {
            return;
        }
        let mut configs = changes.into_iter().map(|ch| {
            let label = executor(&ch).unwrap_or_default().to_string();
            // Keys in the order the SDK writes them (sorted), for new keys
            // in existing maps too; existing keys stay where they are.
            let mut d = self.desired(tree, &label, &ch);
            d.sort_keys();
            (label, d)
        });
        let path = ["platforms", "kubernetes", "deploymentSpec", "executors"];
        let Some(platform) = self.platform else {
            if let Some(m) = &self.manifest {
                // `spec.platformSpec`, at its sorted place in `spec`.
                return out(Write::Edit(Edit::Insert {
                    map: m.spec,
                    key: "platformSpec".into(),
                    value: nest(&path, Value::Map(configs.collect())),
                    placement: Placement::Sorted,
                }));
            }
            // Right after this pipeline, where the SDK writes it and where
            // it is read back as this pipeline's.
            return out(Write::Document {
                before: self.next_doc,
                path: &path,
                entries: &mut configs,
            });
        };
        // Walk down as far as the platform document goes, then add the rest.
        let mut node = platform;
        for (i, k) in path.iter().enumerate() {
            match field_own(tree, node, k).filter(|&n| tree.kind(n) == Kind::Map) {
                Some(next) => node = next,
                None => {
                    let value = nest(&path[i + 1..], Value::Map(configs.collect()));
                    return out(Write::Edit(match tree.get_value(node, k) {
                        Some(existing) => Edit::Reconcile {
                            node: existing,
                            desired: value,
                            placement: Placement::Sorted,
                        },
                        None => Edit::Insert {
                            map: node,
                            key: k.to_string(),
                            value,
                            placement: Placement::Sorted,
                        },
                    }));
                }
            }
        }
        for (label, desired) in configs {
            out(Write::Edit(match tree.get_value(node, &label) {
                Some(cfg) => Edit::Reconcile {
                    node: cfg,
                    desired,
                    placement: Placement::Sorted,
                },
                None => Edit::Insert {
                    map: node,
                    key: label,
                    value: desired,
                    placement: Placement::Sorted,
                },
            }));
        }
    }
}

/// `{a: {b: {c: value}}}` for the path `[a, b, c]`.
fn nest(path: &[&str], value: Value) -> Value {
    path.iter()
        .rev()
        .fold(value, |v, k| Value::Map(vec![(k.to_string(), v)]))
}
