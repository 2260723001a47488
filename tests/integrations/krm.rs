//! The KRM function (SPEC §5) under the real orchestrators: standalone
//! kustomize >= 5.7 (`exec` with and without `args`, as kustomize < 5.7
//! runs it), kubectl's bundled kustomize through the legacy exec-plugin
//! route, `kpt fn eval --exec` and `kpt fn render` (a Kptfile pipeline).
//! Each one rewrites the pipelines, and an invalid policy makes each one fail.
//!
//! Kustomize and kpt serialize the resources themselves (kustomize sorts
//! keys and drops comments, kpt re-wraps long lines), so a kustomize build
//! through kfsched is compared with the build of the files `rewrite` made,
//! and kpt's files with `rewrite`'s document by document.

use kfsched_yaml::tree::Tree;
use kfsched_yaml::value::{Value, node_value};

use super::{KFSCHED, Out, Sandbox, built_tool, example, kubectl, rewritten, run, tool};

/// The README's policy, with the function annotation kustomize reads.
fn transformer(args: Option<&str>) -> String {
    let exec = match args {
        Some(a) => format!("        path: kubectl-kfsched\n        args: {a}\n"),
        None => "        path: kubectl-kfsched\n".to_string(),
    };
    example(".kfsched.yaml").replacen(
        "metadata:\n  name: ml-platform\n",
        &format!(
            "metadata:\n  name: ml-platform\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n{exec}"
        ),
        1,
    )
}

/// KRM tools need `metadata.name`: the KFP v1 example, named.
fn workflow() -> String {
    let w = example("pipelines/basic-train-v1.yaml");
    assert!(w.contains("\n  generateName: basic-train-\n"));
    w.replacen(
        "\n  generateName: basic-train-\n",
        "\n  name: basic-train\n",
        1,
    )
}

const JOB: &str = "# Training job.
apiVersion: batch/v1
kind: Job
metadata:
  name: train-model
spec:
  template:
    spec:
      containers:
      - name: main
        image: pytorch/pytorch:2.3   # pinned
      restartPolicy: Never
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: unrelated
data:
  a: \"1\"
";

/// An invalid policy: an unknown effect.
fn broken(policy: &str) -> String {
    let b = policy.replacen("effect: NoSchedule", "effect: NoSchedul", 1);
    assert_ne!(b, policy);
    b
}

/// A kustomization over the two resource files, with or without the
/// transformer; `rewrite_first` writes the resources as `kubectl-kfsched
/// rewrite` makes them (the reference build).
fn kustomization(sb: &Sandbox, dir: &str, policy: Option<&str>, rewrite_first: bool) {
    let reference = example(".kfsched.yaml");
    let prepare = |text: String| {
        if rewrite_first {
            rewritten(&reference, &text)
        } else {
            text
        }
    };
    let mut files = vec![
        (format!("{dir}/workflow.yaml"), prepare(workflow())),
        (format!("{dir}/job.yaml"), prepare(JOB.to_string())),
    ];
    let mut k = "resources:\n- workflow.yaml\n- job.yaml\n".to_string();
    if let Some(p) = policy {
        files.push((format!("{dir}/kfsched.yaml"), p.to_string()));
        k.push_str("transformers:\n- kfsched.yaml\n");
    }
    files.push((format!("{dir}/kustomization.yaml"), k));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    sb.write(&refs);
}

/// The transformer's build equals the build of the resources rewritten
/// beforehand, and differs from the build without it.
#[track_caller]
fn same_as_rewritten(plain: &Out, reference: &Out, got: &Out) {
    assert_ne!(
        plain.stdout, reference.stdout,
        "the policy changes nothing?"
    );
    assert!(
        got.stdout == reference.stdout,
        "the transformer's build differs from building the rewritten files:\n{}",
        crate::support::show_diff(&reference.stdout, &got.stdout)
    );
}

fn kustomize_build(sb: &Sandbox, dir: &str) -> Out {
    run(
        sb.cmd(built_tool("kustomize")).args([
            "build",
            "--enable-alpha-plugins",
            "--enable-exec",
            dir,
        ]),
        None,
    )
}

#[test]
#[ignore = "needs the integration tools: scripts/test.sh sets them up"]
fn kustomize_runs_the_exec_function_with_and_without_args() {
    let sb = Sandbox::new();
    let version = run(sb.cmd(built_tool("kustomize")).arg("version"), None);
    version.ok();
    // exec.args needs kustomize >= 5.7.
    let v: Vec<u32> = version
        .stdout
        .trim()
        .trim_start_matches('v')
        .split('.')
        .map(|p| p.parse().expect("a numeric version"))
        .collect();
    assert!(
        v >= vec![5, 7],
        "kustomize {} is older than 5.7",
        version.stdout.trim()
    );
    kustomization(&sb, "plain", None, false);
    let plain = kustomize_build(&sb, "plain");
    plain.ok();
    kustomization(&sb, "reference", None, true);
    let reference = kustomize_build(&sb, "reference");
    reference.ok();

    // kustomize >= 5.7: exec.args.
    kustomization(&sb, "args", Some(&transformer(Some("[fn]"))), false);
    let with_args = kustomize_build(&sb, "args");
    with_args.ok();
    same_as_rewritten(&plain, &reference, &with_args);

    // What kustomize < 5.7 can express: no args, a ResourceList on stdin.
    kustomization(&sb, "noargs", Some(&transformer(None)), false);
    let without = kustomize_build(&sb, "noargs");
    without.ok();
    assert_eq!(without.stdout, with_args.stdout, "both entry points agree");

    // An invalid policy: the function writes error results and exits 1, so
    // kustomize fails and prints the function's stderr.
    kustomization(
        &sb,
        "broken",
        Some(&broken(&transformer(Some("[fn]")))),
        false,
    );
    let b = kustomize_build(&sb, "broken");
    b.failed();
    assert!(b.stdout.is_empty(), "nothing built\n{b}");
    assert!(
        b.stderr.contains("exit status 1") && b.stderr.contains("error results"),
        "{b}"
    );
    // The error points into the transformer file (kustomize runs the
    // function in the kustomization's directory), the ResourceList second.
    let at = format!(
        "invalid SchedulingPolicy: {}:",
        sb.work.join("broken/kfsched.yaml").display()
    );
    assert!(
        b.stderr.contains(&at) && b.stderr.contains("(ResourceList:"),
        "{b}"
    );
}

#[test]
fn kubectl_kustomize_runs_the_legacy_exec_plugin() {
    let sb = Sandbox::new();
    // The README's install lines, verbatim (XDG_CONFIG_HOME is the sandbox's).
    run(
        sb.cmd("sh").arg("-c").arg(
            "dir=\"${XDG_CONFIG_HOME:-$HOME/.config}/kustomize/plugin/kfsched.dev/v1alpha1/schedulingpolicy\"\n\
             mkdir -p \"$dir\" && ln -sf \"$(command -v kubectl-kfsched)\" \"$dir/SchedulingPolicy\"",
        ),
        None,
    )
    .ok();
    assert!(
        sb.home
            .join(".config/kustomize/plugin/kfsched.dev/v1alpha1/schedulingpolicy/SchedulingPolicy")
            .exists()
    );
    let build = |d: &str| {
        run(
            sb.cmd(kubectl())
                .args(["kustomize", "--enable-alpha-plugins", d]),
            None,
        )
    };

    kustomization(&sb, "plain", None, false);
    let plain = build("plain");
    plain.ok();
    kustomization(&sb, "reference", None, true);
    let reference = build("reference");
    reference.ok();
    // The legacy route has no function annotation: kustomize finds the
    // plugin by the config's apiVersion and kind.
    kustomization(&sb, "legacy", Some(&example(".kfsched.yaml")), false);
    let legacy = build("legacy");
    legacy.ok();
    same_as_rewritten(&plain, &reference, &legacy);

    kustomization(
        &sb,
        "broken",
        Some(&broken(&example(".kfsched.yaml"))),
        false,
    );
    let b = build("broken");
    b.failed();
    assert!(
        b.stderr.contains("effect") && b.stderr.contains("NoSchedul"),
        "the policy error reaches the user\n{b}"
    );
}

/// The documents of a YAML stream, read with the crate's YAML reader.
fn documents(text: &str) -> Vec<Value> {
    let tree = Tree::parse(text).expect("valid YAML");
    tree.documents
        .iter()
        .map(|d| d.root.map_or(Value::Null, |r| node_value(&tree, r)))
        .collect()
}

/// Every file kpt wrote holds what `rewrite` makes of it: kpt serializes
/// the items itself (it re-wraps long lines and puts new fields after the
/// existing ones), so the documents are compared, not the bytes.
#[track_caller]
fn same_documents(want: &str, got: &str, file: &str) {
    assert!(
        documents(want) == documents(got),
        "{file}: kpt wrote something else than rewrite:\n{}",
        crate::support::show_diff(want, got)
    );
}

#[test]
fn kpt_fn_eval_runs_the_function() {
    let kpt = tool("KFSCHED_KPT", "kpt");
    let sb = Sandbox::new();
    let policy = example(".kfsched.yaml");
    let wf = workflow();
    let files = [
        ("pkg/workflow.yaml", wf.as_str()),
        ("pkg/jobs/job.yaml", JOB),
    ];
    sb.write(&files);
    sb.write(&[("policy.yaml", &policy), ("broken.yaml", &broken(&policy))]);

    // `fn` and the bare binary (a ResourceList on stdin) behave alike.
    for exec in ["kubectl-kfsched fn", "kubectl-kfsched"] {
        sb.write(&files);
        let out = run(
            sb.cmd(&kpt).args([
                "fn",
                "eval",
                "pkg",
                "--exec",
                exec,
                "--fn-config",
                "policy.yaml",
            ]),
            None,
        );
        out.ok();
        let all = out.all();
        assert!(
            all.contains("[info] argoproj.io/v1alpha1/Workflow/basic-train: kfsched: scheduling set by rule training-on-experiment-nodes")
                && all.contains("[info] batch/v1/Job/train-model:")
                && all.contains("[warning]: kfsched: rule \"publish-not-on-spot\" matched no component"),
            "results reported\n{out}"
        );
        for (file, input) in files {
            let got = std::fs::read_to_string(sb.work.join(file)).expect("read");
            same_documents(&rewritten(&policy, input), &got, file);
        }
        let job = std::fs::read_to_string(sb.work.join("pkg/jobs/job.yaml")).expect("read");
        assert!(
            job.starts_with("# Training job.\n") && job.contains("# pinned"),
            "comments kept\n{job}"
        );
    }

    // kpt fn render: the function in the package's Kptfile pipeline, the
    // policy inside the package (local-config, so `kpt live apply` skips it).
    let local = policy.replacen(
        "metadata:\n  name: ml-platform\n",
        "metadata:\n  name: ml-platform\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
        1,
    );
    sb.write(&files);
    sb.write(&[
        ("pkg/kfsched.yaml", &local),
        (
            "pkg/Kptfile",
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\npipeline:\n  mutators:\n  - exec: kubectl-kfsched\n    configPath: kfsched.yaml\n",
        ),
    ]);
    let out = run(
        sb.cmd(&kpt).args(["fn", "render", "pkg", "--allow-exec"]),
        None,
    );
    out.ok();
    for (file, input) in files {
        let got = std::fs::read_to_string(sb.work.join(file)).expect("read");
        same_documents(&rewritten(&policy, input), &got, file);
    }
    std::fs::remove_file(sb.work.join("pkg/kfsched.yaml")).expect("rm");
    std::fs::remove_file(sb.work.join("pkg/Kptfile")).expect("rm");

    // An invalid policy: error results, exit 1, and kpt writes nothing.
    sb.write(&files);
    let before = crate::support::snapshot(&sb.work.join("pkg"));
    let out = run(
        sb.cmd(&kpt).args([
            "fn",
            "eval",
            "pkg",
            "--exec",
            "kubectl-kfsched fn",
            "--fn-config",
            "broken.yaml",
        ]),
        None,
    );
    out.failed();
    assert!(
        out.all().contains("[error]") && out.all().contains("invalid SchedulingPolicy"),
        "{out}"
    );
    assert_eq!(
        crate::support::snapshot(&sb.work.join("pkg")),
        before,
        "kpt wrote files"
    );

    // kpt fn render with an invalid policy in the package: kpt names the
    // file in the functionConfig's annotations, and the error points into it.
    sb.write(&[
        ("pkg/kfsched.yaml", &broken(&local)),
        (
            "pkg/Kptfile",
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\npipeline:\n  mutators:\n  - exec: kubectl-kfsched\n    configPath: kfsched.yaml\n",
        ),
    ]);
    let out = run(
        sb.cmd(&kpt).args(["fn", "render", "pkg", "--allow-exec"]),
        None,
    );
    out.failed();
    let at = format!(
        "invalid SchedulingPolicy: {}:",
        sb.work.join("pkg/kfsched.yaml").display()
    );
    assert!(
        out.all().contains(&at) && out.all().contains("(ResourceList:"),
        "{out}"
    );
}

/// The ResourceList as kpt sends it (recorded from kpt 1.0.0-beta.56):
/// internal annotations, a comment above the first key, compact sequences.
const RESOURCE_LIST: &str = "apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- # Training job: header comment
  apiVersion: batch/v1
  kind: Job
  metadata:
    name: train
    annotations:
      config.kubernetes.io/index: '0'
      config.kubernetes.io/path: 'jobs/job.yaml'
      internal.config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/path: 'jobs/job.yaml'
      internal.config.kubernetes.io/seqindent: 'compact'
      internal.config.kubernetes.io/annotations-migration-resource-id: '0'
      internal.config.kubernetes.io/id: '1'
      config.k8s.io/id: '1'
  spec:
    template:
      spec:
        containers:
        - name: main
          image: pytorch/pytorch:2.3 # pinned
        restartPolicy: Never
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: unrelated
    annotations:
      internal.config.kubernetes.io/index: '1'
      internal.config.kubernetes.io/path: 'jobs/job.yaml'
  data:
    a: \"1\"
functionConfig:
  apiVersion: kfsched.dev/v1alpha1
  kind: SchedulingPolicy
  metadata:
    name: gpu
  spec:
    rules:
    - name: gpu
      match: {images: [\"pytorch/*\"]}
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
";

#[test]
fn fn_edits_the_resource_list_in_place_and_adds_results() {
    let sb = Sandbox::new();
    let out = run(sb.cmd(KFSCHED).arg("fn"), Some(RESOURCE_LIST.as_bytes()));
    out.ok();
    // Every input line survives, in order (annotations, comments, quoting).
    let mut rest = out.stdout.lines();
    for line in RESOURCE_LIST.lines() {
        assert!(
            rest.any(|l| l == line),
            "line {line:?} lost or reordered\n{}",
            out.stdout
        );
    }
    assert!(
        out.stdout.contains(
            "        restartPolicy: Never\n        tolerations:\n        - effect: NoSchedule\n          key: nvidia.com/gpu\n          operator: Exists\n"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.ends_with(
            "results:\n- message: 'kfsched: scheduling set by rule gpu'\n  severity: info\n  resourceRef:\n    apiVersion: batch/v1\n    kind: Job\n    name: train\n  file:\n    path: jobs/job.yaml\n"
        ),
        "{}",
        out.stdout
    );

    // The bare binary takes a ResourceList on stdin the same way.
    let bare = run(&mut sb.cmd(KFSCHED), Some(RESOURCE_LIST.as_bytes()));
    bare.ok();
    assert_eq!(bare.stdout, out.stdout);

    // An invalid policy: error results, items untouched, exit 1.
    let bad = RESOURCE_LIST.replace("effect: NoSchedule}", "effect: NoSchedul}");
    let out = run(sb.cmd(KFSCHED).arg("fn"), Some(bad.as_bytes()));
    out.code(1);
    assert!(
        out.stdout.starts_with(&bad),
        "items untouched\n{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("severity: error") && out.stdout.contains("NoSchedul"),
        "{}",
        out.stdout
    );
}

/// The `results` of a ResourceList the function wrote.
/// Runs `fn` on RESOURCE_LIST with `items` (YAML list entries ending in
/// `functionConfig:\n`) added after its own; returns the input and the run.
fn fn_with_items(items: &str) -> (String, Out) {
    let input = RESOURCE_LIST.replacen("functionConfig:\n", items, 1);
    let out = run(
        Sandbox::new().cmd(KFSCHED).arg("fn"),
        Some(input.as_bytes()),
    );
    (input, out)
}

fn results(out: &str) -> Vec<Value> {
    let docs = documents(out);
    match docs[0].get("results") {
        Some(Value::Seq(r)) => r.clone(),
        other => panic!("no results: {other:?}\n{out}"),
    }
}

fn field<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    let mut v = v;
    for k in path {
        v = v.get(k)?;
    }
    v.as_str()
}

#[test]
fn fn_failure_writes_no_info_results_and_names_the_item() {
    // The Job would be changed, the Workflow is refused (templateDefaults
    // sets scheduling): the run fails, so nothing is written and no result
    // may say that the Job was changed.
    let workflow = "- apiVersion: argoproj.io/v1alpha1
  kind: Workflow
  metadata:
    name: wf
    namespace: ml
    annotations:
      internal.config.kubernetes.io/path: 'wf.yaml'
  spec:
    entrypoint: main
    templateDefaults:
      tolerations: [{key: x, operator: Exists}]
    templates:
    - name: main
      container: {image: pytorch/pytorch:2.3}
functionConfig:
";
    let (input, out) = fn_with_items(workflow);
    out.code(1);
    assert!(
        out.stdout.starts_with(&input),
        "items untouched\n{}",
        out.stdout
    );
    let results = results(&out.stdout);
    assert!(
        results
            .iter()
            .all(|r| field(r, &["severity"]) != Some("info")),
        "an info result although nothing was written:\n{}",
        out.stdout
    );
    let errors: Vec<&Value> = results
        .iter()
        .filter(|r| field(r, &["severity"]) == Some("error"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", out.stdout);
    let e = errors[0];
    assert!(
        field(e, &["message"]).is_some_and(|m| m.starts_with("ResourceList:")
            && m.contains("items[2].spec.templateDefaults.tolerations")),
        "{}",
        out.stdout
    );
    assert_eq!(
        field(e, &["resourceRef", "apiVersion"]),
        Some("argoproj.io/v1alpha1")
    );
    assert_eq!(field(e, &["resourceRef", "kind"]), Some("Workflow"));
    assert_eq!(field(e, &["resourceRef", "name"]), Some("wf"));
    assert_eq!(field(e, &["resourceRef", "namespace"]), Some("ml"));
    assert_eq!(field(e, &["file", "path"]), Some("wf.yaml"));
}

#[test]
fn fn_reads_merge_keys_in_the_items_as_files_do() {
    // As in files: `train` takes a toleration from a merge key, and the
    // rule's toleration is added to it in a `tolerations` of its own.
    let workflow = "- apiVersion: argoproj.io/v1alpha1
  kind: Workflow
  metadata:
    name: wf
    annotations:
      internal.config.kubernetes.io/path: 'wf.yaml'
  spec:
    entrypoint: main
    templates:
    - name: main
      dag:
        tasks:
        - {name: train, template: train}
    - name: train
      <<: &spot
        tolerations:
        - {key: cloud.example.com/spot, operator: Exists, effect: NoSchedule}
      container: {image: pytorch/pytorch:2.3}
functionConfig:
";
    let (input, out) = fn_with_items(workflow);
    out.ok();
    let results = results(&out.stdout);
    assert!(
        results
            .iter()
            .any(|r| field(r, &["severity"]) == Some("info")
                && field(r, &["resourceRef", "name"]) == Some("wf")),
        "{}",
        out.stdout
    );
    // The item as `rewrite` makes the same workflow in a file.
    let policy = "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: gpu}\nspec:\n  rules:\n  - name: gpu\n    match: {images: [\"pytorch/*\"]}\n    tolerations:\n    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n";
    let file = workflow
        .replacen("- apiVersion", "apiVersion", 1)
        .replace("\n  ", "\n")
        .replace("functionConfig:\n", "");
    let want = rewritten(policy, &file);
    assert!(
        want.contains("    tolerations:\n    - key: cloud.example.com/spot\n      operator: Exists\n      effect: NoSchedule\n    - effect: NoSchedule\n      key: nvidia.com/gpu\n      operator: Exists\n"),
        "the merged toleration and the rule's\n{want}"
    );
    let items = |text: &str| -> Value {
        documents(text)[0]
            .get("items")
            .and_then(|i| i.as_seq().map(|s| s[2].clone()))
            .expect("item")
    };
    assert_eq!(items(&out.stdout), documents(&want)[0]);
    assert_ne!(items(&out.stdout), items(&input));
}

#[test]
fn fn_leaves_kfp_v2_items_alone_with_a_warning() {
    // KFP v2 IR puts scheduling in a second document, which an item cannot
    // carry: the item stays as it is, the rest of the list is rewritten.
    let v2 = "- pipelineInfo: {name: p}
  root:
    dag:
      tasks:
        a: {componentRef: {name: comp-a}, taskInfo: {name: a}}
  components:
    comp-a: {executorLabel: exec-a}
  deploymentSpec:
    executors:
      exec-a: {container: {image: pytorch/pytorch:2.3}}
  schemaVersion: 2.1.0
- apiVersion: v1
  kind: Pod
  metadata: {name: after}
  spec: {containers: [{name: c, image: pytorch/pytorch:2.3}]}
functionConfig:
";
    let (_, out) = fn_with_items(v2);
    out.ok();
    assert!(
        !out.stdout.contains("\n---") && !out.stdout.contains("platforms:"),
        "one ResourceList, no platform document\n{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(&v2[..v2.find("- apiVersion: v1").expect("pod")])
    );
    let results = results(&out.stdout);
    let severities: Vec<(&str, Option<&str>)> = results
        .iter()
        .map(|r| {
            (
                field(r, &["severity"]).unwrap_or(""),
                field(r, &["resourceRef", "name"]),
            )
        })
        .collect();
    assert_eq!(
        severities,
        [
            ("warning", None),
            ("info", Some("train")),
            ("info", Some("after"))
        ],
        "{}",
        out.stdout
    );
    assert!(
        field(&results[0], &["message"]).is_some_and(
            |m| m.contains("KFP v2 pipeline spec") && m.contains("kubectl kfsched rewrite")
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn fn_policy_errors_are_located_in_the_resource_list() {
    let bad = RESOURCE_LIST.replace("effect: NoSchedule}", "effect: NoSchedul}");
    let sb = Sandbox::new();
    let out = run(sb.cmd(KFSCHED).arg("fn"), Some(bad.as_bytes()));
    out.code(1);
    let line = bad
        .lines()
        .position(|l| l.contains("NoSchedul}"))
        .expect("the bad line")
        + 1;
    let msg = results(&out.stdout)
        .iter()
        .find(|r| field(r, &["severity"]) == Some("error"))
        .and_then(|r| field(r, &["message"]).map(str::to_string))
        .expect("an error result");
    // Line and column are the ResourceList's, and so is the label.
    assert!(
        msg.starts_with(&format!("invalid SchedulingPolicy: ResourceList:{line}:"))
            && msg.contains(": functionConfig.spec.rules[0].tolerations[0].effect: "),
        "{msg}"
    );
    assert!(!msg.contains(" functionConfig:"), "{msg}");
}

/// A ResourceList sent as JSON (YAML's subset, which the KRM spec allows)
/// comes back as JSON: items rewritten and results added in its format.
#[test]
fn fn_answers_a_json_resource_list_in_json() {
    let tree = Tree::parse(RESOURCE_LIST).expect("parses");
    let list = node_value(&tree, tree.documents[0].root.expect("doc")).to_json();
    // The same ResourceList as YAML gives the reference result.
    let yaml = run(
        Sandbox::new().cmd(KFSCHED).arg("fn"),
        Some(RESOURCE_LIST.as_bytes()),
    );
    yaml.ok();
    let yt = Tree::parse(&yaml.stdout).expect("parses");
    let want = node_value(&yt, yt.documents[0].root.expect("doc")).to_json();
    for input in [
        serde_json::to_string(&list).expect("compact"),
        serde_json::to_string_pretty(&list).expect("pretty"),
    ] {
        let out = run(
            Sandbox::new().cmd(KFSCHED).arg("fn"),
            Some(input.as_bytes()),
        );
        out.ok();
        let got: serde_json::Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", out.stdout));
        assert_eq!(got, want, "{}", out.stdout);
        assert_eq!(
            got["items"][0]["spec"]["template"]["spec"]["tolerations"][0]["key"],
            "nvidia.com/gpu"
        );
        // Pretty-printed: every input line is still there, in order (the
        // last entry of a mapping may gain a comma).
        if input.contains('\n') {
            let mut rest = out.stdout.lines();
            for line in input.lines() {
                let line = line.trim_end_matches(',');
                assert!(
                    rest.any(|l| l.trim_end_matches(',') == line),
                    "line {line:?} lost\n{}",
                    out.stdout
                );
            }
        }
    }
}
