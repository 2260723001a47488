//! The live cluster for the commands that read it besides the node
//! commands: one connection on a current-thread runtime, its errors mapped
//! to an exit code (`audit`, `explain pod/NAME`, `check`).

use std::future::Future;

use kfsched::node::client::Clients;

use crate::connection::ConnectionArgs;
use crate::exit::Exit;
use crate::report::{self, Category, Level};

/// Connects with the connection flags (saying where with `-v`) and runs
/// `work`; a failure is reported and becomes its exit code.
pub(crate) fn run<T, F, Fut>(connection: &ConnectionArgs, verbose: bool, work: F) -> Result<T, Exit>
where
    F: FnOnce(Clients) -> Fut,
    Fut: Future<Output = Result<T, kfsched::node::Error>>,
{
    run_hinted(connection, verbose, work, |_| "")
}

/// [`run`], with `hint` of a failure added to its report (what else the
/// command can do).
pub(crate) fn run_hinted<T, F, Fut>(
    connection: &ConnectionArgs,
    verbose: bool,
    work: F,
    hint: fn(&kfsched::node::Error) -> &'static str,
) -> Result<T, Exit>
where
    F: FnOnce(Clients) -> Fut,
    Fut: Future<Output = Result<T, kfsched::node::Error>>,
{
    let copts = connection.clone().options().map_err(|e| {
        report::error(Category::Usage, e);
        Exit::Usage
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            report::error(
                Category::Cluster,
                format_args!("cannot start the async runtime: {e}"),
            );
            Exit::Cluster
        })?;
    let result = runtime.block_on(async {
        let clients = kfsched::node::client::connect(&copts).await?;
        if verbose {
            report::message(
                Level::Info,
                Category::Cluster,
                format_args!("connecting to {} ({})", clients.server, clients.source),
            );
        }
        work(clients).await
    });
    runtime.shutdown_background();
    result.map_err(|e| {
        let exit = crate::exit::of_node_error(&e);
        let category = if exit == Exit::Cluster {
            Category::Cluster
        } else {
            Category::Usage
        };
        report::error(category, format_args!("{e}{}", hint(&e)));
        exit
    })
}
