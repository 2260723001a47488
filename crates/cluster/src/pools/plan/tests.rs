use super::*;
use k8s_openapi::api::core::v1::NodeSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: p}\nspec:\n  nodePools:\n  - name: gpu\n    nodes: [\"gpu-*\"]\n    nodeSelector: \"accelerator=a100\"\n    labels: {kfsched.dev/pool: gpu}\n    taints:\n    - {key: kfsched.dev/pool, value: gpu, effect: NoSchedule}\n";

fn node(name: &str, labels: &[(&str, &str)], taints: &[&str], managed: Option<&str>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            annotations: managed.map(|m| [(MANAGED_ANNOTATION.to_string(), m.to_string())].into()),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: Some(taints.iter().filter_map(|t| taint_from(t)).collect()),
            ..Default::default()
        }),
        status: None,
    }
}

fn policy() -> Policy {
    Policy::from_bytes("p.yaml", POLICY.as_bytes()).unwrap()
}

/// Policy `p` once it declares no pools.
fn no_pools() -> Policy {
    Policy::from_bytes(
            "p.yaml",
            b"apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: p}\nspec:\n  rules: []\n",
        )
        .unwrap()
}

#[test]
fn names_or_selector_select() {
    let p = policy();
    assert!(selects(&p.pools[0], &node("gpu-1", &[], &[], None)));
    assert!(selects(
        &p.pools[0],
        &node("w", &[("accelerator", "a100")], &[], None)
    ));
    assert!(!selects(&p.pools[0], &node("w", &[], &[], None)));
}

#[test]
fn apply_adds_and_records() {
    let p = policy();
    let n = node("gpu-1", &[], &[], None);
    let plan = plan_node(&n, &desired(&p, &n).unwrap(), &PoolOptions::default());
    assert_eq!(plan.differences(), 2);
    let patch = plan.patch.unwrap();
    assert_eq!(patch["metadata"]["labels"]["kfsched.dev/pool"], "gpu");
    assert_eq!(
        patch["metadata"]["annotations"][MANAGED_ANNOTATION],
        r#"{"policies":{"p":{"labels":{"kfsched.dev/pool":"gpu"},"taints":["kfsched.dev/pool=gpu:NoSchedule"]}}}"#
    );
}

#[test]
fn existing_values_are_not_recorded_and_others_need_overwrite() {
    let p = policy();
    let n = node(
        "gpu-1",
        &[("kfsched.dev/pool", "gpu")],
        &["kfsched.dev/pool=cpu:NoSchedule"],
        None,
    );
    let plan = plan_node(&n, &desired(&p, &n).unwrap(), &PoolOptions::default());
    assert_eq!(plan.conflicts().len(), 1);
    assert!(plan.patch.is_none());
    let o = PoolOptions {
        overwrite: true,
        ..Default::default()
    };
    let plan = plan_node(&n, &desired(&p, &n).unwrap(), &o);
    let patch = plan.patch.unwrap();
    assert_eq!(
        patch["metadata"]["annotations"][MANAGED_ANNOTATION],
        r#"{"policies":{"p":{"taints":["kfsched.dev/pool=gpu:NoSchedule"]}}}"#
    );
}

#[test]
fn prune_removes_only_what_apply_added() {
    let p = policy();
    let n = node(
        "gpu-1",
        &[("kfsched.dev/pool", "gpu"), ("old", "x"), ("mine", "y")],
        &["kfsched.dev/pool=gpu:NoSchedule", "old=x:NoExecute"],
        Some(
            r#"{"policies":{"p":{"labels":{"kfsched.dev/pool":"gpu","old":"x","gone":"z"},"taints":["kfsched.dev/pool=gpu:NoSchedule","old=x:NoExecute"]}}}"#,
        ),
    );
    let d = desired(&p, &n).unwrap();
    let plan = plan_node(&n, &d, &PoolOptions::default());
    // `node diff` says that only the record changes.
    assert_eq!(
        plan.changes.last().map(Change::render).as_deref(),
        Some(
            "~ record kfsched.dev/managed: - label gone=z (changed or removed since) (labels and taints stay as they are)"
        )
    );
    assert_eq!(plan.node_differences(), 0, "{:?}", plan.changes);
    // `gone` is no longer on the node: only the record is written.
    assert_eq!(
        plan.patch,
        Some(json!({"metadata": {"annotations": {MANAGED_ANNOTATION:
                r#"{"policies":{"p":{"labels":{"kfsched.dev/pool":"gpu","old":"x"},"taints":["kfsched.dev/pool=gpu:NoSchedule","old=x:NoExecute"]}}}"#}}}))
    );
    let o = PoolOptions {
        prune: true,
        ..Default::default()
    };
    let plan = plan_node(&n, &d, &o);
    assert_eq!(plan.differences(), 2, "{:?}", plan.changes);
    let patch = plan.patch.unwrap();
    assert_eq!(patch["metadata"]["labels"], json!({"old": null}));
    assert_eq!(patch["spec"]["taints"].as_array().unwrap().len(), 1);
    assert_eq!(
        patch["metadata"]["annotations"][MANAGED_ANNOTATION],
        r#"{"policies":{"p":{"labels":{"kfsched.dev/pool":"gpu"},"taints":["kfsched.dev/pool=gpu:NoSchedule"]}}}"#
    );
}

/// Team A's policy `p` owns gpu-*; team B's `other` owns cpu-*. Each
/// apply keeps the other's entries, and neither prunes the other's.
#[test]
fn two_policies_keep_their_own_records() {
    let p = policy();
    let record = r#"{"policies":{"other":{"labels":{"team":"b"},"taints":["team=b:NoSchedule"]},"p":{"labels":{"old":"x"}}}}"#;
    let n = node(
        "gpu-1",
        &[("team", "b"), ("old", "x")],
        &["team=b:NoSchedule"],
        Some(record),
    );
    let o = PoolOptions {
        prune: true,
        ..Default::default()
    };
    let plan = plan_node(&n, &desired(&p, &n).unwrap(), &o);
    // p's stale `old` goes; `other`'s label and taint stay on the node
    // and in the record.
    assert_eq!(
        plan.changes,
        [
            Change::AddLabel {
                key: "kfsched.dev/pool".into(),
                value: "gpu".into()
            },
            Change::RemoveLabel {
                key: "old".into(),
                value: "x".into()
            },
            Change::AddTaint("kfsched.dev/pool=gpu:NoSchedule".into()),
        ]
    );
    let patch = plan.patch.unwrap();
    assert_eq!(
        patch["metadata"]["labels"],
        json!({"kfsched.dev/pool": "gpu", "old": null})
    );
    assert_eq!(
        patch["spec"]["taints"].as_array().unwrap().len(),
        2,
        "{patch}"
    );
    assert_eq!(
        patch["metadata"]["annotations"][MANAGED_ANNOTATION],
        r#"{"policies":{"other":{"labels":{"team":"b"},"taints":["team=b:NoSchedule"]},"p":{"labels":{"kfsched.dev/pool":"gpu"},"taints":["kfsched.dev/pool=gpu:NoSchedule"]}}}"#
    );

    // A node of `other`'s alone is not planned by `p` at all, even with --prune.
    let cpu = node(
        "cpu-1",
        &[("team", "b")],
        &["team=b:NoSchedule"],
        Some(r#"{"policies":{"other":{"labels":{"team":"b"},"taints":["team=b:NoSchedule"]}}}"#),
    );
    let plans = plan_all(
        &p,
        &[Fetched {
            node: cpu.clone(),
            raw: Json::Null,
        }],
        &o,
    )
    .unwrap();
    assert!(plans.is_empty(), "{plans:?}");

    // The last entry of `p` removed: `other`'s record is what remains.
    let none = no_pools();
    let gpu = node("gpu-1", &[("team", "b"), ("old", "x")], &[], Some(record));
    let plan = plan_node(&gpu, &desired(&none, &gpu).unwrap(), &o);
    assert_eq!(
        plan.patch.unwrap()["metadata"]["annotations"][MANAGED_ANNOTATION],
        r#"{"policies":{"other":{"labels":{"team":"b"},"taints":["team=b:NoSchedule"]}}}"#
    );
}

#[test]
fn a_conflict_names_the_policy_that_added_the_value() {
    let p = policy();
    let n = node(
        "gpu-1",
        &[("kfsched.dev/pool", "cpu")],
        &[],
        Some(r#"{"policies":{"other":{"labels":{"kfsched.dev/pool":"cpu"}}}}"#),
    );
    let plan = plan_node(&n, &desired(&p, &n).unwrap(), &PoolOptions::default());
    let c: Vec<String> = plan.conflicts().iter().map(|c| c.render()).collect();
    assert_eq!(
        c,
        [
            r#"! label kfsched.dev/pool=cpu (added by policy "other"): pool "gpu" wants kfsched.dev/pool=gpu (use --overwrite to replace it)"#
        ]
    );
}

/// kfsched 0.1 wrote one record without policy names: the first policy
/// to apply takes it as its own and rewrites it.
#[test]
fn a_record_without_policy_names_is_taken_and_rewritten() {
    let p = policy();
    let n = node(
        "gpu-1",
        &[("kfsched.dev/pool", "gpu")],
        &["kfsched.dev/pool=gpu:NoSchedule"],
        Some(
            r#"{"labels":{"kfsched.dev/pool":"gpu"},"taints":["kfsched.dev/pool=gpu:NoSchedule"]}"#,
        ),
    );
    let plan = plan_node(&n, &desired(&p, &n).unwrap(), &PoolOptions::default());
    assert_eq!(
        plan.changes,
        [Change::Record(vec![
            "+ label kfsched.dev/pool=gpu (from an older kfsched's record)".into(),
            "+ taint kfsched.dev/pool=gpu:NoSchedule (from an older kfsched's record)".into(),
        ])]
    );
    assert_eq!(
        plan.patch,
        Some(json!({"metadata": {"annotations": {MANAGED_ANNOTATION:
                r#"{"policies":{"p":{"labels":{"kfsched.dev/pool":"gpu"},"taints":["kfsched.dev/pool=gpu:NoSchedule"]}}}"#}}}))
    );
}

/// Entries of a 0.1 record the policy does not declare stay unowned
/// (under `""`): no policy prunes them, and a policy whose pools do not
/// select the node leaves the node alone.
#[test]
fn undeclared_entries_of_an_old_record_stay_unowned() {
    let p = policy();
    let old = r#"{"labels":{"kfsched.dev/pool":"gpu","team":"a"},"taints":["team=a:NoSchedule"]}"#;
    let n = node(
        "gpu-1",
        &[("kfsched.dev/pool", "gpu"), ("team", "a")],
        &["kfsched.dev/pool=gpu:NoSchedule", "team=a:NoSchedule"],
        Some(old),
    );
    let o = PoolOptions {
        prune: true,
        ..Default::default()
    };
    let plan = plan_node(&n, &desired(&p, &n).unwrap(), &o);
    assert_eq!(
        plan.changes,
        [Change::Record(vec![
            "+ label kfsched.dev/pool=gpu (from an older kfsched's record)".into()
        ])]
    );
    assert_eq!(
        plan.patch,
        Some(json!({"metadata": {"annotations": {MANAGED_ANNOTATION:
                r#"{"policies":{"":{"labels":{"team":"a"},"taints":["team=a:NoSchedule"]},"p":{"labels":{"kfsched.dev/pool":"gpu"}}}}"#}}}))
    );
    // A node p's pools do not select is not planned: its record stays as it is.
    let cpu = node("cpu-1", &[("team", "a")], &["team=a:NoSchedule"], Some(old));
    let plans = plan_all(
        &p,
        &[Fetched {
            node: cpu,
            raw: Json::Null,
        }],
        &o,
    )
    .unwrap();
    assert!(plans.is_empty(), "{plans:?}");
}

/// A value two policies declare is recorded by both, and the one that
/// drops it leaves it on the node while the other still records it.
#[test]
fn a_value_two_policies_declare_survives_one_prune() {
    let p = policy();
    let n = node(
        "gpu-1",
        &[("kfsched.dev/pool", "gpu")],
        &["kfsched.dev/pool=gpu:NoSchedule"],
        Some(
            r#"{"policies":{"other":{"labels":{"kfsched.dev/pool":"gpu"},"taints":["kfsched.dev/pool=gpu:NoSchedule"]}}}"#,
        ),
    );
    let plan = plan_node(&n, &desired(&p, &n).unwrap(), &PoolOptions::default());
    assert_eq!(plan.node_differences(), 0);
    assert_eq!(
        plan.changes.last().map(Change::render).as_deref(),
        Some(
            "~ record kfsched.dev/managed: + label kfsched.dev/pool=gpu (recorded by policy \"other\" too), + taint kfsched.dev/pool=gpu:NoSchedule (recorded by policy \"other\" too) (labels and taints stay as they are)"
        )
    );
    let both = r#"{"policies":{"other":{"labels":{"kfsched.dev/pool":"gpu"},"taints":["kfsched.dev/pool=gpu:NoSchedule"]},"p":{"labels":{"kfsched.dev/pool":"gpu"},"taints":["kfsched.dev/pool=gpu:NoSchedule"]}}}"#;
    assert_eq!(
        plan.patch.unwrap()["metadata"]["annotations"][MANAGED_ANNOTATION],
        both
    );
    // p drops its pool and prunes: nothing leaves the node.
    let none = no_pools();
    let n = node(
        "gpu-1",
        &[("kfsched.dev/pool", "gpu")],
        &["kfsched.dev/pool=gpu:NoSchedule"],
        Some(both),
    );
    let o = PoolOptions {
        prune: true,
        ..Default::default()
    };
    let plan = plan_node(&n, &desired(&none, &n).unwrap(), &o);
    assert_eq!(
            plan.changes,
            [Change::Record(vec![
                "- label kfsched.dev/pool=gpu (policy \"other\" still records it, so it stays)".into(),
                "- taint kfsched.dev/pool=gpu:NoSchedule (policy \"other\" still records it, so it stays)".into(),
            ])]
        );
    let patch = plan.patch.unwrap();
    assert!(
        patch["metadata"].get("labels").is_none() && patch.get("spec").is_none(),
        "{patch}"
    );
    assert_eq!(
        patch["metadata"]["annotations"][MANAGED_ANNOTATION],
        r#"{"policies":{"other":{"labels":{"kfsched.dev/pool":"gpu"},"taints":["kfsched.dev/pool=gpu:NoSchedule"]}}}"#
    );
}

/// A record kfsched cannot read is not overwritten (it may hold other
/// policies' entries): the node is refused until it is fixed.
#[test]
fn an_unreadable_record_refuses_the_node() {
    let p = policy();
    let n = node("gpu-1", &[], &[], Some("{not json"));
    let plan = plan_node(&n, &desired(&p, &n).unwrap(), &PoolOptions::default());
    assert!(plan.patch.is_none());
    let c: Vec<String> = plan.conflicts().iter().map(|c| c.render()).collect();
    assert_eq!(c.len(), 1);
    assert!(
            c[0].starts_with("! annotation kfsched.dev/managed is not a kfsched record (")
                && c[0].ends_with("nothing is written on this node until it is fixed or removed (kubectl annotate node gpu-1 kfsched.dev/managed-)"),
            "{}",
            c[0]
        );
}

#[test]
fn pools_need_a_policy_name() {
    let unnamed = Policy::from_bytes(
            "p.yaml",
            b"apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  nodePools:\n  - name: gpu\n    labels: {a: b}\n",
        )
        .unwrap();
    assert_eq!(
        require_name(&unnamed).unwrap_err().to_string(),
        "p.yaml:1:1: metadata.name: Required value: node apply and node diff record what they add under the policy's name (annotation kfsched.dev/managed); give the policy a metadata.name"
    );
    assert!(require_name(&policy()).is_ok());
}

#[test]
fn pools_that_disagree_are_an_error() {
    let two = format!(
        "{POLICY}  - name: cpu\n    nodes: [\"gpu-1\"]\n    labels: {{kfsched.dev/pool: cpu}}\n"
    );
    let p = Policy::from_bytes("p.yaml", two.as_bytes()).unwrap();
    let e = desired(&p, &node("gpu-1", &[], &[], None)).unwrap_err();
    assert!(e.message.contains("pools \"gpu\" and \"cpu\""), "{e}");
}

#[test]
fn a_pool_that_selects_a_label_another_pool_adds_is_planned_in_one_go() {
    // `monitored` selects what `gpu` labels; listed first, it still
    // takes gpu-1 in the same apply.
    let chained = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: p}
spec:
  nodePools:
  - name: monitored
    nodeSelector: kfsched.dev/pool=gpu
    labels: {example.com/monitoring: dcgm}
  - name: gpu
    nodes: [\"gpu-*\"]
    labels: {kfsched.dev/pool: gpu}
  rules: []
";
    let p = Policy::from_bytes("p.yaml", chained.as_bytes()).unwrap();
    let d = desired(&p, &node("gpu-1", &[], &[], None)).unwrap();
    assert_eq!(d.pools, ["monitored", "gpu"]);
    assert!(d.labels.contains_key("example.com/monitoring"));
    let d = desired(&p, &node("cpu-1", &[], &[], None)).unwrap();
    assert!(d.pools.is_empty());
}
