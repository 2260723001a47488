//! The pre-flight look at one node: its pods (those `--pod-selector`
//! selects), each with its fate from the filters, the DaemonSets behind
//! DaemonSet pods (do they still exist?) and the PodDisruptionBudgets that
//! cover each pod.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams};

use super::eviction::selector_matches;
use super::filters::{Budget, Fate, PodPlan, classify, daemonset_of};
use super::options::DrainOptions;
use super::report::BlockedPod;
use crate::Error;
use crate::client::{Clients, is_not_found};
use crate::edit::CHUNK_SIZE;

/// One node's pods and their fates, before anything is evicted.
pub(super) struct Survey {
    pub node: String,
    /// This drain cordoned the node (it was schedulable).
    pub we_cordoned: bool,
    pub plans: Vec<PodPlan>,
    /// The budgets could be listed and some exist: watch them.
    pub watch_budgets: bool,
}

impl Survey {
    /// Every blocked pod, with its reasons.
    pub fn blocked(&self) -> Vec<BlockedPod> {
        self.plans
            .iter()
            .filter_map(|p| {
                p.blocked().map(|why| BlockedPod {
                    node: self.node.clone(),
                    why,
                })
            })
            .collect()
    }

    /// The pods as `(ns/name, uid)`, to see whether they changed.
    pub fn pod_set(&self) -> Vec<(String, String)> {
        self.plans
            .iter()
            .map(|p| (p.key(), p.uid.clone()))
            .collect()
    }
}

/// Lists pods in pages of [`CHUNK_SIZE`].
async fn list_pods(
    api: &Api<Pod>,
    field: &str,
    labels: Option<&str>,
) -> Result<Vec<Pod>, kube::Error> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().fields(field).limit(CHUNK_SIZE);
        if let Some(l) = labels {
            lp = lp.labels(l);
        }
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await?;
        out.extend(page.items);
        token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok(out);
        }
    }
}

/// Whether each DaemonSet behind a DaemonSet pod still exists, by `(ns, name)`.
async fn daemonsets(clients: &Clients, pods: &[Pod]) -> HashMap<(String, String), bool> {
    let mut exists: HashMap<(String, String), bool> = HashMap::new();
    for p in pods {
        let Some(o) = daemonset_of(p) else { continue };
        let ns = p.metadata.namespace.clone().unwrap_or_default();
        let key = (ns.clone(), o.name.clone());
        if exists.contains_key(&key) {
            continue;
        }
        let api: Api<DaemonSet> = Api::namespaced(clients.main.clone(), &ns);
        let found = match api.get_metadata(&o.name).await {
            Ok(_) => true,
            Err(e) if is_not_found(&e) => false,
            // No rights to read DaemonSets: assume it exists, as its pod says.
            Err(_) => true,
        };
        exists.insert(key, found);
    }
    exists
}

/// Names on each plan the budgets that cover its pod.
fn attach_budgets(plans: &mut [PodPlan], pods: &[Pod], budgets: &[PodDisruptionBudget]) {
    let empty = BTreeMap::new();
    for (plan, pod) in plans.iter_mut().zip(pods) {
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        for b in budgets {
            if b.metadata.namespace.as_deref() == Some(plan.namespace.as_str())
                && selector_matches(b.spec.as_ref().and_then(|s| s.selector.as_ref()), labels)
            {
                let allowed = b
                    .status
                    .as_ref()
                    .and_then(|s| s.disruptions_allowed)
                    .unwrap_or(0);
                plan.budgets.push(Budget {
                    name: format!(
                        "{}/{}",
                        plan.namespace,
                        b.metadata.name.as_deref().unwrap_or("")
                    ),
                    allowed,
                });
            }
        }
    }
}

/// Lists a node's pods and gives each its fate and budgets.
pub(super) async fn survey(
    clients: &Clients,
    opts: &DrainOptions,
    node: &str,
    we_cordoned: bool,
) -> Result<Survey, Error> {
    let all_pods: Api<Pod> = Api::all(clients.main.clone());
    let field = format!("spec.nodeName={node}");
    let labels = opts.pod_selector.as_ref().map(|s| s.to_query());
    let pods = list_pods(&all_pods, &field, labels.as_deref())
        .await
        .map_err(|e| Error::api(format!("cannot list the pods on node/{node}"), e))?;
    let ds_exists = daemonsets(clients, &pods).await;
    let now = k8s_openapi::jiff::Timestamp::now();
    let mut plans: Vec<PodPlan> = pods
        .iter()
        .map(|p| {
            let ds = daemonset_of(p).and_then(|o| {
                ds_exists
                    .get(&(
                        p.metadata.namespace.clone().unwrap_or_default(),
                        o.name.clone(),
                    ))
                    .copied()
            });
            classify(p, opts, ds, now)
        })
        .collect();

    // Budgets (best effort: a user who may not list them still drains).
    let mut budgets: Vec<PodDisruptionBudget> = Vec::new();
    let mut listed = false;
    if !opts.disable_eviction && plans.iter().any(|p| p.fate == Fate::Remove) {
        let pdb_api: Api<PodDisruptionBudget> = Api::all(clients.main.clone());
        if let Ok(list) = pdb_api.list(&ListParams::default()).await {
            listed = true;
            budgets = list.items;
        }
    }
    attach_budgets(&mut plans, &pods, &budgets);
    plans.sort_by_key(PodPlan::key);
    Ok(Survey {
        node: node.to_string(),
        we_cordoned,
        plans,
        watch_budgets: listed && !budgets.is_empty(),
    })
}
