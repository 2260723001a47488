//! Mistakes that do nothing, said out loud: a rule that selects no
//! component and a command-line input that holds no pipeline or workload
//! (the facts come from `kfsched::outcome`). They are warnings, or errors
//! under `--strict`; this module prints them, and says what the user passed
//! in words that count it the way they passed it ("2 files under
//! pipelines/").

use std::collections::HashMap;
use std::path::PathBuf;

use kfsched::discover::Source;
use kfsched::outcome::{self, FileOutcome};
use kfsched::policy::Policy;

use crate::report::{self, Category, Level};

/// What the user passed, and which of it each input came from.
#[derive(Clone, Debug, Default)]
pub struct Given {
    /// The command-line paths, in order (`-` for stdin).
    pub args: Vec<PathBuf>,
    /// Per input: the index in `args` it came from.
    pub from: Vec<usize>,
}

impl Given {
    fn is_dir(&self, arg: usize) -> bool {
        self.args[arg].as_os_str() != "-" && self.args[arg].is_dir()
    }

    fn name(&self, arg: usize) -> String {
        if self.args[arg].as_os_str() == "-" {
            "<stdin>".into()
        } else {
            self.args[arg].display().to_string()
        }
    }

    fn files_from(&self, arg: usize) -> usize {
        self.from.iter().filter(|&&a| a == arg).count()
    }

    /// The inputs as the user passed them: `a.yaml`, `2 files under
    /// pipelines/`, `3 inputs`, `3 files (a.yaml, 2 under more/)`.
    pub fn describe(&self) -> String {
        let n = self.from.len();
        let files = |n: usize| format!("{n} file{}", if n == 1 { "" } else { "s" });
        let dirs: Vec<usize> = (0..self.args.len()).filter(|&a| self.is_dir(a)).collect();
        match (self.args.len(), dirs.as_slice()) {
            (1, []) => self.name(0),
            (1, [d]) => format!("{} under {}", files(n), self.name(*d)),
            (_, []) => format!("{n} input{}", if n == 1 { "" } else { "s" }),
            _ => {
                let parts: Vec<String> = (0..self.args.len())
                    .map(|a| {
                        if self.is_dir(a) {
                            format!("{} under {}", self.files_from(a), self.name(a))
                        } else {
                            self.name(a)
                        }
                    })
                    .collect();
                format!("{} ({})", files(n), parts.join(", "))
            }
        }
    }
}

/// Builds [`Given`] from the command-line paths and the inputs they gave.
pub fn given(args: &[PathBuf], sources: &[(Source, usize)]) -> Given {
    Given {
        args: args.to_vec(),
        from: sources.iter().map(|(_, a)| *a).collect(),
    }
}

/// Prints every rule of `policy` that selected nothing and every input
/// that held nothing, as warnings, or as errors under `strict`. `names`
/// are the inputs' names, in input order (an input without an outcome,
/// which failed, is not judged). Returns how many were printed.
pub fn report(
    policy: Option<&Policy>,
    outcomes: &[FileOutcome],
    names: &[String],
    given: &Given,
    strict: bool,
) -> usize {
    let level = if strict { Level::Error } else { Level::Warning };
    let mut n = 0;
    if let Some(p) = policy {
        for d in outcome::unmatched_rules(p, outcomes) {
            report::diag(level, Category::Policy, &d);
            n += 1;
        }
    }
    let by_name: HashMap<&str, &FileOutcome> =
        outcomes.iter().map(|o| (o.file.as_str(), o)).collect();
    let mut per_arg: Vec<Vec<&FileOutcome>> = vec![Vec::new(); given.args.len()];
    for (name, &arg) in names.iter().zip(&given.from) {
        if let Some(o) = by_name.get(name.as_str()) {
            per_arg[arg].push(o);
        }
    }
    for (arg, mine) in per_arg.iter().enumerate() {
        if mine.len() < given.files_from(arg) {
            // Some of it failed, and said so.
            continue;
        }
        if let Some(d) = outcome::empty_input(&given.name(arg), mine, given.is_dir(arg)) {
            report::diag(level, Category::Input, &d);
            n += 1;
        }
    }
    n
}

/// The last line under `--strict` when something did nothing: what the
/// command did not do (`nothing was written`), or `None` for the commands
/// that print their report all the same.
pub fn strict_summary(n: usize, outcome: Option<&str>) {
    let problems = format!("{n} problem{} above", if n == 1 { "" } else { "s" });
    match outcome {
        Some(what) => report::error(
            Category::Input,
            format_args!("{what} (--strict: {problems})"),
        ),
        None => report::error(Category::Input, format_args!("--strict: {problems}")),
    }
}
