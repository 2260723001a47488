//! Pods as a LIST returns them, in either of the API server's encodings,
//! reduced to what audit reads of a pod: what admission reads (its name,
//! labels, annotations and containers) and what the merge of SPEC §3
//! reads and writes (its scheduling fields), where it runs and whether the
//! scheduler left it Pending. Managed fields, volumes and the rest of the
//! status are left out of both.
//!
//! Audit asks for protobuf (`application/vnd.kubernetes.protobuf`, what
//! kubectl's own client asks for built-in types): the API server encodes a
//! page of pods several times faster than as JSON, and the page is smaller.
//! A server (or proxy) that answers JSON is read as JSON. [`project`] of a
//! pod's JSON and [`from_protobuf`] of the same pod give the same value; a
//! test on the real control plane holds them equal.

use std::collections::BTreeMap;

use k8s_pb::api::core::v1 as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use kube::api::ListParams;
use prost::Message;
use serde_json::{Map, Value as Json, json};

use crate::Error;

/// The media type audit asks for: protobuf, and JSON from a server that
/// does not encode protobuf (kubectl's client asks the same way).
pub const ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// The four bytes the API server writes before a protobuf object.
const MAGIC: &[u8] = b"k8s\x00";

/// Whether a response body is the API server's protobuf.
pub fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// The object inside the protobuf envelope (`runtime.Unknown`).
fn unwrap(body: &[u8]) -> Result<Vec<u8>, String> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("not the API server's protobuf")?;
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(rest)
        .map_err(|e| format!("the protobuf envelope: {e}"))?;
    Ok(unknown.raw.unwrap_or_default())
}

/// A `PodList` of which only the list's metadata is decoded: the items
/// are skipped, so the next page can be asked for before this one is read.
#[derive(Clone, PartialEq, Message)]
struct ListHead {
    #[prost(message, optional, tag = "1")]
    metadata: Option<meta::ListMeta>,
}

/// A page of pods in protobuf: the list's raw bytes and its continue token.
pub fn protobuf_page(body: &[u8]) -> Result<(Vec<u8>, Option<String>), String> {
    let raw = unwrap(body)?;
    let head = ListHead::decode(raw.as_slice()).map_err(|e| format!("the pod list: {e}"))?;
    let token = head
        .metadata
        .and_then(|m| m.r#continue)
        .filter(|t| !t.is_empty());
    Ok((raw, token))
}

/// The pods of a page that [`protobuf_page`] returned.
pub fn protobuf_pods(raw: &[u8]) -> Result<Vec<Pod>, String> {
    PodList::decode(raw)
        .map(|l| l.items)
        .map_err(|e| format!("the pod list: {e}"))
}

// A pod's protobuf as audit decodes it: the fields it reads, with the
// API's field numbers (k8s.io/api/core/v1/generated.proto, as `k8s-pb`
// has them); prost skips the rest of each pod (managed fields, volumes,
// the containers' other fields, most of the status) without decoding it.

#[derive(Clone, PartialEq, Message)]
struct PodList {
    #[prost(message, repeated, tag = "2")]
    items: Vec<Pod>,
}

/// The fields of a `Pod` audit reads.
#[derive(Clone, PartialEq, Message)]
pub struct Pod {
    #[prost(message, optional, tag = "1")]
    metadata: Option<Metadata>,
    #[prost(message, optional, tag = "2")]
    spec: Option<Spec>,
    #[prost(message, optional, tag = "3")]
    status: Option<Status>,
}

#[derive(Clone, PartialEq, Message)]
struct Metadata {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "5")]
    uid: Option<String>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    annotations: BTreeMap<String, String>,
}

#[derive(Clone, PartialEq, Message)]
struct Spec {
    #[prost(message, repeated, tag = "2")]
    containers: Vec<Container>,
    #[prost(btree_map = "string, string", tag = "7")]
    node_selector: BTreeMap<String, String>,
    #[prost(string, optional, tag = "10")]
    node_name: Option<String>,
    #[prost(message, optional, tag = "18")]
    affinity: Option<pb::Affinity>,
    #[prost(string, optional, tag = "19")]
    scheduler_name: Option<String>,
    #[prost(message, repeated, tag = "20")]
    init_containers: Vec<Container>,
    #[prost(message, repeated, tag = "22")]
    tolerations: Vec<pb::Toleration>,
    #[prost(string, optional, tag = "24")]
    priority_class_name: Option<String>,
    #[prost(int32, optional, tag = "25")]
    priority: Option<i32>,
    #[prost(string, optional, tag = "29")]
    runtime_class_name: Option<String>,
    #[prost(string, optional, tag = "31")]
    preemption_policy: Option<String>,
    #[prost(message, repeated, tag = "33")]
    topology_spread_constraints: Vec<pb::TopologySpreadConstraint>,
}

#[derive(Clone, PartialEq, Message)]
struct Container {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    image: Option<String>,
    #[prost(string, repeated, tag = "3")]
    command: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    args: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Status {
    #[prost(message, repeated, tag = "2")]
    conditions: Vec<pb::PodCondition>,
}

/// A `metav1.Status` error in protobuf, as kube's client would have read
/// it from JSON.
pub fn protobuf_status(body: &[u8]) -> Option<kube::core::Status> {
    let s = meta::Status::decode(unwrap(body).ok()?.as_slice()).ok()?;
    let mut out = kube::core::Status::failure(
        s.message.as_deref().unwrap_or_default(),
        s.reason.as_deref().unwrap_or_default(),
    );
    if let Some(code) = s.code {
        out = out.with_code(u16::try_from(code).unwrap_or(500));
    }
    Some(out)
}

/// One page of the pods at `path` (`/api/v1/pods`, or a namespace's):
/// the API server's answer in the encoding `accept` asks for ([`ACCEPT`],
/// or `application/json`) and the continue token of the next page, if
/// any. Only the token is read here; the pods are read where they are used.
pub async fn page(
    client: kube::Client,
    path: String,
    lp: ListParams,
    accept: &'static str,
) -> Result<Page, Error> {
    use http_body_util::BodyExt;
    let mut req = kube::core::Request::new(&path)
        .list(&lp)
        .map_err(|e| Error::Malformed(format!("cannot build the request: {e}")))?;
    req.headers_mut()
        .insert(http::header::ACCEPT, http::HeaderValue::from_static(accept));
    let cannot = |e| Error::api("cannot list pods", e);
    let res = client
        .send(req.map(kube::client::Body::from))
        .await
        .map_err(cannot)?;
    let status = res.status();
    let bytes = res.into_body().collect().await.map_err(cannot)?.to_bytes();
    if status.is_client_error() || status.is_server_error() {
        let s = protobuf_status(&bytes)
            .or_else(|| serde_json::from_slice::<kube::core::Status>(&bytes).ok())
            .unwrap_or_else(|| {
                kube::core::Status::failure(&String::from_utf8_lossy(&bytes), "")
                    .with_code(status.as_u16())
            });
        return Err(cannot(kube::Error::Api(s.boxed())));
    }
    if is_protobuf(&bytes) {
        let (raw, token) = protobuf_page(&bytes)
            .map_err(|e| Error::Malformed(format!("the API server's pod list: {e}")))?;
        return Ok(Page {
            body: Body::Protobuf(raw),
            token,
        });
    }
    let text = String::from_utf8(bytes.to_vec())
        .map_err(|e| Error::Malformed(format!("the API server's pod list: {e}")))?;
    #[derive(serde::Deserialize)]
    struct List<'a> {
        #[serde(default)]
        metadata: ListMeta,
        #[serde(borrow, default)]
        items: Option<Vec<&'a serde_json::value::RawValue>>,
    }
    #[derive(serde::Deserialize, Default)]
    struct ListMeta {
        #[serde(default, rename = "continue")]
        token: Option<String>,
    }
    let list: List = serde_json::from_str(&text)
        .map_err(|e| Error::Malformed(format!("the API server's pod list: {e}")))?;
    let base = text.as_ptr() as usize;
    let items = list
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|raw| {
            let start = raw.get().as_ptr() as usize - base;
            start..start + raw.get().len()
        })
        .collect();
    let token = list.metadata.token.filter(|t| !t.is_empty());
    Ok(Page {
        body: Body::Json { text, items },
        token,
    })
}

/// A page of pods as the API server sent it.
pub struct Page {
    pub body: Body,
    pub token: Option<String>,
}

/// A page's pods, in the encoding the API server chose.
pub enum Body {
    /// The `PodList`'s protobuf.
    Protobuf(Vec<u8>),
    /// The list's JSON text, and where each item's JSON lies in it.
    Json {
        text: String,
        items: Vec<std::ops::Range<usize>>,
    },
}

impl Body {
    /// Every pod of the page, as [`project`] gives it.
    pub fn pods(&self) -> Result<Vec<Json>, Error> {
        match self {
            Body::Protobuf(raw) => Ok(protobuf_pods(raw)
                .map_err(|e| Error::Malformed(format!("the API server's pod list: {e}")))?
                .iter()
                .map(from_protobuf)
                .collect()),
            Body::Json { text, items } => items
                .iter()
                .map(|r| {
                    serde_json::from_str::<Json>(&text[r.clone()])
                        .map(|p| project(&p))
                        .map_err(|e| Error::Malformed(format!("the API server's pod list: {e}")))
                })
                .collect(),
        }
    }
}

/// The fields of a pod audit reads, from the pod's JSON.
pub fn project(pod: &Json) -> Json {
    let mut out = Map::new();
    let md = &pod["metadata"];
    let mut m = Map::new();
    for k in ["name", "namespace", "uid", "labels", "annotations"] {
        copy(md, &mut m, k);
    }
    out.insert("metadata".into(), Json::Object(m));
    let spec = &pod["spec"];
    let mut s = Map::new();
    for k in ["containers", "initContainers"] {
        if let Some(cs) = spec[k].as_array() {
            s.insert(k.into(), pick(cs, &["name", "image", "command", "args"]));
        }
    }
    for k in SPEC_FIELDS {
        copy(spec, &mut s, k);
    }
    out.insert("spec".into(), Json::Object(s));
    if let Some(cs) = pod["status"]["conditions"].as_array() {
        let cs = pick(cs, &["type", "status", "reason", "message"]);
        out.insert("status".into(), json!({ "conditions": cs }));
    }
    Json::Object(out)
}

/// Each object of `items` with only `fields`.
fn pick(items: &[Json], fields: &[&str]) -> Json {
    Json::Array(
        items
            .iter()
            .map(|item| {
                let mut o = Map::new();
                for f in fields {
                    copy(item, &mut o, f);
                }
                Json::Object(o)
            })
            .collect(),
    )
}

/// The pod spec's fields audit reads besides the containers.
const SPEC_FIELDS: [&str; 10] = [
    "nodeName",
    "nodeSelector",
    "tolerations",
    "affinity",
    "schedulerName",
    "priorityClassName",
    "priority",
    "preemptionPolicy",
    "runtimeClassName",
    "topologySpreadConstraints",
];

fn copy(from: &Json, to: &mut Map<String, Json>, key: &str) {
    if let Some(v) = from.get(key) {
        to.insert(key.into(), v.clone());
    }
}

/// The same fields as [`project`], from the pod's protobuf. The API server
/// writes a Go string field in protobuf even when it is empty, where JSON
/// leaves out an empty `omitempty` field: each field here is written as the
/// JSON encoding writes it (`opt`: left out when empty; `req`: always;
/// pointer fields: when set).
pub fn from_protobuf(pod: &Pod) -> Json {
    let mut out = Map::new();
    let mut m = Map::new();
    if let Some(md) = &pod.metadata {
        opt(&mut m, "name", &md.name);
        opt(&mut m, "namespace", &md.namespace);
        opt(&mut m, "uid", &md.uid);
        strings_map(&mut m, "labels", &md.labels);
        strings_map(&mut m, "annotations", &md.annotations);
    }
    out.insert("metadata".into(), Json::Object(m));
    let mut s = Map::new();
    if let Some(spec) = &pod.spec {
        s.insert("containers".into(), containers(&spec.containers));
        if !spec.init_containers.is_empty() {
            s.insert("initContainers".into(), containers(&spec.init_containers));
        }
        opt(&mut s, "nodeName", &spec.node_name);
        strings_map(&mut s, "nodeSelector", &spec.node_selector);
        list(&mut s, "tolerations", &spec.tolerations, toleration);
        if let Some(a) = &spec.affinity {
            s.insert("affinity".into(), affinity(a));
        }
        opt(&mut s, "schedulerName", &spec.scheduler_name);
        opt(&mut s, "priorityClassName", &spec.priority_class_name);
        if let Some(p) = spec.priority {
            s.insert("priority".into(), json!(p));
        }
        pointer(&mut s, "preemptionPolicy", &spec.preemption_policy);
        pointer(&mut s, "runtimeClassName", &spec.runtime_class_name);
        list(
            &mut s,
            "topologySpreadConstraints",
            &spec.topology_spread_constraints,
            spread,
        );
    }
    out.insert("spec".into(), Json::Object(s));
    if let Some(st) = &pod.status {
        if !st.conditions.is_empty() {
            let cs = st
                .conditions
                .iter()
                .map(|c| {
                    let mut o = Map::new();
                    req(&mut o, "type", &c.r#type);
                    req(&mut o, "status", &c.status);
                    opt(&mut o, "reason", &c.reason);
                    opt(&mut o, "message", &c.message);
                    Json::Object(o)
                })
                .collect();
            out.insert("status".into(), json!({"conditions": Json::Array(cs)}));
        }
    }
    Json::Object(out)
}

/// An `omitempty` string: left out when empty.
fn opt(to: &mut Map<String, Json>, key: &str, v: &Option<String>) {
    if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
        to.insert(key.into(), json!(v));
    }
}

/// A required string: always written.
fn req(to: &mut Map<String, Json>, key: &str, v: &Option<String>) {
    to.insert(key.into(), json!(v.as_deref().unwrap_or_default()));
}

/// A pointer to a string: written when set.
fn pointer(to: &mut Map<String, Json>, key: &str, v: &Option<String>) {
    if let Some(v) = v {
        to.insert(key.into(), json!(v));
    }
}

/// An `omitempty` list of strings.
fn strings(to: &mut Map<String, Json>, key: &str, v: &[String]) {
    if !v.is_empty() {
        to.insert(key.into(), json!(v));
    }
}

/// An `omitempty` map of strings.
fn strings_map(to: &mut Map<String, Json>, key: &str, v: &BTreeMap<String, String>) {
    if !v.is_empty() {
        to.insert(key.into(), json!(v));
    }
}

/// An `omitempty` list of objects.
fn list<T>(to: &mut Map<String, Json>, key: &str, v: &[T], each: fn(&T) -> Json) {
    if !v.is_empty() {
        to.insert(key.into(), Json::Array(v.iter().map(each).collect()));
    }
}

fn containers(cs: &[Container]) -> Json {
    Json::Array(
        cs.iter()
            .map(|c| {
                let mut o = Map::new();
                req(&mut o, "name", &c.name);
                opt(&mut o, "image", &c.image);
                strings(&mut o, "command", &c.command);
                strings(&mut o, "args", &c.args);
                Json::Object(o)
            })
            .collect(),
    )
}

fn toleration(t: &pb::Toleration) -> Json {
    let mut o = Map::new();
    opt(&mut o, "key", &t.key);
    opt(&mut o, "operator", &t.operator);
    opt(&mut o, "value", &t.value);
    opt(&mut o, "effect", &t.effect);
    if let Some(s) = t.toleration_seconds {
        o.insert("tolerationSeconds".into(), json!(s));
    }
    Json::Object(o)
}

fn spread(t: &pb::TopologySpreadConstraint) -> Json {
    let mut o = Map::new();
    o.insert("maxSkew".into(), json!(t.max_skew.unwrap_or_default()));
    req(&mut o, "topologyKey", &t.topology_key);
    req(&mut o, "whenUnsatisfiable", &t.when_unsatisfiable);
    if let Some(s) = &t.label_selector {
        o.insert("labelSelector".into(), label_selector(s));
    }
    if let Some(d) = t.min_domains {
        o.insert("minDomains".into(), json!(d));
    }
    pointer(&mut o, "nodeAffinityPolicy", &t.node_affinity_policy);
    pointer(&mut o, "nodeTaintsPolicy", &t.node_taints_policy);
    strings(&mut o, "matchLabelKeys", &t.match_label_keys);
    Json::Object(o)
}

fn label_selector(s: &meta::LabelSelector) -> Json {
    let mut o = Map::new();
    strings_map(&mut o, "matchLabels", &s.match_labels);
    list(&mut o, "matchExpressions", &s.match_expressions, |r| {
        let mut o = Map::new();
        req(&mut o, "key", &r.key);
        req(&mut o, "operator", &r.operator);
        strings(&mut o, "values", &r.values);
        Json::Object(o)
    });
    Json::Object(o)
}

fn affinity(a: &pb::Affinity) -> Json {
    let mut o = Map::new();
    if let Some(n) = &a.node_affinity {
        let mut na = Map::new();
        if let Some(r) = &n.required_during_scheduling_ignored_during_execution {
            na.insert(
                "requiredDuringSchedulingIgnoredDuringExecution".into(),
                json!({"nodeSelectorTerms": r.node_selector_terms.iter().map(node_term).collect::<Vec<_>>()}),
            );
        }
        list(
            &mut na,
            "preferredDuringSchedulingIgnoredDuringExecution",
            &n.preferred_during_scheduling_ignored_during_execution,
            |p| {
                json!({
                    "weight": p.weight.unwrap_or_default(),
                    "preference": p.preference.as_ref().map_or_else(|| json!({}), node_term),
                })
            },
        );
        o.insert("nodeAffinity".into(), Json::Object(na));
    }
    let pod_terms = |required: &[pb::PodAffinityTerm],
                     preferred: &[pb::WeightedPodAffinityTerm]| {
        let mut pa = Map::new();
        list(
            &mut pa,
            "requiredDuringSchedulingIgnoredDuringExecution",
            required,
            pod_term,
        );
        list(
            &mut pa,
            "preferredDuringSchedulingIgnoredDuringExecution",
            preferred,
            |w| {
                json!({
                    "weight": w.weight.unwrap_or_default(),
                    "podAffinityTerm": w.pod_affinity_term.as_ref().map_or_else(|| json!({"topologyKey": ""}), pod_term),
                })
            },
        );
        Json::Object(pa)
    };
    if let Some(p) = &a.pod_affinity {
        o.insert(
            "podAffinity".into(),
            pod_terms(
                &p.required_during_scheduling_ignored_during_execution,
                &p.preferred_during_scheduling_ignored_during_execution,
            ),
        );
    }
    if let Some(p) = &a.pod_anti_affinity {
        o.insert(
            "podAntiAffinity".into(),
            pod_terms(
                &p.required_during_scheduling_ignored_during_execution,
                &p.preferred_during_scheduling_ignored_during_execution,
            ),
        );
    }
    Json::Object(o)
}

fn node_term(t: &pb::NodeSelectorTerm) -> Json {
    let requirement = |r: &pb::NodeSelectorRequirement| {
        let mut o = Map::new();
        req(&mut o, "key", &r.key);
        req(&mut o, "operator", &r.operator);
        strings(&mut o, "values", &r.values);
        Json::Object(o)
    };
    let mut o = Map::new();
    list(
        &mut o,
        "matchExpressions",
        &t.match_expressions,
        requirement,
    );
    list(&mut o, "matchFields", &t.match_fields, requirement);
    Json::Object(o)
}

fn pod_term(t: &pb::PodAffinityTerm) -> Json {
    let mut o = Map::new();
    if let Some(s) = &t.label_selector {
        o.insert("labelSelector".into(), label_selector(s));
    }
    strings(&mut o, "namespaces", &t.namespaces);
    req(&mut o, "topologyKey", &t.topology_key);
    if let Some(s) = &t.namespace_selector {
        o.insert("namespaceSelector".into(), label_selector(s));
    }
    strings(&mut o, "matchLabelKeys", &t.match_label_keys);
    strings(&mut o, "mismatchLabelKeys", &t.mismatch_label_keys);
    Json::Object(o)
}
