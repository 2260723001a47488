//! Reading node names, for completion: a lookup that must be quick and
//! that the caller may ignore when it fails.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};

use crate::Error;
use crate::client::{self, ClientOptions};

/// The names of the nodes of the cluster `opts` reaches, sorted; connecting
/// and listing together take at most `timeout`.
pub async fn names(opts: &ClientOptions, timeout: Duration) -> Result<Vec<String>, Error> {
    let lookup = async {
        let clients = client::connect(opts).await?;
        let api: Api<Node> = Api::all(clients.main);
        let list = api
            .list_metadata(&ListParams::default())
            .await
            .map_err(|e| Error::api("cannot list nodes", e))?;
        let mut names: Vec<String> = list
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        names.sort();
        Ok(names)
    };
    tokio::time::timeout(timeout, lookup)
        .await
        .unwrap_or_else(|_| {
            Err(Error::Api {
                action: "cannot list nodes".into(),
                message: format!(
                    "the API server did not answer in {}s",
                    timeout.as_secs_f64()
                ),
                source: None,
            })
        })
}
