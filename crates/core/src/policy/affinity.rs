//! Node affinity, pod affinity and anti-affinity, and label selectors,
//! validated as the API server validates them.

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm, PreferredSchedulingTerm,
    WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as MetaLabelSelector;
use serde_json::Value as Json;

use super::validate::{Validator, get, typed};
use super::{NodePool, warnings};
use crate::k8s;
use crate::suggest::nearest;

/// Pod affinity and anti-affinity terms, required and preferred.
type PodAffinityLists = (
    Vec<PodAffinityTerm>,
    Vec<WeightedPodAffinityTerm>,
    Vec<PodAffinityTerm>,
    Vec<WeightedPodAffinityTerm>,
);

impl Validator {
    /// Required node-affinity steps (the pool's single term first, then the
    /// rule's own terms) and preferred terms.
    pub(super) fn node_affinity(
        &mut self,
        aff: Option<&Json>,
        path: &str,
        pool: Option<&NodePool>,
    ) -> (Vec<Vec<NodeSelectorTerm>>, Vec<PreferredSchedulingTerm>) {
        let mut required = Vec::new();
        if let Some(pool) = pool.filter(|p| !p.labels.is_empty()) {
            required.push(vec![NodeSelectorTerm {
                match_expressions: Some(
                    pool.labels
                        .iter()
                        .map(|(k, v)| NodeSelectorRequirement {
                            key: k.clone(),
                            operator: "In".into(),
                            values: Some(vec![v.clone()]),
                        })
                        .collect(),
                ),
                match_fields: None,
            }]);
        }
        let mut preferred = Vec::new();
        let Some(na) = aff.and_then(|a| get(a, "nodeAffinity")) else {
            return (required, preferred);
        };
        let ap = format!("{path}.affinity.nodeAffinity");
        if let Some(req) = get(na, "requiredDuringSchedulingIgnoredDuringExecution") {
            let rp = format!("{ap}.requiredDuringSchedulingIgnoredDuringExecution");
            let terms = get(req, "nodeSelectorTerms")
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default();
            if terms.is_empty() {
                self.err(
                    &format!("{rp}.nodeSelectorTerms"),
                    "Required value: must have at least one node selector term",
                );
            }
            let mut own = Vec::new();
            for (i, t) in terms.iter().enumerate() {
                let term: NodeSelectorTerm = typed(Some(t));
                let tp = format!("{rp}.nodeSelectorTerms[{i}]");
                if term.match_expressions.as_ref().is_none_or(Vec::is_empty)
                    && term.match_fields.as_ref().is_none_or(Vec::is_empty)
                {
                    self.err(&tp, "Invalid value: an empty node selector term matches no node; give it matchExpressions or matchFields");
                }
                self.node_selector_term(&term, true, &tp);
                own.push(term);
            }
            if !own.is_empty() {
                required.push(own);
            }
        }
        if let Some(list) =
            get(na, "preferredDuringSchedulingIgnoredDuringExecution").and_then(Json::as_array)
        {
            let pp = format!("{ap}.preferredDuringSchedulingIgnoredDuringExecution");
            for (i, t) in list.iter().enumerate() {
                let term: PreferredSchedulingTerm = typed(Some(t));
                let tp = format!("{pp}[{i}]");
                self.weight(term.weight, &tp);
                self.node_selector_term(&term.preference, false, &format!("{tp}.preference"));
                preferred.push(term);
            }
        }
        (required, preferred)
    }

    /// Pod affinity and anti-affinity: [affinity required, affinity
    /// preferred, anti-affinity required, anti-affinity preferred].
    pub(super) fn pod_affinity(&mut self, aff: Option<&Json>, path: &str) -> PodAffinityLists {
        let mut pa = [Vec::new(), Vec::new()];
        let mut pw = [Vec::new(), Vec::new()];
        for (slot, key) in ["podAffinity", "podAntiAffinity"].iter().enumerate() {
            let Some(pj) = aff.and_then(|a| get(a, key)) else {
                continue;
            };
            let base = format!("{path}.affinity.{key}");
            if let Some(list) =
                get(pj, "requiredDuringSchedulingIgnoredDuringExecution").and_then(Json::as_array)
            {
                for (i, t) in list.iter().enumerate() {
                    let term: PodAffinityTerm = typed(Some(t));
                    self.pod_affinity_term(
                        &term,
                        &format!("{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"),
                    );
                    pa[slot].push(term);
                }
            }
            if let Some(list) =
                get(pj, "preferredDuringSchedulingIgnoredDuringExecution").and_then(Json::as_array)
            {
                for (i, t) in list.iter().enumerate() {
                    let term: WeightedPodAffinityTerm = typed(Some(t));
                    let tp = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
                    self.weight(term.weight, &tp);
                    self.pod_affinity_term(
                        &term.pod_affinity_term,
                        &format!("{tp}.podAffinityTerm"),
                    );
                    pw[slot].push(term);
                }
            }
        }
        let [affinity_required, anti_required] = pa;
        let [affinity_preferred, anti_preferred] = pw;
        (
            affinity_required,
            affinity_preferred,
            anti_required,
            anti_preferred,
        )
    }

    /// A preferred term's weight: 1-100.
    pub(super) fn weight(&mut self, weight: i32, term_path: &str) {
        if weight <= 0 || weight > 100 {
            self.err(
                &format!("{term_path}.weight"),
                format!("Invalid value: {weight}: must be in the range 1-100"),
            );
        }
    }

    pub(super) fn node_selector_term(
        &mut self,
        term: &NodeSelectorTerm,
        required: bool,
        path: &str,
    ) {
        for (j, rq) in term.match_expressions.iter().flatten().enumerate() {
            let rp = format!("{path}.matchExpressions[{j}]");
            let values = rq.values.clone().unwrap_or_default();
            // Values of the wrong type are reported already, and read as none.
            let values_bad = self.has_errors_under(&format!("{rp}.values"));
            match rq.operator.as_str() {
                "In" | "NotIn" => {
                    if values.is_empty() && !values_bad {
                        self.err(
                            &format!("{rp}.values"),
                            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                        );
                    }
                }
                "Exists" | "DoesNotExist" => {
                    if !values.is_empty() && !values_bad {
                        self.err(&format!("{rp}.values"), "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
                    }
                }
                "Gt" | "Lt" => {
                    if values_bad {
                    } else if values.len() != 1 {
                        self.err(&format!("{rp}.values"), "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'");
                    } else if values[0].parse::<i64>().is_err() {
                        self.err(
                            &format!("{rp}.values[0]"),
                            format!(
                                "Invalid value: {:?}: must be an integer when `operator` is 'Gt' or 'Lt' (the scheduler ignores the requirement otherwise; kfsched is stricter than the API server here)",
                                values[0]
                            ),
                        );
                    }
                }
                other => {
                    let hint =
                        nearest(other, ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
                            .map(|n| format!("; did you mean {n:?}?"))
                            .unwrap_or_default();
                    self.err(
                        &format!("{rp}.operator"),
                        format!("Invalid value: {other:?}: not a valid selector operator{hint}"),
                    );
                }
            }
            self.label_name(&rq.key, &format!("{rp}.key"));
            if let Some(m) = warnings::deprecated_node_label(&rq.key) {
                self.warn(&format!("{rp}.key"), format!("{} is {m}", rq.key));
            }
            for (vi, v) in values.iter().enumerate() {
                let vp = format!("{rp}.values[{vi}]");
                if required {
                    for m in k8s::label_value(v) {
                        self.err(&vp, format!("Invalid value: {v:?}: {m}"));
                    }
                } else {
                    // Accepted, since the term may still serve a cluster
                    // of one node, but it never matches.
                    for m in warnings::invalid_preferred_value(v) {
                        self.warn(&vp, m);
                    }
                }
            }
        }
        for (j, rq) in term.match_fields.iter().flatten().enumerate() {
            let rp = format!("{path}.matchFields[{j}]");
            let values = rq.values.clone().unwrap_or_default();
            let values_bad = self.has_errors_under(&format!("{rp}.values"));
            match rq.operator.as_str() {
                "In" | "NotIn" => {
                    if values_bad {
                    } else if values.len() != 1 {
                        self.err(
                            &format!("{rp}.values"),
                            "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector (write one term per node name: terms are ORed)",
                        );
                    }
                }
                other => self.err(&format!("{rp}.operator"), format!("Invalid value: {other:?}: not a valid selector operator (matchFields takes In or NotIn)")),
            }
            if rq.key != "metadata.name" {
                self.err(
                    &format!("{rp}.key"),
                    format!(
                        "Invalid value: {:?}: not a valid field selector key (only metadata.name)",
                        rq.key
                    ),
                );
            } else {
                for (vi, v) in values.iter().enumerate() {
                    for m in k8s::node_name(v) {
                        self.err(
                            &format!("{rp}.values[{vi}]"),
                            format!("Invalid value: {v:?}: {m}"),
                        );
                    }
                }
            }
        }
    }

    pub(super) fn label_selector(&mut self, s: &MetaLabelSelector, path: &str) {
        let labels: Vec<(String, String)> = s
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.labels(&labels, &format!("{path}.matchLabels"));
        for (i, e) in s.match_expressions.iter().flatten().enumerate() {
            let p = format!("{path}.matchExpressions[{i}]");
            let values = e.values.clone().unwrap_or_default();
            let values_bad = self.has_errors_under(&format!("{p}.values"));
            match e.operator.as_str() {
                "In" | "NotIn" => {
                    if values.is_empty() && !values_bad {
                        self.err(
                            &format!("{p}.values"),
                            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                        );
                    }
                }
                "Exists" | "DoesNotExist" => {
                    if !values.is_empty() && !values_bad {
                        self.err(&format!("{p}.values"), "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
                    }
                }
                other => self.err(
                    &format!("{p}.operator"),
                    format!("Invalid value: {other:?}: not a valid selector operator"),
                ),
            }
            self.label_name(&e.key, &format!("{p}.key"));
            for (vi, v) in values.iter().enumerate() {
                for m in k8s::label_value(v) {
                    self.err(
                        &format!("{p}.values[{vi}]"),
                        format!("Invalid value: {v:?}: {m}"),
                    );
                }
            }
        }
    }

    pub(super) fn pod_affinity_term(&mut self, t: &PodAffinityTerm, path: &str) {
        match &t.label_selector {
            Some(s) => self.label_selector(s, &format!("{path}.labelSelector")),
            None => self.warn(
                &format!("{path}.labelSelector"),
                warnings::NULL_LABEL_SELECTOR,
            ),
        }
        if let Some(s) = &t.namespace_selector {
            self.label_selector(s, &format!("{path}.namespaceSelector"));
        }
        for (i, ns) in t.namespaces.iter().flatten().enumerate() {
            for m in k8s::dns1123_label(ns) {
                self.err(
                    &format!("{path}.namespaces[{i}]"),
                    format!("Invalid value: {ns:?}: {m}"),
                );
            }
        }
        if t.topology_key.is_empty() {
            self.err(
                &format!("{path}.topologyKey"),
                "Required value: can not be empty",
            );
        } else {
            self.label_name(&t.topology_key, &format!("{path}.topologyKey"));
        }
    }
}
