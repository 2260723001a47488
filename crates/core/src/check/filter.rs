//! kube-scheduler's filters for the fields kfsched knows, in the default
//! profile's order: NodeUnschedulable, NodeName, TaintToleration,
//! NodeAffinity, NodeResourcesFit, PodTopologySpread (kube-scheduler 1.36,
//! `pkg/scheduler/framework/plugins`). As in the framework, the first
//! filter that fails decides a node's status (`RunFilterPlugins` stops
//! there); only NodeResourcesFit returns several reasons.
//!
//! PodTopologySpread is judged for the first pod of a component, with no
//! other pods counted: the skew `0 + selfMatch - globalMin` is then at
//! most 1, which every `maxSkew` allows (the global minimum over eligible
//! domains is 0, or MaxInt32 when there are none), so a node fails only
//! when it lacks the topologyKey label of a `DoNotSchedule` constraint.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration};

use super::node::Node;
use super::pod::{Pod, Requests};

pub const UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const NODE_NAME: &str = "node(s) didn't match the requested node name";
pub const TAINTS: &str = "node(s) had untolerated taint(s)";
pub const AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
pub const PREFILTER_EXCLUDED: &str = "node(s) didn't satisfy plugin(s) [NodeAffinity]";
pub const AFFINITY_CONFLICT: &str = "pod affinity terms conflict";
pub const TOO_MANY_PODS: &str = "Too many pods";
/// PodTopologySpread's `ErrReasonNodeLabelNotMatch`.
pub const SPREAD_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// A filter status code: whether preemption could help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    Unschedulable,
    UnschedulableAndUnresolvable,
}

/// Why one node does not fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub reasons: Vec<String>,
    /// The filter plugin that failed.
    pub plugin: &'static str,
}

impl Status {
    fn unresolvable(plugin: &'static str, reason: &str) -> Status {
        Status {
            code: Code::UnschedulableAndUnresolvable,
            reasons: vec![reason.to_string()],
            plugin,
        }
    }
}

/// `Toleration.ToleratesTaint` (the comparison operators are alpha and off).
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect = t.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("") {
        "" | "Equal" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        "Exists" => true,
        _ => false,
    }
}

/// A parsed label requirement (`labels.NewRequirement`).
#[derive(Clone, Debug)]
enum Expr {
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
    Gt(String, i64),
    Lt(String, i64),
}

/// A field requirement (`metadata.name` is the only node field).
#[derive(Clone, Debug)]
enum Field {
    Is(String, String),
    IsNot(String, String),
}

/// A node-selector term that parsed; a term that does not parse never
/// matches (`LazyErrorNodeSelector`), and is absent here.
#[derive(Clone, Debug)]
pub struct Term {
    exprs: Vec<Expr>,
    fields: Vec<Field>,
}

fn parse_expr(r: &NodeSelectorRequirement) -> Option<Expr> {
    let values = r.values.clone().unwrap_or_default();
    if !crate::k8s::qualified_name(&r.key).is_empty() {
        return None;
    }
    if values
        .iter()
        .any(|v| !crate::k8s::label_value(v).is_empty())
    {
        return None;
    }
    let key = r.key.clone();
    let set = || values.iter().cloned().collect::<BTreeSet<String>>();
    let int = || {
        (values.len() == 1)
            .then(|| values[0].parse::<i64>().ok())
            .flatten()
    };
    Some(match r.operator.as_str() {
        "In" if !values.is_empty() => Expr::In(key, set()),
        "NotIn" if !values.is_empty() => Expr::NotIn(key, set()),
        "Exists" if values.is_empty() => Expr::Exists(key),
        "DoesNotExist" if values.is_empty() => Expr::DoesNotExist(key),
        "Gt" => Expr::Gt(key, int()?),
        "Lt" => Expr::Lt(key, int()?),
        _ => return None,
    })
}

/// Parses a term; `None` when it is empty or does not parse (it matches
/// no node either way).
pub fn parse_term(t: &NodeSelectorTerm) -> Option<Term> {
    let exprs_in = t.match_expressions.as_deref().unwrap_or(&[]);
    let fields_in = t.match_fields.as_deref().unwrap_or(&[]);
    if exprs_in.is_empty() && fields_in.is_empty() {
        return None;
    }
    let mut exprs = Vec::with_capacity(exprs_in.len());
    for r in exprs_in {
        exprs.push(parse_expr(r)?);
    }
    let mut fields = Vec::with_capacity(fields_in.len());
    for r in fields_in {
        let values = r.values.as_deref().unwrap_or(&[]);
        if values.len() != 1 {
            return None;
        }
        fields.push(match r.operator.as_str() {
            "In" => Field::Is(r.key.clone(), values[0].clone()),
            "NotIn" => Field::IsNot(r.key.clone(), values[0].clone()),
            _ => return None,
        });
    }
    Some(Term { exprs, fields })
}

/// Whether a node's labels satisfy a requirement (`Requirement.Matches`).
fn expr_matches(e: &Expr, node: &Node) -> bool {
    let get = |k: &str| node.labels.get(k);
    match e {
        Expr::In(k, vs) => get(k).is_some_and(|v| vs.contains(v)),
        Expr::NotIn(k, vs) => get(k).is_none_or(|v| !vs.contains(v)),
        Expr::Exists(k) => get(k).is_some(),
        Expr::DoesNotExist(k) => get(k).is_none(),
        Expr::Gt(k, n) => get(k)
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|v| v > *n),
        Expr::Lt(k, n) => get(k)
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|v| v < *n),
    }
}

impl Term {
    pub fn matches(&self, node: &Node) -> bool {
        self.exprs.iter().all(|e| expr_matches(e, node))
            && self.fields.iter().all(|f| {
                // A node's only field is metadata.name.
                let get = |k: &str| {
                    if k == "metadata.name" {
                        node.name.as_str()
                    } else {
                        ""
                    }
                };
                match f {
                    Field::Is(k, v) => get(k) == v,
                    Field::IsNot(k, v) => get(k) != v,
                }
            })
    }
}

/// A pod made ready for the filters: what each one needs, computed once.
pub struct Prepared<'p> {
    pub pod: &'p Pod,
    pub requests: Requests,
    /// The NodeAffinity filter's view: `None` when its PreFilter skips it.
    affinity: Option<Affinity>,
    /// NodeAffinity's PreFilter: the only node names that are evaluated
    /// (from `matchFields metadata.name In` in every required term).
    pub names: Option<BTreeSet<String>>,
    /// Those name sets do not intersect: `pod affinity terms conflict`.
    pub conflict: bool,
    /// Preferred terms that parsed, with their weights.
    preferred: Vec<(i64, Term)>,
    /// Why preferred terms do not parse, as the scheduler words it: with
    /// two or more feasible nodes its PreScore then fails the pod.
    pub preferred_errors: Vec<String>,
}

struct Affinity {
    selector: Vec<(String, String)>,
    /// `None`: no required node affinity; `Some(terms)`: the terms that
    /// parsed (none: no node matches).
    required: Option<Vec<Term>>,
}

impl<'p> Prepared<'p> {
    pub fn new(pod: &'p Pod) -> Prepared<'p> {
        let affinity = (pod.node_selector.is_some() || pod.required.is_some()).then(|| Affinity {
            selector: pod
                .node_selector
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            required: pod
                .required
                .as_ref()
                .map(|terms| terms.iter().filter_map(parse_term).collect()),
        });
        let (names, conflict) = prefilter_names(pod.required.as_deref());
        let mut preferred = Vec::new();
        let mut preferred_errors = Vec::new();
        for (i, p) in pod.preferred.iter().enumerate() {
            let t = &p.preference;
            let empty = t.match_expressions.as_ref().is_none_or(Vec::is_empty)
                && t.match_fields.as_ref().is_none_or(Vec::is_empty);
            if p.weight == 0 || empty {
                continue;
            }
            match parse_term(t) {
                Some(term) => preferred.push((i64::from(p.weight), term)),
                None => preferred_errors.extend(term_errors(t, i)),
            }
        }
        Prepared {
            pod,
            requests: pod.requests(),
            affinity,
            names,
            conflict,
            preferred,
            preferred_errors,
        }
    }

    /// The first failing filter's status for `node`, or `None` when the
    /// node fits. Resources are judged only when the node's are known.
    pub fn filter(&self, node: &Node) -> Option<Status> {
        if node.unschedulable {
            let taint = Taint {
                key: "node.kubernetes.io/unschedulable".into(),
                effect: "NoSchedule".into(),
                value: None,
                time_added: None,
            };
            if !self.pod.tolerations.iter().any(|t| tolerates(t, &taint)) {
                return Some(Status::unresolvable("NodeUnschedulable", UNSCHEDULABLE));
            }
        }
        if self.pod.node_name.as_ref().is_some_and(|n| *n != node.name) {
            return Some(Status::unresolvable("NodeName", NODE_NAME));
        }
        let untolerated = node.taints.iter().any(|taint| {
            matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
                && !self.pod.tolerations.iter().any(|t| tolerates(t, taint))
        });
        if untolerated {
            return Some(Status::unresolvable("TaintToleration", TAINTS));
        }
        if let Some(a) = &self.affinity {
            let selector_ok = a
                .selector
                .iter()
                .all(|(k, v)| node.labels.get(k) == Some(v));
            let required_ok = match &a.required {
                None => true,
                Some(terms) => terms.iter().any(|t| t.matches(node)),
            };
            if !(selector_ok && required_ok) {
                return Some(Status::unresolvable("NodeAffinity", AFFINITY));
            }
        }
        self.fit(node).or_else(|| self.spread(node))
    }

    /// PodTopologySpread for the first pod: every `DoNotSchedule`
    /// constraint's topologyKey must be a label of the node.
    fn spread(&self, node: &Node) -> Option<Status> {
        self.pod
            .topology_spread
            .iter()
            .filter(|c| c.when_unsatisfiable == "DoNotSchedule")
            .any(|c| !node.labels.contains_key(&c.topology_key))
            .then(|| Status::unresolvable("PodTopologySpread", SPREAD_LABEL))
    }

    /// NodeResourcesFit (`fitsRequest`): every shortfall is a reason.
    fn fit(&self, node: &Node) -> Option<Status> {
        let alloc = node.allocatable.as_ref()?;
        let used = node.requested();
        let mut reasons = Vec::new();
        let mut unresolvable = false;
        if node.pods.len() as i64 + 1 > alloc.pods {
            reasons.push(TOO_MANY_PODS.to_string());
        }
        let r = &self.requests;
        if r.is_zero() && r.scalar.is_empty() {
            return status(reasons, unresolvable);
        }
        for (name, want, have, taken) in [
            ("cpu", r.milli_cpu, alloc.milli_cpu, used.milli_cpu),
            ("memory", r.memory, alloc.memory, used.memory),
            (
                "ephemeral-storage",
                r.ephemeral_storage,
                alloc.ephemeral_storage,
                used.ephemeral_storage,
            ),
        ] {
            if want > 0 && want > have - taken {
                reasons.push(format!("Insufficient {name}"));
                unresolvable |= want > have;
            }
        }
        for (name, &want) in &r.scalar {
            if want == 0 {
                continue;
            }
            let have = alloc.scalar.get(name).copied().unwrap_or(0);
            let taken = used.scalar.get(name).copied().unwrap_or(0);
            if want > have - taken {
                reasons.push(format!("Insufficient {name}"));
                unresolvable |= want > have;
            }
        }
        status(reasons, unresolvable)
    }

    /// The NodeAffinity score: the weights of the preferred terms a node matches.
    pub fn score(&self, node: &Node) -> i64 {
        self.preferred
            .iter()
            .filter(|(_, t)| t.matches(node))
            .map(|(w, _)| *w)
            .sum()
    }

    pub fn has_preferred(&self) -> bool {
        !self.preferred.is_empty()
    }
}

/// The parse errors of a preferred term as `NewPreferredSchedulingTerms`
/// reports them (`[i].matchExpressions[j].values[0]: Invalid value: ...`).
/// The API server already refuses every other error a preferred term can
/// have, so only `Gt`/`Lt` thresholds that are no integers are left.
fn term_errors(t: &NodeSelectorTerm, i: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (j, r) in t.match_expressions.iter().flatten().enumerate() {
        if !matches!(r.operator.as_str(), "Gt" | "Lt") {
            continue;
        }
        for (k, v) in r.values.iter().flatten().enumerate() {
            if v.parse::<i64>().is_err() {
                out.push(format!(
                    "[{i}].matchExpressions[{j}].values[{k}]: Invalid value: {v:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                ));
            }
        }
    }
    out
}

/// An aggregate error's text (`utilerrors.aggregate.Error`): one message
/// alone, several (without repeats) in brackets.
pub fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn status(reasons: Vec<String>, unresolvable: bool) -> Option<Status> {
    (!reasons.is_empty()).then_some(Status {
        code: if unresolvable {
            Code::UnschedulableAndUnresolvable
        } else {
            Code::Unschedulable
        },
        reasons,
        plugin: "NodeResourcesFit",
    })
}

/// NodeAffinity's PreFilter: the node names every required term restricts
/// itself to through `matchFields metadata.name In`, unioned over terms;
/// `None` when some term has no such requirement. The flag says the set is
/// empty (each term contradicts itself).
fn prefilter_names(required: Option<&[NodeSelectorTerm]>) -> (Option<BTreeSet<String>>, bool) {
    let Some(terms) = required.filter(|t| !t.is_empty()) else {
        return (None, false);
    };
    let mut union: BTreeSet<String> = BTreeSet::new();
    for t in terms {
        let mut term_names: Option<BTreeSet<String>> = None;
        for r in t.match_fields.iter().flatten() {
            if r.key == "metadata.name" && r.operator == "In" {
                let s: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
                term_names = Some(match term_names {
                    None => s,
                    Some(prev) => prev.intersection(&s).cloned().collect(),
                });
            }
        }
        match term_names {
            None => return (None, false),
            Some(s) => union.extend(s),
        }
    }
    let conflict = union.is_empty();
    (Some(union), conflict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        Node {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Node::default()
        }
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn term(exprs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: Some(exprs),
            match_fields: None,
        }
    }

    #[test]
    fn operators_match_as_labels_requirement_does() {
        let n = node("a", &[("gen", "007"), ("zone", "x")]);
        let m = |r| parse_term(&term(vec![r])).is_some_and(|t| t.matches(&n));
        assert!(m(req("gen", "Gt", &["6"])), "007 is 7");
        assert!(!m(req("gen", "Lt", &["7"])));
        assert!(
            !m(req("zone", "Gt", &["1"])),
            "a non-integer label matches neither"
        );
        assert!(
            !m(req("gen", "Gt", &["1.5"])),
            "a non-integer threshold never matches"
        );
        assert!(
            !m(req("gen", "Gt", &["-1"])),
            "a negative threshold is no label value"
        );
        assert!(
            m(req("missing", "NotIn", &["a"])),
            "NotIn matches an absent key"
        );
        assert!(m(req("missing", "DoesNotExist", &[])));
        assert!(
            !m(req("zone", "In", &[])),
            "In without values does not parse"
        );
        assert!(!m(req("zone", "Equals", &["x"])));
        assert!(
            parse_term(&NodeSelectorTerm::default()).is_none(),
            "an empty term matches nothing"
        );
    }

    #[test]
    fn taints_are_tolerated_by_key_value_and_effect() {
        let taint = Taint {
            key: "gpu".into(),
            value: Some("true".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        };
        let t = |k: Option<&str>, op: Option<&str>, v: Option<&str>, e: Option<&str>| Toleration {
            key: k.map(Into::into),
            operator: op.map(Into::into),
            value: v.map(Into::into),
            effect: e.map(Into::into),
            toleration_seconds: None,
        };
        assert!(tolerates(
            &t(Some("gpu"), None, Some("true"), Some("NoSchedule")),
            &taint
        ));
        assert!(tolerates(
            &t(Some("gpu"), Some("Exists"), None, None),
            &taint
        ));
        assert!(tolerates(&t(None, Some("Exists"), None, None), &taint));
        assert!(!tolerates(
            &t(Some("gpu"), Some("Equal"), Some("false"), None),
            &taint
        ));
        assert!(!tolerates(
            &t(Some("gpu"), Some("Exists"), None, Some("NoExecute")),
            &taint
        ));
    }

    #[test]
    fn field_names_in_every_term_restrict_the_nodes_evaluated() {
        let f = |names: &[&str]| NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(
                names
                    .iter()
                    .map(|n| req("metadata.name", "In", &[n]))
                    .collect(),
            ),
        };
        let (names, conflict) = prefilter_names(Some(&[f(&["a"]), f(&["b"])]));
        assert_eq!(
            names.map(|s| s.into_iter().collect::<Vec<_>>()),
            Some(vec!["a".into(), "b".into()])
        );
        assert!(!conflict);
        let (_, conflict) = prefilter_names(Some(&[f(&["a", "b"])]));
        assert!(
            conflict,
            "two names ANDed in one term contradict each other"
        );
        let (names, _) = prefilter_names(Some(&[f(&["a"]), term(vec![req("x", "Exists", &[])])]));
        assert!(
            names.is_none(),
            "a term without a name requirement lets every node in"
        );
    }
}
