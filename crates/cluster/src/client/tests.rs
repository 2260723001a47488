use super::*;

const KC: &str = "apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: \"10.0.0.1:6443\", certificate-authority-data: Zm9v}
- name: plain
  cluster: {server: \"10.0.0.2:8080\"}
users:
- name: oidc
  user:
    auth-provider: {name: oidc, config: {id-token: x}}
    username: u
    password: p
- name: exec
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token}
contexts:
- name: c
  context: {cluster: a, user: oidc}
- name: p
  context: {cluster: plain, user: exec}
current-context: c
";

fn kc() -> Kubeconfig {
    Kubeconfig::from_yaml(KC).expect("kubeconfig")
}

fn cluster<'k>(k: &'k Kubeconfig, name: &str) -> &'k Cluster {
    k.clusters
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.cluster.as_ref())
        .expect("cluster")
}

fn user<'k>(k: &'k Kubeconfig, name: &str) -> &'k AuthInfo {
    k.auth_infos
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.auth_info.as_ref())
        .expect("user")
}

#[test]
fn host_port_servers_get_client_gos_default_scheme() {
    let mut k = kc();
    apply_overrides(&mut k, "c", &Overrides::default(), "kc").unwrap();
    assert_eq!(
        cluster(&k, "a").server.as_deref(),
        Some("https://10.0.0.1:6443")
    );
    let mut k = kc();
    apply_overrides(&mut k, "p", &Overrides::default(), "kc").unwrap();
    assert_eq!(
        cluster(&k, "plain").server.as_deref(),
        Some("http://10.0.0.2:8080")
    );
    let o = Overrides {
        server: Some("10.0.0.3:6443/path".into()),
        ..Default::default()
    };
    let e = apply_overrides(&mut kc(), "c", &o, "kc").unwrap_err();
    assert_eq!(
        e.to_string(),
        "server \"10.0.0.3:6443/path\" is not a URL or a host:port pair"
    );
}

#[test]
fn a_token_flag_replaces_every_other_way_the_user_had() {
    let mut k = kc();
    let o = Overrides {
        token: Some("t".into()),
        ..Default::default()
    };
    apply_overrides(&mut k, "c", &o, "kc").unwrap();
    let u = user(&k, "oidc");
    assert!(u.auth_provider.is_none() && u.username.is_none() && u.password.is_none());
    assert!(u.token.is_some());
    let mut k = kc();
    apply_overrides(&mut k, "p", &o, "kc").unwrap();
    assert!(user(&k, "exec").exec.is_none());
}

/// In a pod, `--token` or `--as` apply to the in-cluster config, as in
/// kubectl: its server, CA and token file, with the flag's value over them.
#[test]
fn flags_apply_to_the_in_cluster_config() {
    let sa = tempfile::tempdir().expect("tempdir");
    assert!(
        in_cluster_kubeconfig(Some("10.96.0.1".into()), Some("443".into()), sa.path()).is_none()
    );
    std::fs::write(sa.path().join("token"), "sa-token").expect("token");
    std::fs::write(sa.path().join("ca.crt"), "ca").expect("ca");
    assert!(in_cluster_kubeconfig(None, Some("443".into()), sa.path()).is_none());
    let mut k =
        in_cluster_kubeconfig(Some("fd00::1".into()), Some("443".into()), sa.path()).unwrap();
    let o = Overrides {
        token: Some("t".into()),
        impersonate: Some("alice".into()),
        ..Default::default()
    };
    apply_overrides(&mut k, "kfsched-flags", &o, "the in-cluster config").unwrap();
    let c = cluster(&k, "kfsched-flags");
    assert_eq!(c.server.as_deref(), Some("https://[fd00::1]:443"));
    assert_eq!(
        c.certificate_authority.as_deref(),
        Some(sa.path().join("ca.crt").display().to_string().as_str())
    );
    let u = user(&k, "kfsched-flags");
    assert!(u.token_file.is_none(), "the flag's token replaces the file");
    assert_eq!(u.impersonate.as_deref(), Some("alice"));
    let mut k =
        in_cluster_kubeconfig(Some("10.96.0.1".into()), Some("443".into()), sa.path()).unwrap();
    let o = Overrides {
        impersonate: Some("alice".into()),
        ..Default::default()
    };
    apply_overrides(&mut k, "kfsched-flags", &o, "the in-cluster config").unwrap();
    assert_eq!(
        user(&k, "kfsched-flags").token_file.as_deref(),
        Some(sa.path().join("token").display().to_string().as_str())
    );
    assert_eq!(
        cluster(&k, "kfsched-flags").server.as_deref(),
        Some("https://10.96.0.1:443")
    );
}

#[test]
fn contexts_clusters_and_flag_combinations_are_checked() {
    let e = apply_overrides(&mut kc(), "gone", &Overrides::default(), "kubeconfig kc").unwrap_err();
    assert_eq!(
        e.to_string(),
        "current-context \"gone\" is not a context of kubeconfig kc (contexts: c, p): pass --context NAME or run `kubectl config use-context NAME`"
    );
    let o = Overrides {
        insecure_skip_tls_verify: true,
        certificate_authority: Some("Cargo.toml".into()),
        ..Default::default()
    };
    let e = apply_overrides(&mut kc(), "c", &o, "kc").unwrap_err();
    assert!(
        e.to_string().starts_with(
            "--insecure-skip-tls-verify and --certificate-authority cannot both be given"
        ),
        "{e}"
    );
    // Insecure alone replaces the CA data (client-go does the same).
    let mut k = kc();
    let o = Overrides {
        insecure_skip_tls_verify: true,
        ..Default::default()
    };
    apply_overrides(&mut k, "c", &o, "kc").unwrap();
    assert!(cluster(&k, "a").certificate_authority_data.is_none());
    assert_eq!(cluster(&k, "a").insecure_skip_tls_verify, Some(true));
    let o = Overrides {
        impersonate_groups: vec!["g".into()],
        ..Default::default()
    };
    assert!(apply_overrides(&mut kc(), "c", &o, "kc").is_err());
    let o = Overrides {
        cluster: Some("x".into()),
        server: Some("https://h".into()),
        ..Default::default()
    };
    let e = apply_overrides(
        &mut Overrides::kubeconfig(),
        "kfsched-flags",
        &o,
        FLAGS_ORIGIN,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("--cluster names an entry of a kubeconfig, and there is none"),
        "{e}"
    );
}
