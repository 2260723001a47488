//! The read-modify-write engine every node edit goes through.
//!
//! 1. Resolve the targets (GET each named node, or LIST by selector).
//! 2. Plan every node from what was read; if any node refuses (a
//!    conflicting value without `--overwrite`), write nothing.
//! 3. Write the nodes concurrently. A planner's change is a JSON merge
//!    patch; a guarded change is applied to the node exactly as it was read
//!    (raw JSON, so fields this build does not know survive) and sent as a
//!    PUT that carries the `resourceVersion` that was read: the server
//!    rejects a stale one with 409 Conflict, and the node is read again and
//!    re-planned. Replacing `spec.taints` (an atomic list) is therefore safe
//!    against concurrent editors, unlike kubectl's unguarded
//!    strategic-merge patch. PUT also costs the API server about a third
//!    less CPU than a merge patch (measured, README.md, Nodes), which is what
//!    bounds a 200-node taint. Unguarded changes (cordon) stay merge patches.

use std::io::Write;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::core::Request;
use serde_json::Value as Json;

use super::client::{Clients, is_conflict, is_not_found};
use super::{DryRun, Error, FIELD_MANAGER, Refusal, Targets};

/// How many node writes are in flight at once.
pub const WRITE_CONCURRENCY: usize = 32;
/// Attempts per node before giving up on conflicts.
pub const MAX_ATTEMPTS: u32 = 40;
/// Page size for node and pod lists (kubectl's `--chunk-size` default).
pub const CHUNK_SIZE: u32 = 500;

/// What a planner decided for one node.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Send this merge patch. `verb` is the result word (`tainted`).
    Write {
        patch: Json,
        verb: String,
        /// Guard with the node's resourceVersion (needed when the patch
        /// replaces a list or depends on what was read).
        guard: bool,
        notes: Vec<String>,
    },
    /// Nothing to do.
    Unchanged { verb: String, notes: Vec<String> },
    /// The node's state refuses the change; the message names the flag.
    Refuse(Refusal),
}

/// Counts of what happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub changed: usize,
    pub unchanged: usize,
    /// Nodes deleted between the read and the write (selector runs only).
    pub gone: usize,
}

/// What a write does when its node was deleted after it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vanished {
    /// The user named the node: its absence is an error (exit 3), as a
    /// missing name is before anything is written.
    Fail,
    /// The node came from a selector, `--all` or a pool: it no longer
    /// matches anything, so there is nothing left to change. A warning, and
    /// the other nodes' results stand.
    Skip,
}

impl Vanished {
    pub fn of(targets: &Targets) -> Vanished {
        match targets {
            Targets::Names(_) => Vanished::Fail,
            Targets::Selector(_) | Targets::All => Vanished::Skip,
        }
    }
}

/// A node as read: typed for planning, raw for writing back.
#[derive(Clone, Debug)]
pub struct Fetched {
    pub node: Node,
    pub raw: Json,
}

impl Fetched {
    fn from_raw(raw: Json) -> Result<Fetched, Error> {
        let node: Node = serde_json::from_value(raw.clone()).map_err(|e| {
            Error::Malformed(format!(
                "the API server sent a node kfsched cannot read: {e}"
            ))
        })?;
        Ok(Fetched { node, raw })
    }

    pub fn name(&self) -> &str {
        name_of(&self.node)
    }
}

/// The node's name, or `""`.
pub fn name_of(n: &Node) -> &str {
    n.metadata.name.as_deref().unwrap_or("")
}

fn nodes_request() -> Request {
    Request::new("/api/v1/nodes")
}

fn build_error(e: kube::core::request::Error) -> Error {
    Error::Malformed(format!("cannot build the request: {e}"))
}

async fn get_raw(clients: &Clients, name: &str) -> Result<Json, kube::Error> {
    let req = nodes_request()
        .get(name, &Default::default())
        .map_err(kube::Error::BuildRequest)?;
    clients.main.request::<Json>(req).await
}

/// GETs each named node, or LISTs by selector / all. Missing names are one error.
pub async fn resolve(clients: &Clients, targets: &Targets) -> Result<Vec<Fetched>, Error> {
    match targets {
        Targets::Names(names) => {
            let results: Vec<(String, Result<Json, kube::Error>)> =
                futures::stream::iter(names.iter().cloned())
                    .map(|n| async move {
                        let r = get_raw(clients, &n).await;
                        (n, r)
                    })
                    .buffered(WRITE_CONCURRENCY)
                    .collect()
                    .await;
            let mut nodes = Vec::new();
            let mut missing = Vec::new();
            for (n, r) in results {
                match r {
                    Ok(raw) => nodes.push(Fetched::from_raw(raw)?),
                    Err(e) if is_not_found(&e) => missing.push(n),
                    Err(e) => return Err(Error::api(format!("cannot get node/{n}"), e)),
                }
            }
            if !missing.is_empty() {
                let list: Vec<String> = missing.iter().map(|m| format!("{m:?}")).collect();
                let what = if missing.len() == 1 { "node" } else { "nodes" };
                return Err(Error::Api {
                    action: format!("cannot get {what}"),
                    message: format!(
                        "NotFound: {what} {} not found (check the name with `kubectl get nodes`)",
                        list.join(", ")
                    ),
                    source: None,
                });
            }
            Ok(nodes)
        }
        Targets::Selector(sel) => list_nodes(clients, Some(&sel.to_query())).await,
        Targets::All => list_nodes(clients, None).await,
    }
}

/// Lists nodes in pages of [`CHUNK_SIZE`].
pub async fn list_nodes(clients: &Clients, selector: Option<&str>) -> Result<Vec<Fetched>, Error> {
    let mut out = Vec::new();
    for_each_node_page(clients, selector, |page| {
        out.extend(page);
        Ok(())
    })
    .await?;
    Ok(out)
}

/// Lists nodes in pages of [`CHUNK_SIZE`], handing each page to `f` as it
/// comes (so a caller that keeps little of a node holds one page at a time).
pub async fn for_each_node_page(
    clients: &Clients,
    selector: Option<&str>,
    mut f: impl FnMut(Vec<Fetched>) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(CHUNK_SIZE);
        if let Some(s) = selector {
            lp = lp.labels(s);
        }
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let req = nodes_request().list(&lp).map_err(build_error)?;
        let mut page: Json = clients
            .main
            .request::<Json>(req)
            .await
            .map_err(|e| Error::api("cannot list nodes", e))?;
        let items = match page.get_mut("items").map(Json::take) {
            Some(Json::Array(items)) => items,
            _ => Vec::new(),
        };
        let mut fetched = Vec::with_capacity(items.len());
        for mut item in items {
            // List items carry no type; the PUT body needs it.
            if let Some(o) = item.as_object_mut() {
                o.entry("apiVersion")
                    .or_insert_with(|| Json::String("v1".into()));
                o.entry("kind")
                    .or_insert_with(|| Json::String("Node".into()));
            }
            fetched.push(Fetched::from_raw(item)?);
        }
        f(fetched)?;
        token = page
            .pointer("/metadata/continue")
            .and_then(Json::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if token.is_none() {
            return Ok(());
        }
    }
}

/// Plans and writes every target node; result lines go to `out` in the
/// order of the targets, warnings to `err`.
pub async fn run<F>(
    clients: &Clients,
    targets: &Targets,
    dry_run: DryRun,
    planner: F,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Summary, Error>
where
    F: Fn(&Node) -> Step,
{
    let nodes = resolve(clients, targets).await?;
    if nodes.is_empty() {
        let _ = writeln!(err, "warning: no nodes matched: {}", targets.describe());
        return Ok(Summary::default());
    }
    write_nodes(
        clients,
        nodes,
        dry_run,
        Vanished::of(targets),
        &planner,
        out,
        err,
    )
    .await
}

/// Steps 2 and 3 for nodes already read.
pub async fn write_nodes<F>(
    clients: &Clients,
    nodes: Vec<Fetched>,
    dry_run: DryRun,
    vanished: Vanished,
    planner: &F,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Summary, Error>
where
    F: Fn(&Node) -> Step,
{
    let mut refusals = Vec::new();
    let mut work = Vec::new();
    let mut summary = Summary::default();
    let mut unchanged_lines = Vec::new();
    for f in nodes {
        match planner(&f.node) {
            Step::Refuse(m) => refusals.push(m),
            Step::Unchanged { verb, notes } => {
                unchanged_lines.push((f.name().to_string(), verb, notes))
            }
            Step::Write { .. } => work.push(f),
        }
    }
    if !refusals.is_empty() {
        return Err(Error::Refused(refusals));
    }
    for (name, verb, notes) in unchanged_lines {
        for n in notes {
            let _ = writeln!(err, "warning: {n}");
        }
        let _ = writeln!(out, "node/{name} {verb}{}", dry_run.suffix());
        summary.unchanged += 1;
    }
    let mut results = futures::stream::iter(work)
        .map(|f| write_one(clients, f, dry_run, vanished, planner))
        .buffered(WRITE_CONCURRENCY);
    let mut failures = Vec::new();
    while let Some(r) = results.next().await {
        match r {
            Ok(w) if w.gone => {
                let _ = writeln!(
                    err,
                    "warning: node/{} was deleted after it was read; skipped",
                    w.name
                );
                summary.gone += 1;
            }
            Ok(w) => {
                for n in w.notes {
                    let _ = writeln!(err, "warning: {n}");
                }
                let _ = writeln!(out, "node/{} {}{}", w.name, w.verb, dry_run.suffix());
                if w.changed {
                    summary.changed += 1;
                } else {
                    summary.unchanged += 1;
                }
            }
            Err(e) if e.is_denied() => return Err(e),
            Err(e) => failures.push(e),
        }
    }
    match failures.len() {
        0 => Ok(summary),
        1 => Err(failures.remove(0)),
        _ => Err(Error::NodesFailed(failures)),
    }
}

/// What happened to one node.
struct Written {
    name: String,
    verb: String,
    notes: Vec<String>,
    changed: bool,
    /// Deleted after it was read ([`Vanished::Skip`]).
    gone: bool,
}

/// RFC 7386 JSON merge patch, applied locally: `null` removes a key,
/// objects merge, anything else replaces.
pub fn merge_patch(target: &mut Json, patch: &Json) {
    let Json::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Json::Object(Default::default());
    }
    if let Json::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Json::Null), v);
            }
        }
    }
}

/// Writes one node, re-reading and re-planning on conflict.
async fn write_one<F>(
    clients: &Clients,
    mut f: Fetched,
    dry_run: DryRun,
    vanished: Vanished,
    planner: &F,
) -> Result<Written, Error>
where
    F: Fn(&Node) -> Step,
{
    let name = f.name().to_string();
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let (patch, verb, guard, notes) = match planner(&f.node) {
            Step::Unchanged { verb, notes } => {
                return Ok(Written {
                    name,
                    verb,
                    notes,
                    changed: false,
                    gone: false,
                });
            }
            Step::Refuse(r) => return Err(Error::RefusedOnRetry(r)),
            Step::Write {
                patch,
                verb,
                guard,
                notes,
            } => (patch, verb, guard, notes),
        };
        let done = Written {
            name: name.clone(),
            verb,
            notes,
            changed: true,
            gone: false,
        };
        let gone = || Written {
            name: name.clone(),
            verb: String::new(),
            notes: vec![],
            changed: false,
            gone: true,
        };
        if dry_run == DryRun::Client {
            return Ok(done);
        }
        let result = if guard {
            // The raw node still carries the resourceVersion it was read at.
            let mut body = f.raw.clone();
            merge_patch(&mut body, &patch);
            let pp = PostParams {
                dry_run: dry_run == DryRun::Server,
                field_manager: Some(FIELD_MANAGER.into()),
            };
            let bytes = serde_json::to_vec(&body)
                .map_err(|e| Error::Malformed(format!("cannot encode node/{name}: {e}")))?;
            let req = nodes_request()
                .replace(&name, &pp, bytes)
                .map_err(build_error)?;
            clients.main.request::<Json>(req).await.map(|_| ())
        } else {
            let pp = PatchParams {
                dry_run: dry_run == DryRun::Server,
                field_manager: Some(FIELD_MANAGER.into()),
                ..Default::default()
            };
            let req = nodes_request()
                .patch(&name, &pp, &Patch::Merge(&patch))
                .map_err(build_error)?;
            clients.main.request::<Json>(req).await.map(|_| ())
        };
        match result {
            Ok(()) => return Ok(done),
            Err(e) if is_not_found(&e) && vanished == Vanished::Skip => return Ok(gone()),
            Err(e) if is_conflict(&e) && attempt < MAX_ATTEMPTS => {
                let base = Duration::from_millis(5u64 << attempt.min(7));
                tokio::time::sleep(base + super::jitter(base * 2)).await;
                match get_raw(clients, &name).await {
                    Ok(raw) => f = Fetched::from_raw(raw)?,
                    Err(e) if is_not_found(&e) && vanished == Vanished::Skip => {
                        return Ok(gone());
                    }
                    Err(e) => return Err(Error::api(format!("cannot get node/{name}"), e)),
                }
            }
            Err(e) => {
                let verb = if guard { "update" } else { "patch" };
                return Err(Error::api(format!("cannot {verb} node/{name}"), e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut t = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "resourceVersion": "7"}, "spec": {"taints": [1]}, "x": {"keep": true}});
        merge_patch(
            &mut t,
            &json!({"metadata": {"labels": {"a": null, "c": "3"}}, "spec": {"taints": null}}),
        );
        assert_eq!(
            t,
            json!({"metadata": {"labels": {"b": "2", "c": "3"}, "resourceVersion": "7"}, "spec": {}, "x": {"keep": true}})
        );
        merge_patch(&mut t, &json!({"spec": {"taints": [{"key": "k"}]}}));
        assert_eq!(t["spec"]["taints"], json!([{"key": "k"}]));
    }
}
