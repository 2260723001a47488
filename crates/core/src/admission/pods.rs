//! The MutatingAdmissionPolicy for pods: how a pod that Argo creates for a
//! KFP v2, KFP v1 or plain Argo workflow says what it is (variables), which
//! rules select it (one variable per rule), and the rules' scheduling
//! merged into it as SPEC §3 merges it into a file (mutations, in rule
//! order). See `docs/guide.md#admission` for what each pod carries.

use std::collections::BTreeSet;

use serde_json::{Value as Json, json};

use super::cel::{self, lit, lits};
use super::ops;
use super::regex::glob_to_re2;
use super::state::{Chain, State};
use crate::matching::{Glob, PodRole, Selector};
use crate::policy::Rule;

/// What the pipeline files given to the export say: the KFP v2 components
/// they hold, and which of them each rule selects, so that a rule selects
/// the pods of those pipelines exactly, whatever the pod lacks.
#[derive(Clone, Debug, Default)]
pub struct Resolution {
    /// Every KFP v2 component of the files, as (pipeline, task path).
    pub known: BTreeSet<(String, String)>,
    /// Per rule of the policy: the components it selects, and the ones its
    /// `match` selects before `exclude` (`podRoles` aside in both).
    pub selected: Vec<BTreeSet<(String, String)>>,
    pub matched: Vec<BTreeSet<(String, String)>>,
}

/// The variables every rule reads: what the pod is and what it is named.
/// Each reads only what Argo, KFP and the SDKs put on the pod, with every
/// index guarded.
fn common_variables(resolution: Option<&Resolution>) -> Vec<(String, String)> {
    let arg = |flag: &str| {
        let f = lit(flag);
        format!(
            "string(variables.argv.exists(a, a == {f}) && variables.argv.indexOf({f}) + 1 < size(variables.argv) ?\n  variables.argv[variables.argv.indexOf({f}) + 1] : '')"
        )
    };
    // A string field of a compact JSON argument (`"key":"value"`), or ''.
    let json_field = |expr: &str, prefix: &str, index: usize| {
        format!(
            "string([{expr}.find({})].map(m, m == '' ? '' : m.split('\"')[{index}])[0])",
            lit(&format!("{}[^\"]*\"", regex_escape(prefix)))
        )
    };
    let mut v: Vec<(String, String)> = vec![
        (
            "kfp_v2".into(),
            "object.metadata.?labels[?'pipelines.kubeflow.org/v2_component'].orValue('') == 'true'"
                .into(),
        ),
        (
            "kfp_v1".into(),
            "object.metadata.?labels[?'pipelines.kubeflow.org/pipeline-sdk-type'].orValue('') == 'kfp'"
                .into(),
        ),
        (
            "workflow".into(),
            "object.metadata.?labels[?'workflows.argoproj.io/workflow'].orValue('')".into(),
        ),
        (
            "main".into(),
            "object.spec.containers.filter(c, c.name == 'main')".into(),
        ),
        (
            "argv".into(),
            "size(variables.main) == 0 ? [] :\n  variables.main[0].?command.orValue([]) + variables.main[0].?args.orValue([])".into(),
        ),
        ("arg_pipeline_name".into(), arg("--pipeline_name")),
        ("arg_executor_type".into(), arg("--executor_type")),
        ("arg_task_name".into(), arg("--task_name")),
        ("arg_task".into(), arg("--task")),
        ("arg_container".into(), arg("--container")),
        ("arg_component".into(), arg("--component")),
        ("arg_component_spec".into(), arg("--component_spec")),
        (
            // Argo names a pod `<workflow>-<template>-<fnv32a(node name)>`
            // (an inline template's pod has no template part).
            "template".into(),
            "[object.metadata.?name.orValue('')].map(n,\n  \
             variables.workflow != '' && n.startsWith(variables.workflow + '-') && n.lastIndexOf('-') > size(variables.workflow) ?\n    \
             n.substring(size(variables.workflow) + 1, n.lastIndexOf('-')) : ''\n\
             )[0]"
                .into(),
        ),
        (
            // KFP v2's pod templates say what a pod is; the runtime-role
            // annotation (KFP 2.17 and later: `driver`, or `launcher` for
            // executors and importers) and the launcher's arguments are
            // read when a pod's name does not.
            "role".into(),
            "!variables.kfp_v2 ? 'executor' :\n\
             variables.template.startsWith('system-dag-driver') || variables.template.startsWith('system-container-driver') ? 'driver' :\n\
             variables.template.startsWith('system-importer') ? 'importer' :\n\
             variables.template.endsWith('system-container-impl') ? 'executor' :\n\
             object.metadata.?annotations[?'pipelines.kubeflow.org/runtime-role'].orValue('') == 'driver' ? 'driver' :\n\
             variables.arg_executor_type == 'importer' ? 'importer' :\n\
             object.metadata.?annotations[?'pipelines.kubeflow.org/runtime-role'].orValue('') == 'launcher' ||\n  \
             object.spec.?initContainers.orValue([]).exists(c, c.name == 'kfp-launcher') ? 'executor' : ''"
                .into(),
        ),
        (
            // The node name's segments after the workflow's name, split on
            // dots outside parentheses (a loop item may hold dots), each
            // without its `(item)` / `(retry)` and `[step group]` parts.
            "node_segments".into(),
            "[object.metadata.?annotations[?'workflows.argoproj.io/node-name'].orValue('')].map(n,\n  \
             variables.workflow != '' && n.startsWith(variables.workflow) ? n.substring(size(variables.workflow)) : ''\n\
             )[0].findAll('[^.()]+(?:\\\\([^()]*\\\\))*').map(s, s.split('(')[0].split('[')[0]).filter(s, s != '')"
                .into(),
        ),
        (
            // The task path as files name it. KFP v2: drop `root` (or
            // `root-driver`), the loop scaffolding (`iteration-iterations`,
            // `iteration-item`, and their drivers), an exit task's
            // `<group>.onExit` (the exit task is the group's sibling), an
            // executor's `executor` and a driver's `-driver`. Argo: the
            // task and step names; a pod reached through an exit handler
            // or a hook has no path.
            "path".into(),
            "[variables.node_segments].map(g, variables.kfp_v2 ?\n  \
             g.transformList(i, s,\n    \
             i > 0 && !(s in ['iteration-iterations', 'iteration-item', 'iteration-item-driver', 'iteration-driver', 'onExit']) &&\n    \
             !(i + 1 < size(g) && g[i + 1] == 'onExit') &&\n    \
             !(i == size(g) - 1 && s == 'executor' && variables.role == 'executor'),\n    \
             i == size(g) - 1 && variables.role == 'driver' && s.endsWith('-driver') ? s.substring(0, size(s) - 7) : s\n  \
             ).join('/') :\n  \
             g.exists(s, s == 'onExit' || s == 'hooks') ? '' : g.join('/')\n\
             )[0]"
                .into(),
        ),
        (
            "task".into(),
            "[variables.path.split('/')].map(p, p[size(p) - 1])[0]".into(),
        ),
        (
            "executor_label".into(),
            json_field(
                "(variables.arg_component_spec + variables.arg_component)",
                "\"executorLabel\":\"",
                3,
            ),
        ),
        (
            "component".into(),
            json_field("variables.arg_task", "\"componentRef\":{\"name\":\"", 5),
        ),
        (
            // The display name from the driver's `--task` JSON (Go's encoder
            // escapes `"`, `\\`, `<`, `>` and `&`, which stay escaped here).
            "display_name".into(),
            format!(
                "[variables.arg_task.find({})].map(m, m == '' ? '' : m.substring(20, size(m) - 1))[0]",
                lit(r#""taskInfo":\{"name":"(?:[^"\\]|\\.)*""#)
            ),
        ),
        (
            "names".into(),
            "(variables.kfp_v2 ?\n  \
             (variables.role == 'driver' ?\n    \
             [variables.arg_task_name, variables.path, variables.display_name, variables.component,\n     \
             variables.component.startsWith('comp-') ? variables.component.substring(5) : '', variables.executor_label] :\n   \
             variables.role == 'executor' ?\n    \
             [variables.task, variables.path, variables.executor_label,\n     \
             variables.executor_label.startsWith('exec-') ? 'comp-' + variables.executor_label.substring(5) : '',\n     \
             variables.executor_label.startsWith('exec-') ? variables.executor_label.substring(5) : ''] :\n    \
             [variables.task, variables.path]) :\n  \
             [variables.template, variables.task, variables.path] + (!variables.kfp_v1 ? [] : [\n    \
             object.metadata.?annotations[?'pipelines.kubeflow.org/task_display_name'].orValue(''),\n    \
             [object.metadata.?annotations[?'pipelines.kubeflow.org/component_spec'].orValue('').find(COMPONENT_SPEC_NAME)]\n      \
             .map(m, m == '' ? '' : m.split('\"')[3])[0]])\n\
             ).filter(n, n != '')"
                .replace("COMPONENT_SPEC_NAME", &lit(r#""name": "[^"]*"(, "outputs"|\}$)"#)),
        ),
        (
            "images".into(),
            format!(
                "(variables.kfp_v2 && variables.role == 'driver' ?\n  [{}] :\n  variables.main.map(c, c.?image.orValue(''))).filter(i, i != '')",
                json_field("variables.arg_container", "\"image\":\"", 3)
            ),
        ),
        (
            "pipelines".into(),
            "(variables.kfp_v2 ? [variables.arg_pipeline_name] :\n  \
             [variables.workflow, variables.workflow.matches('^.+-[a-z0-9]{5}$') ?\n    \
             variables.workflow.substring(0, size(variables.workflow) - 6) : '']).filter(p, p != '')"
                .into(),
        ),
        (
            "kinds".into(),
            "variables.kfp_v2 ? ['PipelineSpec'] : ['Workflow']".into(),
        ),
    ];
    // List literals must be homogeneous: what a `map(...)[0]` gives is
    // `dyn`, so the string-valued variables say that they are strings.
    for (name, e) in v.iter_mut() {
        if ["path", "task", "template", "display_name"].contains(&name.as_str()) {
            *e = format!("string({e})");
        }
    }
    if let Some(r) = resolution {
        let (tables, test) = pair_tables("known", &r.known);
        v.extend(tables);
        v.push(("resolved".into(), format!("variables.kfp_v2 && ({test})")));
    }
    v
}

/// A regular expression matching `s` literally.
fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Code points of CEL per pair table: well under the API server's limit
/// of 100,000 per expression, however many pipeline files are given.
const TABLE_CODE_POINTS: usize = 40_000;

/// `set` as tables of task paths by pipeline name, each the variable
/// `{name}_{i}` (a map lookup, not a scan of every pair), and the test that
/// the pod's (pipeline, task path) is in one of them; `false` when empty.
fn pair_tables(name: &str, set: &BTreeSet<(String, String)>) -> (Vec<(String, String)>, String) {
    let mut by_pipeline: Vec<(&str, Vec<&str>)> = Vec::new();
    for (p, t) in set {
        match by_pipeline.last_mut() {
            Some((last, paths)) if last == p => paths.push(t),
            _ => by_pipeline.push((p, vec![t])),
        }
    }
    let mut tables: Vec<Vec<String>> = Vec::new();
    let mut size = 0;
    for (p, paths) in by_pipeline {
        let entry = format!("{}: {}", lit(p), cel::lits(&paths));
        let n = entry.chars().count() + 2;
        if tables.is_empty() || size + n > TABLE_CODE_POINTS {
            tables.push(Vec::new());
            size = 0;
        }
        size += n;
        tables.last_mut().expect("a table").push(entry);
    }
    let vars: Vec<(String, String)> = tables
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("{name}_{i}"), format!("{{{}}}", t.join(",\n  "))))
        .collect();
    let tests: Vec<String> = vars
        .iter()
        .map(|(v, _)| {
            format!(
                "(variables.arg_pipeline_name in variables.{v} && variables.path in variables.{v}[variables.arg_pipeline_name])"
            )
        })
        .collect();
    let test = if tests.is_empty() {
        "false".to_string()
    } else {
        tests.join(" || ")
    };
    (vars, test)
}

/// `variables.<list>` has an element a glob matches.
fn glob_test(list: &str, globs: &[Glob], path_like: bool) -> String {
    let tests: Vec<String> = globs
        .iter()
        .filter_map(|g| glob_to_re2(&g.text, path_like))
        .map(|re| format!("x.matches({})", lit(&re)))
        .collect();
    if tests.is_empty() {
        return "false".into();
    }
    format!("variables.{list}.exists(x, {})", tests.join(" || "))
}

/// The conditions of a selector's glob keys (ANDed).
fn glob_conditions(sel: &Selector) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(g) = &sel.names {
        out.push(glob_test("names", g, true));
    }
    if let Some(g) = &sel.images {
        out.push(glob_test("images", g, false));
    }
    if let Some(g) = &sel.pipelines {
        out.push(glob_test("pipelines", g, false));
    }
    if let Some(g) = &sel.kinds {
        out.push(glob_test("kinds", g, false));
    }
    out
}

fn roles_test(roles: &[PodRole]) -> String {
    let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
    format!("variables.role in {}", lits(&names))
}

fn all(parts: &[String]) -> String {
    match parts {
        [] => "true".into(),
        [one] => one.clone(),
        _ => parts
            .iter()
            .map(|p| format!("({p})"))
            .collect::<Vec<_>>()
            .join(" && "),
    }
}

/// Whether the rule selects the pod: its roles, its globs over what the
/// pod carries, and, for KFP v2 pods of the pipeline files, the task paths
/// the rule selects in them.
///
/// Returns the variables the predicate reads (the rule's task tables,
/// `tasks_<rule index>_<n>`) and the predicate.
pub(super) fn rule_predicate(
    rule: &Rule,
    resolution: Option<&Resolution>,
) -> (Vec<(String, String)>, String) {
    let roles = rule
        .matcher
        .pod_roles
        .clone()
        .unwrap_or_else(|| vec![PodRole::Executor]);
    let matched = all(&glob_conditions(&rule.matcher));
    let exclude_globs = all(&glob_conditions(&rule.exclude));
    // Excluded: every present key of `exclude` matches, podRoles included.
    let excluded = if rule.exclude.is_empty() {
        "false".to_string()
    } else {
        let mut parts = Vec::new();
        if let Some(r) = &rule.exclude.pod_roles {
            parts.push(roles_test(r));
        }
        if !glob_conditions(&rule.exclude).is_empty() {
            parts.push(exclude_globs.clone());
        }
        all(&parts)
    };
    let approx = format!("({matched}) && !({excluded})");
    let Some(r) = resolution else {
        return (Vec::new(), format!("{} && {approx}", roles_test(&roles)));
    };
    let (mut tables, selected) =
        pair_tables(&format!("tasks_{}", rule.index), &r.selected[rule.index]);
    let exact = match &rule.exclude.pod_roles {
        // `exclude` holds for these roles only: the others are judged by `match` alone.
        Some(ex) => {
            let (more, matched) =
                pair_tables(&format!("matched_{}", rule.index), &r.matched[rule.index]);
            tables.extend(more);
            format!("({} ? ({selected}) : ({matched}))", roles_test(ex))
        }
        None => format!("({selected})"),
    };
    (
        tables,
        format!(
            "{} && (variables.resolved ? {exact} : {approx})",
            roles_test(&roles)
        ),
    )
}

/// The policy object for these rules, or what in it (with the rule it
/// belongs to) is over a limit the API server enforces.
pub(super) fn policy(
    name: &str,
    policy_name: &str,
    rules: &[&Rule],
    resolution: Option<&Resolution>,
    failure_policy: &str,
) -> Result<Json, Vec<(Option<usize>, String)>> {
    let common = common_variables(resolution);
    // The rule (by index) each variable and mutation belongs to, for the
    // limits check.
    let mut variable_rules: Vec<Option<usize>> = vec![None; common.len()];
    let mut variables: Vec<Json> = common
        .into_iter()
        .map(|(n, e)| json!({"name": n, "expression": e}))
        .collect();
    let mut used: BTreeSet<String> = BTreeSet::new();
    let mut rule_vars: Vec<(String, &Rule)> = Vec::new();
    for r in rules {
        let mut v = format!("rule_{}", identifier(&r.name));
        if !used.insert(v.clone()) {
            v = format!("{v}_{}", r.index);
            used.insert(v.clone());
        }
        let (tables, predicate) = rule_predicate(r, resolution);
        for (n, e) in tables {
            variables.push(json!({"name": n, "expression": e}));
            variable_rules.push(Some(r.index));
        }
        variables.push(json!({"name": v, "expression": predicate}));
        variable_rules.push(Some(r.index));
        rule_vars.push((v, r));
    }
    // One mutation: the admitted annotation, then each selected rule's
    // operations in rule order, each computed on the pod as the rules
    // before it left it (see `state`).
    let selections: Vec<(String, String)> = rule_vars
        .iter()
        .map(|(v, r)| (format!("variables.{v}"), r.name.clone()))
        .collect();
    let mut chained: Vec<(String, String)> = Vec::new();
    let mut state = State::initial(&mut chained);
    variable_rules.extend(std::iter::repeat_n(None, chained.len()));
    let mut before = "variables.state_0".to_string();
    let mut parts = Vec::new();
    for (v, r) in &rule_vars {
        let n = chained.len();
        let mut chain = Chain::new(format!("r{}", r.index));
        let ops = ops::rule_ops(r, &mut state, &mut chain);
        let ops = ops.map(|o| chain.resolve(&o));
        let name = chain.name.clone();
        if let Some(e) = chain.finish(&mut state, &before, &format!("variables.{v}")) {
            chained.push((name.clone(), e));
            before = format!("variables.{name}");
        }
        if let Some(ops) = ops {
            let ops_var = format!("{name}_ops");
            chained.push((ops_var.clone(), format!("!variables.{v} ? [] :\n  {ops}")));
            parts.push(format!("variables.{ops_var}"));
        }
        variable_rules.extend(std::iter::repeat_n(Some(r.index), chained.len() - n));
    }
    variables.extend(
        chained
            .into_iter()
            .map(|(n, e)| json!({"name": n, "expression": e})),
    );
    let mut expression = super::admitted_mutation(policy_name, &selections);
    if !parts.is_empty() {
        expression = format!(
            "{expression} +\n{}",
            cel::patches(&format!("({})", parts.join(" + ")))
        );
    }
    let mutations: Vec<Json> =
        vec![json!({"patchType": "JSONPatch", "jsonPatch": {"expression": expression}})];
    let mutation_rules: Vec<Option<usize>> = vec![None];
    let mut over = Vec::new();
    for (i, v) in variables.iter().enumerate() {
        if let Some(m) = super::expression_over_limit(&v["expression"]) {
            let name = v["name"].as_str().unwrap_or_default();
            over.push((variable_rules[i], format!("its variable {name} {m}")));
        }
    }
    for (i, v) in mutations.iter().enumerate() {
        if let Some(m) = super::expression_over_limit(&v["jsonPatch"]["expression"]) {
            over.push((mutation_rules[i], format!("its mutation {m}")));
        }
    }
    if !over.is_empty() {
        return Err(over);
    }
    Ok(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": failure_policy,
            "reinvocationPolicy": "Never",
            "matchConstraints": {
                "resourceRules": [{
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["pods"],
                }],
            },
            "matchConditions": [{
                "name": "argo-workflow-pod",
                "expression": "object.metadata.?labels[?'workflows.argoproj.io/workflow'].orValue('') != ''",
            }, {
                "name": "a-rule-may-select-it",
                "expression": gate(rules, resolution.is_some()),
            }],
            "variables": variables,
            "mutations": mutations,
        },
    }))
}

/// Whether some rule may select the pod, written without variables (which
/// match conditions cannot read): the pod's names bound one by one, then
/// the rules' selections from globs. With pipeline files, every KFP v2 pod
/// may be selected (its task is looked up by the mutation). A pod no rule
/// selects is turned away here, before the mutation, which costs the API
/// server whole passes over the pod even when it changes nothing.
fn gate(rules: &[&Rule], resolution: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    if resolution {
        parts.push("variables.kfp_v2".into());
    }
    parts.extend(rules.iter().map(|r| rule_predicate(r, None).1));
    let mut body = format!("({}) == true", parts.join(") ||\n  ("));
    // Only the names the rules read, each bound once, in order.
    let common = common_variables(None);
    let mut needed: BTreeSet<&str> = BTreeSet::new();
    let mut text = body.clone();
    for (n, e) in common.iter().rev() {
        if text.contains(&format!("variables.{n}")) && references(&text, n) {
            needed.insert(n);
            text.push_str(e);
        }
    }
    body = body.replace("variables.", "v_");
    for (n, e) in common.iter().rev() {
        if needed.contains(n.as_str()) {
            body = format!("[{}].map(v_{n},\n{body})[0]", e.replace("variables.", "v_"));
        }
    }
    format!(
        "object.metadata.?labels[?'workflows.argoproj.io/workflow'].orValue('') != '' &&\n{body}"
    )
}

/// `text` reads `variables.<name>` (not a longer name it begins).
fn references(text: &str, name: &str) -> bool {
    let pat = format!("variables.{name}");
    text.match_indices(&pat).any(|(i, _)| {
        !text[i + pat.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// A rule name as a CEL identifier.
fn identifier(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
