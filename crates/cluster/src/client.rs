//! Connecting to the cluster the way kubectl does, and API errors in one
//! readable line.
//!
//! Precedence (client-go's loading rules): `--kubeconfig FILE` (that file
//! only), else `$KUBECONFIG` (a path list, merged, first file to set a
//! value wins, missing files skipped), else `~/.kube/config`; `--context`
//! overrides `current-context`. In-cluster config is used only when none of
//! these exists, so an explicit or environment kubeconfig is never silently
//! replaced by the pod's service account.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::config::{
    AuthInfo, Cluster, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster,
    NamedContext,
};
use kube::{Client, Config};

use super::Error;

/// Where the connection settings come from. The binary fills this from
/// flags and the environment; tests fill it directly.
#[derive(Clone, Debug, Default)]
pub struct ClientOptions {
    /// `--kubeconfig FILE`.
    pub kubeconfig: Option<PathBuf>,
    /// `--context NAME`.
    pub context: Option<String>,
    /// The value of `$KUBECONFIG`.
    pub kubeconfig_env: Option<OsString>,
    /// The home directory (for `~/.kube/config`).
    pub home: Option<PathBuf>,
    /// `--request-timeout`: bounds connecting and each non-watch request.
    pub request_timeout: Option<Duration>,
    /// kubectl's other connection flags (`--server`, `--token`, ...).
    pub overrides: Overrides,
}

/// kubectl's connection flags (cli-runtime's `ConfigFlags`), applied to the
/// selected context's cluster and user the way client-go's
/// `DirectClientConfig` applies its overrides: `--cluster` / `--user`
/// choose other entries of the kubeconfig; `--server`, `--token`,
/// `--client-certificate` / `--client-key` and `--as` / `--as-group`
/// replace the entry's values; `--certificate-authority` or
/// `--insecure-skip-tls-verify` replace the CA and the skip setting
/// together; `--server` also replaces `tls-server-name` with
/// `--tls-server-name` (or none). Without any kubeconfig, `--server` makes
/// one from the flags alone.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub server: Option<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    pub token: Option<String>,
    pub certificate_authority: Option<PathBuf>,
    pub client_certificate: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    pub insecure_skip_tls_verify: bool,
    pub tls_server_name: Option<String>,
    /// `--as`.
    pub impersonate: Option<String>,
    /// `--as-group`.
    pub impersonate_groups: Vec<String>,
}

impl Overrides {
    fn is_empty(&self) -> bool {
        self.server.is_none()
            && self.cluster.is_none()
            && self.user.is_none()
            && self.token.is_none()
            && self.certificate_authority.is_none()
            && self.client_certificate.is_none()
            && self.client_key.is_none()
            && !self.insecure_skip_tls_verify
            && self.tls_server_name.is_none()
            && self.impersonate.is_none()
            && self.impersonate_groups.is_empty()
    }

    /// The kubeconfig the flags alone describe (no file exists).
    fn kubeconfig() -> Kubeconfig {
        const NAME: &str = FLAGS_NAME;
        Kubeconfig {
            clusters: vec![NamedCluster {
                name: NAME.into(),
                cluster: Some(Cluster::default()),
                ..Default::default()
            }],
            auth_infos: vec![NamedAuthInfo {
                name: NAME.into(),
                auth_info: Some(AuthInfo::default()),
                ..Default::default()
            }],
            contexts: vec![NamedContext {
                name: NAME.into(),
                context: Some(Context {
                    cluster: NAME.into(),
                    user: Some(NAME.into()),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            current_context: Some(NAME.into()),
            ..Default::default()
        }
    }
}

/// The context, cluster and user of a kubeconfig kfsched makes itself
/// (from the flags alone, or from the in-cluster config).
const FLAGS_NAME: &str = "kfsched-flags";

/// Where a pod's service account token and CA are mounted.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The in-cluster config as a kubeconfig (server from the service
/// environment variables, the mounted CA and token file), so the
/// connection flags apply to it as to any other; `None` outside a pod.
fn in_cluster_kubeconfig(
    host: Option<String>,
    port: Option<String>,
    sa_dir: &Path,
) -> Option<Kubeconfig> {
    let (host, port) = (
        host.filter(|h| !h.is_empty())?,
        port.filter(|p| !p.is_empty())?,
    );
    let token = sa_dir.join("token");
    if !token.is_file() {
        return None;
    }
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let mut k = Overrides::kubeconfig();
    if let Some(c) = k.clusters[0].cluster.as_mut() {
        c.server = Some(format!("https://{host}:{port}"));
        let ca = sa_dir.join("ca.crt");
        c.certificate_authority = ca.is_file().then(|| ca.display().to_string());
    }
    if let Some(u) = k.auth_infos[0].auth_info.as_mut() {
        u.token_file = Some(token.display().to_string());
    }
    Some(k)
}

/// Where the kubeconfig came from when the flags alone make it.
const FLAGS_ORIGIN: &str = "the connection flags";

/// A file named by a flag, made absolute (kube-rs reads it later, maybe
/// from another directory) and checked now, so a typo is one line, exit 2.
fn flag_file(flag: &str, path: &Path) -> Result<String, Error> {
    if !path.is_file() {
        return Err(Error::Config(format!(
            "{flag} {}: no such file",
            path.display()
        )));
    }
    Ok(std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string())
}

/// Applies the flags to the kubeconfig; returns the cluster and user names
/// to load.
fn apply_overrides(
    kubeconfig: &mut Kubeconfig,
    context: &str,
    o: &Overrides,
    origin: &str,
) -> Result<(String, Option<String>), Error> {
    let names = |v: Vec<&str>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let Some(ctx) = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)
        .map(|c| c.context.clone().unwrap_or_default())
    else {
        let known = names(
            kubeconfig
                .contexts
                .iter()
                .map(|c| c.name.as_str())
                .collect(),
        );
        return Err(Error::Config(format!(
            "current-context {context:?} is not a context of {origin} (contexts: {known}): pass --context NAME or run `kubectl config use-context NAME`"
        )));
    };
    if o.cluster.is_some() && context == FLAGS_NAME {
        return Err(Error::Config(
            "--cluster names an entry of a kubeconfig, and there is none: pass --kubeconfig FILE, set KUBECONFIG or create ~/.kube/config".into(),
        ));
    }
    if o.insecure_skip_tls_verify && o.certificate_authority.is_some() {
        // client-go: "specifying a root certificates file with the insecure flag is not allowed".
        return Err(Error::Config(
            "--insecure-skip-tls-verify and --certificate-authority cannot both be given: the first skips the check the second configures".into(),
        ));
    }
    let cluster_name = o.cluster.clone().unwrap_or(ctx.cluster);
    let Some(named) = kubeconfig
        .clusters
        .iter_mut()
        .find(|c| c.name == cluster_name)
    else {
        let known = names(
            kubeconfig
                .clusters
                .iter()
                .map(|c| c.name.as_str())
                .collect(),
        );
        return Err(Error::Config(if o.cluster.is_some() {
            format!("--cluster {cluster_name:?}: not found in {origin} (clusters: {known})")
        } else {
            format!(
                "context {context:?} names cluster {cluster_name:?}, which {origin} does not have (clusters: {known})"
            )
        }));
    };
    let cluster = named.cluster.get_or_insert_with(Cluster::default);
    if let Some(server) = &o.server {
        cluster.server = Some(server.clone());
    }
    if o.insecure_skip_tls_verify || o.certificate_authority.is_some() {
        cluster.insecure_skip_tls_verify = Some(o.insecure_skip_tls_verify);
        cluster.certificate_authority = match &o.certificate_authority {
            Some(p) => Some(flag_file("--certificate-authority", p)?),
            None => None,
        };
        cluster.certificate_authority_data = None;
    }
    if o.server.is_some() || o.tls_server_name.is_some() {
        cluster.tls_server_name = o.tls_server_name.clone();
    }

    let user_name = o.user.clone().or(ctx.user);
    let touches_user = o.token.is_some()
        || o.client_certificate.is_some()
        || o.client_key.is_some()
        || o.impersonate.is_some()
        || !o.impersonate_groups.is_empty();
    let exists = |name: &str| kubeconfig.auth_infos.iter().any(|u| u.name == name);
    let user_name = match user_name {
        Some(u) if exists(&u) => Some(u),
        Some(u) if o.user.is_some() => {
            let known = names(
                kubeconfig
                    .auth_infos
                    .iter()
                    .map(|u| u.name.as_str())
                    .collect(),
            );
            return Err(Error::Config(format!(
                "--user {u:?}: not found in {origin} (users: {known})"
            )));
        }
        // client-go and kube-rs treat a missing user as no credentials;
        // the flags then fill a new entry.
        other if !touches_user => other,
        other => {
            let name = other.unwrap_or_else(|| "kfsched-flags".into());
            kubeconfig.auth_infos.push(NamedAuthInfo {
                name: name.clone(),
                auth_info: Some(AuthInfo::default()),
                ..Default::default()
            });
            Some(name)
        }
    };
    if let Some(name) = &user_name
        && let Some(named) = kubeconfig.auth_infos.iter_mut().find(|u| &u.name == name)
    {
        override_user(named.auth_info.get_or_insert_with(AuthInfo::default), o)?;
    }
    default_scheme(kubeconfig, &cluster_name, user_name.as_deref())?;
    Ok((cluster_name, user_name))
}

/// The user flags over a kubeconfig user entry.
fn override_user(user: &mut AuthInfo, o: &Overrides) -> Result<(), Error> {
    // kube-rs tries an auth provider and basic auth before a token, and
    // an exec plugin's certificate over a file's; kubectl's flag wins
    // over what the entry had, so the entry's other methods go.
    if let Some(t) = &o.token {
        user.token = Some(t.clone().into());
        user.token_file = None;
        user.auth_provider = None;
        user.exec = None;
        user.username = None;
        user.password = None;
    }
    if let Some(p) = &o.client_certificate {
        user.client_certificate = Some(flag_file("--client-certificate", p)?);
        user.client_certificate_data = None;
        user.exec = None;
    }
    if let Some(p) = &o.client_key {
        user.client_key = Some(flag_file("--client-key", p)?);
        user.client_key_data = None;
    }
    if let Some(a) = &o.impersonate {
        user.impersonate = Some(a.clone());
    }
    if !o.impersonate_groups.is_empty() {
        user.impersonate_groups = Some(o.impersonate_groups.clone());
    }
    // client-go refuses the same: groups are impersonated for a user.
    if !o.impersonate_groups.is_empty() && user.impersonate.is_none() {
        return Err(Error::Config(
            "--as-group needs --as USER (the user whose groups they are)".into(),
        ));
    }
    Ok(())
}

/// client-go's `DefaultServerURL`: a server given as `host:port` gets
/// `https://` when TLS is configured (a CA, a client certificate or
/// skipping the check), else `http://`. kube-rs would take it as a URL
/// without a scheme and fail on the first request.
fn default_scheme(
    kubeconfig: &mut Kubeconfig,
    cluster: &str,
    user: Option<&str>,
) -> Result<(), Error> {
    let has_cert = user
        .and_then(|u| kubeconfig.auth_infos.iter().find(|n| n.name == u))
        .and_then(|n| n.auth_info.as_ref())
        .is_some_and(|a| a.client_certificate.is_some() || a.client_certificate_data.is_some());
    let Some(c) = kubeconfig
        .clusters
        .iter_mut()
        .find(|c| c.name == cluster)
        .and_then(|c| c.cluster.as_mut())
    else {
        return Ok(());
    };
    let Some(server) = c.server.as_deref().filter(|s| !s.contains("://")) else {
        return Ok(());
    };
    if server.is_empty() {
        return Err(Error::Config(format!(
            "cluster {cluster:?} has no server: pass --server URL or set it with `kubectl config set-cluster {cluster} --server URL`"
        )));
    }
    let tls = has_cert
        || c.certificate_authority.is_some()
        || c.certificate_authority_data.is_some()
        || c.insecure_skip_tls_verify == Some(true);
    let host = server.strip_suffix('/').unwrap_or(server);
    if host.is_empty() || host.contains(['/', '?', '#', ' ']) {
        return Err(Error::Config(format!(
            "server {server:?} is not a URL or a host:port pair"
        )));
    }
    c.server = Some(format!("{}://{host}", if tls { "https" } else { "http" }));
    Ok(())
}

/// The clients a live command uses.
#[derive(Clone)]
pub struct Clients {
    /// For ordinary requests: kube-rs retries 429/503/504 on its own.
    pub main: Client,
    /// For evictions and watches: no hidden retries (a 429 from the
    /// Eviction API is a PodDisruptionBudget verdict that the drain loop
    /// reports and paces itself) and no read timeout (watches are long).
    pub raw: Client,
    /// The API server URL, for messages.
    pub server: String,
    /// Where the settings came from (`kubeconfig ~/.kube/config, context
    /// dev, cluster dev, user alice`), for `-v`.
    pub source: String,
}

/// Default connect timeout: an unreachable server fails within this.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads the kubeconfig per the precedence above and builds the clients.
/// A kubeconfig that is missing, unreadable or lacks the context is
/// [`Error::Config`] (exit 2).
pub async fn connect(opts: &ClientOptions) -> Result<Clients, Error> {
    let (config, source) = load_config(opts).await?;
    let server = config.cluster_url.to_string();
    // kube-rs panics on the first request to a URL without both.
    if config.cluster_url.scheme().is_none() || config.cluster_url.authority().is_none() {
        return Err(Error::Config(format!(
            "server {server:?} is not a URL or a host:port pair"
        )));
    }
    let mut main_cfg = config.clone();
    main_cfg.connect_timeout = Some(opts.request_timeout.unwrap_or(CONNECT_TIMEOUT));
    if let Some(t) = opts.request_timeout {
        main_cfg.read_timeout = Some(t);
        main_cfg.write_timeout = Some(t);
    }
    let mut raw_cfg = config;
    raw_cfg.connect_timeout = Some(opts.request_timeout.unwrap_or(CONNECT_TIMEOUT));
    raw_cfg.default_retry = false;
    let main = Client::try_from(main_cfg)
        .map_err(|e| Error::Config(format!("cannot use the kubeconfig: {}", describe(&e))))?;
    let raw = Client::try_from(raw_cfg)
        .map_err(|e| Error::Config(format!("cannot use the kubeconfig: {}", describe(&e))))?;
    Ok(Clients {
        main,
        raw,
        server,
        source,
    })
}

async fn load_config(opts: &ClientOptions) -> Result<(Config, String), Error> {
    let (mut kubeconfig, origin) = match read_kubeconfig(opts)? {
        Some(k) => k,
        None if opts.overrides.server.is_some() && opts.context.is_none() => {
            (Overrides::kubeconfig(), FLAGS_ORIGIN.to_string())
        }
        // In a pod, kubectl applies the flags to the in-cluster config
        // (client-go's `inClusterClientConfig`): the same here, through a
        // kubeconfig that says what the in-cluster config is.
        None if !opts.overrides.is_empty()
            && opts.context.is_none()
            && let Some(k) = in_cluster_kubeconfig(
                std::env::var("KUBERNETES_SERVICE_HOST").ok(),
                std::env::var("KUBERNETES_SERVICE_PORT").ok(),
                Path::new(SERVICE_ACCOUNT_DIR),
            ) =>
        {
            (k, "the in-cluster config".to_string())
        }
        None if !opts.overrides.is_empty() && opts.context.is_none() => {
            return Err(Error::Config(
                "no kubeconfig: the connection flags need --server URL (or pass --kubeconfig FILE, set KUBECONFIG or create ~/.kube/config)".into(),
            ));
        }
        None => {
            if let Some(ctx) = &opts.context {
                return Err(Error::Config(format!(
                    "--context {ctx:?} needs a kubeconfig: pass --kubeconfig FILE or set KUBECONFIG"
                )));
            }
            return Config::incluster().map(|c| (c, "the in-cluster config".into())).map_err(|e| {
                // Why the in-cluster config failed matters only in a pod.
                let pod = if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
                    format!("; the in-cluster config failed: {e}")
                } else {
                    String::new()
                };
                Error::Config(format!(
                    "no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG or create ~/.kube/config{pod}"
                ))
            });
        }
    };
    if let Some(ctx) = &opts.context
        && !kubeconfig.contexts.iter().any(|c| &c.name == ctx)
    {
        let known: Vec<&str> = kubeconfig
            .contexts
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        return Err(Error::Config(format!(
            "context {ctx:?} not found in {origin} (contexts: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    }
    if opts.context.is_none()
        && kubeconfig
            .current_context
            .as_deref()
            .unwrap_or("")
            .is_empty()
    {
        return Err(Error::Config(format!(
            "{origin} sets no current-context: pass --context NAME or run `kubectl config use-context NAME`"
        )));
    }
    let context = opts
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())
        .unwrap_or_default();
    let (cluster, user) = apply_overrides(&mut kubeconfig, &context, &opts.overrides, &origin)?;
    let source = if context == FLAGS_NAME {
        origin.clone()
    } else {
        format!(
            "{origin}, context {context}, cluster {cluster}, user {}",
            user.as_deref().unwrap_or("(none)")
        )
    };
    let kco = KubeConfigOptions {
        context: Some(context),
        cluster: Some(cluster),
        user,
    };
    Config::from_custom_kubeconfig(kubeconfig, &kco)
        .await
        .map(|c| (c, source))
        .map_err(|e| Error::Config(format!("cannot use {origin}: {}", chain(&e))))
}

/// The merged kubeconfig and where it came from, or `None` when there is none.
fn read_kubeconfig(opts: &ClientOptions) -> Result<Option<(Kubeconfig, String)>, Error> {
    if let Some(path) = &opts.kubeconfig {
        return read_one(path).map(|k| Some((k, format!("kubeconfig {}", path.display()))));
    }
    if let Some(env) = opts.kubeconfig_env.as_ref().filter(|e| !e.is_empty()) {
        let paths: Vec<PathBuf> = std::env::split_paths(env)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        let mut merged: Option<Kubeconfig> = None;
        for p in paths.iter().filter(|p| p.exists()) {
            let k = read_one(p)?;
            merged = Some(match merged {
                None => k,
                Some(m) => m
                    .merge(k)
                    .map_err(|e| Error::Config(format!("cannot merge {}: {e}", p.display())))?,
            });
        }
        return match merged {
            Some(k) => Ok(Some((k, "the kubeconfig from KUBECONFIG".into()))),
            // client-go skips missing files and, with none left, builds the
            // config from the flags; it does not fall back to ~/.kube/config.
            None if opts.overrides.server.is_some() => Ok(None),
            None => Err(Error::Config(format!(
                "KUBECONFIG={} names no existing file",
                env.to_string_lossy()
            ))),
        };
    }
    if let Some(home) = &opts.home {
        let p = home.join(".kube").join("config");
        if p.exists() {
            return read_one(&p).map(|k| Some((k, format!("kubeconfig {}", p.display()))));
        }
    }
    Ok(None)
}

fn read_one(path: &Path) -> Result<Kubeconfig, Error> {
    if !path.exists() {
        return Err(Error::Config(format!(
            "kubeconfig {} does not exist",
            path.display()
        )));
    }
    Kubeconfig::read_from(path).map_err(|e| {
        Error::Config(format!(
            "cannot read kubeconfig {}: {}",
            path.display(),
            chain(&e)
        ))
    })
}

/// The kubeconfig files kubectl would read, in order, whether they exist
/// or not: `--kubeconfig`, else every file of `$KUBECONFIG`, else
/// `~/.kube/config`.
pub fn kubeconfig_files(opts: &ClientOptions) -> Vec<PathBuf> {
    if let Some(p) = &opts.kubeconfig {
        return vec![p.clone()];
    }
    if let Some(env) = opts.kubeconfig_env.as_ref().filter(|e| !e.is_empty()) {
        return std::env::split_paths(env)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
    }
    opts.home
        .iter()
        .map(|h| h.join(".kube").join("config"))
        .collect()
}

/// The context names of [`kubeconfig_files`], once each, in order. Files
/// that are missing or cannot be read are skipped: this is for completion,
/// which offers what it finds.
pub fn context_names(opts: &ClientOptions) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in kubeconfig_files(opts) {
        if let Ok(k) = Kubeconfig::read_from(&p) {
            for c in k.contexts {
                if !out.contains(&c.name) {
                    out.push(c.name);
                }
            }
        }
    }
    out
}

/// An error and its sources, deduplicated, on one line.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = c.source();
    }
    one_line(&parts.join(": "))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One readable line for an API error: `Reason: message` for a server
/// Status (`Forbidden: nodes "a" is forbidden: User "reader" cannot patch
/// resource "nodes" ...`), the root cause for a transport failure.
pub fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => {
            let reason = if s.reason.is_empty() {
                format!("HTTP {}", s.code)
            } else {
                s.reason.clone()
            };
            if s.message.is_empty() {
                reason
            } else {
                one_line(&format!("{reason}: {}", s.message))
            }
        }
        kube::Error::HyperError(_) | kube::Error::Service(_) => {
            let c = chain(e);
            if c.contains("elapsed")
                || c.to_lowercase().contains("timed out")
                || c.contains("timeout")
            {
                format!("the API server did not answer in time ({c})")
            } else {
                format!("cannot reach the API server ({c})")
            }
        }
        other => chain(other),
    }
}

/// The HTTP status of a server error.
pub fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

pub fn is_not_found(e: &kube::Error) -> bool {
    status_code(e) == Some(404)
}

pub fn is_conflict(e: &kube::Error) -> bool {
    status_code(e) == Some(409)
}

pub fn is_denied(e: &kube::Error) -> bool {
    matches!(status_code(e), Some(401) | Some(403))
}

#[cfg(test)]
mod tests;
