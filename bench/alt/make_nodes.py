#!/usr/bin/env python3
"""A `kubectl get nodes -o yaml` (or -o json) of N nodes, shaped like real
kubelet-managed nodes: well-known labels, annotations, addresses,
conditions, node info and a list of images, so a snapshot weighs what a
real one does (about 5 KB a node). A quarter are GPU nodes tainted
nvidia.com/gpu and workload=batch, one in 50 is cordoned.

    bench/alt/make_nodes.py N yaml|json OUT
"""
import json
import random
import sys

def node(i, rng):
    gpu = i % 4 == 0
    name = f"node-{i:05d}"
    zone = f"zone-{'abc'[i % 3]}"
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "p4d.24xlarge" if gpu else "m6i.8xlarge",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": zone,
        "pool": "gpu" if gpu else rng.choice(["cpu", "cpu-highmem"]),
    }
    if gpu:
        labels["nvidia.com/gpu.product"] = rng.choice(["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "Tesla-T4"])
        labels["nvidia.com/gpu.count"] = "8"
    taints = []
    if gpu:
        taints.append({"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"})
    if rng.random() < 0.5:
        taints.append({"effect": "NoSchedule", "key": "workload", "value": "batch"})
    cordoned = i % 50 == 7
    if cordoned:
        taints.append({"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "timeAdded": "2026-11-30T10:00:00Z"})
    alloc = {"cpu": "95690m" if gpu else "31750m", "ephemeral-storage": "95491281146", "hugepages-1Gi": "0",
             "hugepages-2Mi": "0", "memory": "1140599976Ki" if gpu else "127934392Ki", "pods": "110"}
    if gpu:
        alloc["nvidia.com/gpu"] = "8"
    cond = lambda t, s, r, m: {"lastHeartbeatTime": "2026-12-01T12:00:00Z", "lastTransitionTime": "2026-11-20T08:00:00Z",
                                "message": m, "reason": r, "status": s, "type": t}
    spec = {"podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24", "podCIDRs": [f"10.{i // 256 % 256}.{i % 256}.0/24"],
            "providerID": f"aws:///us-east-1a/i-0{i:016x}"}
    if taints:
        spec["taints"] = taints
    if cordoned:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {"alpha.kubernetes.io/provided-node-ip": f"10.0.{i // 256 % 256}.{i % 256}",
                            "node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "creationTimestamp": "2026-11-20T08:00:00Z",
            "labels": labels,
            "name": name,
            "resourceVersion": str(100000 + i),
            "uid": f"{i:08x}-1111-2222-3333-444455556666",
        },
        "spec": spec,
        "status": {
            "addresses": [{"address": f"10.0.{i // 256 % 256}.{i % 256}", "type": "InternalIP"},
                          {"address": f"ip-10-0-{i // 256 % 256}-{i % 256}.ec2.internal", "type": "Hostname"}],
            "allocatable": alloc,
            "capacity": dict(alloc, cpu="96" if gpu else "32"),
            "conditions": [cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                           cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                           cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                           cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [{"names": [f"registry.example.com/team/image-{k}@sha256:{'%064x' % (i * 31 + k)}",
                                  f"registry.example.com/team/image-{k}:v{k}.0"], "sizeBytes": 100000000 + k}
                       for k in range(12)],
            "nodeInfo": {"architecture": "amd64", "bootID": f"{i:08x}-aaaa-bbbb-cccc-dddddddddddd",
                         "containerRuntimeVersion": "containerd://1.7.22", "kernelVersion": "6.1.112",
                         "kubeProxyVersion": "", "kubeletVersion": "v1.36.3", "machineID": f"{i:032x}",
                         "operatingSystem": "linux", "osImage": "Amazon Linux 2023", "systemUUID": f"{i:08x}-0000-0000-0000-000000000000"},
        },
    }

def to_yaml(v, indent=0):
    """Block YAML as kubectl writes it (sequences not indented under their key)."""
    pad = " " * indent
    out = []
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, (dict, list)) and x:
                out.append(f"{pad}{k}:")
                out.append(to_yaml(x, indent + 2 if isinstance(x, dict) else indent))
            else:
                out.append(f"{pad}{k}: {scalar(x)}")
    else:
        for x in v:
            text = to_yaml(x, indent + 2) if isinstance(x, (dict, list)) else pad + "  " + scalar(x)
            out.append(pad + "- " + text.lstrip())
    return "\n".join(out)

def scalar(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if x == {} or x == []:
        return json.dumps(x)
    s = str(x)
    plain_ok = s and s[0].isalpha() and ":" not in s and "#" not in s and s not in ("true", "false", "null", "yes", "no")
    return s if plain_ok else json.dumps(s)

def main():
    n, fmt, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    rng = random.Random(7)
    items = [node(i, rng) for i in range(n)]
    doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    with open(out, "w") as f:
        if fmt == "json":
            json.dump(doc, f, indent=4)
        else:
            f.write(to_yaml(doc) + "\n")

if __name__ == "__main__":
    main()
