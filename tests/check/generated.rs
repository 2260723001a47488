//! Generated scenarios: random worlds of nodes (labels, taints, cordons,
//! allocatable with GPUs and pod limits, pods already running on some) and random components in every
//! format (Pod, Deployment, Job, Argo container / script / containerSet
//! templates with workflow-level fields, KFP v2 IR with its platform
//! config) with random tolerations, selectors, required terms of every
//! operator (and `matchFields`), preferred terms, topology spread
//! constraints (in a pod spec or an Argo template's podSpecPatch) and
//! resources, from a seed. `KFSCHED_CHECK_CASES` cases (default 500) in worlds of 100, and
//! `KFSCHED_CHECK_SEED` (default: fixed) to explore others. Every case
//! must agree with the scheduler.

use std::fmt::Write as _;
use std::time::Instant;

use super::harness::{Compared, NodeSpec, World, coverage, record, summary};
use crate::node::cluster::{exclusive, rt};

/// A small, deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const ZONES: &[&str] = &["a", "b", "c"];
const POOLS: &[&str] = &["cpu", "gpu", "mem"];
const GENS: &[&str] = &["1", "5", "7", "007", "x"];
const DISKS: &[&str] = &["ssd", "hdd"];
const TAINTS: &[(&str, u64)] = &[
    ("gpu=true:NoSchedule", 30),
    ("dedicated=ml:NoExecute", 15),
    ("spot=true:PreferNoSchedule", 20),
    ("team:NoSchedule", 10),
];

fn world(rng: &mut Rng, n: usize) -> Vec<NodeSpec> {
    (0..n)
        .map(|i| {
            let mut labels = Vec::new();
            for (key, values, p) in [
                ("zone", ZONES, 80),
                ("pool", POOLS, 90),
                ("gen", GENS, 60),
                ("disk", DISKS, 50),
            ] {
                if rng.chance(p) {
                    labels.push((key.to_string(), rng.pick(values).to_string()));
                }
            }
            let taints = TAINTS
                .iter()
                .filter(|(_, p)| rng.chance(*p))
                .map(|(t, _)| t.to_string())
                .collect();
            let mut alloc = vec![
                (
                    "cpu".to_string(),
                    rng.pick(&["500m", "1", "2", "4"]).to_string(),
                ),
                (
                    "memory".to_string(),
                    rng.pick(&["512Mi", "2Gi", "8Gi"]).to_string(),
                ),
            ];
            match rng.below(20) {
                0 => {}
                1 => alloc.push(("pods".into(), "0".into())),
                _ => alloc.push(("pods".into(), "110".into())),
            }
            if rng.chance(40) {
                alloc.push((
                    "nvidia.com/gpu".into(),
                    rng.pick(&["1", "2", "4"]).to_string(),
                ));
            }
            NodeSpec {
                name: format!("n{i}"),
                labels,
                taints,
                allocatable: alloc,
                cordoned: rng.chance(12),
            }
        })
        .collect()
}

/// A component's scheduling and resources, in Kubernetes' shape.
struct Gen {
    tolerations: Vec<String>,
    selector: Vec<(String, String)>,
    required: Vec<String>,
    preferred: Vec<(u32, String)>,
    cpu: Option<(&'static str, &'static str)>,
    memory: Option<(&'static str, &'static str)>,
    gpu: Option<u32>,
    init_cpu: Option<(&'static str, bool)>,
    /// Topology spread constraints: (topologyKey, whenUnsatisfiable).
    spread: Vec<(&'static str, &'static str)>,
}

const TOLERATIONS: &[&str] = &[
    "{key: gpu, operator: Exists}",
    "{key: gpu, value: 'true', effect: NoSchedule}",
    "{key: gpu, value: ture, effect: NoSchedule}",
    "{key: dedicated, operator: Equal, value: ml, effect: NoExecute}",
    "{key: team, operator: Exists, effect: NoSchedule}",
    "{key: node.kubernetes.io/unschedulable, operator: Exists, effect: NoSchedule}",
    "{key: spot, operator: Exists, effect: PreferNoSchedule}",
    "{operator: Exists}",
];

fn expression(rng: &mut Rng) -> String {
    let (key, values): (&str, &[&str]) = *rng.pick(&[
        ("zone", ZONES),
        ("pool", POOLS),
        ("gen", GENS),
        ("disk", DISKS),
        ("missing", &["x"][..]),
    ]);
    match rng.below(6) {
        0 | 1 => {
            let n = 1 + rng.below(2);
            let vs: Vec<String> = (0..n).map(|_| format!("'{}'", rng.pick(values))).collect();
            format!(
                "{{key: {key}, operator: {}, values: [{}]}}",
                if rng.below(2) == 0 { "In" } else { "NotIn" },
                vs.join(", ")
            )
        }
        2 => format!("{{key: {key}, operator: Exists}}"),
        3 => format!("{{key: {key}, operator: DoesNotExist}}"),
        _ => format!(
            "{{key: gen, operator: {}, values: ['{}']}}",
            if rng.below(2) == 0 { "Gt" } else { "Lt" },
            rng.pick(&["1", "5", "6", "7", "1.5"])
        ),
    }
}

fn term(rng: &mut Rng, nodes: &[String]) -> String {
    if rng.chance(12) {
        let name = if rng.chance(80) {
            rng.pick(nodes).clone()
        } else {
            "no-such-node".into()
        };
        let op = if rng.chance(75) { "In" } else { "NotIn" };
        return format!(
            "{{matchFields: [{{key: metadata.name, operator: {op}, values: ['{name}']}}]}}"
        );
    }
    let n = 1 + rng.below(2);
    let exprs: Vec<String> = (0..n).map(|_| expression(rng)).collect();
    format!("{{matchExpressions: [{}]}}", exprs.join(", "))
}

fn component(rng: &mut Rng, nodes: &[String]) -> Gen {
    let nt = rng.below(4);
    let mut tolerations: Vec<String> = (0..nt).map(|_| rng.pick(TOLERATIONS).to_string()).collect();
    tolerations.dedup();
    let mut selector = Vec::new();
    for _ in 0..rng.below(3).saturating_sub(1) {
        let (k, vs): (&str, &[&str]) =
            *rng.pick(&[("zone", ZONES), ("pool", POOLS), ("disk", DISKS)]);
        if !selector.iter().any(|(x, _): &(String, String)| x == k) {
            selector.push((k.to_string(), rng.pick(vs).to_string()));
        }
    }
    let required = if rng.chance(45) {
        (0..1 + rng.below(2)).map(|_| term(rng, nodes)).collect()
    } else {
        Vec::new()
    };
    let preferred = (0..rng.below(3))
        .map(|_| (1 + rng.below(100) as u32, term(rng, nodes)))
        .collect();
    Gen {
        tolerations,
        selector,
        required,
        preferred,
        cpu: rng.chance(50).then(|| {
            *rng.pick(&[
                ("100m", "request"),
                ("1", "request"),
                ("1500m", "limit"),
                ("3", "request"),
                ("4", "limit"),
            ])
        }),
        memory: rng.chance(40).then(|| {
            *rng.pick(&[
                ("64Mi", "request"),
                ("1Gi", "limit"),
                ("3Gi", "request"),
                ("6Gi", "request"),
            ])
        }),
        gpu: rng.chance(25).then(|| 1 + rng.below(3) as u32),
        init_cpu: rng
            .chance(15)
            .then(|| (*rng.pick(&["500m", "1", "2"]), rng.chance(50))),
        spread: {
            let mut v: Vec<(&str, &str)> = Vec::new();
            for _ in 0..usize::from(rng.chance(30)) + usize::from(rng.chance(10)) {
                let pair = (
                    *rng.pick(&["zone", "disk", "gen", "rack"]),
                    *rng.pick(&["DoNotSchedule", "ScheduleAnyway"]),
                );
                if !v.contains(&pair) {
                    v.push(pair);
                }
            }
            v
        },
    }
}

/// The spread constraints as a flow list.
fn spread(g: &Gen) -> Option<String> {
    (!g.spread.is_empty()).then(|| {
        let items: Vec<String> = g
            .spread
            .iter()
            .map(|(k, w)| {
                format!("{{maxSkew: 1, topologyKey: {k}, whenUnsatisfiable: {w}, labelSelector: {{matchLabels: {{app: d}}}}}}")
            })
            .collect();
        format!("[{}]", items.join(", "))
    })
}

/// `resources:` as a flow map, or `None`.
fn resources(g: &Gen) -> Option<String> {
    let mut req = Vec::new();
    let mut lim = Vec::new();
    for (name, v) in [("cpu", g.cpu), ("memory", g.memory)] {
        if let Some((q, kind)) = v {
            if kind == "request" {
                req.push(format!("{name}: '{q}'"))
            } else {
                lim.push(format!("{name}: '{q}'"))
            }
        }
    }
    if let Some(n) = g.gpu {
        lim.push(format!("nvidia.com/gpu: '{n}'"));
    }
    if req.is_empty() && lim.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if !req.is_empty() {
        parts.push(format!("requests: {{{}}}", req.join(", ")));
    }
    if !lim.is_empty() {
        parts.push(format!("limits: {{{}}}", lim.join(", ")));
    }
    Some(format!("{{{}}}", parts.join(", ")))
}

/// The scheduling lines of a pod spec at `indent`.
fn pod_fields(g: &Gen, indent: &str) -> String {
    let mut s = String::new();
    if !g.tolerations.is_empty() {
        let _ = writeln!(s, "{indent}tolerations: [{}]", g.tolerations.join(", "));
    }
    if !g.selector.is_empty() {
        let pairs: Vec<String> = g
            .selector
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let _ = writeln!(s, "{indent}nodeSelector: {{{}}}", pairs.join(", "));
    }
    if !g.required.is_empty() || !g.preferred.is_empty() {
        let _ = writeln!(s, "{indent}affinity:\n{indent}  nodeAffinity:");
        if !g.required.is_empty() {
            let _ = writeln!(
                s,
                "{indent}    requiredDuringSchedulingIgnoredDuringExecution:\n{indent}      nodeSelectorTerms: [{}]",
                g.required.join(", ")
            );
        }
        if !g.preferred.is_empty() {
            let p: Vec<String> = g
                .preferred
                .iter()
                .map(|(w, t)| format!("{{weight: {w}, preference: {t}}}"))
                .collect();
            let _ = writeln!(
                s,
                "{indent}    preferredDuringSchedulingIgnoredDuringExecution: [{}]",
                p.join(", ")
            );
        }
    }
    s
}

fn containers(g: &Gen, indent: &str) -> String {
    let res = resources(g)
        .map(|r| format!(", resources: {r}"))
        .unwrap_or_default();
    let mut s = format!("{indent}containers: [{{name: main, image: busybox{res}}}]\n");
    if let Some((cpu, sidecar)) = g.init_cpu {
        let policy = if sidecar {
            ", restartPolicy: Always"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "{indent}initContainers: [{{name: setup, image: busybox{policy}, resources: {{requests: {{cpu: '{cpu}'}}}}}}]"
        );
    }
    s
}

fn workload(g: &Gen, rng: &mut Rng) -> String {
    let spread_at = |indent: &str| {
        spread(g)
            .map(|s| format!("{indent}topologySpreadConstraints: {s}\n"))
            .unwrap_or_default()
    };
    match rng.below(3) {
        0 => format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n{}{}{}",
            containers(g, "  "),
            pod_fields(g, "  "),
            spread_at("  ")
        ),
        1 => format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec:\n{}{}{}",
            containers(g, "      "),
            pod_fields(g, "      "),
            spread_at("      ")
        ),
        _ => format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n{}{}{}",
            containers(g, "      "),
            pod_fields(g, "      "),
            spread_at("      ")
        ),
    }
}

fn argo(g: &Gen, rng: &mut Rng) -> String {
    let res = resources(g)
        .map(|r| format!(", resources: {r}"))
        .unwrap_or_default();
    let body = match rng.below(3) {
        0 => format!("    container: {{image: busybox{res}}}\n"),
        1 => format!("    script: {{image: busybox, source: echo{res}}}\n"),
        _ => format!(
            "    containerSet:\n      containers:\n      - {{name: a, image: busybox{res}}}\n      - {{name: b, image: busybox, resources: {{requests: {{cpu: 100m}}}}}}\n"
        ),
    };
    let init = g.init_cpu.map(|(cpu, _)| format!("    initContainers: [{{name: setup, image: busybox, resources: {{requests: {{cpu: '{cpu}'}}}}}}]\n")).unwrap_or_default();
    // The scheduling goes on the workflow or on the template.
    let (wf, mut tmpl) = if rng.chance(40) {
        (pod_fields(g, "  "), String::new())
    } else {
        (String::new(), pod_fields(g, "    "))
    };
    // An Argo template has no spread constraints of its own: its podSpecPatch carries them.
    if let Some(s) = spread(g) {
        tmpl.push_str(&format!(
            "    podSpecPatch: '{{\"topologySpreadConstraints\": {}}}'\n",
            s.replace('\'', "")
        ));
    }
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {{name: wf}}\nspec:\n  entrypoint: main\n{wf}  templates:\n  - name: main\n{tmpl}{init}{body}"
    )
}

fn kfp(g: &Gen) -> String {
    let mut res = String::new();
    for (name, v) in [("Cpu", g.cpu), ("Memory", g.memory)] {
        if let Some((q, kind)) = v {
            let which = if kind == "request" {
                "Request"
            } else {
                "Limit"
            };
            let _ = writeln!(res, "          resource{name}{which}: '{q}'");
        }
    }
    if let Some(n) = g.gpu {
        let _ = writeln!(
            res,
            "          accelerator: {{resourceType: nvidia.com/gpu, resourceCount: '{n}'}}"
        );
    }
    let res = if res.is_empty() {
        res
    } else {
        format!("        resources:\n{res}")
    };
    let mut cfg = String::new();
    if !g.tolerations.is_empty() {
        let _ = writeln!(cfg, "          tolerations: [{}]", g.tolerations.join(", "));
    }
    if !g.selector.is_empty() {
        let pairs: Vec<String> = g
            .selector
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let _ = writeln!(
            cfg,
            "          nodeSelector: {{labels: {{{}}}}}",
            pairs.join(", ")
        );
    }
    let mut terms: Vec<String> = g.required.clone();
    terms.extend(
        g.preferred
            .iter()
            .map(|(w, t)| format!("{}, weight: {w}.0}}", t.trim_end_matches('}'))),
    );
    if !terms.is_empty() {
        let _ = writeln!(cfg, "          nodeAffinity: [{}]", terms.join(", "));
    }
    let mut t = format!(
        "components:\n  comp-t:\n    executorLabel: exec-t\ndeploymentSpec:\n  executors:\n    exec-t:\n      container:\n        image: busybox\n{res}pipelineInfo: {{name: p}}\nroot:\n  dag:\n    tasks:\n      t:\n        componentRef: {{name: comp-t}}\n        taskInfo: {{name: t}}\nschemaVersion: 2.1.0\nsdkVersion: kfp-2.17.3\n"
    );
    if !cfg.is_empty() {
        let _ = write!(
            t,
            "---\nplatforms:\n  kubernetes:\n    deploymentSpec:\n      executors:\n        exec-t:\n{cfg}"
        );
    }
    t
}

fn cases() -> usize {
    std::env::var("KFSCHED_CHECK_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn seed() -> u64 {
    std::env::var("KFSCHED_CHECK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x6b66_7363_6865_6421)
}

const PER_WORLD: usize = 100;

#[test]
#[ignore = "needs the control plane: scripts/test.sh starts it"]
fn check_agrees_with_kube_scheduler_on_generated_scenarios() {
    let _all = exclusive();
    let total = cases();
    let seed = seed();
    let mut rng = Rng(seed);
    rt().block_on(async {
        let start = Instant::now();
        let mut all: Vec<Compared> = Vec::new();
        let mut done = 0;
        let mut w = 0;
        while done < total {
            let size = 6 + rng.below(8);
            let specs = world(&mut rng, size);
            let world = World::create(&format!("gen{w}"), &specs).await;
            let names: Vec<String> = specs.iter().map(|s| world.node(&s.name)).collect();
            // Pods already running on some nodes, counted with --usage.
            for name in &names {
                if rng.chance(30) {
                    let cpu = *rng.pick(&["250m", "500m", "1"]);
                    let memory = *rng.pick(&["128Mi", "1Gi"]);
                    world.occupy(name, cpu, memory).await;
                }
            }
            let n = PER_WORLD.min(total - done);
            let mut text = String::new();
            for _ in 0..n {
                let g = component(&mut rng, &names);
                let doc = match rng.below(3) {
                    0 => workload(&g, &mut rng),
                    1 => argo(&g, &mut rng),
                    _ => kfp(&g),
                };
                text.push_str("---\n");
                text.push_str(&doc);
            }
            let got = world
                .compare(&format!("world{w}"), &[("cases.yaml", text)], None)
                .await;
            assert_eq!(got.len(), n, "one component per case");
            all.extend(got);
            world.delete().await;
            done += n;
            w += 1;
        }
        let line = summary(
            &format!("generated: {total} cases (seed {seed}) in {w} worlds"),
            &all,
            start.elapsed(),
        );
        eprintln!("{line}\n  messages with each reason: {}", coverage(&all));
        record(&line);
        let wrong: Vec<String> = all
            .iter()
            .filter(|c| !c.agrees())
            .map(Compared::describe)
            .collect();
        for c in all.iter().filter(|c| !c.whole_message_agrees()) {
            eprintln!("whole message differs: {}", c.describe());
        }
        assert!(
            wrong.is_empty(),
            "{} of {} disagree:\n{}",
            wrong.len(),
            all.len(),
            wrong.join("\n")
        );
    });
}
