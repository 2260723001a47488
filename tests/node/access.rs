//! Reaching the cluster: kubeconfig precedence (`--kubeconfig`,
//! `$KUBECONFIG` merged, `--context`), a user who may only read nodes
//! (one Forbidden line, exit 3), an unreachable or silent server (exit 3
//! within the timeout) and a bad kubeconfig (exit 2).

use std::time::{Duration, Instant};

use super::cluster::{
    cluster, create_nodes, delete_nodes, labels, rt, run_bin, shared, taints, unique, unschedulable,
};

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn read_only_user_gets_one_forbidden_line() {
    let _g = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let nodes = create_nodes(&client, &unique("ro"), 1, &[]).await;
        let n = nodes.names[0].as_str();
        let ro = c.readonly.display().to_string();
        for args in [
            vec!["node", "taint", "--kubeconfig", &ro, n, "a=1:NoSchedule"],
            vec!["node", "label", "--kubeconfig", &ro, n, "a=1"],
            vec!["node", "cordon", "--kubeconfig", &ro, n],
            vec!["node", "drain", "--kubeconfig", &ro, n],
        ] {
            let r = run_bin(&args, &[]);
            r.code(3);
            assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
            assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
            // taint and label write with PUT (update), cordon with PATCH.
            assert!(
                r.stderr.contains("Forbidden: nodes ")
                    && r.stderr.contains("User \"reader\" cannot ")
                    && r.stderr.contains(" resource \"nodes\""),
                "{}",
                r.stderr
            );
        }
        // The server authorizes a dry run like the write itself: a server dry
        // run by this user is refused, which proves it reached the server; a
        // client dry run only reads, and succeeds.
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = dir.path().join("policy.yaml");
        std::fs::write(
            &policy,
            format!(
                "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {{name: ro}}\nspec:\n  nodePools:\n  - name: p\n    nodes: [{n}]\n    labels: {{a: \"1\"}}\n"
            ),
        )
        .expect("policy");
        let policy = policy.display().to_string();
        for args in [
            vec!["node", "taint", "--kubeconfig", &ro, n, "a=1:NoSchedule"],
            vec!["node", "label", "--kubeconfig", &ro, n, "a=1"],
            vec!["node", "cordon", "--kubeconfig", &ro, n],
            vec!["-p", &policy, "node", "apply", "--kubeconfig", &ro],
        ] {
            let server = [args.clone(), vec!["--dry-run=server"]].concat();
            let r = run_bin(&server, &[]);
            r.code(3);
            assert_eq!(r.stderr.lines().count(), 1, "{server:?}: {}", r.stderr);
            assert!(r.stderr.contains("Forbidden: nodes "), "{server:?}: {}", r.stderr);
            let client_side = [args.clone(), vec!["--dry-run=client"]].concat();
            let r = run_bin(&client_side, &[]);
            r.code(0);
            assert!(r.stdout.contains("(dry run)"), "{client_side:?}: {}", r.stdout);
        }
        // node diff only reads: the read-only user sees the plan (exit 1).
        let r = run_bin(&["-p", &policy, "node", "diff", "--kubeconfig", &ro], &[]);
        r.code(1);
        assert!(r.stdout.contains(n), "{}", r.stdout);
        assert!(!labels(&client, n).await.contains_key("a"));
        assert!(taints(&client, n).await.is_empty());
        assert!(!unschedulable(&client, n).await);
        delete_nodes(&client, &nodes).await;
    });
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn unreachable_and_silent_servers_fail_with_exit_3_in_time() {
    let _g = shared();
    let c = cluster();
    let dir = tempfile::tempdir().expect("tempdir");
    let admin = std::fs::read_to_string(&c.admin).expect("admin kubeconfig");

    // Nothing listens: refused at once.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let refused = dir.path().join("refused.kubeconfig");
    std::fs::write(
        &refused,
        admin.replace(&c.server, &format!("https://127.0.0.1:{closed}")),
    )
    .expect("write");
    let start = Instant::now();
    let r = run_bin(
        &[
            "node",
            "cordon",
            "--kubeconfig",
            &refused.display().to_string(),
            "n",
        ],
        &[],
    );
    r.code(3);
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    assert!(
        r.stderr.contains("cannot reach the API server"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);

    // Something accepts the connection and never answers: --request-timeout bounds it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let hung = dir.path().join("silent.kubeconfig");
    std::fs::write(
        &hung,
        admin.replace(&c.server, &format!("https://127.0.0.1:{port}")),
    )
    .expect("write");
    let start = Instant::now();
    let r = run_bin(
        &[
            "node",
            "taint",
            "--kubeconfig",
            &hung.display().to_string(),
            "--request-timeout",
            "2s",
            "n",
            "a=1:NoSchedule",
        ],
        &[],
    );
    r.code(3);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(15),
        "{took:?}"
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    drop(silent);
}

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn kubeconfig_sources_and_bad_kubeconfigs() {
    let _g = shared();
    let c = cluster();
    let dir = tempfile::tempdir().expect("tempdir");
    let admin = std::fs::read_to_string(&c.admin).expect("admin kubeconfig");
    let admin_path = c.admin.display().to_string();
    rt().block_on(async {
        let client = c.client().await;
        let nodes = create_nodes(&client, &unique("kc"), 1, &[]).await;
        let n = nodes.names[0].as_str();

        // $KUBECONFIG: a merged list; files that do not exist are skipped.
        let missing = dir.path().join("missing.kubeconfig").display().to_string();
        let list = format!("{missing}:{admin_path}");
        run_bin(&["node", "label", n, "via=env"], &[("KUBECONFIG", &list)]).ok();

        // --context picks a context; the current one points nowhere.
        let broken_ctx = admin
            .replace("current-context: kfsched-test", "current-context: broken")
            .replace(
                "contexts:\n",
                "contexts:\n- name: broken\n  context: {cluster: nowhere, user: nobody}\n",
            );
        let two = dir.path().join("two.kubeconfig");
        std::fs::write(&two, &broken_ctx).expect("write");
        let two = two.display().to_string();
        let r = run_bin(&["node", "label", "--kubeconfig", &two, n, "via=ctx"], &[]);
        r.code(2);
        run_bin(
            &[
                "node",
                "label",
                "--kubeconfig",
                &two,
                "--context",
                "kfsched-test",
                n,
                "via=ctx",
                "--overwrite",
            ],
            &[],
        )
        .ok();
        let r = run_bin(
            &[
                "node",
                "label",
                "--kubeconfig",
                &admin_path,
                "--context",
                "nope",
                n,
                "x=1",
            ],
            &[],
        );
        r.code(2);
        assert!(
            r.stderr.contains("context \"nope\" not found") && r.stderr.contains("kfsched-test"),
            "{}",
            r.stderr
        );

        // --kubeconfig wins over $KUBECONFIG.
        let bogus = dir.path().join("bogus.kubeconfig");
        std::fs::write(&bogus, "garbage: [").expect("write");
        let bogus = bogus.display().to_string();
        run_bin(
            &[
                "node",
                "label",
                "--kubeconfig",
                &admin_path,
                n,
                "via=flag",
                "--overwrite",
            ],
            &[("KUBECONFIG", &bogus)],
        )
        .ok();

        // Bad kubeconfigs: exit 2, one line, nothing sent.
        for (args, env) in [
            (vec!["node", "cordon", "--kubeconfig", &bogus, n], vec![]),
            (vec!["node", "cordon", "--kubeconfig", &missing, n], vec![]),
            (
                vec!["node", "cordon", n],
                vec![("KUBECONFIG", bogus.as_str())],
            ),
            (
                vec!["node", "cordon", n],
                vec![("KUBECONFIG", missing.as_str())],
            ),
            // No kubeconfig anywhere and not in a pod.
            (vec!["node", "cordon", n], vec![]),
        ] {
            let r = run_bin(&args, &env);
            r.code(2);
            assert_eq!(
                r.stderr.lines().count(),
                1,
                "{args:?} {env:?}: {}",
                r.stderr
            );
        }
        assert!(!unschedulable(&client, n).await);
        delete_nodes(&client, &nodes).await;
    });
}

/// kubectl's connection flags: `-s/--server` with `--token` and
/// `--certificate-authority` (or `--insecure-skip-tls-verify`) connect with
/// no kubeconfig at all; over a kubeconfig, `--server`, `--token`,
/// `--cluster`, `--user` and `--as` replace what the context would use,
/// as kubectl's own flags do (kubectl is asked the same where it matters).
#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn kubectl_connection_flags_work_as_in_kubectl() {
    let _g = shared();
    let c = cluster();
    rt().block_on(async {
        let client = c.client().await;
        let nodes = create_nodes(&client, &unique("flags"), 1, &[]).await;
        let n = nodes.names[0].as_str();
        let token_of = |kc: &std::path::Path| {
            std::fs::read_to_string(kc)
                .expect("kubeconfig")
                .lines()
                .find_map(|l| l.trim().strip_prefix("token: ").map(str::to_string))
                .expect("a token in the kubeconfig")
        };
        let admin_token = token_of(&c.admin);
        let reader_token = token_of(&c.readonly);
        let ca = std::path::Path::new(&std::env::var("KFSCHED_CLUSTER_DIR").expect("cluster dir"))
            .join("pki/ca.crt")
            .display()
            .to_string();
        let admin = c.admin.display().to_string();
        let server = c.server.as_str();

        // No kubeconfig anywhere (run_bin clears the environment; its HOME has none).
        let r = run_bin(
            &["node", "label", n, "via=flags", "-s", server, "--token", &admin_token, "--certificate-authority", &ca],
            &[],
        );
        r.ok();
        assert_eq!(labels(&client, n).await.get("via").map(String::as_str), Some("flags"));
        run_bin(
            &["node", "label", n, "via=insecure", "--overwrite", "--server", server, "--token", &admin_token, "--insecure-skip-tls-verify"],
            &[],
        )
        .ok();
        assert_eq!(labels(&client, n).await.get("via").map(String::as_str), Some("insecure"));
        // -v says where the settings came from.
        let r = run_bin(
            &["-v", "node", "label", n, "via=flags", "--overwrite", "-s", server, "--token", &admin_token, "--certificate-authority", &ca],
            &[],
        );
        r.ok();
        assert_eq!(r.stderr, format!("connecting to {server}/ (the connection flags)\n"));
        let r = run_bin(&["node", "label", n, "via=flags", "--overwrite", "--kubeconfig", &admin, "-v"], &[]);
        assert_eq!(
            r.stderr,
            format!("connecting to {server}/ (kubeconfig {admin}, context kfsched-test, cluster kfsched-test, user admin)\n")
        );
        // $KUBECONFIG naming no existing file is no kubeconfig (client-go
        // skips missing files): the flags alone connect.
        run_bin(
            &["node", "label", n, "via=env", "--overwrite", "-s", server, "--token", &admin_token, "--certificate-authority", &ca],
            &[("KUBECONFIG", "/nonexistent/kubeconfig")],
        )
        .ok();
        assert_eq!(labels(&client, n).await.get("via").map(String::as_str), Some("env"));
        // host:port (no scheme) is https when TLS is configured, as in
        // client-go; the bare flag takes no value from the next argument.
        let host_port = server.trim_start_matches("https://");
        run_bin(
            &["node", "label", "--insecure-skip-tls-verify", n, "via=hostport", "--overwrite", "-s", host_port, "--token", &admin_token],
            &[],
        )
        .ok();
        assert_eq!(labels(&client, n).await.get("via").map(String::as_str), Some("hostport"));
        // Without a CA the server's certificate is not trusted: exit 3, nothing written.
        let r = run_bin(&["node", "label", n, "via=untrusted", "--overwrite", "-s", server, "--token", &admin_token], &[]);
        r.code(3);
        assert!(r.stderr.contains("invalid peer certificate"), "{}", r.stderr);
        assert_eq!(labels(&client, n).await.get("via").map(String::as_str), Some("hostport"));
        // A token without a server and without a kubeconfig: exit 2, one line.
        let r = run_bin(&["node", "label", n, "via=x", "--token", &admin_token], &[]);
        r.code(2);
        assert_eq!(
            r.stderr,
            "error: no kubeconfig: the connection flags need --server URL (or pass --kubeconfig FILE, set KUBECONFIG or create ~/.kube/config)\n"
        );
        let r = run_bin(&["node", "label", n, "via=x", "-s", server, "--certificate-authority", "/nonexistent/ca.crt"], &[]);
        r.code(2);
        assert_eq!(r.stderr, "error: --certificate-authority /nonexistent/ca.crt: no such file\n");

        // Over the admin kubeconfig: the reader's token, or impersonating the
        // reader, is refused like the reader itself; kubectl agrees on --as.
        for flags in [vec!["--token", reader_token.as_str()], vec!["--as", "reader"]] {
            let args = [vec!["node", "label", n, "via=reader", "--overwrite", "--kubeconfig", &admin], flags.clone()].concat();
            let r = run_bin(&args, &[]);
            r.code(3);
            assert!(r.stderr.contains("User \"reader\" cannot update resource \"nodes\""), "{flags:?}: {}", r.stderr);
        }
        let kubectl = std::process::Command::new(super::cluster::kubectl())
            .args(["--kubeconfig", &admin, "label", "node", n, "via=reader", "--overwrite", "--as", "reader"])
            .output()
            .expect("kubectl runs");
        assert!(!kubectl.status.success());
        assert!(String::from_utf8_lossy(&kubectl.stderr).contains("User \"reader\" cannot patch resource \"nodes\""));
        run_bin(&["node", "label", n, "via=masters", "--overwrite", "--kubeconfig", &admin, "--as", "admin", "--as-group", "system:masters"], &[]).ok();
        assert_eq!(labels(&client, n).await.get("via").map(String::as_str), Some("masters"));

        // --server replaces the context's server: a closed port, exit 3.
        let r = run_bin(&["node", "label", n, "via=x", "--overwrite", "--kubeconfig", &admin, "-s", "https://127.0.0.1:1"], &[]);
        r.code(3);
        assert!(r.stderr.contains("cannot reach the API server"), "{}", r.stderr);

        // --cluster and --user choose other entries of the kubeconfig.
        let dir = tempfile::tempdir().expect("tempdir");
        let two = dir.path().join("two.kubeconfig");
        std::fs::write(
            &two,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: closed\n  cluster: {{server: \"https://127.0.0.1:1\"}}\n- name: real\n  cluster: {{server: \"{server}\", certificate-authority: \"{ca}\"}}\nusers:\n- name: reader\n  user: {{token: \"{reader_token}\"}}\n- name: admin\n  user: {{token: \"{admin_token}\"}}\ncontexts:\n- name: c\n  context: {{cluster: closed, user: reader}}\ncurrent-context: c\n"
            ),
        )
        .expect("kubeconfig");
        let two = two.display().to_string();
        run_bin(&["node", "label", n, "via=x", "--overwrite", "--kubeconfig", &two], &[]).code(3);
        let r = run_bin(&["node", "label", n, "via=x", "--overwrite", "--kubeconfig", &two, "--cluster", "real"], &[]);
        r.code(3);
        assert!(r.stderr.contains("User \"reader\" cannot update"), "{}", r.stderr);
        run_bin(&["node", "label", n, "via=chosen", "--overwrite", "--kubeconfig", &two, "--cluster", "real", "--user", "admin"], &[]).ok();
        assert_eq!(labels(&client, n).await.get("via").map(String::as_str), Some("chosen"));
        let r = run_bin(&["node", "label", n, "via=x", "--kubeconfig", &two, "--user", "nobody"], &[]);
        r.code(2);
        assert_eq!(r.stderr, format!("error: --user \"nobody\": not found in kubeconfig {two} (users: reader, admin)\n"));
        let r = run_bin(&["node", "label", n, "via=x", "--kubeconfig", &two, "--cluster", "nowhere"], &[]);
        r.code(2);
        assert_eq!(r.stderr, format!("error: --cluster \"nowhere\": not found in kubeconfig {two} (clusters: closed, real)\n"));
        delete_nodes(&client, &nodes).await;
    });
}
