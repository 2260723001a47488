"""KFP v2 with ruamel.yaml's round-trip mode (keeps comments and order, but re-emits the
file in its own style)."""
import sys
from ruamel.yaml import YAML
import copy
from large_300_policy import decide, GPU_TERM, NVME

src, dst = sys.argv[1], sys.argv[2]
y = YAML()
y.width = 80
with open(src) as f:
    docs = list(y.load_all(f))
pipe = docs[0]
comps, execs = pipe["components"], pipe["deploymentSpec"]["executors"]
platform = {}


def walk(tasks, prefix):
    for key, task in tasks.items():
        cname = task["componentRef"]["name"]
        comp = comps[cname]
        if "dag" in comp:
            walk(comp["dag"]["tasks"], prefix + key + "/")
            continue
        label = comp["executorLabel"]
        ex = execs[label]
        if "container" not in ex:
            continue
        names = [key, task.get("taskInfo", {}).get("name", ""), cname, cname[5:], label, prefix + key]
        tol, ns, req, pref, ann, lab = decide(names, ex["container"].get("image"))
        cfg = {}
        aff = ([copy.deepcopy(GPU_TERM)] if req else []) + ([dict(copy.deepcopy(NVME), weight=60.0)] if pref else [])
        if aff:
            cfg["nodeAffinity"] = aff
        if ns:
            cfg["nodeSelector"] = {"labels": ns}
        md = {}
        if ann:
            md["annotations"] = ann
        if lab:
            md["labels"] = lab
        if md:
            cfg["podMetadata"] = md
        cfg["tolerations"] = [dict(t) for t in tol]
        platform[label] = cfg


walk(pipe["root"]["dag"]["tasks"], "")
docs.append({"platforms": {"kubernetes": {"deploymentSpec": {"executors": dict(sorted(platform.items()))}}}})
with open(dst, "w") as f:
    y.dump_all(docs, f)
