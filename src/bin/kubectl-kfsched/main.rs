//! `kubectl kfsched`: parse the command line, run one command, print errors
//! once, exit with SPEC §4's code. A broken pipe is not an error.

mod check;
mod cli;
mod complete;
mod completion;
mod connection;
mod exit;
mod export;
mod node;
mod offline;
mod report;

use std::io::Write;

use clap::{CommandFactory, Parser};

use crate::exit::Exit;
use crate::report::Category;
use cli::{Cli, Command};

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
            if usage && report::json() {
                let text = e.render().to_string();
                let text = text.trim_end();
                report::error(
                    Category::Usage,
                    text.strip_prefix("error: ").unwrap_or(text),
                );
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
    let Some(command) = command else {
        Cli::command().print_help()?;
        return Ok(Exit::Usage);
    };
    let policy = cli.policy;
    match command {
        Command::Rewrite(a) => offline::rewrite(a, policy, cli.verbose),
        Command::Diff(a) => offline::diff(a, policy, cli.verbose),
        Command::Explain(a) => offline::explain(a, policy, cli.verbose),
        Command::Validate(a) => match (a.file, policy) {
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
            (f, p) => offline::validate(f.or(p), a.output),
        },
        Command::Schema => {
            let s = serde_json::to_string_pretty(&kfsched::policy::schema::json_schema())?;
            writeln!(std::io::stdout(), "{s}")?;
            Ok(Exit::Ok)
        }
        Command::Check(a) => Ok(check::run(*a, policy, cli.verbose)),
        Command::Fn(a) => offline::krm(a, policy),
        Command::Export(cli::ExportCommand::Admission(a)) => export::admission(a, policy),
        Command::Node(a) => Ok(node::run(*a, policy, cli.verbose)),
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
