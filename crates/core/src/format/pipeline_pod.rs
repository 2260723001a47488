//! A pipeline's pod read as the exported admission policy reads it: which
//! workflow made it, KFP v2 or v1, its role, its task path and the names,
//! images, pipelines and kind a rule can match it by. Each step is the
//! Rust of one of the policy's CEL variables (`admission::pods`), from the
//! same labels, annotations, name and arguments, with the same fallbacks;
//! the admission tests hold the two equal on every pod they admit.

use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value as Json;

use crate::matching::PodRole;

/// The annotation admission sets on a pod (the rules that selected it) or a
/// node (the pools it joined): `policy:rule,rule;other-policy:rule`.
pub const ADMITTED_ANNOTATION: &str = "kfsched.dev/admitted";

/// The label Argo puts on every pod of a workflow.
pub const WORKFLOW_LABEL: &str = "workflows.argoproj.io/workflow";

/// What admission sees of a pipeline's pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodReading {
    /// The workflow that made the pod (its label).
    pub workflow: String,
    pub kfp_v2: bool,
    pub kfp_v1: bool,
    /// `None` for a KFP v2 pod whose role nothing on it says (no rule
    /// selects it).
    pub role: Option<PodRole>,
    /// The Argo template name, read from the pod's name.
    pub template: String,
    /// The task path as the files name it; empty for an exit handler's or
    /// a hook's pod of a plain Argo workflow.
    pub path: String,
    pub names: Vec<String>,
    pub images: Vec<String>,
    pub pipelines: Vec<String>,
    /// `PipelineSpec` (KFP v2) or `Workflow`.
    pub kind: &'static str,
}

fn str_at<'a>(j: &'a Json, path: &[&str]) -> &'a str {
    let mut at = j;
    for k in path {
        at = &at[k];
    }
    at.as_str().unwrap_or("")
}

fn strings(j: &Json) -> Vec<String> {
    j.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// CEL's `s.substring(from, to)` by code points.
fn chars(s: &str, from: usize, to: usize) -> String {
    s.chars().skip(from).take(to.saturating_sub(from)).collect()
}

fn size(s: &str) -> usize {
    s.chars().count()
}

/// CEL's `lastIndexOf` in code points, -1 when absent.
fn last_index_of(s: &str, c: char) -> i64 {
    s.rfind(c).map_or(-1, |b| s[..b].chars().count() as i64)
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a fixed pattern")
}

static SEGMENT: LazyLock<Regex> = LazyLock::new(|| re(r"[^.()]+(?:\([^()]*\))*"));
static EXECUTOR_LABEL: LazyLock<Regex> = LazyLock::new(|| re(r#""executorLabel":"[^"]*""#));
static COMPONENT_REF: LazyLock<Regex> = LazyLock::new(|| re(r#""componentRef":\{"name":"[^"]*""#));
static IMAGE: LazyLock<Regex> = LazyLock::new(|| re(r#""image":"[^"]*""#));
static DISPLAY_NAME: LazyLock<Regex> =
    LazyLock::new(|| re(r#""taskInfo":\{"name":"(?:[^"\\]|\\.)*""#));
static SPEC_NAME: LazyLock<Regex> = LazyLock::new(|| re(r#""name": "[^"]*"(, "outputs"|\}$)"#));
static GENERATED: LazyLock<Regex> = LazyLock::new(|| re(r"^.+-[a-z0-9]{5}$"));

/// The `index`th `"`-separated part of the first match of `re` in `s`, or ''.
fn json_field(re: &Regex, s: &str, index: usize) -> String {
    re.find(s)
        .and_then(|m| m.as_str().split('"').nth(index))
        .unwrap_or("")
        .to_string()
}

/// What [`read`] looks at of a pod: its name, labels and annotations and
/// its containers' names, commands, arguments and images.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Seen {
    metadata: SeenMetadata,
    spec: SeenSpec,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SeenMetadata {
    name: Json,
    labels: Json,
    annotations: Json,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SeenSpec {
    containers: Option<Vec<SeenContainer>>,
    #[serde(rename = "initContainers")]
    init_containers: Option<Vec<SeenContainer>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SeenContainer {
    name: Json,
    command: Json,
    args: Json,
    image: Json,
}

impl SeenContainer {
    fn into_json(self) -> Json {
        serde_json::json!({"name": self.name, "command": self.command, "args": self.args, "image": self.image})
    }
}

/// [`read`] of a pod's JSON text, building only what `read` looks at: a
/// page of listed pods is mostly managed fields, status and volumes, which
/// this skips without making values of them. Text that is not a JSON
/// object of the pod's shape is read in full, so the result is always
/// `read`'s.
pub fn read_text(text: &str) -> Result<Option<PodReading>, serde_json::Error> {
    let Ok(seen) = serde_json::from_str::<Seen>(text) else {
        return Ok(read(&serde_json::from_str::<Json>(text)?));
    };
    let containers = |c: Option<Vec<SeenContainer>>| {
        c.map_or(Json::Null, |c| {
            Json::Array(c.into_iter().map(SeenContainer::into_json).collect())
        })
    };
    let pod = serde_json::json!({
        "metadata": {
            "name": seen.metadata.name,
            "labels": seen.metadata.labels,
            "annotations": seen.metadata.annotations,
        },
        "spec": {
            "containers": containers(seen.spec.containers),
            "initContainers": containers(seen.spec.init_containers),
        },
    });
    Ok(read(&pod))
}

/// The pod as admission reads it, or `None` for a pod no workflow made
/// (the policy's match condition turns it away).
pub fn read(pod: &Json) -> Option<PodReading> {
    let md = &pod["metadata"];
    let label = |k: &str| md["labels"][k].as_str().unwrap_or("");
    let annotation = |k: &str| md["annotations"][k].as_str().unwrap_or("");
    let workflow = label(WORKFLOW_LABEL).to_string();
    if workflow.is_empty() {
        return None;
    }
    let kfp_v2 = label("pipelines.kubeflow.org/v2_component") == "true";
    let kfp_v1 = label("pipelines.kubeflow.org/pipeline-sdk-type") == "kfp";
    let containers = pod["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let main: Vec<&Json> = containers
        .iter()
        .filter(|c| c["name"].as_str() == Some("main"))
        .collect();
    let argv: Vec<String> = main
        .first()
        .map(|c| {
            let mut v = strings(&c["command"]);
            v.extend(strings(&c["args"]));
            v
        })
        .unwrap_or_default();
    let arg = |flag: &str| -> String {
        argv.iter()
            .position(|a| a == flag)
            .and_then(|i| argv.get(i + 1))
            .cloned()
            .unwrap_or_default()
    };
    let name = str_at(md, &["name"]);
    let w = size(&workflow);
    let template =
        if name.starts_with(&format!("{workflow}-")) && last_index_of(name, '-') > w as i64 {
            chars(name, w + 1, last_index_of(name, '-') as usize)
        } else {
            String::new()
        };
    let runtime_role = annotation("pipelines.kubeflow.org/runtime-role");
    let role = if !kfp_v2 {
        Some(PodRole::Executor)
    } else if template.starts_with("system-dag-driver")
        || template.starts_with("system-container-driver")
    {
        Some(PodRole::Driver)
    } else if template.starts_with("system-importer") {
        Some(PodRole::Importer)
    } else if template.ends_with("system-container-impl") {
        Some(PodRole::Executor)
    } else if runtime_role == "driver" {
        Some(PodRole::Driver)
    } else if arg("--executor_type") == "importer" {
        Some(PodRole::Importer)
    } else if runtime_role == "launcher"
        || pod["spec"]["initContainers"]
            .as_array()
            .is_some_and(|a| a.iter().any(|c| c["name"].as_str() == Some("kfp-launcher")))
    {
        Some(PodRole::Executor)
    } else {
        None
    };
    let node = annotation("workflows.argoproj.io/node-name");
    let rest = if node.starts_with(workflow.as_str()) {
        chars(node, w, size(node))
    } else {
        String::new()
    };
    let segments: Vec<String> = SEGMENT
        .find_iter(&rest)
        .map(|m| {
            let s = m.as_str();
            let s = s.split('(').next().unwrap_or("");
            s.split('[').next().unwrap_or("").to_string()
        })
        .filter(|s| !s.is_empty())
        .collect();
    let path = if kfp_v2 {
        let last = segments.len().saturating_sub(1);
        let kept: Vec<String> = segments
            .iter()
            .enumerate()
            .filter(|&(i, s)| {
                i > 0
                    && ![
                        "iteration-iterations",
                        "iteration-item",
                        "iteration-item-driver",
                        "iteration-driver",
                        "onExit",
                    ]
                    .contains(&s.as_str())
                    && segments.get(i + 1).map(String::as_str) != Some("onExit")
                    && !(i == last && s == "executor" && role == Some(PodRole::Executor))
            })
            .map(|(i, s)| {
                if i == last && role == Some(PodRole::Driver) && s.ends_with("-driver") {
                    chars(s, 0, size(s) - 7)
                } else {
                    s.clone()
                }
            })
            .collect();
        kept.join("/")
    } else if segments.iter().any(|s| s == "onExit" || s == "hooks") {
        String::new()
    } else {
        segments.join("/")
    };
    let task = path.rsplit('/').next().unwrap_or("").to_string();
    let executor_label = json_field(
        &EXECUTOR_LABEL,
        &format!("{}{}", arg("--component_spec"), arg("--component")),
        3,
    );
    let component = json_field(&COMPONENT_REF, &arg("--task"), 5);
    let display_name = DISPLAY_NAME
        .find(&arg("--task"))
        .map(|m| chars(m.as_str(), 20, size(m.as_str()) - 1))
        .unwrap_or_default();
    let names: Vec<String> = if kfp_v2 {
        match role {
            Some(PodRole::Driver) => vec![
                arg("--task_name"),
                path.clone(),
                display_name,
                component.clone(),
                component.strip_prefix("comp-").unwrap_or("").to_string(),
                executor_label,
            ],
            Some(PodRole::Executor) => {
                let bare = executor_label.strip_prefix("exec-").map(str::to_string);
                vec![
                    task.clone(),
                    path.clone(),
                    executor_label.clone(),
                    bare.as_ref()
                        .map(|b| format!("comp-{b}"))
                        .unwrap_or_default(),
                    bare.unwrap_or_default(),
                ]
            }
            _ => vec![task.clone(), path.clone()],
        }
    } else {
        let mut v = vec![template.clone(), task.clone(), path.clone()];
        if kfp_v1 {
            v.push(annotation("pipelines.kubeflow.org/task_display_name").to_string());
            v.push(json_field(
                &SPEC_NAME,
                annotation("pipelines.kubeflow.org/component_spec"),
                3,
            ));
        }
        v
    };
    let names = names.into_iter().filter(|n| !n.is_empty()).collect();
    let images = if kfp_v2 && role == Some(PodRole::Driver) {
        vec![json_field(&IMAGE, &arg("--container"), 3)]
    } else {
        main.iter()
            .map(|c| c["image"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let images = images.into_iter().filter(|i| !i.is_empty()).collect();
    let pipelines = if kfp_v2 {
        vec![arg("--pipeline_name")]
    } else {
        let bare = if GENERATED.is_match(&workflow) {
            chars(&workflow, 0, w - 6)
        } else {
            String::new()
        };
        vec![workflow.clone(), bare]
    };
    let pipelines = pipelines.into_iter().filter(|p| !p.is_empty()).collect();
    Some(PodReading {
        kfp_v2,
        kfp_v1,
        role,
        template,
        path,
        names,
        images,
        pipelines,
        kind: if kfp_v2 { "PipelineSpec" } else { "Workflow" },
        workflow,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `read_text` reads what `read` reads, whatever the shape.
    #[test]
    fn reading_the_text_is_reading_the_value() {
        let executor = r#"{"metadata": {"name": "p-x7k2p-system-container-impl-1", "namespace": "ns",
            "labels": {"workflows.argoproj.io/workflow": "p-x7k2p", "pipelines.kubeflow.org/v2_component": "true"},
            "annotations": {"workflows.argoproj.io/node-name": "p-x7k2p.root.train.executor"},
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]},
          "spec": {"initContainers": [{"name": "kfp-launcher", "image": "launcher"}],
            "containers": [{"name": "main", "image": "python:3.11", "command": ["sh", "-c"],
              "args": ["--executor_input", "{}", "--function_to_execute", "train"], "env": [{"name": "A"}]},
              {"name": "wait", "image": "argoexec"}],
            "volumes": [{"name": "v", "emptyDir": {}}]},
          "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}}"#;
        let driver = r#"{"metadata": {"name": "p-x7k2p-system-container-driver-2",
            "labels": {"workflows.argoproj.io/workflow": "p-x7k2p", "pipelines.kubeflow.org/v2_component": "true"},
            "annotations": {"workflows.argoproj.io/node-name": "p-x7k2p.root.train.driver",
              "pipelines.kubeflow.org/runtime-role": "driver"}},
          "spec": {"containers": [{"name": "main", "args": ["--type", "CONTAINER", "--task", "{\"taskInfo\":{\"name\":\"train\"}}"]}]}}"#;
        let kfp_v1 = r#"{"metadata": {"name": "wf-abcde-123", "labels": {"workflows.argoproj.io/workflow": "wf-abcde",
            "pipelines.kubeflow.org/pipeline-sdk-type": "kfp"},
            "annotations": {"pipelines.kubeflow.org/component_spec": "{\"name\": \"Train\"}"}},
          "spec": {"containers": [{"name": "main", "image": "img", "command": null}]}}"#;
        let odd = [
            r#"{"metadata": {"labels": {"workflows.argoproj.io/workflow": "w"}}, "spec": {"containers": null}}"#,
            r#"{"metadata": {"labels": {"workflows.argoproj.io/workflow": "w"}, "name": 5}, "spec": {"containers": [{"name": ["x"]}]}}"#,
            r#"{"metadata": {"labels": "none"}}"#,
            r#"{"metadata": {"labels": {"workflows.argoproj.io/workflow": "w"}}, "spec": {"containers": {"name": "main"}}}"#,
            r#"{"metadata": {"labels": {"workflows.argoproj.io/workflow": "w"}, "labels": {"workflows.argoproj.io/workflow": "v"}}}"#,
            r#"{}"#,
            r#"[]"#,
        ];
        for text in [executor, driver, kfp_v1].into_iter().chain(odd) {
            let value: Json = serde_json::from_str(text).unwrap();
            assert_eq!(read_text(text).unwrap(), read(&value), "{text}");
        }
        assert!(read_text(executor).unwrap().is_some());
        assert!(read_text("{").is_err());
    }
}
