//! The API server's warnings about what a policy puts into a pod: content
//! that Kubernetes accepts but that is deprecated or can never take effect
//! (`pkg/api/pod/warnings.go` and `pkg/api/node/util.go` of Kubernetes
//! 1.36). The texts are the server's; the validator puts them at the
//! policy's own path and position. Annotations: [`super::annotations`].

/// Node label keys the server calls deprecated wherever a pod selects nodes
/// by them (`deprecatedNodeLabels`), with its message.
const DEPRECATED_NODE_LABELS: &[(&str, &str)] = &[
    (
        "beta.kubernetes.io/arch",
        r#"deprecated since v1.14; use "kubernetes.io/arch" instead"#,
    ),
    (
        "beta.kubernetes.io/os",
        r#"deprecated since v1.14; use "kubernetes.io/os" instead"#,
    ),
    (
        "failure-domain.beta.kubernetes.io/region",
        r#"deprecated since v1.17; use "topology.kubernetes.io/region" instead"#,
    ),
    (
        "failure-domain.beta.kubernetes.io/zone",
        r#"deprecated since v1.17; use "topology.kubernetes.io/zone" instead"#,
    ),
    (
        "beta.kubernetes.io/instance-type",
        r#"deprecated since v1.17; use "node.kubernetes.io/instance-type" instead"#,
    ),
    ("app.kubernetes.io/created-by", "deprecated since v1.9"),
    (
        "scheduler.alpha.kubernetes.io/preferAvoidPods",
        "deprecated since v1.22; use Taints and Tolerations instead",
    ),
    (
        "node-role.kubernetes.io/master",
        r#"use "node-role.kubernetes.io/control-plane" instead"#,
    ),
];

/// Why a node label key is deprecated, when it is.
pub(crate) fn deprecated_node_label(key: &str) -> Option<&'static str> {
    DEPRECATED_NODE_LABELS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, m)| *m)
}

/// `IsValidLabelValue`'s format message in the server's own words:
/// apimachinery's `RegexError` ends each example with `', '` before it
/// joins them with ` or `, and the warning carries that as it is.
pub(crate) const LABEL_VALUE_FORMAT: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// The server's warning text after the path for a value of a preferred
/// node-affinity expression that is not a valid label value, one per rule
/// it breaks (`GetWarningsForNodeSelectorTerm`): too long, and not in the
/// label value format.
pub(crate) fn invalid_preferred_value(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let too_long = value.len() > 63;
    if too_long {
        out.push(format!("{value} is invalid, must be no more than 63 bytes"));
    }
    // Any message beside the length's is the format's.
    if crate::k8s::label_value(value).len() > usize::from(too_long) {
        out.push(format!("{value} is invalid, {LABEL_VALUE_FORMAT}"));
    }
    out
}

/// The server's warning text after the path for a pod (anti-)affinity term
/// without a label selector.
pub(crate) const NULL_LABEL_SELECTOR: &str = "a null labelSelector results in matching no pod";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_the_servers() {
        assert_eq!(
            deprecated_node_label("beta.kubernetes.io/arch"),
            Some(r#"deprecated since v1.14; use "kubernetes.io/arch" instead"#)
        );
        assert_eq!(deprecated_node_label("kubernetes.io/arch"), None);
        assert_eq!(
            invalid_preferred_value(&"a".repeat(64)),
            vec![format!(
                "{} is invalid, must be no more than 63 bytes",
                "a".repeat(64)
            )]
        );
        assert_eq!(
            invalid_preferred_value(&format!("-{}", "a".repeat(63))).len(),
            2
        );
        assert!(invalid_preferred_value("").is_empty());
        assert_eq!(
            invalid_preferred_value("us west"),
            vec!["us west is invalid, a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string()]
        );
    }
}
