//! Kubernetes' own validation rules for names, labels and selectors, with
//! the API server's messages (k8s.io/apimachinery `validation` and
//! `labels.Parse`), so kfsched accepts exactly what the server accepts.

use std::fmt;

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// A field name of the API (camelCase) in snake_case, protojson's other
/// spelling of it: `priorityClassName` is `priority_class_name`.
pub fn snake_case(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            s.push('_');
            s.push(c.to_ascii_lowercase());
        } else {
            s.push(c);
        }
    }
    s
}

fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    // apimachinery's `RegexError` ends every example with `', '` before it
    // joins them with ` or `: `'MyName',  or 'my.name',  or '123-abc', regex`.
    let ex: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        ex.join(" or ")
    )
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
}

fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
}

/// `IsDNS1123Label`.
pub(crate) fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !matches_dns1123_label(s) {
        errs.push(regex_error(
            DNS1123_LABEL_ERR,
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

/// `IsDNS1123Subdomain`.
pub(crate) fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !s.split('.').all(matches_dns1123_label) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsQualifiedName` / `IsLabelKey`: an optional DNS subdomain prefix and `/`, then a name.
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.len() {
        1 => parts[0],
        2 => {
            let prefix = parts[0];
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            parts[1]
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    LABEL_KEY_ERR,
                    LABEL_KEY_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !matches_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`.
pub fn label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !value.is_empty() && !matches_label_key_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `ValidateNodeName` (a DNS subdomain) as used for `matchFields` values.
pub fn node_name(value: &str) -> Vec<String> {
    dns1123_subdomain(value)
}

/// The operators of a label selector requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelOp {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    /// `key>N`: the label's value, as an integer, is greater than N.
    GreaterThan,
    /// `key<N`.
    LessThan,
}

/// One requirement of a parsed label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub op: SelOp,
    pub values: Vec<String>,
}

/// A parsed label selector in kubectl syntax (`a=b,c!=d,e in (x,y),!f,g`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub requirements: Vec<Requirement>,
}

/// A selector syntax error, with the character position in the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorError {
    pub position: usize,
    pub message: String,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at position {})", self.message, self.position)
    }
}

impl LabelSelector {
    /// Parses the `labels.Parse` syntax.
    pub fn parse(input: &str) -> Result<LabelSelector, SelectorError> {
        let mut p = SelParser {
            s: input.as_bytes(),
            i: 0,
        };
        let mut reqs = Vec::new();
        p.ws();
        if p.i == p.s.len() {
            return Ok(LabelSelector::default());
        }
        loop {
            p.ws();
            reqs.push(p.requirement()?);
            p.ws();
            match p.peek() {
                None => break,
                Some(b',') => {
                    p.i += 1;
                }
                Some(_) => {
                    return Err(p.err("found unexpected text; expected ',' between requirements"));
                }
            }
        }
        Ok(LabelSelector { requirements: reqs })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether a set of labels satisfies every requirement.
    pub fn matches(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| {
            let v = labels.get(&r.key);
            match r.op {
                SelOp::Equals | SelOp::In => v.is_some_and(|v| r.values.contains(v)),
                SelOp::NotEquals | SelOp::NotIn => v.is_none_or(|v| !r.values.contains(v)),
                SelOp::Exists => v.is_some(),
                SelOp::DoesNotExist => v.is_none(),
                // As apimachinery: a missing or non-integer label never matches.
                SelOp::GreaterThan | SelOp::LessThan => {
                    let (Some(have), Ok(bound)) = (
                        v.and_then(|v| v.parse::<i64>().ok()),
                        r.values[0].parse::<i64>(),
                    ) else {
                        return false;
                    };
                    if r.op == SelOp::GreaterThan {
                        have > bound
                    } else {
                        have < bound
                    }
                }
            }
        })
    }

    /// The canonical string form, for the API server's `labelSelector` parameter.
    pub fn to_query(&self) -> String {
        let parts: Vec<String> = self
            .requirements
            .iter()
            .map(|r| match r.op {
                SelOp::Equals => format!("{}={}", r.key, r.values[0]),
                SelOp::NotEquals => format!("{}!={}", r.key, r.values[0]),
                SelOp::In => format!("{} in ({})", r.key, r.values.join(",")),
                SelOp::NotIn => format!("{} notin ({})", r.key, r.values.join(",")),
                SelOp::Exists => r.key.clone(),
                SelOp::DoesNotExist => format!("!{}", r.key),
                SelOp::GreaterThan => format!("{}>{}", r.key, r.values[0]),
                SelOp::LessThan => format!("{}<{}", r.key, r.values[0]),
            })
            .collect();
        parts.join(",")
    }
}

struct SelParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl SelParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c == b' ' || c == b'\t') {
            self.i += 1;
        }
    }

    fn err(&self, msg: &str) -> SelectorError {
        SelectorError {
            position: self.i,
            message: msg.to_string(),
        }
    }

    fn ident(&mut self) -> String {
        let st = self.i;
        while self.peek().is_some_and(|c| {
            !matches!(
                c,
                b' ' | b'\t' | b',' | b'=' | b'!' | b'(' | b')' | b'<' | b'>'
            )
        }) {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[st..self.i]).into_owned()
    }

    fn key(&mut self) -> Result<String, SelectorError> {
        let at = self.i;
        let k = self.ident();
        if k.is_empty() {
            return Err(SelectorError {
                position: at,
                message: "expected a label key".into(),
            });
        }
        if let Some(m) = qualified_name(&k).into_iter().next() {
            return Err(SelectorError {
                position: at,
                message: format!("invalid label key {k:?}: {m}"),
            });
        }
        Ok(k)
    }

    fn value(&mut self) -> Result<String, SelectorError> {
        let at = self.i;
        let v = self.ident();
        if let Some(m) = label_value(&v).into_iter().next() {
            return Err(SelectorError {
                position: at,
                message: format!("invalid label value {v:?}: {m}"),
            });
        }
        Ok(v)
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        if self.peek() == Some(b'!') {
            self.i += 1;
            self.ws();
            let key = self.key()?;
            return Ok(Requirement {
                key,
                op: SelOp::DoesNotExist,
                values: vec![],
            });
        }
        let key = self.key()?;
        self.ws();
        match self.peek() {
            None | Some(b',') => Ok(Requirement {
                key,
                op: SelOp::Exists,
                values: vec![],
            }),
            Some(b'=') => {
                self.i += 1;
                if self.peek() == Some(b'=') {
                    self.i += 1;
                }
                self.ws();
                let v = self.value()?;
                Ok(Requirement {
                    key,
                    op: SelOp::Equals,
                    values: vec![v],
                })
            }
            Some(c @ (b'>' | b'<')) => {
                self.i += 1;
                self.ws();
                let at = self.i;
                let v = self.value()?;
                if v.parse::<i64>().is_err() {
                    return Err(SelectorError {
                        position: at,
                        message: format!("for '>' and '<' the value must be an integer, got {v:?}"),
                    });
                }
                Ok(Requirement {
                    key,
                    op: if c == b'>' {
                        SelOp::GreaterThan
                    } else {
                        SelOp::LessThan
                    },
                    values: vec![v],
                })
            }
            Some(b'!') => {
                self.i += 1;
                if self.peek() != Some(b'=') {
                    return Err(self.err("expected '=' after '!'"));
                }
                self.i += 1;
                self.ws();
                let v = self.value()?;
                Ok(Requirement {
                    key,
                    op: SelOp::NotEquals,
                    values: vec![v],
                })
            }
            Some(_) => {
                let at = self.i;
                let word = self.ident();
                let op = match word.as_str() {
                    "in" => SelOp::In,
                    "notin" => SelOp::NotIn,
                    _ => {
                        return Err(SelectorError {
                            position: at,
                            message: format!(
                                "unknown operator {word:?}; expected =, ==, !=, in, notin, > or <"
                            ),
                        });
                    }
                };
                self.ws();
                if self.peek() != Some(b'(') {
                    return Err(self.err("expected '(' after in/notin"));
                }
                self.i += 1;
                let mut values = Vec::new();
                loop {
                    self.ws();
                    if self.peek() == Some(b')') {
                        self.i += 1;
                        break;
                    }
                    values.push(self.value()?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b')') => {
                            self.i += 1;
                            break;
                        }
                        _ => return Err(self.err("expected ',' or ')' in the value list")),
                    }
                }
                if values.is_empty() {
                    return Err(self
                        .err("for 'in' and 'notin' operators, the value list must be non-empty"));
                }
                Ok(Requirement { key, op, values })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        assert!(qualified_name("kfsched.dev/pool").is_empty());
        assert!(qualified_name("nvidia.com/gpu.product").is_empty());
        assert!(qualified_name("key").is_empty());
        assert_eq!(qualified_name("a/b/c").len(), 1);
        assert!(!qualified_name("/x").is_empty());
        assert!(!qualified_name("Example.com/x").is_empty());
        assert!(!qualified_name("-bad").is_empty());
        assert!(!qualified_name(&"a".repeat(64)).is_empty());
    }

    #[test]
    fn label_values() {
        assert!(label_value("").is_empty());
        assert!(label_value("experiment").is_empty());
        assert!(label_value(&"x".repeat(63)).is_empty());
        assert_eq!(
            label_value(&"x".repeat(64)),
            vec!["must be no more than 63 bytes".to_string()]
        );
        assert!(!label_value("a b").is_empty());
    }

    #[test]
    fn selectors_parse_like_kubectl() {
        let s =
            LabelSelector::parse("accelerator=a100, zone in (a,b),!spot,tier!=free,pool").unwrap();
        assert_eq!(s.requirements.len(), 5);
        assert_eq!(s.requirements[1].op, SelOp::In);
        assert_eq!(
            s.to_query(),
            "accelerator=a100,zone in (a,b),!spot,tier!=free,pool"
        );
        assert!(LabelSelector::parse("a in ()").is_err());
        assert!(LabelSelector::parse("a=b c").is_err());
        assert!(LabelSelector::parse("a==b").is_ok());
    }
}
