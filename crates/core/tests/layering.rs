//! The core's modules follow the data flow — read → detect format →
//! components → match → merge → plan → edit → report — and a module only
//! imports modules of lower layers. This test reads the sources and fails
//! on an import against the table below, and on a module the table does not
//! place. Comments are not imports: doc links are ignored.

use std::collections::BTreeSet;
use std::path::Path;

/// Each module of `src/` and its layer; a module may import only modules
/// of strictly lower layers.
const LAYERS: &[(&str, u8)] = &[
    // Leaves: diagnostics, Kubernetes names and selectors, did-you-mean,
    // Helm template detection, unified diffs.
    ("diag", 0),
    ("suggest", 0),
    ("k8s", 0),
    ("helm", 0),
    ("diff", 0),
    // Read: finding the policy and the inputs. The scheduling model and
    // the glob matching that components and rules are judged with.
    ("discover", 1),
    ("scheduling", 1),
    ("matching", 1),
    // Detect the format, find the components and where their scheduling is.
    ("format", 2),
    // The policy the components are matched against.
    ("policy", 3),
    // Merge a rule into a component's scheduling.
    ("merge", 4),
    // What processing found, per document and component.
    ("outcome", 5),
    // Plan the edits (and the KFP v2 fast path that feeds planning).
    ("plan", 6),
    ("fastpath", 6),
    // One file through the flow.
    ("rewrite", 7),
    // Reports: explain, the KRM function's ResourceList, and the starter
    // policy `init` writes from the components found.
    ("explain", 8),
    ("krm", 8),
    ("starter", 8),
    // Placement: the pods the components become, judged as kube-scheduler
    // judges them (reads the rewrite's output under `-p`).
    ("check", 9),
    // The policy as admission policies for the API server (resolves rules
    // against pipeline files through the rewrite's reports).
    ("admission", 9),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// The source without `//` comments (doc comments included).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            // `//` inside a string literal (a URL) is rare in this crate
            // and would only hide an import, never invent one.
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a source file names through `crate::`, including
/// `use crate::{a, b::c}` groups.
fn imports(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level items of the group: split on commas outside nested braces.
            let mut depth = 0usize;
            let mut item = String::new();
            let mut items = Vec::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => items.push(std::mem::take(&mut item)),
                    _ => {}
                }
                if !(c == ',' && depth == 0) {
                    item.push(c);
                }
            }
            items.push(item);
            for item in items {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != "self" {
                    out.insert(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// Every `.rs` file under `dir` with the top-level module it belongs to.
fn sources(src: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).expect("under src");
            let first = rel.components().next().expect("a component");
            let module = first
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string();
            if module != "lib" {
                out.push((module, p));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = sources(&src);
    assert!(files.len() >= LAYERS.len(), "{} source files", files.len());
    let mut errors = Vec::new();
    for (module, path) in &files {
        let Some(own) = layer(module) else {
            errors.push(format!(
                "{}: module `{module}` has no layer: add it to LAYERS in {}",
                path.display(),
                file!()
            ));
            continue;
        };
        let text = std::fs::read_to_string(path).expect("read");
        for dep in imports(&code(&text)) {
            if dep == *module {
                continue;
            }
            match layer(&dep) {
                Some(l) if l < own => {}
                Some(l) => errors.push(format!(
                    "{}: `{module}` (layer {own}) imports `{dep}` (layer {l}); a module imports only lower layers",
                    path.display()
                )),
                None => errors.push(format!(
                    "{}: `{module}` imports `crate::{dep}`, which has no layer",
                    path.display()
                )),
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn every_layered_module_exists() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = sources(&src);
    for (m, _) in LAYERS {
        assert!(
            files.iter().any(|(f, _)| f == m),
            "LAYERS names `{m}`, which is not a module of src/"
        );
    }
}

#[test]
fn the_import_scanner_sees_groups_and_paths_and_skips_comments() {
    let text = "use crate::{plan::{a, b}, outcome};\nuse crate::merge;\n// crate::krm\n/// [`crate::rewrite`]\nlet x = crate::diag::Diagnostic::file;";
    let got: Vec<String> = imports(&code(text)).into_iter().collect();
    assert_eq!(got, ["diag", "merge", "outcome", "plan"]);
}

/// The offline core (and the YAML engine under it) builds without the
/// cluster side's runtime or the command line: no kube, tokio or clap
/// anywhere in its normal dependency tree.
#[test]
fn the_offline_core_depends_on_no_kube_tokio_or_clap() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for package in ["kfsched-core", "kfsched-yaml"] {
        let out = std::process::Command::new(env!("CARGO"))
            .current_dir(&root)
            .args([
                "tree",
                "--offline",
                "-p",
                package,
                "-e",
                "normal",
                "--prefix",
                "none",
                "--format",
                "{p}",
            ])
            .output()
            .expect("run cargo tree");
        assert!(
            out.status.success(),
            "cargo tree -p {package}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tree = String::from_utf8_lossy(&out.stdout);
        let crates: BTreeSet<&str> = tree
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert!(crates.contains(package), "{tree}");
        for banned in ["kube", "kube-client", "kube-runtime", "tokio", "clap"] {
            assert!(
                !crates.contains(banned),
                "{package} depends on {banned}:\n{tree}"
            );
        }
    }
}
