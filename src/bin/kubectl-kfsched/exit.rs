//! Exit codes (SPEC §4).

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Done, or nothing to change.
    Ok = 0,
    /// Differences found (`diff`, `--check`, `node diff`) or KRM error results.
    Differences = 1,
    /// Bad usage or invalid input; nothing was written.
    Usage = 2,
    /// Cluster or API failure, or a drain that did not complete.
    Cluster = 3,
    /// Interrupted (Ctrl-C).
    Interrupted = 130,
}

impl Exit {
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// SPEC §4's exit code for a failed `node` command.
pub fn of_node_error(e: &kfsched::node::Error) -> Exit {
    use kfsched::node::Error;
    match e {
        Error::Usage(_)
        | Error::Config(_)
        | Error::Refused(_)
        | Error::RefusedOnRetry(_)
        | Error::PoolsDisagree(_)
        | Error::PoolConflicts(_) => Exit::Usage,
        Error::Api { .. }
        | Error::NodesFailed(_)
        | Error::Malformed(_)
        | Error::DrainBlocked(_)
        | Error::DrainIncomplete(_)
        | Error::DrainAborted { .. } => Exit::Cluster,
        Error::Interrupted => Exit::Interrupted,
    }
}
