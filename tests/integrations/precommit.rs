//! pre-commit (SPEC §5): the hooks of `.pre-commit-hooks.yaml`, built by
//! the real pre-commit (`language: rust`: `cargo install --path .` from the
//! hook repository) and run in a project with pipelines, unrelated YAML and
//! a `.kfsched.yaml`; and the same hooks from the hook repository
//! `pre-commit-hooks/` (`language: python`), which pre-commit installs from
//! the wheel, with no Rust toolchain and a local wheel index.
//!
//! The hook repository is a snapshot of this working tree committed into a
//! temporary git repository, so the test covers uncommitted changes too.
//! pre-commit builds it once for both hooks; `CARGO_TARGET_DIR` stays in
//! `.cache/precommit-target` between runs, so after the first run only
//! kfsched itself is compiled, and the release profile is overridden to
//! `opt-level = 0` without LTO to keep that build short (the hook's code is
//! the same; only the optimiser's work is skipped).

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Out, Sandbox, example, rewritten, run, tool, toolchain};
use crate::support::root;

const GITCONFIG: &str = "[user]
\tname = kfsched test
\temail = test@kfsched.invalid
[init]
\tdefaultBranch = main
[commit]
\tgpgsign = false
[safe]
\tdirectory = *
";

const UNRELATED: &str = "# Not a pipeline: kfsched leaves it alone.
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  retries: '3'
";

fn git(sb: &Sandbox, dir: &Path, args: &[&str]) -> Out {
    let out = run(sb.cmd("git").current_dir(dir).args(args), None);
    out.ok();
    out
}

/// Commits the working tree (tracked and untracked, not ignored files) under
/// `under` into a new repository at `to`; returns the commit.
fn snapshot_repo(sb: &Sandbox, under: &str, to: &Path) -> String {
    let files = run(
        sb.cmd("git").current_dir(root().join(under)).args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ]),
        None,
    );
    files.ok();
    for f in files.stdout.split('\0').filter(|f| !f.is_empty()) {
        let from = root().join(under).join(f);
        if !from.is_file() {
            continue; // deleted in the working tree
        }
        let dest = to.join(f);
        std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&from, &dest).expect("copy");
    }
    git(sb, to, &["init", "-q"]);
    git(sb, to, &["add", "-A"]);
    git(
        sb,
        to,
        &["commit", "-q", "-m", "snapshot of the working tree"],
    );
    git(sb, to, &["rev-parse", "HEAD"])
        .stdout
        .trim()
        .to_string()
}

/// Bytes and mtimes of the project's files (not .git).
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    crate::support::snapshot(dir)
        .into_iter()
        .filter(|(p, _, _)| !p.strip_prefix(dir).is_ok_and(|r| r.starts_with(".git")))
        .collect()
}

fn env_dir(var: &str, default: impl FnOnce() -> Option<PathBuf>) -> PathBuf {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(default)
        .unwrap_or_else(|| panic!("${var} is not set and has no default"))
}

/// A sandbox where pre-commit builds the hooks of this working tree (a
/// snapshot of it committed into a temporary repository): the pre-commit
/// executable, and the `repos:` entry for `.pre-commit-config.yaml`.
fn hook_sandbox() -> (Sandbox, PathBuf, String) {
    let precommit = tool(
        "KFSCHED_PRECOMMIT",
        &root()
            .join(".cache/precommit-venv/bin/pre-commit")
            .display()
            .to_string(),
    );
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let cargo_home = env_dir("CARGO_HOME", || home.as_ref().map(|h| h.join(".cargo")));
    let rustup_home = env_dir("RUSTUP_HOME", || home.as_ref().map(|h| h.join(".rustup")));
    let target = env_dir("KFSCHED_PRECOMMIT_TARGET", || {
        Some(root().join(".cache/precommit-target"))
    });

    let mut sb = Sandbox::new();
    // The hooks must be the ones pre-commit built.
    sb.plugin_on_path = false;
    sb.path.push(toolchain());
    let gitconfig = sb.path().join("gitconfig");
    std::fs::write(&gitconfig, GITCONFIG).expect("gitconfig");
    for (k, v) in [
        ("GIT_CONFIG_GLOBAL", gitconfig.into_os_string()),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
        (
            "PRE_COMMIT_HOME",
            sb.path().join("pre-commit").into_os_string(),
        ),
        ("CARGO_HOME", cargo_home.into_os_string()),
        ("RUSTUP_HOME", rustup_home.into_os_string()),
        ("CARGO_TARGET_DIR", target.into_os_string()),
        // The crates come from the local registry cache, as the project's build left it.
        ("CARGO_NET_OFFLINE", "true".into()),
        ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0".into()),
        ("CARGO_PROFILE_RELEASE_LTO", "false".into()),
        ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16".into()),
        ("CARGO_PROFILE_RELEASE_DEBUG", "false".into()),
    ] {
        sb.env.push((k.into(), v));
    }

    let hooks = sb.path().join("hooks");
    let rev = snapshot_repo(&sb, ".", &hooks);
    let repo = format!(
        "repos:\n- repo: {}\n  rev: {rev}\n  hooks:\n",
        hooks.display()
    );
    (sb, precommit, repo)
}

#[test]
#[ignore = "needs the integration tools: scripts/test.sh sets them up"]
fn pre_commit_rewrites_then_passes_and_the_check_hook_writes_nothing() {
    let (sb, precommit, repo) = hook_sandbox();
    let policy = example(".kfsched.yaml");
    let v1 = example("pipelines/basic-train-v1.yaml");
    let v2 = example("pipelines/reused-components-v2.yaml");
    let config = format!("{repo}  - id: kfsched\n  - id: kfsched-check\n");
    sb.write(&[
        (".kfsched.yaml", &policy),
        ("pipelines/basic-train-v1.yaml", &v1),
        ("pipelines/v2/reused-components-v2.yml", &v2),
        ("config/settings.yaml", UNRELATED),
        ("notes.txt", "not YAML\n"),
        (".pre-commit-config.yaml", &config),
    ]);
    let work = sb.work.clone();
    git(&sb, &work, &["init", "-q"]);
    git(&sb, &work, &["add", "-A"]);
    git(&sb, &work, &["commit", "-q", "-m", "pipelines"]);
    let pristine = files(&work);
    let unrelated = |snap: &[(PathBuf, Vec<u8>, std::time::SystemTime)]| {
        snap.iter()
            .filter(|(p, _, _)| p.ends_with("config/settings.yaml") || p.ends_with("notes.txt"))
            .cloned()
            .collect::<Vec<_>>()
    };
    let read = |f: &str| std::fs::read_to_string(work.join(f)).expect("read");

    // The check hook: fails, shows the diff, writes nothing. Its first run
    // builds the environment both hooks share (one `cargo install`).
    let start = Instant::now();
    let check = run(
        sb.cmd(&precommit)
            .args(["run", "kfsched-check", "--all-files"]),
        None,
    );
    let first = start.elapsed();
    eprintln!("pre-commit: first run (environment install + hook) took {first:.1?}");
    check.code(1);
    assert!(
        check
            .all()
            .contains("kfsched (check the scheduling policy)")
            && check.all().contains("+++ b/pipelines/basic-train-v1.yaml")
            && check
                .all()
                .contains("+++ b/pipelines/v2/reused-components-v2.yml"),
        "{check}"
    );
    assert_eq!(files(&work), pristine, "the check hook wrote files");

    // The rewriting hook: the first run rewrites and fails, the second passes.
    let fix = run(
        sb.cmd(&precommit).args(["run", "kfsched", "--all-files"]),
        None,
    );
    fix.code(1);
    assert!(
        fix.all().contains("files were modified by this hook"),
        "{fix}"
    );
    assert_eq!(
        read("pipelines/basic-train-v1.yaml"),
        rewritten(&policy, &v1)
    );
    assert_eq!(
        read("pipelines/v2/reused-components-v2.yml"),
        rewritten(&policy, &v2)
    );
    assert_eq!(
        unrelated(&files(&work)),
        unrelated(&pristine),
        "unrelated files touched"
    );
    let again = run(
        sb.cmd(&precommit).args(["run", "kfsched", "--all-files"]),
        None,
    );
    again.ok();
    assert!(again.all().contains("Passed"), "{again}");
    let check = run(
        sb.cmd(&precommit)
            .args(["run", "kfsched-check", "--all-files"]),
        None,
    );
    check.ok();

    // As a git hook: the commit is refused until the rewrite is staged.
    git(&sb, &work, &["checkout", "--", "."]);
    git(&sb, &work, &["commit", "-q", "--allow-empty", "-m", "noop"]);
    run(sb.cmd(&precommit).arg("install"), None).ok();
    let edited = v1.replacen("basic-train", "basic-train-2", 1);
    sb.write(&[("pipelines/basic-train-v1.yaml", &edited)]);
    git(&sb, &work, &["add", "-A"]);
    let refused = run(sb.cmd("git").args(["commit", "-m", "edit"]), None);
    refused.failed();
    assert_eq!(
        read("pipelines/basic-train-v1.yaml"),
        rewritten(&policy, &edited)
    );
    git(&sb, &work, &["add", "-A"]);
    let committed = run(sb.cmd("git").args(["commit", "-m", "edit"]), None);
    committed.ok();
    eprintln!("pre-commit: whole test took {:.1?}", start.elapsed());
}

/// The snapshot the placement hook reads: one tainted GPU node.
const NODES: &str = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-1
    labels: {pool: gpu}
  spec:
    taints:
    - {key: gpu, value: 'true', effect: NoSchedule}
  status:
    allocatable: {cpu: '8', memory: 32Gi, pods: '110'}
";

const TRAIN: &str = "apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {pool: gpu}
      containers:
      - name: main
        image: pytorch/pytorch:2.3
";

#[test]
#[ignore = "needs the integration tools: scripts/test.sh sets them up"]
fn the_placement_hook_fails_on_a_component_that_fits_no_node_of_the_snapshot() {
    let (sb, precommit, repo) = hook_sandbox();
    sb.write(&[
        (".kfsched-nodes.yaml", NODES),
        ("cluster/nodes.yaml", &NODES.replace("gpu-1", "gpu-2")),
        ("jobs/train.yaml", TRAIN),
        ("config/settings.yaml", UNRELATED),
        (
            ".pre-commit-config.yaml",
            &format!("{repo}  - id: kfsched-placement\n"),
        ),
    ]);
    let work = sb.work.clone();
    git(&sb, &work, &["init", "-q"]);
    git(&sb, &work, &["add", "-A"]);
    let pristine = files(&work);
    let placement = || {
        run(
            sb.cmd(&precommit)
                .args(["run", "kfsched-placement", "--all-files"]),
            None,
        )
    };
    let failed = placement();
    failed.code(1);
    assert!(
        failed
            .all()
            .contains("kfsched (check placement against the node snapshot)")
            && failed.all().contains("Job \"train\": fits no node")
            && failed
                .all()
                .contains("0/1 nodes are available: 1 node(s) had untolerated taint(s)."),
        "{failed}"
    );
    assert_eq!(files(&work), pristine, "the placement hook wrote files");
    // Tolerating the taint, it fits.
    sb.write(&[(
        "jobs/train.yaml",
        &TRAIN.replace(
            "      nodeSelector:",
            "      tolerations: [{key: gpu, operator: Exists}]\n      nodeSelector:",
        ),
    )]);
    let passed = placement();
    passed.ok();
    assert!(passed.all().contains("Passed"), "{passed}");
    // Another snapshot through the hook's args.
    sb.write(&[(
        ".pre-commit-config.yaml",
        &format!("{repo}  - id: kfsched-placement\n    args: [--nodes, cluster/nodes.yaml]\n"),
    )]);
    let other = run(
        sb.cmd(&precommit)
            .args(["run", "kfsched-placement", "--all-files", "--verbose"]),
        None,
    );
    other.ok();
    assert!(other.all().contains("fits 1 of 1 nodes: gpu-2"), "{other}");
}

/// The hooks of `pre-commit-hooks/` (`language: python`), as a pipeline
/// repository uses them with no Rust toolchain: pre-commit pip-installs the
/// hook repository, whose one dependency is the kfsched wheel, from a local
/// wheel index (`PIP_FIND_LINKS`, `PIP_NO_INDEX`) holding only that wheel and
/// the hook package's build backend. The first run, environment included,
/// takes seconds (under two minutes, whatever the load).
#[test]
#[ignore = "needs the wheels and the integration tools: scripts/test.sh sets them up"]
fn the_python_hooks_install_the_wheel_without_a_toolchain_and_rewrite_as_the_rust_ones() {
    let Some(wheels) = super::wheels::Wheels::get("pre-commit from the wheel") else {
        return;
    };
    let precommit = tool(
        "KFSCHED_PRECOMMIT",
        &root()
            .join(".cache/precommit-venv/bin/pre-commit")
            .display()
            .to_string(),
    );
    let backend = env_dir("KFSCHED_PRECOMMIT_WHEELHOUSE", || {
        Some(root().join(".cache/precommit-wheelhouse"))
    });
    let mut sb = Sandbox::new();
    sb.plugin_on_path = false;
    let index = sb.path().join("index");
    std::fs::create_dir_all(&index).expect("mkdir");
    let wheel = wheels.wheel("x86_64");
    std::fs::copy(&wheel, index.join(wheel.file_name().expect("name"))).expect("copy");
    let mut copied = 0;
    for e in std::fs::read_dir(&backend).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: run scripts/setup-integrations.sh",
            backend.display()
        )
    }) {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "whl") {
            std::fs::copy(&p, index.join(p.file_name().expect("name"))).expect("copy");
            copied += 1;
        }
    }
    assert!(
        copied > 0,
        "no build backend wheel in {}",
        backend.display()
    );
    let gitconfig = sb.path().join("gitconfig");
    std::fs::write(&gitconfig, GITCONFIG).expect("gitconfig");
    for (k, v) in [
        ("GIT_CONFIG_GLOBAL", gitconfig.into_os_string()),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
        (
            "PRE_COMMIT_HOME",
            sb.path().join("pre-commit").into_os_string(),
        ),
        ("PIP_FIND_LINKS", index.clone().into_os_string()),
        ("PIP_NO_INDEX", "1".into()),
        ("PIP_DISABLE_PIP_VERSION_CHECK", "1".into()),
    ] {
        sb.env.push((k.into(), v));
    }
    let none = run(
        sb.cmd("sh")
            .args(["-c", "command -v cargo || command -v rustc"]),
        None,
    );
    assert_ne!(
        none.code, 0,
        "a Rust toolchain is on the sandbox's PATH: {none}"
    );

    let hooks = sb.path().join("hooks");
    let rev = snapshot_repo(&sb, "pre-commit-hooks", &hooks);
    let policy = example(".kfsched.yaml");
    let v1 = example("pipelines/basic-train-v1.yaml");
    let v2 = example("pipelines/reused-components-v2.yaml");
    let config = format!(
        "repos:\n- repo: {}\n  rev: {rev}\n  hooks:\n  - id: kfsched\n  - id: kfsched-check\n",
        hooks.display()
    );
    sb.write(&[
        (".kfsched.yaml", &policy),
        ("pipelines/basic-train-v1.yaml", &v1),
        ("pipelines/v2/reused-components-v2.yml", &v2),
        ("config/settings.yaml", UNRELATED),
        (".pre-commit-config.yaml", &config),
    ]);
    let work = sb.work.clone();
    git(&sb, &work, &["init", "-q"]);
    git(&sb, &work, &["add", "-A"]);
    git(&sb, &work, &["commit", "-q", "-m", "pipelines"]);
    let pristine = files(&work);
    let read = |f: &str| std::fs::read_to_string(work.join(f)).expect("read");

    let start = Instant::now();
    let check = run(
        sb.cmd(&precommit)
            .args(["run", "kfsched-check", "--all-files"]),
        None,
    );
    let first = start.elapsed();
    eprintln!(
        "pre-commit (language: python, the wheel): first run (environment install + hook) took {first:.1?}"
    );
    check.code(1);
    assert!(
        check.all().contains("+++ b/pipelines/basic-train-v1.yaml")
            && check
                .all()
                .contains("+++ b/pipelines/v2/reused-components-v2.yml"),
        "{check}"
    );
    assert_eq!(files(&work), pristine, "the check hook wrote files");
    // Seconds on an idle machine (docs/performance.md); the bound leaves room for a
    // loaded CI runner and is still far below the source build's minutes of CPU.
    assert!(
        first.as_secs() < 120,
        "the first run took {first:.1?}: installing the wheel should take seconds"
    );
    // The environment pre-commit made holds the wheel's binary.
    let envs = run(
        sb.cmd("sh").args([
            "-c",
            "ls \"$PRE_COMMIT_HOME\"/repo*/py_env-*/bin/kubectl-kfsched",
        ]),
        None,
    );
    envs.ok();

    let fix = run(
        sb.cmd(&precommit).args(["run", "kfsched", "--all-files"]),
        None,
    );
    fix.code(1);
    assert!(
        fix.all().contains("files were modified by this hook"),
        "{fix}"
    );
    assert_eq!(
        read("pipelines/basic-train-v1.yaml"),
        rewritten(&policy, &v1)
    );
    assert_eq!(
        read("pipelines/v2/reused-components-v2.yml"),
        rewritten(&policy, &v2)
    );
    assert_eq!(read("config/settings.yaml"), UNRELATED);
    let again = run(sb.cmd(&precommit).args(["run", "--all-files"]), None);
    again.ok();
}
