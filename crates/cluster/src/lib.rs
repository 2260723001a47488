//! Live `node` commands: taint, label, cordon/uncordon, drain, and the
//! policy's node pools (apply/diff/prune) on a real cluster.
//!
//! This is the only async part of kfsched. Every command takes plain option
//! structs and the clients built by [`client::connect`]. The node edits
//! stream their result lines and warnings to injected writers (`out`,
//! `err`); `node drain` reports through a callback of [`drain::Event`]s and
//! the pool commands return their [`pools::NodePlan`]s, which the binary
//! renders. Nothing here prints or exits: the binary maps an [`Error`], whose
//! variants say what refused or failed, to an exit code.
//!
//! Edits of `spec.taints`, labels and annotations are read-modify-write
//! cycles guarded by the node's `resourceVersion` and retried on 409
//! Conflict ([`edit`]), so concurrent editors never lose each other's
//! changes (the lost update that `kubectl taint` is prone to).

pub mod audit;
pub mod check;
pub mod client;
pub mod cordon;
pub mod drain;
pub mod edit;
pub mod label;
pub mod listed;
pub mod nodes;
pub mod pools;
pub mod taint;

use std::time::Duration;

use kfsched_core::k8s::LabelSelector;

/// The field manager recorded on every write.
pub const FIELD_MANAGER: &str = "kfsched";

/// Which nodes a command works on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Targets {
    /// Nodes named on the command line.
    Names(Vec<String>),
    /// Nodes matching a label selector (`-l`).
    Selector(LabelSelector),
    /// Every node (`--all`).
    All,
}

impl Targets {
    /// Builds the target set from the command line's three mutually
    /// exclusive forms (`taint`, `label`).
    pub fn from_args(
        names: Vec<String>,
        selector: Option<&str>,
        all: bool,
    ) -> Result<Targets, Error> {
        Targets::build(names, selector, Some(all))
    }

    /// Node names or `-l` (`cordon`, `uncordon`, `drain`: no `--all`).
    pub fn from_names_or_selector(
        names: Vec<String>,
        selector: Option<&str>,
    ) -> Result<Targets, Error> {
        Targets::build(names, selector, None)
    }

    /// `all` is the `--all` flag, `None` for commands that do not offer it.
    fn build(
        names: Vec<String>,
        selector: Option<&str>,
        all: Option<bool>,
    ) -> Result<Targets, Error> {
        let all_allowed = all.is_some();
        let all = all == Some(true);
        let forms =
            usize::from(!names.is_empty()) + usize::from(selector.is_some()) + usize::from(all);
        if forms > 1 {
            return Err(Error::Usage(if all_allowed {
                "give node names, -l/--selector or --all, not more than one of them".into()
            } else {
                "give node names or -l/--selector, not both".into()
            }));
        }
        if let Some(s) = selector {
            // An empty selector matches every node: `-l "$POOL"` with POOL
            // unset must not cordon or drain the whole cluster. (An empty
            // --pod-selector is no filter, as in kubectl drain.)
            if s.trim().is_empty() {
                return Err(Error::Usage(format!(
                    "an empty label selector (-l \"\") would select every node: give a selector{}",
                    if all_allowed { " or --all" } else { "" }
                )));
            }
            return Ok(Targets::Selector(parse_selector(s, "-l")?));
        }
        if all {
            return Ok(Targets::All);
        }
        if names.is_empty() {
            return Err(Error::Usage(if all_allowed {
                "no nodes: give node names, -l/--selector SELECTOR or --all".into()
            } else {
                "no nodes: give node names or -l/--selector SELECTOR".into()
            }));
        }
        let mut clean = Vec::with_capacity(names.len());
        for n in names {
            let n = n
                .strip_prefix("node/")
                .or_else(|| n.strip_prefix("nodes/"))
                .map(str::to_string)
                .unwrap_or(n);
            let errs = kfsched_core::k8s::node_name(&n);
            if !errs.is_empty() {
                return Err(Error::Usage(format!(
                    "invalid node name {n:?}: {}",
                    errs.join("; ")
                )));
            }
            if !clean.contains(&n) {
                clean.push(n);
            }
        }
        Ok(Targets::Names(clean))
    }

    /// How the targets read in messages.
    pub fn describe(&self) -> String {
        match self {
            Targets::Names(n) => n
                .iter()
                .map(|n| format!("node/{n}"))
                .collect::<Vec<_>>()
                .join(", "),
            Targets::Selector(s) => format!("nodes matching -l {:?}", s.to_query()),
            Targets::All => "all nodes".into(),
        }
    }
}

/// Parses a label selector given to `flag` (`-l`, `--pod-selector`).
pub fn parse_selector(s: &str, flag: &str) -> Result<LabelSelector, Error> {
    LabelSelector::parse(s)
        .map_err(|e| Error::Usage(format!("invalid label selector {s:?} ({flag}): {e}")))
}

/// `--dry-run`: none (write), client (compute and print, send nothing),
/// server (send with `dryRun=All`: the server validates, nothing persists).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DryRun {
    #[default]
    None,
    Client,
    Server,
}

impl DryRun {
    /// Parses kubectl's values. Returns the mode and a deprecation warning
    /// for the old boolean spellings (kubectl's `GetDryRunStrategy`).
    pub fn parse(s: &str) -> Result<(DryRun, Option<String>), Error> {
        match s {
            "none" => Ok((DryRun::None, None)),
            "client" => Ok((DryRun::Client, None)),
            "server" => Ok((DryRun::Server, None)),
            "unchanged" | "true" => Ok((
                DryRun::Client,
                Some("--dry-run is deprecated and can be replaced with --dry-run=client".into()),
            )),
            "false" => Ok((
                DryRun::None,
                Some("--dry-run=false is deprecated (boolean value) and can be replaced with --dry-run=none".into()),
            )),
            other => Err(Error::Usage(format!(
                "Invalid dry-run value ({other}). Must be \"none\", \"server\", or \"client\"."
            ))),
        }
    }

    /// The suffix kubectl puts after a result line.
    pub fn suffix(self) -> &'static str {
        match self {
            DryRun::None => "",
            DryRun::Client => " (dry run)",
            DryRun::Server => " (server dry run)",
        }
    }
}

/// Why a node refuses a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalKind {
    /// The node has another value for the same label, or taint key and
    /// effect, that someone else set: `--overwrite` replaces it.
    NeedsOverwrite,
    /// The node is in pools that want different values for one label or taint.
    PoolsDisagree,
    /// The node's `kfsched.dev/managed` annotation is not a record kfsched can read.
    UnreadableRecord,
}

/// One node that refuses a change: what kind of refusal, and the message,
/// which names the node and the flag or fix that lifts it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub kind: RefusalKind,
    /// One line (a pool conflict may take more), starting with `node/NAME`.
    pub message: String,
}

impl Refusal {
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            message: message.into(),
        }
    }
}

/// Why a live command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line or an argument is invalid; nothing was sent.
    #[error("{0}")]
    Usage(String),
    /// The kubeconfig could not be found, read or used; nothing was sent.
    #[error("{0}")]
    Config(String),
    /// Nodes refuse the change as read (a conflicting value without
    /// `--overwrite`, pools that disagree, an unreadable record); nothing was
    /// written. With more than one, the message counts them and the caller
    /// lists them.
    #[error("{}", refused(.0))]
    Refused(Vec<Refusal>),
    /// A node, read again after a concurrent write (409 Conflict), now
    /// refuses the change; the other nodes' writes stand.
    #[error("{0}")]
    RefusedOnRetry(Refusal),
    /// `node apply` and `node diff`: nodes are in pools that want different
    /// values; nothing was written. One refusal per node.
    #[error("{}", lines(.0, "\n"))]
    PoolsDisagree(Vec<Refusal>),
    /// `node apply`: the pools' values conflict with values already on the
    /// nodes (someone else's, without `--overwrite`), or a node's record
    /// cannot be read; nothing was written. One refusal per conflict.
    #[error("the pools conflict with values already on the nodes; nothing was written:\n  {}", lines(.0, "\n  "))]
    PoolConflicts(Vec<Refusal>),
    /// An API request failed; `message` is one readable line.
    #[error("{action}: {message}")]
    Api {
        /// What kfsched was doing, such as `cannot patch node/worker-1`.
        action: String,
        message: String,
        #[source]
        source: Option<Box<kube::Error>>,
    },
    /// Several nodes were not changed, each for its own reason (the caller
    /// lists them); the other nodes' results stand.
    #[error("{} nodes were not changed (see the errors above)", .0.len())]
    NodesFailed(Vec<Error>),
    /// A request could not be built, or the server's answer not read.
    #[error("{0}")]
    Malformed(String),
    /// Pods block the drain, each reason naming the flag that overrides
    /// it; nothing was evicted.
    #[error("{0}")]
    DrainBlocked(Box<drain::Blocked>),
    /// The drain did not complete on every node (not drained in time,
    /// failed evictions, blocked or unreachable nodes); the nodes drained
    /// stay drained and the others stay cordoned.
    #[error("{0}")]
    DrainIncomplete(Box<drain::Incomplete>),
    /// A request failed before any eviction; `cordons` says what became of
    /// the cordons this drain added.
    #[error("{source}{cordons}")]
    DrainAborted {
        source: Box<Error>,
        cordons: drain::CordonsUndone,
    },
    /// Ctrl-C: new work stopped; what was done is reported.
    #[error("interrupted")]
    Interrupted,
}

fn refused(r: &[Refusal]) -> String {
    match r {
        [one] => format!("{one}; nothing was written"),
        _ => format!("{} nodes refuse the change; nothing was written", r.len()),
    }
}

fn lines(r: &[Refusal], sep: &str) -> String {
    r.iter()
        .map(|r| r.message.as_str())
        .collect::<Vec<_>>()
        .join(sep)
}

impl Error {
    /// An API error with what was being done.
    pub fn api(action: impl Into<String>, e: kube::Error) -> Error {
        Error::Api {
            action: action.into(),
            message: client::describe(&e),
            source: Some(Box::new(e)),
        }
    }

    /// Whether the server said the caller lacks rights (401/403): every
    /// further request would fail the same way.
    pub fn is_denied(&self) -> bool {
        matches!(self, Error::Api { source: Some(e), .. } if client::is_denied(e))
    }
}

/// Parses `--request-timeout` the way kubectl does (client-go's
/// `ParseTimeout`): a bare number of seconds, or a Go duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    if let Ok(secs) = s.trim().parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    parse_go_duration(s)
}

/// Parses a Go duration (`time.ParseDuration`, what kubectl's duration
/// flags such as `drain --timeout` take): `90s`, `5m`, `1h30m`, `1.5s`,
/// `500ms`; every number needs a unit, except a lone `0`.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty duration".into());
    }
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return Err(format!(
                "invalid duration {s:?}: expected a number, e.g. 30s, 5m or 1h30m"
            ));
        }
        let n: f64 = rest[..num_end]
            .parse()
            .map_err(|_| format!("invalid duration {s:?}"))?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let scale = match unit {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            "" => {
                return Err(format!(
                    "invalid duration {s:?}: missing unit (h, m, s, ms), e.g. {t}s"
                ));
            }
            other => {
                return Err(format!(
                    "invalid duration {s:?}: unknown unit {other:?} (use h, m, s or ms)"
                ));
            }
        };
        total += n * scale;
    }
    if !total.is_finite() || total < 0.0 {
        return Err(format!("invalid duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(total))
}

/// A small jitter source without a random-number crate: the std hasher is
/// randomly keyed per process.
pub(crate) fn jitter(max: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    let frac = (h.finish() % 10_000) as f64 / 10_000.0;
    max.mul_f64(frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_kubectl_syntax() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("1.5").is_err());
    }

    #[test]
    fn go_durations_need_a_unit() {
        // time.ParseDuration: `time: missing unit in duration "5"`.
        let e = parse_go_duration("5").unwrap_err();
        assert!(e.contains("missing unit"), "{e}");
        assert!(
            parse_go_duration("1m30")
                .unwrap_err()
                .contains("missing unit")
        );
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_go_duration("1h30m"), Ok(Duration::from_secs(5400)));
    }

    #[test]
    fn dry_run_values() {
        assert_eq!(DryRun::parse("server").unwrap().0, DryRun::Server);
        assert_eq!(DryRun::parse("unchanged").unwrap().0, DryRun::Client);
        assert!(DryRun::parse("unchanged").unwrap().1.is_some());
        let e = DryRun::parse("yes").unwrap_err().to_string();
        assert_eq!(
            e,
            "Invalid dry-run value (yes). Must be \"none\", \"server\", or \"client\"."
        );
    }

    #[test]
    fn targets_are_exclusive() {
        assert!(Targets::from_args(vec!["a".into()], Some("x=y"), false).is_err());
        assert!(Targets::from_args(vec![], None, false).is_err());
        assert_eq!(
            Targets::from_args(vec!["node/a".into(), "a".into()], None, false).unwrap(),
            Targets::Names(vec!["a".into()])
        );
        assert!(Targets::from_args(vec![], Some("a in (b"), false).is_err());
    }

    #[test]
    fn target_messages_name_only_the_forms_a_command_takes() {
        let e = Targets::from_args(vec![], None, false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "no nodes: give node names, -l/--selector SELECTOR or --all"
        );
        let e = Targets::from_names_or_selector(vec![], None)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "no nodes: give node names or -l/--selector SELECTOR");
        let e = Targets::from_names_or_selector(vec!["a".into()], Some("x=y"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "give node names or -l/--selector, not both");
    }

    #[test]
    fn greater_and_less_than_selectors_compare_integers() {
        let s = parse_selector("gen > 6, pool=a", "-l").unwrap();
        assert_eq!(s.to_query(), "gen>6,pool=a");
        let lbl = |v: &str| {
            [
                ("gen".to_string(), v.to_string()),
                ("pool".into(), "a".into()),
            ]
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>()
        };
        assert!(s.matches(&lbl("7")) && !s.matches(&lbl("6")) && !s.matches(&lbl("x")));
        let e = Targets::from_names_or_selector(vec![], Some("")).unwrap_err();
        assert!(e.to_string().contains("would select every node"), "{e}");
        assert!(Targets::from_args(vec![], Some(" "), false).is_err());
        assert!(parse_selector("", "--pod-selector").is_ok());
        let s = parse_selector("gen<3", "--pod-selector").unwrap();
        assert!(s.matches(&lbl("2")) && !s.matches(&lbl("3")));
        // As labels.Parse: the value is a label value too, so no sign.
        assert!(parse_selector("gen<-1", "-l").is_err());
        assert!(!s.matches(&Default::default()));
        let e = parse_selector("gen>1.5", "-l").unwrap_err().to_string();
        assert!(
            e.contains("for '>' and '<' the value must be an integer, got \"1.5\""),
            "{e}"
        );
    }
}
