//! `kubectl kfsched`: parse the command line, run one command, print errors
//! once, exit with SPEC §4's code. A broken pipe is not an error.

mod audit;
mod check;
mod cli;
mod complete;
mod completion;
mod connection;
mod exit;
mod export;
mod habits;
mod init;
mod inputs;
mod live;
mod node;
mod notices;
mod offline;
mod report;

use std::io::Write;

use clap::{CommandFactory, Parser};

use crate::exit::Exit;
use crate::report::Category;
use cli::{Cli, Command};

/// mimalloc instead of the system allocator: a rewrite allocates hundreds of
/// thousands of small strings and nodes, and glibc's malloc costs the 10 MB
/// Argo stream's rewrite about 15 % more CPU (see docs/performance.md). With
/// `no_thp` it does not ask for transparent huge pages, which doubled the
/// peak RSS of a 1 MB rewrite. `bench/code-layout.sh` builds the plugin with
/// `--cfg kfsched_system_allocator` as well, to measure it without mimalloc.
#[cfg(not(kfsched_system_allocator))]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let code = match run() {
        Ok(exit) => exit.code(),
        Err(e) => {
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            {
                0
            } else {
                report::error(Category::Input, format_args!("{e:#}"));
                Exit::Usage.code()
            }
        }
    };
    std::process::exit(code);
}

fn run() -> Result<Exit, Box<dyn std::error::Error>> {
    if let Err(msg) = report::init() {
        report::error(Category::Usage, msg);
        return Ok(Exit::Usage);
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Cobra's completion protocol: `kubectl_complete-kfsched` (or a link of
    // this binary by that name) and the completion scripts call it.
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        if first == "__complete" || first == "__completeNoDesc" {
            return complete::run(&args[2..], first == "__complete");
        }
    }
    let argv0 = args.first().map(std::path::Path::new);
    if argv0
        .and_then(|p| p.file_stem())
        .is_some_and(|s| s == "kubectl_complete-kfsched")
    {
        return complete::run(&args[1..], true);
    }
    // kustomize < 5.7 runs exec functions with no arguments, and the legacy
    // exec-plugin protocol passes only a config file: both go to `fn`.
    if let Some(exit) = offline::krm_entry(&args)? {
        return Ok(exit);
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            let usage = e.use_stderr();
            let text = habits::explain(&e, &args);
            if usage && report::json() {
                let text = text.unwrap_or_else(|| e.render().to_string());
                let text = text.trim_end();
                report::error(
                    Category::Usage,
                    text.strip_prefix("error: ").unwrap_or(text),
                );
            } else if let Some(message) = text {
                eprint!("{message}");
            } else {
                e.print()?;
            }
            return Ok(if usage { Exit::Usage } else { Exit::Ok });
        }
    };
    let command = match cli.command {
        None if cli.version => Some(Command::Version),
        c => c,
    };
    let Some(mut command) = command else {
        Cli::command().print_help()?;
        return Ok(Exit::Usage);
    };
    if let Err(message) = hand_on(cli.policy, cli.verbose, &mut command) {
        report::error(Category::Usage, message);
        return Ok(Exit::Usage);
    }
    match command {
        Command::Rewrite(a) => offline::rewrite(a),
        Command::Diff(a) => offline::diff(a),
        Command::Explain(a) => offline::explain(*a),
        Command::Validate(a) => match (a.file, a.policy.policy) {
            (Some(f), Some(p)) if f != p => {
                report::error(
                    Category::Usage,
                    format_args!(
                        "two policies: {} and -p {}; give one",
                        f.display(),
                        p.display()
                    ),
                );
                Ok(Exit::Usage)
            }
            (f, p) => offline::validate(f.or(p), a.verbose, a.output),
        },
        Command::Init(a) => init::run(a),
        Command::Schema => {
            let s = serde_json::to_string_pretty(&kfsched::policy::schema::json_schema())?;
            writeln!(std::io::stdout(), "{s}")?;
            Ok(Exit::Ok)
        }
        Command::Check(a) => Ok(check::run(*a)),
        Command::Audit(a) => audit::run(*a),
        Command::Fn(a) => offline::krm(a),
        Command::Export(cli::ExportCommand::Admission(a)) => export::admission(a),
        Command::Node(a) => Ok(node::run(*a)),
        Command::Completion(a) => {
            let shell = match a.shell {
                cli::Shell::Bash => crate::completion::Shell::Bash,
                cli::Shell::Zsh => crate::completion::Shell::Zsh,
                cli::Shell::Fish => crate::completion::Shell::Fish,
            };
            let script = crate::completion::script(shell, "kubectl-kfsched");
            std::io::stdout().write_all(script.as_bytes())?;
            Ok(Exit::Ok)
        }
        Command::Version => {
            writeln!(std::io::stdout(), "kfsched v{}", env!("CARGO_PKG_VERSION"))?;
            Ok(Exit::Ok)
        }
    }
}

/// Hands `-p` and `-v` given before the command (`kubectl kfsched -p FILE
/// rewrite`) to the command, which is where they belong: refused for a
/// command that has no such flag, and when the command has its own,
/// different one.
fn hand_on(
    policy: Option<std::path::PathBuf>,
    verbose: bool,
    command: &mut Command,
) -> Result<(), String> {
    use crate::node::NodeCommand;
    let name = command_name(command);
    if let Some(p) = policy {
        let slot = match command {
            Command::Rewrite(a) => Some(&mut a.policy.policy),
            Command::Diff(a) => Some(&mut a.policy.policy),
            Command::Explain(a) => Some(&mut a.policy),
            Command::Validate(a) => Some(&mut a.policy.policy),
            Command::Init(a) => Some(&mut a.policy),
            Command::Check(a) => Some(&mut a.policy),
            Command::Audit(a) => Some(&mut a.policy),
            Command::Fn(a) => Some(&mut a.policy),
            Command::Export(cli::ExportCommand::Admission(a)) => Some(&mut a.policy.policy),
            Command::Node(a) => match &mut a.command {
                NodeCommand::Apply(a) => Some(&mut a.policy.policy),
                NodeCommand::Diff(a) => Some(&mut a.policy.policy),
                _ => None,
            },
            _ => None,
        };
        match slot {
            None => {
                return Err(format!(
                    "-p/--policy: `{name}` reads no policy (rewrite, diff, explain, check, audit, validate, init, fn, export admission, node apply and node diff do)"
                ));
            }
            Some(Some(own)) if *own != p => {
                return Err(format!(
                    "two policies: -p {} before the command and -p {} after it; give one",
                    p.display(),
                    own.display()
                ));
            }
            Some(slot) => *slot = Some(p),
        }
    }
    if verbose {
        let slot = match command {
            Command::Rewrite(a) => &mut a.verbose.verbose,
            Command::Diff(a) => &mut a.verbose.verbose,
            Command::Explain(a) => &mut a.verbose.verbose,
            Command::Validate(a) => &mut a.verbose,
            Command::Check(a) => &mut a.verbose.verbose,
            Command::Audit(a) => &mut a.verbose.verbose,
            Command::Export(cli::ExportCommand::Admission(a)) => &mut a.verbose.verbose,
            Command::Node(a) => &mut a.verbose,
            _ => return Err(format!("-v/--verbose: `{name}` has nothing more to say")),
        };
        *slot = true;
    }
    Ok(())
}

/// The command as the user typed it, for messages.
fn command_name(command: &Command) -> String {
    use crate::node::NodeCommand;
    let name = match command {
        Command::Rewrite(_) => "rewrite",
        Command::Diff(_) => "diff",
        Command::Explain(_) => "explain",
        Command::Validate(_) => "validate",
        Command::Init(_) => "init",
        Command::Schema => "schema",
        Command::Check(_) => "check",
        Command::Audit(_) => "audit",
        Command::Fn(_) => "fn",
        Command::Export(cli::ExportCommand::Admission(_)) => "export admission",
        Command::Node(a) => match a.command {
            NodeCommand::Taint(_) => "node taint",
            NodeCommand::Label(_) => "node label",
            NodeCommand::Cordon(_) => "node cordon",
            NodeCommand::Uncordon(_) => "node uncordon",
            NodeCommand::Drain(_) => "node drain",
            NodeCommand::Apply(_) => "node apply",
            NodeCommand::Diff(_) => "node diff",
        },
        Command::Completion(_) => "completion",
        Command::Version => "version",
    };
    name.to_string()
}
