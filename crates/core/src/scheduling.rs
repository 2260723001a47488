//! A component's scheduling as kfsched reads and writes it: tolerations,
//! node selector, node and pod affinity, topology spread constraints, the
//! priority class, scheduler and runtime class names, pod metadata (SPEC
//! §2, §3).
//!
//! Every entry keeps the exact value it has in the file (`raw`), so entries
//! a merge leaves alone are written back unchanged, next to a comparable
//! form used for equality (tolerations compare `tolerationSeconds` as an
//! integer, node-selector terms compare as sets of requirements with sorted
//! values). New entries are built in the shape of the file's format.
//! Nothing here touches text or knows about policies.

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm, Toleration,
};

use std::sync::Arc;

use kfsched_yaml::Value;

/// The shapes entries take in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// core/v1 PodSpec fields (Argo templates and workloads).
    K8s,
    /// KFP v2 `KubernetesExecutorConfig`.
    KfpV2,
}

/// The comparable form of a toleration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TolKey {
    pub key: String,
    pub operator: String,
    pub value: String,
    pub effect: String,
    pub seconds: Option<i64>,
}

/// A toleration entry; `key` is `None` for entries that hold a run-time
/// value (`tolerationJson`) or that kfsched cannot read.
///
/// Both parts are shared: a rule's tolerations are built once per shape and
/// every component it selects points at them.
#[derive(Clone, Debug)]
pub struct Tol {
    pub key: Option<Arc<TolKey>>,
    pub raw: Arc<Value>,
}

/// A node-selector requirement in comparable form.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Req {
    pub field: bool,
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

/// A node-selector term: its requirements as a set, and its value.
#[derive(Clone, Debug)]
pub struct Term {
    pub reqs: Vec<Req>,
    pub raw: Value,
}

impl Term {
    pub(crate) fn contains_all(&self, other: &Term) -> bool {
        other.reqs.iter().all(|r| self.reqs.contains(r))
    }

    pub(crate) fn same_set(&self, other: &Term) -> bool {
        self.contains_all(other) && other.contains_all(self)
    }
}

/// A preferred node-affinity term.
#[derive(Clone, Debug)]
pub struct Pref {
    pub weight: i64,
    pub term: Term,
    pub raw: Value,
    /// When a rule added it (see [`Sched::step`]); `None` for existing entries.
    pub added: Option<u32>,
}

/// A pod (anti-)affinity term compared by its canonical JSON.
#[derive(Clone, Debug)]
pub struct Opaque {
    pub key: String,
    pub raw: Value,
}

/// A topology spread constraint: the pair a pod holds at most one
/// constraint for (`topologyKey`, `whenUnsatisfiable`), and its value.
#[derive(Clone, Debug)]
pub struct Spread {
    pub key: (String, String),
    pub raw: Value,
}

/// Reads a topology spread constraint.
pub(crate) fn spread_from_raw(raw: &Value) -> Spread {
    Spread {
        key: (
            text(raw.get("topologyKey")),
            text(raw.get("whenUnsatisfiable")),
        ),
        raw: raw.clone(),
    }
}

/// Everything about where a pod may run and what it carries.
#[derive(Clone, Debug, Default)]
pub struct Sched {
    pub tolerations: Vec<Tol>,
    pub node_selector: Vec<(String, Value)>,
    /// KFP v2 `nodeSelector.nodeSelectorJson` (a run-time value).
    pub node_selector_json: Option<Value>,
    /// Non-empty required node-selector terms (empty ones stay where they are in the file).
    pub required: Vec<Term>,
    pub preferred: Vec<Pref>,
    /// KFP v2 `nodeAffinity[].nodeAffinityJson` entries.
    pub affinity_json: Vec<Value>,
    pub pod_affinity_required: Vec<Opaque>,
    pub pod_affinity_preferred: Vec<Opaque>,
    pub pod_anti_affinity_required: Vec<Opaque>,
    pub pod_anti_affinity_preferred: Vec<Opaque>,
    pub labels: Vec<(String, Value)>,
    pub annotations: Vec<(String, Value)>,
    pub priority_class_name: Option<Value>,
    pub scheduler_name: Option<Value>,
    pub runtime_class_name: Option<Value>,
    pub topology_spread: Vec<Spread>,
    /// A pod spec's integer `priority` (read only: see `merge`).
    pub priority: Option<Value>,
    /// Counts additions, so formats that keep required and preferred terms
    /// in one list (KFP v2) can write new entries in the order rules made them.
    pub step: u32,
    /// When required terms were first added to a component that had none.
    pub required_at: Option<u32>,
}

impl Sched {
    /// Whether the component has no scheduling at all.
    pub(crate) fn is_empty(&self) -> bool {
        // Every field named, so a new one is not forgotten here.
        let Sched {
            tolerations,
            node_selector,
            node_selector_json,
            required,
            preferred,
            affinity_json,
            pod_affinity_required,
            pod_affinity_preferred,
            pod_anti_affinity_required,
            pod_anti_affinity_preferred,
            labels,
            annotations,
            priority_class_name,
            scheduler_name,
            runtime_class_name,
            topology_spread,
            priority,
            step,
            required_at,
        } = self;
        tolerations.is_empty()
            && node_selector.is_empty()
            && node_selector_json.is_none()
            && required.is_empty()
            && preferred.is_empty()
            && affinity_json.is_empty()
            && pod_affinity_required.is_empty()
            && pod_affinity_preferred.is_empty()
            && pod_anti_affinity_required.is_empty()
            && pod_anti_affinity_preferred.is_empty()
            && labels.is_empty()
            && annotations.is_empty()
            && priority_class_name.is_none()
            && scheduler_name.is_none()
            && runtime_class_name.is_none()
            && topology_spread.is_empty()
            && priority.is_none()
            && *step == 0
            && required_at.is_none()
    }

    /// The KFP v2 fields holding run-time values (pipeline parameters the
    /// driver resolves when the task runs), which offline checks cannot see.
    pub(crate) fn runtime_values(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self
            .tolerations
            .iter()
            .any(|t| get(&t.raw, "tolerationJson", "toleration_json").is_some())
        {
            out.push("tolerationJson");
        }
        if self.node_selector_json.is_some() {
            out.push("nodeSelectorJson");
        }
        if !self.affinity_json.is_empty() {
            out.push("nodeAffinityJson");
        }
        out
    }
}

/// Which fields of a component a set of rules changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changed {
    pub tolerations: bool,
    pub node_selector: bool,
    pub required: bool,
    pub preferred: bool,
    pub pod_affinity: bool,
    pub labels: bool,
    pub annotations: bool,
    pub priority_class_name: bool,
    pub scheduler_name: bool,
    pub runtime_class_name: bool,
    pub topology_spread: bool,
    /// `strategy: replace` replaced the whole affinity.
    pub replaced_affinity: bool,
}

impl Changed {
    pub fn any(&self) -> bool {
        self.tolerations
            || self.node_selector
            || self.required
            || self.preferred
            || self.pod_affinity
            || self.labels
            || self.annotations
            || self.priority_class_name
            || self.scheduler_name
            || self.runtime_class_name
            || self.topology_spread
    }

    pub fn affinity(&self) -> bool {
        self.required || self.preferred || self.pod_affinity
    }

    /// What either changed.
    pub fn or(self, o: Changed) -> Changed {
        Changed {
            tolerations: self.tolerations || o.tolerations,
            node_selector: self.node_selector || o.node_selector,
            required: self.required || o.required,
            preferred: self.preferred || o.preferred,
            pod_affinity: self.pod_affinity || o.pod_affinity,
            labels: self.labels || o.labels,
            annotations: self.annotations || o.annotations,
            priority_class_name: self.priority_class_name || o.priority_class_name,
            scheduler_name: self.scheduler_name || o.scheduler_name,
            runtime_class_name: self.runtime_class_name || o.runtime_class_name,
            topology_spread: self.topology_spread || o.topology_spread,
            replaced_affinity: self.replaced_affinity || o.replaced_affinity,
        }
    }
}

/// What a component is, for the errors some formats raise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Kubernetes,
    KfpV2Executor,
}

impl Sched {
    /// The scheduling as JSON, for `explain`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        if !self.tolerations.is_empty() {
            m.insert(
                "tolerations".into(),
                // In Kubernetes shape: KFP v2 writes tolerationSeconds as a string.
                serde_json::Value::Array(
                    self.tolerations
                        .iter()
                        .map(|t| {
                            let mut j = t.raw.to_json();
                            if let Some(secs) = j.get_mut("tolerationSeconds")
                                && let Some(n) = secs.as_str().and_then(|s| s.parse::<i64>().ok())
                            {
                                *secs = n.into();
                            }
                            j
                        })
                        .collect(),
                ),
            );
        }
        if !self.node_selector.is_empty() {
            m.insert(
                "nodeSelector".into(),
                serde_json::Value::Object(
                    self.node_selector
                        .iter()
                        .map(|(k, v)| (k.clone(), v.to_json()))
                        .collect(),
                ),
            );
        }
        if let Some(j) = &self.node_selector_json {
            m.insert("nodeSelectorJson".into(), j.to_json());
        }
        let mut na = serde_json::Map::new();
        if !self.required.is_empty() {
            na.insert(
                "requiredDuringSchedulingIgnoredDuringExecution".into(),
                serde_json::json!({"nodeSelectorTerms": self.required.iter().map(|t| t.raw.to_json()).collect::<Vec<_>>()}),
            );
        }
        if !self.preferred.is_empty() {
            na.insert(
                "preferredDuringSchedulingIgnoredDuringExecution".into(),
                // In Kubernetes shape (`preference` and an integer weight):
                // a KFP v2 entry is the term itself with a float weight.
                serde_json::Value::Array(
                    self.preferred
                        .iter()
                        .map(|p| {
                            if p.raw.get("preference").is_some() {
                                return p.raw.to_json();
                            }
                            let mut term = p.raw.clone();
                            term.remove("weight");
                            serde_json::json!({"preference": term.to_json(), "weight": p.weight})
                        })
                        .collect(),
                ),
            );
        }
        if !self.affinity_json.is_empty() {
            na.insert(
                "nodeAffinityJson".into(),
                serde_json::Value::Array(self.affinity_json.iter().map(Value::to_json).collect()),
            );
        }
        let mut aff = serde_json::Map::new();
        if !na.is_empty() {
            aff.insert("nodeAffinity".into(), serde_json::Value::Object(na));
        }
        for (name, req, pref) in [
            (
                "podAffinity",
                &self.pod_affinity_required,
                &self.pod_affinity_preferred,
            ),
            (
                "podAntiAffinity",
                &self.pod_anti_affinity_required,
                &self.pod_anti_affinity_preferred,
            ),
        ] {
            let mut pm = serde_json::Map::new();
            if !req.is_empty() {
                pm.insert(
                    "requiredDuringSchedulingIgnoredDuringExecution".into(),
                    serde_json::Value::Array(req.iter().map(|o| o.raw.to_json()).collect()),
                );
            }
            if !pref.is_empty() {
                pm.insert(
                    "preferredDuringSchedulingIgnoredDuringExecution".into(),
                    serde_json::Value::Array(pref.iter().map(|o| o.raw.to_json()).collect()),
                );
            }
            if !pm.is_empty() {
                aff.insert(name.into(), serde_json::Value::Object(pm));
            }
        }
        if !aff.is_empty() {
            m.insert("affinity".into(), serde_json::Value::Object(aff));
        }
        for (key, v) in [
            ("priorityClassName", &self.priority_class_name),
            ("schedulerName", &self.scheduler_name),
            ("runtimeClassName", &self.runtime_class_name),
        ] {
            if let Some(v) = v {
                m.insert(key.into(), v.to_json());
            }
        }
        if !self.topology_spread.is_empty() {
            m.insert(
                "topologySpreadConstraints".into(),
                serde_json::Value::Array(
                    self.topology_spread
                        .iter()
                        .map(|t| t.raw.to_json())
                        .collect(),
                ),
            );
        }
        if !self.labels.is_empty() {
            m.insert(
                "podLabels".into(),
                serde_json::Value::Object(
                    self.labels
                        .iter()
                        .map(|(k, v)| (k.clone(), v.to_json()))
                        .collect(),
                ),
            );
        }
        if !self.annotations.is_empty() {
            m.insert(
                "podAnnotations".into(),
                serde_json::Value::Object(
                    self.annotations
                        .iter()
                        .map(|(k, v)| (k.clone(), v.to_json()))
                        .collect(),
                ),
            );
        }
        serde_json::Value::Object(m)
    }
}

fn text(v: Option<&Value>) -> String {
    v.and_then(Value::scalar_text).unwrap_or_default()
}

fn get<'v>(v: &'v Value, camel: &str, snake: &str) -> Option<&'v Value> {
    v.get(camel)
        .or_else(|| v.get(snake))
        .filter(|x| !x.is_null())
}

/// Reads a toleration entry of a file.
pub(crate) fn tol_from_raw(raw: &Value) -> Tol {
    let key = match raw {
        Value::Map(_) if get(raw, "tolerationJson", "toleration_json").is_none() => {
            let seconds = match get(raw, "tolerationSeconds", "toleration_seconds") {
                Some(Value::Int(i)) => Some(*i),
                Some(Value::Str(s)) => s.trim().parse().ok(),
                Some(Value::Float(f)) => Some(*f as i64),
                _ => None,
            };
            let op = text(raw.get("operator"));
            Some(Arc::new(TolKey {
                key: text(raw.get("key")),
                operator: if op.is_empty() { "Equal".into() } else { op },
                value: text(raw.get("value")),
                effect: text(raw.get("effect")),
                seconds,
            }))
        }
        _ => None,
    };
    Tol {
        key,
        raw: Arc::new(raw.clone()),
    }
}

pub(crate) fn reqs_from(list: Option<&Value>, field: bool, out: &mut Vec<Req>) {
    for r in list.and_then(Value::as_seq).unwrap_or(&[]) {
        let mut values: Vec<String> = r
            .get("values")
            .and_then(Value::as_seq)
            .unwrap_or(&[])
            .iter()
            .filter_map(Value::scalar_text)
            .collect();
        values.sort();
        values.dedup();
        out.push(Req {
            field,
            key: text(r.get("key")),
            operator: text(r.get("operator")),
            values,
        });
    }
}

/// Reads a node-selector term (k8s `NodeSelectorTerm`, or a KFP v2 `NodeAffinityTerm`).
pub(crate) fn term_from_raw(raw: &Value) -> Term {
    let mut reqs = Vec::new();
    reqs_from(
        get(raw, "matchExpressions", "match_expressions"),
        false,
        &mut reqs,
    );
    reqs_from(get(raw, "matchFields", "match_fields"), true, &mut reqs);
    reqs.sort();
    reqs.dedup();
    Term {
        reqs,
        raw: raw.clone(),
    }
}

/// Reads a k8s preferred term (`{weight, preference}`).
pub(crate) fn pref_from_k8s(raw: &Value) -> Pref {
    let weight = match raw.get("weight") {
        Some(Value::Int(i)) => *i,
        Some(Value::Float(f)) => *f as i64,
        Some(Value::Str(s)) => s.parse().unwrap_or(0),
        _ => 0,
    };
    let term = raw.get("preference").map(term_from_raw).unwrap_or(Term {
        reqs: vec![],
        raw: Value::Map(vec![]),
    });
    Pref {
        weight,
        term,
        raw: raw.clone(),
        added: None,
    }
}

/// Reads a KFP v2 preferred term (a `NodeAffinityTerm` with `weight`).
pub(crate) fn pref_from_v2(raw: &Value) -> Pref {
    let weight = match raw.get("weight") {
        Some(Value::Int(i)) => *i,
        Some(Value::Float(f)) => *f as i64,
        Some(Value::Str(s)) => s.parse::<f64>().map(|f| f as i64).unwrap_or(0),
        _ => 0,
    };
    Pref {
        weight,
        term: term_from_raw(raw),
        raw: raw.clone(),
        added: None,
    }
}

/// A value with every map's keys sorted, as canonical JSON text.
pub(crate) fn canonical(v: &Value) -> String {
    fn sort(v: &Value) -> serde_json::Value {
        match v {
            Value::Map(m) => {
                let mut keys: Vec<&(String, Value)> = m.iter().collect();
                keys.sort_by(|a, b| a.0.cmp(&b.0));
                serde_json::Value::Object(
                    keys.into_iter()
                        .map(|(k, v)| (k.clone(), sort(v)))
                        .collect(),
                )
            }
            Value::Seq(s) => serde_json::Value::Array(s.iter().map(sort).collect()),
            other => other.to_json(),
        }
    }
    sort(v).to_string()
}

pub(crate) fn opaque(raw: &Value) -> Opaque {
    Opaque {
        key: canonical(raw),
        raw: raw.clone(),
    }
}

// ----- building new entries from the policy ---------------------------------------

/// A JSON value from the policy as a [`Value`], object keys sorted as kubectl writes them.
pub(crate) fn sorted_value(j: &serde_json::Value) -> Value {
    match j {
        serde_json::Value::Object(o) => {
            let mut entries: Vec<(String, Value)> = o
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), sorted_value(v)))
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Map(entries)
        }
        serde_json::Value::Array(a) => Value::Seq(a.iter().map(sorted_value).collect()),
        other => Value::from_json(other),
    }
}

pub(crate) fn ser<T: serde::Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or(serde_json::Value::Null)
}

/// A policy toleration in a file's shape.
pub(crate) fn tol_value(t: &Toleration, shape: Shape) -> Value {
    let mut m: Vec<(String, Value)> = Vec::new();
    if let Some(e) = t.effect.as_ref().filter(|e| !e.is_empty()) {
        m.push(("effect".into(), Value::str(e)));
    }
    if let Some(k) = t.key.as_ref().filter(|k| !k.is_empty()) {
        m.push(("key".into(), Value::str(k)));
    }
    if let Some(o) = t.operator.as_ref().filter(|o| !o.is_empty()) {
        m.push(("operator".into(), Value::str(o)));
    }
    if let Some(s) = t.toleration_seconds {
        m.push((
            "tolerationSeconds".into(),
            match shape {
                Shape::K8s => Value::Int(s),
                Shape::KfpV2 => Value::Str(s.to_string()),
            },
        ));
    }
    if let Some(v) = t.value.as_ref().filter(|v| !v.is_empty()) {
        m.push(("value".into(), Value::str(v)));
    }
    Value::Map(m)
}

fn req_value(r: &NodeSelectorRequirement) -> Value {
    let mut m = vec![
        ("key".to_string(), Value::str(&r.key)),
        ("operator".to_string(), Value::str(&r.operator)),
    ];
    if let Some(vs) = r.values.as_ref().filter(|v| !v.is_empty()) {
        m.push((
            "values".into(),
            Value::Seq(vs.iter().map(Value::str).collect()),
        ));
    }
    Value::Map(m)
}

fn req_of(r: &NodeSelectorRequirement, field: bool) -> Req {
    let mut values = r.values.clone().unwrap_or_default();
    values.sort();
    values.dedup();
    Req {
        field,
        key: r.key.clone(),
        operator: r.operator.clone(),
        values,
    }
}

/// A policy node-selector term as a [`Term`] in either shape (the two agree).
pub(crate) fn term_value(t: &NodeSelectorTerm) -> Term {
    let mut m = Vec::new();
    let mut reqs = Vec::new();
    if let Some(e) = t.match_expressions.as_ref().filter(|e| !e.is_empty()) {
        m.push((
            "matchExpressions".to_string(),
            Value::Seq(e.iter().map(req_value).collect()),
        ));
        reqs.extend(e.iter().map(|r| req_of(r, false)));
    }
    if let Some(f) = t.match_fields.as_ref().filter(|f| !f.is_empty()) {
        m.push((
            "matchFields".to_string(),
            Value::Seq(f.iter().map(req_value).collect()),
        ));
        reqs.extend(f.iter().map(|r| req_of(r, true)));
    }
    reqs.sort();
    reqs.dedup();
    Term {
        reqs,
        raw: Value::Map(m),
    }
}

/// A policy preferred term in a file's shape.
pub(crate) fn pref_value(p: &PreferredSchedulingTerm, shape: Shape) -> Pref {
    let term = term_value(&p.preference);
    let raw = match shape {
        Shape::K8s => Value::Map(vec![
            ("preference".into(), term.raw.clone()),
            ("weight".into(), Value::Int(p.weight.into())),
        ]),
        Shape::KfpV2 => {
            let mut r = term.raw.clone();
            r.set("weight", Value::Float(p.weight.into()));
            r
        }
    };
    Pref {
        weight: p.weight.into(),
        term,
        raw,
        added: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toleration_seconds_compare_as_integers() {
        let a = tol_from_raw(&Value::Map(vec![
            ("tolerationSeconds".into(), Value::str("3600")),
            ("key".into(), Value::str("k")),
        ]));
        let b = tol_from_raw(&Value::Map(vec![
            ("key".into(), Value::str("k")),
            ("operator".into(), Value::str("Equal")),
            ("tolerationSeconds".into(), Value::Int(3600)),
        ]));
        assert_eq!(a.key, b.key);
    }
}
