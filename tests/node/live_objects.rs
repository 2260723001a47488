//! The seed scenario end to end with the real clients: a policy's node pool
//! applied to a node, then live workloads read with `kubectl get -o yaml`
//! (a `v1 List`), piped through `kubectl kfsched rewrite` (found by kubectl's
//! plugin discovery) into `kubectl replace`; the real scheduler then places the
//! selected workload's new pod on the pool's node.

use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use kube::api::Api;

use super::cluster::*;

/// Runs a bash pipeline with kubectl (and the plugin) on PATH.
fn pipeline(script: &str, kubeconfig: &std::path::Path) -> Run {
    let path = tool_path();
    let out = Command::new("bash")
        .args(["-c", &format!("set -euo pipefail; {script}")])
        .env_clear()
        .env("PATH", path)
        .env("HOME", std::env::temp_dir())
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("bash runs");
    Run::from(out)
}

#[test]
#[ignore = "needs the control plane: scripts/cluster.sh start"]
fn live_workloads_piped_through_rewrite_land_on_the_pool() {
    // The policy's name is unique, so its `node apply` plans only its own
    // nodes and those carrying its own records.
    let _guard = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let id = unique("live");
        let ns = id.clone();
        create_namespace(&client, &ns).await;
        let nodes = create_nodes(&client, &id, 2, &[]).await;
        let pool_node = &nodes.names[0];
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = dir.path().join("policy.yaml");
        std::fs::write(
            &policy,
            format!(
                "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {{name: {id}}}
spec:
  nodePools:
  - name: experiment
    nodes: [{pool_node}]
    labels: {{key: {id}}}
    taints:
    - {{key: key, value: {id}, effect: NoSchedule}}
  rules:
  - name: training
    match: {{names: [train, nightly-*]}}
    pool: experiment
"
            ),
        )
        .expect("policy");
        let p = policy.display();
        pipeline(
            &format!(
                "kubectl kfsched node apply -p {p}
                 kubectl -n {ns} create deployment serve --image=nginx
                 kubectl -n {ns} create deployment train --image=pytorch/pytorch:2.3
                 kubectl -n {ns} create cronjob nightly-train --image=pytorch/pytorch:2.3 --schedule='0 2 * * *' -- python train.py
                 # Until the rollouts settle the deployment controller keeps
                 # writing their status, and a replace of what was read
                 # before that fails with a Conflict (it did once in CI).
                 kubectl -n {ns} rollout status deployment/serve deployment/train --timeout=90s"
            ),
            &c.admin,
        )
        .ok();
        assert_eq!(taints(&client, pool_node).await, [format!("key={id}:NoSchedule")]);

        // The whole namespace (ConfigMap included) through the plugin and
        // back with `kubectl replace`: the items keep their resourceVersion,
        // so a change made since the `get` fails the replace instead of
        // being overwritten.
        let r = pipeline(
            &format!(
                "kubectl -n {ns} get deploy,cronjob,configmap -o yaml | kubectl kfsched rewrite -p {p} | kubectl replace -f -"
            ),
            &c.admin,
        );
        r.ok();
        assert_eq!(
            r.stdout,
            "deployment.apps/serve replaced\ndeployment.apps/train replaced\n\
             cronjob.batch/nightly-train replaced\nconfigmap/kube-root-ca.crt replaced\n",
            "stderr: {}",
            r.stderr
        );
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
        let get = |name: &'static str| {
            let deployments = deployments.clone();
            async move { deployments.get(name).await.expect(name) }
        };
        // Only train's pod template changed: serve's spec is untouched.
        let (serve, train) = (get("serve").await, get("train").await);
        assert_eq!(
            (serve.metadata.generation, train.metadata.generation),
            (Some(1), Some(2))
        );
        let pod_spec = |d: Deployment| d.spec.and_then(|s| s.template.spec).expect("pod spec");
        let serve = pod_spec(serve);
        assert_eq!((serve.tolerations, serve.affinity), (None, None));
        let train = pod_spec(train);
        let want_toleration = serde_json::json!([
            {"key": "key", "operator": "Equal", "value": id, "effect": "NoSchedule"}
        ]);
        let want_affinity = serde_json::json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "key", "operator": "In", "values": [id]}]}
            ]}
        }});
        assert_eq!(serde_json::to_value(&train.tolerations).expect("json"), want_toleration);
        assert_eq!(serde_json::to_value(&train.affinity).expect("json"), want_affinity);
        let cron: Api<CronJob> = Api::namespaced(client.clone(), &ns);
        let job = cron
            .get("nightly-train")
            .await
            .expect("cronjob")
            .spec
            .job_template
            .spec
            .and_then(|s| s.template.spec)
            .expect("job pod spec");
        assert_eq!(serde_json::to_value(&job.tolerations).expect("json"), want_toleration);
        assert_eq!(serde_json::to_value(&job.affinity).expect("json"), want_affinity);

        // The real scheduler puts train's new pod on the pool node.
        eventually("train's pod Ready on the pool node", WAIT, || {
            let client = client.clone();
            let ns = ns.clone();
            let pool_node = pool_node.clone();
            async move {
                let ps = pods(&client, &ns).await;
                let mut train = ps.iter().filter(|p| {
                    p.metadata
                        .labels
                        .as_ref()
                        .is_some_and(|l| l.get("app").is_some_and(|a| a == "train"))
                        && p.spec.as_ref().is_some_and(|s| s.tolerations.as_ref().is_some_and(|t| t.iter().any(|t| t.key.as_deref() == Some("key"))))
                });
                train
                    .any(|p| is_ready(p) && node_of(p) == pool_node)
                    .then_some(())
            }
        })
        .await;
        // Nothing else may run there.
        for p in pods(&client, &ns).await {
            let app = p.metadata.labels.as_ref().and_then(|l| l.get("app")).cloned();
            if app.as_deref() == Some("serve") {
                assert_ne!(&node_of(&p), pool_node, "serve landed on the tainted pool node");
            }
        }

        // Read back live, the objects are what the policy asks: nothing to do.
        pipeline(
            &format!(
                "kubectl -n {ns} get deploy,cronjob -o json | kubectl kfsched rewrite --check -p {p} >/dev/null"
            ),
            &c.admin,
        )
        .ok();
        delete_namespace(&client, &ns).await;
        delete_nodes(&client, &nodes).await;
    });
}
