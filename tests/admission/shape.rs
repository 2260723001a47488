//! The pods a compiled pipeline becomes, built as their makers build them,
//! so admission can be tried on the pods a cluster would really see:
//!
//! - Argo (plain workflows, and kfp 1.8's): one pod per template
//!   invocation from the entrypoint (DAG tasks, steps, loops' first item,
//!   `onExit`), named `<workflow>-<template>-<fnv32a(node name)>`, carrying
//!   the workflow's `podMetadata` and the template's `metadata`, Argo's own
//!   labels and annotations, and the scheduling `tools/argo-pods` builds for
//!   the template as Argo's controller does (`workflow/controller/workflowpod.go`).
//! - KFP v2 (the KFP 2.17 backend's Argo workflow): per DAG a driver pod,
//!   per container task a driver pod and an executor pod whose scheduling is
//!   the driver's pod-spec patch of the executor's Kubernetes config, per
//!   importer an importer pod (`backend/src/v2/compiler/argocompiler`,
//!   `backend/src/v2/driver`).
//!
//! Only test code: the shapes follow the sources as the guide's table of
//! what each pod carries cites them.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json, json};

/// One pod, named after the node it runs.
#[derive(Clone, Debug)]
pub struct Shaped {
    /// The Argo node name (unique within a workflow).
    pub node: String,
    pub pod: Json,
}

const ARGOEXEC: &str = "quay.io/argoproj/argoexec:v3.7.1";

/// Argo's pod name for a node (podNameVersion v2).
fn pod_name(workflow: &str, template: &str, node: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in node.as_bytes() {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{workflow}-{template}-{h}")
}

/// Every document of a YAML file as JSON (merge keys resolved, as Argo and
/// Kubernetes read them).
pub fn documents(text: &str) -> Vec<Json> {
    let tree = kfsched_yaml::Tree::parse(text).expect("the fixture parses");
    tree.documents
        .iter()
        .filter_map(|d| d.root)
        .map(|r| kfsched_yaml::value::effective_value(&tree, r).to_json())
        .filter(|j| !j.is_null())
        .collect()
}

fn map(j: Option<&Json>) -> Map<String, Json> {
    j.and_then(Json::as_object).cloned().unwrap_or_default()
}

fn non_empty(j: Option<&Json>) -> Option<&Json> {
    j.filter(|v| match v {
        Json::Null => false,
        Json::Array(a) => !a.is_empty(),
        Json::Object(o) => !o.is_empty(),
        _ => true,
    })
}

/// The pod spec Argo builds for each template of an Argo document, by
/// template name: `tools/argo-pods` (scheduling fields from the template or
/// the workflow, then the podSpecPatches applied with apimachinery's
/// strategic merge), so the scheduling of a pod here is Argo's own.
fn argo_specs(doc: &Json) -> BTreeMap<String, Json> {
    use std::io::Write;
    let mut child = std::process::Command::new(crate::integrations::built_tool("argo-pods"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("argo-pods runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(doc.to_string().as_bytes())
        .expect("write to argo-pods");
    let out = child.wait_with_output().expect("argo-pods finishes");
    assert!(
        out.status.success(),
        "argo-pods: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    documents(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .filter_map(|p| {
            let t = p["metadata"]["annotations"]["argo-pods/template"]
                .as_str()?
                .to_string();
            Some((t, p["spec"].clone()))
        })
        .collect()
}

/// The pods of an Argo workflow (`Workflow`, or a `CronWorkflow`'s
/// `workflowSpec`) run as `workflow`.
pub fn argo_pods(doc: &Json, workflow: &str) -> Vec<Shaped> {
    let spec = if doc["kind"] == "CronWorkflow" {
        &doc["spec"]["workflowSpec"]
    } else {
        &doc["spec"]
    };
    let templates: BTreeMap<String, Json> = spec["templates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t["name"].as_str()?.to_string(), t.clone())))
        .collect();
    let mut out = Vec::new();
    let specs = argo_specs(doc);
    let mut walker = ArgoWalk {
        spec,
        templates: &templates,
        specs: &specs,
        workflow,
        out: &mut out,
    };
    if let Some(entry) = spec["entrypoint"].as_str().and_then(|e| templates.get(e)) {
        walker.visit(entry, workflow.to_string(), 0);
    }
    if let Some(exit) = spec["onExit"].as_str().and_then(|e| templates.get(e)) {
        walker.visit(exit, format!("{workflow}.onExit"), 0);
    }
    out
}

struct ArgoWalk<'a> {
    spec: &'a Json,
    templates: &'a BTreeMap<String, Json>,
    /// Argo's pod spec of each named template (see [`argo_specs`]).
    specs: &'a BTreeMap<String, Json>,
    workflow: &'a str,
    out: &'a mut Vec<Shaped>,
}

impl ArgoWalk<'_> {
    fn called<'t>(&'t self, call: &'t Json) -> Option<&'t Json> {
        if call.get("inline").is_some() {
            return call.get("inline");
        }
        call["template"]
            .as_str()
            .and_then(|t| self.templates.get(t))
    }

    /// A loop's node is named after its first item (`task(0:a)`).
    fn looped(call: &Json, node: String) -> String {
        match call
            .get("withItems")
            .and_then(Json::as_array)
            .and_then(|a| a.first())
        {
            Some(Json::String(s)) => format!("{node}(0:{s})"),
            Some(other) => format!("{node}(0:{other})"),
            None if call.get("withParam").is_some() || call.get("withSequence").is_some() => {
                format!("{node}(0:0)")
            }
            None => node,
        }
    }

    fn visit(&mut self, t: &Json, node: String, depth: usize) {
        if depth > 20 {
            return;
        }
        if let Some(tasks) = t["dag"]["tasks"].as_array() {
            for task in tasks {
                let name = task["name"].as_str().unwrap_or_default();
                if let Some(child) = self.called(task) {
                    let child = child.clone();
                    self.visit(
                        &child,
                        Self::looped(task, format!("{node}.{name}")),
                        depth + 1,
                    );
                }
            }
            return;
        }
        if let Some(groups) = t["steps"].as_array() {
            for (i, group) in groups.iter().enumerate() {
                for step in group.as_array().into_iter().flatten() {
                    let name = step["name"].as_str().unwrap_or_default();
                    if let Some(child) = self.called(step) {
                        let child = child.clone();
                        self.visit(
                            &child,
                            Self::looped(step, format!("{node}[{i}].{name}")),
                            depth + 1,
                        );
                    }
                }
            }
            return;
        }
        if ["container", "script", "resource", "containerSet", "data"]
            .iter()
            .any(|k| t.get(*k).is_some())
        {
            let pod = self.pod(t, &node);
            self.out.push(Shaped { node, pod });
        }
    }

    fn pod(&self, t: &Json, node: &str) -> Json {
        let template = t["name"].as_str().unwrap_or("inline");
        let mut labels = map(self.spec["podMetadata"].get("labels"));
        labels.extend(map(t["metadata"].get("labels")));
        labels.insert(
            "workflows.argoproj.io/workflow".into(),
            json!(self.workflow),
        );
        labels.insert("workflows.argoproj.io/completed".into(), json!("false"));
        let mut annotations = map(self.spec["podMetadata"].get("annotations"));
        annotations.extend(map(t["metadata"].get("annotations")));
        annotations.insert("workflows.argoproj.io/node-name".into(), json!(node));
        annotations.insert(
            "workflows.argoproj.io/node-id".into(),
            json!(pod_name(self.workflow, template, node)),
        );
        annotations.insert(
            "kubectl.kubernetes.io/default-container".into(),
            json!("main"),
        );
        let body = t.get("container").or_else(|| t.get("script"));
        let mut main = json!({
            "name": "main",
            "image": body.and_then(|b| b["image"].as_str()).unwrap_or(ARGOEXEC),
        });
        for k in ["command", "args"] {
            if let Some(v) = body.and_then(|b| b.get(k)).filter(|v| v.is_array()) {
                main[k] = v.clone();
            }
        }
        let mut spec = json!({
            "restartPolicy": "Never",
            "initContainers": [{"name": "init", "image": ARGOEXEC, "command": ["argoexec", "init"]}],
            "containers": [{"name": "wait", "image": ARGOEXEC, "command": ["argoexec", "wait"]}, main],
        });
        match t["name"].as_str().and_then(|n| self.specs.get(n)) {
            // Argo's scheduling of the template: everything argo-pods set
            // beside the containers.
            Some(built) => {
                for (k, v) in built.as_object().into_iter().flatten() {
                    if !["containers", "initContainers", "restartPolicy"].contains(&k.as_str()) {
                        spec[k] = v.clone();
                    }
                }
            }
            // An inline template: its own values, else the workflow's.
            None => {
                for k in ["tolerations", "nodeSelector", "affinity"] {
                    if let Some(v) = non_empty(t.get(k)).or_else(|| non_empty(self.spec.get(k))) {
                        spec[k] = v.clone();
                    }
                }
            }
        }
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name(self.workflow, template, node),
                "labels": labels,
                "annotations": annotations,
            },
            "spec": spec,
        })
    }
}

/// The workflow name a run of this Argo document gets: its name, or its
/// `generateName` with a suffix.
pub fn workflow_name(doc: &Json) -> String {
    doc["metadata"]["name"]
        .as_str()
        .map(str::to_string)
        .or_else(|| {
            doc["metadata"]["generateName"]
                .as_str()
                .map(|g| format!("{g}x7k2p"))
        })
        .unwrap_or_else(|| "workflow-x7k2p".into())
}

/// The pods of every pipeline in a file, in file order.
pub fn file_pods(text: &str) -> Vec<Shaped> {
    let docs = documents(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < docs.len() {
        let doc = &docs[i];
        if doc["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("argoproj.io/"))
        {
            if matches!(doc["kind"].as_str(), Some("Workflow" | "CronWorkflow")) {
                out.extend(argo_pods(doc, &workflow_name(doc)));
            }
        } else if doc.get("pipelineInfo").is_some() && doc.get("root").is_some() {
            // A KFP v2 IR document, and its platform document when one follows.
            let platform = docs
                .get(i + 1)
                .filter(|d| d.get("platforms").is_some())
                .cloned()
                .unwrap_or(Json::Null);
            out.extend(super::kfp::pods(doc, &platform));
        } else if doc["kind"] == "PipelineVersion" {
            let spec = &doc["spec"];
            out.extend(super::kfp::pods(
                &spec["pipelineSpec"],
                &spec["platformSpec"],
            ));
        }
        i += 1;
    }
    out
}
