//! The offline commands: rewrite, diff, explain, validate, fn. What they
//! say about mistakes that do nothing is in `notices`; `init` has its own
//! file.

use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use crate::exit::Exit;
use crate::report::{self, Category, Level};
use kfsched::diag::Diagnostic;
use kfsched::discover::{self, Source};
use kfsched::policy::Policy;
use kfsched::rewrite::{self, FileOutcome, Input};

use crate::cli::{Color, DiffArgs, ExplainArgs, FnArgs, Output, RewriteArgs, Versions};
use crate::inputs::{Loaded, read_inputs};
use crate::notices;

type R = Result<Exit, Box<dyn std::error::Error>>;

/// Errors in the inputs (pipelines, snapshots, ResourceLists).
pub(crate) fn print_diags(diags: &[Diagnostic]) {
    report::diags(Level::Error, Category::Input, diags);
}

/// Errors in the policy file.
pub(crate) fn print_policy_diags(diags: &[Diagnostic]) {
    report::diags(Level::Error, Category::Policy, diags);
}

/// The API server's warnings about the policy's content.
pub fn print_policy_warnings(policy: &Policy) {
    report::diags(Level::Warning, Category::Policy, &policy.warnings);
}

/// Finds and loads the policy, printing every problem and warning; with
/// `verbose`, which file it is and why that one.
pub(crate) fn load_policy(explicit: Option<PathBuf>, verbose: bool) -> Result<Policy, Exit> {
    find_policy_or_none(explicit, verbose, false)?.ok_or(Exit::Usage)
}

/// Finds and loads the policy as [`load_policy`] does; `Ok(None)` only
/// with `optional` when no policy is given or found (explain's listing).
fn find_policy_or_none(
    explicit: Option<PathBuf>,
    verbose: bool,
    optional: bool,
) -> Result<Option<Policy>, Exit> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let (path, origin) = match discover::find_policy(
        explicit.as_deref(),
        std::env::var_os("KFSCHED_POLICY"),
        &cwd,
    ) {
        Ok(p) => p,
        Err(_) if optional => return Ok(None),
        Err(msg) => {
            report::error(Category::Policy, msg);
            return Err(Exit::Usage);
        }
    };
    if verbose {
        report::message(
            Level::Info,
            Category::Policy,
            format_args!("policy: {} ({origin})", path.display()),
        );
    }
    let policy = Policy::load(&path).map_err(|e| {
        print_policy_diags(&e.0);
        Exit::Usage
    })?;
    print_policy_warnings(&policy);
    Ok(Some(policy))
}

/// How a run reads its inputs and what it says.
struct RunOpts<'a> {
    verbose: bool,
    /// `explain`: the before/after details, and files whose rules cannot be
    /// written are reported rather than stopping the run.
    details: bool,
    versions: &'a Versions,
    /// What the command leaves undone when an input has a problem
    /// (`nothing was written`), for the summary line.
    undone: &'a str,
    /// What the inputs are, in the user's terms (`2 files under pipelines/`).
    given: &'a str,
}

/// Runs the engine over all inputs; any error stops everything before a byte is written.
fn run_all(inputs: &[Input], policy: &Policy, o: &RunOpts) -> Result<Vec<FileOutcome>, Exit> {
    // `explain` (details) reports every file it can read, the ones whose
    // rules cannot be written included, and prints the errors first.
    let results = rewrite::process_all(
        inputs,
        policy,
        &rewrite::Options {
            details: o.details,
            report_errors: o.details,
            version_suffix: o.versions.version_suffix.clone(),
        },
    );
    let mut outcomes = Vec::with_capacity(results.len());
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(o) => {
                errors.extend(o.errors.iter().cloned());
                outcomes.push(o);
            }
            Err(d) => errors.extend(d),
        }
    }
    if !errors.is_empty() {
        print_diags(&errors);
    }
    if !errors.is_empty() && !o.details {
        report::error(
            Category::Input,
            format_args!(
                "{} ({} problem{} in {})",
                o.undone,
                errors.len(),
                if errors.len() == 1 { "" } else { "s" },
                o.given
            ),
        );
        return Err(Exit::Usage);
    }
    for out in &outcomes {
        report::diags(Level::Warning, Category::Input, &out.warnings);
        if o.verbose && !out.is_pipeline() {
            let why = out
                .docs
                .iter()
                .filter_map(|d| d.skipped_because.clone())
                .next()
                .unwrap_or_else(|| "no pipeline".into());
            report::message(
                Level::Info,
                Category::Input,
                format_args!("skipped: {}: {why}", out.file),
            );
        } else if o.verbose {
            // Documents skipped inside a file that has pipelines.
            for d in &out.docs {
                if let Some(why) = &d.skipped_because {
                    report::message(
                        Level::Info,
                        Category::Input,
                        format_args!("skipped: {}: document {}: {why}", out.file, d.index + 1),
                    );
                }
            }
        }
    }
    Ok(outcomes)
}

/// Writes the rewritten file (or the input, unchanged) to `out`, the
/// input's unchanged text straight from `input` between the edits.
fn write_output(o: &FileOutcome, input: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    match &o.output {
        Some(patch) => patch.write(input, &mut out)?,
        None => out.write_all(input)?,
    }
    out.flush()
}

/// The mistakes that do nothing, as warnings (errors under `strict`).
/// Returns how many there were under `strict`, else 0.
fn no_ops(policy: Option<&Policy>, outcomes: &[FileOutcome], read: &Loaded, strict: bool) -> usize {
    let n = notices::report(policy, outcomes, &read.names(), &read.given, strict);
    if strict { n } else { 0 }
}

fn use_color(c: Color) -> bool {
    match c {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}

pub fn rewrite(a: RewriteArgs) -> R {
    let verbose = a.verbose.verbose;
    let policy = match load_policy(a.policy.policy.clone(), verbose) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    let read = match read_inputs(&a.inputs.all()) {
        Ok(x) => x,
        Err(e) => return Ok(e),
    };
    let Loaded {
        sources, inputs, ..
    } = &read;
    if a.in_place && sources.contains(&Source::Stdin) {
        report::error(
            Category::Usage,
            "--in-place cannot write back to stdin; give file or directory paths",
        );
        return Ok(Exit::Usage);
    }
    if a.in_place && a.check {
        report::error(
            Category::Usage,
            "--in-place and --check exclude each other: --check writes nothing",
        );
        return Ok(Exit::Usage);
    }
    let to_stdout = !a.in_place && !a.check && !a.diff;
    let given = read.given.describe();
    if to_stdout && a.output != Output::Text {
        report::error(
            Category::Usage,
            "-o reports what --in-place, --check or --diff did; add one of them (without them the rewritten file itself is the output)",
        );
        return Ok(Exit::Usage);
    }
    if to_stdout && inputs.len() != 1 {
        report::error(
            Category::Usage,
            format_args!(
                "{given}, and without -i/--in-place, --check or --diff only one input can be written (to stdout)"
            ),
        );
        return Ok(Exit::Usage);
    }
    let undone = if a.check || (a.diff && !a.in_place) {
        "nothing was checked"
    } else {
        "nothing was written"
    };
    let opts = RunOpts {
        verbose,
        details: false,
        versions: &a.versions,
        undone,
        given: &given,
    };
    let outcomes = match run_all(inputs, &policy, &opts) {
        Ok(o) => o,
        Err(e) => return Ok(e),
    };
    let strict = no_ops(Some(&policy), &outcomes, &read, a.strict.strict);
    if strict > 0 {
        notices::strict_summary(strict, Some(undone));
        return Ok(Exit::Usage);
    }
    let mut stdout = std::io::stdout().lock();
    if to_stdout {
        write_output(&outcomes[0], &inputs[0].bytes, &mut stdout)?;
        // The process exits next: freeing these piecemeal would only cost time.
        std::mem::forget(outcomes);
        std::mem::forget(read);
        return Ok(Exit::Ok);
    }
    // -o json|yaml: one report of every file on stdout instead of the diffs.
    let report_files = a.output != Output::Text;
    let color = use_color(a.color) && !report_files;
    let mut changed = 0usize;
    let mut files = Vec::new();
    for (o, input) in outcomes.iter().zip(inputs) {
        let Some(text) = o.text(&input.bytes) else {
            files.push(serde_json::json!({"file": o.file, "changed": false, "diff": null}));
            continue;
        };
        changed += 1;
        if report_files {
            let old = String::from_utf8_lossy(&input.bytes);
            let diff = kfsched::diff::unified(&old, &text, &o.file, false);
            files.push(serde_json::json!({"file": o.file, "changed": true, "diff": diff}));
        } else if a.diff {
            let old = String::from_utf8_lossy(&input.bytes);
            stdout.write_all(kfsched::diff::unified(&old, &text, &o.file, color).as_bytes())?;
        } else if a.check {
            report::message(
                Level::Info,
                Category::Input,
                format_args!("would rewrite {}", o.file),
            );
        }
    }
    if a.in_place {
        // Validate every target before writing any.
        for (o, src) in outcomes.iter().zip(sources) {
            if let (Some(_), Source::File(p)) = (&o.output, src) {
                if let Ok(m) = std::fs::metadata(p) {
                    if m.permissions().readonly() {
                        report::error(
                            Category::Input,
                            format_args!(
                                "{}: the file is read-only; nothing was written (make it writable or leave out --in-place)",
                                o.file
                            ),
                        );
                        return Ok(Exit::Usage);
                    }
                }
            }
        }
        for ((o, src), input) in outcomes.iter().zip(sources).zip(inputs) {
            if let (Some(patch), Source::File(p)) = (&o.output, src) {
                if let Err(e) = discover::write_atomic_with(p, |w| patch.write(&input.bytes, w)) {
                    report::error(
                        Category::Input,
                        format_args!("{}: cannot write: {e}", o.file),
                    );
                    return Ok(Exit::Usage);
                }
                if verbose {
                    report::message(
                        Level::Info,
                        Category::Input,
                        format_args!("rewrote {}", o.file),
                    );
                }
            }
        }
        if !a.quiet {
            report::message(
                Level::Info,
                Category::Input,
                summary(changed, outcomes.len() - changed),
            );
        }
    }
    if report_files {
        let j = serde_json::json!({ "files": files });
        match a.output {
            Output::Yaml => stdout.write_all(kfsched::explain::yaml(&j).as_bytes())?,
            _ => writeln!(stdout, "{}", serde_json::to_string_pretty(&j)?)?,
        }
    }
    stdout.flush()?;
    Ok(if a.check && changed > 0 {
        Exit::Differences
    } else {
        Exit::Ok
    })
}

/// `rewrite -i`'s last line: `1 file rewritten, 2 files left unchanged`.
fn summary(rewritten: usize, unchanged: usize) -> String {
    let files = |n: usize| format!("{n} file{}", if n == 1 { "" } else { "s" });
    format!(
        "{} rewritten, {} left unchanged",
        files(rewritten),
        files(unchanged)
    )
}

pub fn diff(a: DiffArgs) -> R {
    let verbose = a.verbose.verbose;
    let policy = match load_policy(a.policy.policy.clone(), verbose) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    let read = match read_inputs(&a.inputs.all()) {
        Ok(x) => x,
        Err(e) => return Ok(e),
    };
    let given = read.given.describe();
    let opts = RunOpts {
        verbose,
        details: false,
        versions: &a.versions,
        undone: "no diff was made",
        given: &given,
    };
    let outcomes = match run_all(&read.inputs, &policy, &opts) {
        Ok(o) => o,
        Err(e) => return Ok(e),
    };
    let strict = no_ops(Some(&policy), &outcomes, &read, a.strict.strict);
    if strict > 0 {
        notices::strict_summary(strict, Some("no diff was made"));
        return Ok(Exit::Usage);
    }
    let color = use_color(a.color);
    let mut stdout = std::io::stdout().lock();
    let mut any = false;
    for (o, input) in outcomes.iter().zip(&read.inputs) {
        if let Some(text) = o.text(&input.bytes) {
            any = true;
            let old = String::from_utf8_lossy(&input.bytes);
            stdout.write_all(kfsched::diff::unified(&old, &text, &o.file, color).as_bytes())?;
        }
    }
    stdout.flush()?;
    Ok(if any { Exit::Differences } else { Exit::Ok })
}

pub fn explain(a: ExplainArgs) -> R {
    let verbose = a.verbose.verbose;
    let policy = match find_policy_or_none(a.policy.clone(), verbose, true) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    let listing = policy.is_none();
    let mut policy = match policy {
        Some(p) => p,
        None if !a.rules.is_empty() => {
            report::error(
                Category::Usage,
                "--rule needs a policy: pass -p/--policy FILE, set $KFSCHED_POLICY, or put a .kfsched.yaml here or above",
            );
            return Ok(Exit::Usage);
        }
        None => {
            report::message(
                Level::Info,
                Category::Policy,
                "note: no policy (no -p, $KFSCHED_POLICY or .kfsched.yaml here or above): listing every component with the names a rule can match; `kubectl kfsched init` writes a starter policy from them",
            );
            Policy::empty("")
        }
    };
    if !a.rules.is_empty() {
        for want in &a.rules {
            if !policy.rules.iter().any(|r| &r.name == want) {
                let hint =
                    kfsched::suggest::nearest(want, policy.rules.iter().map(|r| r.name.as_str()))
                        .map(|n| format!("; did you mean {n:?}?"))
                        .unwrap_or_default();
                report::error(
                    Category::Usage,
                    format_args!(
                        "--rule {want:?}: {} has no rule of that name{hint} (its rules: {})",
                        policy.file,
                        policy
                            .rules
                            .iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                return Ok(Exit::Usage);
            }
        }
        policy.rules.retain(|r| a.rules.contains(&r.name));
    }
    let read = match crate::inputs::explain_inputs(&a, verbose) {
        Ok(x) => x,
        Err(e) => return Ok(e),
    };
    let given = read.given.describe();
    let opts = RunOpts {
        verbose,
        details: true,
        versions: &a.versions,
        undone: "",
        given: &given,
    };
    let outcomes = match run_all(&read.inputs, &policy, &opts) {
        Ok(o) => o,
        Err(e) => return Ok(e),
    };
    // Files that could not be read or whose rules cannot be written: their
    // errors are printed; the rest is still explained, and the exit is 2.
    let failed =
        outcomes.len() < read.inputs.len() || outcomes.iter().any(|o| !o.errors.is_empty());
    let strict = no_ops(
        (!listing).then_some(&policy),
        &outcomes,
        &read,
        a.strict.strict,
    );
    let mut stdout = std::io::stdout().lock();
    match a.output {
        Output::Text if listing => {
            stdout.write_all(kfsched::explain::components(&outcomes, verbose).as_bytes())?
        }
        Output::Text => {
            stdout.write_all(kfsched::explain::text(&policy, &outcomes, verbose).as_bytes())?
        }
        Output::Json => {
            let j = kfsched::explain::json(&policy, &outcomes);
            writeln!(stdout, "{}", serde_json::to_string_pretty(&j)?)?;
        }
        Output::Yaml => {
            let j = kfsched::explain::json(&policy, &outcomes);
            stdout.write_all(kfsched::explain::yaml(&j).as_bytes())?;
        }
    }
    stdout.flush()?;
    if strict > 0 {
        notices::strict_summary(strict, None);
    }
    Ok(if failed || strict > 0 {
        Exit::Usage
    } else {
        Exit::Ok
    })
}

pub fn validate(policy: Option<PathBuf>, verbose: bool, output: Output) -> R {
    let p = match load_policy(policy, verbose) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    report::diags(Level::Warning, Category::Policy, &p.advice);
    if output != Output::Text {
        let j = serde_json::json!({
            "file": p.file,
            "name": p.name,
            "rules": p.rules.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            "pools": p.pools.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        });
        let mut stdout = std::io::stdout().lock();
        match output {
            Output::Yaml => stdout.write_all(kfsched::explain::yaml(&j).as_bytes())?,
            _ => writeln!(stdout, "{}", serde_json::to_string_pretty(&j)?)?,
        }
        stdout.flush()?;
        return Ok(Exit::Ok);
    }
    println!(
        "{}: valid SchedulingPolicy {:?}: {} rule{}, {} node pool{}",
        p.file,
        p.name,
        p.rules.len(),
        if p.rules.len() == 1 { "" } else { "s" },
        p.pools.len(),
        if p.pools.len() == 1 { "" } else { "s" }
    );
    Ok(Exit::Ok)
}

/// Detects the KRM entry points that carry no subcommand: the legacy
/// kustomize exec plugin (the binary installed as `.../SchedulingPolicy`,
/// called with the config file as its only argument) and kustomize < 5.7's
/// exec functions (no arguments, a ResourceList on stdin). Returns the exit
/// code when one applied.
pub fn krm_entry(args: &[OsString]) -> Result<Option<Exit>, Box<dyn std::error::Error>> {
    let argv0 = args
        .first()
        .map(|a| {
            Path::new(a)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    if argv0 == "SchedulingPolicy" {
        let Some(config) = args.get(1) else {
            report::error(
                Category::Usage,
                "the kustomize exec plugin needs the plugin config file as its argument",
            );
            return Ok(Some(Exit::Usage));
        };
        return legacy_plugin(Path::new(config), &Versions::default()).map(Some);
    }
    if args.len() == 1 && !std::io::stdin().is_terminal() {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf)?;
        let list = kfsched::krm::ResourceList::read(&buf);
        if list.is_resource_list() {
            return krm_run(&list, None, &[], &Versions::default(), false).map(Some);
        }
        report::error(
            Category::Usage,
            "no command given (stdin is not a KRM ResourceList); run `kubectl kfsched --help`",
        );
        return Ok(Some(Exit::Usage));
    }
    Ok(None)
}

/// The legacy exec-plugin protocol: the policy from a file, a plain YAML
/// stream on stdin, the rewritten stream on stdout.
fn legacy_plugin(config: &Path, versions: &Versions) -> R {
    let policy = match Policy::load(config) {
        Ok(p) => p,
        Err(e) => {
            print_policy_diags(&e.0);
            return Ok(Exit::Usage);
        }
    };
    print_policy_warnings(&policy);
    let mut buf = Vec::new();
    std::io::stdin().read_to_end(&mut buf)?;
    let input = [Input {
        file: "<stdin>".into(),
        bytes: buf,
    }];
    let opts = RunOpts {
        verbose: false,
        details: false,
        versions,
        undone: "nothing was written",
        given: "<stdin>",
    };
    let outcomes = match run_all(&input, &policy, &opts) {
        Ok(o) => o,
        Err(e) => return Ok(e),
    };
    write_output(&outcomes[0], &input[0].bytes, &mut std::io::stdout().lock())?;
    Ok(Exit::Ok)
}

fn krm_run(
    list: &kfsched::krm::ResourceList,
    fallback: Option<&Policy>,
    found: &[PathBuf],
    versions: &Versions,
    strict: bool,
) -> R {
    let opts = kfsched::rewrite::Options {
        version_suffix: versions.version_suffix.clone(),
        ..Default::default()
    };
    let files = policy_files(list, fallback, found);
    let cx = kfsched::krm::Context {
        strict,
        policy_files: &files,
    };
    match list.run(fallback, &opts, cx) {
        Ok(o) => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(o.output.as_bytes())?;
            stdout.flush()?;
            if o.failed {
                for e in &o.errors {
                    report::error(Category::Input, e);
                }
                report::error(
                    Category::Input,
                    "the function wrote error results into the ResourceList; nothing was rewritten",
                );
                Ok(Exit::Differences)
            } else {
                Ok(Exit::Ok)
            }
        }
        Err(e) => {
            print_diags(&e.0);
            Ok(Exit::Usage)
        }
    }
}

/// The files the ResourceList's functionConfig may have been read from,
/// so that messages point into the user's file: the one kpt's annotations
/// name, the functions of the kustomization in the current directory (where
/// kustomize runs exec functions), and the policy found as every command
/// finds it. Unreadable ones are left out; the library uses a file only
/// when it holds exactly the functionConfig.
fn policy_files(
    list: &kfsched::krm::ResourceList,
    fallback: Option<&Policy>,
    found: &[PathBuf],
) -> Vec<Input> {
    let mut paths: Vec<PathBuf> = list.config_paths();
    // Named in full: kustomize may have been run from anywhere.
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    for name in ["kustomization.yaml", "kustomization.yml", "Kustomization"] {
        if let Ok(k) = std::fs::read_to_string(name) {
            paths.extend(
                kfsched::krm::kustomization_configs(&k)
                    .into_iter()
                    .map(|f| cwd.join(f)),
            );
            break;
        }
    }
    if let Some(p) = fallback {
        paths.push(PathBuf::from(&p.file));
    }
    paths.extend(found.iter().cloned());
    let mut seen = Vec::new();
    paths
        .into_iter()
        .filter(|p| {
            let key = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            let new = !seen.contains(&key);
            seen.push(key);
            new
        })
        .filter_map(|p| {
            std::fs::read(&p).ok().map(|bytes| Input {
                file: p.display().to_string(),
                bytes,
            })
        })
        .collect()
}

pub fn krm(a: FnArgs) -> R {
    if let Some(config) = a.config {
        return legacy_plugin(&config, &a.versions);
    }
    // A policy from -p, $KFSCHED_POLICY or .kfsched.yaml is only a fallback
    // for a ResourceList without a SchedulingPolicy functionConfig; with
    // one, the file found is only where its messages may point.
    let mut buf = Vec::new();
    std::io::stdin().read_to_end(&mut buf)?;
    let policy = a.policy;
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let found = discover::policy_path(policy.as_deref(), std::env::var_os("KFSCHED_POLICY"), &cwd)
        .ok()
        .filter(|p| policy.is_some() || p.exists());
    let list = kfsched::krm::ResourceList::read(&buf);
    let mut candidates = Vec::new();
    let fallback = match found {
        Some(p) if list.has_policy() => {
            candidates.push(p);
            None
        }
        Some(p) => match Policy::load(&p) {
            Ok(p) => Some(p),
            Err(e) => {
                print_policy_diags(&e.0);
                return Ok(Exit::Usage);
            }
        },
        None => None,
    };
    krm_run(&list, fallback.as_ref(), &candidates, &a.versions, a.strict)
}
