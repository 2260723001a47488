//! Flag definitions. Nothing here does work: `main` turns these into the
//! library's option structs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::node::NodeArgs;

#[derive(Parser, Debug)]
#[command(
    name = "kubectl-kfsched",
    bin_name = "kubectl kfsched",
    version = env!("CARGO_PKG_VERSION"),
    about = "One SchedulingPolicy for Kubeflow Pipelines: tolerations, node selectors and affinity written into compiled pipelines, and node pools kept in shape",
    long_about = None,
    disable_version_flag = true,
    after_help = "Policy: -p/--policy FILE, else $KFSCHED_POLICY, else the nearest .kfsched.yaml upward.\nExit codes: 0 done, 1 differences found, 2 bad usage or invalid input, 3 cluster failure, 130 interrupted."
)]
pub struct Cli {
    /// SchedulingPolicy file [default: $KFSCHED_POLICY, else the nearest .kfsched.yaml]
    #[arg(short = 'p', long = "policy", global = true, value_name = "FILE")]
    pub policy: Option<PathBuf>,

    /// Say more: list skipped files and documents
    #[arg(short = 'v', long = "verbose", global = true)]
    pub verbose: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Rewrite compiled pipelines so every matching component has the policy's scheduling
    Rewrite(RewriteArgs),
    /// Show what rewrite would change, as a unified diff (exit 1 when there are differences)
    Diff(DiffArgs),
    /// Show every component, the rules that matched it (and why others did not), and the result
    Explain(ExplainArgs),
    /// Check the policy
    Validate,
    /// Print the policy's JSON Schema (for editor completion)
    Schema,
    /// Run as a KRM function: ResourceList on stdin, ResourceList on stdout
    Fn(FnArgs),
    /// Taint, label, cordon, drain and reconcile nodes on the live cluster
    Node(NodeArgs),
    /// Print a shell completion script
    Completion(CompletionArgs),
    /// Print the version
    Version,
}

#[derive(Args, Debug)]
pub struct RewriteArgs {
    /// Files, directories (recursed for *.yaml/*.yml) or - for stdin [default: -]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Write the result back to each file (atomically, keeping its mode)
    #[arg(short = 'i', long = "in-place")]
    pub in_place: bool,
    /// Write nothing; exit 1 if any file would change
    #[arg(long)]
    pub check: bool,
    /// Print a unified diff of the changes
    #[arg(long)]
    pub diff: bool,
    /// Colour the diff
    #[arg(long, value_enum, default_value_t = Color::Auto, value_name = "WHEN")]
    pub color: Color,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// Files, directories (recursed for *.yaml/*.yml) or - for stdin [default: -]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Colour the diff
    #[arg(long, value_enum, default_value_t = Color::Auto, value_name = "WHEN")]
    pub color: Color,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// Files, directories (recursed for *.yaml/*.yml) or - for stdin [default: -]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Explain only this rule, as if the policy had no others (repeatable)
    #[arg(long = "rule", value_name = "RULE")]
    pub rules: Vec<String>,
}

#[derive(Args, Debug)]
pub struct FnArgs {
    /// A policy file for the legacy kustomize exec-plugin protocol (stdin is then a plain YAML stream)
    #[arg(value_name = "CONFIG")]
    pub config: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompletionArgs {
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Text,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}
