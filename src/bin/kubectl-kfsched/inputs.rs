//! The inputs of the commands that read pipelines: files, directories and
//! stdin as every command reads them, and for `explain` pods of the live
//! cluster (`pod/NAME`).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use kfsched::diag::Diagnostic;
use kfsched::discover::{self, Source};
use kfsched::rewrite::Input;

use crate::cli::ExplainArgs;
use crate::exit::Exit;
use crate::notices::{self, Given};
use crate::offline::print_diags;
use crate::report::{self, Category};

/// The inputs read, where each came from, and what the user passed.
pub(crate) struct Loaded {
    pub sources: Vec<Source>,
    pub inputs: Vec<Input>,
    pub given: Given,
}

impl Loaded {
    pub(crate) fn names(&self) -> Vec<String> {
        self.inputs.iter().map(|i| i.file.clone()).collect()
    }
}

/// Reads every input; unreadable ones are errors.
pub(crate) fn read_inputs(paths: &[PathBuf]) -> Result<Loaded, Exit> {
    let paths: Vec<PathBuf> = if paths.is_empty() {
        // No input named: stdin, unless it is a terminal, where reading
        // would wait silently for the user to notice (`-` still reads it).
        if std::io::stdin().is_terminal() {
            report::error(
                Category::Usage,
                "no input: give pipeline files or directories (or -f PATH), or pipe YAML into stdin; `-` reads the terminal",
            );
            return Err(Exit::Usage);
        }
        vec![PathBuf::from("-")]
    } else {
        paths.to_vec()
    };
    let expanded = discover::expand_args(&paths).map_err(|d| {
        print_diags(&d);
        Exit::Usage
    })?;
    let mut inputs = Vec::with_capacity(expanded.len());
    let mut errors = Vec::new();
    let mut stdin_used = false;
    for (s, _) in &expanded {
        match s {
            Source::Stdin => {
                if stdin_used {
                    errors.push(Diagnostic::file("-", "stdin (-) given more than once"));
                    continue;
                }
                stdin_used = true;
                let mut buf = Vec::new();
                if let Err(e) = std::io::stdin().read_to_end(&mut buf) {
                    errors.push(Diagnostic::file("<stdin>", format!("cannot read: {e}")));
                }
                inputs.push(Input {
                    file: s.name(),
                    bytes: buf,
                });
            }
            Source::File(p) => match std::fs::read(p) {
                Ok(b) => inputs.push(Input {
                    file: s.name(),
                    bytes: b,
                }),
                Err(e) => errors.push(Diagnostic::file(&s.name(), format!("cannot read: {e}"))),
            },
        }
    }
    if !errors.is_empty() {
        print_diags(&errors);
        return Err(Exit::Usage);
    }
    let given = notices::given(&paths, &expanded);
    Ok(Loaded {
        sources: expanded.into_iter().map(|(s, _)| s).collect(),
        inputs,
        given,
    })
}

/// `pod/NAME` (or `pods/NAME`) where no such file exists: a pod of the
/// live cluster.
fn live_pod(p: &Path) -> Option<String> {
    let s = p.to_str()?;
    let name = s.strip_prefix("pod/").or_else(|| s.strip_prefix("pods/"))?;
    (!name.is_empty() && !name.contains('/') && !p.exists()).then(|| name.to_string())
}

/// `explain`'s inputs: files, directories and stdin as every command reads
/// them, and pods of the live cluster (`pod/NAME`), read with the
/// connection flags and named `pod/NAME` in the report.
pub(crate) fn explain_inputs(a: &ExplainArgs, verbose: bool) -> Result<Loaded, Exit> {
    let all = a.inputs.all();
    let (live, files): (Vec<PathBuf>, Vec<PathBuf>) =
        all.into_iter().partition(|p| live_pod(p).is_some());
    if live.is_empty() {
        if a.connection.any() || a.namespace.is_some() {
            report::error(
                Category::Usage,
                "the connection flags and -n/--namespace are for pod/NAME inputs, and none was given",
            );
            return Err(Exit::Usage);
        }
        return read_inputs(&files);
    }
    let mut read = if files.is_empty() {
        Loaded {
            sources: Vec::new(),
            inputs: Vec::new(),
            given: notices::given(&[], &[]),
        }
    } else {
        read_inputs(&files)?
    };
    let names: Vec<String> = live.iter().filter_map(|p| live_pod(p)).collect();
    let namespace = a.namespace.as_deref();
    let wanted = &names;
    let pods = crate::live::run(&a.connection, verbose, |clients| async move {
        kfsched::node::check::pods(&clients, namespace, wanted).await
    })?;
    let first = read.given.args.len();
    for (i, (pod, name)) in pods.iter().zip(&names).enumerate() {
        read.given.args.push(live[i].clone());
        read.given.from.push(first + i);
        read.inputs.push(Input {
            file: format!("pod/{name}"),
            bytes: serde_json::to_vec_pretty(pod).unwrap_or_default(),
        });
    }
    Ok(read)
}
