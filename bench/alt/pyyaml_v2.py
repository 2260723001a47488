"""KFP v2: load with PyYAML (C loader), add the platform document, dump with the SDK's own
dumper settings (yaml.dump_all(sort_keys=True)), keep the header comment. The best a
script can do without diff noise on SDK-written files."""
import sys
import yaml
import copy
from large_300_policy import decide, GPU_TERM, NVME

src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
head_lines = []
for line in text.split("\n"):
    if line.startswith("#"):
        head_lines.append(line)
    else:
        break
docs = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
pipe = docs[0]
comps, execs = pipe["components"], pipe["deploymentSpec"]["executors"]
platform = {}


def walk(tasks, prefix):
    for key, task in tasks.items():
        cname = task["componentRef"]["name"]
        comp = comps[cname]
        path = prefix + key
        if "dag" in comp:
            walk(comp["dag"]["tasks"], path + "/")
            continue
        label = comp["executorLabel"]
        ex = execs[label]
        if "container" not in ex:
            continue
        names = [key, task.get("taskInfo", {}).get("name", ""), cname, cname[5:], label, path]
        tol, ns, req, pref, ann, lab = decide(names, ex["container"].get("image"))
        cfg = {"tolerations": copy.deepcopy(tol)}
        if ns:
            cfg["nodeSelector"] = {"labels": ns}
        aff = []
        if req:
            aff.append(copy.deepcopy(GPU_TERM))
        if pref:
            aff.append(dict(copy.deepcopy(NVME), weight=60.0))
        if aff:
            cfg["nodeAffinity"] = aff
        md = {}
        if ann:
            md["annotations"] = ann
        if lab:
            md["labels"] = lab
        if md:
            cfg["podMetadata"] = md
        platform[label] = cfg


walk(pipe["root"]["dag"]["tasks"], "")
docs.append({"platforms": {"kubernetes": {"deploymentSpec": {"executors": platform}}}})
with open(dst, "w") as f:
    if head_lines:
        f.write("\n".join(head_lines) + "\n")
    yaml.dump_all(docs, f, sort_keys=True)
