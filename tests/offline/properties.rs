//! Properties over every fixture: the output parses, a second run is a
//! no-op, the line diff stays inside the components that were edited, and
//! `--check` exit codes follow SPEC §4; and a long stream of documents is
//! rewritten as each of them is.

use std::path::PathBuf;

use kfsched::policy::Policy;
use kfsched::rewrite::{FileOutcome, process};
use kfsched_core::format::{Component, Doc, Place, detect};
use kfsched_yaml::Tree;
use kfsched_yaml::value::node_value;
use similar::{DiffOp, TextDiff};

use crate::support::{golden_dirs, hand_dirs, rel, run_in, snapshot};

/// (case dir, input file name) for every fixture input.
fn inputs() -> Vec<(PathBuf, &'static str)> {
    let mut v = Vec::new();
    for d in golden_dirs() {
        v.push((d.clone(), "plain.yaml"));
        v.push((d, "expected.yaml"));
    }
    for d in hand_dirs() {
        v.push((d.clone(), "input.yaml"));
        v.push((d, "expected.yaml"));
    }
    v
}

fn outcome(dir: &std::path::Path, name: &str) -> (String, FileOutcome) {
    let policy = Policy::load(&dir.join("policy.yaml")).expect("policy");
    let text = std::fs::read_to_string(dir.join(name)).expect("read");
    let o = process(name, text.as_bytes(), &policy)
        .unwrap_or_else(|d| panic!("{}/{name}: {d:?}", rel(dir)));
    (text, o)
}

#[test]
fn output_parses_and_untouched_documents_keep_their_values() {
    // [KFP v2 pipeline documents, other untouched documents]
    let mut checked = [0, 0];
    for (dir, name) in inputs() {
        let (input, o) = outcome(&dir, name);
        let Some(out) = o.text(input.as_bytes()) else {
            continue;
        };
        let before = Tree::parse(&input).expect("input parses");
        let after = Tree::parse(&out)
            .unwrap_or_else(|e| panic!("{}/{name}: output does not parse: {e}", rel(&dir)));
        assert!(
            after.documents.len() >= before.documents.len(),
            "{}/{name}: documents lost",
            rel(&dir)
        );
        // KFP v2: the pipeline document itself never changes; nor does any
        // other document none of whose components changed (a ConfigMap next
        // to workloads, an unselected workflow).
        for (i, doc) in detect(&before).expect("detect").iter().enumerate() {
            let untouched = match doc {
                Doc::KfpV2(p) if p.manifest.is_none() => true,
                Doc::KfpV2Platform => false,
                _ => o.docs[i].components.iter().all(|c| !c.changed),
            };
            if untouched {
                let (Some(ra), Some(rb)) = (before.documents[i].root, after.documents[i].root)
                else {
                    assert_eq!(
                        before.documents[i].root.is_none(),
                        after.documents[i].root.is_none(),
                        "{}/{name}: document {i} changed",
                        rel(&dir)
                    );
                    continue;
                };
                let a = node_value(&before, ra);
                let b = node_value(&after, rb);
                assert!(a == b, "{}/{name}: document {i} changed", rel(&dir));
                checked[usize::from(!matches!(doc, Doc::KfpV2(_)))] += 1;
            }
        }
    }
    assert!(
        checked[0] > 0 && checked[1] > 0,
        "untouched documents checked: {checked:?}"
    );
}

#[test]
fn a_second_rewrite_changes_nothing() {
    for (dir, name) in inputs() {
        let (input, o) = outcome(&dir, name);
        let Some(out) = o.text(input.as_bytes()) else {
            continue;
        };
        let policy = Policy::load(&dir.join("policy.yaml")).expect("policy");
        let again = process(name, out.as_bytes(), &policy).expect("second run");
        assert!(
            again.output.is_none(),
            "{}/{name}: second rewrite changed the file",
            rel(&dir)
        );
    }
}

/// A stream of hundreds of `kubectl get -o yaml` Lists (4 MB) is rewritten
/// as each of its documents is: past the few thousand examples the
/// indentation is read from, and with the per-document work repeated
/// hundreds of times (run here with overflow checks on).
#[test]
fn a_long_stream_of_lists_rewrites_as_each_list_does() {
    let dir = crate::support::root().join("testdata/cases/kubectl-get-all");
    let policy = Policy::load(&dir.join("policy.yaml")).expect("policy");
    let one = std::fs::read_to_string(dir.join("input.yaml")).expect("read");
    let want = std::fs::read_to_string(dir.join("expected.yaml")).expect("read");
    let copies = 300;
    let stream = vec![one.as_str(); copies].join("---\n");
    let o = process("stream.yaml", stream.as_bytes(), &policy).expect("rewrites");
    let out = o.text(stream.as_bytes()).expect("changes the stream");
    assert!(
        out == vec![want.as_str(); copies].join("---\n"),
        "the stream's output is not its Lists' expected output, one after another"
    );
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// A document's components, a `v1 List`'s those of its items in order, as
/// its report lists them (an object a controller manages is not one).
/// The components of a document with the document (a List's item) that holds each.
fn components(doc: &Doc) -> Vec<(&Doc, &Component)> {
    match doc {
        Doc::List(l) => l.items.iter().flat_map(components).collect(),
        d if d.owner().is_some() => Vec::new(),
        d => d.components().iter().map(|c| (d, c)).collect(),
    }
}

#[test]
fn the_line_diff_touches_only_the_edited_components() {
    let mut checked = 0;
    for (dir, name) in inputs() {
        let (input, o) = outcome(&dir, name);
        let Some(out) = o.text(input.as_bytes()) else {
            continue;
        };
        let out = &out;
        let tree = Tree::parse(&input).expect("parse");
        let docs = detect(&tree).expect("detect");
        let total = input.lines().count();
        // Line ranges (0-based, inclusive of one line past the end for insertions).
        let mut regions: Vec<(usize, usize)> = Vec::new();
        for (doc, report) in docs.iter().zip(&o.docs) {
            for ((doc, c), r) in components(doc).into_iter().zip(&report.components) {
                if !r.changed {
                    continue;
                }
                let node = match &c.place {
                    Place::Argo { template, .. } => Some(*template),
                    Place::Workload(pt) => Some(pt.template),
                    Place::KfpV2 { .. } => None,
                };
                match node {
                    Some(n) => {
                        let nd = tree.node(n);
                        regions.push((
                            line_of(&input, nd.start as usize),
                            line_of(&input, nd.end as usize) + 1,
                        ));
                    }
                    None => {
                        // KFP v2 writes only the platform document (after the
                        // pipeline document), or a manifest's `spec.platformSpec`.
                        let (start, end) = match doc {
                            Doc::KfpV2(p) => match &p.manifest {
                                Some(m) => {
                                    let spec_end = line_of(&input, tree.node(m.spec).end as usize);
                                    let start = p.platform.map_or(spec_end, |r| {
                                        line_of(&input, tree.node(r).start as usize)
                                    });
                                    (start, spec_end + 1)
                                }
                                None => (
                                    p.platform
                                        .map(|r| line_of(&input, tree.node(r).start as usize))
                                        .unwrap_or(total),
                                    total + 1,
                                ),
                            },
                            _ => (total, total + 1),
                        };
                        regions.push((start.saturating_sub(1), end));
                    }
                }
            }
        }
        let diff = TextDiff::from_lines(input.as_str(), out.as_str());
        for op in diff.ops() {
            let (old, _) = match op {
                DiffOp::Equal { .. } => continue,
                other => (other.old_range(), other.new_range()),
            };
            let inside = regions
                .iter()
                .any(|&(s, e)| old.start >= s && old.end <= e + 1);
            assert!(
                inside,
                "{}/{name}: change at input lines {}..{} is outside every edited component {:?}",
                rel(&dir),
                old.start + 1,
                old.end + 1,
                regions
            );
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} fixtures changed");
}

#[test]
fn check_exits_1_when_a_file_would_change_0_when_not_and_writes_nothing() {
    for dir in golden_dirs().into_iter().chain(hand_dirs()) {
        let input = if dir.join("plain.yaml").exists() {
            "plain.yaml"
        } else {
            "input.yaml"
        };
        let before = snapshot(&dir);
        let r = run_in(
            &dir,
            &["rewrite", "--check", "-p", "policy.yaml", input],
            None,
            &[],
        );
        assert_eq!(r.code, 1, "{}: --check on {input}: {}", rel(&dir), r.stderr);
        assert!(
            r.stderr.ends_with(&format!("would rewrite {input}\n")),
            "{}: {}",
            rel(&dir),
            r.stderr
        );
        let r = run_in(
            &dir,
            &["rewrite", "--check", "-p", "policy.yaml", "expected.yaml"],
            None,
            &[],
        );
        assert_eq!(
            r.code,
            0,
            "{}: --check on expected.yaml: {}",
            rel(&dir),
            r.stderr
        );
        assert!(r.stdout.is_empty());
        assert!(
            snapshot(&dir) == before,
            "{}: --check wrote something",
            rel(&dir)
        );
    }
}

#[test]
fn the_kfp_v2_skimmer_reads_exactly_what_the_parser_reads() {
    use kfsched_core::format::TreeNode;
    use kfsched_core::format::kfp_v2::{PROJECTION, Pipeline};
    use kfsched_yaml::skim::project;
    let mut skimmed = 0;
    for (dir, name) in inputs() {
        let text = std::fs::read_to_string(dir.join(name)).expect("read");
        let tree = Tree::parse(&text).expect("parse");
        let Some(Doc::KfpV2(_)) = detect(&tree).expect("detect").into_iter().next() else {
            continue;
        };
        let root = tree.documents[0].root.expect("root");
        let full = Pipeline::parse(
            TreeNode {
                tree: &tree,
                id: root,
            },
            None,
            None,
        );
        let proj = project(&text, PROJECTION)
            .unwrap_or_else(|| panic!("{}/{name}: an SDK-written file must skim", rel(&dir)));
        let fast = Pipeline::parse(&proj.value, None, None);
        assert_eq!(
            format!("{:?}", fast.components),
            format!("{:?}", full.components),
            "{}/{name}",
            rel(&dir)
        );
        assert_eq!(
            format!("{:?}", fast.skipped),
            format!("{:?}", full.skipped),
            "{}/{name}",
            rel(&dir)
        );
        assert_eq!(
            fast.executor_tasks,
            full.executor_tasks,
            "{}/{name}",
            rel(&dir)
        );
        assert_eq!(
            (fast.name, fast.sdk),
            (full.name, full.sdk),
            "{}/{name}",
            rel(&dir)
        );
        // The document ends where the parser's next document starts.
        match tree.documents.get(1) {
            Some(d) => assert_eq!(proj.end, d.start as usize, "{}/{name}", rel(&dir)),
            None => assert_eq!(proj.end, text.len(), "{}/{name}", rel(&dir)),
        }
        skimmed += 1;
    }
    assert!(skimmed >= 30, "{skimmed} KFP v2 inputs skimmed");
}

#[test]
fn a_syntax_error_inside_a_skimmed_document_is_still_reported() {
    // The skimmer does not read the embedded sources; the parser still checks them.
    let dir = crate::support::root().join("testdata/golden/corpus-v2/p01_simple_python");
    let text = std::fs::read_to_string(dir.join("plain.yaml")).expect("read");
    let broken = text.replacen("- -c\n", "- \"-c\n", 1);
    assert_ne!(broken, text);
    let policy = Policy::load(&dir.join("policy.yaml")).expect("policy");
    let err =
        process("plain.yaml", broken.as_bytes(), &policy).expect_err("broken YAML is an error");
    assert_eq!(err.len(), 1);
    assert!(err[0].to_string().starts_with("plain.yaml:"), "{}", err[0]);
    assert!(err[0].message.starts_with("invalid YAML: "), "{}", err[0]);
}

/// Nesting is held to `MAX_DEPTH` collections whether a file is skimmed
/// (KFP v2 IR and PipelineVersion files) or parsed whole: at the limit it is
/// read, one level past it refused with the same message the parse gives.
#[test]
fn nesting_past_the_limit_is_refused_in_skimmed_documents_as_in_parsed_ones() {
    use kfsched_yaml::tree::MAX_DEPTH;
    // (case, the line a mapping key is added after, the depth of that
    // key's mapping)
    let cases = [
        ("corpus-v2/p01_simple_python", "pipelineInfo:\n", 2),
        ("pv/basic", "    pipelineInfo:\n", 4),
    ];
    for (case, after, depth) in cases {
        let dir = crate::support::root().join("testdata/golden").join(case);
        let text = std::fs::read_to_string(dir.join("plain.yaml")).expect("read");
        let policy = Policy::load(&dir.join("policy.yaml")).expect("policy");
        let at = text.find(after).expect("the key") + after.len();
        let indent = after.len() - after.trim_start().len() + 2;
        // `deep:` holds a chain of mappings, the deepest `levels` below
        // the mapping `deep` is in.
        let nested = |levels: usize| {
            let mut deep = String::new();
            for i in 0..levels {
                deep.push_str(&" ".repeat(indent + 2 * i));
                deep.push_str(if i + 1 == levels { "z: 1\n" } else { "deep:\n" });
            }
            format!("{}{deep}{}", &text[..at], &text[at..])
        };
        let at_limit = nested(MAX_DEPTH - depth + 1);
        assert!(Tree::parse(&at_limit).is_ok(), "{case}: at the limit");
        process("plain.yaml", at_limit.as_bytes(), &policy)
            .unwrap_or_else(|d| panic!("{case}: nesting at the limit is read: {d:?}"));
        let past = nested(MAX_DEPTH - depth + 2);
        let Err(parsed) = Tree::parse(&past) else {
            panic!("{case}: the parse refuses nesting past the limit");
        };
        let err = process("plain.yaml", past.as_bytes(), &policy).expect_err("refused");
        assert_eq!(err.len(), 1, "{case}");
        assert_eq!(
            err[0].message,
            format!("invalid YAML: {}", parsed.message),
            "{case}"
        );
        assert!(
            err[0]
                .message
                .contains(&format!("nested more than {MAX_DEPTH} deep")),
            "{case}: {}",
            err[0].message
        );
    }
}

/// Values nested to the limit are read, merged and written on the worker
/// threads that rewrite several files at once (2 MiB of stack each; this
/// test runs unoptimised, which takes the most stack): a Pod's
/// `podAffinity` that the policy's affinity is merged beside.
#[test]
fn values_nested_to_the_limit_are_rewritten_on_worker_threads() {
    use kfsched::outcome::{Input, Options};
    use kfsched::rewrite::process_all;
    use kfsched_yaml::tree::MAX_DEPTH;
    let dir = crate::support::root().join("testdata/cases/kubectl-get-all");
    let policy = Policy::load(&dir.join("policy.yaml")).expect("policy");
    // The pod's mapping, `spec`, `affinity` and `podAffinity` hold the chain.
    let mut pod = String::from(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: train-deep\nspec:\n  containers:\n  - name: c\n    image: i\n  affinity:\n    podAffinity:\n",
    );
    let levels = MAX_DEPTH - 4;
    for i in 0..levels {
        pod.push_str(&" ".repeat(6 + i));
        pod.push_str(if i + 1 == levels { "z: 1\n" } else { "x:\n" });
    }
    let inputs: Vec<Input> = (0..4)
        .map(|i| Input {
            file: format!("pod{i}.yaml"),
            bytes: pod.clone().into_bytes(),
        })
        .collect();
    for (i, r) in process_all(&inputs, &policy, &Options::default())
        .into_iter()
        .enumerate()
    {
        let o = r.unwrap_or_else(|d| panic!("pod{i}.yaml: {d:?}"));
        let out = o.text(pod.as_bytes()).expect("the pod is rewritten");
        assert!(out.contains("nodeAffinity:"), "pod{i}.yaml: {out}");
    }
}

/// A small deterministic generator (xorshift), so a failing case can be
/// replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[(self.next() % v.len() as u64) as usize]
    }
    fn chance(&mut self, n: u64) -> bool {
        self.next() % n == 0
    }
}

/// A random rule over `templates`: values kfp 1.8 forces into quotes
/// (`"true"`, `yes`) mixed with plain ones, merge or replace.
fn random_rule(rng: &mut Rng, name: &str, templates: &[String]) -> String {
    const VALUES: &[&str] = &["\"true\"", "\"yes\"", "gpu", "\"on\"", "a100", "\"no\""];
    const KEYS: &[&str] = &["accelerator", "example.com/pool", "tier"];
    let mut r = format!(
        "  - name: {name}\n    match: {{names: [{:?}]}}\n",
        rng.pick(templates)
    );
    if rng.chance(3) {
        r.push_str("    strategy: replace\n");
    }
    let mut any = false;
    if rng.chance(2) {
        r.push_str(&format!(
            "    nodeSelector: {{{}: {}}}\n",
            rng.pick(KEYS),
            rng.pick(VALUES)
        ));
        any = true;
    }
    if rng.chance(2) {
        r.push_str(&format!(
            "    tolerations:\n    - {{key: {}, operator: Equal, value: {}, effect: NoSchedule}}\n",
            rng.pick(KEYS),
            rng.pick(VALUES)
        ));
        any = true;
    }
    if rng.chance(3) {
        r.push_str(&format!(
            "    affinity:\n      nodeAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions: [{{key: {}, operator: In, values: [{}]}}]\n",
            rng.pick(KEYS),
            rng.pick(VALUES)
        ));
        any = true;
    }
    if rng.chance(2) || !any {
        r.push_str(&format!(
            "    podLabels: {{{}: {}}}\n",
            rng.pick(KEYS),
            rng.pick(VALUES)
        ));
    }
    if rng.chance(3) {
        r.push_str(&format!(
            "    podAnnotations: {{example.com/{}: {}}}\n",
            rng.pick(&["note", "owner"]),
            rng.pick(VALUES)
        ));
    }
    // The pod-spec fields: the names on the template, the rest through
    // its podSpecPatch (kfp's own, where a parameter limits resources).
    if rng.chance(4) {
        r.push_str(&format!(
            "    priorityClassName: {}\n",
            rng.pick(&["ml-high", "batch"])
        ));
    }
    if rng.chance(5) {
        r.push_str(&format!(
            "    schedulerName: {}\n",
            rng.pick(&["volcano", "yunikorn"])
        ));
    }
    if rng.chance(4) {
        r.push_str(&format!(
            "    runtimeClassName: {}\n",
            rng.pick(&["nvidia", "gvisor"])
        ));
    }
    if rng.chance(4) {
        r.push_str(&format!(
            "    topologySpreadConstraints:\n    - {{maxSkew: {}, topologyKey: {}, whenUnsatisfiable: {}, labelSelector: {{matchLabels: {{tier: {}}}}}}}\n",
            1 + rng.next() % 3,
            rng.pick(KEYS),
            rng.pick(&["DoNotSchedule", "ScheduleAnyway"]),
            rng.pick(VALUES)
        ));
    }
    r
}

fn policy_of(rules: &[String]) -> Policy {
    let text = format!(
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {{name: p}}\nspec:\n  rules:\n{}",
        rules.concat()
    );
    Policy::from_bytes("policy.yaml", text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn rewritten(text: &str, policy: &Policy) -> String {
    process("w.yaml", text.as_bytes(), policy)
        .unwrap_or_else(|d| panic!("{d:?}"))
        .text(text.as_bytes())
        .unwrap_or_else(|| text.to_string())
}

/// SPEC §2: a kfp 1.8 file gets what kfp 1.8 writes. Whatever the edit
/// history, every scheduling field of a template kfsched changed reads
/// exactly as the SDK's emitter writes its final content, and two policies
/// applied in two runs give the bytes of the same rules in one run.
#[test]
fn kfp_v1_layout_does_not_depend_on_edit_history() {
    use kfsched_yaml::emit::{Emitter, PyProfile};
    let fixtures: Vec<PathBuf> = golden_dirs()
        .into_iter()
        .filter(|d| {
            let r = rel(d);
            (r.contains("golden/v1/") || r.contains("corpus-v1"))
                && !r.contains("_bom")
                && !r.contains("large_300")
        })
        .collect();
    let mut rng = Rng(0x5eed_cafe_f00d_1234);
    let mut checked_fields = 0;
    for round in 0..120 {
        let dir = rng.pick(&fixtures).clone();
        let plain = std::fs::read_to_string(dir.join("plain.yaml")).expect("read");
        let tree = Tree::parse(&plain).expect("parse");
        let templates: Vec<String> = detect(&tree)
            .expect("detect")
            .iter()
            .flat_map(|d| d.components().iter().map(|c| c.names[0].clone()))
            .collect();
        let p1: Vec<String> = (0..1 + rng.next() % 3)
            .map(|i| random_rule(&mut rng, &format!("a{i}"), &templates))
            .collect();
        let p2: Vec<String> = (0..1 + rng.next() % 3)
            .map(|i| random_rule(&mut rng, &format!("b{i}"), &templates))
            .collect();
        let both: Vec<String> = p1.iter().chain(&p2).cloned().collect();
        let twice = rewritten(&rewritten(&plain, &policy_of(&p1)), &policy_of(&p2));
        let once = rewritten(&plain, &policy_of(&both));
        let case = format!(
            "round {round}, {}:\n{}{}",
            rel(&dir),
            p1.concat(),
            p2.concat()
        );
        assert!(
            twice == once,
            "{case}\ntwo runs differ from one:\n{}",
            crate::support::show_diff(&once, &twice)
        );
        // Every scheduling field of a changed template, as the SDK writes it.
        let out = Tree::parse(&twice).expect("output parses");
        let before = detect(&tree).expect("detect");
        let after = detect(&out).expect("detect");
        for (db, da) in before.iter().zip(&after) {
            for (cb, ca) in db.components().iter().zip(da.components()) {
                let (Place::Argo { template: tb, .. }, Place::Argo { template: ta, .. }) =
                    (&cb.place, &ca.place)
                else {
                    continue;
                };
                if node_value(&tree, *tb) == node_value(&out, *ta) {
                    continue;
                }
                for key in [
                    "nodeSelector",
                    "tolerations",
                    "affinity",
                    "metadata",
                    "podSpecPatch",
                    "priorityClassName",
                    "schedulerName",
                ] {
                    let Ok(Some((k, v))) = out.get(*ta, key) else {
                        continue;
                    };
                    let (kn, vn) = (out.node(k), out.node(v));
                    let line = twice[..kn.start as usize].rfind('\n').map_or(0, |i| i + 1);
                    let end = twice[vn.end as usize..]
                        .find('\n')
                        .map_or(twice.len(), |i| vn.end as usize + i + 1);
                    let want = Emitter::block_entry(
                        PyProfile::KfpV1,
                        key,
                        &node_value(&out, v),
                        kn.start as usize - line,
                    );
                    let want = if twice.contains("\r\n") {
                        want.replace('\n', "\r\n")
                    } else {
                        want
                    };
                    assert_eq!(&twice[line..end], want, "{case}\nfield {key}");
                    checked_fields += 1;
                }
            }
        }
    }
    assert!(checked_fields >= 200, "{checked_fields} fields checked");
}
