#!/usr/bin/env python3
"""Checks the compiled golden fixtures in testdata/golden/{v1,v2,pv} against SPEC semantics.

    python check_golden.py GOLDEN_DIR        (GOLDEN_DIR holds v1/, v2/ and optionally pv/)

For every case directory:
1. it holds exactly plain.yaml, expected.yaml, policy.yaml, notes.md (and plain.json and
   manifest.yaml, the same pipeline compiled to JSON and to Kubernetes manifests, where
   the case asks for them);
2. policy.yaml passes (a subset of) SPEC §1 validation;
3. a small reference model of SPEC §1-§3 (matching, merge, replace, pool shorthand, Argo
   seeding from workflow-level fields, KFP v2 platform-document shapes; for a
   PipelineVersion the v2 model on spec.pipelineSpec / spec.platformSpec) applied to the
   parsed plain.yaml gives the parsed expected.yaml (list order and, in v1, the key order
   of nodeSelector, metadata, metadata.labels and metadata.annotations included: kfp
   1.8.22 puts the user's pod labels / annotations before its own `pipelines.kubeflow.org/*`
   keys, and `annotations` before `labels` once an op has an annotation);
4. expected.yaml differs from plain.yaml only in scheduling fields of selected components
   (v2: the platform document's executor entries, doc 0 and the header byte-identical;
   v1: nodeSelector / tolerations / affinity / metadata.labels / metadata.annotations /
   priorityClassName / schedulerName / podSpecPatch of selected pod templates; pv: only inside `platformSpec:` blocks, byte for byte, and there
   only executor entries of selected tasks);
5. derived variants (_crlf, _bom) are their base case's bytes converted.
It prints a summary table and exits 1 on any failure.  It works on parsed YAML: bytes are
the SDK's business (the files are SDK output); this checks that the POLICY means the same
as the SDK calls.
"""
import copy
import json
import re
import sys
from pathlib import Path

import yaml

try:
    Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    Loader = yaml.SafeLoader

FILES = {"plain.yaml", "expected.yaml", "policy.yaml", "notes.md"}
POD_KINDS_ARGO = ("container", "script", "resource", "containerSet", "data")
ARGO_KINDS = ("Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow")


class CheckError(Exception):
    pass


# --------------------------------------------------------------------------- globs
def _translate(seg: str, sep: bool) -> str:
    any_char = "[^/]" if sep else "."
    out, i = "", 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out += any_char + "*"
        elif c == "?":
            out += any_char
        elif c == "[":
            j = seg.find("]", i + 2 if seg[i + 1:i + 2] in ("!", "]") else i + 1)
            if j < 0:
                out += re.escape(c)
            else:
                body = seg[i + 1:j]
                neg = body.startswith("!")
                if neg:
                    body = body[1:]
                body = body.replace("\\", "\\\\").replace("^", "\\^")
                out += "[" + ("^" if neg else "") + body + ("/" if (neg and sep) else "") + "]"
                i = j
        else:
            out += re.escape(c)
        i += 1
    return out


def glob_regex(pattern: str, names: bool) -> re.Pattern:
    if not names:
        return re.compile(_translate(pattern, False) + r"\Z", re.S)
    segs = pattern.split("/")
    out = ""
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == "**":
            out += ".*" if last else "(?:[^/]*/)*"
            continue
        out += _translate(seg, True)
        if not last:
            out += "/"
    return re.compile(out + r"\Z", re.S)


def glob_any(patterns, values, names: bool) -> bool:
    regs = [glob_regex(p, names) for p in patterns]
    return any(r.match(v) for r in regs for v in values)


# --------------------------------------------------------------------------- validation
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def qualified_name(k) -> bool:
    if not isinstance(k, str) or not k:
        return False
    if "/" in k:
        prefix, name = k.split("/", 1)
        if not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix):
            return False
    else:
        name = k
    return len(name) <= 63 and bool(NAME_PART.match(name))


def label_value(v) -> bool:
    return isinstance(v, str) and len(v) <= 63 and bool(LABEL_VALUE.match(v))


def validate_policy(pol) -> list:
    errs = []

    def err(path, msg):
        errs.append(f"{path}: {msg}")

    def keys(obj, allowed, path):
        if not isinstance(obj, dict):
            err(path, "must be a mapping")
            return False
        for k in obj:
            if k not in allowed:
                err(f"{path}.{k}", "unknown field")
        return True

    def selector(sel, path):
        if sel is None:
            return
        if keys(sel, {"names", "images", "pipelines", "kinds"}, path):
            for k, v in sel.items():
                if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
                    err(f"{path}.{k}", "must be a non-empty list of globs")

    def toleration(t, path):
        if not keys(t, {"key", "operator", "value", "effect", "tolerationSeconds"}, path):
            return
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            err(path, f"operator {op!r}")
        if op == "Exists" and t.get("value"):
            err(path, "Exists takes no value")
        if not t.get("key") and op != "Exists":
            err(path, "an empty key needs Exists")
        if t.get("key") and not qualified_name(t["key"]):
            err(path, "key is not a qualified name")
        if t.get("effect", "") not in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"):
            err(path, "effect")
        if "tolerationSeconds" in t:
            if t.get("effect") != "NoExecute":
                err(path, "tolerationSeconds only with NoExecute")
            if not isinstance(t["tolerationSeconds"], int):
                err(path, "tolerationSeconds must be an integer")
        if "value" in t and not label_value(t["value"]):
            err(path, "value is not a valid label value")

    def requirement(r, path, field):
        if not keys(r, {"key", "operator", "values"}, path):
            return
        op, vals = r.get("operator"), r.get("values")
        if field:
            if r.get("key") != "metadata.name" or op not in ("In", "NotIn") or \
                    not isinstance(vals, list) or len(vals) != 1:
                err(path, "matchFields: metadata.name, In|NotIn, exactly one value")
            return
        if not qualified_name(r.get("key")):
            err(path, "key")
        if op in ("In", "NotIn"):
            if not vals:
                err(path, f"{op} needs values")
        elif op in ("Exists", "DoesNotExist"):
            if vals:
                err(path, f"{op} takes no values")
        elif op in ("Gt", "Lt"):
            if not isinstance(vals, list) or len(vals) != 1 or \
                    not re.fullmatch(r"-?[0-9]+", str(vals[0])):
                err(path, f"{op} needs exactly one integer value")
        else:
            err(path, f"operator {op!r}")
        for v in vals or []:
            if not isinstance(v, str):
                err(path, "values must be strings")

    def node_term(t, path):
        if not keys(t, {"matchExpressions", "matchFields"}, path):
            return
        if not t.get("matchExpressions") and not t.get("matchFields"):
            err(path, "empty term")
        for i, r in enumerate(t.get("matchExpressions") or []):
            requirement(r, f"{path}.matchExpressions[{i}]", False)
        for i, r in enumerate(t.get("matchFields") or []):
            requirement(r, f"{path}.matchFields[{i}]", True)

    def weight(w, path):
        if not isinstance(w, int) or not 1 <= w <= 100:
            err(path, "weight 1-100")

    def pod_terms(pa, path):
        if not keys(pa, {"requiredDuringSchedulingIgnoredDuringExecution",
                         "preferredDuringSchedulingIgnoredDuringExecution"}, path):
            return
        for i, t in enumerate(pa.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
            if not t.get("topologyKey"):
                err(f"{path}.required[{i}]", "topologyKey")
        for i, t in enumerate(pa.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            keys(t, {"weight", "podAffinityTerm"}, f"{path}.preferred[{i}]")
            weight(t.get("weight"), f"{path}.preferred[{i}].weight")

    def affinity(a, path):
        if not keys(a, {"nodeAffinity", "podAffinity", "podAntiAffinity"}, path):
            return
        na = a.get("nodeAffinity")
        if na is not None and keys(na, {"requiredDuringSchedulingIgnoredDuringExecution",
                                        "preferredDuringSchedulingIgnoredDuringExecution"},
                                   f"{path}.nodeAffinity"):
            req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
            if req is not None and keys(req, {"nodeSelectorTerms"}, f"{path}.nodeAffinity.required"):
                for i, t in enumerate(req.get("nodeSelectorTerms") or []):
                    node_term(t, f"{path}.nodeAffinity.required.nodeSelectorTerms[{i}]")
            for i, p in enumerate(na.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
                pp = f"{path}.nodeAffinity.preferred[{i}]"
                if keys(p, {"weight", "preference"}, pp):
                    weight(p.get("weight"), pp + ".weight")
                    node_term(p.get("preference") or {}, pp + ".preference")
        for k in ("podAffinity", "podAntiAffinity"):
            if a.get(k) is not None:
                pod_terms(a[k], f"{path}.{k}")

    if pol.get("apiVersion") != "kfsched.dev/v1alpha1" or pol.get("kind") != "SchedulingPolicy":
        err("", "apiVersion/kind")
    keys(pol, {"apiVersion", "kind", "metadata", "spec"}, "")
    spec = pol.get("spec") or {}
    keys(spec, {"nodePools", "rules"}, "spec")
    pools = {}
    for i, p in enumerate(spec.get("nodePools") or []):
        path = f"spec.nodePools[{i}]"
        keys(p, {"name", "nodes", "nodeSelector", "labels", "taints"}, path)
        if not DNS_LABEL.match(str(p.get("name", ""))) or p.get("name") in pools:
            err(path, "name")
        pools[p.get("name")] = p
        for k, v in (p.get("labels") or {}).items():
            if not qualified_name(k) or not label_value(v):
                err(f"{path}.labels.{k}", "label")
        for j, t in enumerate(p.get("taints") or []):
            keys(t, {"key", "value", "effect"}, f"{path}.taints[{j}]")
            if t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                err(f"{path}.taints[{j}]", "effect required")
            if "value" in t and not label_value(t["value"]):
                err(f"{path}.taints[{j}]", "value")
    names = set()
    for i, r in enumerate(spec.get("rules") or []):
        path = f"spec.rules[{i}]"
        keys(r, {"name", "match", "exclude", "pool", "tolerations", "nodeSelector", "affinity",
                 "podLabels", "podAnnotations", "strategy", "priorityClassName",
                 "schedulerName", "runtimeClassName", "topologySpreadConstraints"}, path)
        if not r.get("name") or r["name"] in names:
            err(path, "name missing or not unique")
        names.add(r.get("name"))
        selector(r.get("match"), path + ".match")
        selector(r.get("exclude"), path + ".exclude")
        if "pool" in r and r["pool"] not in pools:
            err(path + ".pool", "unknown pool")
        if r.get("strategy", "merge") not in ("merge", "replace"):
            err(path + ".strategy", "merge|replace")
        for j, t in enumerate(r.get("tolerations") or []):
            toleration(t, f"{path}.tolerations[{j}]")
        for k, v in (r.get("nodeSelector") or {}).items():
            if not qualified_name(k) or not label_value(v):
                err(f"{path}.nodeSelector.{k}", "label")
        for k, v in (r.get("podLabels") or {}).items():
            if not qualified_name(k) or not label_value(v):
                err(f"{path}.podLabels.{k}", "label")
        for k, v in (r.get("podAnnotations") or {}).items():
            if not qualified_name(k) or not isinstance(v, str):
                err(f"{path}.podAnnotations.{k}", "annotation")
        if r.get("affinity") is not None:
            affinity(r["affinity"], path + ".affinity")
        for k in ("priorityClassName", "runtimeClassName"):
            if k in r and not DNS_SUBDOMAIN.match(str(r[k])):
                err(f"{path}.{k}", "a DNS-1123 subdomain")
        if "schedulerName" in r and not r["schedulerName"]:
            err(f"{path}.schedulerName", "empty")
        pairs = set()
        for j, t in enumerate(r.get("topologySpreadConstraints") or []):
            tp = f"{path}.topologySpreadConstraints[{j}]"
            keys(t, {"maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector",
                     "minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy",
                     "matchLabelKeys"}, tp)
            if not isinstance(t.get("maxSkew"), int) or t["maxSkew"] < 1:
                err(tp, "maxSkew must be a positive integer")
            if not qualified_name(t.get("topologyKey")):
                err(tp, "topologyKey")
            if t.get("whenUnsatisfiable") not in ("DoNotSchedule", "ScheduleAnyway"):
                err(tp, "whenUnsatisfiable")
            pair = (t.get("topologyKey"), t.get("whenUnsatisfiable"))
            if pair in pairs:
                err(tp, "duplicate topologyKey and whenUnsatisfiable")
            pairs.add(pair)
    return errs


# --------------------------------------------------------------------------- components
class Component:
    def __init__(self, ident, names, images, kind, pipelines):
        self.ident = ident          # v2: executor label; argo: template name
        self.names = sorted(set(n for n in names if n))
        self.images = images
        self.kind = kind
        self.pipelines = pipelines  # the pipeline's names (a PipelineVersion has two)


def v2_components(doc0, kind="PipelineSpec", pipelines=None):
    comps, execs = doc0["components"], doc0["deploymentSpec"]["executors"]
    found, skipped = [], []

    def walk(dag, prefix):
        for key, task in dag["tasks"].items():
            path = prefix + [key]
            cname = task["componentRef"]["name"]
            comp = comps[cname]
            if "dag" in comp:
                walk(comp["dag"], path)
                continue
            label = comp.get("executorLabel")
            if not label or "container" not in execs[label]:
                skipped.append("/".join(path))
                continue
            names = [key, task.get("taskInfo", {}).get("name"), cname,
                     cname[5:] if cname.startswith("comp-") else None, label, "/".join(path)]
            found.append(Component(label, names, [execs[label]["container"]["image"]],
                                   kind, pipelines or [doc0["pipelineInfo"]["name"]]))

    walk(doc0["root"]["dag"], [])
    labels = [c.ident for c in found]
    if len(labels) != len(set(labels)):
        raise CheckError("an executor is shared by several tasks (not expected from the SDK)")
    return found, skipped


def argo_spec(doc):
    return doc["spec"]["workflowSpec"] if doc["kind"] == "CronWorkflow" else doc["spec"]


def argo_components(doc):
    spec = argo_spec(doc)
    md = doc["metadata"]
    pipeline = md.get("name") or md["generateName"][:-1]
    templates = {t["name"]: t for t in spec["templates"]}
    extra = {name: set() for name in templates}

    def walk(tname, prefix, seen):
        t = templates[tname]
        tasks = (t.get("dag") or {}).get("tasks") or []
        steps = [s for group in (t.get("steps") or []) for s in group]
        for task in tasks + steps:
            child = task["template"]
            path = prefix + [task["name"]]
            extra[child].update({task["name"], "/".join(path)})
            if child not in seen:
                walk(child, path, seen | {child})

    walk(spec["entrypoint"], [], {spec["entrypoint"]})
    found = []
    for name, t in templates.items():
        if not any(k in t for k in POD_KINDS_ARGO):
            continue
        names = {name} | extra[name]
        ann = (t.get("metadata") or {}).get("annotations") or {}
        if "pipelines.kubeflow.org/task_display_name" in ann:
            names.add(ann["pipelines.kubeflow.org/task_display_name"])
        if "pipelines.kubeflow.org/component_spec" in ann:
            names.add(json.loads(ann["pipelines.kubeflow.org/component_spec"]).get("name"))
        images = []
        for k in ("container", "script"):
            if k in t and t[k].get("image"):
                images.append(t[k]["image"])
        for c in (t.get("containerSet") or {}).get("containers") or []:
            images.append(c.get("image"))
        found.append(Component(name, names, images, doc["kind"], [pipeline]))
    return found


def selects(sel, comp: Component) -> bool:
    for key, pats in sel.items():
        if key == "names" and not glob_any(pats, comp.names, True):
            return False
        if key == "images" and not glob_any(pats, comp.images, False):
            return False
        if key == "pipelines" and not glob_any(pats, comp.pipelines, False):
            return False
        if key == "kinds" and not glob_any(pats, [comp.kind], False):
            return False
    return True


def rule_selects(rule, comp) -> bool:
    if not selects(rule.get("match") or {}, comp):
        return False
    exclude = rule.get("exclude") or {}
    return not (exclude and selects(exclude, comp))


# --------------------------------------------------------------------------- merge model
def expr_key(kind, r):
    return (kind, r["key"], r["operator"], tuple(sorted(r.get("values") or [])))


def term_set(t):
    return frozenset([expr_key("e", r) for r in t.get("matchExpressions") or []] +
                     [expr_key("f", r) for r in t.get("matchFields") or []])


def conj(e, p):
    out = {}
    for field in ("matchExpressions", "matchFields"):
        items = list(e.get(field) or [])
        have = {expr_key(field, r) for r in items}
        for r in p.get(field) or []:
            if expr_key(field, r) not in have:
                items.append(r)
        if items:
            out[field] = items
    return out


def and_required(existing, policy):
    """SPEC §3 required node affinity. Returns the new term list (empty terms kept as is)."""
    empty = [t for t in existing if not term_set(t)]
    nonempty = [t for t in existing if term_set(t)]
    if not nonempty:
        out = []
        for p in policy:
            if term_set(p) not in {term_set(o) for o in out}:
                out.append(copy.deepcopy(p))
        return empty + out
    if all(any(term_set(p) <= term_set(e) for p in policy) for e in nonempty):
        return existing
    combos = [conj(e, p) for e in nonempty for p in policy]
    kept = []
    for i, c in enumerate(combos):
        s = term_set(c)
        if any(term_set(k) == s for k in kept):
            continue
        if any(j != i and term_set(o) < s for j, o in enumerate(combos)):
            continue
        kept.append(c)
    return kept + empty


def pool_entries(rule, pools):
    if "pool" not in rule:
        return [], []
    p = pools[rule["pool"]]
    tols = []
    for t in p.get("taints") or []:
        if t.get("value") not in (None, ""):
            tols.append({"key": t["key"], "operator": "Equal", "value": t["value"],
                         "effect": t["effect"]})
        else:
            tols.append({"key": t["key"], "operator": "Exists", "effect": t["effect"]})
    labels = p.get("labels") or {}
    term = {"matchExpressions": [{"key": k, "operator": "In", "values": [v]}
                                 for k, v in labels.items()]} if labels else None
    return tols, [term] if term else []


def tol_key(t):
    secs = t.get("tolerationSeconds")
    return (t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "",
            t.get("effect") or "", None if secs is None else int(secs))


def rule_parts(rule, pools):
    ptols, pterms = pool_entries(rule, pools)
    tols = ptols + list(rule.get("tolerations") or [])
    aff = rule.get("affinity") or {}
    na = aff.get("nodeAffinity") or {}
    own_req = ((na.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
               .get("nodeSelectorTerms") or [])
    req_steps = [t for t in (pterms, own_req) if t]
    preferred = na.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return {
        "tolerations": tols if ("tolerations" in rule or ptols) else None,
        "nodeSelector": rule.get("nodeSelector"),
        "required": req_steps,
        "preferred": preferred,
        "podAffinity": aff.get("podAffinity"),
        "podAntiAffinity": aff.get("podAntiAffinity"),
        "has_affinity": "affinity" in rule or bool(pterms),
        "podLabels": rule.get("podLabels") or {},
        "podAnnotations": rule.get("podAnnotations") or {},
        "replace": rule.get("strategy") == "replace",
        "priorityClassName": rule.get("priorityClassName"),
        "schedulerName": rule.get("schedulerName"),
        "runtimeClassName": rule.get("runtimeClassName"),
        "topologySpreadConstraints": rule.get("topologySpreadConstraints"),
    }


# v2 executor config -------------------------------------------------------------
def v2_tol(t):
    out = {}
    for k in ("effect", "key", "operator", "value"):
        if t.get(k):
            out[k] = t[k]
    if t.get("tolerationSeconds") is not None:
        out["tolerationSeconds"] = str(t["tolerationSeconds"])
    return out


def v2_req(r):
    out = {"key": r["key"], "operator": r["operator"]}
    if r.get("values"):
        out["values"] = list(r["values"])
    return out


def v2_term(t, weight=None):
    out = {}
    for f in ("matchExpressions", "matchFields"):
        if t.get(f):
            out[f] = [v2_req(r) for r in t[f]]
    if weight is not None:
        out["weight"] = float(weight)
    return out


def apply_v2(cfg, parts):
    if parts["tolerations"] is not None:
        if parts["replace"]:
            cfg["tolerations"] = []
        lst = cfg.setdefault("tolerations", [])
        for t in parts["tolerations"]:
            if "tolerationJson" not in t and tol_key(t) not in \
                    [tol_key(x) for x in lst if "tolerationJson" not in x]:
                lst.append(v2_tol(t))
    if parts["nodeSelector"] is not None:
        if parts["replace"]:
            cfg["nodeSelector"] = {}
        cfg.setdefault("nodeSelector", {}).setdefault("labels", {}).update(parts["nodeSelector"])
    if parts["podAffinity"] or parts["podAntiAffinity"]:
        raise CheckError("pod affinity selects a KFP v2 task (SPEC: error)")
    if parts["has_affinity"]:
        if parts["replace"]:
            cfg["nodeAffinity"] = []
        lst = cfg.get("nodeAffinity", [])

        def is_req(t):
            return "weight" not in t and "nodeAffinityJson" not in t and term_set(t)

        existing = [t for t in lst if is_req(t)]
        cur = existing
        for step in parts["required"]:
            cur = and_required(cur, [v2_term(t) for t in step])
        if cur is not existing and cur != existing:
            if existing:
                pos = next(i for i, t in enumerate(lst) if is_req(t))
                rest = [t for t in lst if not is_req(t)]
                before = sum(1 for t in lst[:pos] if not is_req(t))
                lst = rest[:before] + cur + rest[before:]
            else:
                lst = lst + cur
        for p in parts["preferred"]:
            term = v2_term(p["preference"], p["weight"])
            if term not in lst:
                lst = lst + [term]
        if lst:
            cfg["nodeAffinity"] = lst
    for field, src in (("labels", parts["podLabels"]), ("annotations", parts["podAnnotations"])):
        if src:
            cfg.setdefault("podMetadata", {}).setdefault(field, {}).update(src)


def model_v2(plain_docs, policy, kind="PipelineSpec", pipelines=None):
    """plain_docs: [IR] or [IR, platform spec]; returns the model's docs in the same shape."""
    doc0 = plain_docs[0]
    comps, skipped = v2_components(doc0, kind, pipelines)
    pools = {p["name"]: p for p in policy["spec"].get("nodePools") or []}
    platform = copy.deepcopy(plain_docs[1]) if len(plain_docs) > 1 else None
    execs = copy.deepcopy(((platform or {}).get("platforms", {}).get("kubernetes", {})
                           .get("deploymentSpec", {}).get("executors", {})))
    selected, matched = {}, {}
    for rule in policy["spec"].get("rules") or []:
        parts = rule_parts(rule, pools)
        hits = [c for c in comps if rule_selects(rule, c)]
        matched[rule["name"]] = [c.ident for c in hits]
        for c in hits:
            selected.setdefault(c.ident, []).append(rule["name"])
            cfg = copy.deepcopy(execs.get(c.ident, {}))
            apply_v2(cfg, parts)
            if cfg or c.ident in execs:
                execs[c.ident] = cfg
    if execs:
        if platform is None:
            platform = {}
        (platform.setdefault("platforms", {}).setdefault("kubernetes", {})
         .setdefault("deploymentSpec", {}))["executors"] = execs
    return [doc0] + ([platform] if platform else []), comps, skipped, selected, matched


# argo template ------------------------------------------------------------------
def argo_tol(t):
    out = {}
    for k in ("effect", "key", "operator", "tolerationSeconds", "value"):
        if t.get(k) not in (None, ""):
            out[k] = t[k]
    return out


def argo_apply_one(current, parts, field):
    """Returns the new value of template field `field` given its current value (or None)."""
    if field == "tolerations":
        if parts["tolerations"] is None:
            return current
        lst = [] if parts["replace"] else list(current or [])
        for t in parts["tolerations"]:
            if tol_key(t) not in [tol_key(x) for x in lst]:
                lst.append(argo_tol(t))
        return lst
    if field == "nodeSelector":
        if parts["nodeSelector"] is None:
            return current
        out = {} if parts["replace"] else dict(current or {})
        out.update(parts["nodeSelector"])
        return out
    if field == "affinity":
        if not parts["has_affinity"]:
            return current
        aff = {} if parts["replace"] else copy.deepcopy(current or {})
        if parts["required"] or parts["preferred"]:
            na = aff.setdefault("nodeAffinity", {})
            req = na.get("requiredDuringSchedulingIgnoredDuringExecution", {})
            terms = req.get("nodeSelectorTerms", [])
            cur = terms
            for step in parts["required"]:
                cur = and_required(cur, step)
            if cur:
                na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": cur}
            pref = na.get("preferredDuringSchedulingIgnoredDuringExecution", [])
            for p in parts["preferred"]:
                if p not in pref:
                    pref = pref + [p]
            if pref:
                na["preferredDuringSchedulingIgnoredDuringExecution"] = pref
        for k in ("podAffinity", "podAntiAffinity"):
            src = parts[k]
            if not src:
                continue
            dst = aff.setdefault(k, {})
            for kind in ("requiredDuringSchedulingIgnoredDuringExecution",
                         "preferredDuringSchedulingIgnoredDuringExecution"):
                for t in src.get(kind) or []:
                    lst = dst.setdefault(kind, [])
                    if t not in lst:
                        lst.append(t)
        return aff
    raise ValueError(field)


def argo_pod_spec_patch(t, parts):
    """runtimeClassName and topologySpreadConstraints through the template's podSpecPatch
    (JSON, as kfp 1.8 writes it): the runtime class set, a constraint appended unless one
    with the same topologyKey and whenUnsatisfiable is there (all of them replaced under
    `strategy: replace`); the patch written back only when it changes."""
    rc, tsc = parts["runtimeClassName"], parts["topologySpreadConstraints"]
    if rc is None and tsc is None:
        return
    patch = json.loads(t.get("podSpecPatch") or "{}")
    before = copy.deepcopy(patch)
    if rc is not None:
        patch["runtimeClassName"] = rc
    if tsc is not None:
        pair = lambda c: (c.get("topologyKey"), c.get("whenUnsatisfiable"))  # noqa: E731
        lst = [] if parts["replace"] else list(patch.get("topologySpreadConstraints") or [])
        def sorted_keys(v):  # maps kfsched creates have their keys sorted, as kubectl's
            if isinstance(v, dict):
                return {k: sorted_keys(v[k]) for k in sorted(v)}
            return [sorted_keys(x) for x in v] if isinstance(v, list) else v

        for c in tsc:
            if pair(c) not in [pair(x) for x in lst]:
                lst.append(sorted_keys(c))
        patch["topologySpreadConstraints"] = lst
    if patch != before:
        t["podSpecPatch"] = json.dumps(patch)


def empty(v, field):
    return v is None or (field != "affinity" and not v)


def model_argo(doc, policy):
    doc = copy.deepcopy(doc)
    spec = argo_spec(doc)
    comps = argo_components(doc)
    templates = {t["name"]: t for t in spec["templates"]}
    pools = {p["name"]: p for p in policy["spec"].get("nodePools") or []}
    selected, matched = {}, {}
    for rule in policy["spec"].get("rules") or []:
        parts = rule_parts(rule, pools)
        hits = [c for c in comps if rule_selects(rule, c)]
        matched[rule["name"]] = [c.ident for c in hits]
        for c in hits:
            selected.setdefault(c.ident, []).append(rule["name"])
            t = templates[c.ident]
            for field in ("nodeSelector", "tolerations", "affinity"):
                cur = t.get(field)
                if empty(cur, field) and not empty(spec.get(field), field):
                    seeded = copy.deepcopy(spec[field])
                    new = argo_apply_one(copy.deepcopy(seeded), parts, field)
                    if new != seeded:
                        t[field] = new
                else:
                    new = argo_apply_one(copy.deepcopy(cur), parts, field)
                    if new != cur and not (cur is None and not new):
                        t[field] = new
            # Argo: the template's name fields, else the workflow's (nothing written
            # when that is already the rule's value).
            for field, wf_field in (("priorityClassName", "podPriorityClassName"),
                                    ("schedulerName", "schedulerName")):
                want = parts[field]
                if want is not None and (t.get(field) or spec.get(wf_field)) != want:
                    t[field] = want
            argo_pod_spec_patch(t, parts)
            for field, src in (("labels", parts["podLabels"]),
                               ("annotations", parts["podAnnotations"])):
                if src:
                    md = t.setdefault("metadata", {})
                    md[field] = kfp_pod_metadata(md.get(field) or {}, src)
            if parts["podAnnotations"] and list(t["metadata"])[0] != "annotations":
                # kfp writes `annotations` before `labels` when the op has an annotation
                # before template time (a user call or a display name)
                md = t["metadata"]
                t["metadata"] = {"annotations": md.pop("annotations"), **md}
    return doc, comps, selected, matched


KFP_METADATA_PREFIX = "pipelines.kubeflow.org/"


def kfp_pod_metadata(current: dict, new: dict) -> dict:
    """kfp 1.8.22's order for pod labels / annotations: the user's keys in call order,
    then kfp's own `pipelines.kubeflow.org/*` keys (added at template time). An existing
    key keeps its place; a new one goes before the first kfp key (at the end if none)."""
    items = list(current.items())
    for key, value in new.items():
        at = next((i for i, (k, _) in enumerate(items) if k == key), None)
        if at is not None:
            items[at] = (key, value)
            continue
        at = next((i for i, (k, _) in enumerate(items) if k.startswith(KFP_METADATA_PREFIX)),
                  len(items))
        items.insert(at, (key, value))
    return dict(items)


# --------------------------------------------------------------------------- diffing
def diff_paths(a, b, path="", out=None):
    out = [] if out is None else out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a:
                out.append(f"{path}.{k} (added)")
            elif k not in b:
                out.append(f"{path}.{k} (removed)")
            else:
                diff_paths(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff_paths(x, y, f"{path}[{i}]", out)
    elif a != b or type(a) is not type(b):
        out.append(path or "(root)")
    return out


def ordered(obj):
    """Same data with dict key order made significant (for maps kfsched inserts into)."""
    if isinstance(obj, dict):
        return [(k, ordered(v)) for k, v in obj.items()]
    if isinstance(obj, list):
        return [ordered(v) for v in obj]
    return obj


def load(path: Path):
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    text = raw.decode("utf-8").replace("\r\n", "\n")
    return list(yaml.load_all(text, Loader=Loader)), raw


def check_case(sdk: str, case: Path):
    files = {p.name for p in case.iterdir()} - {"plain.json", "manifest.yaml"}
    if files != FILES:
        raise CheckError(f"files {sorted(files)}")
    policy = yaml.load(case.joinpath("policy.yaml").read_text(), Loader=Loader)
    errs = validate_policy(policy)
    if errs:
        raise CheckError("invalid policy: " + "; ".join(errs))
    plain_docs, plain_raw = load(case / "plain.yaml")
    exp_docs, exp_raw = load(case / "expected.yaml")
    row = {"case": f"{sdk}/{case.name}", "plain": (case / "plain.yaml").stat().st_size,
           "expected": (case / "expected.yaml").stat().st_size}
    if sdk == "pv":
        return check_case_pv(case, row, policy, plain_docs, plain_raw, exp_docs, exp_raw)
    if sdk == "v2":
        model, comps, skipped, selected, matched = model_v2(plain_docs, policy)
        if exp_docs != model:
            d = diff_paths(model[1] if len(model) > 1 else {},
                           exp_docs[1] if len(exp_docs) > 1 else {})
            raise CheckError(f"model != expected: {d[:8]}")
        # doc 0 and the header comment are byte-identical
        p_text = plain_raw.decode().replace("\r\n", "\n")
        e_text = exp_raw.decode().replace("\r\n", "\n")
        p0, e0 = p_text.split("\n---\n")[0], e_text.split("\n---\n")[0]
        if p0.rstrip("\n") != e0.rstrip("\n"):
            raise CheckError("doc 0 / header differ between plain and expected")
        def executors(docs):
            if len(docs) < 2:
                return {}, None
            d = copy.deepcopy(docs[1])
            ex = d["platforms"]["kubernetes"]["deploymentSpec"].pop("executors")
            return ex, d

        pex, prest = executors(plain_docs)
        eex, erest = executors(exp_docs)
        if prest is not None and prest != erest:
            raise CheckError("platform document differs outside executors")
        dpaths = []
        for label in sorted(set(pex) | set(eex)):
            if label not in pex:
                dpaths += [f"{label}.{k} (added)" for k in eex[label]]
            elif label not in eex:
                dpaths.append(f"{label} (removed)")
            else:
                dpaths += diff_paths(pex[label], eex[label], label)
        changed = sorted({label for label in set(pex) | set(eex)
                          if pex.get(label) != eex.get(label)})
        bad = [c for c in changed if c not in selected]
        if bad:
            raise CheckError(f"changed but not selected: {bad}")
        row.update(components=len(comps), skipped=len(skipped))
    else:
        if len(plain_docs) != 1 or len(exp_docs) != 1:
            raise CheckError("one document expected")
        model, comps, selected, matched = model_argo(plain_docs[0], policy)
        if model != exp_docs[0]:
            raise CheckError(f"model != expected: {diff_paths(model, exp_docs[0])[:8]}")
        mt = {t["name"]: t for t in argo_spec(model)["templates"]}
        for t in argo_spec(exp_docs[0])["templates"]:
            m = mt[t["name"]]
            for get in (lambda x: x.get("nodeSelector"),
                        lambda x: list(x.get("metadata") or {}),
                        lambda x: (x.get("metadata") or {}).get("labels"),
                        lambda x: (x.get("metadata") or {}).get("annotations")):
                if ordered(get(m)) != ordered(get(t)):
                    raise CheckError(f"{t['name']}: key order differs from the model's")
        dpaths = diff_paths(plain_docs[0], exp_docs[0])
        sched = re.compile(r"^\.spec(\.workflowSpec)?\.templates\[(\d+)\]\."
                           r"(nodeSelector|tolerations|affinity|metadata\.labels|"
                           r"metadata\.annotations|priorityClassName|schedulerName|"
                           r"podSpecPatch)\b")
        names = [t["name"] for t in argo_spec(plain_docs[0])["templates"]]
        changed = set()
        for p in dpaths:
            m = sched.match(p)
            if not m:
                raise CheckError(f"non-scheduling difference {p}")
            changed.add(names[int(m.group(2))])
        bad = sorted(changed - set(selected))
        if bad:
            raise CheckError(f"changed but not selected: {bad}")
        row.update(components=len(comps), skipped=0)
        changed = sorted(changed)
    row.update(selected=len(selected), changed=len(changed), paths=len(dpaths),
               nomatch=[r for r, hits in matched.items() if not hits])
    return row


# PipelineVersion (KFP Kubernetes-native manifests) ----------------------------------
def pipeline_versions(docs):
    """Every PipelineVersion object in docs, items of a `kind: List` included."""
    for d in docs:
        if not isinstance(d, dict):
            continue
        if d.get("kind") == "List":
            yield from (i for i in d.get("items") or [] if i.get("kind") == "PipelineVersion")
        elif d.get("kind") == "PipelineVersion":
            yield d


def model_pv(plain_docs, policy):
    """model_v2 applied to every PipelineVersion's spec.pipelineSpec / spec.platformSpec."""
    model = copy.deepcopy(plain_docs)
    comps, skipped, selected, matched = [], [], {}, {}
    for pv in pipeline_versions(model):
        spec = pv["spec"]
        ir = spec["pipelineSpec"]
        names = [spec["pipelineName"], ir["pipelineInfo"]["name"]]
        docs = [ir] + ([spec["platformSpec"]] if "platformSpec" in spec else [])
        out, c, sk, sel, mat = model_v2(docs, policy, "PipelineVersion", names)
        if len(out) > 1:
            spec["platformSpec"] = out[1]
        who = pv["metadata"]["name"]
        comps += c
        skipped += sk
        selected.update({f"{who}/{k}": v for k, v in sel.items()})
        for rule, hits in mat.items():
            matched.setdefault(rule, []).extend(f"{who}/{h}" for h in hits)
    return model, comps, skipped, selected, matched


PLATFORM_SPEC_LINE = re.compile(r"^( *)platformSpec:$")


def without_platform_spec(text: str) -> str:
    """The text minus every `platformSpec:` block (the key line and the deeper lines after
    it), whatever its indentation (a PipelineVersion, or an item of a List)."""
    out, depth = [], None
    for line in text.split("\n"):
        if depth is not None:
            if line.startswith(" " * (depth + 1)):
                continue
            depth = None
        m = PLATFORM_SPEC_LINE.match(line)
        if m:
            depth = len(m.group(1))
            continue
        out.append(line)
    return "\n".join(out)


def check_case_pv(case: Path, row, policy, plain_docs, plain_raw, exp_docs, exp_raw):
    model, comps, skipped, selected, matched = model_pv(plain_docs, policy)
    if exp_docs != model:
        raise CheckError(f"model != expected: {diff_paths(model, exp_docs)[:8]}")
    p_text = plain_raw.decode().replace("\r\n", "\n")
    e_text = exp_raw.decode().replace("\r\n", "\n")
    if without_platform_spec(p_text) != without_platform_spec(e_text):
        raise CheckError("plain and expected differ outside spec.platformSpec")
    dpaths, changed = [], []
    for pv_p, pv_e in zip(pipeline_versions(plain_docs), pipeline_versions(exp_docs)):
        who = pv_p["metadata"]["name"]
        ps_p = copy.deepcopy(pv_p["spec"].get("platformSpec") or {})
        ps_e = copy.deepcopy(pv_e["spec"].get("platformSpec") or {})

        def executors(ps):
            return ((ps.get("platforms", {}).get("kubernetes", {}).get("deploymentSpec", {}))
                    .pop("executors", {}))

        pex, eex = executors(ps_p), executors(ps_e)
        for ps in (ps_p, ps_e):   # a created deploymentSpec / platformSpec is no other change
            k8s = ps.get("platforms", {}).get("kubernetes", {})
            if k8s.get("deploymentSpec") == {}:
                del k8s["deploymentSpec"]
            if ps.get("platforms") == {"kubernetes": {}}:
                del ps["platforms"]
        if ps_p != ps_e:
            raise CheckError(f"{who}: platformSpec differs outside the executors")
        for label in sorted(set(pex) | set(eex)):
            if pex.get(label) != eex.get(label):
                changed.append(f"{who}/{label}")
                dpaths += diff_paths(pex.get(label, {}), eex.get(label, {}), label)
    bad = [c for c in changed if c not in selected]
    if bad:
        raise CheckError(f"changed but not selected: {bad}")
    row.update(components=len(comps), skipped=len(skipped), selected=len(selected),
               changed=len(changed), paths=len(dpaths),
               nomatch=[r for r, hits in matched.items() if not hits])
    return row


def check_variant(case: Path, base: Path, kind: str):
    for f in ("plain.yaml", "expected.yaml"):
        got, want = (case / f).read_bytes(), (base / f).read_bytes()
        if kind == "crlf":
            ok = b"\r\n" in got and got.replace(b"\r\n", b"\n") == want and b"\r" not in want
        else:
            ok = got == b"\xef\xbb\xbf" + want
        if not ok:
            raise CheckError(f"{f} is not the base case's {kind} variant")
    if (case / "policy.yaml").read_bytes() != (base / "policy.yaml").read_bytes():
        raise CheckError("policy differs from the base case")


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "testdata/golden")
    rows, failures = [], []
    for sdk in ("v2", "v1", "pv"):
        if not (root / sdk).is_dir():
            continue
        for case in sorted((root / sdk).iterdir()):
            try:
                row = check_case(sdk, case)
                for kind in ("crlf", "bom"):
                    if case.name.endswith("_" + kind):
                        check_variant(case, root / sdk / case.name[:-len(kind) - 1], kind)
                rows.append(row)
            except CheckError as e:
                failures.append(f"{sdk}/{case.name}: {e}")
    hdr = f"{'case':<48} {'pods':>5} {'skip':>4} {'sel':>4} {'chg':>4} {'paths':>5} " \
          f"{'plain B':>9} {'expected B':>10}  rules matching nothing"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['case']:<48} {r['components']:>5} {r['skipped']:>4} {r['selected']:>4} "
              f"{r['changed']:>4} {r['paths']:>5} {r['plain']:>9} {r['expected']:>10}  "
              f"{', '.join(r['nomatch']) or '-'}")
    print(f"{len(rows)} passed, {len(failures)} failed")
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
