//! `check`'s output: text for people, JSON (and YAML) for scripts. The
//! JSON's `components[]` objects carry at least `file`, `component`,
//! `names`, `nodes` and `message`, which scripts rely on.

use serde_json::{Value as Json, json};

use k8s_openapi::api::core::v1::Toleration;

use super::node::{Nodes, Source};
use super::{ComponentCheck, Report};

/// How many node names the text shows before `and N more`.
const SHOWN: usize = 5;

/// A toleration as written in YAML flow style: `{key: gpu, operator: Exists, effect: NoSchedule}`.
pub fn toleration(t: &Toleration) -> String {
    let mut parts = Vec::new();
    for (k, v) in [
        ("key", t.key.clone()),
        ("operator", t.operator.clone()),
        ("value", t.value.clone()),
        ("effect", t.effect.clone()),
        (
            "tolerationSeconds",
            t.toleration_seconds.map(|s| s.to_string()),
        ),
    ] {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            parts.push(format!("{k}: {v}"));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// An amount as the scheduler counts it, in readable units.
pub fn amount(name: &str, v: i64) -> String {
    match name {
        "cpu" if v % 1000 == 0 => (v / 1000).to_string(),
        "cpu" => format!("{v}m"),
        "memory" | "ephemeral-storage" => {
            for (unit, shift) in [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
                if v >= 1 << shift && v % (1 << shift) == 0 {
                    return format!("{}{unit}", v >> shift);
                }
            }
            v.to_string()
        }
        _ => v.to_string(),
    }
}

/// The first `n` items, then how many more.
pub fn list_some(items: &[&str], n: usize) -> String {
    if items.len() <= n {
        return items.join(", ");
    }
    format!("{} and {} more", items[..n].join(", "), items.len() - n)
}

/// Where the nodes came from, in words.
pub fn describe_nodes(nodes: &Nodes) -> String {
    let n = nodes.nodes.len();
    let cordoned = nodes.nodes.iter().filter(|x| x.unschedulable).count();
    let count = format!(
        "{n} node{}{}",
        if n == 1 { "" } else { "s" },
        if cordoned > 0 {
            format!(" ({cordoned} cordoned)")
        } else {
            String::new()
        }
    );
    match &nodes.source {
        Source::Pools(p) => format!(
            "{} pool{} of {p} as nodes (their labels and taints; resources are not judged for pools)",
            n,
            if n == 1 { "" } else { "s" }
        ),
        Source::Snapshot(f) | Source::Live(f) => {
            let from = match &nodes.source {
                Source::Snapshot(_) => format!("the snapshot {f}"),
                _ => format!("the cluster at {f}"),
            };
            let usage = if nodes.usage {
                "requests judged against allocatable minus what the pods on each node request"
            } else {
                "requests judged against allocatable; the pods already running are not counted (--usage counts them)"
            };
            format!("{count} from {from}; {usage}")
        }
    }
}

/// Why a pod for another scheduler is not judged.
pub fn other_scheduler(name: &str) -> String {
    format!(
        "its schedulerName is {name:?}: that scheduler places it, and kube-scheduler leaves it alone (it schedules only pods naming its profiles, {})",
        crate::merge::DEFAULT_SCHEDULER
    )
}

/// The text report.
pub fn text(report: &Report, nodes: &Nodes) -> String {
    let mut out = String::new();
    let mut file: Option<&str> = None;
    for c in &report.components {
        if file != Some(c.file.as_str()) {
            out.push_str(&c.file);
            out.push('\n');
            file = Some(&c.file);
        }
        component_text(c, nodes, &mut out);
    }
    let total = report.components.len();
    let refused = report
        .components
        .iter()
        .filter(|c| c.pod.refused.is_some())
        .count();
    let failing = report.components.iter().filter(|c| !c.ok()).count() - refused;
    let others = report
        .components
        .iter()
        .filter(|c| c.pod.refused.is_none() && c.pod.other_scheduler().is_some())
        .count();
    let pooled = matches!(nodes.source, Source::Pools(_));
    out.push_str(&format!("nodes: {}\n", describe_nodes(nodes)));
    let s = |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
    let mut parts = Vec::new();
    if failing > 0 {
        parts.push(if pooled {
            format!(
                "{failing} {} a pool its rules name",
                s(failing, "misses", "miss")
            )
        } else {
            format!("{failing} {} no node", s(failing, "fits", "fit"))
        });
    }
    if refused > 0 {
        parts.push(format!("{refused} refused by the API server"));
    }
    if parts.is_empty() {
        let judged = if others > 0 { " judged" } else { "" };
        parts.push(if pooled {
            format!("each{judged} lands in the pools its rules name")
        } else {
            format!("every one{judged} fits")
        });
    }
    if others > 0 {
        parts.push(format!("{others} not judged (another scheduler places it)"));
    }
    let verdict = parts.join("; ");
    out.push_str(&format!(
        "{total} component{}: {verdict}\n",
        s(total, "", "s")
    ));
    out
}

fn component_text(c: &ComponentCheck, nodes: &Nodes, out: &mut String) {
    let v = &c.verdict;
    let names = |idx: &[usize]| -> Vec<&str> {
        idx.iter().map(|&i| nodes.nodes[i].name.as_str()).collect()
    };
    let what = if matches!(nodes.source, Source::Pools(_)) {
        "pool"
    } else {
        "node"
    };
    if let Some(r) = &c.pod.refused {
        out.push_str(&format!("  {}: {r}\n", c.label));
    } else if let Some(s) = c.pod.other_scheduler() {
        out.push_str(&format!(
            "  {}: not judged: {}\n",
            c.label,
            other_scheduler(s)
        ));
        out.push_str(&format!(
            "      kube-scheduler's filters would fit {} of {} {what}s{}\n",
            v.fits.len(),
            nodes.nodes.len(),
            if v.fits.is_empty() {
                String::new()
            } else {
                format!(": {}", list_some(&names(&v.fits), SHOWN))
            }
        ));
    } else if c.pool_check && c.pools.is_empty() {
        out.push_str(&format!("  {}: no rule puts it in a pool\n", c.label));
    } else if v.fits.is_empty() {
        out.push_str(&format!("  {}: fits no {what}\n", c.label));
        if let Some(m) = &v.message {
            out.push_str(&format!("      {m}\n"));
        }
    } else {
        out.push_str(&format!(
            "  {}: fits {} of {} {what}s: {}\n",
            c.label,
            v.fits.len(),
            nodes.nodes.len(),
            list_some(&names(&v.fits), SHOWN)
        ));
        if !v.preferred.is_empty() {
            out.push_str(&format!(
                "      preferred (node affinity score {}): {}\n",
                v.preferred_score,
                list_some(&names(&v.preferred), SHOWN)
            ));
        }
    }
    for p in &c.pools {
        if !p.lands {
            out.push_str(&format!(
                "      error: rule {:?} puts it in pool {:?}, where it does not fit\n",
                p.rule, p.pool
            ));
        }
    }
    for w in &c.warnings {
        out.push_str(&format!("      warning: {w}\n"));
    }
    for u in &c.pod.unjudged {
        out.push_str(&format!("      not judged: {u}\n"));
    }
}

/// The JSON report: `{"components": [...], "nodes": {...}}`.
pub fn json(report: &Report, nodes: &Nodes) -> Json {
    let components: Vec<Json> = report
        .components
        .iter()
        .map(|c| component_json(c, nodes, true))
        .collect();
    let mut j = json!({"components": components});
    if let (Some(m), Json::Object(tail)) = (j.as_object_mut(), tail_json(report, nodes)) {
        m.extend(tail);
    }
    j
}

/// What follows the components: where the nodes came from, and warnings.
fn tail_json(report: &Report, nodes: &Nodes) -> Json {
    let source = match &nodes.source {
        Source::Live(s) => json!({"live": s}),
        Source::Snapshot(f) => json!({"snapshot": f}),
        Source::Pools(p) => json!({"pools": p}),
    };
    json!({
        "nodes": {
            "source": source,
            "count": nodes.nodes.len(),
            "resourcesJudged": nodes.resources_known(),
            "usageCounted": nodes.usage,
        },
        "warnings": report.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

/// The marker `write_json` puts where a component's node list goes.
const NODES_MARK: &str = "\u{0}nodes\u{0}";

/// Writes the JSON report, as [`json()`] builds it and `serde_json` prints it
/// pretty, without building it whole: a list of thousands of node names is
/// rendered once per distinct verdict and written for every component that
/// shares it.
pub fn write_json(
    report: &Report,
    nodes: &Nodes,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut rendered: kfsched_yaml::hash::HashMap<*const super::Verdict, String> =
        Default::default();
    writeln!(out, "{{\n  \"components\": [")?;
    for (i, c) in report.components.iter().enumerate() {
        let mut j = component_json(c, nodes, false);
        j["nodes"] = Json::String(NODES_MARK.into());
        let text = serde_json::to_string_pretty(&j).map_err(std::io::Error::other)?;
        let list = rendered
            .entry(std::sync::Arc::as_ptr(&c.verdict))
            .or_insert_with(|| {
                let names: Vec<String> = c
                    .verdict
                    .fits
                    .iter()
                    .map(|&i| format!("        {}", Json::String(nodes.nodes[i].name.clone())))
                    .collect();
                if names.is_empty() {
                    "[]".to_string()
                } else {
                    format!("[\n{}\n      ]", names.join(",\n"))
                }
            });
        let mark = Json::String(NODES_MARK.into()).to_string();
        for (n, line) in text.lines().enumerate() {
            if n > 0 {
                out.write_all(b"\n")?;
            }
            out.write_all(b"    ")?;
            match line.find(&mark) {
                Some(at) => {
                    out.write_all(&line.as_bytes()[..at])?;
                    out.write_all(list.as_bytes())?;
                    out.write_all(&line.as_bytes()[at + mark.len()..])?;
                }
                None => out.write_all(line.as_bytes())?,
            }
        }
        out.write_all(if i + 1 < report.components.len() {
            b",\n"
        } else {
            b"\n"
        })?;
    }
    let tail =
        serde_json::to_string_pretty(&tail_json(report, nodes)).map_err(std::io::Error::other)?;
    // `tail` is `{\n  "nodes": ...\n}`: continue the object after the list.
    let inner = tail
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_end();
    writeln!(out, "  ],{}\n}}", inner)
}

fn component_json(c: &ComponentCheck, nodes: &Nodes, with_nodes: bool) -> Json {
    let v = &c.verdict;
    let names = |idx: &[usize]| -> Vec<&str> {
        idx.iter().map(|&i| nodes.nodes[i].name.as_str()).collect()
    };
    let r = c.pod.requests();
    let mut requests = serde_json::Map::new();
    for (name, x) in [
        ("cpu", r.milli_cpu),
        ("memory", r.memory),
        ("ephemeral-storage", r.ephemeral_storage),
    ] {
        if x > 0 {
            requests.insert(name.into(), json!(amount(name, x)));
        }
    }
    for (name, x) in &r.scalar {
        if *x > 0 {
            requests.insert(name.clone(), json!(x.to_string()));
        }
    }
    let pools: Vec<Json> = c
        .pools
        .iter()
        .map(|p| json!({"rule": p.rule, "pool": p.pool, "fits": p.lands}))
        .collect();
    json!({
        "file": c.file,
        "document": c.document,
        "component": c.name(),
        "label": c.label,
        "kind": c.kind,
        "pipelines": c.pipelines,
        "names": c.names,
        "ok": c.ok(),
        "nodes": if with_nodes { json!(names(&v.fits)) } else { Json::Null },
        "preferred": names(&v.preferred),
        "preferredScore": v.preferred_score,
        "message": v.message,
        "rejected": v.rejected,
        "requests": requests,
        "pools": pools,
        "warnings": c.warnings,
        "judged": c.pod.other_scheduler().is_none(),
        "refused": c.pod.refused,
        "notJudged": c.pod.unjudged,
        "pod": {"spec": c.pod.spec_json()},
    })
}
