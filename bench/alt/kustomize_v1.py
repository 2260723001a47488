"""KFP v1 with a kustomize JSON 6902 patch: writes a kustomization directory whose patch
adds the large_300 policy's fields template by template (what a user would generate)."""
import json
import os
import sys
import yaml
import copy
from large_300_policy import decide, GPU_TERM, NVME

src, outdir = sys.argv[1], sys.argv[2]
os.makedirs(outdir, exist_ok=True)
text = open(src).read()
wf = yaml.load(text, Loader=yaml.CSafeLoader)
name = wf["metadata"].get("name") or wf["metadata"]["generateName"].rstrip("-")
if "name" not in wf["metadata"]:
    # kustomize needs metadata.name; a KFP v1 file only has generateName.
    text = text.replace("  generateName: ", f"  name: {name}\n  generateName: ", 1)
open(os.path.join(outdir, "workflow.yaml"), "w").write(text)
calls = {}
for t in wf["spec"]["templates"]:
    for task in (t.get("dag") or {}).get("tasks", []):
        calls.setdefault(task["template"], []).append(task["name"])
ops = []
for i, t in enumerate(wf["spec"]["templates"]):
    if "container" not in t:
        continue
    names = [t["name"]] + calls.get(t["name"], [])
    ann = t.get("metadata", {}).get("annotations", {})
    if "pipelines.kubeflow.org/task_display_name" in ann:
        names.append(ann["pipelines.kubeflow.org/task_display_name"])
    if "pipelines.kubeflow.org/component_spec" in ann:
        names.append(json.loads(ann["pipelines.kubeflow.org/component_spec"])["name"])
    tol, ns, req, pref, _a, _l = decide(names, t["container"].get("image"))
    if "Register" in names:
        ns["kubernetes.io/os"] = "linux"
    base = f"/spec/templates/{i}"
    if ns:
        ops.append({"op": "add", "path": f"{base}/nodeSelector", "value": ns})
    ops.append({"op": "add", "path": f"{base}/tolerations", "value": tol})
    na = {}
    if pref:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = [{"preference": NVME, "weight": 60}]
    if req:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [GPU_TERM]}
    if na:
        ops.append({"op": "add", "path": f"{base}/affinity", "value": {"nodeAffinity": na}})
open(os.path.join(outdir, "patch.json"), "w").write(json.dumps(ops))
open(os.path.join(outdir, "kustomization.yaml"), "w").write(
    "resources: [workflow.yaml]\npatches:\n- path: patch.json\n  target: {group: argoproj.io, version: v1alpha1, kind: Workflow, name: %s}\n" % name)
