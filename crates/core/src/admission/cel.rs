//! Pieces of CEL for MutatingAdmissionPolicy expressions: literals, the
//! JSON Patch operations the policy emits, Object initializers for the
//! pod's typed fields, and comparisons written out for known shapes.
//!
//! Two rules of kube-apiserver 1.36 shape what can be written here:
//! a JSON Patch `value` that is a bare list of `Object{...}` initializers
//! crashes the API server (even under `failurePolicy: Ignore`), so a patch
//! value is only ever a [`Value`]: a scalar, a string map, an empty list,
//! an existing element, or one Object initializer (lists of initializers
//! live inside it); and every index into the object is guarded, so no
//! pod's shape makes an expression fail.

use serde_json::Value as Json;

/// A CEL string literal (single-quoted; anything outside printable ASCII
/// escaped, so expressions stay plain ASCII).
pub fn lit(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            ' '..='~' => out.push(c),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) <= 0xFFFF => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('\'');
    out
}

/// A list of CEL string literals.
pub fn lits<S: AsRef<str>>(items: &[S]) -> String {
    let parts: Vec<String> = items.iter().map(|s| lit(s.as_ref())).collect();
    format!("[{}]", parts.join(", "))
}

/// A map of string literals (`{'k': 'v'}`): homogeneous, as CEL requires.
pub fn string_map(pairs: &[(String, String)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}: {}", lit(k), lit(v)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// A map key as a JSON Pointer segment (RFC 6901).
pub fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// What a JSON Patch operation may carry. There is no variant for a list
/// of Object initializers: kube-apiserver 1.36.3 panics on one.
#[derive(Clone, Debug)]
pub enum Value {
    /// A string.
    Str(String),
    /// A map of strings (`{'k': 'v'}`).
    StringMap(Vec<(String, String)>),
    /// `[]`: an empty list to append to.
    EmptyList,
    /// One Object initializer (which may hold lists of initializers).
    Object(String),
}

impl Value {
    fn cel(&self) -> String {
        match self {
            Value::Str(s) => lit(s),
            Value::StringMap(m) => string_map(m),
            Value::EmptyList => "[]".into(),
            Value::Object(o) => o.clone(),
        }
    }
}

/// One JSON Patch operation; `path` is a CEL string expression.
pub fn patch(op: &str, path: &str, value: &Value) -> String {
    format!(
        "JSONPatch{{op: {}, path: {path}, value: {}}}",
        lit(op),
        value.cel()
    )
}

/// `add` at a constant path.
pub fn add(path: &str, value: &Value) -> String {
    patch("add", &lit(path), value)
}

/// Fields that hold maps of strings rather than objects.
const STRING_MAPS: &[&str] = &["matchLabels", "nodeSelector", "labels", "annotations"];

/// A JSON value of the policy (a toleration, a term, ...) as a CEL Object
/// initializer of the object field whose type is `type_path`
/// (`Object.spec.tolerations` for a toleration: a list field's items take
/// its name); nulls are left out, as the API server drops them.
pub fn object(type_path: &str, v: &Json) -> String {
    match v {
        Json::Object(m) => {
            let fields: Vec<String> = m
                .iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| {
                    let child = format!("{type_path}.{k}");
                    let text = match x {
                        Json::Object(o) if STRING_MAPS.contains(&k.as_str()) => {
                            let pairs: Vec<(String, String)> = o
                                .iter()
                                .map(|(a, b)| {
                                    (a.clone(), b.as_str().unwrap_or_default().to_string())
                                })
                                .collect();
                            string_map(&pairs)
                        }
                        _ => object(&child, x),
                    };
                    format!("{k}: {text}")
                })
                .collect();
            format!("{type_path}{{{}}}", fields.join(", "))
        }
        Json::Array(items) => {
            let parts: Vec<String> = items.iter().map(|x| object(type_path, x)).collect();
            format!("[{}]", parts.join(", "))
        }
        Json::String(s) => lit(s),
        Json::Number(n) => n.to_string(),
        Json::Bool(b) => b.to_string(),
        Json::Null => "null".into(),
    }
}

/// `expr` (a value of the pod) equals the JSON value `v` as a canonical
/// JSON comparison sees it: the same fields, the same list order, no
/// field `v` lacks among `fields_of(type)`, which names the optional
/// fields of each object type so an extra field is noticed.
pub fn equals(expr: &str, v: &Json, shape: &Shape) -> String {
    match (v, shape) {
        (Json::Object(m), Shape::Object(fields)) => {
            let mut parts = Vec::new();
            for (name, sub) in fields.iter() {
                match m.get(*name).filter(|x| !x.is_null()) {
                    Some(x) => parts.push(format!(
                        "has({expr}.{name}) && {}",
                        equals(&format!("{expr}.{name}"), x, sub)
                    )),
                    None => parts.push(format!("!has({expr}.{name})")),
                }
            }
            paren_all(&parts)
        }
        (Json::Array(items), Shape::List(item)) => {
            let mut parts = vec![format!("size({expr}) == {}", items.len())];
            for (i, x) in items.iter().enumerate() {
                parts.push(equals(&format!("{expr}[{i}]"), x, item));
            }
            paren_all(&parts)
        }
        (Json::Object(m), Shape::StringMap) => {
            let mut parts = vec![format!("size({expr}) == {}", m.len())];
            for (k, x) in m {
                parts.push(format!(
                    "{} in {expr} && {expr}[{}] == {}",
                    lit(k),
                    lit(k),
                    lit(x.as_str().unwrap_or_default())
                ));
            }
            paren_all(&parts)
        }
        (Json::String(s), _) => format!("{expr} == {}", lit(s)),
        (Json::Number(n), _) => format!("{expr} == {n}"),
        (Json::Bool(b), _) => format!("{expr} == {b}"),
        _ => "false".into(),
    }
}

fn paren_all(parts: &[String]) -> String {
    if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("({})", parts.join(" && "))
    }
}

/// The shape of a Kubernetes object, for [`equals`]: every optional field
/// an object type has.
#[derive(Clone, Debug)]
pub enum Shape {
    Scalar,
    StringMap,
    List(Box<Shape>),
    Object(Vec<(&'static str, Shape)>),
}

fn label_selector() -> Shape {
    Shape::Object(vec![
        ("matchLabels", Shape::StringMap),
        (
            "matchExpressions",
            Shape::List(Box::new(Shape::Object(vec![
                ("key", Shape::Scalar),
                ("operator", Shape::Scalar),
                ("values", Shape::List(Box::new(Shape::Scalar))),
            ]))),
        ),
    ])
}

/// core/v1 PodAffinityTerm.
pub fn pod_affinity_term() -> Shape {
    Shape::Object(vec![
        ("labelSelector", label_selector()),
        ("namespaces", Shape::List(Box::new(Shape::Scalar))),
        ("topologyKey", Shape::Scalar),
        ("namespaceSelector", label_selector()),
        ("matchLabelKeys", Shape::List(Box::new(Shape::Scalar))),
        ("mismatchLabelKeys", Shape::List(Box::new(Shape::Scalar))),
    ])
}

/// core/v1 WeightedPodAffinityTerm.
pub fn weighted_pod_affinity_term() -> Shape {
    Shape::Object(vec![
        ("weight", Shape::Scalar),
        ("podAffinityTerm", pod_affinity_term()),
    ])
}

/// A JSON value of the policy as a CEL data literal: maps and lists whose
/// items are not all strings hold each item in `dyn(...)`, as CEL's
/// homogeneous literals require; nulls are left out, as the API server
/// drops them. The JSON Patch of the pod policy carries data, not Object
/// initializers: data can be computed in variables, and the API server
/// writes it as the JSON it is.
pub fn data(v: &Json) -> String {
    let wrap = |items: Vec<(Option<String>, &Json)>, open: char, close: char| {
        let all_strings = items.iter().all(|(_, x)| x.is_string());
        let parts: Vec<String> = items
            .iter()
            .map(|(k, x)| {
                let value = if all_strings {
                    data(x)
                } else {
                    format!("dyn({})", data(x))
                };
                match k {
                    Some(k) => format!("{}: {value}", lit(k)),
                    None => value,
                }
            })
            .collect();
        format!("{open}{}{close}", parts.join(", "))
    };
    match v {
        Json::Object(m) => wrap(
            m.iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| (Some(k.clone()), x))
                .collect(),
            '{',
            '}',
        ),
        Json::Array(items) => wrap(items.iter().map(|x| (None, x)).collect(), '[', ']'),
        Json::String(s) => lit(s),
        Json::Number(n) => n.to_string(),
        Json::Bool(b) => b.to_string(),
        Json::Null => "null".into(),
    }
}

/// One JSON Patch operation as data (`{'op': ..., 'path': ..., 'value': ...}`),
/// which the pod policy's mutation turns into a JSONPatch; `path` and
/// `value` are CEL expressions.
pub fn op_data(op: &str, path: &str, value: Option<&str>) -> String {
    match value {
        Some(v) => format!(
            "{{'op': dyn({}), 'path': dyn({path}), 'value': dyn({v})}}",
            lit(op)
        ),
        None => format!("{{'op': dyn({}), 'path': dyn({path})}}", lit(op)),
    }
}

/// `add` of `value` (a CEL expression) at a constant path, as data.
pub fn put(path: &str, value: &str) -> String {
    op_data("add", &lit(path), Some(value))
}

/// The JSONPatch operations of a list of [`op_data`] entries.
pub fn patches(list: &str) -> String {
    format!(
        "{list}.map(p, has(p.value) ? JSONPatch{{op: string(p.op), path: string(p.path), value: p.value}} : JSONPatch{{op: string(p.op), path: string(p.path)}})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_literals_escape_quotes_backslashes_and_non_ascii() {
        assert_eq!(lit(r"a'b\c"), r"'a\'b\\c'");
        assert_eq!(lit("é\n"), r"'\u00e9\n'");
        assert_eq!(lit("😀"), r"'\U0001f600'");
    }

    #[test]
    fn pointer_segments_escape_tilde_then_slash() {
        assert_eq!(
            pointer_segment("kfsched.dev/pool~x"),
            "kfsched.dev~1pool~0x"
        );
    }

    #[test]
    fn objects_nest_their_type_names_and_keep_string_maps_plain() {
        let v = serde_json::json!({"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"});
        assert_eq!(
            object(
                "Object.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                &v
            ),
            "Object.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution{labelSelector: Object.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution.labelSelector{matchLabels: {'a': 'b'}}, topologyKey: 'zone'}"
        );
    }

    #[test]
    fn data_literals_are_homogeneous() {
        let v = serde_json::json!({"key": "k", "operator": "Exists", "tolerationSeconds": 30, "x": null});
        assert_eq!(
            data(&v),
            "{'key': dyn('k'), 'operator': dyn('Exists'), 'tolerationSeconds': dyn(30)}"
        );
        assert_eq!(data(&serde_json::json!({"a": "b"})), "{'a': 'b'}");
        assert_eq!(data(&serde_json::json!(["a", 1])), "[dyn('a'), dyn(1)]");
        assert_eq!(
            put("/spec/x", "[]"),
            "{'op': dyn('add'), 'path': dyn('/spec/x'), 'value': dyn([])}"
        );
    }
}
