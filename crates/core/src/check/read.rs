//! Reading the scheduling fields of a file into the pod model, strictly as
//! the API server decodes and validates them: a field of the wrong type,
//! an unknown operator or a quantity that does not parse would make the pod
//! fail to be created, so it is an error at its `FILE:LINE:COL: PATH`.
//!
//! Values come from the parsed file ([`At::Node`]) or from JSON held in a
//! string of it (an Argo `podSpecPatch`, a KFP `*Json` constant), whose
//! problems point at that string ([`At::Value`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm, Toleration,
    TopologySpreadConstraint,
};

use super::pod::{ResourceList, is_extended_resource};
use super::quantity::Quantity;
use crate::diag::Diagnostic;
use crate::k8s;
use kfsched_yaml::Value;
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::node_value;

/// A place in the input: a node of the parsed file, or a value parsed out of
/// a string scalar (`anchor`) of it.
#[derive(Clone, Copy, Debug)]
pub(super) enum At<'v> {
    Node(NodeId),
    Value(&'v Value, NodeId),
}

/// Which spelling of field names a format uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// core/v1 JSON (Argo templates, workloads, patches).
    K8s,
    /// KFP's protobuf JSON: camelCase or snake_case, int64 as strings.
    Proto,
}

/// Reads and validates, collecting every problem.
pub(super) struct Reader<'t, 'a> {
    pub tree: &'t Tree<'a>,
    pub file: &'t str,
    pub errors: Vec<Diagnostic>,
}

impl<'t, 'a> Reader<'t, 'a> {
    pub fn new(tree: &'t Tree<'a>, file: &'t str) -> Self {
        Reader {
            tree,
            file,
            errors: Vec::new(),
        }
    }

    /// An error at `at`, or at its field `child` when it has one.
    pub fn error<'v>(&mut self, at: At<'v>, child: Option<&str>, message: impl Into<String>) {
        let (node, extra) = match at {
            At::Node(id) => match child.and_then(|c| self.tree.get_value(id, c)) {
                Some(c) => (c, None),
                None => (id, child),
            },
            At::Value(_, anchor) => (anchor, None),
        };
        let mut path = self.tree.path(node);
        if let Some(c) = extra {
            path = if path.is_empty() {
                c.to_string()
            } else {
                format!("{path}.{c}")
            };
        }
        let embedded = match at {
            At::Value(..) => match child {
                Some(c) => format!(" (in the JSON it holds, at {c})"),
                None => " (in the JSON it holds)".to_string(),
            },
            At::Node(_) => String::new(),
        };
        let d = Diagnostic::at(
            self.tree,
            self.file,
            self.tree.node(node).start as usize,
            &path,
            format!("{}{embedded}", message.into()),
        );
        self.errors.push(d);
    }

    pub fn kind<'v>(&self, at: At<'v>) -> Kind {
        match at {
            At::Node(id) => self.tree.kind(id),
            At::Value(v, _) => match v {
                Value::Map(_) => Kind::Map,
                Value::Seq(_) => Kind::Seq,
                _ => Kind::Scalar,
            },
        }
    }

    fn is_null<'v>(&self, at: At<'v>) -> bool {
        match at {
            At::Node(id) => self.tree.is_null(id),
            At::Value(v, _) => v.is_null(),
        }
    }

    /// The value of `key` in a map, when present and not null. An alias is
    /// an error: kfsched does not read through aliases.
    pub fn get<'v>(&mut self, at: At<'v>, key: &str) -> Option<At<'v>> {
        let found = match at {
            At::Node(id) => self.tree.get_value(id, key).map(At::Node),
            At::Value(v, anchor) => v.get(key).map(|x| At::Value(x, anchor)),
        }?;
        if self.is_null(found) {
            return None;
        }
        if let At::Node(id) = found {
            if self.tree.kind(id) == Kind::Alias {
                self.error(
                    found,
                    None,
                    "a YAML alias (*name): kfsched does not read through aliases; expand it in the file",
                );
                return None;
            }
        }
        Some(found)
    }

    /// A field by its name in `shape` (protojson also accepts snake_case).
    pub fn field<'v>(&mut self, at: At<'v>, name: &str, shape: Shape) -> Option<At<'v>> {
        if let Some(v) = self.get(at, name) {
            return Some(v);
        }
        match shape {
            Shape::Proto if name.chars().any(|c| c.is_ascii_uppercase()) => {
                self.get(at, &crate::k8s::snake_case(name))
            }
            _ => None,
        }
    }

    /// The items of a sequence (`what` names it in the error otherwise).
    pub fn items<'v>(&mut self, at: At<'v>, what: &str) -> Vec<At<'v>> {
        match at {
            At::Node(id) if self.tree.kind(id) == Kind::Seq => {
                self.tree.items(id).map(At::Node).collect()
            }
            At::Value(Value::Seq(s), anchor) => s.iter().map(|x| At::Value(x, anchor)).collect(),
            _ => {
                self.error(at, None, format!("{what} must be a list"));
                Vec::new()
            }
        }
    }

    /// The entries of a map (`what` names it in the error otherwise).
    pub fn entries<'v>(&mut self, at: At<'v>, what: &str) -> Vec<(String, At<'v>)> {
        match at {
            At::Node(id) if self.tree.kind(id) == Kind::Map => self
                .tree
                .entries(id)
                .map(|(k, v)| (self.tree.scalar(k).to_string(), At::Node(v)))
                .collect(),
            At::Value(Value::Map(m), anchor) => m
                .iter()
                .map(|(k, x)| (k.clone(), At::Value(x, anchor)))
                .collect(),
            _ => {
                self.error(at, None, format!("{what} must be a map"));
                Vec::new()
            }
        }
    }

    /// A scalar's typed value (YAML 1.1 resolution, as Kubernetes decodes it).
    pub fn scalar<'v>(&self, at: At<'v>) -> Option<Value> {
        match at {
            At::Node(id) if self.tree.kind(id) == Kind::Scalar => Some(node_value(self.tree, id)),
            At::Value(v, _) if !matches!(v, Value::Map(_) | Value::Seq(_)) => Some(v.clone()),
            _ => None,
        }
    }

    /// A string field: a quoted `"true"` is a string, a plain `true`, `1` or
    /// `yes` is not, and the API server would refuse the object.
    pub fn string<'v>(&mut self, at: At<'v>, what: &str) -> Option<String> {
        match self.scalar(at) {
            Some(Value::Str(s)) => Some(s),
            Some(Value::Null) => None,
            Some(other) => {
                let text = other.scalar_text().unwrap_or_default();
                self.error(
                    at,
                    None,
                    format!(
                        "{what} must be a string, and {text} is read as a {}: quote it ('{text}')",
                        match other {
                            Value::Bool(_) => "boolean",
                            Value::Int(_) => "number",
                            _ => "number",
                        }
                    ),
                );
                None
            }
            None => {
                self.error(at, None, format!("{what} must be a string"));
                None
            }
        }
    }

    /// An optional string field of a map.
    pub fn string_field<'v>(&mut self, at: At<'v>, key: &str, shape: Shape) -> Option<String> {
        let v = self.field(at, key, shape)?;
        self.string(v, key)
    }

    /// An integer field: a number, or (protojson int64) a string of one.
    pub fn int_field<'v>(&mut self, at: At<'v>, key: &str, shape: Shape) -> Option<i64> {
        let v = self.field(at, key, shape)?;
        match (self.scalar(v), shape) {
            (Some(Value::Int(i)), _) => Some(i),
            (Some(Value::Float(f)), Shape::Proto) if f.fract() == 0.0 => Some(f as i64),
            (Some(Value::Str(s)), Shape::Proto) if s.trim().parse::<i64>().is_ok() => {
                s.trim().parse().ok()
            }
            _ => {
                self.error(v, None, format!("{key} must be an integer"));
                None
            }
        }
    }

    /// A quantity: a string (`500m`, `2Gi`) or a number.
    pub fn quantity<'v>(&mut self, at: At<'v>, what: &str) -> Option<Quantity> {
        let text = match self.scalar(at) {
            Some(Value::Str(s)) => s,
            Some(v @ (Value::Int(_) | Value::Float(_))) => v.scalar_text().unwrap_or_default(),
            _ => {
                self.error(
                    at,
                    None,
                    format!("{what} must be a quantity such as 500m or 2Gi"),
                );
                return None;
            }
        };
        match Quantity::parse(text.trim()) {
            Ok(q) if q.is_negative() => {
                self.error(
                    at,
                    None,
                    format!("{what}: Invalid value: {text:?}: must be greater than or equal to 0"),
                );
                None
            }
            Ok(q) => Some(q),
            Err(e) => {
                self.error(at, None, format!("{what}: {text:?} is not a quantity: {e}"));
                None
            }
        }
    }

    /// A container's (or the pod's) `resources`: requests and limits.
    pub fn resources<'v>(&mut self, at: At<'v>, container: bool) -> (ResourceList, ResourceList) {
        let mut out = (ResourceList::new(), ResourceList::new());
        for (key, slot) in [("requests", &mut out.0), ("limits", &mut out.1)] {
            let Some(list) = self.get(at, key) else {
                continue;
            };
            for (name, v) in self.entries(list, key) {
                if let Some(problem) = resource_name_problem(&name, container) {
                    self.error(
                        v,
                        None,
                        format!("{key}.{name}: Invalid value: {name:?}: {problem}"),
                    );
                    continue;
                }
                if let Some(q) = self.quantity(v, &format!("{key}.{name}")) {
                    slot.insert(name, q);
                }
            }
        }
        self.check_request_limit(at, &out.0, &out.1);
        out
    }

    /// Requests above limits, and extended resources whose request is not
    /// their limit, are refused by the API server.
    fn check_request_limit<'v>(
        &mut self,
        at: At<'v>,
        requests: &ResourceList,
        limits: &ResourceList,
    ) {
        for (name, req) in requests {
            let amount = |q: &Quantity| if name == "cpu" { q.milli() } else { q.value() };
            match limits.get(name) {
                Some(lim) if amount(req) > amount(lim) => self.error(
                    at,
                    Some("requests"),
                    format!("requests.{name}: Invalid value: {:?}: must be less than or equal to {name} limit of {}", req.text, lim.text),
                ),
                Some(lim) if is_extended_resource(name) && amount(req) != amount(lim) => self.error(
                    at,
                    Some("requests"),
                    format!("requests.{name}: Invalid value: {:?}: must be equal to {name} limit of {}", req.text, lim.text),
                ),
                None if is_extended_resource(name) => self.error(
                    at,
                    Some("limits"),
                    format!("limits.{name}: Required value: Limit must be set for non overcommitable resources"),
                ),
                _ => {}
            }
        }
    }

    /// Tolerations, validated as the API server does (`ValidateTolerations`).
    pub fn tolerations<'v>(&mut self, at: At<'v>, shape: Shape) -> Vec<Toleration> {
        let items = self.items(at, "tolerations");
        items
            .into_iter()
            .filter_map(|item| self.toleration(item, shape))
            .collect()
    }

    /// One toleration, validated.
    pub fn toleration<'v>(&mut self, item: At<'v>, shape: Shape) -> Option<Toleration> {
        if self.kind(item) != Kind::Map {
            self.error(item, None, "a toleration must be a map");
            return None;
        }
        let t = Toleration {
            key: self.string_field(item, "key", shape),
            operator: self.string_field(item, "operator", shape),
            value: self.string_field(item, "value", shape),
            effect: self.string_field(item, "effect", shape),
            toleration_seconds: self.int_field(item, "tolerationSeconds", shape),
        };
        self.validate_toleration(item, &t);
        Some(t)
    }

    fn validate_toleration<'v>(&mut self, at: At<'v>, t: &Toleration) {
        let key = t.key.as_deref().unwrap_or("");
        let op = t.operator.as_deref().unwrap_or("");
        let value = t.value.as_deref().unwrap_or("");
        let effect = t.effect.as_deref().unwrap_or("");
        if !key.is_empty() {
            for m in k8s::qualified_name(key) {
                self.error(at, Some("key"), format!("Invalid value: {key:?}: {m}"));
            }
        }
        if key.is_empty() && op != "Exists" {
            self.error(at, Some("operator"), format!("Invalid value: {op:?}: operator must be Exists when `key` is empty, which means \"match all values and all keys\""));
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            self.error(at, Some("effect"), format!("Invalid value: {effect:?}: effect must be 'NoExecute' when `tolerationSeconds` is set"));
        }
        match op {
            "" | "Equal" => {
                let errs = k8s::label_value(value);
                if !errs.is_empty() {
                    self.error(
                        at,
                        Some("value"),
                        format!("Invalid value: {value:?}: {}", errs.join("; ")),
                    );
                }
            }
            "Exists" if !value.is_empty() => {
                self.error(
                    at,
                    Some("value"),
                    format!(
                        "Invalid value: {value:?}: value must be empty when `operator` is 'Exists'"
                    ),
                );
            }
            "Exists" => {}
            other => self.error(
                at,
                Some("operator"),
                format!("Unsupported value: {other:?}: supported values: \"Equal\", \"Exists\""),
            ),
        }
        if !matches!(effect, "" | "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            self.error(at, Some("effect"), format!("Unsupported value: {effect:?}: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""));
        }
    }

    /// A `nodeSelector` map (label keys and values are validated).
    pub fn node_selector<'v>(&mut self, at: At<'v>) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (k, v) in self.entries(at, "nodeSelector") {
            let Some(value) = self.string(v, &format!("nodeSelector value of {k}")) else {
                continue;
            };
            for m in k8s::qualified_name(&k) {
                self.error(v, None, format!("Invalid value: {k:?}: {m}"));
            }
            for m in k8s::label_value(&value) {
                self.error(v, None, format!("Invalid value: {value:?}: {m}"));
            }
            out.insert(k, value);
        }
        out
    }

    /// A node-selector term (k8s `NodeSelectorTerm`, or a KFP
    /// `NodeAffinityTerm` without its weight).
    pub fn term<'v>(&mut self, at: At<'v>, shape: Shape, required: bool) -> NodeSelectorTerm {
        let mut term = NodeSelectorTerm::default();
        for (name, fields) in [("matchExpressions", false), ("matchFields", true)] {
            let Some(list) = self.field(at, name, shape) else {
                continue;
            };
            let mut reqs = Vec::new();
            for item in self.items(list, name) {
                if let Some(r) = self.requirement(item, shape, fields, required) {
                    reqs.push(r);
                }
            }
            if fields {
                term.match_fields = Some(reqs);
            } else {
                term.match_expressions = Some(reqs);
            }
        }
        term
    }

    fn requirement<'v>(
        &mut self,
        at: At<'v>,
        shape: Shape,
        field: bool,
        required: bool,
    ) -> Option<NodeSelectorRequirement> {
        if self.kind(at) != Kind::Map {
            self.error(
                at,
                None,
                "a requirement must be a map with key, operator and values",
            );
            return None;
        }
        let key = self.string_field(at, "key", shape).unwrap_or_default();
        let operator = self.string_field(at, "operator", shape).unwrap_or_default();
        // `n` counts the values written, so a value of the wrong type is
        // one error, not also a missing value.
        let mut n = 0;
        let values = match self.field(at, "values", shape) {
            Some(v) => {
                let mut vals = Vec::new();
                for item in self.items(v, "values") {
                    n += 1;
                    if let Some(s) = self.string(item, "a value") {
                        vals.push(s);
                    }
                }
                Some(vals)
            }
            None => None,
        };
        if field {
            match operator.as_str() {
                "In" | "NotIn" if n != 1 => self.error(at, Some("values"), "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"),
                "In" | "NotIn" => {}
                other => self.error(at, Some("operator"), format!("Invalid value: {other:?}: not a valid selector operator")),
            }
            if key != "metadata.name" {
                self.error(
                    at,
                    Some("key"),
                    format!("Invalid value: {key:?}: not a valid field selector key"),
                );
            }
        } else {
            match operator.as_str() {
                "In" | "NotIn" if n == 0 => self.error(at, Some("values"), "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
                "Exists" | "DoesNotExist" if n > 0 => self.error(at, Some("values"), "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
                "Gt" | "Lt" if n != 1 => self.error(at, Some("values"), "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"),
                "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
                other => self.error(at, Some("operator"), format!("Invalid value: {other:?}: not a valid selector operator")),
            }
            for m in k8s::qualified_name(&key) {
                self.error(at, Some("key"), format!("Invalid value: {key:?}: {m}"));
            }
            if required {
                for v in values.iter().flatten() {
                    for m in k8s::label_value(v) {
                        self.error(at, Some("values"), format!("Invalid value: {v:?}: {m}"));
                    }
                }
            }
        }
        Some(NodeSelectorRequirement {
            key,
            operator,
            values,
        })
    }

    /// `topologySpreadConstraints`: the fields the PodTopologySpread
    /// filter reads, refused as the API server refuses them (a missing or
    /// empty topologyKey, an unknown whenUnsatisfiable, a maxSkew below 1).
    pub fn spread<'v>(&mut self, at: At<'v>) -> Vec<TopologySpreadConstraint> {
        let mut out: Vec<TopologySpreadConstraint> = Vec::new();
        for item in self.items(at, "topologySpreadConstraints") {
            if self.kind(item) != Kind::Map {
                self.error(item, None, "a topology spread constraint must be a map");
                continue;
            }
            let value = match item {
                At::Node(id) => node_value(self.tree, id),
                At::Value(v, _) => v.clone(),
            };
            let c: TopologySpreadConstraint = match serde_json::from_value(value.to_json()) {
                Ok(c) => c,
                Err(e) => {
                    self.error(
                        item,
                        None,
                        format!("not a valid topology spread constraint: {e}"),
                    );
                    continue;
                }
            };
            if c.max_skew < 1 {
                self.error(
                    item,
                    Some("maxSkew"),
                    format!("Invalid value: {}: must be greater than zero", c.max_skew),
                );
            }
            if c.topology_key.is_empty() {
                self.error(
                    item,
                    Some("topologyKey"),
                    "Required value: can not be empty",
                );
            }
            if !matches!(
                c.when_unsatisfiable.as_str(),
                "DoNotSchedule" | "ScheduleAnyway"
            ) {
                self.error(
                    item,
                    Some("whenUnsatisfiable"),
                    format!("Unsupported value: {:?}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\"", c.when_unsatisfiable),
                );
            }
            out.push(c);
        }
        out
    }

    /// A k8s `affinity`: its node affinity (required terms, preferred
    /// terms). Pod affinity and anti-affinity are noted as not judged.
    pub fn affinity<'v>(
        &mut self,
        at: At<'v>,
        unjudged: &mut Vec<String>,
    ) -> (Option<Vec<NodeSelectorTerm>>, Vec<PreferredSchedulingTerm>) {
        for k in ["podAffinity", "podAntiAffinity"] {
            if self.get(at, k).is_some() {
                let what = format!(
                    "{k}: inter-pod {} depends on the pods running at the time and is not judged",
                    if k == "podAffinity" {
                        "affinity"
                    } else {
                        "anti-affinity"
                    }
                );
                if !unjudged.contains(&what) {
                    unjudged.push(what);
                }
            }
        }
        let Some(na) = self.get(at, "nodeAffinity") else {
            return (None, Vec::new());
        };
        let mut required = None;
        if let Some(req) = self.get(na, "requiredDuringSchedulingIgnoredDuringExecution") {
            let mut terms = Vec::new();
            if let Some(list) = self.get(req, "nodeSelectorTerms") {
                for t in self.items(list, "nodeSelectorTerms") {
                    terms.push(self.term(t, Shape::K8s, true));
                }
            }
            if terms.is_empty() {
                self.error(
                    req,
                    Some("nodeSelectorTerms"),
                    "Required value: must have at least one node selector term",
                );
            }
            required = Some(terms);
        }
        let mut preferred = Vec::new();
        if let Some(list) = self.get(na, "preferredDuringSchedulingIgnoredDuringExecution") {
            for p in self.items(list, "preferredDuringSchedulingIgnoredDuringExecution") {
                let weight = self.int_field(p, "weight", Shape::K8s).unwrap_or(0);
                if !(1..=100).contains(&weight) {
                    self.error(
                        p,
                        Some("weight"),
                        format!("Invalid value: {weight}: must be in the range 1-100"),
                    );
                }
                let preference = match self.get(p, "preference") {
                    Some(t) => self.term(t, Shape::K8s, false),
                    None => {
                        self.error(
                            p,
                            Some("preference"),
                            "Required value: a preferred term needs a preference",
                        );
                        NodeSelectorTerm::default()
                    }
                };
                preferred.push(PreferredSchedulingTerm {
                    weight: i32::try_from(weight).unwrap_or(0),
                    preference,
                });
            }
        }
        (required, preferred)
    }
}

/// Why the API server refuses a resource name, if it does
/// (`validateContainerResourceName`, `ValidatePodResourceRequirements`).
pub(super) fn resource_name_problem(name: &str, container: bool) -> Option<String> {
    if !name.contains('/') {
        let standard = matches!(name, "cpu" | "memory" | "ephemeral-storage")
            || name.starts_with("hugepages-");
        if standard {
            return None;
        }
        return Some(if container {
            "must be a standard resource for containers".into()
        } else {
            "must be a standard resource type or fully qualified".into()
        });
    }
    if name.contains("kubernetes.io/") {
        return None;
    }
    if !is_extended_resource(name) {
        return Some("doesn't follow extended resource name standard".into());
    }
    None
}
