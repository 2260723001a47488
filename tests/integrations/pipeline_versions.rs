//! KFP PipelineVersion manifests through the GitOps tools: `kustomize
//! build` with kfsched as an exec KRM function over a kustomization of the
//! SDK's manifest files gives the same bytes as building the files the SDK
//! compiled with the scheduling calls, and `kpt fn eval --exec` rewrites a
//! package of them as `rewrite` does.

use super::{Sandbox, built_tool, run, tool};
use crate::support::root;

/// The cases the pv/stream fixture was built from, in its order.
const STREAM_CASES: [&str; 4] = ["pipeline_manifest", "basic", "platform_config", "namespace"];

fn golden(case: &str, file: &str) -> String {
    std::fs::read_to_string(root().join("testdata/golden/pv").join(case).join(file))
        .expect("fixture")
}

/// A policy as a kustomize transformer running `kubectl-kfsched fn`.
fn transformer(policy: &str, args: &str) -> String {
    let (head, rest) = policy
        .split_once("metadata: {name: pv-stream}\n")
        .expect("the stream policy's metadata");
    format!(
        "{head}metadata:\n  name: pv-stream\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: kubectl-kfsched\n        args: {args}\n{rest}"
    )
}

fn kustomization(sb: &Sandbox, dir: &str, file: &str, transformer: Option<&str>) {
    let mut resources = String::new();
    for case in STREAM_CASES {
        let name = format!("{dir}/{case}.yaml");
        sb.write(&[(name.as_str(), golden(case, file).as_str())]);
        resources.push_str(&format!("- {case}.yaml\n"));
    }
    let mut k = format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{resources}"
    );
    if let Some(t) = transformer {
        sb.write(&[(format!("{dir}/kfsched.yaml").as_str(), t)]);
        k.push_str("transformers:\n- kfsched.yaml\n");
    }
    sb.write(&[(format!("{dir}/kustomization.yaml").as_str(), k.as_str())]);
}

#[test]
#[ignore = "needs the integration tools: scripts/test.sh sets them up"]
fn kustomize_build_through_kfsched_equals_building_what_the_sdk_scheduled() {
    let sb = Sandbox::new();
    let kustomize = built_tool("kustomize");
    let build = |dir: &str| {
        let out = run(
            sb.cmd(&kustomize)
                .args(["build", "--enable-alpha-plugins", "--enable-exec", dir]),
            None,
        );
        out.ok();
        out.stdout.clone()
    };
    // The fixture was made by this kustomize from the SDK's files.
    kustomization(&sb, "plain", "plain.yaml", None);
    assert_eq!(build("plain"), golden("stream", "plain.yaml"));
    kustomization(&sb, "scheduled", "expected.yaml", None);
    let reference = build("scheduled");
    assert_eq!(reference, golden("stream", "expected.yaml"));

    let policy = golden("stream", "policy.yaml");
    kustomization(&sb, "fn", "plain.yaml", Some(&transformer(&policy, "[fn]")));
    let got = build("fn");
    assert!(
        got == reference,
        "kustomize build through kfsched differs from the build of the SDK's scheduled files:\n{}",
        crate::support::show_diff(&reference, &got)
    );
}

#[test]
fn kpt_fn_eval_rewrites_a_package_of_pipeline_versions() {
    let kpt = tool("KFSCHED_KPT", "kpt");
    let sb = Sandbox::new();
    let policy = golden("basic", "policy.yaml");
    sb.write(&[
        ("pkg/basic.yaml", golden("basic", "plain.yaml").as_str()),
        ("policy.yaml", policy.as_str()),
    ]);
    let out = run(
        sb.cmd(&kpt).args([
            "fn",
            "eval",
            "pkg",
            "--exec",
            "kubectl-kfsched fn",
            "--fn-config",
            "policy.yaml",
        ]),
        None,
    );
    out.ok();
    assert!(
        out.all().contains(
            "[info] pipelines.kubeflow.org/v2beta1/PipelineVersion/pv-basic: kfsched: scheduling set by rules cpu-batch, gpu-train"
        ) && out.all().contains("[warning]: kfsched: rule \"only-ir\" matched no component"),
        "results reported\n{out}"
    );
    // kpt writes the package back in its own serialization: the values
    // are what the SDK compiled with the scheduling calls.
    let got = std::fs::read_to_string(sb.work.join("pkg/basic.yaml")).expect("read");
    let value = |text: &str| {
        let tree = kfsched_yaml::Tree::parse(text).expect("parses");
        let root = tree.documents[0].root.expect("root");
        let mut v = kfsched_yaml::value::node_value(&tree, root).to_json();
        // kpt records where the object came from.
        if let Some(a) = v["metadata"]["annotations"].as_object_mut() {
            a.retain(|k, _| !k.starts_with("internal.config.kubernetes.io/"));
            if a.is_empty() {
                v["metadata"]
                    .as_object_mut()
                    .expect("metadata")
                    .remove("annotations");
            }
        }
        v
    };
    assert_eq!(value(&got), value(&golden("basic", "expected.yaml")));
}
