//! `node drain`'s options: kubectl's flags plus `--concurrency`, as a plain
//! struct the binary fills from its command line.

use std::time::Duration;

use crate::{DryRun, Targets};
use kfsched_core::k8s::LabelSelector;

/// Default `--concurrency`: evictions in flight at once per node.
pub const DEFAULT_CONCURRENCY: usize = 32;

/// `node drain`'s options (kubectl's flags plus `concurrency`).
#[derive(Clone, Debug)]
pub struct DrainOptions {
    /// Names or `-l` (SPEC: no `--all` for drain).
    pub targets: Targets,
    pub ignore_daemonsets: bool,
    pub delete_emptydir_data: bool,
    pub force: bool,
    /// `--grace-period`: `None` (kubectl's -1) uses each pod's own.
    pub grace_period: Option<u32>,
    /// `--timeout` per node; `None` waits forever.
    pub timeout: Option<Duration>,
    pub pod_selector: Option<LabelSelector>,
    pub disable_eviction: bool,
    /// `--skip-wait-for-delete-timeout`; `None` is off.
    pub skip_wait_for_delete_timeout: Option<Duration>,
    pub dry_run: DryRun,
    pub concurrency: usize,
}

impl DrainOptions {
    pub fn new(targets: Targets) -> DrainOptions {
        DrainOptions {
            targets,
            ignore_daemonsets: false,
            delete_emptydir_data: false,
            force: false,
            grace_period: None,
            timeout: None,
            pod_selector: None,
            disable_eviction: false,
            skip_wait_for_delete_timeout: None,
            dry_run: DryRun::None,
            concurrency: DEFAULT_CONCURRENCY,
        }
    }
}
