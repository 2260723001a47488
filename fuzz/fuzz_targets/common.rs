#![allow(dead_code)]
//! Shared pieces of the fuzz targets: an arbitrary YAML value and policies
//! built from a small vocabulary (so that most inputs are valid policies).

use arbitrary::{Arbitrary, Unstructured};
use kfsched_yaml::Value;

const WORDS: &[&str] = &[
    "",
    "a",
    "key",
    "true",
    "yes",
    "no",
    "null",
    "~",
    "10",
    "3.5",
    "0x1f",
    "1.8.22",
    "a b",
    "a: b",
    "#x",
    "- x",
    "caf\u{e9}",
    "\u{2014}",
    "'q'",
    "\"dq\"",
    "multi\nline",
    " lead",
    "trail ",
    "{a}",
    "[b]",
    "*alias",
    "&anchor",
    "!tag",
    "%dir",
    "@at",
    "`tick",
    "kfsched.dev/pool",
    "nvidia.com/gpu",
    "exec-train",
    "comp-x",
    "---",
    "...",
    "\t",
    "x\ty",
    "\u{feff}",
    "\\back",
    "NoSchedule",
    "Exists",
    "Equal",
    "In",
    "NotIn",
    "very-long-value-that-goes-past-the-eighty-column-limit-of-pyyaml-for-wrapping tests",
];

pub fn word(u: &mut Unstructured) -> arbitrary::Result<String> {
    if u.ratio(1, 8)? {
        return String::arbitrary(u);
    }
    Ok(WORDS[u.choose_index(WORDS.len())?].to_string())
}

pub fn value(u: &mut Unstructured, depth: u32) -> arbitrary::Result<Value> {
    let pick = if depth > 4 {
        u.int_in_range(0..=4)?
    } else {
        u.int_in_range(0..=7)?
    };
    Ok(match pick {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => Value::Int(i64::arbitrary(u)?),
        3 => Value::Float((u.int_in_range(-1000..=1000)? as f64) / 4.0),
        4 => Value::Str(word(u)?),
        5 | 6 => {
            let n = u.int_in_range(0..=4)?;
            let mut m: Vec<(String, Value)> = Vec::new();
            for _ in 0..n {
                let k = word(u)?;
                if !m.iter().any(|(x, _)| *x == k) {
                    m.push((k, value(u, depth + 1)?));
                }
            }
            Value::Map(m)
        }
        _ => {
            let n = u.int_in_range(0..=4)?;
            Value::Seq(
                (0..n)
                    .map(|_| value(u, depth + 1))
                    .collect::<Result<_, _>>()?,
            )
        }
    })
}

/// A policy text from the fuzz input: mostly valid, sometimes not.
pub fn policy(u: &mut Unstructured) -> arbitrary::Result<String> {
    let globs = [
        "*",
        "train*",
        "*/**",
        "**",
        "[ab]*",
        "exec-*",
        "comp-?",
        "pytorch/*",
        "*gpu*",
    ];
    let mut p = String::from(
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: fuzz}\nspec:\n",
    );
    if u.ratio(1, 3)? {
        p.push_str("  nodePools:\n  - name: pool\n    labels: {kfsched.dev/pool: a}\n    taints: [{key: kfsched.dev/pool, value: a, effect: NoSchedule}]\n");
    }
    p.push_str("  rules:\n");
    let rules = u.int_in_range(1..=4)?;
    for i in 0..rules {
        p.push_str(&format!("  - name: r{i}\n"));
        if u.ratio(1, 2)? {
            let key = ["names", "images", "kinds", "pipelines"][u.choose_index(4)?];
            p.push_str(&format!(
                "    match: {{{key}: [\"{}\"]}}\n",
                globs[u.choose_index(globs.len())?]
            ));
        }
        if u.ratio(1, 4)? {
            p.push_str("    strategy: replace\n");
        }
        if u.ratio(1, 4)? {
            p.push_str("    pool: pool\n");
        }
        let mut any = false;
        if u.ratio(1, 2)? {
            any = true;
            p.push_str("    tolerations:\n    - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}\n");
            if u.ratio(1, 2)? {
                p.push_str("    - {operator: Exists}\n    - {key: spot, operator: Exists, effect: NoExecute, tolerationSeconds: 30}\n");
            }
        }
        if u.ratio(1, 2)? {
            any = true;
            p.push_str("    nodeSelector: {disktype: ssd, \"example.com/yes\": \"yes\"}\n");
        }
        if u.ratio(1, 2)? {
            any = true;
            p.push_str("    affinity:\n      nodeAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions: [{key: zone, operator: In, values: [a, b]}]\n");
            if u.ratio(1, 2)? {
                p.push_str(
                    "          - matchFields: [{key: metadata.name, operator: In, values: [n1]}]\n",
                );
            }
            if u.ratio(1, 2)? {
                p.push_str("        preferredDuringSchedulingIgnoredDuringExecution:\n        - {weight: 10, preference: {matchExpressions: [{key: ssd, operator: Exists}]}}\n");
            }
        }
        if u.ratio(1, 5)? {
            any = true;
            p.push_str("      podAntiAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n        - {weight: 5, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}\n");
        }
        if u.ratio(1, 3)? || !any {
            p.push_str(
                "    podLabels: {team: ml}\n    podAnnotations: {example.com/note: \"x y\"}\n",
            );
        }
    }
    Ok(p)
}
