//! The exported objects as text: a YAML stream (`kubectl apply -f -`),
//! with CEL expressions as literal blocks so a reviewer reads them as
//! written, or a JSON `v1 List`. The same objects always give the same
//! bytes.

use serde_json::Value as Json;

use kfsched_yaml::Value;
use kfsched_yaml::block::scalar_text;

/// The objects as a YAML stream, one document each.
pub fn yaml(objects: &[Json]) -> String {
    let mut out = String::new();
    for (i, o) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        if let Json::Object(m) = o {
            for (k, v) in m {
                entry(&mut out, k, v, 0);
            }
        }
    }
    out
}

/// The objects as a `v1 List` in JSON.
pub fn json_list(objects: &[Json]) -> String {
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let mut s = serde_json::to_string_pretty(&list).unwrap_or_default();
    s.push('\n');
    s
}

fn pad(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

fn scalar(v: &Json) -> String {
    match v {
        Json::String(s) => scalar_text(&Value::Str(s.clone()), false),
        other => scalar_text(&Value::from_json(other), false),
    }
}

/// A multi-line string that reads back the same as a literal block (`|-`):
/// printable lines without trailing spaces, not starting with a space.
fn literal_block(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with(' ')
        && !s.ends_with('\n')
        && s.lines()
            .all(|l| !l.ends_with(' ') && l.chars().all(|c| (' '..='~').contains(&c)))
}

fn entry(out: &mut String, key: &str, v: &Json, indent: usize) {
    pad(out, indent);
    out.push_str(&scalar(&Json::String(key.to_string())));
    out.push(':');
    value(out, v, indent);
}

/// Writes a value after `key:` or `- ` (the cursor is after the colon or dash).
fn value(out: &mut String, v: &Json, indent: usize) {
    match v {
        Json::Object(m) if !m.is_empty() => {
            out.push('\n');
            for (k, x) in m {
                entry(out, k, x, indent + 2);
            }
        }
        Json::Array(a) if !a.is_empty() => {
            out.push('\n');
            for x in a {
                pad(out, indent);
                out.push('-');
                match x {
                    Json::Object(m) if !m.is_empty() => {
                        // The first entry on the dash's line.
                        for (i, (k, y)) in m.iter().enumerate() {
                            if i == 0 {
                                out.push(' ');
                                out.push_str(&scalar(&Json::String(k.clone())));
                                out.push(':');
                                value(out, y, indent + 2);
                            } else {
                                entry(out, k, y, indent + 2);
                            }
                        }
                    }
                    _ => value_inline(out, x, indent + 2),
                }
            }
        }
        Json::Object(_) => out.push_str(" {}\n"),
        Json::Array(_) => out.push_str(" []\n"),
        Json::String(s) if literal_block(s) => {
            out.push_str(" |-\n");
            for l in s.lines() {
                if !l.is_empty() {
                    pad(out, indent + 2);
                    out.push_str(l);
                }
                out.push('\n');
            }
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn value_inline(out: &mut String, v: &Json, indent: usize) {
    match v {
        Json::Array(a) if !a.is_empty() => value(out, v, indent),
        _ => value(out, v, indent.saturating_sub(2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_are_literal_blocks_and_the_stream_reads_back() {
        let o = serde_json::json!({
            "kind": "X",
            "spec": {"list": [{"name": "a", "expression": "x ?\n  y : z"}, "plain", "yes"], "empty": [], "n": 3}
        });
        let text = yaml(&[o.clone(), o.clone()]);
        assert!(
            text.contains("expression: |-\n      x ?\n        y : z\n"),
            "{text}"
        );
        let tree = kfsched_yaml::Tree::parse(&text).unwrap();
        assert_eq!(tree.documents.len(), 2);
        let back =
            kfsched_yaml::value::node_value(&tree, tree.documents[1].root.unwrap()).to_json();
        assert_eq!(back, o);
    }
}
