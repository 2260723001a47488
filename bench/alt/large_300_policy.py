"""The intent of testdata/golden/v{1,2}/large_300/policy.yaml, as a user's own script
would hard-code it: what each alternative applies."""
import fnmatch

BATCH = {"effect": "NoSchedule", "key": "workload", "operator": "Equal", "value": "batch"}
GPU = {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}
GPU_TERM = {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                  "values": ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"]}]}
NVME = {"matchExpressions": [{"key": "example.com/local-nvme", "operator": "Exists"}]}


def decide(names, image):
    """(tolerations, nodeSelector, required term?, preferred?, annotations, labels, v1 os selector)."""
    tol = [BATCH]
    ns = {}
    req = pref = False
    ann, lab = {}, {}
    if any(fnmatch.fnmatchcase(n, "featurize*") for n in names):
        ns["pool"] = "cpu-highmem"
    if fnmatch.fnmatchcase(image or "", "pytorch/pytorch:*"):
        tol.append(GPU)
        req = True
    if any(fnmatch.fnmatchcase(n, "Train checkpoint shard *") for n in names):
        pref = True
        ann["example.com/checkpoint"] = "true"
    if any(fnmatch.fnmatchcase(n, "register*") for n in names):
        lab["stage"] = "registry"
    return tol, ns, req, pref, ann, lab
