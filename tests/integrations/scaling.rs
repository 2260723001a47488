//! Work grows linearly with the input: the instructions a rewrite executes,
//! counted by valgrind's cachegrind (the same count on every run, unlike a
//! time), at n, 2n and 4n copies of a unit of input. With a linear cost (a
//! fixed start plus a cost per copy) doubling the copies at most doubles the
//! count, and the second step adds twice what the first added; a cost that
//! is quadratic in the copies (a whole-file rescan for each document, a
//! search of all earlier edits for each edit) makes a doubling cost up to
//! four times as much, and the second step add four times the first. A
//! doubling above `MAX_DOUBLING` or a step ratio above `MAX_STEP_RATIO`
//! fails.
//!
//! `#[ignore]`d: it needs valgrind (`$KFSCHED_VALGRIND`, default `valgrind`
//! on PATH). The binary under test is the unoptimised one `cargo test`
//! builds; its count is larger than a release build's, its growth the same.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{KFSCHED, tool};
use crate::support::root;

/// Twice the linear step, with room for what does not grow evenly (buffers
/// that double, hash tables that rehash); a quadratic term no larger than the
/// linear one at n already gives 2 + 6/4 = 3.5.
const MAX_STEP_RATIO: f64 = 2.6;

/// Doubling the copies of a linear cost at most doubles the count (less, by
/// the fixed start); the room is for what does not grow evenly.
const MAX_DOUBLING: f64 = 2.1;

/// Instructions executed by `kubectl-kfsched rewrite -p POLICY INPUT`, and
/// what it printed.
fn instructions(valgrind: &Path, policy: &Path, input: &Path) -> (u64, String) {
    let out = Command::new(valgrind)
        .args([
            "--tool=cachegrind",
            "--cache-sim=no",
            "--branch-sim=no",
            "--cachegrind-out-file=/dev/null",
        ])
        .arg(KFSCHED)
        .arg("rewrite")
        .arg("-p")
        .arg(policy)
        .arg(input)
        // One worker thread: a spinning rayon worker adds instructions that
        // depend on scheduling.
        .env("RAYON_NUM_THREADS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", valgrind.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "rewrite of {} failed under valgrind ({}):\n{stderr}",
        input.display(),
        out.status
    );
    let refs = stderr
        .lines()
        .find_map(|l| {
            l.split_once("I   refs:")
                .or_else(|| l.split_once("I refs:"))
        })
        .unwrap_or_else(|| panic!("no instruction count in valgrind's output:\n{stderr}"))
        .1;
    let count = refs
        .trim()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("instruction count {refs:?}: {e}"));
    (count, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Rewrites `make(n)`, `make(2n)` and `make(4n)` and checks that each
/// doubling costs at most `MAX_DOUBLING` times as much and the second step
/// at most `MAX_STEP_RATIO` times the first. Each rewrite must add `added`
/// at least once per copy (so the edits are made, not skipped).
#[track_caller]
fn grows_linearly(what: &str, policy: &str, added: &str, n: usize, make: impl Fn(usize) -> String) {
    let valgrind = tool("KFSCHED_VALGRIND", "valgrind");
    let dir = tempfile::tempdir().expect("tempdir");
    let policy_path = dir.path().join("policy.yaml");
    std::fs::write(&policy_path, policy).expect("write the policy");
    let counts: Vec<u64> = [n, 2 * n, 4 * n]
        .iter()
        .map(|&copies| {
            let input = dir.path().join(format!("input-{copies}.yaml"));
            let text = make(copies);
            std::fs::write(&input, &text).expect("write the input");
            let (count, out) = instructions(&valgrind, &policy_path, &input);
            let more = out
                .matches(added)
                .count()
                .saturating_sub(text.matches(added).count());
            assert!(
                more >= copies,
                "{what}: the rewrite of {copies} copies added {added:?} {more} times"
            );
            count
        })
        .collect();
    for (i, pair) in counts.windows(2).enumerate() {
        let doubling = pair[1] as f64 / pair[0] as f64;
        let from = n << i;
        assert!(
            doubling <= MAX_DOUBLING,
            "{what}: {} copies cost {doubling:.2} times what {from} did (linear: at most 2; \
             allowed {MAX_DOUBLING}); instructions at {n}, {} and {} copies: {counts:?}",
            2 * from,
            2 * n,
            4 * n
        );
    }
    let first = counts[1].saturating_sub(counts[0]);
    let second = counts[2].saturating_sub(counts[1]);
    assert!(
        first > 0,
        "{what}: {n} more copies cost nothing more: {counts:?}"
    );
    let ratio = second as f64 / first as f64;
    eprintln!(
        "{what}: {counts:?} instructions at {n}, {} and {} copies; step ratio {ratio:.2}",
        2 * n,
        4 * n
    );
    assert!(
        ratio <= MAX_STEP_RATIO,
        "{what}: going from {} to {} copies cost {ratio:.2} times what going from {n} to {} \
         did (linear: 2; at most {MAX_STEP_RATIO}); instructions {counts:?}",
        2 * n,
        4 * n,
        2 * n
    );
}

fn fixture(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `copies` documents of `doc`, one stream.
fn stream(doc: &str, copies: usize) -> String {
    let doc = doc.strip_prefix("---\n").unwrap_or(doc);
    vec![doc; copies].join("---\n")
}

/// `n` copies of the fixture `dir/input` in one stream, rewritten with
/// `dir/policy.yaml`.
#[track_caller]
fn a_stream_of(what: &str, dir: &str, input: &str, added: &str, n: usize) {
    let doc = fixture(&format!("{dir}/{input}"));
    let policy = fixture(&format!("{dir}/policy.yaml"));
    grows_linearly(what, &policy, added, n, |copies| stream(&doc, copies));
}

#[test]
#[ignore = "needs valgrind"]
fn a_stream_of_kubectl_get_lists() {
    let dir = "testdata/cases/kubectl-get-all";
    a_stream_of(
        "kubectl get -o yaml Lists",
        dir,
        "input.yaml",
        "tolerations:",
        10,
    );
}

#[test]
#[ignore = "needs valgrind"]
fn a_stream_of_kfp_v1_workflows() {
    let dir = "testdata/golden/v1/toleration_matrix";
    a_stream_of("KFP v1 workflows", dir, "plain.yaml", "tolerations:", 5);
}

#[test]
#[ignore = "needs valgrind"]
fn a_stream_of_pipeline_versions() {
    let dir = "testdata/golden/pv/basic";
    a_stream_of(
        "PipelineVersion manifests",
        dir,
        "plain.yaml",
        "platformSpec:",
        10,
    );
}

/// A policy that gives the components `matcher` selects a toleration and a
/// required node affinity (written with `H100`).
fn gpu_policy(matcher: &str) -> String {
    format!(
        "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: scaling
spec:
  rules:
  - name: gpu-train
    match:
      {matcher}
    tolerations:
    - {{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {{key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}}
"
    )
}

/// `block` `n` times, `train-2` renamed in each copy.
fn copies(block: &str, n: usize) -> String {
    (0..n)
        .map(|i| block.replace("train-2", &format!("train-2-copy{i}")))
        .collect()
}

/// One KFP v1 workflow of `n` training templates (one of the SDK's 300-template
/// file's, renamed), each given tolerations and a node affinity: many edits in
/// one document.
#[test]
#[ignore = "needs valgrind"]
fn a_kfp_v1_workflow_of_many_templates() {
    let file = fixture("testdata/golden/v1/large_300/plain.yaml");
    let template = entry(&file, "  - name: train-2");
    let head = "\n  templates:\n";
    let head = &file[..file.find(head).expect("templates") + head.len()];
    let tail = &file[file.find("\n  arguments:").expect("arguments") + 1..];
    let policy = gpu_policy("images: [\"pytorch/pytorch:*\"]");
    grows_linearly(
        "KFP v1 templates in one workflow",
        &policy,
        "H100",
        25,
        |n| format!("{head}{}{tail}", copies(template, n)),
    );
}

/// The lines from `header` (a whole line) through the last one indented more
/// than it: one entry of a block mapping.
fn entry<'a>(file: &'a str, header: &str) -> &'a str {
    let start = file
        .find(&format!("\n{header}\n"))
        .unwrap_or_else(|| panic!("no line {header:?}"))
        + 1;
    let indent = header.len() - header.trim_start().len();
    let mut end = start + header.len() + 1;
    for line in file[end..].split_inclusive('\n') {
        if line.len() - line.trim_start().len() <= indent && !line.trim().is_empty() {
            break;
        }
        end += line.len();
    }
    &file[start..end]
}

/// One KFP v2 pipeline of `n` training tasks (one of the SDK's 300-task
/// file's, with its component and executor, renamed), each given
/// tolerations and a node affinity in the platform spec the rewrite adds.
#[test]
#[ignore = "needs valgrind"]
fn a_kfp_v2_pipeline_of_many_tasks() {
    let file = fixture("testdata/golden/v2/large_300/plain.yaml");
    let component = entry(&file, "  comp-train-2:");
    let executor = entry(&file, "    exec-train-2:");
    let task = entry(&file, "      train-2:");
    let root_rest = &file[file
        .find("\n  inputDefinitions:\n    parameters:\n      epochs:")
        .expect("the root's inputs")
        + 1..];
    let policy = gpu_policy("names: [\"train-*\"]");
    grows_linearly("KFP v2 tasks in one pipeline", &policy, "H100", 25, |n| {
        format!(
            "components:\n{}deploymentSpec:\n  executors:\n{}pipelineInfo:\n  name: many-tasks\nroot:\n  dag:\n    tasks:\n{}{root_rest}",
            copies(component, n),
            copies(executor, n),
            copies(task, n),
        )
    });
}
