//! `__complete` / `__completeNoDesc`: Cobra's completion protocol, which
//! kubectl's plugin completion reads through `kubectl_complete-kfsched` and
//! the `completion bash|zsh|fish` scripts read directly. The clap tree is
//! turned into the library's plain [`CommandSpec`] here, so completion always
//! offers exactly the subcommands and flags that parse.

use std::ffi::OsString;
use std::io::Write;

use clap::{Arg, ArgAction, CommandFactory};

use crate::completion::{
    self, Choice, CommandSpec, Environment, FlagSpec, PositionalSpec, ValueKind, ValueSpec,
};
use crate::exit::Exit;

use crate::cli::Cli;

/// Answers one completion request; `words` are the arguments after
/// `__complete`, the last one being the word under the cursor.
pub fn run(words: &[OsString], descriptions: bool) -> Result<Exit, Box<dyn std::error::Error>> {
    let words: Vec<String> = words
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let answer = completion::complete(&spec(), &words, &Environment::from_env());
    let mut out = std::io::stdout().lock();
    answer.write_cobra(&mut out, descriptions)?;
    out.flush()?;
    Ok(Exit::Ok)
}

/// The whole command tree, global flags propagated to every subcommand.
pub fn spec() -> CommandSpec {
    let mut cmd = Cli::command();
    cmd.build();
    command(&cmd)
}

fn command(cmd: &clap::Command) -> CommandSpec {
    let mut flags = Vec::new();
    let mut positionals = Vec::new();
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        if a.is_positional() {
            positionals.push(PositionalSpec {
                kind: kind(a),
                multiple: a.get_num_args().is_some_and(|n| n.max_values() > 1),
            });
            continue;
        }
        let takes_value = a.get_action().takes_values();
        flags.push(FlagSpec {
            id: a.get_id().as_str().to_string(),
            long: a.get_long().map(str::to_string),
            short: a.get_short(),
            help: a.get_help().map(|h| h.to_string()).unwrap_or_default(),
            value: takes_value.then(|| ValueSpec {
                kind: kind(a),
                attached_only: a.is_require_equals_set()
                    || a.get_num_args().is_some_and(|n| n.min_values() == 0),
            }),
            repeatable: matches!(a.get_action(), ArgAction::Append | ArgAction::Count),
        });
    }
    CommandSpec {
        name: cmd.get_name().to_string(),
        about: cmd.get_about().map(|s| s.to_string()).unwrap_or_default(),
        flags,
        positionals,
        subcommands: cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
            .map(command)
            .collect(),
    }
}

/// What a value is, from the argument's id and value name.
fn kind(a: &Arg) -> ValueKind {
    let possible = a.get_possible_values();
    if !possible.is_empty() {
        return ValueKind::Choices(
            possible
                .iter()
                .filter(|p| !p.is_hide_set())
                .map(|p| Choice {
                    value: p.get_name().to_string(),
                    help: p.get_help().map(|h| h.to_string()).unwrap_or_default(),
                })
                .collect(),
        );
    }
    let choice = |value: &str, help: &str| Choice {
        value: value.into(),
        help: help.into(),
    };
    match a.get_id().as_str() {
        "policy" => return ValueKind::YamlFiles,
        "kubeconfig" => return ValueKind::Files,
        "context" => return ValueKind::Contexts,
        "selector" => return ValueKind::PoolSelectors,
        "dry_run" => {
            return ValueKind::Choices(vec![
                choice("none", "write"),
                choice("client", "print only, send nothing"),
                choice("server", "the server checks, nothing is stored"),
            ]);
        }
        _ => {}
    }
    let name = a
        .get_value_names()
        .and_then(|n| n.first())
        .map(|n| n.as_str())
        .unwrap_or("");
    match name {
        "PATH" | "CONFIG" => ValueKind::YamlFiles,
        "FILE" => ValueKind::Files,
        "NODE" => ValueKind::Nodes,
        "NODE|TAINT" => ValueKind::NodesOrTaints,
        "NODE|LABEL" => ValueKind::NodesOrLabels,
        "RULE" => ValueKind::Rules,
        "POOL" => ValueKind::Pools,
        _ => ValueKind::Nothing,
    }
}
