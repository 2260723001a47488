//! `audit`: the live cluster against the policy, read-only; a table, JSON,
//! or PolicyReports (`wgpolicyk8s.io/v1alpha2`) ready for `kubectl apply`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::{Value as Json, json};

use kfsched::admission;
use kfsched::node::audit::{self, Finding, Outcome, Subject};

use crate::connection::ConnectionArgs;
use crate::exit::Exit;
use crate::offline::load_policy;
use crate::report::{self, Category, Level};

pub const HELP: &str = "Examples:
  # Every pipeline pod, pool node and exported admission policy against the policy
  kubectl kfsched audit -p policy.yaml

  # One namespace, as PolicyReports for Policy Reporter and other dashboards
  kubectl kfsched audit -p policy.yaml -n team-a -o policyreport | kubectl apply -f -

Reads only. Pods are those Argo's workflow label marks (KFP v2, KFP v1 and Argo), listed in pages.

Exit codes: 0 nothing differs, 1 something does, 2 bad usage or invalid input, 3 cluster failure.";

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditOutput {
    Text,
    Json,
    Policyreport,
}

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// SchedulingPolicy file [default: $KFSCHED_POLICY, else the nearest .kfsched.yaml]
    #[arg(short = 'p', long = "policy", value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Only the pods of this namespace [default: every namespace]
    #[arg(short = 'n', long = "namespace", value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Output format: a table grouped by finding, JSON, or PolicyReports (wgpolicyk8s.io/v1alpha2)
    #[arg(short = 'o', long = "output", value_enum, default_value_t = AuditOutput::Text)]
    pub output: AuditOutput,
    /// The admission objects' name prefix, as given to export admission
    #[arg(
        long = "name-prefix",
        value_name = "PREFIX",
        default_value = "kfsched."
    )]
    pub name_prefix: String,
    /// List what passes too, not only what differs
    #[arg(long = "all")]
    pub all: bool,
    #[command(flatten)]
    pub verbose: crate::cli::VerboseFlag,
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

pub fn run(a: AuditArgs) -> Result<Exit, Box<dyn std::error::Error>> {
    let verbose = a.verbose.verbose;
    let policy = match load_policy(a.policy.clone(), verbose) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    if policy.name.is_empty() {
        report::error(
            Category::Policy,
            format_args!(
                "{}: the policy needs metadata.name: it names the admission objects and the nodes' records audit reads",
                policy.file
            ),
        );
        return Ok(Exit::Usage);
    }
    // What cannot be exported is not looked for on the cluster.
    let fresh = admission::export(
        &policy,
        &[],
        &admission::Options {
            name_prefix: a.name_prefix.clone(),
            ..Default::default()
        },
    )
    .unwrap_or_default();
    let namespace = a.namespace.clone();
    let prefix = a.name_prefix.clone();
    let policy_for_fetch = &policy;
    let fetched = match crate::live::run(&a.connection, verbose, |clients| async move {
        audit::fetch(&clients, policy_for_fetch, namespace.as_deref(), &prefix).await
    }) {
        Ok(f) => f,
        Err(e) => return Ok(e),
    };
    if verbose {
        report::message(
            Level::Info,
            Category::Cluster,
            format_args!(
                "read {} pipeline pods in {} pages, {} nodes of pools",
                fetched.pods_read,
                fetched.pod_pages,
                fetched.nodes.iter().filter(|p| !p.pools.is_empty()).count()
            ),
        );
    }
    let findings = audit::judge(&policy, &fetched, &fresh);
    let failed = findings.iter().any(|f| f.outcome == Outcome::Fail);
    let mut out = std::io::stdout().lock();
    match a.output {
        AuditOutput::Text => out.write_all(text(&findings, a.all).as_bytes())?,
        AuditOutput::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&json_report(&policy.name, &findings))?
        )?,
        AuditOutput::Policyreport => {
            for r in policy_reports(&policy.name, &findings) {
                writeln!(out, "---\n{}", serde_json::to_string_pretty(&r)?)?;
            }
        }
    }
    out.flush()?;
    Ok(if failed { Exit::Differences } else { Exit::Ok })
}

fn resource(f: &Finding) -> String {
    match (f.subject, &f.namespace) {
        (Subject::Pod, Some(ns)) => format!("pod/{}/{}", ns, f.name),
        (Subject::Pod, None) => format!("pod/{}", f.name),
        (Subject::Node, _) => format!("node/{}", f.name),
        (Subject::AdmissionPolicy, _) => format!("mutatingadmissionpolicy/{}", f.name),
    }
}

/// Grouped by outcome, fails first; passes only with `--all`, else counted.
fn text(findings: &[Finding], all: bool) -> String {
    let mut out = String::new();
    let mut counts: BTreeMap<Outcome, usize> = BTreeMap::new();
    for f in findings {
        *counts.entry(f.outcome).or_default() += 1;
    }
    for outcome in [Outcome::Fail, Outcome::Warn, Outcome::Pass] {
        let group: Vec<&Finding> = findings.iter().filter(|f| f.outcome == outcome).collect();
        if group.is_empty() || (outcome == Outcome::Pass && !all) {
            continue;
        }
        out.push_str(&format!(
            "{} ({}):\n",
            outcome.name().to_uppercase(),
            group.len()
        ));
        for f in group {
            let rules = if f.rules.is_empty() {
                String::new()
            } else {
                format!(" [{}]", f.rules.join(", "))
            };
            out.push_str(&format!("  {}{rules}: {}\n", resource(f), f.message));
        }
    }
    let n = |o: Outcome| counts.get(&o).copied().unwrap_or(0);
    out.push_str(&format!(
        "{} fail, {} warn, {} pass{}\n",
        n(Outcome::Fail),
        n(Outcome::Warn),
        n(Outcome::Pass),
        if all || n(Outcome::Pass) == 0 {
            ""
        } else {
            " (--all lists them)"
        }
    ));
    out
}

fn finding_json(f: &Finding) -> Json {
    json!({
        "kind": f.subject.kind(),
        "namespace": f.namespace,
        "name": f.name,
        "rules": f.rules,
        "result": f.outcome.name(),
        "message": f.message,
    })
}

fn json_report(policy: &str, findings: &[Finding]) -> Json {
    let count = |o: Outcome| findings.iter().filter(|f| f.outcome == o).count();
    json!({
        "policy": policy,
        "summary": {"fail": count(Outcome::Fail), "warn": count(Outcome::Warn), "pass": count(Outcome::Pass)},
        "findings": findings.iter().map(finding_json).collect::<Vec<_>>(),
    })
}

/// A PolicyReport per namespace for its pods, and a ClusterPolicyReport for
/// the nodes and the admission objects (wgpolicyk8s.io/v1alpha2, the
/// schema Kyverno and Policy Reporter read), named after the policy so a
/// new audit replaces the last one.
fn policy_reports(policy: &str, findings: &[Finding]) -> Vec<Json> {
    let mut by_ns: BTreeMap<Option<&str>, Vec<&Finding>> = BTreeMap::new();
    for f in findings {
        let ns = match f.subject {
            Subject::Pod => f.namespace.as_deref(),
            _ => None,
        };
        by_ns.entry(ns).or_default().push(f);
    }
    let now = unix_seconds();
    by_ns
        .into_iter()
        .map(|(ns, group)| {
            let results: Vec<Json> = group
                .iter()
                .map(|f| {
                    let mut res = json!({
                        "apiVersion": if f.subject == Subject::AdmissionPolicy { "admissionregistration.k8s.io/v1" } else { "v1" },
                        "kind": f.subject.kind(),
                        "name": f.name,
                    });
                    if let Some(n) = &f.namespace {
                        res["namespace"] = json!(n);
                    }
                    if let Some(u) = &f.uid {
                        res["uid"] = json!(u);
                    }
                    json!({
                        "source": "kfsched",
                        "policy": policy,
                        "rule": if f.rules.is_empty() { f.subject.kind().to_string() } else { f.rules.join(",") },
                        "result": f.outcome.name(),
                        "message": f.message,
                        "scored": true,
                        "timestamp": {"seconds": now, "nanos": 0},
                        "resources": [res],
                    })
                })
                .collect();
            let count = |o: Outcome| group.iter().filter(|f| f.outcome == o).count();
            let summary = json!({
                "pass": count(Outcome::Pass),
                "fail": count(Outcome::Fail),
                "warn": count(Outcome::Warn),
                "error": 0,
                "skip": 0,
            });
            let name = format!("kfsched-{policy}");
            match ns {
                Some(ns) => json!({
                    "apiVersion": "wgpolicyk8s.io/v1alpha2",
                    "kind": "PolicyReport",
                    "metadata": {"name": name, "namespace": ns, "labels": {"app.kubernetes.io/managed-by": "kfsched"}},
                    "scope": null,
                    "summary": summary,
                    "results": results,
                }),
                None => json!({
                    "apiVersion": "wgpolicyk8s.io/v1alpha2",
                    "kind": "ClusterPolicyReport",
                    "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "kfsched"}},
                    "summary": summary,
                    "results": results,
                }),
            }
        })
        .map(|mut r| {
            if let Some(m) = r.as_object_mut() {
                m.retain(|_, v| !v.is_null());
            }
            r
        })
        .collect()
}

/// Seconds since the epoch, for the results' timestamps.
fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
