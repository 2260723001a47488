//! `node` subcommands: flags here, work in `kfsched::node`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use kfsched::exit::Exit;

#[derive(Args, Debug)]
pub struct NodeArgs {
    #[command(subcommand)]
    pub command: NodeCommand,
}

#[derive(Subcommand, Debug)]
pub enum NodeCommand {
    /// Add or remove taints (key=value:Effect, key:Effect, key:Effect-, key-)
    Taint,
}

pub fn run(_args: NodeArgs, _policy: Option<PathBuf>, _verbose: bool) -> Exit {
    eprintln!("error: node commands are not built yet");
    Exit::Usage
}
