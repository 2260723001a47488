//! A `NoExecute` taint written by `node taint` does what Kubernetes says it
//! does, enforced by the real taint-eviction controller: pods that do not
//! tolerate it are evicted at once, a pod tolerating it for
//! `tolerationSeconds` goes after that time, a pod tolerating it stays, and
//! a Deployment's pod is recreated by the real scheduler on a node without
//! the taint.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::cluster::{
    WAIT, cluster, create, create_namespace, create_nodes, delete_namespace, delete_nodes,
    eventually, get_node, is_ready, node_of, pods, rt, shared, unique,
};

fn bare_pod(name: &str, node: &str, toleration: Option<serde_json::Value>) -> serde_json::Value {
    let mut spec = json!({
        "nodeName": node,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "example.invalid/app:1"}],
    });
    if let Some(t) = toleration {
        spec["tolerations"] = json!([t]);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

/// The names of the pods that exist and are not being deleted.
async fn live(client: &kube::Client, ns: &str) -> Vec<String> {
    let mut v: Vec<String> = pods(client, ns)
        .await
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.metadata.name)
        .collect();
    v.sort();
    v
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn a_no_execute_taint_evicts_what_does_not_tolerate_it() {
    let _g = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let id = unique("noexec");
        let nodes = create_nodes(&client, &id, 2, &[]).await;
        let (tainted, other) = (&nodes.names[0], &nodes.names[1]);
        create_namespace(&client, &id).await;

        // The Deployment's pod lands on `tainted` (the other is cordoned).
        c.kfsched("cordon", &[other]).ok();
        let _: Deployment = create(
            &client,
            &id,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                        "nodeSelector": {"kfsched-test": id},
                        "terminationGracePeriodSeconds": 0,
                        "containers": [{"name": "c", "image": "example.invalid/app:1"}],
                    }},
                },
            }),
        )
        .await;
        let toleration = |seconds: Option<i64>| {
            let mut t = json!({"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoExecute"});
            if let Some(s) = seconds {
                t["tolerationSeconds"] = json!(s);
            }
            t
        };
        let _: Pod = create(&client, &id, bare_pod("plain", tainted, None)).await;
        let _: Pod = create(&client, &id, bare_pod("tolerates", tainted, Some(toleration(None)))).await;
        let _: Pod = create(&client, &id, bare_pod("for-a-while", tainted, Some(toleration(Some(4))))).await;
        eventually("4 Ready pods on the node", WAIT, || async {
            let p = pods(&client, &id).await;
            (p.iter().filter(|p| is_ready(p) && node_of(p) == *tainted).count() == 4).then_some(())
        })
        .await;
        c.kfsched("uncordon", &[other]).ok();

        let start = Instant::now();
        c.kfsched("taint", &[tainted, "dedicated=x:NoExecute"]).ok();
        let node = get_node(&client, tainted).await;
        let taint = node
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .into_iter()
            .find(|t| t.key == "dedicated")
            .expect("the taint");
        assert!(taint.time_added.is_some(), "NoExecute taints carry timeAdded, as kubectl writes them");

        // `plain` and the Deployment's pod go at once; `for-a-while` after 4 s.
        eventually("plain and the Deployment's pod evicted", WAIT, || async {
            let names = live(&client, &id).await;
            let web_on_tainted = pods(&client, &id).await.iter().any(|p| {
                p.metadata.deletion_timestamp.is_none()
                    && p.metadata.name.as_deref().is_some_and(|n| n.starts_with("web-"))
                    && node_of(p) == *tainted
            });
            (!names.contains(&"plain".to_string()) && !web_on_tainted).then_some(())
        })
        .await;
        eventually("for-a-while evicted", WAIT, || async {
            (!live(&client, &id).await.contains(&"for-a-while".to_string())).then_some(())
        })
        .await;
        assert!(
            start.elapsed() >= Duration::from_secs(4),
            "for-a-while went after {:?}, before its tolerationSeconds",
            start.elapsed()
        );
        // The replacement runs on the node without the taint; `tolerates` stays.
        let web = eventually("the Deployment's new pod Ready", WAIT, || async {
            pods(&client, &id)
                .await
                .into_iter()
                .find(|p| is_ready(p) && p.metadata.name.as_deref().is_some_and(|n| n.starts_with("web-")))
        })
        .await;
        assert_eq!(node_of(&web), *other);
        let names = live(&client, &id).await;
        assert!(names.contains(&"tolerates".to_string()), "{names:?}");
        assert!(!names.contains(&"plain".to_string()), "{names:?}");

        // Removing the taint evicts nothing more.
        c.kfsched("taint", &[tainted, "dedicated:NoExecute-"]).ok();
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(live(&client, &id).await.contains(&"tolerates".to_string()));
        delete_namespace(&client, &id).await;
        delete_nodes(&client, &nodes).await;
    });
}
