//! The pods the creators make, against what the creators' sources do
//! (KFP's driver and compiler, Argo's workflow controller, the DaemonSet
//! controller, the API server's defaulting): the rules `docs/check.md`
//! cites, one test each.

use super::pod::Pod;
use super::{Found, pods_of};

fn pods(text: &str) -> Vec<Pod> {
    match pods_of("t.yaml", text) {
        Ok(found) => found.into_iter().map(|f: Found| f.pod).collect(),
        Err(e) => panic!(
            "{}",
            e.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

fn one(text: &str) -> Pod {
    let mut p = pods(text);
    assert_eq!(p.len(), 1, "one component");
    p.remove(0)
}

fn errors(text: &str) -> Vec<String> {
    match pods_of("t.yaml", text) {
        Ok(_) => Vec::new(),
        Err(e) => e.iter().map(ToString::to_string).collect(),
    }
}

/// A KFP v2 pipeline: one task, its executor's `resources` lines and its
/// Kubernetes config lines (already indented).
fn kfp(resources: &str, config: &str) -> String {
    let mut t = format!(
        "components:\n  comp-t:\n    executorLabel: exec-t\ndeploymentSpec:\n  executors:\n    exec-t:\n      container:\n        image: busybox\n{resources}pipelineInfo:\n  name: p\nroot:\n  dag:\n    tasks:\n      t:\n        componentRef: {{name: comp-t}}\n        taskInfo: {{name: t}}\nschemaVersion: 2.1.0\nsdkVersion: kfp-2.17.3\n"
    );
    if !config.is_empty() {
        t.push_str(&format!(
            "---\nplatforms:\n  kubernetes:\n    deploymentSpec:\n      executors:\n        exec-t:\n{config}"
        ));
    }
    t
}

fn tolerations(p: &Pod) -> Vec<String> {
    p.own_tolerations()
        .iter()
        .map(super::report::toleration)
        .collect()
}

#[test]
fn kfp_executor_pods_have_the_launcher_and_main() {
    let p = one(&kfp("", ""));
    let names: Vec<&str> = p
        .init_containers
        .iter()
        .chain(&p.containers)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["init", "kfp-launcher", "wait", "main"]);
    // The launcher's 100m cpu and (its limit) 256Mi are the floor.
    let r = p.requests();
    assert_eq!((r.milli_cpu, r.memory), (100, 256 << 20));
    // DefaultTolerationSeconds' two, added by the API server.
    assert_eq!(p.tolerations.len(), 2);
    assert!(p.own_tolerations().is_empty());
}

#[test]
fn kfp_resource_strings_win_over_the_old_floats() {
    let p = one(&kfp(
        "        resources:\n          cpuLimit: 8.0\n          resourceCpuLimit: '2'\n          memoryLimit: 4.294967296\n          resourceMemoryRequest: 1Gi\n",
        "",
    ));
    let main = &p.containers[1];
    assert_eq!(main.limits["cpu"].text, "2");
    // memoryLimit is decimal gigabytes, printed with Go's %v.
    assert_eq!(main.limits["memory"].text, "4.294967296G");
    assert_eq!(main.limits["memory"].value(), 4_294_967_296);
    assert_eq!(main.requests["memory"].text, "1Gi");
    assert_eq!(
        main.requests["cpu"].text, "2",
        "the request defaults from the limit"
    );
}

#[test]
fn kfp_float_the_driver_cannot_parse_is_an_error() {
    let e = errors(&kfp(
        "        resources:\n          memoryLimit: 0.00001\n",
        "",
    ));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("\"1e-05G\", which is not a Kubernetes quantity"),
        "{}",
        e[0]
    );
    assert!(
        e[0].starts_with(
            "t.yaml:10:24: deploymentSpec.executors.exec-t.container.resources.memoryLimit: "
        ),
        "{}",
        e[0]
    );
}

#[test]
fn kfp_accelerator_is_a_limit_named_by_its_type() {
    let p = one(&kfp(
        "        resources:\n          accelerator: {count: '2', type: nvidia.com/gpu}\n",
        "",
    ));
    assert_eq!(p.containers[1].limits["nvidia.com/gpu"].text, "2");
    assert_eq!(p.requests().scalar["nvidia.com/gpu"], 2);
    // resourceType/resourceCount win.
    let p = one(&kfp(
        "        resources:\n          accelerator: {count: '2', type: nvidia.com/gpu, resourceType: amd.com/gpu, resourceCount: '1'}\n",
        "",
    ));
    assert_eq!(
        p.containers[1].limits.keys().collect::<Vec<_>>(),
        ["amd.com/gpu"]
    );
    // A type without a count, or a count of 0, sets nothing.
    let p = one(&kfp(
        "        resources:\n          accelerator: {type: nvidia.com/gpu}\n",
        "",
    ));
    assert!(p.containers[1].limits.is_empty());
    // An SDK accelerator name is no resource name: the API server refuses it.
    let e = errors(&kfp(
        "        resources:\n          accelerator: {count: '1', type: NVIDIA_TESLA_K80}\n",
        "",
    ));
    assert!(
        e[0].contains("must be a standard resource for containers"),
        "{e:?}"
    );
}

#[test]
fn kfp_parameters_are_not_judged() {
    let p = one(&kfp(
        "        resources:\n          resourceCpuLimit: '{{$.inputs.parameters[''pipelinechannel--cpu'']}}'\n",
        "          nodeSelector:\n            nodeSelectorJson: {componentInputParameter: sel}\n",
    ));
    assert!(p.containers[1].limits.is_empty());
    assert_eq!(p.unjudged.len(), 2, "{:?}", p.unjudged);
    assert!(p.unjudged[0].starts_with("resourceCpuLimit is a pipeline parameter"));
    assert!(p.unjudged[1].contains("componentInputParameter"));
}

#[test]
fn kfp_json_constants_are_used_and_node_selector_json_replaces_labels() {
    let p = one(&kfp(
        "",
        "          nodeSelector:\n            labels: {pool: gpu}\n            nodeSelectorJson: {runtimeValue: {constant: {disk: ssd}}}\n          tolerations:\n          - {key: a, operator: Exists}\n          - tolerationJson: {runtimeValue: {constant: '[{\"key\": \"b\", \"operator\": \"Exists\"}]'}}\n",
    ));
    assert_eq!(
        p.node_selector
            .as_ref()
            .map(|m| m.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["disk".to_string()])
    );
    assert_eq!(
        tolerations(&p),
        ["{key: a, operator: Exists}", "{key: b, operator: Exists}"]
    );
}

#[test]
fn kfp_affinity_json_terms_are_ored_with_the_structured_ones() {
    let p = one(&kfp(
        "",
        "          nodeAffinity:\n          - matchExpressions: [{key: pool, operator: In, values: [cpu]}]\n          - {}\n          - matchExpressions: [{key: zone, operator: In, values: [a]}]\n            weight: 20.0\n          - nodeAffinityJson: {runtimeValue: {constant: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [gpu]}]}]}}}}\n",
    ));
    let req = p.required.expect("required terms");
    assert_eq!(
        req.len(),
        2,
        "the empty term is skipped, the JSON term ORed in"
    );
    assert_eq!(p.preferred.len(), 1);
    assert_eq!(p.preferred[0].weight, 20);
}

#[test]
fn kfp_passthrough_keeps_listed_fields_off_the_pod() {
    let text = kfp(
        "        resources:\n          resourceCpuLimit: '4'\n",
        "          tolerations:\n          - {key: a, operator: Exists}\n",
    )
    .replace(
        "    executorLabel: exec-t\n",
        "    executorLabel: exec-t\n    taskConfigPassthroughs:\n    - {field: RESOURCES}\n    - {field: KUBERNETES_TOLERATIONS, applyToTask: true}\n",
    );
    let p = one(&text);
    assert!(
        p.containers[1].limits.is_empty(),
        "RESOURCES without applyToTask"
    );
    assert_eq!(tolerations(&p), ["{key: a, operator: Exists}"]);
}

fn argo(spec: &str, templates: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {{name: w}}\nspec:\n  entrypoint: main\n{spec}  templates:\n{templates}"
    )
}

#[test]
fn argo_template_fields_replace_the_workflows_when_not_empty() {
    let p = one(&argo(
        "  tolerations: [{key: wf, operator: Exists}]\n  nodeSelector: {a: wf}\n  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: x, operator: Exists}]}]}}}\n",
        "  - name: main\n    tolerations: []\n    nodeSelector: {b: t}\n    affinity: {}\n    container: {image: busybox}\n",
    ));
    assert_eq!(
        tolerations(&p),
        ["{key: wf, operator: Exists}"],
        "an empty list falls back"
    );
    assert_eq!(
        p.node_selector.map(|m| m.into_iter().collect::<Vec<_>>()),
        Some(vec![("b".into(), "t".into())])
    );
    assert!(
        p.required.is_none(),
        "affinity: {{}} is set, so it replaces the workflow's"
    );
}

#[test]
fn argo_caller_scheduling_and_template_defaults() {
    // The DAG template's fields reach its pods (Argo >= 3.6); templateDefaults
    // tolerations merge by key under the template's.
    let p = one(&argo(
        "  templateDefaults:\n    tolerations: [{key: a, value: d, operator: Equal}, {key: b, operator: Exists}]\n",
        "  - name: main\n    nodeSelector: {pool: gpu}\n    dag:\n      tasks:\n      - {name: t, template: leaf}\n  - name: leaf\n    tolerations: [{key: a, value: t, operator: Equal}]\n    container: {image: busybox}\n",
    ));
    assert_eq!(
        tolerations(&p),
        [
            "{key: a, operator: Equal, value: t}",
            "{key: b, operator: Exists}"
        ]
    );
    assert_eq!(p.node_selector.map(|m| m.len()), Some(1));
}

#[test]
fn argo_containers_per_template_type() {
    let all = pods(&argo(
        "",
        "  - name: main\n    steps: [[{name: a, template: set}], [{name: b, template: res}]]\n  - name: set\n    initContainers: [{name: i, image: x, resources: {requests: {cpu: '3'}}}]\n    sidecars: [{name: s, image: x, resources: {requests: {cpu: '1'}}}]\n    containerSet:\n      containers:\n      - {name: a, image: x, resources: {requests: {cpu: 500m}}}\n      - {name: b, image: x, resources: {requests: {cpu: 500m}}}\n  - name: res\n    resource: {action: create, manifest: '{}'}\n",
    ));
    let names = |p: &Pod| {
        p.init_containers
            .iter()
            .chain(&p.containers)
            .map(|c| c.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&all[0]), ["init", "i", "wait", "a", "b", "s"]);
    // max(init 3, containers 0.5 + 0.5 + sidecar 1) = 3 cpu.
    assert_eq!(all[0].requests().milli_cpu, 3000);
    assert_eq!(names(&all[1]), ["init", "main"]);
}

#[test]
fn argo_pod_spec_patch_merges_and_parameters_are_not_judged() {
    let p = one(&argo(
        "",
        "  - name: main\n    podSpecPatch: '{\"containers\": [{\"name\": \"main\", \"resources\": {\"limits\": {\"cpu\": \"2\"}}}], \"nodeSelector\": {\"b\": \"2\"}}'\n    nodeSelector: {a: '1'}\n    container: {image: x, resources: {requests: {memory: 1Gi}}}\n",
    ));
    let main = &p.containers[1];
    assert_eq!(
        (
            main.limits["cpu"].text.as_str(),
            main.requests["memory"].text.as_str()
        ),
        ("2", "1Gi")
    );
    assert_eq!(p.node_selector.map(|m| m.len()), Some(2));
    let p = one(&argo(
        "",
        "  - name: main\n    podSpecPatch: '{\"containers\": [{\"name\": \"main\", \"resources\": {\"limits\": {\"cpu\": \"{{inputs.parameters.cpu}}\"}}}]}'\n    container: {image: x}\n",
    ));
    assert!(
        p.unjudged[0].starts_with("podSpecPatch holds run-time values ({{inputs.parameters.cpu}})")
    );
}

#[test]
fn daemon_sets_get_their_controllers_tolerations() {
    let p = one(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 10}]\n      containers: [{name: c, image: x}]\n",
    );
    // The controller's not-ready toleration (without seconds) updates the
    // one written; unreachable and four NoSchedule ones are added, so
    // DefaultTolerationSeconds finds both of its keys tolerated.
    let keys: Vec<String> = p
        .tolerations
        .iter()
        .map(super::report::toleration)
        .collect();
    assert_eq!(keys.len(), 6, "{keys:?}");
    assert!(keys[0].ends_with("effect: NoExecute}") && !keys[0].contains("tolerationSeconds"));
    assert!(
        keys.iter()
            .any(|k| k.contains("node.kubernetes.io/unschedulable"))
    );
}

#[test]
fn what_the_api_server_refuses_is_bad_input_with_its_place() {
    let pod = |spec: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n{spec}  containers: [{{name: c, image: x}}]\n"
        )
    };
    let cases = [
        (
            "  nodeSelector: {gpu: true}\n",
            "t.yaml:5:23: spec.nodeSelector.gpu: nodeSelector value of gpu must be a string, and true is read as a boolean: quote it ('true')",
        ),
        (
            "  tolerations: [{key: a, operator: Equals, value: b}]\n",
            "t.yaml:5:36: spec.tolerations[0].operator: Unsupported value: \"Equals\": supported values: \"Equal\", \"Exists\"",
        ),
        (
            "  tolerations: [{operator: Equal, value: b}]\n",
            "operator must be Exists when `key` is empty",
        ),
        (
            "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}\n",
            "must have at least one node selector term",
        ),
        (
            "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [a, b]}]}]}}}\n",
            "must be only one value",
        ),
        (
            "  overhead: {cpu: lots}\n",
            "overhead.cpu: \"lots\" is not a quantity",
        ),
        (
            "  preemptionPolicy: Never\n",
            "refuses preemptionPolicy Never",
        ),
    ];
    for (spec, want) in cases {
        let e = errors(&pod(spec));
        assert!(e.iter().any(|m| m.contains(want)), "{spec}: {e:?}");
    }
    let e = errors(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: '2', nvidia.com/gpu: 1}, limits: {cpu: '1', nvidia.com/gpu: 2}}\n",
    );
    assert!(
        e.iter()
            .any(|m| m.contains("must be less than or equal to cpu limit of 1")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|m| m.contains("must be equal to nvidia.com/gpu limit of 2")),
        "{e:?}"
    );
}

/// kube-scheduler's PodTopologySpread filter for a component's first pod:
/// only a DoNotSchedule constraint's missing topologyKey label refuses a
/// node; an Argo template's podSpecPatch carries the constraints and the
/// runtime class.
#[test]
fn the_first_pod_of_a_spread_fails_only_nodes_without_the_topology_label() {
    use super::node::{Node, Nodes, Source};
    let node = |name: &str, zone: Option<&str>| Node {
        name: name.into(),
        labels: zone
            .map(|z| ("topology.kubernetes.io/zone".to_string(), z.to_string()))
            .into_iter()
            .collect(),
        ..Node::default()
    };
    let nodes = Nodes {
        nodes: vec![
            node("a", Some("z1")),
            node("b", None),
            node("c", Some("z1")),
        ],
        source: Source::Snapshot("s.yaml".into()),
        usage: false,
        priority_classes: super::Classes::Unknown("none".into()),
    };
    let argo = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec:\n  entrypoint: t\n  templates:\n  - name: t\n    podSpecPatch: '{\"runtimeClassName\": \"gvisor\", \"topologySpreadConstraints\": [{\"maxSkew\": 1, \"topologyKey\": \"topology.kubernetes.io/zone\", \"whenUnsatisfiable\": \"DoNotSchedule\"}, {\"maxSkew\": 1, \"topologyKey\": \"rack\", \"whenUnsatisfiable\": \"ScheduleAnyway\"}]}'\n    container: {image: busybox}\n";
    let mut p = one(argo);
    assert_eq!(p.runtime_class_name.as_deref(), Some("gvisor"));
    assert_eq!(p.topology_spread.len(), 2);
    p.admit();
    let v = super::evaluate(&p, &nodes);
    let fits: Vec<&str> = v
        .fits
        .iter()
        .map(|&i| nodes.nodes[i].name.as_str())
        .collect();
    assert_eq!(
        fits,
        ["a", "c"],
        "the ScheduleAnyway key (rack) is on no node, and refuses none"
    );
    p.topology_spread[0].topology_key = "rack".into();
    let v = super::evaluate(&p, &nodes);
    assert!(v.fits.is_empty());
    assert_eq!(
        v.message.as_deref(),
        Some(
            "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints (missing required label). no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        )
    );
}

#[test]
fn spread_constraints_the_api_server_refuses_are_errors() {
    let e = errors(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n  topologySpreadConstraints:\n  - {maxSkew: 0, topologyKey: '', whenUnsatisfiable: Always}\n",
    );
    assert_eq!(
        e,
        [
            "t.yaml:7:15: spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
            "t.yaml:7:31: spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty",
            "t.yaml:7:54: spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"Always\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
        ]
    );
}
