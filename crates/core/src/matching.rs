//! Which rules select which components, and why: a rule's `match` and
//! `exclude` selectors (globs per key) judged against what a component is
//! matched on. Every verdict carries its reason (which selector key failed
//! or excluded), so `explain` can say it; the reason's text is only built
//! when someone asks for it.

/// A glob with its source text.
#[derive(Clone, Debug)]
pub struct Glob {
    pub text: String,
    pattern: glob::Pattern,
    /// In `names`, `*` and `?` stop at `/`.
    path_like: bool,
}

impl Glob {
    pub fn new(text: &str, path_like: bool) -> Result<Glob, String> {
        glob::Pattern::new(text)
            .map(|pattern| Glob {
                text: text.to_string(),
                pattern,
                path_like,
            })
            .map_err(|e| format!("invalid glob {text:?}: {} (at position {})", e.msg, e.pos))
    }

    pub fn matches(&self, s: &str) -> bool {
        self.pattern.matches_with(
            s,
            glob::MatchOptions {
                case_sensitive: true,
                require_literal_separator: self.path_like,
                require_literal_leading_dot: false,
            },
        )
    }
}

/// Which of a KFP v2 run's pods a rule reaches (`match.podRoles`). Files
/// hold only executors (the task's own pod); drivers and importers exist
/// only as pods, so only admission reaches them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PodRole {
    Executor,
    Driver,
    Importer,
}

impl PodRole {
    pub const ALL: [PodRole; 3] = [PodRole::Executor, PodRole::Driver, PodRole::Importer];

    pub fn name(self) -> &'static str {
        match self {
            PodRole::Executor => "executor",
            PodRole::Driver => "driver",
            PodRole::Importer => "importer",
        }
    }

    pub fn parse(s: &str) -> Option<PodRole> {
        PodRole::ALL.into_iter().find(|r| r.name() == s)
    }
}

/// `match` or `exclude`: each present key must match (AND); any glob of a key may match (OR).
#[derive(Clone, Debug, Default)]
pub struct Selector {
    pub names: Option<Vec<Glob>>,
    pub images: Option<Vec<Glob>>,
    pub pipelines: Option<Vec<Glob>>,
    pub kinds: Option<Vec<Glob>>,
    /// `podRoles`; in `match`, absent means `[executor]`.
    pub pod_roles: Option<Vec<PodRole>>,
}

impl Selector {
    pub fn is_empty(&self) -> bool {
        self.names.is_none()
            && self.images.is_none()
            && self.pipelines.is_none()
            && self.kinds.is_none()
            && self.pod_roles.is_none()
    }

    /// Whether a pod of this role can be selected (in `match`: absent means executors only).
    pub fn reaches(&self, role: PodRole) -> bool {
        self.pod_roles
            .as_deref()
            .map_or(role == PodRole::Executor, |r| r.contains(&role))
    }
}

/// A key of `match` / `exclude`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Names,
    Images,
    Pipelines,
    Kinds,
    PodRoles,
}

impl Key {
    pub fn name(self) -> &'static str {
        match self {
            Key::Names => "names",
            Key::Images => "images",
            Key::Pipelines => "pipelines",
            Key::Kinds => "kinds",
            Key::PodRoles => "podRoles",
        }
    }

    fn globs(self, sel: &Selector) -> Option<&[Glob]> {
        match self {
            Key::Names => sel.names.as_deref(),
            Key::Images => sel.images.as_deref(),
            Key::Pipelines => sel.pipelines.as_deref(),
            Key::Kinds => sel.kinds.as_deref(),
            Key::PodRoles => None,
        }
    }

    /// Whether the selector has this key.
    fn present(self, sel: &Selector) -> bool {
        match self {
            Key::PodRoles => sel.pod_roles.is_some(),
            k => k.globs(sel).is_some(),
        }
    }
}

/// The glob keys, in the order a verdict names the first that fails.
const KEYS: [Key; 4] = [Key::Names, Key::Images, Key::Pipelines, Key::Kinds];

/// What a component is matched on.
#[derive(Clone, Copy)]
pub struct Subject<'c> {
    pub names: &'c [String],
    pub images: &'c [String],
    pub pipelines: &'c [String],
    pub kind: &'c str,
    /// The pod's role: a component of a file is an executor; a pipeline's
    /// pod says its own, or nothing (`None`: no rule selects it).
    pub role: Option<PodRole>,
}

impl Subject<'_> {
    fn any(&self, key: Key, f: impl Fn(&str) -> bool) -> bool {
        match key {
            Key::Names => self.names.iter().any(|n| f(n)),
            Key::Images => self.images.iter().any(|n| f(n)),
            Key::Pipelines => self.pipelines.iter().any(|n| f(n)),
            Key::Kinds => f(self.kind),
            Key::PodRoles => f(self.role.map_or("", PodRole::name)),
        }
    }

    fn values(&self, key: Key) -> Vec<&str> {
        match key {
            Key::Names => self.names.iter().map(String::as_str).collect(),
            Key::Images => self.images.iter().map(String::as_str).collect(),
            Key::Pipelines => self.pipelines.iter().map(String::as_str).collect(),
            Key::Kinds => vec![self.kind],
            Key::PodRoles => vec![self.role.map_or("", PodRole::name)],
        }
    }
}

/// A rule's verdict on one component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Selected,
    /// This `match` key matched nothing.
    Unmatched(Key),
    /// This `exclude` key (with every other present key) matched.
    Excluded(Key),
}

impl Verdict {
    pub fn selected(&self) -> bool {
        matches!(self, Verdict::Selected)
    }

    /// Why the rule with these selectors did not select the component, in words.
    pub fn reason(&self, matcher: &Selector, exclude: &Selector, s: Subject) -> Option<String> {
        match *self {
            Verdict::Selected => None,
            Verdict::Unmatched(Key::PodRoles) => Some(match s.role {
                Some(PodRole::Executor) => format!(
                    "match.podRoles [{}] does not reach executors, the only pods a file describes (drivers and importers are reached at admission: kubectl kfsched export admission)",
                    roles(matcher)
                ),
                Some(role) if matcher.pod_roles.is_none() => format!(
                    "the rule reaches executors only (no match.podRoles); `podRoles: [{}]` reaches {}s",
                    role.name(),
                    role.name()
                ),
                Some(role) => format!(
                    "match.podRoles [{}] does not reach {}s",
                    roles(matcher),
                    role.name()
                ),
                None => {
                    "the pod says no role (driver, executor or importer), so no rule selects it"
                        .into()
                }
            }),
            Verdict::Unmatched(key) => {
                let g = key.globs(matcher).unwrap_or(&[]);
                let values = s.values(key);
                let detail = if key == Key::Pipelines && values.is_empty() {
                    "a plain workload has no pipeline".to_string()
                } else {
                    let what = match key {
                        Key::Names => "names",
                        Key::Images => "images",
                        Key::Pipelines => "pipeline",
                        Key::Kinds => "kind",
                        Key::PodRoles => "role",
                    };
                    format!("{what}: {}", list(&values))
                };
                Some(format!(
                    "match.{} {} matches none ({detail})",
                    key.name(),
                    globs(g)
                ))
            }
            Verdict::Excluded(Key::PodRoles) => Some(format!(
                "exclude.podRoles [{}] excludes {}s",
                roles(exclude),
                s.role.unwrap_or(PodRole::Executor).name()
            )),
            Verdict::Excluded(key) => {
                let g = key.globs(exclude).unwrap_or(&[]);
                for v in s.values(key) {
                    if let Some(p) = g.iter().find(|p| p.matches(v)) {
                        return Some(format!("exclude.{} {:?} matches {v:?}", key.name(), p.text));
                    }
                }
                Some("excluded".into())
            }
        }
    }
}

fn list(v: &[&str]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    let shown: Vec<&str> = v.iter().take(8).copied().collect();
    let more = if v.len() > 8 {
        format!(", … {} more", v.len() - 8)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

fn roles(sel: &Selector) -> String {
    sel.pod_roles
        .iter()
        .flatten()
        .map(|r| format!("{:?}", r.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn globs(g: &[Glob]) -> String {
    let t: Vec<String> = g.iter().map(|g| format!("{:?}", g.text)).collect();
    format!("[{}]", t.join(", "))
}

/// The first present glob key of `sel` that matches nothing.
fn first_miss(sel: &Selector, s: &Subject) -> Option<Key> {
    KEYS.into_iter().find(|&k| {
        k.globs(sel)
            .is_some_and(|g| !s.any(k, |v| g.iter().any(|p| p.matches(v))))
    })
}

/// Whether every glob key of the selector matches the subject (vacuously
/// true without one); `podRoles` is not judged.
pub fn matches_globs(sel: &Selector, s: &Subject) -> bool {
    first_miss(sel, s).is_none()
}

/// Whether a rule with these selectors selects the subject, and if not,
/// why: its role first, then its globs.
pub fn judge(matcher: &Selector, exclude: &Selector, s: &Subject) -> Verdict {
    let Some(role) = s.role.filter(|&r| matcher.reaches(r)) else {
        return Verdict::Unmatched(Key::PodRoles);
    };
    if let Some(miss) = first_miss(matcher, s) {
        return Verdict::Unmatched(miss);
    }
    let roles_hit = exclude.pod_roles.as_ref().is_none_or(|r| r.contains(&role));
    if !exclude.is_empty() && roles_hit && first_miss(exclude, s).is_none() {
        let key = KEYS
            .into_iter()
            .chain([Key::PodRoles])
            .find(|&k| k.present(exclude))
            .unwrap_or(Key::Names);
        return Verdict::Excluded(key);
    }
    Verdict::Selected
}
