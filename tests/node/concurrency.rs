//! Twenty `node taint` processes add twenty different taints to one node at
//! once: every one must be there afterwards (resourceVersion guard plus
//! retry on conflict). The same run with `kubectl taint` is measured and
//! printed, not asserted: kubectl's unguarded patch may drop some.

use std::process::{Command, Stdio};

use super::cluster::{BIN, cluster, create_nodes, delete_nodes, rt, shared, taints, unique};

const N: usize = 20;

/// Starts `N` processes at once and waits for all; returns their exit codes.
fn burst(mut make: impl FnMut(usize) -> Command) -> Vec<i32> {
    let children: Vec<_> = (0..N)
        .map(|i| {
            make(i)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().expect("wait");
            if !out.status.success() {
                eprintln!("{}", String::from_utf8_lossy(&out.stderr));
            }
            out.status.code().unwrap_or(-1)
        })
        .collect()
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn twenty_concurrent_taints_are_all_kept() {
    let _g = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let nodes = create_nodes(&client, &unique("conc"), 2, &[]).await;
        let (ours, theirs) = (&nodes.names[0], &nodes.names[1]);
        let home = std::env::temp_dir();

        let codes = burst(|i| {
            let mut cmd = Command::new(BIN);
            cmd.args(["node", "taint", "--kubeconfig"])
                .arg(&c.admin)
                .arg(ours)
                .arg(format!("c{i}=v:NoSchedule"))
                .env_clear()
                .env("HOME", &home);
            cmd
        });
        assert!(codes.iter().all(|&c| c == 0), "exit codes {codes:?}");
        let got = taints(&client, ours).await;
        let missing: Vec<String> = (0..N).map(|i| format!("c{i}=v:NoSchedule")).filter(|t| !got.contains(t)).collect();
        assert!(missing.is_empty(), "kfsched lost {} of {N} taints: {missing:?}", missing.len());
        eprintln!("kfsched: {N} concurrent `node taint` processes, {} of {N} taints present", got.len());

        let codes = burst(|i| {
            let mut cmd = Command::new(super::cluster::kubectl());
            cmd.args(["taint", "nodes", "--kubeconfig"])
                .arg(&c.admin)
                .arg(theirs)
                .arg(format!("c{i}=v:NoSchedule"))
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HOME", &home);
            cmd
        });
        let kept = taints(&client, theirs).await.len();
        eprintln!(
            "kubectl: {N} concurrent `kubectl taint` processes (exit codes {codes:?}), {kept} of {N} taints present, {} lost",
            N - kept
        );
        delete_nodes(&client, &nodes).await;
    });
}
