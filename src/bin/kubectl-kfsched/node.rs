//! `node` subcommands: flags here, work in `kfsched::node`.
//!
//! Turns the flags into the library's option structs, builds a tokio
//! runtime, connects, runs one command, prints what it reports and maps
//! its outcome to SPEC §4's exit code. Ctrl-C during `node drain` is caught
//! and handed to the drain (a second Ctrl-C exits at once).

mod drain_output;
mod pools_output;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::exit::Exit;
use drain_output::DrainOutput;
use kfsched::node::client::{self, ClientOptions, Clients};
use kfsched::node::cordon::CordonOptions;
use kfsched::node::drain::{self, DrainOptions};
use kfsched::node::label::{self, LabelOptions};
use kfsched::node::pools::{self, PoolOptions};
use kfsched::node::taint::{self, TaintOptions};
use kfsched::node::{DryRun, Error, Targets, parse_duration, parse_go_duration, parse_selector};
use kfsched::policy::Policy;

#[derive(Args, Debug)]
#[command(
    after_help = "Cluster: --kubeconfig FILE, else $KUBECONFIG (merged list), else ~/.kube/config, else in-cluster config.\nExit codes: 0 done or nothing to change, 1 differences (node diff), 2 bad usage or invalid input, 3 cluster failure or drain not completed, 130 interrupted."
)]
pub struct NodeArgs {
    /// Kubeconfig file to use (only this file) [default: $KUBECONFIG, else ~/.kube/config, else in-cluster]
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        help_heading = "Connection (as kubectl)"
    )]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use [default: its current-context]
    #[arg(
        long,
        global = true,
        value_name = "NAME",
        help_heading = "Connection (as kubectl)"
    )]
    pub context: Option<String>,
    /// Give up connecting, or waiting for one request, after this long (e.g. 10s, 1m) [default: 10s to connect, no request limit]
    #[arg(
        long = "request-timeout",
        global = true,
        value_name = "DURATION",
        help_heading = "Connection (as kubectl)"
    )]
    pub request_timeout: Option<String>,
    /// The API server's address (replaces the cluster's server; with no kubeconfig, the flags alone connect)
    #[arg(
        short = 's',
        long,
        global = true,
        value_name = "URL",
        help_heading = "Connection (as kubectl)"
    )]
    pub server: Option<String>,
    /// Bearer token for the API server
    #[arg(
        long,
        global = true,
        value_name = "TOKEN",
        help_heading = "Connection (as kubectl)"
    )]
    pub token: Option<String>,
    /// Kubeconfig cluster to use [default: the context's]
    #[arg(
        long,
        global = true,
        value_name = "NAME",
        help_heading = "Connection (as kubectl)"
    )]
    pub cluster: Option<String>,
    /// Kubeconfig user to use [default: the context's]
    #[arg(
        long,
        global = true,
        value_name = "NAME",
        help_heading = "Connection (as kubectl)"
    )]
    pub user: Option<String>,
    /// CA certificate file for the server (replaces the kubeconfig's CA and skip setting)
    #[arg(
        long = "certificate-authority",
        global = true,
        value_name = "FILE",
        help_heading = "Connection (as kubectl)"
    )]
    pub certificate_authority: Option<PathBuf>,
    /// Client certificate file for TLS
    #[arg(
        long = "client-certificate",
        global = true,
        value_name = "FILE",
        help_heading = "Connection (as kubectl)"
    )]
    pub client_certificate: Option<PathBuf>,
    /// Client key file for TLS
    #[arg(
        long = "client-key",
        global = true,
        value_name = "FILE",
        help_heading = "Connection (as kubectl)"
    )]
    pub client_key: Option<PathBuf>,
    /// Do not check the server's certificate (insecure)
    #[arg(long = "insecure-skip-tls-verify", global = true, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", help_heading = "Connection (as kubectl)")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// Server name to check the server's certificate against [default: the server's host]
    #[arg(
        long = "tls-server-name",
        global = true,
        value_name = "NAME",
        help_heading = "Connection (as kubectl)"
    )]
    pub tls_server_name: Option<String>,
    /// User to impersonate
    #[arg(
        long = "as",
        global = true,
        value_name = "USER",
        help_heading = "Connection (as kubectl)"
    )]
    pub impersonate: Option<String>,
    /// Group to impersonate (repeat for more)
    #[arg(
        long = "as-group",
        global = true,
        value_name = "GROUP",
        help_heading = "Connection (as kubectl)"
    )]
    pub impersonate_groups: Vec<String>,

    /// Say which API server and which settings are used
    #[arg(short = 'v', long = "verbose", global = true)]
    pub verbose: bool,

    #[command(subcommand)]
    pub command: NodeCommand,
}

#[derive(Subcommand, Debug)]
pub enum NodeCommand {
    /// Add or remove taints: key=value:Effect, key:Effect, key=value:Effect-, key:Effect-, key-
    #[command(
        after_help = "Examples:\n  kubectl kfsched node taint worker-1 dedicated=gpu:NoSchedule\n  kubectl kfsched node taint -l pool=gpu dedicated=gpu:NoSchedule --overwrite\n  kubectl kfsched node taint worker-1 dedicated:NoSchedule-\n  kubectl kfsched node taint --all dedicated-"
    )]
    Taint(TaintArgs),
    /// Set or remove labels: key=value, key-
    #[command(
        after_help = "Examples:\n  kubectl kfsched node label worker-1 disktype=ssd\n  kubectl kfsched node label -l pool=gpu zone=b --overwrite\n  kubectl kfsched node label worker-1 disktype-"
    )]
    Label(LabelArgs),
    /// Mark nodes unschedulable
    Cordon(CordonArgs),
    /// Mark nodes schedulable again
    Uncordon(CordonArgs),
    /// Cordon, then evict every pod (lists every pod's fate first; refuses, naming the flag, if one is blocked)
    #[command(
        after_help = "Examples:\n  kubectl kfsched node drain worker-1 --ignore-daemonsets\n  kubectl kfsched node drain -l pool=gpu --ignore-daemonsets --delete-emptydir-data --timeout 10m\n  kubectl kfsched node drain worker-1 --dry-run=server"
    )]
    Drain(DrainArgs),
    /// Make every node of every nodePools entry carry the pool's labels and taints
    #[command(override_usage = "kubectl kfsched node apply [OPTIONS]")]
    Apply(ApplyArgs),
    /// Show what `node apply` would change (exit 1 when it would change something)
    #[command(override_usage = "kubectl kfsched node diff [OPTIONS]")]
    Diff(PoolDiffArgs),
}

const DRY_RUN_HELP: &str = "none (write), client (print only, send nothing) or server (the server checks, nothing is stored)";

#[derive(Args, Debug)]
pub struct TaintArgs {
    /// Node names, then taint changes
    #[arg(value_name = "NODE|TAINT", required = true)]
    pub args: Vec<String>,
    /// Select nodes by label (=, ==, !=, in, notin, key, !key, key>N, key<N)
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Every node
    #[arg(long)]
    pub all: bool,
    /// Replace the value of a taint with the same key and effect
    #[arg(long)]
    pub overwrite: bool,
    #[arg(long = "dry-run", value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "unchanged", default_value = "none", help = DRY_RUN_HELP)]
    pub dry_run: String,
}

#[derive(Args, Debug)]
pub struct LabelArgs {
    /// Node names, then label changes
    #[arg(value_name = "NODE|LABEL", required = true)]
    pub args: Vec<String>,
    /// Select nodes by label (=, ==, !=, in, notin, key, !key, key>N, key<N)
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Every node
    #[arg(long)]
    pub all: bool,
    /// Replace an existing label's value
    #[arg(long)]
    pub overwrite: bool,
    #[arg(long = "dry-run", value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "unchanged", default_value = "none", help = DRY_RUN_HELP)]
    pub dry_run: String,
}

#[derive(Args, Debug)]
pub struct CordonArgs {
    /// Node names
    #[arg(value_name = "NODE")]
    pub nodes: Vec<String>,
    /// Select nodes by label (=, ==, !=, in, notin, key, !key, key>N, key<N)
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    #[arg(long = "dry-run", value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "unchanged", default_value = "none", help = DRY_RUN_HELP)]
    pub dry_run: String,
}

#[derive(Args, Debug)]
pub struct DrainArgs {
    /// Node names
    #[arg(value_name = "NODE")]
    pub nodes: Vec<String>,
    /// Select nodes by label (=, ==, !=, in, notin, key, !key, key>N, key<N)
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Leave DaemonSet-managed pods on the node
    #[arg(long = "ignore-daemonsets")]
    pub ignore_daemonsets: bool,
    /// Evict pods that use emptyDir volumes (their data is lost)
    #[arg(long = "delete-emptydir-data")]
    pub delete_emptydir_data: bool,
    /// Also evict pods that no controller manages (they will NOT come back)
    #[arg(long)]
    pub force: bool,
    /// Seconds each pod gets to terminate; -1 uses the pod's own terminationGracePeriodSeconds
    #[arg(long = "grace-period", value_name = "SECONDS", default_value_t = -1, allow_negative_numbers = true)]
    pub grace_period: i64,
    /// Give up on a node after this long (e.g. 90s, 10m); 0 waits forever
    #[arg(long, value_name = "DURATION", default_value = "0s")]
    pub timeout: String,
    /// Only evict pods matching this label selector
    #[arg(long = "pod-selector", value_name = "SELECTOR")]
    pub pod_selector: Option<String>,
    /// Delete pods instead of evicting them: bypasses PodDisruptionBudgets
    #[arg(long = "disable-eviction")]
    pub disable_eviction: bool,
    /// Do not wait for pods that have been terminating for more than this many seconds; 0 waits for all
    #[arg(
        long = "skip-wait-for-delete-timeout",
        value_name = "SECONDS",
        default_value_t = 0
    )]
    pub skip_wait_for_delete_timeout: u64,
    /// Evictions in flight at once
    #[arg(long, value_name = "N", default_value_t = drain::DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
    #[arg(long = "dry-run", value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "unchanged", default_value = "none", help = DRY_RUN_HELP)]
    pub dry_run: String,
}

#[derive(Args, Debug)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub policy: crate::cli::PolicyFlag,
    /// Replace labels and taints that someone else set to another value
    #[arg(long)]
    pub overwrite: bool,
    /// Remove labels and taints an earlier apply added that the policy no longer declares
    #[arg(long)]
    pub prune: bool,
    #[arg(long = "dry-run", value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "unchanged", default_value = "none", help = DRY_RUN_HELP)]
    pub dry_run: String,
}

#[derive(Args, Debug)]
pub struct PoolDiffArgs {
    #[command(flatten)]
    pub policy: crate::cli::PolicyFlag,
    /// Plan as `node apply --overwrite` would
    #[arg(long)]
    pub overwrite: bool,
    /// Plan as `node apply --prune` would
    #[arg(long)]
    pub prune: bool,
}

/// A parsed command, ready to run.
enum Job {
    Taint(TaintOptions),
    Label(LabelOptions),
    Cordon(CordonOptions),
    /// The options, and whether stderr is a terminal (a progress bar).
    Drain(DrainOptions, bool),
    Apply(Box<Policy>, PoolOptions),
    Diff(Box<Policy>, PoolOptions),
}

pub fn run(args: NodeArgs) -> Exit {
    let mut err = std::io::stderr();
    let verbose = args.verbose;
    let (job, copts) = match prepare(args, &mut err) {
        Ok(j) => j,
        Err(exit) => return exit,
    };
    // The work is waiting on the API server, which one thread does as well as
    // many; tokio's multi-threaded scheduler would also make every run of the
    // binary load libm (its statistics call `pow`), offline commands included.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(err, "error: cannot start the async runtime: {e}");
            return Exit::Cluster;
        }
    };
    let result = runtime.block_on(async {
        let clients = client::connect(&copts).await?;
        if verbose {
            eprintln!("connecting to {} ({})", clients.server, clients.source);
        }
        execute(job, &clients).await
    });
    // Do not wait for background watches to wind down.
    runtime.shutdown_background();
    match result {
        Ok(exit) => exit,
        Err(e) => {
            report_error(&e, &mut err);
            crate::exit::of_node_error(&e)
        }
    }
}

/// Prints a failed command's error: first the errors its message refers
/// to ("see the errors above"), then the message; nothing for Ctrl-C,
/// whose report is printed already.
fn report_error(e: &Error, err: &mut dyn Write) {
    match e {
        Error::Interrupted => return,
        Error::Refused(refusals) if refusals.len() > 1 => {
            for r in refusals {
                let _ = writeln!(err, "error: {r}");
            }
        }
        Error::NodesFailed(failures) => {
            for f in failures {
                let _ = writeln!(err, "error: {f}");
            }
        }
        _ => {}
    }
    let _ = writeln!(err, "error: {e}");
}

fn usage(err: &mut dyn Write, msg: impl std::fmt::Display) -> Exit {
    let _ = writeln!(err, "error: {msg}");
    Exit::Usage
}

fn dry_run(s: &str, err: &mut dyn Write) -> Result<DryRun, Exit> {
    match DryRun::parse(s) {
        Ok((d, warning)) => {
            if let Some(w) = warning {
                let _ = writeln!(err, "warning: {w}");
            }
            Ok(d)
        }
        Err(e) => Err(usage(err, e)),
    }
}

fn set(v: Option<String>) -> Option<String> {
    v.filter(|v| !v.is_empty())
}

fn prepare(args: NodeArgs, err: &mut dyn Write) -> Result<(Job, ClientOptions), Exit> {
    let verbose = args.verbose;
    let request_timeout = match args.request_timeout.as_deref().map(parse_duration) {
        None => None,
        Some(Ok(d)) if d.is_zero() => None,
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => return Err(usage(err, format!("--request-timeout: {e}"))),
    };
    let copts = ClientOptions {
        kubeconfig: args.kubeconfig,
        context: args.context,
        kubeconfig_env: std::env::var_os("KUBECONFIG"),
        home: std::env::var_os("HOME").map(PathBuf::from),
        request_timeout,
        // An empty value is no flag, as in client-go (`--token "$T"` with T unset).
        overrides: client::Overrides {
            server: set(args.server),
            cluster: set(args.cluster),
            user: set(args.user),
            token: set(args.token),
            certificate_authority: args
                .certificate_authority
                .filter(|p| !p.as_os_str().is_empty()),
            client_certificate: args
                .client_certificate
                .filter(|p| !p.as_os_str().is_empty()),
            client_key: args.client_key.filter(|p| !p.as_os_str().is_empty()),
            insecure_skip_tls_verify: args.insecure_skip_tls_verify.unwrap_or(false),
            tls_server_name: set(args.tls_server_name),
            impersonate: set(args.impersonate),
            impersonate_groups: args
                .impersonate_groups
                .into_iter()
                .filter(|g| !g.is_empty())
                .collect(),
        },
    };
    let u = |err: &mut dyn Write, e: Error| usage(err, e);
    let job = match args.command {
        NodeCommand::Taint(a) => {
            let (nodes, changes) = taint::split_args(&a.args).map_err(|e| u(err, e))?;
            let targets =
                Targets::from_args(nodes, a.selector.as_deref(), a.all).map_err(|e| u(err, e))?;
            Job::Taint(TaintOptions {
                targets,
                changes,
                overwrite: a.overwrite,
                dry_run: dry_run(&a.dry_run, err)?,
            })
        }
        NodeCommand::Label(a) => {
            let (nodes, changes) = label::split_args(&a.args).map_err(|e| u(err, e))?;
            let targets =
                Targets::from_args(nodes, a.selector.as_deref(), a.all).map_err(|e| u(err, e))?;
            Job::Label(LabelOptions {
                targets,
                changes,
                overwrite: a.overwrite,
                dry_run: dry_run(&a.dry_run, err)?,
            })
        }
        NodeCommand::Cordon(a) => cordon_job(a, true, err)?,
        NodeCommand::Uncordon(a) => cordon_job(a, false, err)?,
        NodeCommand::Drain(a) => {
            let targets = Targets::from_names_or_selector(a.nodes, a.selector.as_deref())
                .map_err(|e| u(err, e))?;
            let timeout =
                parse_go_duration(&a.timeout).map_err(|e| usage(err, format!("--timeout: {e}")))?;
            let pod_selector = match a.pod_selector.as_deref() {
                None => None,
                Some(s) => Some(parse_selector(s, "--pod-selector").map_err(|e| u(err, e))?),
            };
            if a.grace_period < -1 {
                return Err(usage(
                    err,
                    "--grace-period must be -1 (the pod's own) or at least 0",
                ));
            }
            if a.concurrency == 0 {
                return Err(usage(err, "--concurrency must be at least 1"));
            }
            let mut o = DrainOptions::new(targets);
            o.ignore_daemonsets = a.ignore_daemonsets;
            o.delete_emptydir_data = a.delete_emptydir_data;
            o.force = a.force;
            o.grace_period = u32::try_from(a.grace_period).ok();
            o.timeout = (!timeout.is_zero()).then_some(timeout);
            o.pod_selector = pod_selector;
            o.disable_eviction = a.disable_eviction;
            o.skip_wait_for_delete_timeout = (a.skip_wait_for_delete_timeout > 0)
                .then(|| std::time::Duration::from_secs(a.skip_wait_for_delete_timeout));
            o.dry_run = dry_run(&a.dry_run, err)?;
            o.concurrency = a.concurrency;
            Job::Drain(o, std::io::stderr().is_terminal())
        }
        NodeCommand::Apply(a) => {
            let p = load_policy(a.policy.policy, verbose, err)?;
            pools::require_name(&p).map_err(|e| usage(err, e.to_string()))?;
            Job::Apply(
                Box::new(p),
                PoolOptions {
                    overwrite: a.overwrite,
                    prune: a.prune,
                    dry_run: dry_run(&a.dry_run, err)?,
                },
            )
        }
        NodeCommand::Diff(a) => {
            let p = load_policy(a.policy.policy, verbose, err)?;
            pools::require_name(&p).map_err(|e| usage(err, e.to_string()))?;
            Job::Diff(
                Box::new(p),
                PoolOptions {
                    overwrite: a.overwrite,
                    prune: a.prune,
                    dry_run: DryRun::Client,
                },
            )
        }
    };
    Ok((job, copts))
}

fn cordon_job(a: CordonArgs, cordon: bool, err: &mut dyn Write) -> Result<Job, Exit> {
    let targets = Targets::from_names_or_selector(a.nodes, a.selector.as_deref())
        .map_err(|e| usage(err, e))?;
    Ok(Job::Cordon(CordonOptions {
        targets,
        cordon,
        dry_run: dry_run(&a.dry_run, err)?,
    }))
}

/// The policy of `node apply` / `node diff`, with its warnings and the
/// pools that select no node said before anything is read from the cluster.
fn load_policy(
    explicit: Option<PathBuf>,
    verbose: bool,
    err: &mut dyn Write,
) -> Result<Policy, Exit> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let (path, origin) = kfsched::discover::find_policy(
        explicit.as_deref(),
        std::env::var_os("KFSCHED_POLICY"),
        &cwd,
    )
    .map_err(|m| usage(err, m))?;
    if verbose {
        let _ = writeln!(err, "policy: {} ({origin})", path.display());
    }
    let policy = Policy::load(&path).map_err(|e| {
        for d in &e.0 {
            let _ = writeln!(err, "error: {d}");
        }
        Exit::Usage
    })?;
    for d in &policy.warnings {
        let _ = writeln!(err, "warning: {d}");
    }
    for w in pools::warnings(&policy) {
        let _ = writeln!(err, "warning: {w}");
    }
    Ok(policy)
}

async fn execute(job: Job, clients: &Clients) -> Result<Exit, Error> {
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    match job {
        Job::Taint(o) => taint::run(clients, &o, &mut out, &mut err)
            .await
            .map(|_| Exit::Ok),
        Job::Label(o) => label::run(clients, &o, &mut out, &mut err)
            .await
            .map(|_| Exit::Ok),
        Job::Cordon(o) => kfsched::node::cordon::run(clients, &o, &mut out, &mut err)
            .await
            .map(|_| Exit::Ok),
        Job::Drain(o, bar) => {
            let (tx, rx) = tokio::sync::watch::channel(false);
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    let _ = tx.send(true);
                    eprintln!(
                        "\ninterrupted: no new evictions; reporting (Ctrl-C again to quit at once)"
                    );
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(Exit::Interrupted.code());
                    }
                }
            });
            let mut output = DrainOutput::new(&mut out, &mut err, &o, bar);
            drain::run(clients, &o, rx, &mut |e| output.event(e))
                .await
                .map(|_| Exit::Ok)
        }
        Job::Apply(p, o) => pools_output::apply(clients, &p, &o, &mut out, &mut err)
            .await
            .map(|_| Exit::Ok),
        Job::Diff(p, o) => pools_output::diff(clients, &p, &o, &mut out, &mut err)
            .await
            .map(|n| if n > 0 { Exit::Differences } else { Exit::Ok }),
    }
}
