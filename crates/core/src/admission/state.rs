//! What each rule of the pod policy sees of the pod: the scheduling fields
//! as the rules before it left them.
//!
//! The pod policy has one mutation: every mutation costs the API server
//! whole passes over the pod (conversion, JSON encoding, patching, decoding
//! and defaulting), so the rules' operations go into one JSON Patch, applied
//! in rule order. A rule's operations are computed before any is applied,
//! so what the rules before it changed is carried in variables: per field,
//! a comparable form of its value after each rule (tolerations as
//! canonical strings, node-affinity terms as lists of requirement entries,
//! ...) and whether it exists. A rule that is not selected passes the
//! values on unchanged.

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
    /// The pod as the first rule sees it, with the variables that hold the
    /// comparable forms read from it.
    pub fn initial(vars: &mut Vec<(String, String)>, preferred_canon: String) -> State {
        vars.push((
            "tolerations_0".into(),
            format!(
                "object.spec.?tolerations.orValue([]).map(x, {})",
                toleration_canon("x")
            ),
        ));
        vars.push(("required_0".into(), super::terms::initial_required()));
        vars.push(("preferred_0".into(), preferred_canon));
        let list = |parent: &str, list: &str| {
            format!("object.spec.?affinity.?{parent}.?{list}.hasValue()")
        };
        let lists = super::terms::POD_LISTS;
        State {
            tolerations: "variables.tolerations_0".into(),
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
            required: "variables.required_0".into(),
            preferred: "variables.preferred_0".into(),
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
        }
    }
}

/// Where a rule writes the values it leaves for the rules after it.
pub(super) struct Chain<'a> {
    pub vars: &'a mut Vec<(String, String)>,
    /// The rule's selection (`variables.rule_x`).
    pub selected: String,
    /// Prefix of the rule's variables (`r3_`).
    pub prefix: String,
}

impl Chain<'_> {
    /// A variable of the rule named `{prefix}{name}`; its reference.
    pub fn define(&mut self, name: &str, expression: String) -> String {
        let n = format!("{}{name}", self.prefix);
        self.vars.push((n.clone(), expression));
        format!("variables.{n}")
    }

    /// `field` becomes `new` when the rule is selected: a variable holding
    /// the value after the rule, which `field` then names.
    pub fn set(&mut self, field: &mut String, name: &str, new: String) {
        if new == *field {
            return;
        }
        let e = format!("{} ? ({new}) : ({field})", self.selected);
        *field = self.define(name, e);
    }

    /// A flag that becomes true when the rule is selected and `when` holds.
    pub fn raise(&mut self, field: &mut String, name: &str, when: &str) {
        if field == "true" {
            return;
        }
        let e = if when == "true" {
            format!("{} || {field}", self.selected)
        } else {
            format!("({} && ({when})) || {field}", self.selected)
        };
        *field = self.define(name, e);
    }
}
