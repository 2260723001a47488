//! The policy's reading and validation, on small policies.

use super::*;

fn load(s: &str) -> Result<Policy, PolicyErrors> {
    Policy::from_bytes("p.yaml", s.as_bytes())
}

#[test]
fn pool_shorthand_expands() {
    let p = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: x}\nspec:\n  nodePools:\n  - name: gpu\n    labels: {a: b}\n    taints: [{key: k, value: v, effect: NoSchedule}, {key: j, effect: NoExecute}]\n  rules:\n  - name: r\n    pool: gpu\n",
        )
        .unwrap();
    let r = &p.rules[0];
    assert_eq!(r.tolerations.len(), 2);
    assert_eq!(r.tolerations[0].operator.as_deref(), Some("Equal"));
    assert_eq!(r.tolerations[1].operator.as_deref(), Some("Exists"));
    assert_eq!(r.required.len(), 1);
}

#[test]
fn every_error_is_reported_with_its_place() {
    let err = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  rules:\n  - name: r\n    toleration: []\n    tolerations:\n    - {key: a, operator: Equals}\n    - {operator: Equal}\n    nodeSelector: {gpu: true}\n",
        )
        .unwrap_err();
    let msgs: Vec<String> = err.0.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        vec![
            "p.yaml:6:5: spec.rules[0].toleration: unknown field \"toleration\"; did you mean \"tolerations\"?",
            "p.yaml:8:26: spec.rules[0].tolerations[0].operator: Unsupported value: \"Equals\": supported values: \"Equal\", \"Exists\"; did you mean \"Equal\"?",
            "p.yaml:9:18: spec.rules[0].tolerations[1].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            "p.yaml:10:25: spec.rules[0].nodeSelector.gpu: must be a string, got a boolean (true); quote it: \"true\"",
        ]
    );
}

#[test]
fn an_unknown_pool_lists_each_known_pool_once() {
    let err = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  nodePools:\n  - {name: gpu-a, nodes: [a], labels: {x: y}}\n  - {name: gpu-a, nodes: [b], labels: {x: y}}\n  - {name: '', nodes: [c], labels: {x: y}}\n  rules:\n  - {name: r, pool: zzzzzzzz}\n",
        )
        .unwrap_err();
    let last = err.0.last().map(|d| d.to_string()).unwrap_or_default();
    assert_eq!(
        last,
        "p.yaml:9:21: spec.rules[0].pool: unknown node pool \"zzzzzzzz\"; known pools: gpu-a"
    );
}

/// The API server's warnings, at the policy's path: a deprecated key
/// at the key, a value that never matches at the value.
#[test]
fn warnings_point_at_what_draws_them() {
    let p = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  nodePools:\n  - {name: old, labels: {beta.kubernetes.io/os: linux}}\n  rules:\n  - name: r\n    pool: old\n    nodeSelector: {beta.kubernetes.io/arch: amd64}\n    podAnnotations: {scheduler.alpha.kubernetes.io/critical-pod: \"\"}\n    affinity:\n      nodeAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 1\n          preference:\n            matchExpressions:\n            - {key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [us west]}\n      podAntiAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n        - topologyKey: kubernetes.io/hostname\n          labelSelector:\n",
        )
        .unwrap();
    let msgs: Vec<String> = p.warnings.iter().map(|d| d.to_string()).collect();
    let pref = "spec.rules[0].affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0]";
    assert_eq!(
            msgs,
            vec![
                "p.yaml:5:26: spec.nodePools[0].labels[\"beta.kubernetes.io/os\"]: beta.kubernetes.io/os is deprecated since v1.14; use \"kubernetes.io/os\" instead".to_string(),
                "p.yaml:9:20: spec.rules[0].nodeSelector[\"beta.kubernetes.io/arch\"]: deprecated since v1.14; use \"kubernetes.io/arch\" instead".into(),
                "p.yaml:10:22: spec.rules[0].podAnnotations[\"scheduler.alpha.kubernetes.io/critical-pod\"]: non-functional in v1.16+; use the \"priorityClassName\" field instead".into(),
                format!("p.yaml:17:21: {pref}.key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead"),
                format!("p.yaml:17:84: {pref}.values[0]: us west is invalid, {}", warnings::LABEL_VALUE_FORMAT),
                "p.yaml:21:11: spec.rules[0].affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: a null labelSelector results in matching no pod".into(),
            ]
        );
    // A null selector stays null: `{}` would select every pod.
    assert!(
        p.rules[0].pod_anti_affinity_required[0]
            .label_selector
            .is_none()
    );
}

/// As the API server, which warns only about what it accepts.
#[test]
fn an_invalid_policy_has_errors_only() {
    let err = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  rules:\n  - name: r\n    nodeSelector: {beta.kubernetes.io/arch: amd 64}\n",
        )
        .unwrap_err();
    assert_eq!(err.0.len(), 1, "{err}");
    assert!(
        err.0[0].message.starts_with("Invalid value: \"amd 64\""),
        "{err}"
    );
}

#[test]
fn values_of_the_wrong_type_are_one_error_not_also_missing_values() {
    let err = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  rules:\n  - name: r\n    affinity:\n      nodeAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 1\n          preference:\n            matchExpressions:\n            - {key: z, operator: In, values: [1]}\n            - {key: x, operator: In}\n",
        )
        .unwrap_err();
    let msgs: Vec<String> = err.0.iter().map(|d| d.to_string()).collect();
    let base = "spec.rules[0].affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions";
    assert_eq!(
        msgs,
        vec![
            format!(
                "p.yaml:12:47: {base}[0].values[0]: must be a string, got an integer (1); quote it: \"1\""
            ),
            format!(
                "p.yaml:13:15: {base}[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
            ),
        ]
    );
}

/// A pool without labels and taints gives its rules nothing to set: that is
/// said at the pool, naming every rule that only names it; a rule that sets
/// something of its own is fine.
#[test]
fn a_pool_with_nothing_to_give_is_told_at_the_pool() {
    let err = load(
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  nodePools:\n  - {name: gpu, nodes: [a]}\n  rules:\n  - {name: r, pool: gpu}\n  - {name: s, pool: gpu}\n  - {name: t, pool: gpu, nodeSelector: {a: b}}\n",
        )
        .unwrap_err();
    let msgs: Vec<String> = err.0.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        [
            "p.yaml:5:5: spec.nodePools[0]: node pool \"gpu\" has no labels and no taints, so the rules that only name it set nothing (\"r\" at line 7, \"s\" at line 8): give the pool labels or taints (its rules then require the labels and tolerate the taints), or give the rules tolerations, nodeSelector or affinity"
        ]
    );
}

/// What `validate` adds about a valid policy: no name, nothing in it, a
/// pool that selects no node; none of it for a complete policy.
#[test]
fn advice_for_a_valid_policy() {
    let p = load("apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec: {}\n").unwrap();
    let msgs: Vec<String> = p.advice.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        [
            "p.yaml:1:1: no metadata.name: node apply and node diff record what they add under the policy's name and refuse to run without one (the offline commands do not need it)",
            "p.yaml:3:7: spec: the policy has no rules and no node pools: it changes nothing; add rules (spec.rules) or node pools (spec.nodePools)",
        ]
    );
    assert!(p.warnings.is_empty());
    let p = load(
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: x}\nspec:\n  nodePools:\n  - {name: gpu, labels: {a: b}}\n",
    )
    .unwrap();
    let msgs: Vec<String> = p.advice.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        [
            "p.yaml:6:5: spec.nodePools[0]: node pool \"gpu\" selects no nodes (neither nodes nor nodeSelector): node apply and node diff leave it alone, while rules that name it still apply to pipelines; give it nodes or nodeSelector"
        ]
    );
    let p = load(
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: x}\nspec:\n  nodePools:\n  - {name: gpu, nodes: [a], labels: {a: b}}\n",
    )
    .unwrap();
    assert!(p.advice.is_empty(), "{:?}", p.advice);
}

#[test]
fn pod_roles_default_to_executors_and_reach_files_only_through_them() {
    use crate::matching::{PodRole, Subject};
    let p = load(
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: x}\nspec:\n  rules:\n  - name: plain\n    nodeSelector: {a: b}\n  - name: drivers\n    match: {podRoles: [driver, driver]}\n    nodeSelector: {a: b}\n  - name: both\n    match: {podRoles: [driver, executor]}\n    exclude: {podRoles: [importer]}\n    nodeSelector: {a: b}\n  - name: no-executors\n    exclude: {podRoles: [executor]}\n    nodeSelector: {a: b}\n",
    )
    .unwrap();
    let names = vec!["train".to_string()];
    let s = Subject {
        names: &names,
        images: &[],
        pipelines: &[],
        kind: "Workflow",
        role: Some(PodRole::Executor),
    };
    let verdicts: Vec<bool> = p.rules.iter().map(|r| r.judge(&s).selected()).collect();
    assert_eq!(verdicts, [true, false, true, false]);
    assert!(p.rules[0].matcher.reaches(PodRole::Executor));
    assert!(!p.rules[0].matcher.reaches(PodRole::Driver));
    assert_eq!(p.rules[1].matcher.pod_roles, Some(vec![PodRole::Driver]));
    let why = p.rules[1].reason(&p.rules[1].judge(&s), s).unwrap();
    assert!(why.contains("export admission"), "{why}");
    let err = load(
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: x}\nspec:\n  rules:\n  - name: r\n    match: {podRoles: []}\n    nodeSelector: {a: b}\n",
    )
    .unwrap_err();
    assert_eq!(err.0.len(), 1);
    assert_eq!(err.0[0].path, "spec.rules[0].match.podRoles");
}

#[test]
fn pod_spec_fields_are_typed_on_the_rule() {
    let p = load(
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: x}\nspec:\n  rules:\n  - name: r\n    priorityClassName: batch-high\n    schedulerName: volcano\n    runtimeClassName: nvidia\n    topologySpreadConstraints:\n    - maxSkew: 2\n      topologyKey: topology.kubernetes.io/zone\n      whenUnsatisfiable: DoNotSchedule\n      minDomains: 3\n      nodeTaintsPolicy: Honor\n      labelSelector: {matchLabels: {app: train}}\n      matchLabelKeys: [pipelines.kubeflow.org/run_id]\n",
    )
    .unwrap();
    let r = &p.rules[0];
    assert_eq!(r.priority_class_name.as_deref(), Some("batch-high"));
    assert_eq!(r.scheduler_name.as_deref(), Some("volcano"));
    assert_eq!(r.runtime_class_name.as_deref(), Some("nvidia"));
    let t = &r.topology_spread_constraints[0];
    assert_eq!(
        (
            t.max_skew,
            t.topology_key.as_str(),
            t.when_unsatisfiable.as_str()
        ),
        (2, "topology.kubernetes.io/zone", "DoNotSchedule")
    );
    assert_eq!(t.min_domains, Some(3));
    assert_eq!(t.node_taints_policy.as_deref(), Some("Honor"));
    assert_eq!(t.node_affinity_policy, None);
    assert_eq!(
        t.match_label_keys,
        Some(vec!["pipelines.kubeflow.org/run_id".to_string()])
    );
    assert!(r.names_topology_spread);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

/// The server's messages (`validateTopologySpreadConstraints`,
/// `ValidatePodSpec`), at the place in the file that draws each (one per
/// place: the server's second complaint about `minDomains: 0` beside
/// ScheduleAnyway is left out, as the validator leaves out every second
/// error at one place).
#[test]
fn pod_spec_fields_are_validated_as_the_server_validates_a_pod() {
    let err = load(
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  rules:\n  - name: r\n    priorityClassName: High_Priority\n    schedulerName: \"\"\n    runtimeClassName: nvidia.\n    topologySpreadConstraints:\n    - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedul}\n    - {maxSkew: 1, topologyKey: \"\", whenUnsatisfiable: ScheduleAnyway, minDomains: 2}\n    - {maxSkew: 1, topologyKey: h, whenUnsatisfiable: DoNotSchedule, nodeAffinityPolicy: honor, matchLabelKeys: [app]}\n    - {maxSkew: 1, topologyKey: h, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: x}}, matchLabelKeys: [app]}\n    - {maxSkew: 3000000000, topologyKey: a b, whenUnsatisfiable: ScheduleAnyway, minDomains: 0}\n",
    )
    .unwrap_err();
    let msgs: Vec<String> = err.0.iter().map(|d| d.to_string()).collect();
    let t = "spec.rules[0].topologySpreadConstraints";
    let dns = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    assert_eq!(
        msgs,
        vec![
            format!("p.yaml:6:24: spec.rules[0].priorityClassName: Invalid value: \"High_Priority\": {dns}"),
            "p.yaml:7:20: spec.rules[0].schedulerName: Required value: an empty schedulerName sets nothing; name one, or remove the key".to_string(),
            format!("p.yaml:8:23: spec.rules[0].runtimeClassName: Invalid value: \"nvidia.\": {dns}"),
            format!("p.yaml:10:17: {t}[0].maxSkew: Invalid value: 0: must be greater than zero"),
            format!("p.yaml:10:58: {t}[0].whenUnsatisfiable: Unsupported value: \"DoNotSchedul\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"; did you mean \"DoNotSchedule\"?"),
            format!("p.yaml:11:33: {t}[1].topologyKey: Required value: can not be empty"),
            format!("p.yaml:11:84: {t}[1].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"),
            format!("p.yaml:12:90: {t}[2].nodeAffinityPolicy: Unsupported value: \"honor\": supported values: \"Honor\", \"Ignore\"; did you mean \"Honor\"?"),
            format!("p.yaml:12:113: {t}[2].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
            format!("p.yaml:13:7: {t}[3]: Duplicate value: \"{{h, DoNotSchedule}}\""),
            format!("p.yaml:13:127: {t}[3].matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector"),
            format!("p.yaml:14:17: {t}[4].maxSkew: Invalid value: 3000000000: must be no more than 2147483647"),
            format!("p.yaml:14:42: {t}[4].topologyKey: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') (no node can carry such a label; kfsched is stricter than the API server here)"),
            format!("p.yaml:14:94: {t}[4].minDomains: Invalid value: 0: must be greater than zero"),
        ]
    );
}

/// What the server warns about in a pod's topology spread constraints.
#[test]
fn topology_spread_warnings_are_the_servers() {
    let p = load(
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  rules:\n  - name: r\n    topologySpreadConstraints:\n    - {maxSkew: 1, topologyKey: failure-domain.beta.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}\n",
    )
    .unwrap();
    let msgs: Vec<String> = p.warnings.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        vec![
            "p.yaml:7:7: spec.rules[0].topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod".to_string(),
            "p.yaml:7:33: spec.rules[0].topologySpreadConstraints[0].topologyKey: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead".into(),
        ]
    );
}
