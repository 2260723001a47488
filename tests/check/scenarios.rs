//! Hand-written scenarios, one world: every filter (unschedulable, taints,
//! node selector, each affinity operator, matchFields, resources with init
//! containers and sidecars) and every format (Pod, Deployment, Job,
//! CronJob, DaemonSet, a `v1 List`, Argo workflows and KFP v1, KFP v2 IR
//! and its PipelineVersion), with and without a policy. Each must agree
//! with the scheduler, and each also checks that it exercises what it says.

use std::time::Instant;

use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, PostParams};

use super::harness::{Compared, NodeSpec, Observed, World, coverage, record, summary};
use crate::node::cluster::{exclusive, rt};

fn spec(
    name: &str,
    labels: &[(&str, &str)],
    taints: &[&str],
    alloc: &[(&str, &str)],
    cordoned: bool,
) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        taints: taints.iter().map(|t| t.to_string()).collect(),
        allocatable: alloc
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        cordoned,
    }
}

/// The world: two CPU nodes, two tainted GPU nodes, a cordoned node, a
/// node that takes no pods, a tiny node and a spot node.
fn world() -> Vec<NodeSpec> {
    vec![
        spec(
            "cpu-a",
            &[
                ("pool", "cpu"),
                ("zone", "a"),
                ("gen", "7"),
                ("disk", "ssd"),
            ],
            &[],
            &[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")],
            false,
        ),
        spec(
            "cpu-b",
            &[
                ("pool", "cpu"),
                ("zone", "b"),
                ("gen", "007"),
                ("disk", "hdd"),
            ],
            &[],
            &[("cpu", "2"), ("memory", "4Gi"), ("pods", "110")],
            false,
        ),
        spec(
            "gpu-a",
            &[("pool", "gpu"), ("zone", "a"), ("accelerator", "a100")],
            &["gpu=true:NoSchedule"],
            &[
                ("cpu", "16"),
                ("memory", "64Gi"),
                ("pods", "110"),
                ("nvidia.com/gpu", "2"),
            ],
            false,
        ),
        spec(
            "gpu-b",
            &[("pool", "gpu"), ("zone", "b"), ("accelerator", "h100")],
            &["gpu=true:NoSchedule", "dedicated=ml:NoExecute"],
            &[
                ("cpu", "32"),
                ("memory", "128Gi"),
                ("pods", "110"),
                ("nvidia.com/gpu", "4"),
            ],
            false,
        ),
        spec(
            "cordoned",
            &[("pool", "cpu"), ("zone", "c")],
            &[],
            &[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")],
            true,
        ),
        spec(
            "full",
            &[("pool", "cpu"), ("zone", "c")],
            &["spot=true:PreferNoSchedule"],
            &[("cpu", "1"), ("memory", "1Gi"), ("pods", "0")],
            false,
        ),
        spec(
            "tiny",
            &[("pool", "tiny"), ("zone", "c")],
            &[],
            &[("cpu", "8"), ("memory", "200Mi"), ("pods", "110")],
            false,
        ),
        spec(
            "spot",
            &[("pool", "spot"), ("zone", "d")],
            &["spot=true:PreferNoSchedule"],
            &[("cpu", "2"), ("memory", "4Gi"), ("pods", "110")],
            false,
        ),
    ]
}

/// What a scenario should show, besides agreeing with the scheduler.
pub(super) enum Expect {
    /// Fits exactly these world nodes.
    Fits(&'static [&'static str]),
    /// Fits none; the scheduler's message contains each of these.
    None(&'static [&'static str]),
    /// The API server refuses to create it, saying this.
    Refused(&'static str),
    /// kube-scheduler leaves it alone (another scheduler's pod).
    Ignored,
}

pub(super) struct Scenario {
    pub name: &'static str,
    pub files: Vec<(&'static str, String)>,
    pub policy: Option<String>,
    pub expect: Expect,
}

pub(super) const TOL_GPU: &str = "{key: gpu, operator: Exists, effect: NoSchedule}";
pub(super) const TOL_ML: &str = "{key: dedicated, operator: Equal, value: ml, effect: NoExecute}";

/// A bare Pod with `body` as its spec's extra lines (two-space indented under spec).
pub(super) fn pod(body: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: main\n    image: busybox\n{body}"
    )
}

pub(super) fn s(name: &'static str, text: String, expect: Expect) -> Scenario {
    Scenario {
        name,
        files: vec![("input.yaml", text)],
        policy: None,
        expect,
    }
}

fn workload_scenarios() -> Vec<Scenario> {
    use Expect::*;
    vec![
        s(
            "plain pod",
            pod(""),
            Fits(&["cpu-a", "cpu-b", "tiny", "spot"]),
        ),
        s(
            "selector without toleration",
            pod("  nodeSelector: {pool: gpu}\n"),
            None(&["untolerated taint"]),
        ),
        s(
            "toleration Exists",
            pod(&format!(
                "  nodeSelector: {{pool: gpu}}\n  tolerations: [{TOL_GPU}]\n"
            )),
            Fits(&["gpu-a"]),
        ),
        s(
            "NoExecute toleration too",
            pod(&format!(
                "  nodeSelector: {{pool: gpu}}\n  tolerations: [{TOL_GPU}, {TOL_ML}]\n"
            )),
            Fits(&["gpu-a", "gpu-b"]),
        ),
        s(
            "toleration value typo",
            pod(
                "  nodeSelector: {pool: gpu}\n  tolerations: [{key: gpu, value: ture, effect: NoSchedule}]\n",
            ),
            None(&["untolerated taint"]),
        ),
        s(
            "PreferNoSchedule toleration does not tolerate NoSchedule",
            pod(
                "  nodeSelector: {pool: gpu}\n  tolerations: [{key: gpu, value: 'true', effect: PreferNoSchedule}]\n",
            ),
            None(&["untolerated taint"]),
        ),
        s(
            "empty key Exists tolerates everything",
            pod("  tolerations: [{operator: Exists}]\n"),
            Fits(&[
                "cpu-a", "cpu-b", "gpu-a", "gpu-b", "cordoned", "tiny", "spot",
            ]),
        ),
        s(
            "tolerating the cordon",
            pod(
                "  nodeSelector: {zone: c}\n  tolerations: [{key: node.kubernetes.io/unschedulable, operator: Exists, effect: NoSchedule}]\n",
            ),
            Fits(&["cordoned", "tiny"]),
        ),
        s(
            "cordoned node only",
            pod("  nodeSelector: {pool: cpu, zone: c}\n"),
            None(&["were unschedulable", "Too many pods"]),
        ),
        s(
            "In",
            pod(&format!(
                "  tolerations: [{TOL_GPU}, {TOL_ML}]\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{{key: accelerator, operator: In, values: [a100]}}]\n"
            )),
            Fits(&["gpu-a"]),
        ),
        s(
            "NotIn",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: pool, operator: NotIn, values: [gpu, tiny, spot]}]\n",
            ),
            Fits(&["cpu-a", "cpu-b"]),
        ),
        s(
            "Exists",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: disk, operator: Exists}]\n",
            ),
            Fits(&["cpu-a", "cpu-b"]),
        ),
        s(
            "DoesNotExist",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: disk, operator: DoesNotExist}, {key: zone, operator: In, values: [a, b]}]\n",
            ),
            None(&[
                "untolerated taint",
                "didn't match Pod's node affinity/selector",
            ]),
        ),
        s(
            "Gt compares integers (007 is 7)",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: gen, operator: Gt, values: ['6']}]\n",
            ),
            Fits(&["cpu-a", "cpu-b"]),
        ),
        s(
            "Lt",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: gen, operator: Lt, values: ['7']}]\n",
            ),
            None(&["didn't match Pod's node affinity/selector"]),
        ),
        s(
            "Gt with a threshold that is no integer",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: gen, operator: Gt, values: ['1.5']}]\n",
            ),
            None(&["didn't match Pod's node affinity/selector"]),
        ),
        s(
            "two terms are ORed",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: zone, operator: In, values: [a]}]\n        - matchExpressions: [{key: zone, operator: In, values: [d]}]\n",
            ),
            Fits(&["cpu-a", "spot"]),
        ),
        s(
            "an empty term matches nothing",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - {}\n",
            ),
            None(&["didn't match Pod's node affinity/selector"]),
        ),
        s(
            "nodeSelector and required terms are ANDed",
            pod(
                "  nodeSelector: {pool: cpu}\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: zone, operator: In, values: [b, d]}]\n",
            ),
            Fits(&["cpu-b"]),
        ),
        s(
            "matchFields In",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchFields: [{key: metadata.name, operator: In, values: ['{P}-cpu-a']}]\n",
            ),
            Fits(&["cpu-a"]),
        ),
        s(
            "matchFields In a tainted node",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchFields: [{key: metadata.name, operator: In, values: ['{P}-gpu-a']}]\n",
            ),
            None(&[
                "didn't satisfy plugin(s) [NodeAffinity]",
                "1 node(s) had untolerated taint(s)",
            ]),
        ),
        s(
            "matchFields in two terms",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchFields: [{key: metadata.name, operator: In, values: ['{P}-cpu-a']}]\n        - matchFields: [{key: metadata.name, operator: In, values: ['{P}-cpu-b']}]\n",
            ),
            Fits(&["cpu-a", "cpu-b"]),
        ),
        s(
            "matchFields that conflict",
            pod(
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchFields: [{key: metadata.name, operator: In, values: ['{P}-cpu-a']}, {key: metadata.name, operator: In, values: ['{P}-cpu-b']}]\n",
            ),
            None(&["pod affinity terms conflict"]),
        ),
        s(
            "matchFields NotIn",
            pod(
                "  nodeSelector: {pool: cpu}\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchFields: [{key: metadata.name, operator: NotIn, values: ['{P}-cpu-a']}]\n",
            ),
            Fits(&["cpu-b"]),
        ),
        s(
            "preferred terms only score",
            pod(
                "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 50\n        preference: {matchExpressions: [{key: zone, operator: In, values: [b]}]}\n",
            ),
            Fits(&["cpu-a", "cpu-b", "tiny", "spot"]),
        ),
        s(
            "a PreferNoSchedule taint only scores",
            pod("  nodeSelector: {pool: spot}\n"),
            Fits(&["spot"]),
        ),
    ]
}

fn resource_scenarios() -> Vec<Scenario> {
    use Expect::*;
    vec![
        s(
            "cpu request",
            pod("    resources: {requests: {cpu: '3'}}\n"),
            Fits(&["cpu-a", "tiny"]),
        ),
        s(
            "cpu request too large",
            pod("    resources: {requests: {cpu: '64'}}\n"),
            None(&["Insufficient cpu", "untolerated taint"]),
        ),
        s(
            "memory request defaults from its limit",
            pod("    resources: {limits: {memory: 6Gi}}\n"),
            Fits(&["cpu-a"]),
        ),
        s(
            "a GPU count only one node has",
            pod(&format!(
                "    resources: {{limits: {{nvidia.com/gpu: '3'}}}}\n  tolerations: [{TOL_GPU}, {TOL_ML}]\n"
            )),
            Fits(&["gpu-b"]),
        ),
        s(
            "more GPUs than any node",
            pod(&format!(
                "    resources: {{limits: {{nvidia.com/gpu: '8'}}}}\n  tolerations: [{TOL_GPU}, {TOL_ML}]\n"
            )),
            None(&["Insufficient nvidia.com/gpu"]),
        ),
        s(
            "an init container's request is the floor",
            pod(
                "    resources: {requests: {cpu: 500m}}\n  initContainers:\n  - name: setup\n    image: busybox\n    resources: {requests: {cpu: '3'}}\n",
            ),
            Fits(&["cpu-a", "tiny"]),
        ),
        s(
            "a sidecar adds to the containers",
            pod(
                "    resources: {requests: {cpu: '1'}}\n  initContainers:\n  - name: proxy\n    image: busybox\n    restartPolicy: Always\n    resources: {requests: {cpu: 1500m}}\n",
            ),
            Fits(&["cpu-a", "tiny"]),
        ),
        s(
            "pod-level resources",
            pod(
                "  resources: {requests: {cpu: '3', memory: 1Gi}, limits: {cpu: '3', memory: 1Gi}}\n",
            ),
            Fits(&["cpu-a"]),
        ),
        s(
            "a preferred threshold that is no integer fails the pod in PreScore",
            pod(
                "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 10\n        preference: {matchExpressions: [{key: gen, operator: Gt, values: ['1.5']}]}\n",
            ),
            None(&["running PreScore plugin \"NodeAffinity\""]),
        ),
        s(
            "preemptionPolicy Never",
            pod(
                "  priorityClassName: '{P}-never'\n  preemptionPolicy: Never\n  nodeSelector: {pool: nowhere}\n",
            ),
            None(&["not eligible due to preemptionPolicy=Never"]),
        ),
    ]
}

fn controller_scenarios() -> Vec<Scenario> {
    use Expect::*;
    vec![
        s("Deployment", format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec:\n      nodeSelector: {{pool: gpu}}\n      tolerations: [{TOL_GPU}]\n      containers: [{{name: main, image: busybox, resources: {{requests: {{memory: 32Gi}}}}}}]\n"), Fits(&["gpu-a"])),
        s("Job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: main, image: busybox, resources: {requests: {cpu: 1500m}}}]\n".into(), Fits(&["cpu-a", "cpu-b", "tiny", "spot"])),
        s("CronJob", "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n  schedule: '0 * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          nodeSelector: {zone: c}\n          containers: [{name: main, image: busybox, resources: {requests: {memory: 300Mi}}}]\n".into(), None(&["were unschedulable", "Too many pods", "Insufficient memory"])),
        s("DaemonSet tolerations", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds}\nspec:\n  selector: {matchLabels: {app: ds}}\n  template:\n    metadata: {labels: {app: ds}}\n    spec:\n      nodeSelector: {zone: c}\n      containers: [{name: main, image: busybox}]\n".into(), Fits(&["cordoned", "tiny"])),
        s("a v1 List of workloads", format!("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {{name: a}}\n  spec:\n    nodeSelector: {{accelerator: h100}}\n    tolerations: [{TOL_GPU}]\n    containers: [{{name: main, image: busybox}}]\n- apiVersion: v1\n  kind: Pod\n  metadata: {{name: b}}\n  spec:\n    nodeSelector: {{accelerator: h100}}\n    tolerations: [{TOL_GPU}, {TOL_ML}]\n    containers: [{{name: main, image: busybox}}]\n"), None(&["untolerated taint"])),
    ]
}

pub(super) fn argo(spec_extra: &str, templates: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {{name: wf}}\nspec:\n  entrypoint: main\n{spec_extra}  templates:\n{templates}"
    )
}

fn argo_scenarios() -> Vec<Scenario> {
    use Expect::*;
    vec![
        s(
            "Argo template scheduling and resources",
            argo(
                "",
                &format!(
                    "  - name: main\n    nodeSelector: {{pool: gpu}}\n    tolerations: [{TOL_GPU}]\n    container: {{image: busybox, resources: {{limits: {{nvidia.com/gpu: '2'}}}}}}\n"
                ),
            ),
            Fits(&["gpu-a"]),
        ),
        s(
            "Argo workflow-level nodeSelector",
            argo(
                "  nodeSelector: {disk: ssd}\n",
                "  - name: main\n    container: {image: busybox}\n",
            ),
            Fits(&["cpu-a"]),
        ),
        s(
            "Argo template nodeSelector replaces the workflow's",
            argo(
                "  nodeSelector: {disk: ssd}\n",
                "  - name: main\n    nodeSelector: {disk: hdd}\n    container: {image: busybox}\n",
            ),
            Fits(&["cpu-b"]),
        ),
        s(
            "Argo containerSet sums its containers",
            argo(
                "",
                "  - name: main\n    containerSet:\n      containers:\n      - {name: a, image: busybox, resources: {requests: {cpu: 1500m}}}\n      - {name: b, image: busybox, resources: {requests: {cpu: 1500m}}}\n",
            ),
            Fits(&["cpu-a", "tiny"]),
        ),
        s(
            "Argo script with init containers and sidecars",
            argo(
                "",
                "  - name: main\n    initContainers: [{name: init-big, image: busybox, resources: {requests: {memory: 5Gi}}}]\n    sidecars: [{name: side, image: busybox, resources: {requests: {cpu: 1500m}}}]\n    script: {image: busybox, source: echo, resources: {requests: {cpu: 1}}}\n",
            ),
            Fits(&["cpu-a"]),
        ),
        s(
            "Argo podSpecPatch",
            argo(
                "",
                "  - name: main\n    podSpecPatch: '{\"tolerations\": [{\"operator\": \"Exists\"}], \"nodeSelector\": {\"pool\": \"gpu\"}}'\n    container: {image: busybox}\n",
            ),
            Fits(&["gpu-a", "gpu-b"]),
        ),
        s(
            "Argo DAG template scheduling reaches its pods",
            argo(
                "",
                &format!(
                    "  - name: main\n    tolerations: [{TOL_GPU}]\n    nodeSelector: {{pool: gpu}}\n    dag:\n      tasks:\n      - {{name: t, template: leaf}}\n  - name: leaf\n    container: {{image: busybox}}\n"
                ),
            ),
            Fits(&["gpu-a"]),
        ),
        s(
            "Argo templateDefaults",
            argo(
                &format!(
                    "  templateDefaults:\n    tolerations: [{TOL_GPU}]\n    nodeSelector: {{accelerator: a100}}\n"
                ),
                "  - name: main\n    container: {image: busybox}\n",
            ),
            Fits(&["gpu-a"]),
        ),
        s(
            "Argo resource template",
            argo(
                "  nodeSelector: {pool: tiny}\n",
                "  - name: main\n    resource: {action: create, manifest: '{}'}\n",
            ),
            Fits(&["tiny"]),
        ),
        s(
            "Argo CronWorkflow",
            format!(
                "apiVersion: argoproj.io/v1alpha1\nkind: CronWorkflow\nmetadata: {{name: cw}}\nspec:\n  schedule: '0 * * * *'\n  workflowSpec:\n    entrypoint: main\n    tolerations: [{TOL_GPU}, {TOL_ML}]\n    templates:\n    - name: main\n      nodeSelector: {{zone: b}}\n      container: {{image: busybox, resources: {{requests: {{cpu: '3'}}}}}}\n"
            ),
            Fits(&["gpu-b"]),
        ),
    ]
}

/// A KFP v2 pipeline with one container task, its executor's resources and
/// its Kubernetes config (both as YAML lines, already indented).
fn kfp(resources: &str, config: &str) -> String {
    let mut t = format!(
        "components:\n  comp-train:\n    executorLabel: exec-train\ndeploymentSpec:\n  executors:\n    exec-train:\n      container:\n        image: pytorch/pytorch:2.3\n{resources}pipelineInfo:\n  name: p\nroot:\n  dag:\n    tasks:\n      train:\n        componentRef: {{name: comp-train}}\n        taskInfo: {{name: train}}\nschemaVersion: 2.1.0\nsdkVersion: kfp-2.17.3\n"
    );
    if !config.is_empty() {
        t.push_str(&format!("---\nplatforms:\n  kubernetes:\n    deploymentSpec:\n      executors:\n        exec-train:\n{config}"));
    }
    t
}

fn kfp_scenarios() -> Vec<Scenario> {
    use Expect::*;
    let gpu_tol =
        "          tolerations:\n          - {effect: NoSchedule, key: gpu, operator: Exists}\n";
    vec![
        s("KFP v2 launcher needs 256Mi", kfp("", "          nodeSelector:\n            labels: {pool: tiny}\n"), None(&["Insufficient memory"])),
        s("KFP v2 resource strings and accelerator", kfp("        resources:\n          resourceCpuLimit: '4'\n          resourceMemoryLimit: 16Gi\n          accelerator: {resourceType: nvidia.com/gpu, resourceCount: '2'}\n", &format!("{gpu_tol}          nodeSelector:\n            labels: {{pool: gpu}}\n")), Fits(&["gpu-a"])),
        s("KFP v2 old float fields", kfp("        resources:\n          cpuLimit: 3.0\n          memoryLimit: 4.294967296\n", ""), Fits(&["cpu-a"])),
        s("KFP v2 nodeSelectorJson constant wins over labels", kfp("", "          nodeSelector:\n            labels: {pool: gpu}\n            nodeSelectorJson: {runtimeValue: {constant: {disk: hdd}}}\n"), Fits(&["cpu-b"])),
        s("KFP v2 tolerationJson constant", kfp("", "          nodeSelector:\n            labels: {accelerator: h100}\n          tolerations:\n          - tolerationJson: {runtimeValue: {constant: [{key: gpu, operator: Exists}, {key: dedicated, operator: Exists}]}}\n"), Fits(&["gpu-b"])),
        s("KFP v2 required and preferred node affinity", kfp("", "          nodeAffinity:\n          - matchExpressions: [{key: pool, operator: In, values: [cpu, spot]}]\n          - matchExpressions: [{key: zone, operator: In, values: [b]}]\n            weight: 50.0\n"), Fits(&["cpu-a", "cpu-b", "spot"])),
        s("KFP v2 resources kept off the pod by taskConfigPassthroughs", kfp("        resources:\n          resourceCpuLimit: '64'\n", "          nodeSelector:\n            labels: {pool: cpu}\n").replace("    executorLabel: exec-train\n", "    executorLabel: exec-train\n    taskConfigPassthroughs:\n    - {field: RESOURCES}\n"), Fits(&["cpu-a", "cpu-b"])),
        s("KFP PipelineVersion", format!(
            "apiVersion: pipelines.kubeflow.org/v2beta1\nkind: PipelineVersion\nmetadata: {{name: p-v1}}\nspec:\n  pipelineName: p\n  pipelineSpec:\n{}  platformSpec:\n    platforms:\n      kubernetes:\n        deploymentSpec:\n          executors:\n            exec-train:\n              nodeSelector:\n                labels: {{accelerator: a100}}\n              tolerations:\n              - {{key: gpu, operator: Exists}}\n",
            kfp("        resources:\n          resourceMemoryRequest: 32Gi\n", "").lines().map(|l| format!("    {l}\n")).collect::<String>()
        ), Fits(&["gpu-a"])),
    ]
}

pub(super) const POLICY_HEAD: &str =
    "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: t}\nspec:\n";

fn policy_scenarios() -> Vec<Scenario> {
    let with_policy = |name: &'static str, file: String, policy: String, expect: Expect| Scenario {
        name,
        files: vec![("input.yaml", file)],
        policy: Some(format!("{POLICY_HEAD}{policy}")),
        expect,
    };
    let v1 = std::fs::read_to_string(
        crate::support::root().join("testdata/golden/corpus-v1/p01_basic_train/plain.yaml"),
    )
    .expect("fixture");
    let v2 = std::fs::read_to_string(
        crate::support::root().join("testdata/golden/corpus-v2/p02_container_gpu/plain.yaml"),
    )
    .expect("fixture");
    vec![
        with_policy(
            "pool shorthand on a Deployment (-p)",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: train}\nspec:\n  selector: {matchLabels: {app: t}}\n  template:\n    metadata: {labels: {app: t}}\n    spec:\n      containers: [{name: main, image: busybox}]\n".into(),
            "  nodePools:\n  - name: gpu\n    labels: {pool: gpu}\n    taints: [{key: gpu, value: 'true', effect: NoSchedule}]\n  rules:\n  - name: train\n    pool: gpu\n".into(),
            Expect::Fits(&["gpu-a"]),
        ),
        with_policy(
            "KFP v1 compiled pipeline (-p)",
            v1,
            format!("  rules:\n  - name: train-on-gpu\n    match: {{names: [train]}}\n    tolerations: [{TOL_GPU}, {TOL_ML}]\n    nodeSelector: {{accelerator: h100}}\n  - name: rest-on-ssd\n    exclude: {{names: [train]}}\n    nodeSelector: {{disk: ssd}}\n"),
            Expect::Fits(&["cpu-a", "gpu-b"]),
        ),
        with_policy(
            "KFP v2 compiled pipeline with GPUs (-p)",
            v2,
            format!("  rules:\n  - name: gpu\n    match: {{images: ['pytorch/pytorch:*']}}\n    tolerations: [{TOL_GPU}]\n    nodeSelector: {{pool: gpu}}\n"),
            Expect::Fits(&["cpu-a", "cpu-b", "gpu-a", "spot"]),
        ),
    ]
}

/// The world's node names a verdict lists, short.
fn in_world(world: &World, nodes: &[String]) -> Vec<String> {
    let prefix = format!("{}-", world.prefix);
    let mut v: Vec<String> = nodes
        .iter()
        .filter_map(|n| n.strip_prefix(&prefix).map(str::to_string))
        .collect();
    v.sort();
    v
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn check_agrees_with_kube_scheduler_on_hand_written_scenarios() {
    let _all = exclusive();
    rt().block_on(async {
        let world = World::create("check", &world()).await;
        let classes: Api<PriorityClass> = Api::all(world.client.clone());
        let class: PriorityClass = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{}-never", world.prefix)}, "value": 0, "preemptionPolicy": "Never",
        }))
        .expect("a PriorityClass");
        classes.create(&PostParams::default(), &class).await.expect("create the PriorityClass");
        let high: PriorityClass = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{}-high", world.prefix)}, "value": 1000,
        }))
        .expect("a PriorityClass");
        classes.create(&PostParams::default(), &high).await.expect("create the PriorityClass");
        let start = Instant::now();
        let mut scenarios = workload_scenarios();
        scenarios.extend(resource_scenarios());
        scenarios.extend(controller_scenarios());
        scenarios.extend(argo_scenarios());
        scenarios.extend(kfp_scenarios());
        scenarios.extend(policy_scenarios());
        scenarios.extend(super::pod_spec_fields::scenarios());
        assert!(scenarios.len() >= 40, "{} scenarios", scenarios.len());
        let mut all: Vec<Compared> = Vec::new();
        let mut problems = Vec::new();
        for sc in &scenarios {
            let files: Vec<(&str, String)> = sc.files.iter().map(|(n, t)| (*n, t.replace("{P}", &world.prefix))).collect();
            let policy = sc.policy.as_ref().map(|p| p.replace("{P}", &world.prefix));
            let got = world.compare(&sc.name.replace(' ', "-"), &files, policy.as_deref()).await;
            for c in &got {
                if !c.agrees() {
                    problems.push(format!("disagrees: {}", c.describe()));
                }
            }
            // The scenario shows what it is about (for its components as a whole).
            let fits: Vec<String> = {
                let mut all_nodes: Vec<String> = got.iter().flat_map(|c| c.predicted.clone()).collect();
                all_nodes.sort();
                all_nodes.dedup();
                in_world(&world, &all_nodes)
            };
            match &sc.expect {
                Expect::Fits(want) => {
                    let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
                    want.sort();
                    if fits != want {
                        problems.push(format!("{}: fits {fits:?}, meant {want:?}", sc.name));
                    }
                }
                Expect::Refused(part) => {
                    if !got.iter().all(|c| matches!(&c.observed, Observed::Refused(m) if m.contains(part))) {
                        problems.push(format!("{}: meant to be refused ({part}): {got:?}", sc.name));
                    }
                }
                Expect::Ignored => {
                    if !got.iter().all(|c| c.observed == Observed::Ignored) {
                        problems.push(format!("{}: meant to be left alone by kube-scheduler: {got:?}", sc.name));
                    }
                }
                Expect::None(parts) => {
                    let messages: Vec<&str> = got.iter().filter_map(|c| match &c.observed {
                        Observed::Unschedulable(m) | Observed::Error(m) => Some(m.as_str()),
                        _ => None,
                    }).collect();
                    if messages.is_empty() || parts.iter().any(|p| !messages.iter().any(|m| m.contains(p))) {
                        problems.push(format!("{}: scheduler said {messages:?}, meant to contain {parts:?}", sc.name));
                    }
                }
            }
            all.extend(got);
        }
        let line = summary(&format!("hand-written: {} scenarios, {} pods", scenarios.len(), all.len()), &all, start.elapsed());
        eprintln!("{line}\n  messages with each reason: {}", coverage(&all));
        record(&line);
        for c in all.iter().filter(|c| !c.whole_message_agrees()) {
            eprintln!("whole message differs: {}", c.describe());
        }
        let _ = classes.delete(&format!("{}-never", world.prefix), &Default::default()).await;
        let _ = classes.delete(&format!("{}-high", world.prefix), &Default::default()).await;
        world.delete().await;
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    });
}
