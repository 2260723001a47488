//! `check`: flags here, work in `kfsched::check`. Reads the inputs, gets
//! the nodes (a snapshot, the policy's pools, or the live cluster through
//! `kfsched::node::check`), and prints the report.

use std::io::{Read, Write};
use std::path::PathBuf;

use clap::Args;

use crate::cli::{Inputs, Output};
use crate::connection::ConnectionArgs;
use crate::exit::Exit;
use crate::inputs::read_inputs;
use crate::offline::{load_policy, print_diags};
use crate::report::{self, Category};
use kfsched::check::{self, Nodes, Options};
use kfsched::policy::Policy;

pub const HELP: &str = "Nodes: the live cluster (the connection flags, as kubectl), a snapshot (--nodes FILE: `kubectl get nodes -o yaml` or -o json; - for stdin), or the policy's node pools (--pools).
With -p POLICY, each file is judged as `rewrite -p POLICY` would make it (nothing is written); without, as it is.
Resources are judged against each node's allocatable; the pods already running are counted only with --usage.

Examples:
  # Against the cluster of the current context
  kubectl kfsched check pipelines/

  # Before rewriting: as the policy would make them, against a snapshot
  kubectl get nodes -o yaml > nodes.yaml
  kubectl kfsched check -p policy.yaml --nodes nodes.yaml pipelines/

  # Does each rule's component land in its pool?
  kubectl kfsched check --pools -p policy.yaml pipelines/

  # Components that fit no node, for scripts
  kubectl kfsched check --nodes nodes.yaml -o json pipelines/ | jq '.components[] | select(.nodes == []) | .message'

Exit codes: 0 every component fits a node, 1 one fits none (with --pools: misses a pool its rules name), 2 bad usage or invalid input, 3 cluster failure.";

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub inputs: Inputs,
    /// Judge each file as `rewrite -p FILE` would make it (nothing is written); with --pools, also the pools' policy [default for --pools: $KFSCHED_POLICY, else the nearest .kfsched.yaml]
    #[arg(short = 'p', long = "policy", value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Judge against a node snapshot (`kubectl get nodes -o yaml|json`; - for stdin) instead of the live cluster
    #[arg(long, value_name = "FILE", overrides_with = "nodes")]
    pub nodes: Option<PathBuf>,
    /// Judge against the policy's node pools as nodes (their labels and taints)
    #[arg(long, conflicts_with = "nodes")]
    pub pools: bool,
    /// Count what the pods already on each node request (live cluster, or Pods in the snapshot)
    #[arg(long, conflicts_with = "pools")]
    pub usage: bool,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Run as a KRM validator: a ResourceList on stdin, the same list with results on stdout
    #[arg(long)]
    pub krm: bool,
    /// Make a rule of -p that matches nothing, and a named input that holds no pipeline or workload, errors (exit 2)
    #[arg(long, conflicts_with = "krm")]
    pub strict: bool,
    #[command(flatten)]
    pub verbose: crate::cli::VerboseFlag,
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

pub fn run(a: CheckArgs) -> Exit {
    match run_inner(a) {
        Ok(e) => e,
        Err(e) => {
            // A broken pipe while printing is not an error.
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                report::error(Category::Input, e);
                return Exit::Usage;
            }
            Exit::Ok
        }
    }
}

fn run_inner(a: CheckArgs) -> std::io::Result<Exit> {
    let verbose = a.verbose.verbose;
    let policy_path = a.policy.clone();
    let stdin_nodes = a.nodes.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let paths = a.inputs.all();
    if a.nodes.is_some() && a.connection.any() {
        report::warning(
            Category::Usage,
            "--nodes judges a snapshot: the connection flags are not used",
        );
    }
    if stdin_nodes && (a.krm || paths.is_empty() || paths.iter().any(|p| p.as_os_str() == "-")) {
        report::error(
            Category::Usage,
            "--nodes - reads the snapshot from stdin: give the pipelines as file or directory paths",
        );
        return Ok(Exit::Usage);
    }
    // -p rewrites in memory; --pools also finds the policy as every command does.
    let rewrite_policy = match &policy_path {
        Some(p) => match load_policy(Some(p.clone()), verbose) {
            Ok(p) => Some(p),
            Err(e) => return Ok(e),
        },
        None => None,
    };
    let pool_policy = if a.pools && rewrite_policy.is_none() && !a.krm {
        match load_policy(None, verbose) {
            Ok(p) => Some(p),
            Err(e) => return Ok(e),
        }
    } else {
        None
    };
    let pools_from = rewrite_policy.as_ref().or(pool_policy.as_ref());
    let nodes = if a.pools && a.krm {
        None
    } else if a.pools {
        pools_from.map(Nodes::from_pools)
    } else {
        match nodes(&a, verbose) {
            Ok(n) => Some(n),
            Err(e) => return Ok(e),
        }
    };
    if a.krm {
        return krm(nodes.as_ref(), rewrite_policy.as_ref());
    }
    let Some(nodes) = nodes else {
        return Ok(Exit::Usage);
    };
    let read = match read_inputs(&paths) {
        Ok(x) => x,
        Err(e) => return Ok(e),
    };
    let opts = Options {
        rewrite: rewrite_policy.as_ref(),
        pools: if a.pools { pools_from } else { None },
    };
    let report = match check::run(&read.inputs, &nodes, opts) {
        Ok(r) => r,
        Err(d) => {
            print_diags(&d);
            report::error(
                Category::Input,
                format_args!(
                    "nothing was checked ({} problem{} in {})",
                    d.len(),
                    if d.len() == 1 { "" } else { "s" },
                    read.given.describe()
                ),
            );
            return Ok(Exit::Usage);
        }
    };
    for w in &report.warnings {
        report::warning(Category::Input, w);
    }
    let names: Vec<String> = read.inputs.iter().map(|i| i.file.clone()).collect();
    let no_ops = crate::notices::report(
        rewrite_policy.as_ref(),
        &report.outcomes,
        &names,
        &read.given,
        a.strict,
    );
    let mut out = std::io::stdout().lock();
    match a.output {
        Output::Text => out.write_all(check::report::text(&report, &nodes).as_bytes())?,
        Output::Json => check::report::write_json(&report, &nodes, &mut out)?,
        Output::Yaml => {
            let j = check::report::json(&report, &nodes);
            out.write_all(kfsched::explain::yaml(&j).as_bytes())?;
        }
    }
    out.flush()?;
    if a.strict && no_ops > 0 {
        crate::notices::strict_summary(no_ops, None);
        return Ok(Exit::Usage);
    }
    Ok(if report.ok() {
        Exit::Ok
    } else {
        Exit::Differences
    })
}

/// The nodes from a snapshot or the live cluster.
fn nodes(a: &CheckArgs, verbose: bool) -> Result<Nodes, Exit> {
    if let Some(path) = &a.nodes {
        let (name, bytes) = if path.as_os_str() == "-" {
            let mut buf = Vec::new();
            if let Err(e) = std::io::stdin().read_to_end(&mut buf) {
                report::error(
                    Category::Input,
                    format_args!("<stdin>: cannot read the node snapshot: {e}"),
                );
                return Err(Exit::Usage);
            }
            ("<stdin>".to_string(), buf)
        } else {
            match std::fs::read(path) {
                Ok(b) => (path.display().to_string(), b),
                Err(e) => {
                    report::error(
                        Category::Input,
                        format_args!("{}: cannot read the node snapshot: {e}", path.display()),
                    );
                    return Err(Exit::Usage);
                }
            }
        };
        return Nodes::from_snapshot(&name, &bytes, a.usage).map_err(|d| {
            print_diags(&d);
            Exit::Usage
        });
    }
    live(a, verbose)
}

/// Lists the live cluster's nodes (and pods, with `--usage`).
fn live(a: &CheckArgs, verbose: bool) -> Result<Nodes, Exit> {
    let usage = a.usage;
    let (server, live) = crate::live::run_hinted(
        &a.connection,
        verbose,
        |clients| async move {
            let live = kfsched::node::check::fetch(&clients, usage).await?;
            Ok((clients.server.clone(), live))
        },
        // Without a cluster, check still works offline.
        |e| match e {
            kfsched::node::Error::Config(_) => {
                "; or judge offline: against a node snapshot (--nodes FILE, from `kubectl get nodes -o yaml`) or the policy's node pools (--pools)"
            }
            _ => "",
        },
    )?;
    Ok(Nodes::from_live(
        &server,
        &live.nodes,
        live.pods.as_deref(),
        live.priority_classes.as_deref().map_err(Clone::clone),
    ))
}

/// `--krm`: a ResourceList on stdin, results added on stdout.
fn krm(nodes: Option<&Nodes>, policy: Option<&Policy>) -> std::io::Result<Exit> {
    let mut buf = Vec::new();
    std::io::stdin().read_to_end(&mut buf)?;
    match check::krm::run(&buf, nodes, policy) {
        Ok(o) => {
            let mut out = std::io::stdout().lock();
            out.write_all(o.output.as_bytes())?;
            out.flush()?;
            for e in &o.errors {
                report::error(Category::Input, e);
            }
            Ok(if o.failed {
                Exit::Differences
            } else {
                Exit::Ok
            })
        }
        Err(d) => {
            print_diags(&d);
            Ok(Exit::Usage)
        }
    }
}
