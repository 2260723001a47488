//! kubectl plugin discovery and shell completion (SPEC §4 `completion`):
//! `kubectl plugin list`, `kubectl kfsched ...` through kubectl's dispatch,
//! `kubectl kfsched <TAB>` through kubectl's own `__complete` and the
//! `kubectl_complete-kfsched` companion, the `completion bash|zsh|fish`
//! scripts in the real shells, and live node names from a real cluster.

use std::path::Path;
use std::time::Duration;

use super::{KFSCHED, Out, Sandbox, kubectl, run, tool};

const POLICY: &str = "apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: completion}
spec:
  nodePools:
  - name: gpu-experiment
    nodes: [\"gpu-*\"]
    labels: {kfsched.dev/pool: gpu-experiment, accelerator: a100}
    taints:
    - {key: kfsched.dev/pool, value: gpu-experiment, effect: NoSchedule}
    - {key: nvidia.com/gpu, effect: NoExecute}
  rules:
  - name: gpu-training
    match: {names: [\"train*\"]}
    pool: gpu-experiment
  - name: cpu-batch
    match: {names: [\"batch*\"]}
    nodeSelector: {kubernetes.io/arch: amd64}
";

/// A sandbox whose working directory holds `.kfsched.yaml` and some files.
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write(&[
        (".kfsched.yaml", POLICY),
        ("pipelines/a.yaml", "kind: ConfigMap\n"),
        ("b.yml", "kind: ConfigMap\n"),
        ("c.txt", "text\n"),
    ]);
    sb
}

/// `kubectl __complete kfsched ARGS...`: candidates (without descriptions) and the directive.
fn kubectl_complete(sb: &Sandbox, args: &[&str]) -> (Vec<String>, u32, Out) {
    let out = run(
        sb.cmd(kubectl())
            .arg("__complete")
            .arg("kfsched")
            .args(args),
        None,
    );
    out.ok();
    let (values, directive) = parse_cobra(&out.stdout);
    (values, directive, out)
}

fn parse_cobra(stdout: &str) -> (Vec<String>, u32) {
    let mut lines: Vec<&str> = stdout.lines().filter(|l| !l.is_empty()).collect();
    let directive = match lines.last().and_then(|l| l.strip_prefix(':')) {
        Some(d) => {
            let d = d.parse().expect("a numeric directive");
            lines.pop();
            d
        }
        None => panic!("no :<directive> line in {stdout:?}"),
    };
    let values = lines
        .iter()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    (values, directive)
}

#[test]
fn kubectl_discovers_the_plugin_and_dispatches_to_it() {
    let sb = sandbox();
    let list = run(sb.cmd(kubectl()).args(["plugin", "list"]), None);
    list.ok();
    let expected = sb.bin.join("kubectl-kfsched").display().to_string();
    assert!(
        list.stdout.lines().any(|l| l.trim() == expected),
        "kubectl plugin list does not show {expected}\n{list}"
    );
    assert!(
        !list.all().to_lowercase().contains("warning"),
        "kubectl plugin list warns\n{list}"
    );

    let version = run(sb.cmd(kubectl()).args(["kfsched", "version"]), None);
    version.ok();
    assert_eq!(
        version.stdout,
        format!("kfsched v{}\n", env!("CARGO_PKG_VERSION"))
    );
    let help = run(sb.cmd(kubectl()).args(["kfsched", "--help"]), None);
    help.ok();
    assert!(
        help.stdout.contains("Usage: kubectl kfsched"),
        "usage names the kubectl form\n{help}"
    );
    // Arguments after the plugin name reach it verbatim, exit code included.
    let bad = run(
        sb.cmd(kubectl()).args(["kfsched", "rewrite", "--nope"]),
        None,
    );
    bad.code(2);
}

#[test]
fn kubectl_completes_subcommands_flags_and_values_through_the_companion() {
    let sb = sandbox();
    let (v, d, out) = kubectl_complete(&sb, &[""]);
    assert_eq!(
        v,
        [
            "rewrite",
            "diff",
            "explain",
            "validate",
            "init",
            "schema",
            "check",
            "audit",
            "fn",
            "export",
            "node",
            "completion",
            "version"
        ]
    );
    assert_eq!(d, 4, "no file names among subcommands");
    assert!(
        out.stdout
            .contains("rewrite\tRewrite compiled pipelines so every matching component"),
        "candidates carry descriptions\n{out}"
    );
    assert!(
        out.stderr.contains("kubectl_complete-kfsched"),
        "kubectl ran the companion\n{out}"
    );

    let (v, _, _) = kubectl_complete(&sb, &["node", "d"]);
    assert_eq!(v, ["drain", "diff"]);
    let (v, _, _) = kubectl_complete(&sb, &["rewrite", "--c"]);
    assert_eq!(v, ["--check", "--color"]);
    let (v, _, _) = kubectl_complete(&sb, &["rewrite", "--check", "--c"]);
    assert_eq!(v, ["--color"], "a given switch is not offered again");
    let (v, _, _) = kubectl_complete(&sb, &["node", "drain", "--ig"]);
    assert_eq!(v, ["--ignore-daemonsets"]);
    let (v, _, _) = kubectl_complete(&sb, &["node", "taint", "--kube"]);
    assert_eq!(
        v,
        ["--kubeconfig"],
        "global flags of `node` reach its subcommands"
    );
    let (v, d, _) = kubectl_complete(&sb, &["rewrite", "--color", ""]);
    assert_eq!(
        (v, d),
        (vec!["auto".into(), "always".into(), "never".into()], 4)
    );
    let (v, _, _) = kubectl_complete(&sb, &["diff", "--color=al"]);
    assert_eq!(v, ["always"]);
    let (v, _, _) = kubectl_complete(&sb, &["explain", "-o", ""]);
    assert_eq!(v, ["text", "json", "yaml"]);
    let (v, _, _) = kubectl_complete(&sb, &["node", "cordon", "--dry-run=s"]);
    assert_eq!(v, ["server"]);
    let (v, _, _) = kubectl_complete(&sb, &["completion", ""]);
    assert_eq!(v, ["bash", "zsh", "fish"]);

    // Paths: YAML files and directories, as Cobra's FilterFileExt.
    let (v, d, _) = kubectl_complete(&sb, &["rewrite", "-i", ""]);
    assert_eq!((v, d), (vec!["yaml".into(), "yml".into()], 8));
    let (v, d, _) = kubectl_complete(&sb, &["diff", "-f", ""]);
    assert_eq!(
        (v, d),
        (vec!["yaml".into(), "yml".into()], 8),
        "kubectl's -f"
    );
    let (v, d, _) = kubectl_complete(&sb, &["diff", "-p", ""]);
    assert_eq!((v, d), (vec!["yaml".into(), "yml".into()], 8));
    let (v, d, _) = kubectl_complete(&sb, &["node", "cordon", "--kubeconfig", ""]);
    assert_eq!((v.len(), d), (0, 0), "any file for --kubeconfig");
}

#[test]
fn kubectl_completes_pool_labels_and_taints_from_the_policy() {
    let sb = sandbox();
    // The policy is found as every command finds it: .kfsched.yaml upward.
    let (v, _, _) = kubectl_complete(&sb, &["node", "label", "gpu-1", ""]);
    assert_eq!(v, ["kfsched.dev/pool=gpu-experiment", "accelerator=a100"]);
    let (v, _, out) = kubectl_complete(&sb, &["node", "taint", "gpu-1", "k"]);
    assert_eq!(v, ["kfsched.dev/pool=gpu-experiment:NoSchedule"]);
    assert!(
        out.stdout.contains("\tpool gpu-experiment"),
        "says where a value comes from\n{out}"
    );
    let (v, _, _) = kubectl_complete(&sb, &["node", "taint", "gpu-1", "n"]);
    assert_eq!(v, ["nvidia.com/gpu:NoExecute"], "a taint without a value");
    let (v, _, out) = kubectl_complete(&sb, &["explain", "--rule", ""]);
    assert_eq!(
        v,
        ["gpu-training", "cpu-batch"],
        "rule names from the policy"
    );
    assert!(
        out.stdout.contains("gpu-training\tpool gpu-experiment"),
        "{out}"
    );
    let (v, _, _) = kubectl_complete(&sb, &["explain", "--rule=c"]);
    assert_eq!(v, ["cpu-batch"]);
    let (v, _, _) = kubectl_complete(&sb, &["node", "drain", "-l", "acc"]);
    assert_eq!(v, ["accelerator=a100"]);
    let (v, _, _) = kubectl_complete(&sb, &["node", "cordon", "--selector=kf"]);
    assert_eq!(v, ["kfsched.dev/pool=gpu-experiment"]);

    // -p on the command line (of a command that reads a policy), and
    // $KFSCHED_POLICY, win over .kfsched.yaml.
    let other = POLICY
        .replace("accelerator: a100", "accelerator: h100")
        .replace("cpu-batch", "cpu-nightly");
    sb.write(&[("other/policy.yaml", &other)]);
    let (v, _, _) = kubectl_complete(&sb, &["explain", "-p", "other/policy.yaml", "--rule", "c"]);
    assert_eq!(v, ["cpu-nightly"]);
    let mut sb = sb;
    sb.env.push((
        "KFSCHED_POLICY".into(),
        sb.work.join("other/policy.yaml").into(),
    ));
    let (v, _, _) = kubectl_complete(&sb, &["node", "label", "gpu-1", "acc"]);
    assert_eq!(v, ["accelerator=h100"]);
}

#[test]
fn node_names_without_a_reachable_cluster_offer_nothing_quickly() {
    let sb = sandbox();
    // Nothing listens on port 9 of 127.0.0.1 (discard): connection refused.
    sb.write(&[("kubeconfig", &kubeconfig("https://127.0.0.1:9"))]);
    let (v, d, out) = kubectl_complete(&sb, &["node", "cordon", "--kubeconfig", "kubeconfig", ""]);
    assert_eq!((v.len(), d), (0, 4), "{out}");
    assert!(out.took < Duration::from_secs(8), "{out}");
    // No kubeconfig at all: still an answer, not an error.
    let (v, d, out) = kubectl_complete(&sb, &["node", "drain", ""]);
    assert_eq!((v.len(), d), (0, 4), "{out}");
    // Contexts come from the kubeconfig file alone.
    let (v, _, _) = kubectl_complete(
        &sb,
        &[
            "node",
            "cordon",
            "--kubeconfig",
            "kubeconfig",
            "--context",
            "",
        ],
    );
    assert_eq!(v, ["offline"]);
}

fn kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: offline
  cluster: {{server: \"{server}\", insecure-skip-tls-verify: true}}
users:
- name: offline
  user: {{token: nope}}
contexts:
- name: offline
  context: {{cluster: offline, user: offline}}
current-context: offline
"
    )
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it (KFSCHED_ADMIN_KUBECONFIG)"]
fn kubectl_completes_live_node_names() {
    // Its nodes are real schedulable nodes: a test that counts every node (the
    // scheduler comparisons) must not see them come and go.
    let _nodes = crate::node::cluster::shared();
    let admin = std::env::var_os("KFSCHED_ADMIN_KUBECONFIG")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "$KFSCHED_ADMIN_KUBECONFIG is not set: this test needs the control plane. Start it \
                 with `scripts/cluster.sh start && eval \"$(scripts/cluster.sh env)\"` (or run \
                 scripts/test.sh), then run `cargo test -- --include-ignored`"
            )
        });
    assert!(admin.is_file(), "{} does not exist", admin.display());
    let id = format!(
        "kfc-{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() & 0xff_ffff)
            .unwrap_or_default()
    );
    let nodes: Vec<String> = ["a", "b"].iter().map(|s| format!("{id}-{s}")).collect();
    let manifest: String = nodes
        .iter()
        .map(|n| format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {n}\n  labels: {{kubernetes.io/hostname: {n}}}\n---\n"))
        .collect();
    let sb = sandbox();
    let created = run(
        sb.cmd(kubectl())
            .arg("--kubeconfig")
            .arg(&admin)
            .args(["create", "-f", "-"]),
        Some(manifest.as_bytes()),
    );
    created.ok();
    struct Cleanup<'a>(&'a Sandbox, &'a Path, &'a [String]);
    impl Drop for Cleanup<'_> {
        fn drop(&mut self) {
            let mut c = self.0.cmd(kubectl());
            c.arg("--kubeconfig")
                .arg(self.1)
                .args(["delete", "node", "--wait=false"])
                .args(self.2);
            let _ = run(&mut c, None);
        }
    }
    let _cleanup = Cleanup(&sb, &admin, &nodes);

    // The kubeconfig from --kubeconfig on the command line.
    let admin_arg = admin.display().to_string();
    let (v, d, out) = kubectl_complete(&sb, &["node", "cordon", "--kubeconfig", &admin_arg, &id]);
    assert_eq!((v, d), (nodes.clone(), 4), "{out}");
    let (v, _, _) = kubectl_complete(
        &sb,
        &[
            "node",
            "drain",
            "--kubeconfig",
            &admin_arg,
            &nodes[0],
            &format!("{id}-"),
        ],
    );
    assert_eq!(
        v,
        [nodes[1].clone()],
        "a node already given is not offered again"
    );
    let (v, _, _) = kubectl_complete(
        &sb,
        &[
            "node",
            "taint",
            "--kubeconfig",
            &admin_arg,
            &format!("{id}-a"),
        ],
    );
    assert_eq!(v, [nodes[0].clone()], "taint's first arguments are nodes");

    // No kubeconfig at all: kubectl's connection flags on the line reach the cluster.
    let kc = std::fs::read_to_string(&admin).expect("admin kubeconfig");
    let field = |key: &str| {
        kc.lines()
            .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string()))
            .unwrap_or_else(|| panic!("{key} in the admin kubeconfig"))
    };
    let (server, token, ca) = (
        field("server:"),
        field("token:"),
        field("certificate-authority:"),
    );
    let (v, _, out) = kubectl_complete(
        &sb,
        &[
            "node",
            "cordon",
            "-s",
            &server,
            "--token",
            &token,
            "--certificate-authority",
            &ca,
            &id,
        ],
    );
    assert_eq!(v, nodes, "{out}");

    // The kubeconfig from $KUBECONFIG, as kubectl reads it.
    let mut with_env = sandbox();
    with_env
        .env
        .push(("KUBECONFIG".into(), admin.clone().into_os_string()));
    let (v, _, _) = kubectl_complete(&with_env, &["node", "uncordon", &id]);
    assert_eq!(v, nodes);
}

// ---------------------------------------------------------------- scripts

fn script(sb: &Sandbox, shell: &str) -> std::path::PathBuf {
    let out = run(sb.cmd(KFSCHED).args(["completion", shell]), None);
    out.ok();
    let p = sb.path().join(format!("kfsched-completion.{shell}"));
    std::fs::write(&p, &out.stdout).expect("write script");
    p
}

/// What bash's completion function puts in COMPREPLY for `line` (the cursor
/// at its end): bash passes COMP_LINE and COMP_POINT, the script reads them.
fn bash_complete(sb: &Sandbox, line: &str) -> Vec<String> {
    let s = script(sb, "bash");
    let out = run(
        sb.cmd("bash").args([
            "--norc",
            "--noprofile",
            "-c",
            "source \"$1\" && COMP_LINE=$2 && COMP_POINT=${#2} && _kubectl_kfsched && printf '%s\\n' \"${COMPREPLY[@]}\"",
            "bash",
        ])
        .arg(&s)
        .arg(line),
        None,
    );
    out.ok();
    let mut v: Vec<String> = out
        .stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[test]
fn bash_script_completes_the_binary() {
    let sb = sandbox();
    assert_eq!(
        bash_complete(&sb, "kubectl-kfsched ex"),
        ["explain", "export"]
    );
    assert_eq!(bash_complete(&sb, "kubectl-kfsched node c"), ["cordon"]);
    assert_eq!(
        bash_complete(&sb, "kubectl-kfsched rewrite --color=a"),
        ["always", "auto"],
        "after `=` readline replaces only the value"
    );
    assert_eq!(
        bash_complete(&sb, "kubectl-kfsched rewrite "),
        [".kfsched.yaml", "b.yml", "pipelines"],
        "YAML files and directories (hidden ones too, as readline shows them)"
    );
    // ':' and '=' break words in bash: only the text after the last one is replaced.
    assert_eq!(
        bash_complete(
            &sb,
            "kubectl-kfsched node taint gpu-1 kfsched.dev/pool=gpu-experiment:No"
        ),
        ["NoSchedule"]
    );
    assert_eq!(
        bash_complete(&sb, "kubectl-kfsched node label gpu-1 acc"),
        ["accelerator=a100"]
    );
}

/// Types `typed` into an interactive `shell` on a pseudo-terminal and
/// returns what the terminal showed once `expect` appeared (ANSI escapes
/// removed), or fails after a timeout.
fn pty(sb: &Sandbox, argv: &[&str], setup: &[&str], typed: &str, expect: &str) -> String {
    const DRIVER: &str = r#"
import os, pty, re, select, sys, time
argv, setup, typed, expect = sys.argv[1].split("\x1f"), sys.argv[2].split("\x1f"), sys.argv[3], sys.argv[4]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
seen = b""
def read(until=None, timeout=15.0):
    global seen
    end = time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                return False
        elif until is None:
            return True
        if until is not None and until in re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f]", b"", seen):
            return True
    return until is None
read(timeout=2)
for line in setup:
    os.write(fd, line.encode() + b"\n")
    read(timeout=1)
os.write(fd, b"echo READY-$((40+2))\n")
read(until=b"READY-42")
seen = b""
os.write(fd, typed.encode())
ok = read(until=expect.encode())
os.write(fd, b"\x03")
time.sleep(0.1)
os.kill(pid, 9)
sys.stdout.write(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f]", "", seen.decode(errors="replace")))
sys.exit(0 if ok else 1)
"#;
    let out = run(
        sb.cmd("python3")
            .arg("-c")
            .arg(DRIVER)
            .arg(argv.join("\x1f"))
            .arg(setup.join("\x1f"))
            .arg(typed)
            .arg(expect)
            .env("TERM", "dumb"),
        None,
    );
    assert_eq!(
        out.code, 0,
        "{argv:?}: typing {typed:?} never showed {expect:?}\n{out}"
    );
    out.stdout
}

#[test]
#[ignore = "needs the integration tools: scripts/test.sh sets them up"]
fn zsh_script_completes_the_binary() {
    let zsh = tool("KFSCHED_ZSH", "zsh");
    let sb = sandbox();
    let s = script(&sb, "zsh");
    let zsh = zsh.display().to_string();
    let argv = [zsh.as_str(), "-f", "-i"];
    let source = format!(
        "autoload -U compinit && compinit -u && source {}",
        s.display()
    );
    let setup = ["PS1='$ '", source.as_str()];
    pty(
        &sb,
        &argv,
        &setup,
        "kubectl-kfsched rewr\t",
        "kubectl-kfsched rewrite ",
    );
    let shown = pty(&sb, &argv, &setup, "kubectl-kfsched node \t", "uncordon");
    assert!(
        shown.contains("Mark nodes unschedulable"),
        "descriptions: {shown}"
    );
    pty(
        &sb,
        &argv,
        &setup,
        "kubectl-kfsched node drain --dry-run=se\t",
        "--dry-run=server",
    );
    pty(
        &sb,
        &argv,
        &setup,
        "kubectl-kfsched node taint gpu-1 kf\t",
        "kfsched.dev/pool=gpu-experiment:NoSchedule",
    );
    let shown = pty(&sb, &argv, &setup, "kubectl-kfsched diff \t", "pipelines/");
    assert!(!shown.contains("c.txt"), "only YAML files: {shown}");
}

#[test]
#[ignore = "needs the integration tools: scripts/test.sh sets them up"]
fn fish_script_completes_the_binary() {
    let fish = tool("KFSCHED_FISH", "fish");
    let sb = sandbox();
    let s = script(&sb, "fish");
    let complete = |line: &str| -> Vec<String> {
        let out = run(
            sb.cmd(&fish).args(["--no-config", "-c"]).arg(format!(
                "source {}; complete -C {}",
                s.display(),
                shell_quote(line)
            )),
            None,
        );
        out.ok();
        out.stdout
            .lines()
            .map(|l| l.split('\t').next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(complete("kubectl-kfsched val"), ["validate"]);
    assert_eq!(
        complete("kubectl-kfsched node drain --dry-run=cl"),
        ["--dry-run=client"]
    );
    assert_eq!(
        complete("kubectl-kfsched rewrite "),
        ["b.yml", "pipelines/"]
    );
    assert_eq!(
        complete("kubectl-kfsched node label gpu-1 "),
        ["accelerator=a100", "kfsched.dev/pool=gpu-experiment"]
    );
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
