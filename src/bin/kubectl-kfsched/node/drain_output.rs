//! What `node drain` prints, from the drain's events: the cordons, every
//! node's pods with their fates and each node's report on stdout; progress
//! on stderr, as a bar on a terminal and a line per pod otherwise; a
//! budget's 429 at most once every 10 s.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::time::{Duration, Instant};

use kfsched::node::DryRun;
use kfsched::node::drain::{
    Counts, DrainOptions, Event, Fate, NodeReport, PodPlan, PodState, PodStep,
};

/// How often a budget that keeps refusing is mentioned again.
const NOTICE_EVERY: Duration = Duration::from_secs(10);
/// The bar is redrawn at most this often.
const REDRAW_EVERY: Duration = Duration::from_millis(100);
const BAR_WIDTH: usize = 30;

/// `s` unless there is one.
fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Turns drain events into output.
pub struct DrainOutput<'w> {
    out: &'w mut dyn Write,
    err: &'w mut dyn Write,
    opts: &'w DrainOptions,
    /// stderr is a terminal: draw a bar instead of a line per pod.
    bar: bool,
    drawn: bool,
    last_draw: Option<Instant>,
    started: Instant,
    /// When each budget's refusal was last mentioned.
    last_notice: HashMap<String, Instant>,
}

impl<'w> DrainOutput<'w> {
    pub fn new(
        out: &'w mut dyn Write,
        err: &'w mut dyn Write,
        opts: &'w DrainOptions,
        bar: bool,
    ) -> DrainOutput<'w> {
        DrainOutput {
            out,
            err,
            opts,
            bar,
            drawn: false,
            last_draw: None,
            started: Instant::now(),
            last_notice: HashMap::new(),
        }
    }

    pub fn event(&mut self, event: Event<'_>) {
        let suffix = self.opts.dry_run.suffix();
        match event {
            Event::NoNodes => {
                let _ = writeln!(
                    self.err,
                    "warning: no nodes matched: {}",
                    self.opts.targets.describe()
                );
            }
            Event::Cordoned { node, already } => {
                let what = if already {
                    "already cordoned"
                } else {
                    "cordoned"
                };
                let _ = writeln!(self.out, "node/{node} {what}{suffix}");
            }
            Event::Planned { node, plans, again } => {
                if again {
                    let _ = writeln!(
                        self.out,
                        "the pods on node/{node} changed since the list above:"
                    );
                }
                print_plan(self.out, node, plans, self.opts);
            }
            Event::WouldDrain { node, pods } => {
                let _ = writeln!(
                    self.out,
                    "node/{node} would be drained: {pods} pod{} evicted (dry run)",
                    plural(pods)
                );
            }
            Event::Draining { .. } => {
                self.drawn = false;
                self.last_draw = None;
                self.started = Instant::now();
            }
            Event::Pod { pod, step } => self.pod(pod, step),
            Event::Held {
                pod,
                refusal,
                waiting,
                retry_in,
            } => {
                // One line per budget, repeated at most every 10 s
                // (kubectl prints one per pod every 5 s).
                let who = refusal.who("the API server");
                let due = self
                    .last_notice
                    .get(&who)
                    .is_none_or(|t| t.elapsed() >= NOTICE_EVERY);
                if due {
                    self.last_notice.insert(who.clone(), Instant::now());
                    self.line(&format!(
                        "pod {}: eviction refused (429) by {who}: {}; {waiting} {} for it; retrying in {}s, or as soon as it allows a disruption",
                        pod.key(),
                        refusal.message,
                        if waiting == 1 { "pod waits" } else { "pods wait" },
                        retry_in.as_secs()
                    ));
                }
            }
            Event::Progress { node, counts } => self.draw(node, counts, false),
            Event::Finished(report) => {
                self.draw(&report.node, Counts::of(&report.states), true);
                self.clear();
                print_report(self.out, report, self.opts);
            }
        }
    }

    fn pod(&mut self, pod: &PodPlan, step: PodStep<'_>) {
        let key = pod.key();
        let deleting = self.opts.disable_eviction;
        match step {
            PodStep::Evicting => {
                let verb = if deleting { "deleting" } else { "evicting" };
                self.per_pod(&format!("{verb} pod {key}"));
            }
            PodStep::Accepted if self.opts.dry_run == DryRun::Server => {
                self.per_pod(&format!("pod {key} would be evicted (server dry run)"));
            }
            PodStep::Accepted => {
                let verb = if deleting { "deleted" } else { "evicted" };
                self.per_pod(&format!("pod {key} {verb}"));
            }
            PodStep::Gone { replaced: false } => self.per_pod(&format!("pod {key} is gone")),
            PodStep::Gone { replaced: true } => self.per_pod(&format!(
                "pod {key} is gone (replaced by a new pod of the same name)"
            )),
            PodStep::Failed(m) => self.line(&format!("error: cannot evict pod {key}: {m}")),
            PodStep::WouldBeRefused(r) => self.per_pod(&format!(
                "pod {key} would be refused (429) by {} (server dry run)",
                r.who("a PodDisruptionBudget")
            )),
        }
    }

    fn clear(&mut self) {
        if self.drawn {
            let _ = write!(self.err, "\r\x1b[2K");
            self.drawn = false;
        }
    }

    /// A message line (warnings, 429 notices); on a terminal it goes above the bar.
    fn line(&mut self, msg: &str) {
        self.clear();
        let _ = writeln!(self.err, "{msg}");
    }

    /// A per-pod line, only without the bar (the bar counts them).
    fn per_pod(&mut self, msg: &str) {
        if !self.bar {
            let _ = writeln!(self.err, "{msg}");
        }
    }

    fn draw(&mut self, node: &str, c: Counts, force: bool) {
        if !self.bar {
            return;
        }
        let now = Instant::now();
        if !force
            && self
                .last_draw
                .is_some_and(|l| now.duration_since(l) < REDRAW_EVERY)
        {
            return;
        }
        self.last_draw = Some(now);
        let filled = (c.gone * BAR_WIDTH)
            .checked_div(c.total)
            .unwrap_or(BAR_WIDTH);
        let mut s = format!(
            "\r\x1b[2Knode/{node} [{}{}] {}/{} gone",
            "#".repeat(filled),
            "-".repeat(BAR_WIDTH - filled),
            c.gone,
            c.total
        );
        if c.in_flight > 0 {
            s.push_str(&format!(", {} evicting", c.in_flight));
        }
        if c.blocked > 0 {
            s.push_str(&format!(", {} held by a PodDisruptionBudget", c.blocked));
        }
        if c.failed > 0 {
            s.push_str(&format!(", {} failed", c.failed));
        }
        s.push_str(&format!(" ({}s)", self.started.elapsed().as_secs()));
        let _ = write!(self.err, "{s}");
        let _ = self.err.flush();
        self.drawn = true;
    }
}

/// Every pod of a node with its fate, before anything is evicted.
fn print_plan(out: &mut dyn Write, node: &str, plans: &[PodPlan], opts: &DrainOptions) {
    let _ = writeln!(out, "pods on node/{node} ({}):", plans.len());
    let width = plans.iter().map(|p| p.key().len()).max().unwrap_or(0);
    let verb = if opts.disable_eviction {
        "delete"
    } else {
        "evict"
    };
    for p in plans {
        let (word, why) = match &p.fate {
            Fate::Remove => {
                let mut parts = vec![p.afterlife()];
                parts.extend(p.warnings.iter().cloned());
                parts.extend(p.budgets.iter().map(|b| {
                    format!(
                        "PodDisruptionBudget {} allows {} disruption{}",
                        b.name,
                        b.allowed,
                        if b.allowed == 1 { "" } else { "s" }
                    )
                }));
                (verb, parts.join("; "))
            }
            Fate::Skip(r) => ("skip", r.clone()),
            Fate::Blocked(r) => ("BLOCKED", r.join("; ")),
        };
        let _ = writeln!(out, "  {word:<7} {:<width$}  {why}", p.key());
    }
}

/// A row of the report: the pod's state in one word, and why.
fn report_row(p: &PodPlan, state: &PodState, r: &NodeReport, removed: &str) -> (String, String) {
    let stopped = || {
        r.reason
            .as_ref()
            .map_or_else(|| "stopped".to_string(), ToString::to_string)
    };
    match state {
        PodState::Gone => (removed.to_string(), p.afterlife()),
        PodState::WouldEvict => (
            format!("would be {removed}"),
            format!("{} (server dry run)", p.afterlife()),
        ),
        PodState::Terminating => (
            removed.to_string(),
            format!(
                "{}; still terminating (--skip-wait-for-delete-timeout SECONDS stops waiting for pods deleted longer ago)",
                p.afterlife()
            ),
        ),
        PodState::SkippedWait => (
            removed.to_string(),
            format!(
                "{}; not waited for (--skip-wait-for-delete-timeout)",
                p.afterlife()
            ),
        ),
        PodState::Failed(m) => ("FAILED".into(), m.clone()),
        PodState::WouldBeRefused(refusal) => (
            "REFUSED".into(),
            format!(
                "would be refused (429) by {} (server dry run): {}",
                refusal.who("a PodDisruptionBudget"),
                refusal.message
            ),
        ),
        PodState::HeldByBudget(refusal) => (
            "pending".into(),
            format!(
                "not evicted ({}): {} refuses: {}",
                stopped(),
                refusal.who("the API server"),
                refusal.message
            ),
        ),
        PodState::NotStarted | PodState::Evicting => {
            ("pending".into(), format!("not evicted: {}", stopped()))
        }
    }
}

/// What became of every pod of a node, and whether it is drained.
fn print_report(out: &mut dyn Write, r: &NodeReport, opts: &DrainOptions) {
    let _ = writeln!(out, "drain report for node/{}:", r.node);
    let width = r.plans.iter().map(|p| p.key().len()).max().unwrap_or(0);
    let removed = if opts.disable_eviction {
        "deleted"
    } else {
        "evicted"
    };
    // The rows first: a server dry run's `would be evicted` is wider than
    // the other words, and the pod names stay in one column.
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for (pi, state) in &r.states {
        let p = &r.plans[*pi];
        let (word, why) = report_row(p, state, r, removed);
        rows.push((word, p.key(), why));
    }
    for p in &r.plans {
        if let Fate::Skip(why) = &p.fate {
            rows.push(("left".into(), p.key(), why.clone()));
        }
    }
    let words = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(8);
    for (word, key, why) in rows {
        let _ = writeln!(out, "  {word:<words$} {key:<width$}  {why}");
    }
    let gone_no_controller = r
        .states
        .iter()
        .filter(|(pi, s)| {
            matches!(
                s,
                PodState::Gone | PodState::Terminating | PodState::SkippedWait
            ) && r.plans[*pi].controller.is_none()
                && !r.plans[*pi].finished
        })
        .count();
    if gone_no_controller > 0 {
        let _ = writeln!(
            out,
            "  {gone_no_controller} {removed} pod{} had no controller and will not come back",
            plural(gone_no_controller)
        );
    }
    if opts.dry_run == DryRun::Server {
        dry_run_note(out, r);
    }
    match &r.reason {
        None => {
            let _ = writeln!(
                out,
                "node/{} drained{} in {:.1}s",
                r.node,
                opts.dry_run.suffix(),
                r.elapsed.as_secs_f64()
            );
        }
        Some(why) if opts.dry_run != DryRun::None => {
            let _ = writeln!(out, "node/{} would NOT be drained: {why}", r.node);
        }
        Some(why) => {
            let _ = writeln!(
                out,
                "node/{} NOT drained: {why}; it stays cordoned (uncordon with `kubectl kfsched node uncordon {}`)",
                r.node, r.node
            );
        }
    }
}

/// Each eviction of a server dry run was checked alone against the budgets
/// as listed: a dry run uses up no disruption, so pods that a budget allows
/// one at a time all "would be evicted". Says so where it matters.
fn dry_run_note(out: &mut dyn Write, r: &NodeReport) {
    let mut covered: BTreeMap<&str, (i32, usize)> = BTreeMap::new();
    for (pi, s) in &r.states {
        if *s == PodState::WouldEvict {
            for b in &r.plans[*pi].budgets {
                covered.entry(b.name.as_str()).or_insert((b.allowed, 0)).1 += 1;
            }
        }
    }
    for (b, (allowed, n)) in covered {
        if n as i64 > i64::from(allowed) {
            let _ = writeln!(
                out,
                "  note: a server dry run checks each eviction alone: PodDisruptionBudget {b} allows {allowed} disruption{} now and covers {n} of these pods, so a real drain evicts them as it allows, waiting for replacements",
                plural(allowed.max(0) as usize)
            );
        }
    }
}
