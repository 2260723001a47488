//! The pod a workload's controller creates: its pod template's spec as
//! written (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job,
//! CronJob). A DaemonSet's controller adds its own tolerations
//! (`AddOrUpdateDaemonPodTolerations`).

use k8s_openapi::api::core::v1::Toleration;

use super::pod::{Container, Pod};
use super::read::{At, Reader, Shape};
use kfsched_yaml::tree::Kind;

/// Reads a container's name and resources.
pub(super) fn container<'v>(r: &mut Reader, at: At<'v>, init: bool) -> Option<Container> {
    if r.kind(at) != Kind::Map {
        r.error(at, None, "a container must be a map");
        return None;
    }
    let name = r.string_field(at, "name", Shape::K8s).unwrap_or_default();
    let (requests, limits) = match r.get(at, "resources") {
        Some(res) => r.resources(res, true),
        None => Default::default(),
    };
    let sidecar = init
        && r.string_field(at, "restartPolicy", Shape::K8s)
            .is_some_and(|p| p == "Always");
    Some(Container {
        name,
        requests,
        limits,
        sidecar,
    })
}

/// Reads the containers of a list field (`containers`, `initContainers`).
pub(super) fn containers<'v>(r: &mut Reader, map: At<'v>, key: &str, init: bool) -> Vec<Container> {
    let Some(list) = r.get(map, key) else {
        return Vec::new();
    };
    r.items(list, key)
        .into_iter()
        .filter_map(|c| container(r, c, init))
        .collect()
}

/// Reads a pod spec's scheduling fields into `pod` (a field the spec does
/// not set leaves `pod` as it is).
pub(super) fn pod_spec<'v>(r: &mut Reader, spec: At<'v>, pod: &mut Pod) {
    if r.get(spec, "containers").is_some() {
        pod.containers = containers(r, spec, "containers", false);
    }
    if r.get(spec, "initContainers").is_some() {
        pod.init_containers = containers(r, spec, "initContainers", true);
    }
    if let Some(res) = r.get(spec, "resources") {
        let (req, lim) = r.resources(res, false);
        pod.pod_requests = req;
        pod.pod_limits = lim;
    }
    if let Some(o) = r.get(spec, "overhead") {
        for (name, v) in r.entries(o, "overhead") {
            if let Some(q) = r.quantity(v, &format!("overhead.{name}")) {
                pod.overhead.insert(name, q);
            }
        }
    }
    if let Some(t) = r.get(spec, "tolerations") {
        pod.tolerations = r.tolerations(t, Shape::K8s);
    }
    if let Some(ns) = r.get(spec, "nodeSelector") {
        pod.node_selector = Some(r.node_selector(ns));
    }
    if let Some(a) = r.get(spec, "affinity") {
        let (required, preferred) = r.affinity(a, &mut pod.unjudged);
        pod.required = required;
        pod.preferred = preferred;
    }
    for (key, slot) in [
        ("nodeName", &mut pod.node_name),
        ("schedulerName", &mut pod.scheduler_name),
        ("priorityClassName", &mut pod.priority_class_name),
        ("runtimeClassName", &mut pod.runtime_class_name),
    ] {
        if let Some(v) = r.string_field(spec, key, Shape::K8s) {
            *slot = Some(v);
        }
    }
    if let Some(t) = r.get(spec, "topologySpreadConstraints") {
        pod.topology_spread = r.spread(t);
    }
    if let Some(p) = r.int_field(spec, "priority", Shape::K8s) {
        pod.priority = i32::try_from(p).ok();
    }
    if let Some(p) = r.field(spec, "preemptionPolicy", Shape::K8s) {
        let policy = r.string(p, "preemptionPolicy").unwrap_or_default();
        // The Priority admission plugin takes it from the PriorityClass and
        // refuses a pod that says otherwise; without a class it is
        // PreemptLowerPriority.
        if policy == "Never" && pod.priority_class_name.is_none() {
            r.error(p, None, "the API server refuses preemptionPolicy Never without a priorityClassName whose PriorityClass says Never (the Priority admission plugin takes it from the class)");
        }
        pod.never_preempts = policy == "Never";
    }
    note_unjudged(r, spec, pod);
}

/// What a pod spec carries that the filters kfsched runs do not cover.
fn note_unjudged<'v>(r: &mut Reader, spec: At<'v>, pod: &mut Pod) {
    let mut notes = Vec::new();
    if let Some(vols) = r.get(spec, "volumes") {
        if r.kind(vols) == Kind::Seq
            && r.items(vols, "volumes").into_iter().any(|v| {
                r.get(v, "persistentVolumeClaim").is_some() || r.get(v, "ephemeral").is_some()
            })
        {
            notes.push("persistent volumes: where a claim's volume can be used (VolumeBinding, VolumeZone) is not judged");
        }
    }
    if r.get(spec, "resourceClaims").is_some() {
        notes.push("resourceClaims (dynamic resource allocation) are not judged");
    }
    for n in notes {
        if !pod.unjudged.iter().any(|u| u == n) {
            pod.unjudged.push(n.to_string());
        }
    }
}

/// The pod of a workload's pod template spec.
pub(super) fn pod(r: &mut Reader, spec: At, kind: &str) -> Pod {
    let mut pod = Pod::default();
    pod_spec(r, spec, &mut pod);
    if kind == "DaemonSet" {
        let host_network = r.get(spec, "hostNetwork").and_then(|h| r.scalar(h))
            == Some(kfsched_yaml::Value::Bool(true));
        daemon_tolerations(&mut pod, host_network);
        pod.unjudged.push(
            "a DaemonSet runs one pod on each node it fits: the nodes listed are where its pods run"
                .into(),
        );
    }
    pod
}

/// `AddOrUpdateDaemonPodTolerations`.
fn daemon_tolerations(pod: &mut Pod, host_network: bool) {
    let mut add = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if host_network {
        add.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    for (key, effect) in add {
        let t = Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some(effect.into()),
            ..Toleration::default()
        };
        let same = |x: &Toleration| {
            x.key == t.key
                && x.operator.as_deref().unwrap_or("Equal") == "Exists"
                && x.value.as_deref().unwrap_or("").is_empty()
                && x.effect == t.effect
        };
        if let Some(existing) = pod.tolerations.iter_mut().find(|x| same(x)) {
            existing.toleration_seconds = None;
        } else {
            pod.tolerations.push(t);
            pod.added_tolerations += 1;
        }
    }
}
