//! Flag definitions. Nothing here does work: `main` turns these into the
//! library's option structs. `-p/--policy` and `-v/--verbose` belong to the
//! commands that use them; the root keeps both, hidden, for the spelling
//! `kubectl kfsched -p FILE rewrite`, and `main` hands them on.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::check::CheckArgs;
use crate::node::NodeArgs;

#[derive(Parser, Debug)]
#[command(
    name = "kubectl-kfsched",
    bin_name = "kubectl kfsched",
    version = env!("CARGO_PKG_VERSION"),
    about = "One SchedulingPolicy for Kubeflow Pipelines: tolerations, node selectors and affinity written into compiled pipelines, and node pools kept in shape",
    long_about = None,
    disable_version_flag = true,
    after_help = "Policy: -p/--policy FILE, else $KFSCHED_POLICY, else the nearest .kfsched.yaml upward (`init` writes a starter).\nExit codes: 0 done, 1 differences found, 2 bad usage or invalid input, 3 cluster failure, 130 interrupted."
)]
pub struct Cli {
    /// Given before the command: handed to it (`kubectl kfsched -p FILE rewrite`)
    #[arg(short = 'p', long = "policy", value_name = "FILE", hide = true)]
    pub policy: Option<PathBuf>,

    /// Given before the command: handed to it
    #[arg(short = 'v', long = "verbose", hide = true)]
    pub verbose: bool,

    /// Print the version (as `version` does)
    #[arg(long = "version")]
    pub version: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Rewrite compiled pipelines so every matching component has the policy's scheduling
    #[command(after_help = REWRITE_HELP)]
    Rewrite(RewriteArgs),
    /// Show what rewrite would change, as a unified diff (exit 1 when there are differences)
    #[command(after_help = DIFF_HELP)]
    Diff(DiffArgs),
    /// Show every component, the rules that matched it (and why others did not), and the result
    #[command(after_help = EXPLAIN_HELP)]
    Explain(Box<ExplainArgs>),
    /// Check the policy
    #[command(after_help = VALIDATE_HELP)]
    Validate(ValidateArgs),
    /// Write a starter .kfsched.yaml from the components of your pipelines (changes nothing until edited)
    #[command(after_help = INIT_HELP)]
    Init(InitArgs),
    /// Print the policy's JSON Schema (for editor completion)
    Schema,
    /// Say which nodes each component can be scheduled on, as kube-scheduler would (exit 1 when one fits none)
    #[command(after_help = crate::check::HELP)]
    Check(Box<CheckArgs>),
    /// Compare the live cluster with the policy: pipeline pods, pool nodes, admission objects (read-only; exit 1 when something differs)
    #[command(after_help = crate::audit::HELP)]
    Audit(Box<crate::audit::AuditArgs>),
    /// Run as a KRM function: ResourceList on stdin, ResourceList on stdout
    Fn(FnArgs),
    /// Export the policy for the cluster to enforce
    #[command(subcommand)]
    Export(ExportCommand),
    /// Taint, label, cordon, drain and reconcile nodes on the live cluster
    Node(Box<NodeArgs>),
    /// Print a shell completion script
    Completion(CompletionArgs),
    /// Print the version
    Version,
}

const REWRITE_HELP: &str = "Examples:
  # Rewrite a tree of compiled pipelines in place (atomically, keeping each file's mode)
  kubectl kfsched rewrite -i -p policy.yaml pipelines/

  # One file (or stdin) to stdout
  kubectl kfsched rewrite -p policy.yaml pipeline.yaml > scheduled.yaml

  # Live workloads: kubectl get writes a List, whose items are rewritten
  kubectl get deploy -o yaml | kubectl kfsched rewrite | kubectl replace -f -

  # CI: fail when a file is not scheduled as the policy says, or a rule matches nothing
  kubectl kfsched rewrite --check --strict pipelines/

A rule that matches no component, and an input named on the command line that holds no pipeline or workload, are warnings (errors with --strict).
Exit codes: 0 done, 1 --check found files that would change, 2 bad usage or invalid input (nothing written).";

const DIFF_HELP: &str = "Examples:
  # What rewrite -i would change, as a patch (exit 1 means there is one)
  kubectl kfsched diff -p policy.yaml pipelines/ > scheduling.patch || [ $? -eq 1 ]
  patch -p1 < scheduling.patch

Exit codes: 0 no differences, 1 differences shown, 2 bad usage or invalid input.";

const EXPLAIN_HELP: &str = "Examples:
  # Which rule matched which component, and why the others did not
  kubectl kfsched explain -p policy.yaml pipelines/

  # No policy yet: every component and the names a rule can match it by
  kubectl kfsched explain pipelines/

  # One rule, as JSON (or YAML) for scripts
  kubectl kfsched explain --rule gpu-training -o json pipelines/train.yaml

  # A pipeline's pod on the cluster, read as admission reads it: did it get what the policy asks?
  kubectl kfsched explain -p policy.yaml -n kubeflow pod/my-run-train-2480458063

Exit codes: 0 done, 2 bad usage or invalid input, 3 cluster/API failure.";

const VALIDATE_HELP: &str = "Examples:
  kubectl kfsched validate policy.yaml
  kubectl kfsched validate            # the policy found as for every command

Exit codes: 0 valid (warnings are printed), 2 invalid (every error, as FILE:LINE:COL: YAML.PATH: message).";

const INIT_HELP: &str = "The starter has one node pool and one example rule, built from the components found, and a list of every component with the names a rule can match. It changes nothing until edited: the rule matches no component yet (every command says so until it does) and the pool has no nodes.

Examples:
  kubectl kfsched init pipelines/            # writes ./.kfsched.yaml
  kubectl kfsched init -p - pipelines/       # prints it instead

Exit codes: 0 written, 2 bad usage, invalid input or the file exists already (nothing written).";

/// What `export` writes.
#[derive(Subcommand, Debug)]
pub enum ExportCommand {
    /// The policy as MutatingAdmissionPolicies: every pod a pipeline creates, and every node of a pool as it registers, gets the policy's scheduling from the API server itself
    #[command(after_help = EXPORT_ADMISSION_HELP)]
    Admission(ExportAdmissionArgs),
}

const EXPORT_ADMISSION_HELP: &str = "Examples:
  # Apply the policy at admission (Kubernetes 1.36 or later)
  kubectl kfsched export admission -p policy.yaml | kubectl apply -f -

  # What would change on the cluster
  kubectl kfsched export admission -p policy.yaml | kubectl diff -f -

  # Exact for these pipelines' tasks (display and component names resolved from the files)
  kubectl kfsched export admission -p policy.yaml pipelines/

  # Roll out gently: one namespace, and a pod the policy cannot judge is admitted as it is
  kubectl kfsched export admission --namespace-selector team=ml --failure-policy Ignore

  # Kubernetes 1.35 with the MutatingAdmissionPolicy gate and v1beta1 API on
  kubectl kfsched export admission --api-version v1beta1 | kubectl apply -f -

Each rule is reported on stderr: exact, or approximate and why.
Exit codes: 0 written, 2 bad usage, invalid input, or a rule admission cannot express (nothing written).";

#[derive(Args, Debug)]
pub struct ExportAdmissionArgs {
    #[command(flatten)]
    pub inputs: PipelineFiles,
    #[command(flatten)]
    pub policy: PolicyFlag,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, default_value_t = ExportOutput::Yaml)]
    pub output: ExportOutput,
    /// Bind the pod policy only in namespaces whose labels match (kubectl selector syntax: team=ml,env in (prod))
    #[arg(long = "namespace-selector", value_name = "SELECTOR")]
    pub namespace_selector: Option<String>,
    /// What the API server does with a pod or node the policy cannot judge: Fail refuses it, Ignore admits it unchanged
    #[arg(long = "failure-policy", value_enum, default_value_t = FailurePolicyArg::Fail)]
    pub failure_policy: FailurePolicyArg,
    /// Prefix of the admission policies' names: PREFIX followed by the policy's name
    #[arg(
        long = "name-prefix",
        value_name = "PREFIX",
        default_value = "kfsched."
    )]
    pub name_prefix: String,
    /// Leave this rule out of the export (repeatable)
    #[arg(long = "skip-rule", value_name = "RULE")]
    pub skip_rules: Vec<String>,
    #[command(flatten)]
    pub strict: StrictFlag,
    #[command(flatten)]
    pub verbose: VerboseFlag,
    /// The admissionregistration.k8s.io version to write: v1 (Kubernetes 1.36 and later) or v1beta1 (1.35, where the API server serves it with the MutatingAdmissionPolicy feature gate and --runtime-config=admissionregistration.k8s.io/v1beta1=true; 1.34 serves it too, but is expected to refuse the pod policy's list functions: see the guide)
    #[arg(long = "api-version", value_enum, default_value_t = ApiVersionArg::V1)]
    pub api_version: ApiVersionArg,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiVersionArg {
    V1,
    V1beta1,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportOutput {
    Yaml,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicyArg {
    #[value(name = "Fail")]
    Fail,
    #[value(name = "Ignore")]
    Ignore,
}

/// Inputs: positional paths and kubectl's `-f/--filename`, in that order.
#[derive(Args, Debug)]
pub struct Inputs {
    /// Files, directories (recursed for *.yaml, *.yml and *.json) or - for stdin [default: - when stdin is not a terminal]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A file, directory or - for stdin, as kubectl's -f (repeatable)
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filenames: Vec<PathBuf>,
}

impl Inputs {
    pub fn all(&self) -> Vec<PathBuf> {
        self.paths.iter().chain(&self.filenames).cloned().collect()
    }
}

/// `export admission`'s optional pipeline files: unlike [`Inputs`], none
/// given means none, and stdin is read only when named.
#[derive(Args, Debug)]
pub struct PipelineFiles {
    /// Pipeline files or directories whose tasks make the rules exact, or - for stdin [default: none; stdin is read only when - is given]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A pipeline file, directory or - for stdin, as kubectl's -f (repeatable)
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filenames: Vec<PathBuf>,
}

impl PipelineFiles {
    pub fn all(&self) -> Vec<PathBuf> {
        self.paths.iter().chain(&self.filenames).cloned().collect()
    }
}

/// KFP keeps a PipelineVersion's spec immutable.
#[derive(Args, Debug, Default)]
pub struct Versions {
    /// Give each KFP PipelineVersion whose spec changes the name NAME-SUFFIX, without the metadata the API server set, so that it can be created beside the stored version
    #[arg(long = "version-suffix", value_name = "SUFFIX")]
    pub version_suffix: Option<String>,
}

/// `-p/--policy`, for the commands that read a policy.
#[derive(Args, Debug, Default)]
pub struct PolicyFlag {
    /// SchedulingPolicy file [default: $KFSCHED_POLICY, else the nearest .kfsched.yaml]
    #[arg(short = 'p', long = "policy", value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

/// `-v/--verbose`, for the commands that have more to say.
#[derive(Args, Debug, Default)]
pub struct VerboseFlag {
    /// Say more: which policy file was used and why, and the files and documents skipped
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
}

/// `--strict`, for the commands in which a mistake can do nothing.
#[derive(Args, Debug, Default)]
pub struct StrictFlag {
    /// Make a rule that matches nothing, and a named input that holds no pipeline or workload, errors (exit 2), for CI runs over every pipeline
    #[arg(long)]
    pub strict: bool,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// The policy file [default: -p, $KFSCHED_POLICY, else the nearest .kfsched.yaml]
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub policy: PolicyFlag,
    /// Say which policy file was used and why
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Output format (json and yaml: the file, the policy's name, its rule and pool names)
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Pipeline files or directories to read the components from [default: .]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Where to write the starter policy; - prints it [default: .kfsched.yaml]
    #[arg(short = 'p', long = "policy", value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RewriteArgs {
    #[command(flatten)]
    pub inputs: Inputs,
    #[command(flatten)]
    pub policy: PolicyFlag,
    #[command(flatten)]
    pub versions: Versions,
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
    /// With -i: no summary line (files rewritten, files unchanged)
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    #[command(flatten)]
    pub strict: StrictFlag,
    #[command(flatten)]
    pub verbose: VerboseFlag,
    /// Report every file (changed or not, with its diff) as json or yaml on stdout, with --in-place, --check or --diff
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    #[command(flatten)]
    pub inputs: Inputs,
    #[command(flatten)]
    pub policy: PolicyFlag,
    #[command(flatten)]
    pub versions: Versions,
    /// Colour the diff
    #[arg(long, value_enum, default_value_t = Color::Auto, value_name = "WHEN")]
    pub color: Color,
    #[command(flatten)]
    pub strict: StrictFlag,
    #[command(flatten)]
    pub verbose: VerboseFlag,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub inputs: Inputs,
    /// SchedulingPolicy file [default: $KFSCHED_POLICY, else the nearest .kfsched.yaml; none: list the components and their names]
    #[arg(short = 'p', long = "policy", value_name = "FILE")]
    pub policy: Option<PathBuf>,
    #[command(flatten)]
    pub versions: Versions,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Explain only this rule, as if the policy had no others (repeatable)
    #[arg(long = "rule", value_name = "RULE")]
    pub rules: Vec<String>,
    #[command(flatten)]
    pub strict: StrictFlag,
    #[command(flatten)]
    pub verbose: VerboseFlag,
    /// The namespace of pod/NAME inputs [default: the kubeconfig context's, else default]
    #[arg(short = 'n', long = "namespace", value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub connection: crate::connection::ConnectionArgs,
}

#[derive(Args, Debug)]
pub struct FnArgs {
    /// A policy file for the legacy kustomize exec-plugin protocol (stdin is then a plain YAML stream)
    #[arg(value_name = "CONFIG")]
    pub config: Option<PathBuf>,
    /// The policy when the ResourceList's functionConfig is not one [default: $KFSCHED_POLICY, else the nearest .kfsched.yaml]
    #[arg(short = 'p', long = "policy", value_name = "FILE")]
    pub policy: Option<PathBuf>,
    #[command(flatten)]
    pub versions: Versions,
    /// Make a rule that matches no item an error result (nothing is rewritten; exit 1)
    #[arg(long)]
    pub strict: bool,
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
    Yaml,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}
