//! `audit`: what the cluster did with a policy, read-only. Every pod a
//! workflow made (listed in pages, by Argo's workflow label) is read as the
//! exported admission policy reads it and judged against what its rules
//! ask; every node of a pool against the pool (what `node diff` sees); the
//! exported admission policies on the cluster against what `export
//! admission` writes for the policy now. The judging is pure
//! ([`judge`]); [`fetch`] reads the cluster.

use std::collections::BTreeMap;

use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams};
use serde_json::{Value as Json, json};

use kfsched_core::admission;
use kfsched_core::format::pipeline_pod::{self, WORKFLOW_LABEL};
use kfsched_core::matching::Subject as RuleSubject;
use kfsched_core::outcome::{Input, Options};
use kfsched_core::policy::Policy;
use kfsched_core::rewrite::process_all;

use super::Error;
use super::client::Clients;
use super::listed::{self, Body};
use super::pools::{self, NodePlan, PoolOptions};

/// Items per list request.
const PAGE: u32 = 500;

/// What one finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subject {
    Pod,
    Node,
    AdmissionPolicy,
}

impl Subject {
    pub fn kind(self) -> &'static str {
        match self {
            Subject::Pod => "Pod",
            Subject::Node => "Node",
            Subject::AdmissionPolicy => "MutatingAdmissionPolicy",
        }
    }
}

/// A finding's result, as PolicyReports name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Fail,
    Warn,
    Pass,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Fail => "fail",
            Outcome::Warn => "warn",
            Outcome::Pass => "pass",
        }
    }
}

/// One thing audit found.
#[derive(Clone, Debug)]
pub struct Finding {
    pub subject: Subject,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: Option<String>,
    /// The rules (or pools) it is about; empty for the admission objects.
    pub rules: Vec<String>,
    pub outcome: Outcome,
    pub message: String,
}

/// What audit reads from the cluster.
pub struct Fetched {
    /// The findings about pods, judged page by page as the pods are listed
    /// (a page is dropped once judged: memory stays that of one page).
    pub pod_findings: Vec<Finding>,
    /// How many pipeline pods were read, and in how many list requests.
    pub pods_read: usize,
    pub pod_pages: usize,
    pub nodes: Vec<NodePlan>,
    /// The pod and node policies named as `export admission` names them,
    /// with their bindings; `None` where absent.
    pub pod_policy: Option<Json>,
    pub node_policy: Option<Json>,
    pub pod_binding: Option<Json>,
    pub node_binding: Option<Json>,
    /// Why the admission objects could not be read (the API not served).
    pub admission_unreadable: Option<String>,
    /// The names `export admission` gives the pod and node policies.
    pub names: [String; 2],
}

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "admissionregistration.k8s.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Reads the pods of every workflow (in `namespace`, else all), the
/// policy's pool nodes and its admission objects.
pub async fn fetch(
    clients: &Clients,
    policy: &Policy,
    namespace: Option<&str>,
    name_prefix: &str,
) -> Result<Fetched, Error> {
    // The pools' nodes first, planned page by page (only the plans are
    // kept): where a pod landed is judged against them.
    let mut nodes = Vec::new();
    if !policy.pools.is_empty() {
        pools::require_name(policy)?;
        let opts = PoolOptions::default();
        crate::edit::for_each_node_page(clients, None, |page| {
            nodes.extend(pools::plan_all(policy, &page, &opts)?);
            Ok(())
        })
        .await?;
        nodes.sort_by(|a, b| a.node.cmp(&b.node));
    }
    let node_pools: BTreeMap<String, Vec<String>> = nodes
        .iter()
        .map(|p| (p.node.clone(), p.pools.clone()))
        .collect();
    let mut pod_findings = Vec::new();
    let mut pods_read = 0;
    let mut pod_pages = 0;
    // Pages in protobuf (see `listed`): each pod is read as admission reads
    // it, and only the fields audit reads are kept.
    let path = match namespace {
        Some(ns) => format!("/api/v1/namespaces/{ns}/pods"),
        None => "/api/v1/pods".to_string(),
    };
    // The next page is asked for as soon as its continue token is known,
    // and read while this one is judged on a blocking thread: the server
    // encodes and the client judges at the same time. At most two pages
    // are held.
    let shared = std::sync::Arc::new((policy.clone(), node_pools));
    let list = |token: Option<String>| {
        let mut lp = ListParams::default().limit(PAGE).labels(WORKFLOW_LABEL);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        tokio::spawn(listed::page(
            clients.main.clone(),
            path.clone(),
            lp,
            listed::ACCEPT,
        ))
    };
    let mut pending = Some(list(None));
    let mut judging: Option<tokio::task::JoinHandle<Judged>> = None;
    while let Some(request) = pending.take() {
        let page = request
            .await
            .map_err(|e| Error::Malformed(format!("the pod listing stopped: {e}")))??;
        pod_pages += 1;
        if let Some(t) = page.token.clone() {
            pending = Some(list(Some(t)));
        }
        if let Some(j) = judging.take() {
            let (n, found) = judged(j).await?;
            pods_read += n;
            pod_findings.extend(found);
        }
        // The page is read, judged and dropped on one thread.
        let shared = shared.clone();
        judging = Some(tokio::task::spawn_blocking(move || {
            let (n, selected) = selected(&page.body, &shared.0)?;
            Ok((n, pods(&shared.0, selected, &shared.1)))
        }));
    }
    if let Some(j) = judging {
        let (n, found) = judged(j).await?;
        pods_read += n;
        pod_findings.extend(found);
    }
    let name = format!("{name_prefix}{}", policy.name);
    let node_name = format!("{name}.nodes");
    let policies: Api<DynamicObject> = Api::all_with(
        clients.main.clone(),
        &resource("MutatingAdmissionPolicy", "mutatingadmissionpolicies"),
    );
    let bindings: Api<DynamicObject> = Api::all_with(
        clients.main.clone(),
        &resource(
            "MutatingAdmissionPolicyBinding",
            "mutatingadmissionpolicybindings",
        ),
    );
    let mut got: Vec<Option<Json>> = Vec::new();
    let mut admission_unreadable = None;
    for (api, n) in [
        (&policies, &name),
        (&policies, &node_name),
        (&bindings, &name),
        (&bindings, &node_name),
    ] {
        match api.get_opt(n).await {
            Ok(o) => got.push(o.map(|o| serde_json::to_value(o).unwrap_or(Json::Null))),
            Err(kube::Error::Api(s)) if s.code == 404 => {
                admission_unreadable = Some(format!(
                    "the API server does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicies ({})",
                    s.message
                ));
                got.push(None);
            }
            Err(e) => return Err(Error::api(format!("cannot get {n}"), e)),
        }
    }
    let mut got = got.into_iter();
    Ok(Fetched {
        pod_findings,
        pods_read,
        pod_pages,
        nodes,
        pod_policy: got.next().flatten(),
        node_policy: got.next().flatten(),
        pod_binding: got.next().flatten(),
        node_binding: got.next().flatten(),
        admission_unreadable,
        names: [name, node_name],
    })
}

/// How many pods a page held, and what was found about them.
type Judged = Result<(usize, Vec<Finding>), Error>;

/// The findings of a page judged on a blocking thread.
async fn judged(j: tokio::task::JoinHandle<Judged>) -> Judged {
    j.await
        .map_err(|e| Error::Malformed(format!("judging the pods stopped: {e}")))?
}

/// How many pods the page holds, and the pods some rule selects, each
/// as [`listed::project`] gives it. Each pod is read as admission reads
/// it and judged by the rules' selectors; only the pods some rule
/// selects are read further (most pods of a cluster are selected by
/// none, and reading them is most of the work).
fn selected(body: &Body, policy: &Policy) -> Result<(usize, Vec<Json>), Error> {
    let selects = |r: &pipeline_pod::PodReading| {
        let subject = RuleSubject {
            names: &r.names,
            images: &r.images,
            pipelines: &r.pipelines,
            kind: r.kind,
            role: r.role,
        };
        policy
            .rules
            .iter()
            .any(|rule| rule.judge(&subject).selected())
    };
    let mut out = Vec::new();
    match body {
        Body::Protobuf(raw) => {
            let pods = listed::protobuf_pods(raw)
                .map_err(|e| Error::Malformed(format!("the API server's pod list: {e}")))?;
            for p in &pods {
                let pod = listed::from_protobuf(p);
                if pipeline_pod::read(&pod).is_some_and(|r| selects(&r)) {
                    out.push(pod);
                }
            }
            Ok((pods.len(), out))
        }
        Body::Json { text, items } => {
            for r in items {
                let raw = &text[r.clone()];
                let Ok(Some(reading)) = pipeline_pod::read_text(raw) else {
                    continue;
                };
                if !selects(&reading) {
                    continue;
                }
                if let Ok(pod) = serde_json::from_str::<Json>(raw) {
                    out.push(listed::project(&pod));
                }
            }
            Ok((items.len(), out))
        }
    }
}

/// Everything audit finds, fails first.
pub fn judge(policy: &Policy, fetched: &Fetched, fresh: &admission::Export) -> Vec<Finding> {
    let mut out = fetched.pod_findings.clone();
    out.extend(nodes(fetched));
    out.extend(admission_objects(policy, fetched, fresh));
    out.sort_by(|a, b| {
        (a.outcome, a.subject, &a.namespace, &a.name).cmp(&(
            b.outcome,
            b.subject,
            &b.namespace,
            &b.name,
        ))
    });
    out
}

/// The findings about the pods of a page some rule selects, each as
/// [`listed::project`] gives it: each goes through the merge as a file
/// would, so that audit agrees with `rewrite`.
fn pods(
    policy: &Policy,
    selected: Vec<Json>,
    node_pools: &BTreeMap<String, Vec<String>>,
) -> Vec<Finding> {
    // The status is not the merge's: it is kept aside, and the pod goes to
    // the merge as a file (list items carry no type).
    let mut statuses = Vec::with_capacity(selected.len());
    let mut inputs = Vec::with_capacity(selected.len());
    let mut pods = Vec::with_capacity(selected.len());
    for mut pod in selected {
        statuses.push(
            pod.as_object_mut()
                .and_then(|o| o.remove("status"))
                .unwrap_or(Json::Null),
        );
        pod["apiVersion"] = json!("v1");
        pod["kind"] = json!("Pod");
        inputs.push(Input {
            file: format!(
                "pod/{}",
                pod["metadata"]["name"].as_str().unwrap_or_default()
            ),
            bytes: serde_json::to_vec(&pod).unwrap_or_default(),
        });
        pods.push(pod);
    }
    let opts = Options {
        details: true,
        report_errors: true,
        version_suffix: None,
    };
    let mut out = Vec::new();
    for ((pod, status), result) in pods
        .into_iter()
        .zip(statuses)
        .zip(process_all(&inputs, policy, &opts))
    {
        let Ok(o) = result else { continue };
        let Some(c) = o.docs.iter().flat_map(|d| &d.components).next() else {
            continue;
        };
        let rules: Vec<&kfsched_core::policy::Rule> = policy
            .rules
            .iter()
            .zip(&c.verdicts)
            .filter(|(_, v)| v.selected())
            .map(|(r, _)| r)
            .collect();
        if rules.is_empty() {
            continue;
        }
        let mut problems: Vec<String> = Vec::new();
        if c.changed {
            problems.extend(c.warnings.iter().cloned());
            if c.warnings.is_empty() {
                problems.push("the pod does not carry what its rules ask".into());
            }
        }
        let node = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty());
        for r in &rules {
            let Some(pool) = &r.pool else { continue };
            if let Some(n) = node {
                let pools: &[String] = node_pools.get(n).map_or(&[], Vec::as_slice);
                if !pools.contains(pool) {
                    problems.push(format!(
                        "it runs on node {n} ({}), not in pool {pool:?} that rule {:?} names",
                        if pools.is_empty() {
                            "in no pool".to_string()
                        } else {
                            format!("pools {}", pools.join(", "))
                        },
                        r.name
                    ));
                }
            }
        }
        let pending = status["conditions"]
            .as_array()
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c["type"] == "PodScheduled" && c["status"] == "False")
            })
            .map(|c| {
                format!(
                    "Pending ({}): {}",
                    c["reason"].as_str().unwrap_or("not scheduled"),
                    c["message"].as_str().unwrap_or_default()
                )
            });
        let outcome = if !problems.is_empty() {
            Outcome::Fail
        } else if pending.is_some() {
            Outcome::Warn
        } else {
            Outcome::Pass
        };
        let mut message = if problems.is_empty() {
            format!("{}: carries what its rules ask", c.label)
        } else {
            format!("{}: {}", c.label, problems.join("; "))
        };
        if let Some(p) = pending {
            message.push_str(&format!("; {p}"));
        } else if let Some(n) = node {
            message.push_str(&format!("; on node {n}"));
        }
        out.push(Finding {
            subject: Subject::Pod,
            namespace: pod["metadata"]["namespace"].as_str().map(str::to_string),
            name: pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            uid: pod["metadata"]["uid"].as_str().map(str::to_string),
            rules: rules.iter().map(|r| r.name.clone()).collect(),
            outcome,
            message,
        });
    }
    out
}

fn nodes(fetched: &Fetched) -> Vec<Finding> {
    fetched
        .nodes
        .iter()
        .filter(|p| !p.pools.is_empty())
        .map(|p| {
            let differences: Vec<String> = p
                .changes
                .iter()
                .filter(|c| c.is_difference() && !matches!(c, pools::Change::Record(_)))
                .map(|c| c.render())
                .collect();
            Finding {
                subject: Subject::Node,
                namespace: None,
                name: p.node.clone(),
                uid: None,
                rules: p.pools.clone(),
                outcome: if differences.is_empty() {
                    Outcome::Pass
                } else {
                    Outcome::Fail
                },
                message: if differences.is_empty() {
                    "carries its pools' labels and taints".into()
                } else {
                    format!(
                        "differs from its pools (node apply would make: {})",
                        differences.join(", ")
                    )
                },
            }
        })
        .collect()
}

/// The exported objects on the cluster against a fresh export (without
/// pipeline files): the node policy whole, the pod policy's mutations and
/// variables, where a rule's selection may also take the form an export
/// with pipeline files gives it.
fn admission_objects(
    policy: &Policy,
    fetched: &Fetched,
    fresh: &admission::Export,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let want = |name: &str| {
        fresh
            .objects
            .iter()
            .find(|o| o["kind"] == "MutatingAdmissionPolicy" && o["metadata"]["name"] == name)
    };
    let [pod_name, node_name] = &fetched.names;
    for (live, binding, name, what) in [
        (&fetched.pod_policy, &fetched.pod_binding, pod_name, "pods"),
        (
            &fetched.node_policy,
            &fetched.node_binding,
            node_name,
            "nodes",
        ),
    ] {
        // What the policy does not export (no rules, no pools) is not looked for.
        let Some(f) = want(name) else { continue };
        let name = name.clone();
        let (outcome, message) = match (live, &fetched.admission_unreadable) {
            (None, Some(why)) => (Outcome::Fail, format!("missing: {why}")),
            (None, None) => (
                Outcome::Fail,
                format!(
                    "missing: no {name} on the cluster, so admission does nothing for {what} (kubectl kfsched export admission -p {} | kubectl apply --server-side -f -)",
                    policy.file
                ),
            ),
            (Some(l), _) => match differs(policy, &l["spec"], &f["spec"], what == "pods") {
                Some(d) => (
                    Outcome::Fail,
                    format!("stale: {d}; export it again and apply it"),
                ),
                None if binding.is_none() => (
                    Outcome::Fail,
                    format!("its binding {name} is missing, so the policy acts on nothing"),
                ),
                None => (
                    Outcome::Pass,
                    "matches what export admission writes for the policy now".into(),
                ),
            },
        };
        out.push(Finding {
            subject: Subject::AdmissionPolicy,
            namespace: None,
            name,
            uid: live
                .as_ref()
                .and_then(|l| l["metadata"]["uid"].as_str())
                .map(str::to_string),
            rules: Vec::new(),
            outcome,
            message,
        });
    }
    out
}

/// What differs between the live policy spec and a fresh one, or `None`.
fn differs(policy: &Policy, live: &Json, fresh: &Json, pods: bool) -> Option<String> {
    if !pods {
        let strip = |j: &Json| {
            let mut j = j.clone();
            if let Some(m) = j.as_object_mut() {
                m.remove("failurePolicy");
            }
            j
        };
        return (strip(live) != strip(fresh))
            .then(|| "its pools' labels or taints changed".to_string());
    }
    let vars = |j: &Json| -> BTreeMap<String, String> {
        j["variables"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| {
                (
                    v["name"].as_str().unwrap_or_default().to_string(),
                    v["expression"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    let (lv, fv) = (vars(live), vars(fresh));
    let rules = |m: &BTreeMap<String, String>| -> Vec<String> {
        m.keys()
            .filter(|k| k.starts_with("rule_"))
            .cloned()
            .collect()
    };
    if rules(&lv) != rules(&fv) {
        return Some("the policy's rules were added, removed or renamed since".into());
    }
    for (name, f) in &fv {
        let Some(l) = lv.get(name) else {
            return Some(format!("its variable {name} is missing"));
        };
        if l == f {
            continue;
        }
        // Exported with pipeline files: `roles && (variables.resolved ? exact : approx)`.
        let with_files = name.starts_with("rule_")
            && f.split_once(" && ").is_some_and(|(roles, approx)| {
                l.starts_with(&format!("{roles} && (variables.resolved ? "))
                    && l.ends_with(&format!(" : {approx})"))
            });
        if !with_files {
            return Some(if let Some(var) = name.strip_prefix("rule_") {
                // The variable is the rule's name as a CEL identifier.
                let rule = policy
                    .rules
                    .iter()
                    .find(|r| {
                        r.name
                            .chars()
                            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                            .eq(var.chars())
                    })
                    .map_or(var.to_string(), |r| format!("{:?}", r.name));
                format!("what rule {rule} selects changed")
            } else {
                format!("its variable {name} differs (exported by another kfsched version)")
            });
        }
    }
    if live["mutations"] != fresh["mutations"] {
        return Some("a rule's scheduling changed".into());
    }
    None
}
