//! kubectl's connection flags, for the commands that read the live
//! cluster without the `node` subcommands' (`check`).

use std::path::PathBuf;

use clap::Args;

use kfsched::node::client::{self, ClientOptions};
use kfsched::node::parse_duration;

#[derive(Args, Debug, Clone)]
pub struct ConnectionArgs {
    /// Kubeconfig file to use (only this file) [default: $KUBECONFIG, else ~/.kube/config, else in-cluster]
    #[arg(long, value_name = "FILE", help_heading = "Connection (as kubectl)")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use [default: its current-context]
    #[arg(long, value_name = "NAME", help_heading = "Connection (as kubectl)")]
    pub context: Option<String>,
    /// Give up connecting, or waiting for one request, after this long (e.g. 10s, 1m) [default: 10s to connect, no request limit]
    #[arg(
        long = "request-timeout",
        value_name = "DURATION",
        help_heading = "Connection (as kubectl)"
    )]
    pub request_timeout: Option<String>,
    /// The API server's address (replaces the cluster's server; with no kubeconfig, the flags alone connect)
    #[arg(
        short = 's',
        long,
        value_name = "URL",
        help_heading = "Connection (as kubectl)"
    )]
    pub server: Option<String>,
    /// Bearer token for the API server
    #[arg(long, value_name = "TOKEN", help_heading = "Connection (as kubectl)")]
    pub token: Option<String>,
    /// Kubeconfig cluster to use [default: the context's]
    #[arg(long, value_name = "NAME", help_heading = "Connection (as kubectl)")]
    pub cluster: Option<String>,
    /// Kubeconfig user to use [default: the context's]
    #[arg(long, value_name = "NAME", help_heading = "Connection (as kubectl)")]
    pub user: Option<String>,
    /// CA certificate file for the server (replaces the kubeconfig's CA and skip setting)
    #[arg(
        long = "certificate-authority",
        value_name = "FILE",
        help_heading = "Connection (as kubectl)"
    )]
    pub certificate_authority: Option<PathBuf>,
    /// Client certificate file for TLS
    #[arg(
        long = "client-certificate",
        value_name = "FILE",
        help_heading = "Connection (as kubectl)"
    )]
    pub client_certificate: Option<PathBuf>,
    /// Client key file for TLS
    #[arg(
        long = "client-key",
        value_name = "FILE",
        help_heading = "Connection (as kubectl)"
    )]
    pub client_key: Option<PathBuf>,
    /// Do not check the server's certificate (insecure)
    #[arg(long = "insecure-skip-tls-verify", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "Connection (as kubectl)")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// Server name to check the server's certificate against [default: the server's host]
    #[arg(
        long = "tls-server-name",
        value_name = "NAME",
        help_heading = "Connection (as kubectl)"
    )]
    pub tls_server_name: Option<String>,
    /// User to impersonate
    #[arg(
        long = "as",
        value_name = "USER",
        help_heading = "Connection (as kubectl)"
    )]
    pub impersonate: Option<String>,
    /// Group to impersonate (repeat for more)
    #[arg(
        long = "as-group",
        value_name = "GROUP",
        help_heading = "Connection (as kubectl)"
    )]
    pub impersonate_groups: Vec<String>,
}

fn set(v: Option<String>) -> Option<String> {
    v.filter(|v| !v.is_empty())
}

impl ConnectionArgs {
    /// The library's connection options (an empty value is no flag, as in client-go).
    pub fn options(self) -> Result<ClientOptions, String> {
        let request_timeout = match self.request_timeout.as_deref().map(parse_duration) {
            None => None,
            Some(Ok(d)) if d.is_zero() => None,
            Some(Ok(d)) => Some(d),
            Some(Err(e)) => return Err(format!("--request-timeout: {e}")),
        };
        Ok(ClientOptions {
            kubeconfig: self.kubeconfig,
            context: self.context,
            kubeconfig_env: std::env::var_os("KUBECONFIG"),
            home: std::env::var_os("HOME").map(PathBuf::from),
            request_timeout,
            overrides: client::Overrides {
                server: set(self.server),
                cluster: set(self.cluster),
                user: set(self.user),
                token: set(self.token),
                certificate_authority: self
                    .certificate_authority
                    .filter(|p| !p.as_os_str().is_empty()),
                client_certificate: self
                    .client_certificate
                    .filter(|p| !p.as_os_str().is_empty()),
                client_key: self.client_key.filter(|p| !p.as_os_str().is_empty()),
                insecure_skip_tls_verify: self.insecure_skip_tls_verify.unwrap_or(false),
                tls_server_name: set(self.tls_server_name),
                impersonate: set(self.impersonate),
                impersonate_groups: self
                    .impersonate_groups
                    .into_iter()
                    .filter(|g| !g.is_empty())
                    .collect(),
            },
        })
    }

    /// Whether any connection flag was given (they mean nothing with a snapshot).
    pub fn any(&self) -> bool {
        self.kubeconfig.is_some()
            || self.context.is_some()
            || self.request_timeout.is_some()
            || self.server.is_some()
            || self.token.is_some()
            || self.cluster.is_some()
            || self.user.is_some()
            || self.certificate_authority.is_some()
            || self.client_certificate.is_some()
            || self.client_key.is_some()
            || self.insecure_skip_tls_verify.is_some()
            || self.tls_server_name.is_some()
            || self.impersonate.is_some()
            || !self.impersonate_groups.is_empty()
    }
}
