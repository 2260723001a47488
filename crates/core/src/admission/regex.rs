//! A policy glob as the anchored RE2 regular expression that CEL's
//! `matches` takes (RE2 has no globs, and `matches` is unanchored): the
//! `glob` crate's own semantics, token by token, so admission selects
//! exactly what `rewrite` selects. In `names` (path-like globs) `*`, `?`
//! and bracket classes never match `/`, and `**` as a whole path segment
//! matches any run of segments.
//!
//! Written by hand: no crate translates `glob::Pattern` to a regex with
//! its separator rules, and the translation has to follow the `glob`
//! crate's matcher, including its corner cases (a `**` at the end, a
//! `[...]` class under the separator rule, reversed ranges).

/// One token of a glob, as `glob::Pattern` reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Char(char),
    AnyChar,
    AnySequence,
    AnyRecursiveSequence,
    Within(Vec<(char, char)>),
    Except(Vec<(char, char)>),
}

/// The tokens of a glob that `glob::Pattern::new` accepts (its parse,
/// step for step); `None` for one it refuses.
fn tokens(pattern: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '?' => {
                out.push(Token::AnyChar);
                i += 1;
            }
            '*' => {
                let start = i;
                while i < chars.len() && chars[i] == '*' {
                    i += 1;
                }
                match i - start {
                    1 => out.push(Token::AnySequence),
                    2 => {
                        // `**` is a whole segment: at the start or after a
                        // `/`, and followed by a `/` (which it takes) or the end.
                        if start != 0 && chars[start - 1] != '/' {
                            return None;
                        }
                        if i < chars.len() {
                            if chars[i] != '/' {
                                return None;
                            }
                            i += 1;
                        }
                        if out.last() != Some(&Token::AnyRecursiveSequence) {
                            out.push(Token::AnyRecursiveSequence);
                        }
                    }
                    _ => return None,
                }
            }
            '[' => {
                let negated = i + 4 <= chars.len() && chars[i + 1] == '!';
                let (from, search) = if negated {
                    (i + 2, i + 3)
                } else {
                    (i + 1, i + 2)
                };
                if (negated || (i + 3 <= chars.len() && chars[i + 1] != '!'))
                    && search <= chars.len()
                {
                    if let Some(j) = chars[search..].iter().position(|&c| c == ']') {
                        let set = specifiers(&chars[from..search + j]);
                        out.push(if negated {
                            Token::Except(set)
                        } else {
                            Token::Within(set)
                        });
                        i = search + j + 1;
                        continue;
                    }
                }
                return None;
            }
            c => {
                out.push(Token::Char(c));
                i += 1;
            }
        }
    }
    Some(out)
}

/// A class's members as ranges (a single character is a range of one).
fn specifiers(s: &[char]) -> Vec<(char, char)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if i + 3 <= s.len() && s[i + 1] == '-' {
            out.push((s[i], s[i + 2]));
            i += 3;
        } else {
            out.push((s[i], s[i]));
            i += 1;
        }
    }
    out
}

/// A character as an RE2 escape that Rust's `regex` reads alike.
fn hex(c: char) -> String {
    format!("\\x{{{:X}}}", c as u32)
}

fn literal(c: char, out: &mut String) {
    if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '/' || c == ' ' {
        out.push(c);
    } else if c.is_ascii_punctuation() {
        out.push('\\');
        out.push(c);
    } else {
        // Non-ASCII letters stand for themselves; anything unusual is escaped.
        if c.is_alphanumeric() {
            out.push(c);
        } else {
            out.push_str(&hex(c));
        }
    }
}

/// The ranges of a class, minus `/` when the separator may not match;
/// reversed ranges match nothing in `glob` and are dropped.
fn class_ranges(set: &[(char, char)], no_slash: bool) -> Vec<(char, char)> {
    let mut out = Vec::new();
    for &(a, b) in set {
        if a > b {
            continue;
        }
        if no_slash && a <= '/' && '/' <= b {
            if a < '/' {
                out.push((a, char::from(b'/' - 1)));
            }
            if '/' < b {
                out.push((char::from(b'/' + 1), b));
            }
        } else {
            out.push((a, b));
        }
    }
    out
}

fn class(ranges: &[(char, char)], negated: bool, out: &mut String) {
    if ranges.is_empty() && !negated {
        // Matches no character.
        out.push_str("[^\\x{0}-\\x{10FFFF}]");
        return;
    }
    out.push('[');
    if negated {
        out.push('^');
    }
    for &(a, b) in ranges {
        out.push_str(&hex(a));
        if a != b {
            out.push('-');
            out.push_str(&hex(b));
        }
    }
    out.push(']');
}

/// Whether every token can match the empty string.
fn all_may_be_empty(tokens: &[Token]) -> bool {
    tokens
        .iter()
        .all(|t| matches!(t, Token::AnySequence | Token::AnyRecursiveSequence))
}

/// The anchored RE2 expression that matches exactly what the glob matches
/// (case-sensitively, `require_literal_separator` when `path_like`), or
/// `None` for a glob `glob::Pattern` refuses.
pub fn glob_to_re2(pattern: &str, path_like: bool) -> Option<String> {
    let tokens = tokens(pattern)?;
    // `(?s)`: a `.` matches a newline too, as `*` and `?` do.
    let mut out = String::from("(?s)^");
    for (i, t) in tokens.iter().enumerate() {
        match t {
            Token::Char(c) => literal(*c, &mut out),
            Token::AnyChar => out.push_str(if path_like { "[^/]" } else { "." }),
            Token::AnySequence => out.push_str(if path_like { "[^/]*" } else { ".*" }),
            // `glob` tries the rest of the pattern at the start and after
            // each `/`; having consumed everything, the rest must match the
            // empty string.
            Token::AnyRecursiveSequence => {
                if all_may_be_empty(&tokens[i + 1..]) {
                    out.push_str(".*");
                } else {
                    out.push_str("(?:.*/)?");
                }
            }
            Token::Within(set) => class(&class_ranges(set, path_like), false, &mut out),
            Token::Except(set) => {
                let mut ranges = class_ranges(set, false);
                if path_like {
                    ranges.push(('/', '/'));
                }
                class(&ranges, true, &mut out);
            }
        }
    }
    out.push('$');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::glob_to_re2;

    fn agrees(pattern: &str, path_like: bool, input: &str) -> Result<(), String> {
        let g = glob::Pattern::new(pattern);
        let re = glob_to_re2(pattern, path_like);
        match (g, re) {
            (Err(_), None) => Ok(()),
            (Ok(g), Some(re)) => {
                let r =
                    regex::Regex::new(&re).map_err(|e| format!("{pattern:?} -> {re:?}: {e}"))?;
                let want = g.matches_with(
                    input,
                    glob::MatchOptions {
                        case_sensitive: true,
                        require_literal_separator: path_like,
                        require_literal_leading_dot: false,
                    },
                );
                if r.is_match(input) == want {
                    Ok(())
                } else {
                    Err(format!(
                        "{pattern:?} (path_like {path_like}) on {input:?}: glob {want}, regex {re:?} {}",
                        !want
                    ))
                }
            }
            (g, re) => Err(format!(
                "{pattern:?}: glob parses {}, translation {re:?}",
                g.is_ok()
            )),
        }
    }

    #[test]
    fn corner_cases_agree_with_the_glob_crate() {
        let cases = [
            ("train*", "train-2"),
            ("train*", "outer/train"),
            ("outer/**", "outer/a/b"),
            ("outer/**", "outer/"),
            ("outer/**/x", "outer/x"),
            ("outer/**/x", "outer/a/b/x"),
            ("**/x", "x"),
            ("**/x", "a/x"),
            ("**", "a/b"),
            ("**/*", "a/b"),
            ("a/**/*", "a"),
            ("[!a]", "/"),
            ("[/a]", "/"),
            ("[.-0]", "/"),
            ("[z-a]", "b"),
            ("[]a]", "]"),
            ("[!]a]", "b"),
            ("a.b+c(d)", "a.b+c(d)"),
            ("a.b", "axb"),
            ("*pytorch*", "docker.io/pytorch/pytorch:2.1"),
            ("é*", "éa"),
            ("a**", "a"),
            ("***", "a"),
            ("[", "["),
            ("[!]", "x"),
            ("?", "\n"),
        ];
        for (p, s) in cases {
            for path_like in [true, false] {
                agrees(p, path_like, s).unwrap();
            }
        }
    }

    /// Globs and inputs drawn from the characters that matter.
    #[test]
    fn random_globs_agree_with_the_glob_crate() {
        const PAT: &[char] = &['a', 'b', '/', '*', '?', '[', ']', '!', '-', '.', '0'];
        const TEXT: &[char] = &['a', 'b', '/', '-', '.', '0', '*', '['];
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut failures = Vec::new();
        for _ in 0..6_000 {
            let p: String = (0..next(7)).map(|_| PAT[next(PAT.len())]).collect();
            let s: String = (0..next(7)).map(|_| TEXT[next(TEXT.len())]).collect();
            for path_like in [true, false] {
                if let Err(e) = agrees(&p, path_like, &s) {
                    failures.push(e);
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{} disagreements, first: {:#?}",
            failures.len(),
            &failures[..failures.len().min(5)]
        );
    }
}
