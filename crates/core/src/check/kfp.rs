//! The pod the KFP v2 backend creates for a container task: Argo's pod for
//! the compiled `system-container-impl` template (init containers `init`
//! and `kfp-launcher`, containers `wait` and `main`), patched by the KFP
//! driver's pod spec (`backend/src/v2/driver`: `initPodSpecPatch`,
//! `extendPodSpecPatch`).
//!
//! - `main`'s resources: `resourceCpuLimit` / `resourceMemoryLimit` /
//!   `resourceCpuRequest` / `resourceMemoryRequest` (strings, may be
//!   pipeline parameters), else the older floats `cpuLimit` (`%v`) and
//!   `memoryLimit` (`%vG`, decimal gigabytes); the accelerator
//!   (`resourceType`/`type`, `resourceCount`/`count`) becomes a limit only.
//! - The launcher: limits cpu 500m, memory 256Mi; requests cpu 100m (KFP
//!   2.17 and later; 128Mi before).
//! - Tolerations, node selector and node affinity from the executor's
//!   Kubernetes config; `*Json` entries are used when they are constants,
//!   and noted as not judged when they are run-time parameters.
//! - A component whose `taskConfigPassthroughs` lists a field without
//!   `applyToTask` keeps that field off the pod.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, PreferredSchedulingTerm, Toleration};

use super::pod::{Container, Pod, ResourceList};
use super::quantity::Quantity;
use super::read::{At, Reader, Shape, resource_name_problem};
use kfsched_yaml::Value;
use kfsched_yaml::tree::{Kind, NodeId};

/// The KFP v2 launcher's resources (`argocompiler/argo.go`, `launcherResources`).
const LAUNCHER_LIMITS: [(&str, &str); 2] = [("cpu", "500m"), ("memory", "256Mi")];
const LAUNCHER_REQUESTS: [(&str, &str); 1] = [("cpu", "100m")];

/// Where a pipeline's parts are in the parsed file.
pub(super) struct Ir {
    /// The pipeline spec (the IR document, or a PipelineVersion's `spec.pipelineSpec`).
    pub root: NodeId,
    /// The node holding `platforms` (the platform document, or `spec.platformSpec`).
    pub platform: Option<NodeId>,
}

/// A run-time value: a pipeline-parameter placeholder the driver resolves.
fn placeholder(s: &str) -> bool {
    s.contains("{{$")
}

fn list(pairs: &[(&str, &str)]) -> ResourceList {
    pairs
        .iter()
        .filter_map(|(k, v)| Some((k.to_string(), Quantity::parse(v).ok()?)))
        .collect()
}

/// Go's `fmt.Sprintf("%v", f)` for a float64: the shortest digits, in
/// exponent form below 1e-4 and from 1e6 on (`strconv` `'g'`, precision -1).
fn go_float(f: f64) -> String {
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        return format!("{f}");
    }
    format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

impl Ir {
    /// The pod of the task whose executor is `executor`.
    pub fn pod(&self, r: &mut Reader, executor: &str) -> Pod {
        let root = At::Node(self.root);
        let passthrough = self.passthrough(r, executor);
        let on_pod = |f: &str| passthrough.get(f).copied().unwrap_or(true);
        let mut main = Container::named("main");
        let exec = r
            .get(root, "deploymentSpec")
            .and_then(|d| r.get(d, "executors"))
            .and_then(|e| r.get(e, executor));
        let mut pod = Pod::default();
        if let Some(res) = exec
            .and_then(|e| r.get(e, "container"))
            .and_then(|c| r.get(c, "resources"))
        {
            if on_pod("RESOURCES") {
                resources(r, res, &mut main, &mut pod.unjudged);
            }
        }
        pod.init_containers = vec![
            Container::named("init"),
            Container {
                name: "kfp-launcher".into(),
                requests: list(&LAUNCHER_REQUESTS),
                limits: list(&LAUNCHER_LIMITS),
                sidecar: false,
            },
        ];
        pod.containers = vec![Container::named("wait"), main];
        let config = self.platform.and_then(|p| {
            let mut at = At::Node(p);
            for k in [
                "platforms",
                "kubernetes",
                "deploymentSpec",
                "executors",
                executor,
            ] {
                at = r.get(at, k)?;
            }
            Some(at)
        });
        if let Some(cfg) = config {
            if on_pod("KUBERNETES_TOLERATIONS") {
                pod.tolerations = tolerations(r, cfg, &mut pod.unjudged);
            }
            if on_pod("KUBERNETES_NODE_SELECTOR") {
                pod.node_selector = node_selector(r, cfg, &mut pod.unjudged);
            }
            if on_pod("KUBERNETES_AFFINITY") {
                let (required, preferred) = node_affinity(r, cfg, &mut pod.unjudged);
                pod.required = (!required.is_empty()).then_some(required);
                pod.preferred = preferred;
            }
        }
        pod
    }

    /// The fields the component's `taskConfigPassthroughs` keep off the pod
    /// (`getTaskConfigOptions`): field → applied to the pod.
    fn passthrough(&self, r: &mut Reader, executor: &str) -> BTreeMap<String, bool> {
        let mut out = BTreeMap::new();
        let Some(components) = r.get(At::Node(self.root), "components") else {
            return out;
        };
        for (_, comp) in r.entries(components, "components") {
            let label = r.string_field(comp, "executorLabel", Shape::Proto);
            if label.as_deref() != Some(executor) {
                continue;
            }
            let Some(list) = r.field(comp, "taskConfigPassthroughs", Shape::Proto) else {
                continue;
            };
            for pt in r.items(list, "taskConfigPassthroughs") {
                let Some(field) = r.string_field(pt, "field", Shape::Proto) else {
                    continue;
                };
                let apply = r
                    .field(pt, "applyToTask", Shape::Proto)
                    .and_then(|v| r.scalar(v))
                    == Some(Value::Bool(true));
                out.insert(field, apply);
            }
            break;
        }
        out
    }
}

/// The driver's `main` resources from the executor's `container.resources`.
fn resources<'v>(r: &mut Reader, res: At<'v>, main: &mut Container, unjudged: &mut Vec<String>) {
    for (new, old, unit, limit, name) in [
        ("resourceMemoryLimit", "memoryLimit", "G", true, "memory"),
        (
            "resourceMemoryRequest",
            "memoryRequest",
            "G",
            false,
            "memory",
        ),
        ("resourceCpuLimit", "cpuLimit", "", true, "cpu"),
        ("resourceCpuRequest", "cpuRequest", "", false, "cpu"),
    ] {
        let q = if let Some(at) = r.field(res, new, Shape::Proto) {
            let Some(text) = r.string(at, new) else {
                continue;
            };
            if text.is_empty() {
                None
            } else if placeholder(&text) {
                unjudged.push(format!(
                    "{new} is a pipeline parameter ({text}): its {name} is not judged"
                ));
                continue;
            } else {
                r.quantity(at, new)
            }
        } else if let Some(at) = r.field(res, old, Shape::Proto) {
            let f = match r.scalar(at) {
                Some(Value::Float(f)) => f,
                Some(Value::Int(i)) => i as f64,
                _ => {
                    r.error(at, None, format!("{old} must be a number"));
                    continue;
                }
            };
            if f == 0.0 {
                continue;
            }
            let text = format!("{}{unit}", go_float(f));
            match Quantity::parse(&text) {
                Ok(q) if !q.is_negative() => Some(q),
                _ => {
                    r.error(at, None, format!("the KFP driver writes {f} as {text:?}, which is not a Kubernetes quantity, and fails the task; give {new} instead"));
                    None
                }
            }
        } else {
            None
        };
        if let Some(q) = q {
            if limit {
                main.limits.insert(name.into(), q);
            } else {
                main.requests.insert(name.into(), q);
            }
        }
    }
    accelerator(r, res, main, unjudged);
}

/// The accelerator becomes a limit named by its type, when both the type
/// and a count are set.
fn accelerator<'v>(r: &mut Reader, res: At<'v>, main: &mut Container, unjudged: &mut Vec<String>) {
    let Some(acc) = r.get(res, "accelerator") else {
        return;
    };
    let type_at = r
        .field(acc, "resourceType", Shape::Proto)
        .filter(|&t| r.scalar(t) != Some(Value::Str(String::new())))
        .or_else(|| r.get(acc, "type"));
    let ty = type_at.and_then(|t| r.string(t, "accelerator type"));
    let count_at = r.field(acc, "resourceCount", Shape::Proto);
    let count = match count_at.and_then(|c| r.string(c, "accelerator resourceCount")) {
        Some(c) if !c.is_empty() => Some((c, count_at)),
        _ => r
            .int_field(acc, "count", Shape::Proto)
            .filter(|&n| n > 0)
            .map(|n| (n.to_string(), r.get(acc, "count"))),
    };
    let (Some(ty), Some((count, count_at))) = (ty.filter(|t| !t.is_empty()), count) else {
        return;
    };
    if placeholder(&ty) || placeholder(&count) {
        unjudged.push(format!(
            "the accelerator is a pipeline parameter ({ty} × {count}): it is not judged"
        ));
        return;
    }
    if let Some(problem) = resource_name_problem(&ty, true) {
        if let Some(at) = type_at {
            r.error(at, None, format!("accelerator type {ty:?} becomes the resource name of main's limit, which the API server refuses ({problem}): use the device plugin's resource name, such as nvidia.com/gpu"));
        }
        return;
    }
    let Some(at) = count_at else { return };
    if let Some(q) = r.quantity(at, "accelerator count") {
        main.limits.insert(ty, q);
    }
}

/// The constant of a KFP `TaskInputParameterSpec` (`runtimeValue.constant`),
/// or `None` with a note when the value comes from elsewhere at run time.
fn constant<'v>(
    r: &mut Reader,
    spec: At<'v>,
    what: &str,
    unjudged: &mut Vec<String>,
) -> Option<At<'v>> {
    if let Some(c) = r
        .field(spec, "runtimeValue", Shape::Proto)
        .and_then(|rv| r.get(rv, "constant"))
    {
        return Some(c);
    }
    let from = [
        "componentInputParameter",
        "taskOutputParameter",
        "taskFinalStatus",
    ]
    .into_iter()
    .find(|k| r.field(spec, k, Shape::Proto).is_some())
    .unwrap_or("a run-time value");
    let note = format!("{what} comes from {from} at run time and is not judged");
    if !unjudged.contains(&note) {
        unjudged.push(note);
    }
    None
}

/// Wraps a constant so the k8s readers can read it: a JSON value in a
/// string is parsed; a map or list is used as it is.
fn json_of<'v>(r: &mut Reader, at: At<'v>) -> Option<Value> {
    match r.scalar(at) {
        Some(Value::Str(s)) => match serde_json::from_str::<serde_json::Value>(&s) {
            Ok(j) => Some(Value::from_json(&j)),
            Err(e) => {
                r.error(at, None, format!("not valid JSON: {e}"));
                None
            }
        },
        Some(_) => None,
        None => Some(match at {
            At::Value(v, _) => v.clone(),
            At::Node(n) => kfsched_yaml::value::node_value(r.tree, n),
        }),
    }
}

fn anchor(at: At) -> NodeId {
    match at {
        At::Node(n) | At::Value(_, n) => n,
    }
}

fn tolerations<'v>(r: &mut Reader, cfg: At<'v>, unjudged: &mut Vec<String>) -> Vec<Toleration> {
    let mut out = Vec::new();
    let Some(list) = r.get(cfg, "tolerations") else {
        return out;
    };
    for item in r.items(list, "tolerations") {
        let Some(json) = r.field(item, "tolerationJson", Shape::Proto) else {
            out.extend(r.toleration(item, Shape::Proto));
            continue;
        };
        let Some(c) = constant(r, json, "a tolerationJson", unjudged) else {
            continue;
        };
        let Some(v) = json_of(r, c) else { continue };
        let v = match v {
            Value::Seq(_) => v,
            Value::Null => continue,
            one => Value::Seq(vec![one]),
        };
        out.extend(r.tolerations(At::Value(&v, anchor(c)), Shape::K8s));
    }
    out
}

fn node_selector<'v>(
    r: &mut Reader,
    cfg: At<'v>,
    unjudged: &mut Vec<String>,
) -> Option<BTreeMap<String, String>> {
    let ns = r.field(cfg, "nodeSelector", Shape::Proto)?;
    // With nodeSelectorJson, the driver ignores `labels`.
    if let Some(json) = r.field(ns, "nodeSelectorJson", Shape::Proto) {
        let c = constant(r, json, "the nodeSelectorJson", unjudged)?;
        let v = json_of(r, c)?;
        if v.is_null() {
            return None;
        }
        return Some(r.node_selector(At::Value(&v, anchor(c))));
    }
    let labels = r.get(ns, "labels")?;
    let m = r.node_selector(labels);
    (!m.is_empty()).then_some(m)
}

/// KFP's `nodeAffinity` list: terms without `weight` are required (ORed),
/// with `weight` preferred; a `nodeAffinityJson` adds its required terms
/// to the same OR-list and its preferred terms to the preferred ones.
fn node_affinity<'v>(
    r: &mut Reader,
    cfg: At<'v>,
    unjudged: &mut Vec<String>,
) -> (Vec<NodeSelectorTerm>, Vec<PreferredSchedulingTerm>) {
    let mut required = Vec::new();
    let mut preferred = Vec::new();
    let Some(list) = r.field(cfg, "nodeAffinity", Shape::Proto) else {
        return (required, preferred);
    };
    for item in r.items(list, "nodeAffinity") {
        if r.kind(item) != Kind::Map {
            r.error(item, None, "a node affinity term must be a map");
            continue;
        }
        if let Some(json) = r.field(item, "nodeAffinityJson", Shape::Proto) {
            let Some(c) = constant(r, json, "a nodeAffinityJson", unjudged) else {
                continue;
            };
            let Some(v) = json_of(r, c) else { continue };
            let wrapped = Value::Map(vec![("nodeAffinity".into(), v)]);
            let (req, pref) = r.affinity(At::Value(&wrapped, anchor(c)), unjudged);
            required.extend(req.unwrap_or_default());
            preferred.extend(pref);
            continue;
        }
        let term = r.term(item, Shape::Proto, true);
        let empty = term.match_expressions.as_ref().is_none_or(Vec::is_empty)
            && term.match_fields.as_ref().is_none_or(Vec::is_empty);
        if empty {
            // `extendPodSpecPatch` skips a term with nothing in it.
            continue;
        }
        match r.field(item, "weight", Shape::Proto) {
            Some(w) => {
                let weight = match r.scalar(w) {
                    Some(Value::Int(i)) => i,
                    Some(Value::Float(f)) => f as i64,
                    Some(Value::Str(s)) => s.parse::<f64>().map(|f| f as i64).unwrap_or(0),
                    _ => 0,
                };
                if !(1..=100).contains(&weight) {
                    r.error(
                        w,
                        None,
                        format!("Invalid value: {weight}: must be in the range 1-100"),
                    );
                }
                preferred.push(PreferredSchedulingTerm {
                    weight: i32::try_from(weight).unwrap_or(0),
                    preference: term,
                });
            }
            None => required.push(term),
        }
    }
    (required, preferred)
}

#[cfg(test)]
mod tests {
    use super::go_float;

    #[test]
    fn floats_print_as_go_prints_them() {
        // Observed with Go 1.26: fmt.Sprintf("%v", f).
        for (f, s) in [
            (16.0, "16"),
            (4.294967296, "4.294967296"),
            (0.5, "0.5"),
            (1e6, "1e+06"),
            (123456789.0, "1.23456789e+08"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (100000.0, "100000"),
            (0.00012345, "0.00012345"),
            (1234567.0, "1.234567e+06"),
        ] {
            assert_eq!(go_float(f), s, "{f}");
        }
    }
}
