//! `export admission`: the policy as MutatingAdmissionPolicies on stdout,
//! and on stderr what each rule reaches and how exactly.

use std::io::Write;

use kfsched::admission::{self, Exactness, FailurePolicy};

use crate::cli::{ApiVersionArg, ExportAdmissionArgs, ExportOutput, FailurePolicyArg};
use crate::exit::Exit;
use crate::inputs::read_inputs;
use crate::notices;
use crate::offline::{load_policy, print_diags};
use crate::report::{self, Category, Level};

type R = Result<Exit, Box<dyn std::error::Error>>;

pub fn admission(a: ExportAdmissionArgs) -> R {
    let policy = match load_policy(a.policy.policy.clone(), false) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    // Pipeline files are optional here: without any, stdin is not read.
    let paths = a.inputs.all();
    let read = if paths.is_empty() {
        None
    } else {
        match read_inputs(&paths) {
            Ok(read) => Some(read),
            Err(e) => return Ok(e),
        }
    };
    let inputs: &[kfsched::outcome::Input] = read.as_ref().map_or(&[], |r| &r.inputs);
    let opts = admission::Options {
        name_prefix: a.name_prefix,
        failure_policy: match a.failure_policy {
            FailurePolicyArg::Fail => FailurePolicy::Fail,
            FailurePolicyArg::Ignore => FailurePolicy::Ignore,
        },
        namespace_selector: a.namespace_selector,
        skip_rules: a.skip_rules,
        api_version: match a.api_version {
            ApiVersionArg::V1 => admission::ApiVersion::V1,
            ApiVersionArg::V1beta1 => admission::ApiVersion::V1beta1,
        },
    };
    let skipped = opts.skip_rules.clone();
    let export = match admission::export(&policy, inputs, &opts) {
        Ok(x) => x,
        Err(d) => {
            print_diags(&d);
            report::error(Category::Input, "nothing was exported");
            return Ok(Exit::Usage);
        }
    };
    let note = |msg: std::fmt::Arguments| report::message(Level::Info, Category::Policy, msg);
    for r in &export.rules {
        let reaches = r.reaches.join(", ");
        match &r.exactness {
            Exactness::Exact => {
                note(format_args!("rule {:?}: exact ({reaches})", r.name));
            }
            Exactness::Approximate(why) if !r.exact_pipelines.is_empty() => {
                // One short line however many files: the pipelines by name
                // only when few (or with -v).
                let of = if r.exact_pipelines.len() <= 3 || a.verbose.verbose {
                    r.exact_pipelines.join(", ")
                } else {
                    format!(
                        "{} pipelines ({} task{} selected; -v lists the pipelines)",
                        r.exact_pipelines.len(),
                        r.exact_tasks,
                        if r.exact_tasks == 1 { "" } else { "s" }
                    )
                };
                note(format_args!(
                    "rule {:?}: exact for the tasks of {of} ({reaches}); approximate for other pipelines: {}",
                    r.name,
                    why.join("; ")
                ));
            }
            Exactness::Approximate(why) => {
                note(format_args!(
                    "rule {:?}: approximate ({reaches}): {}",
                    r.name,
                    why.join("; ")
                ));
            }
        }
    }
    for s in &export.skipped_rules {
        note(format_args!("rule {s:?}: left out (--skip-rule)"));
    }
    for p in &export.pools {
        if let Some(why) = &p.left_out {
            note(format_args!(
                "pool {:?}: not in the node policy: {why}",
                p.name
            ));
        }
    }
    // With pipeline files, a rule that selects nothing in them and a named
    // input that holds no pipeline are said (errors with --strict), as
    // `rewrite` says them.
    let mut silent = 0;
    if let Some(read) = &read {
        let level = if a.strict.strict {
            Level::Error
        } else {
            Level::Warning
        };
        for d in kfsched::outcome::unmatched_rules(&policy, &export.outcomes) {
            let left_out = policy.rules.iter().any(|r| {
                let at = format!("spec.rules[{}]", r.index);
                skipped.contains(&r.name) && (d.path == at || d.path.starts_with(&format!("{at}.")))
            });
            if !left_out {
                report::diag(level, Category::Policy, &d);
                silent += 1;
            }
        }
        silent += notices::report(
            None,
            &export.outcomes,
            &read.names(),
            &read.given,
            a.strict.strict,
        );
    }
    if a.strict.strict && silent > 0 {
        notices::strict_summary(silent, Some("nothing was exported"));
        return Ok(Exit::Usage);
    }
    if export.objects.is_empty() {
        report::error(
            Category::Policy,
            "nothing to export: the policy has no rules to enforce and no pool with labels or taints",
        );
        return Ok(Exit::Usage);
    }
    let text = match a.output {
        ExportOutput::Yaml => admission::yaml(&export.objects),
        ExportOutput::Json => admission::json_list(&export.objects),
    };
    // kubectl apply (client-side) keeps the object in an annotation of at
    // most 256 KiB; the API server takes objects up to about 1.5 MiB.
    let biggest = export
        .objects
        .iter()
        .map(|o| serde_json::to_string(o).map_or(0, |s| s.len()))
        .max()
        .unwrap_or(0);
    if biggest > 256 * 1024 {
        note(format_args!(
            "note: an admission policy is {} KiB, more than kubectl apply's client-side record holds (256 KiB): apply it with `kubectl apply --server-side -f -`",
            biggest / 1024
        ));
    }
    if biggest > 1_500_000 {
        report::error(
            Category::Policy,
            format_args!(
                "an admission policy is {} KiB, more than the API server stores (1.5 MiB): split the policy, or leave rules out with --skip-rule",
                biggest / 1024
            ),
        );
        return Ok(Exit::Usage);
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(Exit::Ok)
}
