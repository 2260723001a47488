//! What `check` reads from the live cluster: every node, the
//! PriorityClasses (the pods' classes must exist), and with `--usage` every
//! pod that is bound to a node and not finished (the pods the scheduler's
//! cache counts), listed in pages.

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use kube::api::ListParams;

use super::Error;
use super::client::Clients;

/// Items per list request.
const PAGE: u32 = 500;

/// The nodes, and with `usage` the running pods, of the cluster.
pub struct Live {
    pub nodes: Vec<Node>,
    pub pods: Option<Vec<Pod>>,
    /// The PriorityClasses, or why they could not be listed (a user who may
    /// read nodes but not classes still gets the rest of the check).
    pub priority_classes: Result<Vec<PriorityClass>, String>,
}

/// Lists every node (and, with `usage`, the bound pods that are not
/// finished).
pub async fn fetch(clients: &Clients, usage: bool) -> Result<Live, Error> {
    let nodes = list(
        Api::<Node>::all(clients.main.clone()),
        None,
        "cannot list nodes",
    )
    .await?;
    let pods = if usage {
        // The scheduler's own pod informer excludes finished pods.
        let fields = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";
        Some(
            list(
                Api::<Pod>::all(clients.main.clone()),
                Some(fields),
                "cannot list pods (--usage)",
            )
            .await?,
        )
    } else {
        None
    };
    let priority_classes = list(
        Api::<PriorityClass>::all(clients.main.clone()),
        None,
        "cannot list PriorityClasses",
    )
    .await
    .map_err(|e| e.to_string());
    Ok(Live {
        nodes,
        pods,
        priority_classes,
    })
}

async fn list<K>(api: Api<K>, fields: Option<&str>, action: &str) -> Result<Vec<K>, Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(PAGE);
        if let Some(f) = fields {
            lp = lp.fields(f);
        }
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.map_err(|e| Error::api(action, e))?;
        out.extend(page.items);
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok(out);
        }
    }
}

/// Pods by name, as `kubectl get pod NAME -o json` gives them, for
/// `explain pod/NAME`: in `namespace`, else the connection's default
/// namespace (the kubeconfig context's, else `default`).
pub async fn pods(
    clients: &Clients,
    namespace: Option<&str>,
    names: &[String],
) -> Result<Vec<serde_json::Value>, Error> {
    let ns = namespace.unwrap_or_else(|| clients.main.default_namespace());
    let api = Api::<Pod>::namespaced(clients.main.clone(), ns);
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        // A pod that does not exist is a wrong input, as a missing file is.
        let pod = match api.get_opt(n).await {
            Ok(Some(p)) => p,
            Ok(None) => {
                return Err(Error::Usage(format!(
                    "pod/{n}: no such pod in namespace {ns} (-n/--namespace names another)"
                )));
            }
            Err(e) => {
                return Err(Error::api(
                    format!("cannot get pod/{n} in namespace {ns}"),
                    e,
                ));
            }
        };
        let mut j = serde_json::to_value(&pod).map_err(|e| Error::Malformed(e.to_string()))?;
        // As `kubectl get -o json` writes a single object.
        j["apiVersion"] = "v1".into();
        j["kind"] = "Pod".into();
        out.push(j);
    }
    Ok(out)
}
