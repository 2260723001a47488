//! Shell completion: what to offer for the words typed so far.
//!
//! The binary hands over its command tree as a plain [`CommandSpec`] (built
//! from its clap definitions, so the two never drift); [`complete`] walks the
//! typed words through it and answers in Cobra's `__complete` protocol, the
//! one kubectl's plugin completion reads from `kubectl_complete-kfsched`:
//! one candidate per line (`value<TAB>description`), then `:<directive>`.
//! The scripts from [`script`] (`kubectl kfsched completion bash|zsh|fish`)
//! read the same answers, so `kubectl-kfsched <TAB>` and `kubectl kfsched
//! <TAB>` offer the same things.
//!
//! Dynamic values come through [`Sources`]: rule and pool names and the
//! pools' labels and taints from the policy (found as every command finds
//! it), kubeconfig contexts, and node names from the live cluster. They are
//! looked up only when the word being completed needs them, and a lookup
//! that fails offers nothing rather than printing into the user's prompt.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kfsched::node::client::{self, ClientOptions, Overrides};
use kfsched::policy::Policy;

/// Cobra's `ShellCompDirective` bits, as kubectl's completion scripts read them.
pub mod directive {
    /// Do not fall back to file names when nothing is offered.
    pub const NO_FILE_COMP: u32 = 4;
    /// The candidates are file extensions: complete file names with them (and directories).
    pub const FILTER_FILE_EXT: u32 = 8;
    /// Default: file-name completion when nothing is offered.
    pub const DEFAULT: u32 = 0;
}

/// One command of the tree: its flags, positional arguments and subcommands.
#[derive(Clone, Debug, Default)]
pub struct CommandSpec {
    pub name: String,
    /// One line, shown next to the name.
    pub about: String,
    pub flags: Vec<FlagSpec>,
    pub positionals: Vec<PositionalSpec>,
    pub subcommands: Vec<CommandSpec>,
}

/// A flag (`--long`, `-s`).
#[derive(Clone, Debug)]
pub struct FlagSpec {
    /// A stable name (clap's argument id): `policy`, `kubeconfig` and
    /// `context` tell the completer where to look things up.
    pub id: String,
    pub long: Option<String>,
    pub short: Option<char>,
    /// One line, shown next to the flag.
    pub help: String,
    /// `None` for a switch.
    pub value: Option<ValueSpec>,
    /// May be given more than once.
    pub repeatable: bool,
}

/// The value a flag takes.
#[derive(Clone, Debug)]
pub struct ValueSpec {
    pub kind: ValueKind,
    /// Only `--flag=VALUE` gives a value (`--dry-run[=MODE]`); the next word is not it.
    pub attached_only: bool,
}

/// A positional argument.
#[derive(Clone, Debug)]
pub struct PositionalSpec {
    pub kind: ValueKind,
    /// Takes every remaining word.
    pub multiple: bool,
}

/// What kind of value a word is, which decides what is offered for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// A fixed set of values.
    Choices(Vec<Choice>),
    /// YAML files and directories (`*.yaml`, `*.yml`).
    YamlFiles,
    /// Any file.
    Files,
    /// A context of the kubeconfig.
    Contexts,
    /// Node names from the live cluster.
    Nodes,
    /// `node taint`'s arguments: node names, then the policy pools' taints.
    NodesOrTaints,
    /// `node label`'s arguments: node names, then the policy pools' labels.
    NodesOrLabels,
    /// A label selector: the policy pools' labels as `key=value`.
    PoolSelectors,
    /// A rule name of the policy.
    Rules,
    /// A node pool name of the policy.
    Pools,
    /// Free text: nothing to offer.
    Nothing,
}

/// One of a fixed set of values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub value: String,
    pub help: String,
}

/// One thing to offer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub value: String,
    pub help: String,
}

/// The answer: candidates and a Cobra directive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completions {
    pub candidates: Vec<Candidate>,
    pub directive: u32,
}

impl Completions {
    fn new(directive: u32) -> Self {
        Completions {
            candidates: Vec::new(),
            directive,
        }
    }

    fn push(&mut self, value: impl Into<String>, help: impl Into<String>) {
        let value = value.into();
        if !self.candidates.iter().any(|c| c.value == value) {
            self.candidates.push(Candidate {
                value,
                help: help.into(),
            });
        }
    }

    /// The values alone, for tests and messages.
    #[cfg(test)]
    pub fn values(&self) -> Vec<&str> {
        self.candidates.iter().map(|c| c.value.as_str()).collect()
    }

    /// Writes Cobra's `__complete` output (`__completeNoDesc` without descriptions).
    pub fn write_cobra(&self, out: &mut dyn Write, descriptions: bool) -> std::io::Result<()> {
        for c in &self.candidates {
            let help = one_line(&c.help);
            if descriptions && !help.is_empty() {
                writeln!(out, "{}\t{help}", c.value)?;
            } else {
                writeln!(out, "{}", c.value)?;
            }
        }
        writeln!(out, ":{}", self.directive)
    }
}

fn one_line(s: &str) -> String {
    s.lines()
        .next()
        .unwrap_or("")
        .replace('\t', " ")
        .trim()
        .to_string()
}

/// Where dynamic values come from. [`Environment`] is the real one.
pub trait Sources {
    /// The policy (`explicit` is `-p/--policy` from the typed words).
    fn policy(&self, explicit: Option<&Path>) -> Option<Policy>;
    /// Context names of the kubeconfig.
    fn contexts(&self, kubeconfig: Option<&Path>) -> Vec<String>;
    /// Node names of the cluster the typed connection flags reach.
    fn nodes(
        &self,
        kubeconfig: Option<&Path>,
        context: Option<&str>,
        overrides: &Overrides,
    ) -> Vec<String>;
}

/// What the typed words say beyond the command: flags that decide where
/// things are looked up, and the positional words given so far.
#[derive(Default, Debug)]
struct Typed {
    policy: Option<PathBuf>,
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    /// kubectl's other connection flags, so node names come from the
    /// cluster the command would reach.
    overrides: Overrides,
    positionals: Vec<String>,
}

impl Typed {
    fn record(&mut self, flag: &FlagSpec, value: &str) {
        match flag.id.as_str() {
            "policy" => self.policy = Some(PathBuf::from(value)),
            "kubeconfig" => self.kubeconfig = Some(PathBuf::from(value)),
            "context" => self.context = Some(value.to_string()),
            _ => self.connection(flag.id.as_str(), value),
        }
    }

    fn connection(&mut self, id: &str, value: &str) {
        let o = &mut self.overrides;
        let text = || (!value.is_empty()).then(|| value.to_string());
        let path = || (!value.is_empty()).then(|| PathBuf::from(value));
        match id {
            "server" => o.server = text(),
            "token" => o.token = text(),
            "cluster" => o.cluster = text(),
            "user" => o.user = text(),
            "certificate_authority" => o.certificate_authority = path(),
            "client_certificate" => o.client_certificate = path(),
            "client_key" => o.client_key = path(),
            "insecure_skip_tls_verify" => o.insecure_skip_tls_verify = value != "false",
            "tls_server_name" => o.tls_server_name = text(),
            "impersonate" => o.impersonate = text(),
            "impersonate_groups" => o.impersonate_groups.extend(text()),
            _ => {}
        }
    }
}

impl CommandSpec {
    fn long(&self, name: &str) -> Option<&FlagSpec> {
        self.flags.iter().find(|f| f.long.as_deref() == Some(name))
    }

    fn short(&self, c: char) -> Option<&FlagSpec> {
        self.flags.iter().find(|f| f.short == Some(c))
    }

    fn subcommand(&self, name: &str) -> Option<&CommandSpec> {
        self.subcommands.iter().find(|s| s.name == name)
    }
}

/// What to offer for `words`: the arguments after the program name, the
/// last one being the word under the cursor (empty for a new word), exactly
/// as kubectl passes them to `kubectl_complete-kfsched`.
pub fn complete(spec: &CommandSpec, words: &[String], sources: &dyn Sources) -> Completions {
    let (cur, done) = match words.split_last() {
        Some((c, d)) => (c.as_str(), d),
        None => ("", &[][..]),
    };
    let mut cmd = spec;
    let mut typed = Typed::default();
    let mut seen: Vec<String> = Vec::new();
    let mut pending: Option<&FlagSpec> = None;
    let mut dashdash = false;
    let mut positionals_here = 0usize;
    for w in done {
        if let Some(f) = pending.take() {
            typed.record(f, w);
            continue;
        }
        if !dashdash && w == "--" {
            dashdash = true;
            continue;
        }
        if !dashdash && w.starts_with("--") {
            let (name, inline) = match w[2..].split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (&w[2..], None),
            };
            if let Some(f) = cmd.long(name) {
                seen.push(f.id.clone());
                if let Some(v) = &f.value {
                    match inline {
                        Some(val) => typed.record(f, val),
                        None if !v.attached_only => pending = Some(f),
                        None => {}
                    }
                }
            }
            continue;
        }
        if !dashdash && w.starts_with('-') && w.len() > 1 {
            let chars: Vec<char> = w[1..].chars().collect();
            for (i, c) in chars.iter().enumerate() {
                let Some(f) = cmd.short(*c) else { continue };
                seen.push(f.id.clone());
                if let Some(v) = &f.value {
                    let rest: String = chars[i + 1..].iter().collect();
                    let rest = rest.strip_prefix('=').unwrap_or(&rest);
                    if !rest.is_empty() {
                        typed.record(f, rest);
                    } else if !v.attached_only {
                        pending = Some(f);
                    }
                    break;
                }
            }
            continue;
        }
        if positionals_here == 0 {
            if let Some(sub) = cmd.subcommand(w) {
                cmd = sub;
                continue;
            }
        }
        typed.positionals.push(w.clone());
        positionals_here += 1;
    }

    if let Some(f) = pending {
        let kind = f.value.as_ref().map_or(&ValueKind::Nothing, |v| &v.kind);
        return values(kind, cur, &typed, sources);
    }
    if !dashdash && cur.starts_with('-') {
        if let Some(rest) = cur.strip_prefix("--") {
            if let Some((name, val)) = rest.split_once('=') {
                // `--flag=val`: Cobra answers with bare values; the shells
                // keep the `--flag=` part.
                return match cmd.long(name).and_then(|f| f.value.as_ref()) {
                    Some(v) => values(&v.kind, val, &typed, sources),
                    None => Completions::new(directive::NO_FILE_COMP),
                };
            }
        }
        return flags(cmd, cur, &seen);
    }
    if positionals_here == 0 && !cmd.subcommands.is_empty() {
        let mut c = Completions::new(directive::NO_FILE_COMP);
        for s in &cmd.subcommands {
            if s.name.starts_with(cur) {
                c.push(&s.name, &s.about);
            }
        }
        return c;
    }
    let positional = cmd.positionals.get(positionals_here).or_else(|| {
        cmd.positionals
            .last()
            .filter(|p| p.multiple && positionals_here >= cmd.positionals.len())
    });
    match positional {
        Some(p) => values(&p.kind, cur, &typed, sources),
        None => Completions::new(directive::NO_FILE_COMP),
    }
}

fn flags(cmd: &CommandSpec, cur: &str, seen: &[String]) -> Completions {
    let mut c = Completions::new(directive::NO_FILE_COMP);
    for f in &cmd.flags {
        if !f.repeatable && seen.contains(&f.id) {
            continue;
        }
        if let Some(l) = &f.long {
            let name = format!("--{l}");
            if name.starts_with(cur) {
                c.push(name, &f.help);
            }
        }
        if let Some(s) = f.short {
            let name = format!("-{s}");
            if name.starts_with(cur) {
                c.push(name, &f.help);
            }
        }
    }
    c
}

/// Whether a `node taint` argument is a taint change rather than a node name.
fn looks_like_change(word: &str) -> bool {
    word.contains(':') || word.contains('=') || word.ends_with('-')
}

fn values(kind: &ValueKind, cur: &str, typed: &Typed, sources: &dyn Sources) -> Completions {
    let mut c = Completions::new(directive::NO_FILE_COMP);
    let keep = |v: &str| v.starts_with(cur);
    match kind {
        ValueKind::Choices(choices) => {
            for ch in choices.iter().filter(|ch| keep(&ch.value)) {
                c.push(&ch.value, &ch.help);
            }
        }
        ValueKind::YamlFiles => {
            c.directive = directive::FILTER_FILE_EXT;
            c.push("yaml", "");
            c.push("yml", "");
        }
        ValueKind::Files => c.directive = directive::DEFAULT,
        ValueKind::Contexts => {
            for ctx in sources.contexts(typed.kubeconfig.as_deref()) {
                if keep(&ctx) {
                    c.push(ctx, "");
                }
            }
        }
        ValueKind::Nodes => node_names(&mut c, cur, typed, sources),
        ValueKind::NodesOrTaints | ValueKind::NodesOrLabels => {
            let taints = *kind == ValueKind::NodesOrTaints;
            if !typed.positionals.iter().any(|w| looks_like_change(w)) && !looks_like_change(cur) {
                node_names(&mut c, cur, typed, sources);
            }
            if let Some(policy) = sources.policy(typed.policy.as_deref()) {
                for pool in &policy.pools {
                    let help = format!("pool {}", pool.name);
                    if taints {
                        for t in &pool.taints {
                            let v = match t.value.as_deref() {
                                Some(v) if !v.is_empty() => format!("{}={v}:{}", t.key, t.effect),
                                _ => format!("{}:{}", t.key, t.effect),
                            };
                            if keep(&v) {
                                c.push(v, &help);
                            }
                        }
                    } else {
                        for (k, v) in &pool.labels {
                            let v = format!("{k}={v}");
                            if keep(&v) {
                                c.push(v, &help);
                            }
                        }
                    }
                }
            }
        }
        ValueKind::PoolSelectors => {
            if let Some(policy) = sources.policy(typed.policy.as_deref()) {
                for pool in &policy.pools {
                    for (k, v) in &pool.labels {
                        let v = format!("{k}={v}");
                        if keep(&v) {
                            c.push(v, format!("pool {}", pool.name));
                        }
                    }
                }
            }
        }
        ValueKind::Rules => {
            if let Some(policy) = sources.policy(typed.policy.as_deref()) {
                for r in policy.rules.iter().filter(|r| keep(&r.name)) {
                    let help = r.pool.as_ref().map(|p| format!("pool {p}"));
                    c.push(&r.name, help.unwrap_or_default());
                }
            }
        }
        ValueKind::Pools => {
            if let Some(policy) = sources.policy(typed.policy.as_deref()) {
                for p in policy.pools.iter().filter(|p| keep(&p.name)) {
                    c.push(&p.name, "");
                }
            }
        }
        ValueKind::Nothing => {}
    }
    c
}

fn node_names(c: &mut Completions, cur: &str, typed: &Typed, sources: &dyn Sources) {
    for n in sources.nodes(
        typed.kubeconfig.as_deref(),
        typed.context.as_deref(),
        &typed.overrides,
    ) {
        if n.starts_with(cur) && !typed.positionals.contains(&n) {
            c.push(n, "");
        }
    }
}

/// The real sources: the policy as every command finds it, the kubeconfig
/// as kubectl reads it, and the cluster.
#[derive(Clone, Debug)]
pub struct Environment {
    /// Where `.kfsched.yaml` is searched from.
    pub cwd: PathBuf,
    /// `$KFSCHED_POLICY`.
    pub policy_env: Option<OsString>,
    /// `$KUBECONFIG`.
    pub kubeconfig_env: Option<OsString>,
    /// `$HOME` (for `~/.kube/config`).
    pub home: Option<PathBuf>,
    /// The most a node lookup may take (a TAB must not hang).
    pub timeout: Duration,
}

/// How long live lookups may take by default.
pub const LIVE_TIMEOUT: Duration = Duration::from_secs(3);

impl Environment {
    /// From the process environment.
    pub fn from_env() -> Self {
        Environment {
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            policy_env: std::env::var_os("KFSCHED_POLICY"),
            kubeconfig_env: std::env::var_os("KUBECONFIG"),
            home: std::env::var_os("HOME").map(PathBuf::from),
            timeout: LIVE_TIMEOUT,
        }
    }

    /// Where the typed connection flags and this environment say the
    /// kubeconfig is.
    fn client_options(
        &self,
        kubeconfig: Option<&Path>,
        context: Option<&str>,
        overrides: &Overrides,
    ) -> ClientOptions {
        ClientOptions {
            kubeconfig: kubeconfig.map(Path::to_path_buf),
            context: context.map(str::to_string),
            kubeconfig_env: self.kubeconfig_env.clone(),
            home: self.home.clone(),
            request_timeout: Some(self.timeout),
            overrides: overrides.clone(),
        }
    }
}

impl Sources for Environment {
    fn policy(&self, explicit: Option<&Path>) -> Option<Policy> {
        let path =
            kfsched::discover::policy_path(explicit, self.policy_env.clone(), &self.cwd).ok()?;
        Policy::load(&path).ok()
    }

    fn contexts(&self, kubeconfig: Option<&Path>) -> Vec<String> {
        client::context_names(&self.client_options(kubeconfig, None, &Overrides::default()))
    }

    fn nodes(
        &self,
        kubeconfig: Option<&Path>,
        context: Option<&str>,
        overrides: &Overrides,
    ) -> Vec<String> {
        let opts = self.client_options(kubeconfig, context, overrides);
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return Vec::new();
        };
        let names = runtime.block_on(kfsched::node::nodes::names(&opts, self.timeout));
        runtime.shutdown_background();
        names.unwrap_or_default()
    }
}

/// A shell `kubectl kfsched completion` writes a script for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// The completion script for `program` (`kubectl-kfsched`): it asks
/// `program __complete WORDS...` and hands the answer to the shell.
pub fn script(shell: Shell, program: &str) -> String {
    let func = format!("_{}", program.replace(['-', '.'], "_"));
    let template = match shell {
        Shell::Bash => BASH,
        Shell::Zsh => ZSH,
        Shell::Fish => FISH,
    };
    template
        .replace("@PROGRAM@", program)
        .replace("@FUNC@", &func)
}

const BASH: &str = include_str!("completion/kfsched.bash");

const ZSH: &str = include_str!("completion/kfsched.zsh");

const FISH: &str = include_str!("completion/kfsched.fish");

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake;

    impl Sources for Fake {
        fn policy(&self, _explicit: Option<&Path>) -> Option<Policy> {
            None
        }
        fn contexts(&self, _k: Option<&Path>) -> Vec<String> {
            vec!["dev".into(), "prod".into()]
        }
        fn nodes(&self, _k: Option<&Path>, _c: Option<&str>, o: &Overrides) -> Vec<String> {
            // The typed --server picks the cluster.
            if o.server.as_deref() == Some("https://other") {
                return vec!["other-1".into()];
            }
            vec!["worker-1".into(), "worker-2".into(), "gpu-1".into()]
        }
    }

    fn flag(id: &str, long: &str, short: Option<char>, value: Option<ValueKind>) -> FlagSpec {
        FlagSpec {
            id: id.into(),
            long: Some(long.into()),
            short,
            help: format!("{id} help"),
            value: value.map(|kind| ValueSpec {
                kind,
                attached_only: false,
            }),
            repeatable: false,
        }
    }

    fn spec() -> CommandSpec {
        let policy = flag("policy", "policy", Some('p'), Some(ValueKind::YamlFiles));
        let context = flag("context", "context", None, Some(ValueKind::Contexts));
        let server = flag("server", "server", Some('s'), Some(ValueKind::Nothing));
        let mut dry = flag(
            "dry_run",
            "dry-run",
            None,
            Some(ValueKind::Choices(vec![
                Choice {
                    value: "none".into(),
                    help: String::new(),
                },
                Choice {
                    value: "client".into(),
                    help: String::new(),
                },
            ])),
        );
        if let Some(v) = dry.value.as_mut() {
            v.attached_only = true;
        }
        CommandSpec {
            name: "kubectl-kfsched".into(),
            about: String::new(),
            flags: vec![policy.clone()],
            positionals: vec![],
            subcommands: vec![
                CommandSpec {
                    name: "rewrite".into(),
                    about: "Rewrite\nmore".into(),
                    flags: vec![policy.clone(), flag("check", "check", None, None)],
                    positionals: vec![PositionalSpec {
                        kind: ValueKind::YamlFiles,
                        multiple: true,
                    }],
                    subcommands: vec![],
                },
                CommandSpec {
                    name: "node".into(),
                    about: "Nodes".into(),
                    flags: vec![policy.clone(), context.clone()],
                    positionals: vec![],
                    subcommands: vec![CommandSpec {
                        name: "cordon".into(),
                        about: "Cordon".into(),
                        flags: vec![policy, context, server, dry],
                        positionals: vec![PositionalSpec {
                            kind: ValueKind::Nodes,
                            multiple: true,
                        }],
                        subcommands: vec![],
                    }],
                },
            ],
        }
    }

    fn run(words: &[&str]) -> Completions {
        let w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        complete(&spec(), &w, &Fake)
    }

    #[test]
    fn subcommands_then_flags_then_values() {
        assert_eq!(run(&[""]).values(), ["rewrite", "node"]);
        assert_eq!(run(&["re"]).values(), ["rewrite"]);
        assert_eq!(run(&["rewrite", "--"]).values(), ["--policy", "--check"]);
        assert_eq!(
            run(&["rewrite", "-"]).values(),
            ["--policy", "-p", "--check"]
        );
        let c = run(&["rewrite", "--check", "--"]);
        assert_eq!(
            c.values(),
            ["--policy"],
            "a given switch is not offered again"
        );
        let c = run(&["rewrite", "-p", ""]);
        assert_eq!(
            (c.values(), c.directive),
            (vec!["yaml", "yml"], directive::FILTER_FILE_EXT)
        );
        let c = run(&["rewrite", "a.yaml", ""]);
        assert_eq!(c.directive, directive::FILTER_FILE_EXT);
    }

    #[test]
    fn nested_commands_live_values_and_attached_flags() {
        assert_eq!(run(&["node", ""]).values(), ["cordon"]);
        assert_eq!(
            run(&["node", "cordon", "worker-1", "w"]).values(),
            ["worker-2"],
            "nodes already given are not offered again"
        );
        assert_eq!(
            run(&["node", "cordon", "-s", "https://other", ""]).values(),
            ["other-1"],
            "node names come from the cluster --server names"
        );
        assert_eq!(
            run(&["node", "cordon", "--context", "p"]).values(),
            ["prod"]
        );
        assert_eq!(run(&["node", "cordon", "--dry-run=c"]).values(), ["client"]);
        assert_eq!(
            run(&["node", "cordon", "--dry-run", "g"]).values(),
            ["gpu-1"],
            "--dry-run takes its value only after ="
        );
        assert_eq!(
            run(&["node", "cordon", "--", "-"]).values(),
            Vec::<&str>::new()
        );
    }

    /// The policy of the bundled example, for rule and pool names.
    struct Example;

    impl Sources for Example {
        fn policy(&self, _explicit: Option<&Path>) -> Option<Policy> {
            let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/.kfsched.yaml");
            Policy::load(&p).ok()
        }
        fn contexts(&self, _k: Option<&Path>) -> Vec<String> {
            Vec::new()
        }
        fn nodes(&self, _k: Option<&Path>, _c: Option<&str>, _o: &Overrides) -> Vec<String> {
            Vec::new()
        }
    }

    #[test]
    fn rule_and_pool_names_from_the_policy() {
        let arg = |kind| CommandSpec {
            name: "x".into(),
            positionals: vec![PositionalSpec {
                kind,
                multiple: false,
            }],
            ..CommandSpec::default()
        };
        let c = complete(&arg(ValueKind::Rules), &["".into()], &Example);
        assert_eq!(
            c.values(),
            ["training-on-experiment-nodes", "publish-not-on-spot"]
        );
        assert_eq!(c.candidates[0].help, "pool experiment");
        let c = complete(&arg(ValueKind::Rules), &["pub".into()], &Example);
        assert_eq!(c.values(), ["publish-not-on-spot"]);
        let c = complete(&arg(ValueKind::Pools), &["".into()], &Example);
        assert_eq!(c.values(), ["experiment"]);
        let c = complete(&arg(ValueKind::Pools), &["a".into(), "".into()], &Example);
        assert_eq!(c.values(), Vec::<&str>::new(), "one positional only");
    }

    #[test]
    fn cobra_output() {
        let mut out = Vec::new();
        run(&["r"]).write_cobra(&mut out, true).expect("write");
        assert_eq!(String::from_utf8_lossy(&out), "rewrite\tRewrite\n:4\n");
        let mut out = Vec::new();
        run(&["r"]).write_cobra(&mut out, false).expect("write");
        assert_eq!(String::from_utf8_lossy(&out), "rewrite\n:4\n");
    }
}
