"""KFP v1: load with PyYAML (C loader, ordered), set the template fields, dump with kfp's
own dumper (kfp.components._yaml_utils.dump_yaml, default_flow_style=None)."""
import sys
import yaml
import json
from collections import OrderedDict
from kfp.components._yaml_utils import dump_yaml
import copy
from large_300_policy import decide, GPU_TERM, NVME


class Loader(yaml.CSafeLoader):
    pass


Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                       lambda l, n: OrderedDict(l.construct_pairs(n)))
src, dst = sys.argv[1], sys.argv[2]
wf = yaml.load(open(src), Loader=Loader)
calls = {}
for t in wf["spec"]["templates"]:
    for task in (t.get("dag") or {}).get("tasks", []):
        calls.setdefault(task["template"], []).append(task["name"])
ORDER = ["name", "container", "resource", "inputs", "outputs", "nodeSelector", "tolerations", "affinity", "metadata"]
for i, t in enumerate(wf["spec"]["templates"]):
    if "container" not in t:
        continue
    names = [t["name"]] + calls.get(t["name"], [])
    ann = t.get("metadata", {}).get("annotations", {})
    if "pipelines.kubeflow.org/task_display_name" in ann:
        names.append(ann["pipelines.kubeflow.org/task_display_name"])
    if "pipelines.kubeflow.org/component_spec" in ann:
        names.append(json.loads(ann["pipelines.kubeflow.org/component_spec"])["name"])
    tol, ns, req, pref, _ann, _lab = decide(names, t["container"].get("image"))
    if "Register" in names:
        ns["kubernetes.io/os"] = "linux"
    new = OrderedDict()
    for k, v in t.items():
        new[k] = v
    if ns:
        new["nodeSelector"] = OrderedDict(ns)
    new["tolerations"] = [OrderedDict(sorted(copy.deepcopy(x).items())) for x in tol]
    na = OrderedDict()
    if pref:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = [OrderedDict([("preference", copy.deepcopy(NVME)), ("weight", 60)])]
    if req:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = OrderedDict([("nodeSelectorTerms", [copy.deepcopy(GPU_TERM)])])
    if na:
        new["affinity"] = OrderedDict([("nodeAffinity", na)])
    t2 = OrderedDict(sorted(new.items(), key=lambda kv: ORDER.index(kv[0]) if kv[0] in ORDER else len(ORDER)))
    wf["spec"]["templates"][i] = t2
open(dst, "w").write(dump_yaml(wf))
