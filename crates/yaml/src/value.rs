//! A small ordered YAML value, and how plain scalars resolve.
//!
//! Plain scalars resolve with the YAML 1.1 rules that PyYAML (the writer of
//! every KFP file) and Kubernetes' YAML readers use: `yes`, `on` and `true`
//! are booleans, `0x1f` is an integer. Comparing existing values this way is
//! what keeps a second rewrite a no-op, and the renderers quote any string
//! that these rules would read as something else.

use super::tree::{Kind, NodeId, Style, Tree};

/// A YAML value with mapping order kept.
#[derive(Clone, Debug)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Value>),
    Map(Vec<(String, Value)>),
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Int(a), Float(b)) | (Float(b), Int(a)) => (*a as f64) == *b,
            (Str(a), Str(b)) => a == b,
            (Seq(a), Seq(b)) => a == b,
            (Map(a), Map(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.iter().any(|(k2, v2)| k == k2 && v == v2))
            }
            _ => false,
        }
    }
}

impl Value {
    pub fn str(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Value]> {
        match self {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// Looks a key up in a map value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Sets a key in a map value, keeping its position when it exists.
    pub fn set(&mut self, key: &str, value: Value) {
        if let Value::Map(m) = self {
            if let Some(slot) = m.iter_mut().find(|(k, _)| k == key) {
                slot.1 = value;
            } else {
                m.push((key.to_string(), value));
            }
        }
    }

    /// Removes a key from a map value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        if let Value::Map(m) = self {
            if let Some(i) = m.iter().position(|(k, _)| k == key) {
                return Some(m.remove(i).1);
            }
        }
        None
    }

    /// Sorts the keys of every map in the value, as PyYAML's `sort_keys`.
    pub fn sort_keys(&mut self) {
        match self {
            Value::Map(m) => {
                m.sort_by(|a, b| a.0.cmp(&b.0));
                m.iter_mut().for_each(|(_, v)| v.sort_keys());
            }
            Value::Seq(s) => s.iter_mut().for_each(Value::sort_keys),
            _ => {}
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Empty collections and nulls: what Argo and Kubernetes treat as unset.
    pub fn is_empty_or_null(&self) -> bool {
        match self {
            Value::Null => true,
            Value::Seq(s) => s.is_empty(),
            Value::Map(m) => m.is_empty(),
            _ => false,
        }
    }

    /// Scalar as text, for string-typed fields written in any scalar form.
    pub fn scalar_text(&self) -> Option<String> {
        match self {
            Value::Str(s) => Some(s.clone()),
            Value::Int(i) => Some(i.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Float(f) => Some(python_float_repr(*f)),
            _ => None,
        }
    }

    /// Converts to JSON (for typed deserialization and `-o json`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Value::Str(s) => serde_json::Value::String(s.clone()),
            Value::Seq(s) => serde_json::Value::Array(s.iter().map(Value::to_json).collect()),
            Value::Map(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// Converts from JSON, keeping object order.
    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            serde_json::Value::String(s) => Value::Str(s.clone()),
            serde_json::Value::Array(a) => Value::Seq(a.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(o) => Value::Map(
                o.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }
}

/// Python's `repr(float)` as PyYAML writes it (`50.0`, `1.0e+17`).
pub(crate) fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    if f == f.trunc() && f.abs() < 1e16 {
        return format!("{f:.1}");
    }
    let s = format!("{f:e}");
    // Rust writes 1e17 / 1.5e-7; Python writes 1e+17 / 1.5e-07, and PyYAML
    // adds `.0` before the exponent when there is no decimal point.
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp_num: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp_num) {
        let r = format!("{f}");
        return if r.contains('.') { r } else { format!("{r}.0") };
    }
    let mant = if mant.contains('.') {
        mant.to_string()
    } else {
        format!("{mant}.0")
    };
    let sign = if exp_num < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp_num.abs())
}

/// What a plain scalar resolves to under YAML 1.1 (PyYAML's resolver).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    Null,
    Bool,
    Int,
    Float,
    Timestamp,
    Merge,
    Value,
    Str,
}

/// Resolves a plain scalar's text the way PyYAML's `Resolver` does.
pub fn resolve_plain(s: &str) -> Resolved {
    if s.is_empty() || matches!(s, "~" | "null" | "Null" | "NULL") {
        return Resolved::Null;
    }
    if matches!(
        s,
        "yes"
            | "Yes"
            | "YES"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    ) {
        return Resolved::Bool;
    }
    if s == "<<" {
        return Resolved::Merge;
    }
    if s == "=" {
        return Resolved::Value;
    }
    let first = s.as_bytes()[0];
    if b"-+0123456789.".contains(&first) {
        if is_float_11(s) {
            return Resolved::Float;
        }
        if is_int_11(s) {
            return Resolved::Int;
        }
    }
    if first.is_ascii_digit() && is_timestamp_11(s) {
        return Resolved::Timestamp;
    }
    Resolved::Str
}

fn strip_sign(s: &str) -> &str {
    s.strip_prefix(['-', '+']).unwrap_or(s)
}

fn all(s: &str, f: impl Fn(u8) -> bool) -> bool {
    s.bytes().all(f)
}

/// `[-+]?(?:0b[0-1_]+|0[0-7_]+|(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+|[1-9][0-9_]*(?::[0-5]?[0-9])+)`
fn is_int_11(s: &str) -> bool {
    let t = strip_sign(s);
    if t.is_empty() {
        return false;
    }
    if let Some(r) = t.strip_prefix("0b") {
        return !r.is_empty() && all(r, |c| c == b'0' || c == b'1' || c == b'_');
    }
    if let Some(r) = t.strip_prefix("0x") {
        return !r.is_empty() && all(r, |c| c.is_ascii_hexdigit() || c == b'_');
    }
    if t == "0" {
        return true;
    }
    if let Some(r) = t.strip_prefix('0') {
        return !r.is_empty() && all(r, |c| (b'0'..=b'7').contains(&c) || c == b'_');
    }
    let b = t.as_bytes();
    if !(b'1'..=b'9').contains(&b[0]) {
        return false;
    }
    if all(t, |c| c.is_ascii_digit() || c == b'_') {
        return true;
    }
    // sexagesimal: [1-9][0-9_]*(:[0-5]?[0-9])+
    let mut parts = t.split(':');
    let head = parts.next().unwrap_or("");
    if !all(head, |c| c.is_ascii_digit() || c == b'_') {
        return false;
    }
    let mut any = false;
    for p in parts {
        any = true;
        if !is_sexagesimal_part(p) {
            return false;
        }
    }
    any
}

fn is_sexagesimal_part(p: &str) -> bool {
    let b = p.as_bytes();
    match b.len() {
        1 => b[0].is_ascii_digit(),
        2 => (b'0'..=b'5').contains(&b[0]) && b[1].is_ascii_digit(),
        _ => false,
    }
}

/// `[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)`
fn is_float_11(s: &str) -> bool {
    if matches!(s, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let t = strip_sign(s);
    if matches!(t, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    // \.[0-9][0-9_]*(exp)? — no sign allowed
    if let Some(r) = s.strip_prefix('.') {
        let b = r.as_bytes();
        if b.first().is_some_and(|c| c.is_ascii_digit()) {
            let (mant, exp) = split_exp(r);
            return all(mant, |c| c.is_ascii_digit() || c == b'_') && exp.is_none_or(valid_exp);
        }
        return false;
    }
    let b = t.as_bytes();
    if !b.first().is_some_and(|c| c.is_ascii_digit()) {
        return false;
    }
    // [0-9][0-9_]*\.[0-9_]*(exp)?
    if let Some((int, frac)) = t.split_once('.') {
        if all(int, |c| c.is_ascii_digit() || c == b'_') {
            let (frac, exp) = split_exp(frac);
            if all(frac, |c| c.is_ascii_digit() || c == b'_') && exp.is_none_or(valid_exp) {
                return true;
            }
        }
        // sexagesimal float: [0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*
        if int.contains(':') && all(frac, |c| c.is_ascii_digit() || c == b'_') {
            let mut parts = int.split(':');
            let head = parts.next().unwrap_or("");
            if all(head, |c| c.is_ascii_digit() || c == b'_') {
                let mut any = false;
                for p in parts {
                    any = true;
                    if !is_sexagesimal_part(p) {
                        return false;
                    }
                }
                return any;
            }
        }
    }
    false
}

fn split_exp(s: &str) -> (&str, Option<&str>) {
    match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

fn valid_exp(e: &str) -> bool {
    let b = e.as_bytes();
    b.len() >= 2 && (b[0] == b'-' || b[0] == b'+') && all(&e[1..], |c| c.is_ascii_digit())
}

/// `[0-9]{4}-[0-9]{2}-[0-9]{2}` or the full timestamp form.
fn is_timestamp_11(s: &str) -> bool {
    let b = s.as_bytes();
    let date = b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5].is_ascii_digit()
        && b[6].is_ascii_digit()
        && b[7] == b'-'
        && b[8].is_ascii_digit()
        && b[9].is_ascii_digit();
    if date && b.len() == 10 {
        return true;
    }
    // Long form: YYYY-M?M-D?D(T| +)H?H:MM:SS(.frac)?( *(Z|[-+]H?H(:MM)?))?
    let mut i = 0;
    let digits = |i: &mut usize, min: usize, max: usize| -> bool {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - st < max {
            *i += 1;
        }
        *i - st >= min
    };
    if !digits(&mut i, 4, 4) || b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    if !digits(&mut i, 1, 2) || b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    if !digits(&mut i, 1, 2) {
        return false;
    }
    match b.get(i) {
        Some(b'T' | b't') => i += 1,
        Some(b' ' | b'\t') => {
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
        }
        _ => return false,
    }
    if !digits(&mut i, 1, 2) || b.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    if !digits(&mut i, 2, 2) || b.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    if !digits(&mut i, 2, 2) {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    if i == b.len() {
        return true;
    }
    match b[i] {
        b'Z' => i + 1 == b.len(),
        b'-' | b'+' => {
            i += 1;
            if !digits(&mut i, 1, 2) {
                return false;
            }
            if i == b.len() {
                return true;
            }
            if b[i] != b':' {
                return false;
            }
            i += 1;
            digits(&mut i, 2, 2) && i == b.len()
        }
        _ => false,
    }
}

fn parse_int_11(s: &str) -> Option<i64> {
    let neg = s.starts_with('-');
    let t: String = strip_sign(s).chars().filter(|&c| c != '_').collect();
    // The magnitude in i128, so that i64::MIN (whose magnitude is not an
    // i64) reads as the integer it is.
    let v: i128 = if let Some(r) = t.strip_prefix("0b") {
        i128::from_str_radix(r, 2).ok()?
    } else if let Some(r) = t.strip_prefix("0x") {
        i128::from_str_radix(r, 16).ok()?
    } else if t.contains(':') {
        let mut v: i128 = 0;
        for p in t.split(':') {
            v = v.checked_mul(60)?.checked_add(p.parse().ok()?)?;
        }
        v
    } else if t.len() > 1 && t.starts_with('0') {
        i128::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse().ok()?
    };
    i64::try_from(if neg { -v } else { v }).ok()
}

/// The value of a plain scalar's text.
pub fn plain_value(s: &str) -> Value {
    match resolve_plain(s) {
        Resolved::Null => Value::Null,
        Resolved::Bool => Value::Bool(matches!(
            s,
            "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON"
        )),
        Resolved::Int => parse_int_11(s).map_or_else(|| Value::Str(s.to_string()), Value::Int),
        Resolved::Float => {
            let t: String = s.chars().filter(|&c| c != '_').collect();
            let f = match t.to_ascii_lowercase().as_str() {
                ".nan" => f64::NAN,
                ".inf" | "+.inf" => f64::INFINITY,
                "-.inf" => f64::NEG_INFINITY,
                _ => t.parse().unwrap_or(f64::NAN),
            };
            Value::Float(f)
        }
        _ => Value::Str(s.to_string()),
    }
}

/// Converts a node (and its subtree) to a [`Value`] as its text has it:
/// aliases become nulls and merge keys are entries like others. This is
/// what the editor compares its edits with; readers want
/// [`effective_value`].
pub fn node_value(tree: &Tree, id: NodeId) -> Value {
    let n = tree.node(id);
    match n.kind {
        Kind::Scalar => {
            let s = tree.scalar_text(id);
            if n.style == Style::Plain && !n.tagged() {
                plain_value(&s)
            } else {
                Value::Str(s.into_owned())
            }
        }
        Kind::Seq => Value::Seq(tree.items(id).map(|c| node_value(tree, c)).collect()),
        Kind::Map => Value::Map(
            tree.entries(id)
                .map(|(k, v)| (tree.scalar(k).to_string(), node_value(tree, v)))
                .collect(),
        ),
        Kind::Alias => Value::Null,
    }
}

/// A node's value as YAML readers see it (Kubernetes' decoder, PyYAML,
/// Argo): aliases resolved to their anchors' values and merge keys (`<<`)
/// merged, a mapping's own keys winning.
pub fn effective_value(tree: &Tree, id: NodeId) -> Value {
    effective_at(tree, id, 0)
}

fn effective_at(tree: &Tree, id: NodeId, depth: usize) -> Value {
    // An alias inside its own anchor would recurse forever.
    if depth > 64 {
        return Value::Null;
    }
    let id = tree.resolve(id);
    match tree.node(id).kind {
        Kind::Scalar => node_value(tree, id),
        Kind::Seq => Value::Seq(
            tree.items(id)
                .map(|c| effective_at(tree, c, depth + 1))
                .collect(),
        ),
        Kind::Map => Value::Map(
            tree.effective_entries(id)
                .into_iter()
                .map(|(k, v)| (tree.scalar(k).to_string(), effective_at(tree, v, depth + 1)))
                .collect(),
        ),
        Kind::Alias => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keys_and_aliases_read_as_pyyaml_reads_them() {
        let text = "base: &b {image: a, tolerations: [{key: x}], zone: z}\nextra: &e {zone: e, gpu: 1}\nt:\n  <<: [*b, *e]\n  zone: own\n  name: t\nalias: *b\n";
        let tree = Tree::parse(text).expect("parses");
        let root = tree.documents[0].root.expect("root");
        let t = tree.get_value(root, "t").expect("t");
        assert_eq!(
            effective_value(&tree, t).to_json(),
            serde_json::json!({"image": "a", "tolerations": [{"key": "x"}], "gpu": 1, "zone": "own", "name": "t"})
        );
        assert_eq!(tree.lookup(t, "image").map(|n| tree.scalar(n)), Some("a"));
        assert_eq!(tree.lookup(t, "zone").map(|n| tree.scalar(n)), Some("own"));
        assert_eq!(tree.lookup(t, "gpu").map(|n| tree.scalar(n)), Some("1"));
        let alias = tree.get_value(root, "alias").expect("alias");
        assert_eq!(
            effective_value(&tree, alias),
            effective_value(&tree, tree.get_value(root, "base").expect("base"))
        );
        assert_eq!(node_value(&tree, alias), Value::Null);
        let base = tree.get_value(root, "base").expect("base");
        assert!(tree.is_aliased(base));
        let image = tree.get_value(base, "image").expect("image");
        assert_eq!(tree.aliased_ancestor(image), Some(base));
    }

    #[test]
    fn yaml11_resolution_matches_pyyaml() {
        for s in ["yes", "No", "on", "TRUE"] {
            assert_eq!(resolve_plain(s), Resolved::Bool, "{s}");
        }
        for s in ["1", "-12", "0x1f", "0o7x", "1_000", "190:20:30"] {
            let expect = if s == "0o7x" {
                Resolved::Str
            } else {
                Resolved::Int
            };
            assert_eq!(resolve_plain(s), expect, "{s}");
        }
        for s in [
            "1.5", "1.", ".5", "1e3x", "1.0e+3", ".inf", "-.Inf", ".NaN", "1.8.22",
        ] {
            let expect = match s {
                "1e3x" | "1.8.22" => Resolved::Str,
                _ => Resolved::Float,
            };
            assert_eq!(resolve_plain(s), expect, "{s}");
        }
        assert_eq!(resolve_plain("1e3"), Resolved::Str);
        assert_eq!(resolve_plain("2024-05-01"), Resolved::Timestamp);
        assert_eq!(
            resolve_plain("2024-05-01T12:00:00.123456"),
            Resolved::Timestamp
        );
        assert_eq!(resolve_plain("~"), Resolved::Null);
        assert_eq!(resolve_plain("experiment"), Resolved::Str);
        assert_eq!(plain_value("0x10"), Value::Int(16));
        assert_eq!(plain_value("010"), Value::Int(8));
    }

    #[test]
    fn integers_at_the_i64_limits() {
        assert_eq!(plain_value("-9223372036854775808"), Value::Int(i64::MIN));
        assert_eq!(plain_value("9223372036854775807"), Value::Int(i64::MAX));
        assert_eq!(plain_value("-0x8000000000000000"), Value::Int(i64::MIN));
        // Beyond i64: kept as the text it is.
        assert_eq!(
            plain_value("9223372036854775808"),
            Value::Str("9223372036854775808".into())
        );
    }

    #[test]
    fn float_repr_is_python_repr() {
        assert_eq!(python_float_repr(50.0), "50.0");
        assert_eq!(python_float_repr(1.5), "1.5");
        assert_eq!(python_float_repr(1e17), "1.0e+17");
        assert_eq!(python_float_repr(1000000000.0), "1000000000.0");
    }
}
