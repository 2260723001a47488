//! `audit` on the real control plane: pods created before the export, in
//! and outside the binding's namespaces, admitted and unselected; a pool
//! node whose taint someone removed by hand; the policy file changed after
//! the export. Each is reported as it should be, and audit writes nothing.

use serde_json::{Value as Json, json};

use super::harness::{Scope, kubectl_stdin};
use super::shape;
use crate::node::cluster::{cluster, create_nodes, delete_nodes, rt, run_bin};
use crate::support::root;

fn policy(id: &str, gpu_value: &str) -> String {
    format!(
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {{name: audit-{id}}}\nspec:\n  nodePools:\n  - name: gpu\n    nodes: [\"audit-{id}-*\"]\n    labels: {{kfsched.dev/pool: \"gpu-{id}\"}}\n    taints: [{{key: kfsched.dev/gpu, value: \"true\", effect: NoSchedule}}]\n  rules:\n  - name: fits-on-gpu\n    pool: gpu\n    match: {{names: [\"for-loop-2/for-loop-4/fit\"]}}\n    tolerations: [{{key: kfsched.dev/gpu, value: \"{gpu_value}\", effect: NoSchedule}}]\n"
    )
}

/// The fit executor (selected) and the flip-coin executor (not) of the
/// control-flow fixture, named `name`.
fn pods() -> (Json, Json) {
    let text = std::fs::read_to_string(root().join("testdata/golden/v2/control_flow/plain.yaml"))
        .expect("fixture");
    let all = shape::file_pods(&text);
    let find = |suffix: &str| {
        all.iter()
            .find(|s| {
                s.pod["metadata"]["annotations"]["workflows.argoproj.io/node-name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with(suffix))
            })
            .expect("the pod")
            .pod
            .clone()
    };
    (find(".fit.executor"), find(".flip-coin.executor"))
}

async fn create(scope: &Scope, ns: &str, name: &str, pod: &Json) {
    let mut pod = pod.clone();
    pod["metadata"]["name"] = json!(name);
    pod["metadata"]["namespace"] = json!(ns);
    let p: k8s_openapi::api::core::v1::Pod = serde_json::from_value(pod).expect("a pod");
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(scope.client.clone(), ns);
    api.create(&kube::api::PostParams::default(), &p)
        .await
        .expect("create the pod");
}

/// The findings about this test's objects, by resource.
fn findings(scope: &Scope, p: &str) -> (i32, Vec<(String, String, String)>) {
    let admin = scope.cluster.admin.display().to_string();
    let r = run_bin(
        &[
            "audit",
            "-p",
            p,
            "--kubeconfig",
            &admin,
            "--name-prefix",
            &scope.prefix,
            "-o",
            "json",
        ],
        &[],
    );
    assert!(
        r.code == 0 || r.code == 1,
        "audit: exit {}: {}",
        r.code,
        r.stderr
    );
    let j: Json = serde_json::from_str(&r.stdout).expect("audit's JSON");
    let mine = j["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| {
            let ns = f["namespace"].as_str().unwrap_or_default();
            let name = f["name"].as_str().unwrap_or_default();
            ns == scope.namespace || ns == scope.bare || name.contains(&scope.id)
        })
        .map(|f| {
            (
                format!(
                    "{}/{}",
                    f["kind"].as_str().unwrap_or_default(),
                    f["name"].as_str().unwrap_or_default()
                ),
                f["result"].as_str().unwrap_or_default().to_string(),
                f["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    (r.code, mine)
}

fn find<'a>(all: &'a [(String, String, String)], what: &str) -> &'a (String, String, String) {
    all.iter()
        .find(|(r, _, _)| r == what)
        .unwrap_or_else(|| panic!("no finding for {what}: {all:#?}"))
}

#[test]
#[ignore = "needs the test control plane (scripts/test.sh)"]
fn audit_reports_what_the_cluster_did_with_the_policy() {
    let _shared = crate::node::cluster::shared();
    rt().block_on(async {
        let scope = Scope::new(cluster(), "audit").await;
        let id = scope.id.clone();
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("policy.yaml");
        std::fs::write(&file, policy(&id, "true")).expect("write");
        let p = file.display().to_string();
        let admin = scope.cluster.admin.display().to_string();
        let (fit, flip) = pods();

        // A pool node, applied, then its taint removed by hand.
        let nodes = create_nodes(&scope.client, &format!("audit-{id}"), 1, &[]).await;
        let node = nodes.names[0].clone();
        let applied = run_bin(&["node", "apply", "-p", &p, "--kubeconfig", &admin], &[]);
        assert_eq!(applied.code, 0, "{}", applied.stderr);

        // Before the export: nothing on the cluster, a pod created unadmitted.
        create(&scope, &scope.namespace, "fit-before", &fit).await;
        let (code, before) = findings(&scope, &p);
        assert_eq!(code, 1);
        let policy_name = format!("MutatingAdmissionPolicy/{}audit-{id}", scope.prefix);
        let (_, result, message) = find(&before, &policy_name);
        assert_eq!(result, "fail");
        assert!(message.starts_with("missing: "), "{message}");
        assert_eq!(find(&before, &format!("Node/{node}")).1, "pass");

        // The export, then pods in and outside its namespaces.
        let yaml = scope.export(&["-p", &p]);
        scope.apply(&yaml);
        scope.until_active(&fit).await;
        create(&scope, &scope.namespace, "fit-admitted", &fit).await;
        create(&scope, &scope.namespace, "flip-admitted", &flip).await;
        create(&scope, &scope.bare, "fit-outside", &fit).await;
        kubectl_stdin(
            &scope.cluster,
            &["taint", "node", &node, "kfsched.dev/gpu-"],
            "",
            0,
        );
        let rv = |what: &str| {
            kubectl_stdin(
                &scope.cluster,
                &["get", what, "-o", "jsonpath={.metadata.resourceVersion}"],
                "",
                0,
            )
        };
        let node_rv = rv(&format!("node/{node}"));
        let policy_rv = rv(&format!(
            "mutatingadmissionpolicy/{}audit-{id}",
            scope.prefix
        ));

        let (code, after) = findings(&scope, &p);
        assert_eq!(code, 1, "{after:#?}");
        // Admitted: it carries what its rule asks, bound to the pool's node
        // or still Pending (a warning with the scheduler's reason).
        let (_, result, message) = find(&after, "Pod/fit-admitted");
        assert!(
            (result == "pass" && message.contains(&format!("on node {node}")))
                || (result == "warn" && message.contains("; Pending (")),
            "{result}: {message}"
        );
        assert!(
            message.contains(": carries what its rules ask"),
            "{message}"
        );
        let (_, result, message) = find(&after, "Pod/fit-before");
        assert_eq!(result, "fail");
        assert!(message.contains("did not admit it"), "{message}");
        let (_, result, message) = find(&after, "Pod/fit-outside");
        assert_eq!(result, "fail");
        assert!(
            message.contains("outside the binding's namespaces"),
            "{message}"
        );
        assert!(
            !after.iter().any(|(r, _, _)| r == "Pod/flip-admitted"),
            "a pod no rule selects is not a finding: {after:#?}"
        );
        let (_, result, message) = find(&after, &format!("Node/{node}"));
        assert_eq!(result, "fail");
        assert!(message.contains("kfsched.dev/gpu"), "{message}");
        assert_eq!(find(&after, &policy_name).1, "pass");

        // The policy file changed after the export.
        std::fs::write(&file, policy(&id, "yes")).expect("write");
        let (_, changed) = findings(&scope, &p);
        let (_, result, message) = find(&changed, &policy_name);
        assert_eq!(result, "fail");
        assert!(message.starts_with("stale: "), "{message}");
        let (_, result, message) = find(&changed, "Pod/fit-admitted");
        assert_eq!(result, "fail", "{message}");
        assert!(message.contains("though policy"), "{message}");

        // PolicyReports: one per namespace and one for the cluster.
        let r = run_bin(
            &[
                "audit",
                "-p",
                &p,
                "--kubeconfig",
                &admin,
                "--name-prefix",
                &scope.prefix,
                "-n",
                &scope.bare,
                "-o",
                "policyreport",
            ],
            &[],
        );
        let reports: Vec<Json> = r
            .stdout
            .split("---\n")
            .filter(|d| !d.trim().is_empty())
            .map(|d| serde_json::from_str(d).expect("a report"))
            .collect();
        let ns_report = reports
            .iter()
            .find(|r| r["kind"] == "PolicyReport")
            .unwrap_or_else(|| panic!("{}", r.stdout));
        assert_eq!(ns_report["apiVersion"], "wgpolicyk8s.io/v1alpha2");
        assert_eq!(ns_report["metadata"]["namespace"], json!(scope.bare));
        assert_eq!(ns_report["summary"]["fail"], 1);
        assert_eq!(
            ns_report["results"][0]["resources"][0]["name"],
            "fit-outside"
        );
        assert!(reports.iter().any(|r| r["kind"] == "ClusterPolicyReport"));
        // The reports are what Kyverno's PolicyReport CRDs accept, field for
        // field (strict validation refuses a field the schema does not have).
        let crds: String = ["policyreports", "clusterpolicyreports"]
            .iter()
            .map(|n| {
                std::fs::read_to_string(root().join(format!(
                    "testdata/crds/policyreport/wgpolicyk8s.io_{n}.yaml"
                )))
                .expect("the CRD")
            })
            .collect::<Vec<_>>()
            .join("\n---\n");
        kubectl_stdin(
            &scope.cluster,
            &["apply", "--server-side", "--force-conflicts", "-f", "-"],
            &crds,
            0,
        );
        kubectl_stdin(
            &scope.cluster,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd/policyreports.wgpolicyk8s.io",
                "crd/clusterpolicyreports.wgpolicyk8s.io",
            ],
            "",
            0,
        );
        let applied = kubectl_stdin(
            &scope.cluster,
            &[
                "apply",
                "--dry-run=server",
                "--validate=strict",
                "-o",
                "name",
                "-f",
                "-",
            ],
            &r.stdout,
            0,
        );
        assert_eq!(applied.lines().count(), reports.len(), "{applied}");

        // Audit wrote nothing.
        assert_eq!(rv(&format!("node/{node}")), node_rv);
        assert_eq!(
            rv(&format!(
                "mutatingadmissionpolicy/{}audit-{id}",
                scope.prefix
            )),
            policy_rv
        );
        delete_nodes(&scope.client, &nodes).await;
        scope.cleanup(&yaml).await;
    });
}
