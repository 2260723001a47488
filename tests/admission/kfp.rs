//! The pods a run of a KFP v2 pipeline creates, as the KFP 2.17 backend's
//! Argo workflow makes them (Argo's emissary layout):
//!
//! - a DAG driver per DAG: `<wf>.root-driver`, `<wf>.root.<dag>-driver`;
//!   a loop `L` has `<…>.L.iteration-driver` and, per iteration,
//!   `<…>.L.iteration-iterations(i:i).iteration-item-driver`, its body
//!   under `<…>.iteration-item.` (`argocompiler/dag.go`);
//! - per container task `T` a driver `<…>.T-driver` and an executor
//!   `<…>.T.executor` whose scheduling is the driver's pod-spec patch of the
//!   executor's Kubernetes config (`driver/k8s.go`): tolerations in order,
//!   the node selector's labels, unweighted node-affinity terms as required
//!   terms and weighted ones as preferred, the pod metadata on the pod;
//! - an exit task `E` of a group `X` under `<…>.X.onExit.` (labelled
//!   `workflows.argoproj.io/on-exit`);
//! - per importer `I` one pod `<…>.I` (template `system-importer`).
//!
//! Pod names are `<wf>-<template>-<fnv32a(node name)>`; the main container's
//! command is Argo's emissary wrapper around the original one; driver
//! arguments carry compact JSON with sorted keys, the executor's
//! `--component_spec` protojson (`executorLabel` after the definitions).

use serde_json::{Map, Value as Json, json};

use super::shape::Shaped;

const RUN: &str = "0b5f6e0c-1111-2222-3333-444455556666";
const ARGOEXEC: &str = "ghcr.io/argoproj/argoexec:v3.7.1";
const DRIVER: &str = "ghcr.io/kubeflow/kfp-driver:2.17.0";
const LAUNCHER: &str = "ghcr.io/kubeflow/kfp-launcher:2.17.0";

fn fnv32a(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.as_bytes() {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Go's `json.Marshal` of a map: keys sorted at every level, compact, and
/// `<`, `>`, `&` escaped.
fn stable_json(v: &Json) -> String {
    fn sort(v: &Json) -> Json {
        match v {
            Json::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sort(&m[k]));
                }
                Json::Object(out)
            }
            Json::Array(a) => Json::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sort(v))
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// Argo's emissary wrapper around a main container's command.
fn emissary(command: &[Json]) -> Json {
    let mut c: Vec<Json> = [
        "/var/run/argo/argoexec",
        "emissary",
        "--loglevel",
        "info",
        "--log-format",
        "text",
        "--gloglevel",
        "0",
        "--",
    ]
    .iter()
    .map(|s| json!(s))
    .collect();
    c.extend(command.iter().cloned());
    Json::Array(c)
}

struct Walk<'a> {
    pipeline: &'a str,
    workflow: String,
    components: &'a Json,
    executors: &'a Json,
    platform: &'a Json,
    out: Vec<Shaped>,
}

impl Walk<'_> {
    fn pod(
        &mut self,
        node: String,
        template: &str,
        role: &str,
        on_exit: bool,
        main: Json,
        extra_init: Option<Json>,
    ) -> usize {
        let hash = fnv32a(&node);
        let mut labels = json!({
            "pipelines.kubeflow.org/v2_component": "true",
            "pipeline/runid": RUN,
            "workflows.argoproj.io/workflow": self.workflow,
            "workflows.argoproj.io/completed": "false",
        });
        if on_exit {
            labels["workflows.argoproj.io/on-exit"] = json!("true");
        }
        let annotations = json!({
            "pipelines.kubeflow.org/v2_component": "true",
            "sidecar.istio.io/inject": "false",
            "workflows.argoproj.io/node-name": node,
            "workflows.argoproj.io/node-id": format!("{}-{hash}", self.workflow),
            "kubectl.kubernetes.io/default-container": "main",
            "pipelines.kubeflow.org/runtime-role": role,
        });
        let mut init =
            vec![json!({"name": "init", "image": ARGOEXEC, "command": ["argoexec", "init"]})];
        init.extend(extra_init);
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": format!("{}-{template}-{hash}", self.workflow),
                "labels": labels,
                "annotations": annotations,
            },
            "spec": {
                "restartPolicy": "Never",
                "initContainers": init,
                "containers": [{"name": "wait", "image": ARGOEXEC, "command": ["argoexec", "wait"]}, main],
            },
        });
        self.out.push(Shaped { node, pod });
        self.out.len() - 1
    }

    #[allow(clippy::too_many_arguments)]
    fn dag_driver(
        &mut self,
        node: String,
        kind: &str,
        key: &str,
        task: &Json,
        component: &Json,
        iteration: i64,
        on_exit: bool,
    ) {
        let task_json = if task.is_null() {
            String::new()
        } else {
            stable_json(task)
        };
        let main = json!({
            "name": "main",
            "image": DRIVER,
            "command": emissary(&[json!("driver")]),
            "args": [
                "--type", kind, "--pipeline_name", self.pipeline, "--run_id", RUN,
                "--run_name", self.workflow, "--run_display_name", "", "--dag_execution_id", "7",
                "--component", stable_json(component), "--task", task_json, "--task_name", key,
                "--iteration_index", iteration.to_string(),
            ],
        });
        self.pod(node, "system-dag-driver", "driver", on_exit, main, None);
    }

    /// The tasks of a DAG component, under the node `parent`.
    fn dag(&mut self, tasks: &Json, parent: &str, depth: usize) {
        if depth > 30 {
            return;
        }
        let Some(tasks) = tasks.as_object() else {
            return;
        };
        for (key, task) in tasks {
            let comp_name = task["componentRef"]["name"].as_str().unwrap_or_default();
            let comp = &self.components[comp_name];
            // An exit task runs as the exit hook of the group it depends on.
            let exit = task["triggerPolicy"]["strategy"] == "ALL_UPSTREAM_TASKS_COMPLETED";
            let base = match (exit, task["dependentTasks"][0].as_str()) {
                (true, Some(group)) => format!("{parent}.{group}.onExit"),
                _ => parent.to_string(),
            };
            if task.get("parameterIterator").is_some() || task.get("artifactIterator").is_some() {
                let loop_node = format!("{base}.{key}");
                self.dag_driver(
                    format!("{loop_node}.iteration-driver"),
                    "DAG",
                    key,
                    task,
                    comp,
                    -1,
                    exit,
                );
                let item = format!("{loop_node}.iteration-iterations(0:0).iteration-item");
                self.dag_driver(format!("{item}-driver"), "DAG", key, task, comp, 0, exit);
                self.dag(&comp["dag"]["tasks"], &item, depth + 1);
            } else if comp.get("dag").is_some() {
                self.dag_driver(
                    format!("{base}.{key}-driver"),
                    "DAG",
                    key,
                    task,
                    comp,
                    -1,
                    exit,
                );
                self.dag(&comp["dag"]["tasks"], &format!("{base}.{key}"), depth + 1);
            } else if let Some(label) = comp["executorLabel"].as_str() {
                let exec = &self.executors[label];
                if exec.get("importer").is_some() {
                    self.importer(format!("{base}.{key}"), task, comp, exec, exit);
                } else if let Some(container) = exec.get("container") {
                    self.container(&base, key, task, comp, label, container, exit);
                }
            }
        }
    }

    fn importer(&mut self, node: String, task: &Json, comp: &Json, exec: &Json, on_exit: bool) {
        let main = json!({
            "name": "main",
            "image": LAUNCHER,
            "command": emissary(&[json!("launcher-v2")]),
            "args": [
                "--executor_type", "importer", "--task_spec", stable_json(task),
                "--component_spec", stable_json(comp), "--importer_spec", stable_json(&exec["importer"]),
                "--pipeline_name", self.pipeline, "--run_id", RUN, "--parent_dag_id", "7",
            ],
        });
        self.pod(node, "system-importer", "launcher", on_exit, main, None);
    }

    #[allow(clippy::too_many_arguments)]
    fn container(
        &mut self,
        base: &str,
        key: &str,
        task: &Json,
        comp: &Json,
        label: &str,
        container: &Json,
        on_exit: bool,
    ) {
        let driver = json!({
            "name": "main",
            "image": DRIVER,
            "command": emissary(&[json!("driver")]),
            "args": [
                "--type", "CONTAINER", "--pipeline_name", self.pipeline, "--run_id", RUN,
                "--run_name", self.workflow, "--run_display_name", "", "--dag_execution_id", "7",
                "--component", stable_json(comp), "--task", stable_json(task), "--task_name", key,
                "--container", stable_json(container), "--iteration_index", "-1",
                "--cached_decision_path", "/tmp/outputs/cached-decision",
                "--pod_spec_patch_path", "/tmp/outputs/pod-spec-patch",
            ],
        });
        self.pod(
            format!("{base}.{key}-driver"),
            "system-container-driver",
            "driver",
            on_exit,
            driver,
            None,
        );
        // The executor: the launcher wraps the user's command.
        let config = &self.platform[label];
        let spec = format!(
            "{{\"inputDefinitions\":{},\"outputDefinitions\":{},\"executorLabel\":\"{label}\"}}",
            stable_json(&comp["inputDefinitions"]),
            stable_json(&comp["outputDefinitions"])
        );
        let mut command = vec![
            json!("/kfp-launcher/launch"),
            json!("--pipeline_name"),
            json!(self.pipeline),
            json!("--run_id"),
            json!(RUN),
            json!("--execution_id"),
            json!("42"),
            json!("--executor_input"),
            json!("{}"),
            json!("--component_spec"),
            json!(spec),
            json!("--pod_name"),
            json!("$(KFP_POD_NAME)"),
            json!("--"),
        ];
        command.extend(container["command"].as_array().cloned().unwrap_or_default());
        let main = json!({
            "name": "main",
            "image": container["image"].as_str().unwrap_or("python:3.11"),
            "command": emissary(&command),
            "args": container["args"].as_array().cloned().unwrap_or_default(),
        });
        let metadata = &config["podMetadata"];
        let count = |k: &str| metadata[k].as_object().map_or(0, Map::len);
        let template = if metadata.is_object() {
            format!(
                "metadata-{}-{}-system-container-impl",
                count("annotations"),
                count("labels")
            )
        } else {
            "system-container-impl".into()
        };
        let launcher = json!({
            "name": "kfp-launcher", "image": LAUNCHER, "command": ["launcher-v2"],
            "args": ["--copy", "/kfp-launcher/launch"],
        });
        let i = self.pod(
            format!("{base}.{key}.executor"),
            &template,
            "launcher",
            on_exit,
            main,
            Some(launcher),
        );
        let pod = &mut self.out[i].pod;
        for k in ["labels", "annotations"] {
            if let Some(m) = metadata[k].as_object() {
                for (a, b) in m {
                    pod["metadata"][k][a] = b.clone();
                }
            }
        }
        scheduling(config, &mut pod["spec"]);
    }
}

/// A `*Json` entry's constant value, when the compiler wrote one.
fn constant(v: &Json) -> Option<Json> {
    v.get("runtimeValue")
        .and_then(|r| r.get("constant"))
        .or_else(|| v.get("constant"))
        .cloned()
}

/// The KFP driver's pod-spec patch of an executor's Kubernetes config.
fn scheduling(config: &Json, spec: &mut Json) {
    let mut tolerations = Vec::new();
    for t in config["tolerations"].as_array().into_iter().flatten() {
        if let Some(j) = t.get("tolerationJson") {
            match constant(j) {
                Some(Json::Array(a)) => tolerations.extend(a),
                Some(o @ Json::Object(_)) => tolerations.push(o),
                _ => {}
            }
            continue;
        }
        let mut out = Map::new();
        for k in ["key", "operator", "value", "effect"] {
            if let Some(v) = t
                .get(k)
                .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
            {
                out.insert(k.into(), v.clone());
            }
        }
        if let Some(s) = t.get("tolerationSeconds") {
            let n = s
                .as_i64()
                .or_else(|| s.as_str().and_then(|x| x.parse().ok()));
            if let Some(n) = n {
                out.insert("tolerationSeconds".into(), json!(n));
            }
        }
        tolerations.push(Json::Object(out));
    }
    if !tolerations.is_empty() {
        spec["tolerations"] = Json::Array(tolerations);
    }
    let selector = config["nodeSelector"]
        .get("nodeSelectorJson")
        .and_then(constant)
        .or_else(|| config["nodeSelector"].get("labels").cloned());
    if let Some(Json::Object(m)) = selector.filter(|s| s.as_object().is_some_and(|m| !m.is_empty()))
    {
        spec["nodeSelector"] = Json::Object(m);
    }
    let mut required = Vec::new();
    let mut preferred = Vec::new();
    for t in config["nodeAffinity"].as_array().into_iter().flatten() {
        if let Some(j) = t.get("nodeAffinityJson").and_then(constant) {
            required.extend(
                j["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
            preferred.extend(
                j["preferredDuringSchedulingIgnoredDuringExecution"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
            continue;
        }
        let mut term = Map::new();
        for k in ["matchExpressions", "matchFields"] {
            if let Some(v) = t
                .get(k)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                term.insert(k.into(), v.clone());
            }
        }
        if term.is_empty() {
            continue;
        }
        match t.get("weight").and_then(Json::as_f64) {
            Some(w) => preferred.push(json!({"weight": w as i64, "preference": term})),
            None => required.push(Json::Object(term)),
        }
    }
    let mut node = Map::new();
    if !required.is_empty() {
        node.insert(
            "requiredDuringSchedulingIgnoredDuringExecution".into(),
            json!({"nodeSelectorTerms": required}),
        );
    }
    if !preferred.is_empty() {
        node.insert(
            "preferredDuringSchedulingIgnoredDuringExecution".into(),
            Json::Array(preferred),
        );
    }
    if !node.is_empty() {
        spec["affinity"] = json!({"nodeAffinity": node});
    }
}

/// The pods of a run of this pipeline spec with its platform spec (the
/// platform document, or a PipelineVersion's `spec.platformSpec`).
pub fn pods(ir: &Json, platform: &Json) -> Vec<Shaped> {
    let pipeline = ir["pipelineInfo"]["name"].as_str().unwrap_or("pipeline");
    let base = pipeline.rsplit('/').next().unwrap_or(pipeline);
    let executors = &platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"];
    let mut w = Walk {
        pipeline,
        workflow: format!("{base}-x7k2p"),
        components: &ir["components"],
        executors: &ir["deploymentSpec"]["executors"],
        platform: executors,
        out: Vec::new(),
    };
    let root = format!("{}.root", w.workflow);
    w.dag_driver(
        format!("{root}-driver"),
        "ROOT_DAG",
        "",
        &Json::Null,
        &ir["root"],
        -1,
        false,
    );
    w.dag(&ir["root"]["dag"]["tasks"], &root, 0);
    w.out
}
