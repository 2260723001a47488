//! A component's scheduling and how rules merge into it (SPEC §3).
//!
//! Every entry keeps the exact value it has in the file (`raw`), so entries
//! the merge leaves alone are written back unchanged, next to a comparable
//! form used for equality (tolerations compare `tolerationSeconds` as an
//! integer, node-selector terms compare as sets of requirements with sorted
//! values). New entries are built in the shape of the file's format.
//! Nothing here touches text.

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm, PreferredSchedulingTerm,
    Toleration, WeightedPodAffinityTerm,
};

use std::sync::Arc;

use crate::policy::{Rule, Strategy};
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
    fn contains_all(&self, other: &Term) -> bool {
        other.reqs.iter().all(|r| self.reqs.contains(r))
    }

    fn same_set(&self, other: &Term) -> bool {
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
    /// Counts additions, so formats that keep required and preferred terms
    /// in one list (KFP v2) can write new entries in the order rules made them.
    pub step: u32,
    /// When required terms were first added to a component that had none.
    pub required_at: Option<u32>,
}

impl Sched {
    /// The KFP v2 fields holding run-time values (pipeline parameters the
    /// driver resolves when the task runs), which offline checks cannot see.
    pub fn runtime_values(&self) -> Vec<&'static str> {
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

impl Sched {
    /// After all rules: a field that ends up equal to what the component
    /// had (a `strategy: replace` that re-spelled an equal value, then a
    /// merge that added back what the file already held) is not changed,
    /// and keeps the file's spelling. Without this the second rewrite of a
    /// rewritten file would still change it.
    pub fn settle(&mut self, before: &Sched, c: &mut Changed) {
        if c.tolerations && same_tols(&before.tolerations, &self.tolerations) {
            self.tolerations = before.tolerations.clone();
            c.tolerations = false;
        }
        if c.node_selector
            && before.node_selector_json == self.node_selector_json
            && same_pairs(&before.node_selector, &self.node_selector)
        {
            self.node_selector = before.node_selector.clone();
            c.node_selector = false;
        }
        let same_pods = |a: &[Opaque], b: &[Opaque]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.key == y.key)
        };
        if c.affinity()
            && same_terms(&before.required, &self.required)
            && same_prefs(&before.preferred, &self.preferred)
            && before.affinity_json == self.affinity_json
            && same_pods(&before.pod_affinity_required, &self.pod_affinity_required)
            && same_pods(&before.pod_affinity_preferred, &self.pod_affinity_preferred)
            && same_pods(
                &before.pod_anti_affinity_required,
                &self.pod_anti_affinity_required,
            )
            && same_pods(
                &before.pod_anti_affinity_preferred,
                &self.pod_anti_affinity_preferred,
            )
        {
            self.required = before.required.clone();
            self.preferred = before.preferred.clone();
            self.pod_affinity_required = before.pod_affinity_required.clone();
            self.pod_affinity_preferred = before.pod_affinity_preferred.clone();
            self.pod_anti_affinity_required = before.pod_anti_affinity_required.clone();
            self.pod_anti_affinity_preferred = before.pod_anti_affinity_preferred.clone();
            self.required_at = before.required_at;
            c.required = false;
            c.preferred = false;
            c.pod_affinity = false;
            c.replaced_affinity = false;
        }
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
    }

    pub fn affinity(&self) -> bool {
        self.required || self.preferred || self.pod_affinity
    }
}

/// A message from merging a rule into a component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub error: bool,
    /// The rule field the note is about (`nodeSelector`, `affinity`, ...).
    pub field: &'static str,
    pub message: String,
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
pub fn tol_from_raw(raw: &Value) -> Tol {
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

impl Rule {
    /// The rule's tolerations as entries of `shape`, built once.
    fn tols(&self, shape: Shape) -> &[Tol] {
        let cell = &self.tol_cache[usize::from(shape == Shape::KfpV2)];
        cell.get_or_init(|| {
            self.tolerations
                .iter()
                .map(|t| tol_from_raw(&tol_value(t, shape)))
                .collect()
        })
    }
}

fn reqs_from(list: Option<&Value>, field: bool, out: &mut Vec<Req>) {
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
pub fn term_from_raw(raw: &Value) -> Term {
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
pub fn pref_from_k8s(raw: &Value) -> Pref {
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
pub fn pref_from_v2(raw: &Value) -> Pref {
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
pub fn canonical(v: &Value) -> String {
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

pub fn opaque(raw: &Value) -> Opaque {
    Opaque {
        key: canonical(raw),
        raw: raw.clone(),
    }
}

// ----- building new entries from the policy ---------------------------------------

/// A JSON value from the policy as a [`Value`], object keys sorted as kubectl writes them.
pub fn sorted_value(j: &serde_json::Value) -> Value {
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

fn ser<T: serde::Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or(serde_json::Value::Null)
}

/// A policy toleration in a file's shape.
pub fn tol_value(t: &Toleration, shape: Shape) -> Value {
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
pub fn term_value(t: &NodeSelectorTerm) -> Term {
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
pub fn pref_value(p: &PreferredSchedulingTerm, shape: Shape) -> Pref {
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

/// The requirement of term `p` ANDed into term `e`: `e`'s entries first, then
/// `p`'s missing ones, appended in `e`'s own spelling of the keys.
fn and_term(e: &Term, p: &Term) -> Term {
    let mut raw = e.raw.clone();
    for (field, camel, snake) in [
        (false, "matchExpressions", "match_expressions"),
        (true, "matchFields", "match_fields"),
    ] {
        let missing: Vec<Value> = p
            .raw
            .get(camel)
            .and_then(Value::as_seq)
            .unwrap_or(&[])
            .iter()
            .filter(|rv| {
                let mut one = Vec::new();
                reqs_from(Some(&Value::Seq(vec![(*rv).clone()])), field, &mut one);
                one.first().is_none_or(|r| !e.reqs.contains(r))
            })
            .cloned()
            .collect();
        if missing.is_empty() {
            continue;
        }
        let key = if raw.get(snake).is_some() && raw.get(camel).is_none() {
            snake
        } else {
            camel
        };
        match raw.get(key) {
            Some(Value::Seq(existing)) => {
                let mut list = existing.clone();
                list.extend(missing);
                raw.set(key, Value::Seq(list));
            }
            _ => {
                // Keep matchExpressions ahead of matchFields, as the API's field order.
                if let (Value::Map(m), false) = (&mut raw, field) {
                    let pos = m
                        .iter()
                        .position(|(k, _)| k == "matchFields" || k == "match_fields")
                        .unwrap_or(m.len());
                    m.retain(|(k, _)| k != key);
                    m.insert(pos.min(m.len()), (key.to_string(), Value::Seq(missing)));
                } else {
                    raw.set(key, Value::Seq(missing));
                }
            }
        }
    }
    let mut reqs = e.reqs.clone();
    reqs.extend(p.reqs.iter().cloned());
    reqs.sort();
    reqs.dedup();
    Term { reqs, raw }
}

/// ANDs a requirement (terms ORed) into existing terms (ORed): SPEC §3.
pub fn and_terms(existing: &[Term], policy: &[Term]) -> Vec<Term> {
    if existing.is_empty() {
        return absorb(policy.to_vec());
    }
    if existing
        .iter()
        .all(|e| policy.iter().any(|p| e.contains_all(p)))
    {
        return existing.to_vec();
    }
    let mut combos = Vec::new();
    for e in existing {
        for p in policy {
            combos.push(and_term(e, p));
        }
    }
    absorb(combos)
}

/// Drops duplicate terms and terms that contain every requirement of another (A ∨ (A∧B) = A).
fn absorb(terms: Vec<Term>) -> Vec<Term> {
    let mut unique: Vec<Term> = Vec::new();
    for t in terms {
        if !unique.iter().any(|u| u.same_set(&t)) {
            unique.push(t);
        }
    }
    let keep: Vec<bool> = unique
        .iter()
        .enumerate()
        .map(|(i, t)| {
            !unique
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && t.contains_all(o) && !o.same_set(t))
        })
        .collect();
    unique
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(t, _)| t)
        .collect()
}

fn pod_term_value(t: &PodAffinityTerm) -> Value {
    sorted_value(&ser(t))
}

fn weighted_pod_term_value(t: &WeightedPodAffinityTerm) -> Value {
    sorted_value(&ser(t))
}

fn set_entry(
    list: &mut Vec<(String, Value)>,
    key: &str,
    value: &str,
    field: &'static str,
    what: &str,
    notes: &mut Vec<Note>,
) -> bool {
    if let Some(slot) = list.iter_mut().find(|(k, _)| k == key) {
        let old = slot.1.scalar_text().unwrap_or_default();
        if old == value && matches!(slot.1, Value::Str(_)) {
            return false;
        }
        if old != value {
            notes.push(Note {
                error: false,
                field,
                message: format!("{what} {key}={old} replaced by {key}={value}"),
            });
        }
        slot.1 = Value::str(value);
        return true;
    }
    list.push((key.to_string(), Value::str(value)));
    true
}

/// What a component is, for the errors some formats raise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Kubernetes,
    KfpV2Executor,
}

impl Sched {
    /// Merges one rule (SPEC §3), returning what changed and any notes.
    pub fn apply(&mut self, rule: &Rule, shape: Shape, target: Target) -> (Changed, Vec<Note>) {
        let mut c = Changed::default();
        let mut notes = Vec::new();
        let replace = rule.strategy == Strategy::Replace;
        let v2 = target == Target::KfpV2Executor;

        if v2 && rule.has_pod_affinity() {
            notes.push(Note {
                error: true,
                field: "affinity",
                message: "asks for pod affinity or anti-affinity, which the KFP v2 backend does not apply to tasks; remove affinity.podAffinity/podAntiAffinity from this rule or exclude this task".into(),
            });
            return (c, notes);
        }

        // tolerations
        if replace && rule.names_tolerations {
            let mut new: Vec<Tol> = Vec::new();
            for tol in rule.tols(shape) {
                if !new.iter().any(|n| n.key == tol.key) {
                    new.push(tol.clone());
                }
            }
            if !same_tols(&self.tolerations, &new) {
                self.tolerations = new;
                c.tolerations = true;
            }
        } else {
            for tol in rule.tols(shape) {
                if !self
                    .tolerations
                    .iter()
                    .any(|e| e.key.is_some() && e.key == tol.key)
                {
                    self.tolerations.push(tol.clone());
                    c.tolerations = true;
                }
            }
        }

        // nodeSelector
        if replace && rule.names_node_selector {
            let new: Vec<(String, Value)> = rule
                .node_selector
                .iter()
                .map(|(k, v)| (k.clone(), Value::str(v)))
                .collect();
            if self.node_selector_json.is_some() || !same_pairs(&self.node_selector, &new) {
                self.node_selector = new;
                self.node_selector_json = None;
                c.node_selector = true;
            }
        } else if !rule.node_selector.is_empty() {
            if v2 && self.node_selector_json.is_some() {
                notes.push(Note {
                    error: true,
                    field: "nodeSelector",
                    message: "merges a nodeSelector into an executor that has nodeSelectorJson, which the KFP driver prefers over labels (the labels would be ignored); use strategy: replace to replace it".into(),
                });
            } else {
                for (k, v) in &rule.node_selector {
                    c.node_selector |= set_entry(
                        &mut self.node_selector,
                        k,
                        v,
                        "nodeSelector",
                        "nodeSelector",
                        &mut notes,
                    );
                }
            }
        }

        // affinity
        if replace && rule.names_affinity {
            let mut required: Vec<Term> = Vec::new();
            for step in &rule.required {
                let terms: Vec<Term> = step.iter().map(term_value).collect();
                required = and_terms(&required, &terms);
            }
            self.step += 1;
            self.required_at = (!required.is_empty()).then_some(self.step);
            let preferred: Vec<Pref> = rule
                .preferred
                .iter()
                .map(|p| {
                    self.step += 1;
                    Pref {
                        added: Some(self.step),
                        ..pref_value(p, shape)
                    }
                })
                .collect();
            if !same_terms(&self.required, &required) || !self.affinity_json.is_empty() {
                c.required = true;
            }
            if !same_prefs(&self.preferred, &preferred) || !self.affinity_json.is_empty() {
                c.preferred = true;
            }
            self.required = required;
            self.preferred = preferred;
            self.affinity_json.clear();
            let lists = self.pod_lists(rule);
            for (list, new) in lists {
                let new: Vec<Opaque> = new.iter().map(opaque).collect();
                if list.len() != new.len() || list.iter().zip(&new).any(|(a, b)| a.key != b.key) {
                    *list = new;
                    c.pod_affinity = true;
                }
            }
            if c.affinity() {
                c.replaced_affinity = true;
            }
        } else {
            if rule.has_required() {
                if v2 && !self.affinity_json.is_empty() {
                    notes.push(Note {
                        error: true,
                        field: "affinity",
                        message: "merges a required node affinity into an executor that has nodeAffinityJson, whose required terms the KFP driver ORs with these (the requirement would not hold); use strategy: replace to replace it".into(),
                    });
                } else {
                    for step in &rule.required {
                        let terms: Vec<Term> = step.iter().map(term_value).collect();
                        let next = and_terms(&self.required, &terms);
                        if !same_terms(&self.required, &next) {
                            c.required = true;
                        }
                        if self.required.is_empty()
                            && !next.is_empty()
                            && self.required_at.is_none()
                        {
                            self.step += 1;
                            self.required_at = Some(self.step);
                        }
                        self.required = next;
                    }
                }
            }
            for p in &rule.preferred {
                let pv = pref_value(p, shape);
                if !self
                    .preferred
                    .iter()
                    .any(|e| e.weight == pv.weight && e.term.same_set(&pv.term))
                {
                    self.step += 1;
                    self.preferred.push(Pref {
                        added: Some(self.step),
                        ..pv
                    });
                    c.preferred = true;
                }
            }
            let lists = self.pod_lists(rule);
            for (list, new) in lists {
                for n in new {
                    let o = opaque(&n);
                    if !list.iter().any(|e| e.key == o.key) {
                        list.push(o);
                        c.pod_affinity = true;
                    }
                }
            }
        }

        for (k, v) in &rule.pod_labels {
            c.labels |= set_entry(&mut self.labels, k, v, "podLabels", "pod label", &mut notes);
        }
        for (k, v) in &rule.pod_annotations {
            c.annotations |= set_entry(
                &mut self.annotations,
                k,
                v,
                "podAnnotations",
                "pod annotation",
                &mut notes,
            );
        }
        (c, notes)
    }

    /// The four pod (anti-)affinity lists next to what the rule brings for each.
    fn pod_lists(&mut self, rule: &Rule) -> [(&mut Vec<Opaque>, Vec<Value>); 4] {
        [
            (
                &mut self.pod_affinity_required,
                rule.pod_affinity_required
                    .iter()
                    .map(pod_term_value)
                    .collect(),
            ),
            (
                &mut self.pod_affinity_preferred,
                rule.pod_affinity_preferred
                    .iter()
                    .map(weighted_pod_term_value)
                    .collect(),
            ),
            (
                &mut self.pod_anti_affinity_required,
                rule.pod_anti_affinity_required
                    .iter()
                    .map(pod_term_value)
                    .collect(),
            ),
            (
                &mut self.pod_anti_affinity_preferred,
                rule.pod_anti_affinity_preferred
                    .iter()
                    .map(weighted_pod_term_value)
                    .collect(),
            ),
        ]
    }

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

fn same_tols(a: &[Tol], b: &[Tol]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.key.is_some() && x.key == y.key)
}

fn same_pairs(a: &[(String, Value)], b: &[(String, Value)]) -> bool {
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.iter()
                .any(|(k2, v2)| k == k2 && v.scalar_text() == v2.scalar_text())
        })
}

fn same_terms(a: &[Term], b: &[Term]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_set(y))
}

fn same_prefs(a: &[Pref], b: &[Pref]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.weight == y.weight && x.term.same_set(&y.term))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|s| s.to_string()).collect()),
        }
    }

    fn term(reqs: Vec<NodeSelectorRequirement>) -> Term {
        term_value(&NodeSelectorTerm {
            match_expressions: Some(reqs),
            match_fields: None,
        })
    }

    #[test]
    fn and_of_terms_is_m_by_k_with_absorption() {
        let e1 = term(vec![req("a", "In", &["1"])]);
        let e2 = term(vec![req("b", "In", &["2"])]);
        let p1 = term(vec![req("c", "Exists", &[])]);
        let p2 = term(vec![req("d", "Exists", &[])]);
        let out = and_terms(&[e1.clone(), e2.clone()], &[p1.clone(), p2.clone()]);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].reqs.len(), 2);
        // E-major order: (a∧c), (a∧d), (b∧c), (b∧d)
        assert_eq!(
            out[1]
                .reqs
                .iter()
                .map(|r| r.key.as_str())
                .collect::<Vec<_>>(),
            vec!["a", "d"]
        );
        // idempotent
        let again = and_terms(&out, &[p1.clone(), p2.clone()]);
        assert_eq!(again.len(), 4);
        assert!(again.iter().zip(&out).all(|(a, b)| a.same_set(b)));
        // absorption: E1 = a, E2 = a∧b; ANDing c gives (a∧c), (a∧b∧c) → (a∧c) only
        let e3 = term(vec![req("a", "In", &["1"]), req("b", "In", &["2"])]);
        let out = and_terms(&[e1, e3], &[p1]);
        assert_eq!(out.len(), 1);
        // values compare as sorted sets
        let x = term(vec![req("z", "In", &["2", "1"])]);
        let y = term(vec![req("z", "In", &["1", "2"])]);
        assert!(x.same_set(&y));
    }

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
