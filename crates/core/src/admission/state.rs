//! What each rule of the pod policy sees of the pod: the scheduling fields
//! as the rules before it left them.
//!
//! The pod policy has one mutation: every mutation costs the API server
//! whole passes over the pod (conversion, JSON encoding, patching, decoding
//! and defaulting), so the rules' operations go into one JSON Patch, applied
//! in rule order. A rule's operations are computed before any is applied,
//! so what the rules before it changed is carried in one variable per rule,
//! a map: per field, a comparable form of its value (tolerations as
//! canonical strings, node-affinity terms as lists of requirement entries,
//! ...) and whether it exists. A rule that does not select the pod passes
//! the map of the rule before it on, so a pod pays one variable per rule.

/// The pod as the next rule sees it: each entry a CEL expression.
#[derive(Clone, Debug)]
pub(super) struct State {
    /// Tolerations as [`TOLERATION_CANON`] strings, in order.
    pub tolerations: String,
    pub tolerations_present: String,
    pub node_selector_present: String,
    pub labels_present: String,
    /// The three names a rule can set, as they are now.
    pub priority_class_name: String,
    pub scheduler_name: String,
    pub runtime_class_name: String,
    /// Whether `priority` / `preemptionPolicy`, computed from the pod's
    /// first priority class, are still there.
    pub priority_present: String,
    pub preemption_present: String,
    /// Topology spread constraints as `topologyKey|whenUnsatisfiable`.
    pub spread: String,
    pub spread_present: String,
    /// Required node-affinity terms as lists of requirement entries.
    pub required: String,
    /// Preferred node-affinity terms as `weight#requirement;requirement`.
    pub preferred: String,
    pub preferred_present: String,
    /// Per pod (anti-)affinity list (see `terms::pod_lists`): whether the
    /// pod's own items are still there, and the ids of the items rules added.
    pub pod_own: [String; 4],
    pub pod_added: [String; 4],
    pub pod_list_present: [String; 4],
    /// podAffinity, podAntiAffinity.
    pub pod_parent_present: [String; 2],
    pub affinity_present: String,
    pub node_affinity_present: String,
    /// Whether a rule changed the affinity (so `object` no longer shows it).
    pub affinity_changed: String,
}

/// A pod toleration `x` as one comparable string: key, operator (empty
/// read as Equal), value, effect, tolerationSeconds as an integer, joined
/// by `|` (keys and label values hold none).
pub(super) fn toleration_canon(x: &str) -> String {
    format!(
        "{x}.?key.orValue('') + '|' + ({x}.?operator.orValue('') == '' ? 'Equal' : {x}.operator) + '|' + {x}.?value.orValue('') + '|' + {x}.?effect.orValue('') + '|' + ({x}.?tolerationSeconds.hasValue() ? string({x}.tolerationSeconds) : '')"
    )
}

/// A canonical toleration string `c` is one DefaultTolerationSeconds adds.
pub(super) fn default_canon(c: &str) -> String {
    format!(
        "[{c}.split('|')].map(p, p[0] in ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'] && p[1] == 'Exists' && p[3] == 'NoExecute')[0]"
    )
}

impl State {
    /// The fields, named as the state maps name them.
    fn fields(&mut self) -> Vec<(String, &mut String)> {
        let mut out: Vec<(String, &mut String)> = vec![
            ("tolerations".into(), &mut self.tolerations),
            ("tolerations_present".into(), &mut self.tolerations_present),
            (
                "node_selector_present".into(),
                &mut self.node_selector_present,
            ),
            ("labels_present".into(), &mut self.labels_present),
            ("priority_class_name".into(), &mut self.priority_class_name),
            ("scheduler_name".into(), &mut self.scheduler_name),
            ("runtime_class_name".into(), &mut self.runtime_class_name),
            ("priority_present".into(), &mut self.priority_present),
            ("preemption_present".into(), &mut self.preemption_present),
            ("spread".into(), &mut self.spread),
            ("spread_present".into(), &mut self.spread_present),
            ("required".into(), &mut self.required),
            ("preferred".into(), &mut self.preferred),
            ("preferred_present".into(), &mut self.preferred_present),
            ("affinity_present".into(), &mut self.affinity_present),
            (
                "node_affinity_present".into(),
                &mut self.node_affinity_present,
            ),
            ("affinity_changed".into(), &mut self.affinity_changed),
        ];
        for (i, f) in self.pod_own.iter_mut().enumerate() {
            out.push((format!("pod_own_{i}"), f));
        }
        for (i, f) in self.pod_added.iter_mut().enumerate() {
            out.push((format!("pod_added_{i}"), f));
        }
        for (i, f) in self.pod_list_present.iter_mut().enumerate() {
            out.push((format!("pod_list_present_{i}"), f));
        }
        for (i, f) in self.pod_parent_present.iter_mut().enumerate() {
            out.push((format!("pod_parent_present_{i}"), f));
        }
        out
    }

    /// The pod as the first rule sees it: the variable `state_0`, the map
    /// of what the pod has (computed when a rule selects the pod).
    pub fn initial(vars: &mut Vec<(String, String)>) -> State {
        let list = |parent: &str, list: &str| {
            format!("object.spec.?affinity.?{parent}.?{list}.hasValue()")
        };
        let lists = super::terms::POD_LISTS;
        let mut s = State {
            tolerations: format!(
                "object.spec.?tolerations.orValue([]).map(x, {})",
                toleration_canon("x")
            ),
            tolerations_present: "has(object.spec.tolerations)".into(),
            node_selector_present: "has(object.spec.nodeSelector)".into(),
            labels_present: "has(object.metadata.labels)".into(),
            priority_class_name: "object.spec.?priorityClassName.orValue('')".into(),
            scheduler_name: "object.spec.?schedulerName.orValue('')".into(),
            runtime_class_name: "object.spec.?runtimeClassName.orValue('')".into(),
            priority_present: "has(object.spec.priority)".into(),
            preemption_present: "has(object.spec.preemptionPolicy)".into(),
            spread: "object.spec.?topologySpreadConstraints.orValue([]).map(x, x.?topologyKey.orValue('') + '|' + x.?whenUnsatisfiable.orValue(''))".into(),
            spread_present: "has(object.spec.topologySpreadConstraints)".into(),
            required: super::terms::initial_required(),
            preferred: super::terms::initial_preferred(),
            preferred_present: "object.spec.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.hasValue()".into(),
            pod_own: std::array::from_fn(|_| "true".to_string()),
            pod_added: std::array::from_fn(|_| "[]".to_string()),
            pod_list_present: std::array::from_fn(|i| list(lists[i].0, lists[i].1)),
            pod_parent_present: [
                "object.spec.?affinity.?podAffinity.hasValue()".into(),
                "object.spec.?affinity.?podAntiAffinity.hasValue()".into(),
            ],
            affinity_present: "has(object.spec.affinity)".into(),
            node_affinity_present: "object.spec.?affinity.?nodeAffinity.hasValue()".into(),
            affinity_changed: "false".into(),
        };
        let entries: Vec<String> = s
            .fields()
            .into_iter()
            .map(|(n, e)| format!("'{n}': dyn({e})"))
            .collect();
        vars.push((
            "state_0".into(),
            format!("{{\n  {}\n}}", entries.join(",\n  ")),
        ));
        for (n, e) in s.fields() {
            *e = format!("variables.state_0.{n}");
        }
        s
    }
}

/// Marks a value a rule computes in its state map (see [`Chain::define`]).
const MARK: char = '\u{1}';

/// What one rule leaves for the rules after it: the fields it changes and
/// the values it computes on the way, written as the rule's state map.
pub(super) struct Chain {
    /// The variable of the rule's state map (`r3`).
    pub name: String,
    /// Computed values (name, expression), in order; each may read the
    /// ones before it.
    temps: Vec<(String, String)>,
    /// Fields the rule changes (name, new value).
    updates: Vec<(String, String)>,
}

impl Chain {
    pub fn new(name: String) -> Chain {
        Chain {
            name,
            temps: Vec::new(),
            updates: Vec::new(),
        }
    }

    /// A value the rule computes once, for its state and its operations:
    /// a reference to it, resolved where it is used.
    pub fn define(&mut self, name: &str, expression: String) -> String {
        self.temps.push((name.to_string(), expression));
        format!("{MARK}{name}{MARK}")
    }

    /// `field` becomes `new` after this rule (when it selects the pod).
    pub fn set(&mut self, field: &mut String, name: &str, new: String) {
        if new == *field {
            return;
        }
        self.updates.push((name.to_string(), new));
        *field = format!("variables.{}.{name}", self.name);
    }

    /// A flag that becomes true after this rule when `when` holds.
    pub fn raise(&mut self, field: &mut String, name: &str, when: &str) {
        if field == "true" {
            return;
        }
        let e = if when == "true" {
            "true".to_string()
        } else {
            format!("({when}) || {field}")
        };
        self.set(field, name, e);
    }

    /// `expr` of the rule's operations, its computed values read from its
    /// state map.
    pub fn resolve(&self, expr: &str) -> String {
        resolve(expr, |n| format!("variables.{}.t_{n}", self.name))
    }

    /// The rule's state map: `selected ? {fields after the rule} : before`,
    /// where `before` is the state map of the rule before; `None` when the
    /// rule changes nothing (the state stays `before`'s).
    pub fn finish(self, s: &mut State, before: &str, selected: &str) -> Option<String> {
        if self.updates.is_empty() && self.temps.is_empty() {
            return None;
        }
        let own = format!("variables.{}.", self.name);
        let mut entries = Vec::new();
        for (n, e) in s.fields() {
            let v = match self.updates.iter().find(|(u, _)| *u == n) {
                Some((_, new)) => new.clone(),
                // Unchanged: the value as the rule before left it.
                None => e.clone(),
            };
            entries.push(format!("'{n}': dyn({})", resolve(&v, |t| format!("t_{t}"))));
            *e = format!("{own}{n}");
        }
        for (t, _) in &self.temps {
            entries.push(format!("'t_{t}': dyn(t_{t})"));
        }
        let mut body = format!("{{\n    {}\n  }}", entries.join(",\n    "));
        for (t, e) in self.temps.iter().rev() {
            body = format!(
                "[{}].map(t_{t},\n  {body})[0]",
                resolve(e, |n| format!("t_{n}"))
            );
        }
        Some(format!("!{selected} ? {before} :\n  {body}"))
    }
}

/// `expr` with each computed value's mark replaced by `name(value)`.
fn resolve(expr: &str, name: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(expr.len());
    let mut parts = expr.split(MARK);
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    let mut inside = true;
    for p in parts {
        if inside {
            out.push_str(&name(p));
        } else {
            out.push_str(p);
        }
        inside = !inside;
    }
    out
}
