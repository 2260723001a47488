//! The shape of a SchedulingPolicy: one table drives the strict reader
//! (unknown fields, wrong types, with a did-you-mean) and the JSON Schema
//! that `kubectl kfsched schema` prints for editors.

use serde_json::{Map, Value as Json, json};

mod read;

pub use read::{Locations, Reader, entry_path};

/// A field's type.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    Str,
    Int,
    /// A list of strings.
    StrList,
    /// A map of string to string.
    StrMap,
    Enum(&'static [&'static str]),
    /// A string the validator checks against these values with Kubernetes'
    /// own messages; the JSON Schema lists them for editors.
    OneOf(&'static [&'static str]),
    /// An integer the validator checks to lie in this range (the schema says so too).
    IntIn(i64, i64),
    Object(&'static [Field]),
    List(&'static Shape),
}

/// One field of an object.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: &'static str,
    pub shape: Shape,
    pub required: bool,
    pub doc: &'static str,
}

const fn f(name: &'static str, shape: Shape, doc: &'static str) -> Field {
    Field {
        name,
        shape,
        required: false,
        doc,
    }
}

const fn req(name: &'static str, shape: Shape, doc: &'static str) -> Field {
    Field {
        name,
        shape,
        required: true,
        doc,
    }
}

pub const TOLERATION: &[Field] = &[
    f(
        "key",
        Shape::Str,
        "Taint key the toleration applies to; empty with operator Exists matches every taint.",
    ),
    f(
        "operator",
        Shape::OneOf(&["", "Equal", "Exists"]),
        "Equal (default) or Exists.",
    ),
    f(
        "value",
        Shape::Str,
        "Taint value for operator Equal; must be empty for Exists.",
    ),
    f(
        "effect",
        Shape::OneOf(&["", "NoSchedule", "PreferNoSchedule", "NoExecute"]),
        "NoSchedule, PreferNoSchedule or NoExecute; empty matches every effect.",
    ),
    f(
        "tolerationSeconds",
        Shape::Int,
        "With effect NoExecute: how long the pod stays bound after the taint appears.",
    ),
];

pub const REQUIREMENT: &[Field] = &[
    req(
        "key",
        Shape::Str,
        "Label key (or metadata.name in matchFields).",
    ),
    req(
        "operator",
        Shape::OneOf(&["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
        "In, NotIn, Exists, DoesNotExist, Gt or Lt.",
    ),
    f(
        "values",
        Shape::StrList,
        "Values; one integer for Gt/Lt, none for Exists/DoesNotExist.",
    ),
];

pub const NODE_SELECTOR_TERM: &[Field] = &[
    f(
        "matchExpressions",
        Shape::List(&Shape::Object(REQUIREMENT)),
        "Node label requirements, ANDed.",
    ),
    f(
        "matchFields",
        Shape::List(&Shape::Object(REQUIREMENT)),
        "Node field requirements (metadata.name), ANDed.",
    ),
];

pub const NODE_SELECTOR: &[Field] = &[req(
    "nodeSelectorTerms",
    Shape::List(&Shape::Object(NODE_SELECTOR_TERM)),
    "Terms are ORed; kfsched ANDs this requirement into the component's own.",
)];

pub const PREFERRED_TERM: &[Field] = &[
    req("weight", Shape::IntIn(1, 100), "1-100."),
    req(
        "preference",
        Shape::Object(NODE_SELECTOR_TERM),
        "A node selector term.",
    ),
];

pub const NODE_AFFINITY: &[Field] = &[
    f(
        "requiredDuringSchedulingIgnoredDuringExecution",
        Shape::Object(NODE_SELECTOR),
        "Hard node requirement.",
    ),
    f(
        "preferredDuringSchedulingIgnoredDuringExecution",
        Shape::List(&Shape::Object(PREFERRED_TERM)),
        "Soft node preferences.",
    ),
];

pub const LABEL_SELECTOR_REQ: &[Field] = &[
    req("key", Shape::Str, "Label key."),
    req(
        "operator",
        Shape::OneOf(&["In", "NotIn", "Exists", "DoesNotExist"]),
        "In, NotIn, Exists or DoesNotExist.",
    ),
    f("values", Shape::StrList, "Values for In/NotIn."),
];

pub const LABEL_SELECTOR: &[Field] = &[
    f("matchLabels", Shape::StrMap, "Labels that must all match."),
    f(
        "matchExpressions",
        Shape::List(&Shape::Object(LABEL_SELECTOR_REQ)),
        "Requirements, ANDed.",
    ),
];

pub const POD_AFFINITY_TERM: &[Field] = &[
    f(
        "labelSelector",
        Shape::Object(LABEL_SELECTOR),
        "Pods to be near (or away from).",
    ),
    f(
        "namespaceSelector",
        Shape::Object(LABEL_SELECTOR),
        "Namespaces of those pods.",
    ),
    f("namespaces", Shape::StrList, "Namespaces of those pods."),
    req(
        "topologyKey",
        Shape::Str,
        "Node label that defines co-location.",
    ),
    f(
        "matchLabelKeys",
        Shape::StrList,
        "Pod label keys merged into labelSelector.",
    ),
    f(
        "mismatchLabelKeys",
        Shape::StrList,
        "Pod label keys merged into labelSelector with NotIn.",
    ),
];

pub const WEIGHTED_POD_AFFINITY_TERM: &[Field] = &[
    req("weight", Shape::IntIn(1, 100), "1-100."),
    req(
        "podAffinityTerm",
        Shape::Object(POD_AFFINITY_TERM),
        "The term.",
    ),
];

pub const POD_AFFINITY: &[Field] = &[
    f(
        "requiredDuringSchedulingIgnoredDuringExecution",
        Shape::List(&Shape::Object(POD_AFFINITY_TERM)),
        "Hard pod (anti-)affinity terms.",
    ),
    f(
        "preferredDuringSchedulingIgnoredDuringExecution",
        Shape::List(&Shape::Object(WEIGHTED_POD_AFFINITY_TERM)),
        "Soft pod (anti-)affinity terms.",
    ),
];

pub const AFFINITY: &[Field] = &[
    f(
        "nodeAffinity",
        Shape::Object(NODE_AFFINITY),
        "core/v1 NodeAffinity.",
    ),
    f(
        "podAffinity",
        Shape::Object(POD_AFFINITY),
        "core/v1 PodAffinity (not in KFP v2 files: export admission sets it there).",
    ),
    f(
        "podAntiAffinity",
        Shape::Object(POD_AFFINITY),
        "core/v1 PodAntiAffinity (not in KFP v2 files: export admission sets it there).",
    ),
];

pub const TOPOLOGY_SPREAD_CONSTRAINT: &[Field] = &[
    req(
        "maxSkew",
        Shape::IntIn(1, i32::MAX as i64),
        "How unevenly matching pods may spread: at least 1.",
    ),
    req(
        "topologyKey",
        Shape::Str,
        "Node label whose values are the domains (zone, hostname, ...).",
    ),
    req(
        "whenUnsatisfiable",
        Shape::OneOf(&["DoNotSchedule", "ScheduleAnyway"]),
        "DoNotSchedule (a filter) or ScheduleAnyway (a preference).",
    ),
    f(
        "labelSelector",
        Shape::Object(LABEL_SELECTOR),
        "The pods counted in each domain.",
    ),
    f(
        "minDomains",
        Shape::IntIn(1, i32::MAX as i64),
        "With DoNotSchedule: fewer eligible domains count as a global minimum of 0.",
    ),
    f(
        "nodeAffinityPolicy",
        Shape::OneOf(&["Honor", "Ignore"]),
        "Whether the pod's node affinity limits the domains: Honor (default) or Ignore.",
    ),
    f(
        "nodeTaintsPolicy",
        Shape::OneOf(&["Honor", "Ignore"]),
        "Whether untolerated taints limit the domains: Honor or Ignore (default).",
    ),
    f(
        "matchLabelKeys",
        Shape::StrList,
        "Pod label keys whose values are added to labelSelector.",
    ),
];

pub const SELECTOR: &[Field] = &[
    f(
        "names",
        Shape::StrList,
        "Globs over the component's names and task paths; * and ? stop at '/', ** crosses levels.",
    ),
    f(
        "images",
        Shape::StrList,
        "Globs over main container images; * matches any character.",
    ),
    f(
        "pipelines",
        Shape::StrList,
        "Globs over the top-level pipeline name.",
    ),
    f(
        "kinds",
        Shape::StrList,
        "Globs over the document kind: PipelineSpec, Workflow, CronWorkflow, Deployment, ...",
    ),
    f(
        "podRoles",
        Shape::List(&Shape::Enum(&["executor", "driver", "importer"])),
        "Which KFP v2 pods: executor (the task's own pod; the default in match), driver, importer. Drivers and importers are reached at admission only (export admission).",
    ),
];

pub const TAINT: &[Field] = &[
    req("key", Shape::Str, "Taint key."),
    f("value", Shape::Str, "Taint value."),
    req(
        "effect",
        Shape::OneOf(&["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        "NoSchedule, PreferNoSchedule or NoExecute.",
    ),
];

pub const NODE_POOL: &[Field] = &[
    req("name", Shape::Str, "Pool name (DNS-1123 label), unique."),
    f("nodes", Shape::StrList, "Node-name globs (live side)."),
    f(
        "nodeSelector",
        Shape::Str,
        "Label selector in kubectl syntax (live side).",
    ),
    f(
        "labels",
        Shape::StrMap,
        "Labels every node of the pool carries.",
    ),
    f(
        "taints",
        Shape::List(&Shape::Object(TAINT)),
        "Taints every node of the pool carries.",
    ),
];

pub const RULE: &[Field] = &[
    req("name", Shape::Str, "Rule name, unique."),
    f(
        "match",
        Shape::Object(SELECTOR),
        "Which components; omitted or empty selects every pod-creating component.",
    ),
    f(
        "exclude",
        Shape::Object(SELECTOR),
        "Components to leave out; any hit wins.",
    ),
    f(
        "pool",
        Shape::Str,
        "Tolerate the pool's taints and require its labels.",
    ),
    f(
        "tolerations",
        Shape::List(&Shape::Object(TOLERATION)),
        "core/v1 Tolerations.",
    ),
    f(
        "nodeSelector",
        Shape::StrMap,
        "Node labels the pod requires.",
    ),
    f("affinity", Shape::Object(AFFINITY), "core/v1 Affinity."),
    f(
        "priorityClassName",
        Shape::Str,
        "The pod's PriorityClass (not in KFP v2 files: export admission sets it there).",
    ),
    f(
        "schedulerName",
        Shape::Str,
        "The scheduler that places the pod (not in KFP v2 files: export admission sets it there).",
    ),
    f(
        "runtimeClassName",
        Shape::Str,
        "The pod's RuntimeClass (not in KFP v2 files: export admission sets it there).",
    ),
    f(
        "topologySpreadConstraints",
        Shape::List(&Shape::Object(TOPOLOGY_SPREAD_CONSTRAINT)),
        "core/v1 TopologySpreadConstraints (not in KFP v2 files: export admission sets them there).",
    ),
    f("podLabels", Shape::StrMap, "Labels for the pod."),
    f("podAnnotations", Shape::StrMap, "Annotations for the pod."),
    f(
        "strategy",
        Shape::Enum(&["merge", "replace"]),
        "merge (default) or replace the fields this rule names.",
    ),
];

pub const SPEC: &[Field] = &[
    f(
        "nodePools",
        Shape::List(&Shape::Object(NODE_POOL)),
        "Named groups of nodes.",
    ),
    f(
        "rules",
        Shape::List(&Shape::Object(RULE)),
        "Rules, applied in order.",
    ),
];

pub const METADATA: &[Field] = &[
    f("name", Shape::Str, "Policy name."),
    f(
        "namespace",
        Shape::Str,
        "Ignored; allowed so the policy can be a KRM functionConfig.",
    ),
    f("labels", Shape::StrMap, "Labels."),
    f(
        "annotations",
        Shape::StrMap,
        "Annotations (KRM function annotations go here).",
    ),
];

pub const POLICY: &[Field] = &[
    req(
        "apiVersion",
        Shape::Enum(&["kfsched.dev/v1alpha1"]),
        "kfsched.dev/v1alpha1",
    ),
    req(
        "kind",
        Shape::Enum(&["SchedulingPolicy"]),
        "SchedulingPolicy",
    ),
    f("metadata", Shape::Object(METADATA), "Object metadata."),
    req("spec", Shape::Object(SPEC), "The policy."),
];

/// The JSON Schema (draft 2020-12) of a SchedulingPolicy.
pub fn json_schema() -> Json {
    let mut root = object_schema(POLICY);
    if let Json::Object(m) = &mut root {
        m.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        m.insert(
            "$id".into(),
            json!("https://kfsched.dev/schemas/v1alpha1/schedulingpolicy.json"),
        );
        m.insert("title".into(), json!("SchedulingPolicy"));
        m.insert(
            "description".into(),
            json!("kfsched SchedulingPolicy: which pipeline components tolerate which taints and land on which nodes."),
        );
    }
    root
}

fn shape_schema(shape: Shape) -> Json {
    match shape {
        Shape::Str => json!({"type": "string"}),
        Shape::Int => json!({"type": "integer"}),
        Shape::StrList => json!({"type": "array", "items": {"type": "string"}, "minItems": 1}),
        Shape::StrMap => json!({"type": "object", "additionalProperties": {"type": "string"}}),
        Shape::Enum(v) | Shape::OneOf(v) => json!({"type": "string", "enum": v}),
        Shape::IntIn(min, max) => json!({"type": "integer", "minimum": min, "maximum": max}),
        Shape::Object(fields) => object_schema(fields),
        Shape::List(item) => json!({"type": "array", "items": shape_schema(*item)}),
    }
}

fn object_schema(fields: &[Field]) -> Json {
    let mut props = Map::new();
    for fl in fields {
        let mut s = shape_schema(fl.shape);
        if let Json::Object(m) = &mut s {
            m.insert("description".into(), json!(fl.doc));
        }
        props.insert(fl.name.to_string(), s);
    }
    let required: Vec<&str> = fields
        .iter()
        .filter(|fl| fl.required)
        .map(|fl| fl.name)
        .collect();
    let mut m = Map::new();
    m.insert("type".into(), json!("object"));
    m.insert("additionalProperties".into(), json!(false));
    m.insert("properties".into(), Json::Object(props));
    if !required.is_empty() {
        m.insert("required".into(), json!(required));
    }
    Json::Object(m)
}
