//! `init`: reads the user's pipelines and writes the starter policy that
//! `kfsched::starter` builds from their components, never over a file that
//! exists. A file that cannot be read as a pipeline is left out with a
//! warning rather than stopping the run: init explores, it rewrites nothing.

use std::io::Write;
use std::path::PathBuf;

use kfsched::discover::{self, POLICY_FILE};
use kfsched::policy::Policy;
use kfsched::rewrite;

use crate::cli::InitArgs;
use crate::exit::Exit;
use crate::inputs::read_inputs;
use crate::offline::print_diags;
use crate::report::{self, Category, Level};

type R = Result<Exit, Box<dyn std::error::Error>>;

pub fn run(a: InitArgs) -> R {
    let dest = a
        .policy
        .clone()
        .unwrap_or_else(|| PathBuf::from(POLICY_FILE));
    let to_stdout = dest.as_os_str() == "-";
    if !to_stdout && std::fs::symlink_metadata(&dest).is_ok() {
        report::error(
            Category::Usage,
            format_args!(
                "{} exists already; nothing was written (init never overwrites: edit that file, remove it, or write elsewhere with -p FILE)",
                dest.display()
            ),
        );
        return Ok(Exit::Usage);
    }
    let paths = if a.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        a.paths.clone()
    };
    let read = match read_inputs(&paths) {
        Ok(r) => r,
        Err(e) => return Ok(e),
    };
    let empty = Policy::empty("");
    let results = rewrite::process_all(
        &read.inputs,
        &empty,
        &rewrite::Options {
            details: true,
            report_errors: true,
            version_suffix: None,
        },
    );
    let mut outcomes = Vec::with_capacity(results.len());
    let mut skipped = Vec::new();
    for r in results {
        match r {
            Ok(o) => outcomes.push(o),
            Err(d) => skipped.extend(d),
        }
    }
    for d in &skipped {
        report::warning(
            Category::Input,
            format_args!("{d} (left out of the starter policy)"),
        );
    }
    for o in &outcomes {
        report::diags(Level::Warning, Category::Input, &o.warnings);
    }
    let names: Vec<String> = read.inputs.iter().map(|i| i.file.clone()).collect();
    crate::notices::report(None, &outcomes, &names, &read.given, false);
    let given = read.given.describe();
    let text = kfsched::starter::policy(&outcomes, &given);
    if to_stdout {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
        return Ok(Exit::Ok);
    }
    if let Err(e) = write_new(&dest, &text) {
        let already = e.kind() == std::io::ErrorKind::AlreadyExists;
        print_diags(&[kfsched::diag::Diagnostic::file(
            &dest.display().to_string(),
            if already {
                "exists already; nothing was written (init never overwrites)".to_string()
            } else {
                format!("cannot write: {e}")
            },
        )]);
        return Ok(Exit::Usage);
    }
    let n = kfsched::starter::components(&outcomes);
    report::message(
        Level::Info,
        Category::Policy,
        format_args!(
            "wrote {}: a starter policy with one node pool and one example rule, listing the {n} component{} of {given}; it changes nothing until you edit it (the file's header says how)",
            dest.display(),
            if n == 1 { "" } else { "s" },
        ),
    );
    // Where the other commands look, from here: if not at this file, say so.
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    match discover::find_policy(None, std::env::var_os("KFSCHED_POLICY"), &cwd) {
        Ok((found, _)) if same_file(&found, &dest) => {}
        Ok((found, origin)) => {
            report::message(
                Level::Info,
                Category::Policy,
                format_args!(
                    "note: the other commands read {} here ({origin}); pass them -p {}",
                    found.display(),
                    dest.display()
                ),
            );
        }
        Err(_) => {
            report::message(
                Level::Info,
                Category::Policy,
                format_args!(
                    "note: the other commands find no policy here; pass them -p {}",
                    dest.display()
                ),
            );
        }
    }
    Ok(Exit::Ok)
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Writes a new file; fails if one appeared since the check above.
fn write_new(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}
