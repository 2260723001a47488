//! The scheduling-relevant part of the pod a component becomes: its
//! containers' resources, tolerations, node selector, node affinity and
//! node name, as the creator (KFP driver, Argo, a workload controller)
//! builds it and the API server admits it.
//!
//! [`Pod::admit`] applies what the API server adds on create: requests
//! default from limits (`SetDefaults_Pod`), pod-level requests
//! (`defaultPodRequests`), and the `DefaultTolerationSeconds` tolerations.
//! [`Pod::requests`] is the scheduler's `computePodResourceRequest`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    NodeSelectorTerm, PreferredSchedulingTerm, Toleration, TopologySpreadConstraint,
};
use serde_json::{Value as Json, json};

use super::quantity::Quantity;

/// Resource name → quantity, as written.
pub type ResourceList = BTreeMap<String, Quantity>;

/// One container's resources.
#[derive(Clone, Debug, Default)]
pub struct Container {
    pub name: String,
    pub requests: ResourceList,
    pub limits: ResourceList,
    /// An init container with `restartPolicy: Always` (a native sidecar):
    /// it keeps running beside the containers that start after it.
    pub sidecar: bool,
}

impl Container {
    pub fn named(name: &str) -> Container {
        Container {
            name: name.to_string(),
            ..Container::default()
        }
    }
}

/// The pod, as far as the scheduler's filters look at it.
#[derive(Clone, Debug, Default)]
pub struct Pod {
    pub containers: Vec<Container>,
    pub init_containers: Vec<Container>,
    /// Pod-level `spec.resources`.
    pub pod_requests: ResourceList,
    pub pod_limits: ResourceList,
    /// `spec.overhead` (set by the RuntimeClass admission plugin).
    pub overhead: ResourceList,
    pub tolerations: Vec<Toleration>,
    /// `spec.nodeSelector`; `None` when unset (the NodeAffinity filter is
    /// then skipped unless there is a required node affinity).
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Required node-selector terms; `None` when there is no required node
    /// affinity. Empty terms are kept: they match no node.
    pub required: Option<Vec<NodeSelectorTerm>>,
    pub preferred: Vec<PreferredSchedulingTerm>,
    pub node_name: Option<String>,
    pub scheduler_name: Option<String>,
    /// `spec.priority` when the file sets it (the Priority admission plugin
    /// resolves `priorityClassName`, which is not known offline).
    pub priority: Option<i32>,
    pub priority_class_name: Option<String>,
    /// `preemptionPolicy: Never`.
    pub never_preempts: bool,
    pub runtime_class_name: Option<String>,
    pub topology_spread: Vec<TopologySpreadConstraint>,
    /// Why the API server refuses the pod, when it does (a PriorityClass
    /// that does not exist).
    pub refused: Option<String>,
    /// The tolerations the creator or the API server added (not written in
    /// the file): never reported as tolerating nothing.
    pub added_tolerations: usize,
    /// What the pod carries that kfsched does not judge (run-time values,
    /// pod affinity, volumes), as sentences for the report.
    pub unjudged: Vec<String>,
}

/// What a pod asks of a node: the scheduler's `preFilterState`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Requests {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    /// Extended resources, hugepages, `*kubernetes.io/*` and
    /// `attachable-volumes-*` resources, in units (`Value()`).
    pub scalar: BTreeMap<String, i64>,
}

impl Requests {
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.values().all(|v| *v == 0)
    }

    /// Adds a resource list the way `framework.Resource.Add` does.
    pub fn add(&mut self, list: &ResourceList) {
        for (name, q) in list {
            self.add_one(name, q);
        }
    }

    fn add_one(&mut self, name: &str, q: &Quantity) {
        match name {
            "cpu" => self.milli_cpu = self.milli_cpu.saturating_add(q.milli()),
            "memory" => self.memory = self.memory.saturating_add(q.value()),
            "ephemeral-storage" => {
                self.ephemeral_storage = self.ephemeral_storage.saturating_add(q.value())
            }
            n if is_scalar_resource(n) => {
                let v = self.scalar.entry(n.to_string()).or_insert(0);
                *v = v.saturating_add(q.value());
            }
            _ => {}
        }
    }
}

/// `IsScalarResourceName`: extended, hugepages, prefixed native and
/// attachable-volume resources; the scheduler ignores any other name.
pub fn is_scalar_resource(name: &str) -> bool {
    is_extended_resource(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// `IsExtendedResourceName`: outside the `kubernetes.io` namespace, fully
/// qualified, not `requests.*`.
pub fn is_extended_resource(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native
        && !name.starts_with("requests.")
        && crate::k8s::qualified_name(&format!("requests.{name}")).is_empty()
}

/// A per-resource maximum: `reqs = max(reqs, other)`.
fn max_into(into: &mut BTreeMap<String, Quantity>, other: &BTreeMap<String, Quantity>) {
    for (k, v) in other {
        match into.get(k) {
            Some(cur) if amount(k, cur) >= amount(k, v) => {}
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

/// How the scheduler compares a resource: millis for cpu, units otherwise.
fn amount(name: &str, q: &Quantity) -> i64 {
    if name == "cpu" { q.milli() } else { q.value() }
}

/// Sum of two resource lists as amounts (name → milli or units).
fn add_amounts(into: &mut BTreeMap<String, i64>, list: &ResourceList) {
    for (k, v) in list {
        let e = into.entry(k.clone()).or_insert(0);
        *e = e.saturating_add(amount(k, v));
    }
}

/// `IsSupportedPodLevelResource`.
fn pod_level_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory") || name.starts_with("hugepages-")
}

/// The tolerations `DefaultTolerationSeconds` adds: (key, seconds).
const DEFAULT_TOLERATIONS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];
const DEFAULT_TOLERATION_SECONDS: i64 = 300;

impl Pod {
    /// What the API server does to the pod on create, for the fields the
    /// scheduler reads.
    pub fn admit(&mut self) {
        for c in self.containers.iter_mut().chain(&mut self.init_containers) {
            for (k, v) in &c.limits {
                c.requests.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        self.default_pod_requests();
        // DefaultTolerationSeconds: unless a toleration with that key (or
        // no key) and effect NoExecute (or none) is there already.
        for key in DEFAULT_TOLERATIONS {
            let tolerated = self.tolerations.iter().any(|t| {
                let k = t.key.as_deref().unwrap_or("");
                let e = t.effect.as_deref().unwrap_or("");
                (k.is_empty() || k == key) && (e.is_empty() || e == "NoExecute")
            });
            if !tolerated {
                self.tolerations.push(Toleration {
                    key: Some(key.to_string()),
                    operator: Some("Exists".into()),
                    effect: Some("NoExecute".into()),
                    toleration_seconds: Some(DEFAULT_TOLERATION_SECONDS),
                    value: None,
                });
                self.added_tolerations += 1;
            }
        }
    }

    /// `defaultPodRequests`: only when pod-level limits are set.
    fn default_pod_requests(&mut self) {
        if self.pod_limits.is_empty() {
            return;
        }
        let aggregate = self.aggregate_container_requests();
        for (k, v) in aggregate {
            // Overcommittable (native, not hugepages) and pod-level.
            if pod_level_resource(&k) && !k.starts_with("hugepages-") {
                self.pod_requests.entry(k).or_insert(v);
            }
        }
        for (k, v) in &self.pod_limits {
            if pod_level_resource(k) {
                self.pod_requests
                    .entry(k.clone())
                    .or_insert_with(|| v.clone());
            }
        }
    }

    /// `AggregateContainerRequests`, as quantities: the sum of the
    /// containers, against the largest need while each init container runs
    /// (with the sidecars started before it).
    fn aggregate_container_requests(&self) -> ResourceList {
        let mut sum: BTreeMap<String, i64> = BTreeMap::new();
        for c in &self.containers {
            add_amounts(&mut sum, &c.requests);
        }
        let mut sidecars: BTreeMap<String, i64> = BTreeMap::new();
        let mut init_max: BTreeMap<String, i64> = BTreeMap::new();
        for ic in &self.init_containers {
            let use_now = if ic.sidecar {
                add_amounts(&mut sum, &ic.requests);
                add_amounts(&mut sidecars, &ic.requests);
                sidecars.clone()
            } else {
                let mut u = sidecars.clone();
                add_amounts(&mut u, &ic.requests);
                u
            };
            for (k, v) in use_now {
                let e = init_max.entry(k).or_insert(0);
                *e = (*e).max(v);
            }
        }
        for (k, v) in init_max {
            let e = sum.entry(k).or_insert(0);
            *e = (*e).max(v);
        }
        sum.into_iter()
            .map(|(k, v)| {
                let text = if k == "cpu" {
                    format!("{v}m")
                } else {
                    v.to_string()
                };
                let q = Quantity::parse(&text).unwrap_or_else(|_| zero());
                (k, q)
            })
            .collect()
    }

    /// What the scheduler's NodeResourcesFit counts (`computePodResourceRequest`).
    pub fn requests(&self) -> Requests {
        let mut reqs = self.aggregate_container_requests();
        for (k, v) in &self.pod_requests {
            if pod_level_resource(k) {
                reqs.insert(k.clone(), v.clone());
            }
        }
        let mut r = Requests::default();
        r.add(&reqs);
        r.add(&self.overhead);
        r
    }

    /// The pod's spec as JSON: what `-o json` shows and what a test
    /// creates. Containers carry only their name and resources.
    pub fn spec_json(&self) -> Json {
        let mut spec = serde_json::Map::new();
        let containers = |cs: &[Container]| -> Json {
            cs.iter()
                .map(|c| {
                    let mut m = serde_json::Map::new();
                    m.insert("name".into(), json!(c.name));
                    let mut res = serde_json::Map::new();
                    if !c.limits.is_empty() {
                        res.insert("limits".into(), list_json(&c.limits));
                    }
                    if !c.requests.is_empty() {
                        res.insert("requests".into(), list_json(&c.requests));
                    }
                    if !res.is_empty() {
                        m.insert("resources".into(), Json::Object(res));
                    }
                    if c.sidecar {
                        m.insert("restartPolicy".into(), json!("Always"));
                    }
                    Json::Object(m)
                })
                .collect()
        };
        if !self.init_containers.is_empty() {
            spec.insert("initContainers".into(), containers(&self.init_containers));
        }
        spec.insert("containers".into(), containers(&self.containers));
        let mut res = serde_json::Map::new();
        if !self.pod_limits.is_empty() {
            res.insert("limits".into(), list_json(&self.pod_limits));
        }
        if !self.pod_requests.is_empty() {
            res.insert("requests".into(), list_json(&self.pod_requests));
        }
        if !res.is_empty() {
            spec.insert("resources".into(), Json::Object(res));
        }
        if !self.overhead.is_empty() {
            spec.insert("overhead".into(), list_json(&self.overhead));
        }
        if let Some(ns) = &self.node_selector {
            spec.insert("nodeSelector".into(), json!(ns));
        }
        if !self.tolerations.is_empty() {
            spec.insert("tolerations".into(), json!(self.tolerations));
        }
        let mut na = serde_json::Map::new();
        if let Some(terms) = &self.required {
            na.insert(
                "requiredDuringSchedulingIgnoredDuringExecution".into(),
                json!({"nodeSelectorTerms": terms}),
            );
        }
        if !self.preferred.is_empty() {
            na.insert(
                "preferredDuringSchedulingIgnoredDuringExecution".into(),
                json!(self.preferred),
            );
        }
        if !na.is_empty() {
            spec.insert("affinity".into(), json!({"nodeAffinity": na}));
        }
        if let Some(n) = &self.node_name {
            spec.insert("nodeName".into(), json!(n));
        }
        if let Some(s) = &self.scheduler_name {
            spec.insert("schedulerName".into(), json!(s));
        }
        if let Some(p) = &self.priority_class_name {
            spec.insert("priorityClassName".into(), json!(p));
        }
        if let Some(p) = self.priority {
            spec.insert("priority".into(), json!(p));
        }
        if self.never_preempts {
            spec.insert("preemptionPolicy".into(), json!("Never"));
        }
        if let Some(r) = &self.runtime_class_name {
            spec.insert("runtimeClassName".into(), json!(r));
        }
        if !self.topology_spread.is_empty() {
            spec.insert(
                "topologySpreadConstraints".into(),
                json!(self.topology_spread),
            );
        }
        Json::Object(spec)
    }

    /// Another scheduler's pod: kube-scheduler schedules only the pods that
    /// name one of its profiles (`default-scheduler` unless configured).
    pub fn other_scheduler(&self) -> Option<&str> {
        self.scheduler_name
            .as_deref()
            .filter(|s| *s != crate::merge::DEFAULT_SCHEDULER)
    }

    /// The tolerations written in the file or the policy (not the ones the
    /// creator or the API server added).
    pub fn own_tolerations(&self) -> &[Toleration] {
        let n = self
            .tolerations
            .len()
            .saturating_sub(self.added_tolerations);
        &self.tolerations[..n]
    }
}

fn zero() -> Quantity {
    Quantity::parse("0").unwrap_or_else(|_| unreachable!("0 parses"))
}

fn list_json(l: &ResourceList) -> Json {
    Json::Object(
        l.iter()
            .map(|(k, v)| (k.clone(), Json::String(v.text.clone())))
            .collect(),
    )
}

/// A per-resource maximum of two lists (what `max(launcher, main)` needs).
pub fn max_list(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    max_into(&mut out, b);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(&str, &str)]) -> ResourceList {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(v).expect("quantity")))
            .collect()
    }

    fn container(
        name: &str,
        req: &[(&str, &str)],
        lim: &[(&str, &str)],
        sidecar: bool,
    ) -> Container {
        Container {
            name: name.into(),
            requests: list(req),
            limits: list(lim),
            sidecar,
        }
    }

    #[test]
    fn requests_default_from_limits_and_init_containers_take_the_max() {
        // The KFP v2 executor pod: the launcher init container against main.
        let mut pod = Pod {
            init_containers: vec![
                container("init", &[], &[], false),
                container(
                    "kfp-launcher",
                    &[("cpu", "100m")],
                    &[("cpu", "500m"), ("memory", "256Mi")],
                    false,
                ),
            ],
            containers: vec![
                container("wait", &[], &[], false),
                container(
                    "main",
                    &[],
                    &[("nvidia.com/gpu", "1"), ("memory", "64Mi")],
                    false,
                ),
            ],
            ..Pod::default()
        };
        pod.admit();
        let r = pod.requests();
        assert_eq!(r.milli_cpu, 100);
        assert_eq!(r.memory, 256 << 20);
        assert_eq!(r.scalar.get("nvidia.com/gpu"), Some(&1));
    }

    #[test]
    fn sidecars_add_to_the_containers_and_to_later_init_containers() {
        // KEP-753: sidecar 1 cpu, then an init container of 2 cpu runs
        // beside it (3), then main 1 cpu runs beside the sidecar (2).
        let pod = Pod {
            init_containers: vec![
                container("proxy", &[("cpu", "1")], &[], true),
                container("setup", &[("cpu", "2")], &[], false),
            ],
            containers: vec![container("main", &[("cpu", "1")], &[], false)],
            ..Pod::default()
        };
        assert_eq!(pod.requests().milli_cpu, 3000);
    }

    #[test]
    fn pod_level_requests_replace_the_aggregate_and_overhead_adds() {
        let mut pod = Pod {
            containers: vec![container(
                "main",
                &[("cpu", "1"), ("memory", "1Gi")],
                &[],
                false,
            )],
            pod_limits: list(&[("cpu", "4")]),
            overhead: list(&[("cpu", "250m")]),
            ..Pod::default()
        };
        pod.admit();
        // Pod-level cpu request defaults to the containers' 1 cpu, not the limit.
        assert_eq!(pod.requests().milli_cpu, 1250);
        assert_eq!(pod.requests().memory, 1 << 30);
    }

    #[test]
    fn default_toleration_seconds_unless_already_tolerated() {
        let mut pod = Pod::default();
        pod.admit();
        assert_eq!(pod.tolerations.len(), 2);
        assert!(pod.own_tolerations().is_empty());
        let mut pod = Pod {
            tolerations: vec![Toleration {
                operator: Some("Exists".into()),
                ..Toleration::default()
            }],
            ..Pod::default()
        };
        pod.admit();
        assert_eq!(pod.tolerations.len(), 1);
    }

    #[test]
    fn scalar_resources_are_the_schedulers() {
        for n in [
            "nvidia.com/gpu",
            "hugepages-2Mi",
            "example.com/foo",
            "kubernetes.io/batteries",
            "attachable-volumes-aws-ebs",
        ] {
            assert!(is_scalar_resource(n), "{n}");
        }
        for n in ["pods", "storage", "foo", "requests.example.com/x"] {
            assert!(!is_scalar_resource(n), "{n}");
        }
    }
}
