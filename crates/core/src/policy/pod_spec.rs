//! The pod-spec fields a rule sets beside tolerations, node selector and
//! affinity: `priorityClassName`, `schedulerName`, `runtimeClassName` and
//! `topologySpreadConstraints`, validated as the API server validates a
//! pod's (`ValidatePodSpec` and `validateTopologySpreadConstraints` of
//! Kubernetes 1.36, with the server's warnings from `pkg/api/pod`).

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as MetaLabelSelector;
use serde_json::Value as Json;

use super::validate::{Validator, get, typed};
use super::warnings;
use crate::k8s;
use crate::suggest::nearest;

/// What the server's `isNotPositiveErrorMsg` says.
const NOT_POSITIVE: &str = "must be greater than zero";

impl Validator {
    /// `priorityClassName`, `schedulerName` and `runtimeClassName`, in that order.
    pub(super) fn pod_names(&mut self, r: &Json, path: &str) -> [Option<String>; 3] {
        ["priorityClassName", "schedulerName", "runtimeClassName"].map(|key| {
            let value = get(r, key)?.as_str()?.to_string();
            let p = format!("{path}.{key}");
            if value.is_empty() {
                // The server reads "" as unset; in a rule it would set nothing.
                self.err(
                    &p,
                    format!(
                        "Required value: an empty {key} sets nothing; name one, or remove the key"
                    ),
                );
                return Some(value);
            }
            // The server checks the two class names as object names (DNS-1123
            // subdomains); a scheduler name is any string the scheduler's
            // profiles answer to.
            if key != "schedulerName" {
                for m in k8s::dns1123_subdomain(&value) {
                    self.err(&p, format!("Invalid value: {value:?}: {m}"));
                }
            }
            Some(value)
        })
    }

    /// The rule's topology spread constraints.
    pub(super) fn topology_spread(
        &mut self,
        r: &Json,
        path: &str,
    ) -> Vec<TopologySpreadConstraint> {
        let list = get(r, "topologySpreadConstraints")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default();
        let mut out: Vec<TopologySpreadConstraint> = Vec::new();
        for (i, t) in list.iter().enumerate() {
            let tp = format!("{path}.topologySpreadConstraints[{i}]");
            let c = self.spread_constraint(t, &tp);
            // The server reports the first of two with the same pair; the
            // second is the one to remove, so it is reported there.
            if let Some(first) = out.iter().find(|o| {
                o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
            }) {
                if !first.topology_key.is_empty() && !first.when_unsatisfiable.is_empty() {
                    self.err(
                        &tp,
                        format!(
                            "Duplicate value: \"{{{}, {}}}\"",
                            c.topology_key, c.when_unsatisfiable
                        ),
                    );
                }
            }
            out.push(c);
        }
        out
    }

    fn spread_constraint(&mut self, t: &Json, tp: &str) -> TopologySpreadConstraint {
        let int = |k: &str| get(t, k).and_then(Json::as_i64);
        let text = |k: &str| get(t, k).and_then(Json::as_str).map(str::to_string);
        let max_skew = int("maxSkew");
        if let Some(n) = max_skew {
            self.positive(n, &format!("{tp}.maxSkew"));
        }
        let topology_key = text("topologyKey").unwrap_or_default();
        let key_path = format!("{tp}.topologyKey");
        if get(t, "topologyKey").is_some() {
            if topology_key.is_empty() {
                self.err(&key_path, "Required value: can not be empty");
            } else {
                // The server checks only that it is set, but a key that is
                // not a label key is on no node, and every node would fail
                // the constraint.
                for m in k8s::qualified_name(&topology_key) {
                    self.err(
                        &key_path,
                        format!("Invalid value: {topology_key:?}: {m} (no node can carry such a label; kfsched is stricter than the API server here)"),
                    );
                }
                if let Some(m) = warnings::deprecated_node_label(&topology_key) {
                    self.warn(&key_path, format!("{topology_key} is {m}"));
                }
            }
        }
        let when = text("whenUnsatisfiable").unwrap_or_default();
        if get(t, "whenUnsatisfiable").is_some() {
            self.one_of(
                &when,
                &["DoNotSchedule", "ScheduleAnyway"],
                &format!("{tp}.whenUnsatisfiable"),
            );
        }
        let min_domains = int("minDomains");
        if let Some(n) = min_domains {
            let mp = format!("{tp}.minDomains");
            self.positive(n, &mp);
            if when != "DoNotSchedule" && !when.is_empty() {
                self.err(
                    &mp,
                    format!("Invalid value: {n}: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"),
                );
            }
        }
        let mut policies = [None, None];
        for (slot, key) in ["nodeAffinityPolicy", "nodeTaintsPolicy"]
            .iter()
            .enumerate()
        {
            if let Some(v) = text(key) {
                self.one_of(&v, &["Honor", "Ignore"], &format!("{tp}.{key}"));
                policies[slot] = Some(v);
            }
        }
        let [node_affinity_policy, node_taints_policy] = policies;
        let label_selector: Option<MetaLabelSelector> =
            get(t, "labelSelector").map(|s| typed(Some(s)));
        let sp = format!("{tp}.labelSelector");
        match &label_selector {
            Some(s) => self.label_selector(s, &sp),
            None => self.warn(&sp, warnings::NULL_LABEL_SELECTOR),
        }
        let match_label_keys: Option<Vec<String>> =
            get(t, "matchLabelKeys").map(|k| typed(Some(k)));
        self.match_label_keys(
            match_label_keys.as_deref().unwrap_or_default(),
            label_selector.as_ref(),
            &format!("{tp}.matchLabelKeys"),
        );
        TopologySpreadConstraint {
            max_skew: max_skew.and_then(|n| i32::try_from(n).ok()).unwrap_or(0),
            topology_key,
            when_unsatisfiable: when,
            label_selector,
            min_domains: min_domains.and_then(|n| i32::try_from(n).ok()),
            node_affinity_policy,
            node_taints_policy,
            match_label_keys,
        }
    }

    /// `ValidatePositiveField` of an int32 field.
    fn positive(&mut self, n: i64, path: &str) {
        if n <= 0 {
            self.err(path, format!("Invalid value: {n}: {NOT_POSITIVE}"));
        } else if n > i64::from(i32::MAX) {
            self.err(
                path,
                format!("Invalid value: {n}: must be no more than {}", i32::MAX),
            );
        }
    }

    /// `field.NotSupported`, with a did-you-mean.
    fn one_of(&mut self, value: &str, options: &[&str], path: &str) {
        if options.contains(&value) {
            return;
        }
        let hint = nearest(value, options.iter().copied())
            .map(|n| format!("; did you mean {n:?}?"))
            .unwrap_or_default();
        let supported: Vec<String> = options.iter().map(|o| format!("{o:?}")).collect();
        self.err(
            path,
            format!(
                "Unsupported value: {value:?}: supported values: {}{hint}",
                supported.join(", ")
            ),
        );
    }

    /// `matchLabelKeys` (`ValidateMatchLabelKeysAndMismatchLabelKeys`): label
    /// names, only beside a label selector, none the selector names already.
    /// The server merges each key the pod carries into the selector when it
    /// creates the pod and refuses a key it then finds twice; the policy
    /// does not know the pods' labels, so a key the selector names is
    /// refused here whatever they are.
    fn match_label_keys(
        &mut self,
        keys: &[String],
        selector: Option<&MetaLabelSelector>,
        path: &str,
    ) {
        if keys.is_empty() {
            return;
        }
        let Some(selector) = selector else {
            self.err(
                path,
                "Forbidden: must not be specified when labelSelector is not set",
            );
            return;
        };
        for (i, key) in keys.iter().enumerate() {
            let kp = format!("{path}[{i}]");
            self.label_name(key, &kp);
            let in_selector = selector
                .match_labels
                .as_ref()
                .is_some_and(|m| m.contains_key(key))
                || selector
                    .match_expressions
                    .iter()
                    .flatten()
                    .any(|e| &e.key == key);
            if in_selector {
                self.err(
                    &kp,
                    format!(
                        "Invalid value: {key:?}: exists in both matchLabelKeys and labelSelector"
                    ),
                );
            }
        }
    }
}
