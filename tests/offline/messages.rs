//! Messages that say the right thing: "nothing was written" only from a
//! command that writes, and once; `check` without a kubeconfig names the
//! offline ways; a kubectl habit gets the flag that does what was meant;
//! documents are counted from 1 in every output; counts are of what the
//! user passed; `validate` says what a valid policy probably lacks; and
//! directories read JSON as kubectl's `-f DIR` does.

use crate::support::{run_in, snapshot};

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: msgs}
spec:
  rules:
  - name: gpu
    match: {images: [\"pytorch/*\"]}
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
";

fn job(name: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n      containers:\n      - {{name: c, image: pytorch/pytorch:2}}\n"
    )
}

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    for (n, b) in files {
        let p = d.path().join(n);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, b).expect("write");
    }
    d
}

const BROKEN: &str = "error: p/b.yaml:2:1: a[0]: invalid YAML: while parsing a node, did not find expected node content";

/// One bad file among two under `p/`: each command says what it did not
/// do, once, counting what the user passed.
#[test]
fn nothing_was_written_only_where_something_would_have_been_and_once() {
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("p/a.yaml", &job("a")),
        ("p/b.yaml", "a: [\n"),
    ]);
    let before = snapshot(d.path());
    let cases: [(&[&str], &str); 5] = [
        (&["rewrite", "-i"], "nothing was written"),
        (&["rewrite"], "nothing was written"),
        (&["rewrite", "--check"], "nothing was checked"),
        (&["rewrite", "--diff"], "nothing was checked"),
        (&["diff"], "no diff was made"),
    ];
    for (args, undone) in cases {
        let mut all = args.to_vec();
        all.extend(["-p", "policy.yaml", "p"]);
        if args == ["rewrite"] {
            // One input to stdout: the bad file alone.
            all.pop();
            all.push("p/b.yaml");
        }
        let r = run_in(d.path(), &all, None, &[]);
        let given = if args == ["rewrite"] {
            "p/b.yaml"
        } else {
            "2 files under p"
        };
        assert_eq!(
            (r.code, r.stderr.clone()),
            (
                2,
                format!("{BROKEN}\nerror: {undone} (1 problem in {given})\n")
            ),
            "{all:?}"
        );
    }
    // explain and check write nothing and say nothing of writing.
    let r = run_in(d.path(), &["explain", "-p", "policy.yaml", "p"], None, &[]);
    assert_eq!((r.code, r.stderr.clone()), (2, format!("{BROKEN}\n")));
    let r = run_in(
        d.path(),
        &["check", "--pools", "-p", "policy.yaml", "p"],
        None,
        &[],
    );
    assert_eq!(
        (r.code, r.stderr.clone()),
        (
            2,
            format!("{BROKEN}\nerror: nothing was checked (1 problem in 2 files under p)\n")
        )
    );
    assert_eq!(snapshot(d.path()), before);
    // Several inputs to stdout: counted as given.
    let r = run_in(d.path(), &["rewrite", "-p", "policy.yaml", "p"], None, &[]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "error: 2 files under p, and without -i/--in-place, --check or --diff only one input can be written (to stdout)\n"
        )
    );
    std::fs::write(d.path().join("c.yaml"), job("c")).expect("write");
    let r = run_in(
        d.path(),
        &["rewrite", "-p", "policy.yaml", "c.yaml", "p"],
        None,
        &[],
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "error: 3 files (c.yaml, 2 under p), and without -i/--in-place, --check or --diff only one input can be written (to stdout)\n"
        )
    );
}

/// `check` without a cluster points at the offline ways.
#[test]
fn check_without_a_kubeconfig_names_nodes_and_pools() {
    let d = dir_with(&[("policy.yaml", POLICY), ("a.yaml", &job("a"))]);
    let r = run_in(d.path(), &["check", "a.yaml"], None, &[]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "error: no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG or create ~/.kube/config; or judge offline: against a node snapshot (--nodes FILE, from `kubectl get nodes -o yaml`) or the policy's node pools (--pools)\n"
        )
    );
}

/// kubectl's `--dry-run` (and `-R`) get the flag that does what was meant,
/// not clap's "use '-- --dry-run'".
#[test]
fn kubectl_habits_get_the_right_flag() {
    let d = dir_with(&[("policy.yaml", POLICY), ("a.yaml", &job("a"))]);
    let r = run_in(d.path(), &["rewrite", "--dry-run", "a.yaml"], None, &[]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "error: unexpected argument '--dry-run' found\n\n  tip: rewrite writes files only with -i; --check writes nothing and exits 1 if a file would change, and --diff shows how\n\nUsage: kubectl kfsched rewrite [OPTIONS] [PATH]...\n\nFor more information, try '--help'.\n"
        )
    );
    for (args, tip) in [
        (
            &["diff", "--dry-run=client", "a.yaml"][..],
            "  tip: diff writes nothing: leave out --dry-run\n",
        ),
        (
            &["explain", "--dry-run", "a.yaml"],
            "  tip: explain writes nothing: leave out --dry-run\n",
        ),
        (
            &["init", "--dry-run"],
            "  tip: -p - prints the starter policy instead of writing it\n",
        ),
        (
            &["-p", "policy.yaml", "rewrite", "--dry-run", "a.yaml"],
            "  tip: rewrite writes files only with -i;",
        ),
        (
            &["rewrite", "-R", "."],
            "  tip: directories are always searched recursively (for *.yaml, *.yml and *.json): leave it out\n",
        ),
    ] {
        let r = run_in(d.path(), args, None, &[]);
        assert_eq!(r.code, 2, "{args:?}");
        assert!(r.stderr.contains(tip), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("-- --"), "{args:?}: {}", r.stderr);
    }
    // Where --dry-run exists, it is the real flag.
    let r = run_in(
        d.path(),
        &["node", "cordon", "--dry-run=client", "n1"],
        None,
        &[],
    );
    assert!(!r.stderr.contains("tip:"), "{}", r.stderr);
}

/// Documents are counted from 1 in text, JSON and YAML (`document`),
/// for explain and check alike.
#[test]
fn documents_are_counted_from_one_everywhere() {
    let two = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n---\n{}",
        job("a")
    );
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("two.yaml", &two),
        (
            "nodes.yaml",
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n",
        ),
    ]);
    let explain = |format: &str| {
        let r = run_in(
            d.path(),
            &["explain", "-p", "policy.yaml", "-o", format, "two.yaml"],
            None,
            &[],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.stdout_str()
    };
    assert!(explain("text").contains("\n  document 2: workload Job\n"));
    let j: serde_json::Value = serde_json::from_str(&explain("json")).expect("json");
    let docs: Vec<&serde_json::Value> = j["files"][0]["documents"]
        .as_array()
        .expect("documents")
        .iter()
        .map(|d| &d["document"])
        .collect();
    assert_eq!(docs, [1, 2]);
    assert!(j["files"][0]["documents"][0].get("index").is_none());
    assert!(
        explain("yaml").contains("- document: 2\n"),
        "{}",
        explain("yaml")
    );
    let r = run_in(
        d.path(),
        &[
            "check",
            "-p",
            "policy.yaml",
            "--nodes",
            "nodes.yaml",
            "-o",
            "json",
            "two.yaml",
        ],
        None,
        &[],
    );
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("json");
    assert_eq!(j["components"][0]["document"], 2, "{}", r.stdout_str());
}

/// `validate` says what a valid policy probably lacks: the name the node
/// commands need, any rule or pool at all, nodes for a pool.
#[test]
fn validate_warns_about_what_a_valid_policy_lacks() {
    let d = dir_with(&[
        (
            "nameless.yaml",
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec: {}\n",
        ),
        (
            "pool.yaml",
            "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: p}\nspec:\n  nodePools:\n  - {name: gpu, labels: {a: b}}\n",
        ),
    ]);
    let r = run_in(d.path(), &["validate", "nameless.yaml"], None, &[]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            0,
            "warning: nameless.yaml:1:1: no metadata.name: node apply and node diff record what they add under the policy's name and refuse to run without one (the offline commands do not need it)\n\
             warning: nameless.yaml:3:7: spec: the policy has no rules and no node pools: it changes nothing; add rules (spec.rules) or node pools (spec.nodePools)\n"
        )
    );
    let pool = "warning: pool.yaml:6:5: spec.nodePools[0]: node pool \"gpu\" selects no nodes (neither nodes nor nodeSelector): node apply and node diff leave it alone, while rules that name it still apply to pipelines; give it nodes or nodeSelector\n";
    let r = run_in(d.path(), &["validate", "pool.yaml"], None, &[]);
    assert_eq!((r.code, r.stderr.as_str()), (0, pool));
    // The other commands do not repeat it on every run; node diff says it
    // before it reads the cluster (here: there is none).
    std::fs::write(d.path().join("a.yaml"), job("a")).expect("write");
    let r = run_in(d.path(), &["diff", "-p", "pool.yaml", "a.yaml"], None, &[]);
    assert!(!r.stderr.contains("selects no nodes"), "{}", r.stderr);
    let r = run_in(d.path(), &["node", "diff", "-p", "pool.yaml"], None, &[]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "warning: pool \"gpu\" selects no nodes: give it nodes or nodeSelector\nerror: no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG or create ~/.kube/config\n"
        )
    );
}

/// A directory is read for `*.json` as well as YAML, as kubectl's `-f DIR`:
/// a JSON workload in it is rewritten, and stays JSON.
#[test]
fn directories_read_json_files_too() {
    let json = "{\n  \"apiVersion\": \"batch/v1\",\n  \"kind\": \"Job\",\n  \"metadata\": {\"name\": \"train\"},\n  \"spec\": {\"template\": {\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"pytorch/pytorch:2\"}]}}}\n}\n";
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("jobs/train.json", json),
        ("jobs/notes.txt", "not read"),
    ]);
    let r = run_in(
        d.path(),
        &["rewrite", "-i", "-p", "policy.yaml", "jobs"],
        None,
        &[],
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (0, "1 file rewritten, 0 files left unchanged\n")
    );
    let out = std::fs::read_to_string(d.path().join("jobs/train.json")).expect("read");
    let v: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
    assert_eq!(
        v["spec"]["template"]["spec"]["tolerations"][0]["key"],
        "nvidia.com/gpu"
    );
}

/// Wrong inputs get one right sentence: a pipeline's Python source (by its
/// name, or piped in) is to be compiled first; a pipeline given as the
/// policy is said to be one; a SchedulingPolicy given as an input is named.
#[test]
fn wrong_inputs_are_named_for_what_they_are() {
    let source = "from kfp import dsl\n\n@dsl.pipeline(name=\"train\")\ndef train():\n    pass\n";
    let d = dir_with(&[
        ("policy.yaml", POLICY),
        ("train.py", source),
        ("job.yaml", &job("j")),
    ]);
    let compile = "a Python file: compile it first, e.g. `kfp dsl compile --py train.py --output train.yaml` (or `kfp.compiler.Compiler().compile(my_pipeline, \"train.yaml\")` in the script), and give kfsched the compiled YAML";
    for cmd in [
        &["rewrite", "-p", "policy.yaml", "train.py"][..],
        &["explain", "-p", "policy.yaml", "train.py"],
        &["check", "--pools", "-p", "policy.yaml", "train.py"],
    ] {
        let r = run_in(d.path(), cmd, None, &[]);
        assert_eq!(r.code, 2, "{cmd:?}: {}", r.stderr);
        let first = r.stderr.lines().next().unwrap_or("");
        assert_eq!(first, format!("error: train.py: {compile}"), "{cmd:?}");
    }
    let piped = run_in(
        d.path(),
        &["rewrite", "-p", "policy.yaml"],
        Some(source.as_bytes()),
        &[],
    );
    assert_eq!(piped.code, 2);
    assert!(
        piped.stderr.starts_with(
            "error: <stdin>: a Python file: compile it first, e.g. `kfp dsl compile --py pipeline.py --output pipeline.yaml`"
        ),
        "{}",
        piped.stderr
    );

    let as_policy = run_in(d.path(), &["diff", "-p", "job.yaml", "job.yaml"], None, &[]);
    assert_eq!(as_policy.code, 2);
    assert_eq!(
        as_policy.stderr,
        "error: job.yaml:1:1: this file is a Kubernetes workload, not a SchedulingPolicy: give it as an input file, and the policy with -p POLICY (or a .kfsched.yaml here or above)\n"
    );

    // A hook over every YAML file meets the policy itself: said, not refused.
    let policy_in = run_in(
        d.path(),
        &[
            "rewrite",
            "--check",
            "-p",
            "policy.yaml",
            "policy.yaml",
            "job.yaml",
        ],
        None,
        &[],
    );
    assert!(
        policy_in.stderr.contains(
            "policy.yaml: holds no pipeline or workload (a SchedulingPolicy, kfsched's policy and not a pipeline: pass it with -p POLICY, and the pipelines as inputs)"
        ),
        "{}",
        policy_in.stderr
    );
    assert_eq!(policy_in.code, 1, "{}", policy_in.stderr);
}

/// A rule that selects some of the tasks running one Argo template is
/// refused alike by every command that reads the file.
#[test]
fn a_shared_argo_template_is_read_alike_by_every_command() {
    let dir = crate::support::root().join("testdata/bad/input-argo-shared-template");
    let want = "error: policy.yaml:9:7: spec.rules[0].match: rule \"gpu-train\" selects task \"train\" but not task \"preprocess\" in input.yaml;";
    for cmd in [
        &["diff", "-p", "policy.yaml", "input.yaml"][..],
        &["explain", "-p", "policy.yaml", "input.yaml"],
        &["check", "--pools", "-p", "policy.yaml", "input.yaml"],
        &["export", "admission", "-p", "policy.yaml", "input.yaml"],
    ] {
        let r = run_in(&dir, cmd, None, &[]);
        assert_eq!(r.code, 2, "{cmd:?}: {}", r.stderr);
        assert!(r.stderr.starts_with(want), "{cmd:?}: {}", r.stderr);
    }
}
