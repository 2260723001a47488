#!/usr/bin/env bash
# `kubectl kfsched check` of the 300-task KFP v2 pipeline (testdata/golden/v2/large_300,
# under its policy) against N nodes (default 5000), side by side with asking the real
# scheduler: create the same N nodes on the test control plane, create the 300 pods that
# check says the KFP backend makes, and wait until every one has its PodScheduled
# condition. Prints medians of RUNS runs (default 10) for check on the synthetic snapshot
# (bench/alt/make_nodes.py: kubelet-shaped nodes, about 5 KB each, as YAML and JSON),
# on `kubectl get nodes -o yaml|json` of the cluster, with -o text and -o json, the peak
# RSS, and the scheduler's time; and how many of the 300 verdicts the scheduler confirms.
#
#   bench/check.sh                      # starts its own cluster in .cache/cluster-bench
#   N=5000 RUNS=10 bench/check.sh
#   SKIP_CLUSTER=1 bench/check.sh       # only the offline timings
#
# Uses a running cluster when $KFSCHED_CLUSTER_DIR has one (scripts/cluster.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-5000}
RUNS=${RUNS:-10}
BIN=${KFSCHED_BIN:-target/release/kubectl-kfsched}
export BIN
# kubectl at the Kubernetes pin (versions.env), built with the control plane.
KUBECTL=${KUBECTL:-${KFSCHED_KUBECTL:-$PWD/.cache/kube-bin/kubectl}}
[ -x "$KUBECTL" ] || command -v "$KUBECTL" >/dev/null || scripts/build-control-plane.sh kubectl >/dev/null
P=testdata/golden/v2/large_300
OUT=.cache/bench
mkdir -p "$OUT"

[ -x "$BIN" ] || cargo build --release --bin kubectl-kfsched
for f in yaml json; do
  [ -f "$OUT/nodes-$N.$f" ] || python3 bench/alt/make_nodes.py "$N" "$f" "$OUT/nodes-$N.$f"
done

# median_run LABEL ARGS...: RUNS timed runs of the binary (after one untimed); prints the
# median wall time, the range and the peak RSS. check exits 1 when a component fits no
# node, which is a result here, not a failure.
median_run() {
  python3 - "$RUNS" "$@" <<'PY'
import os, resource, statistics, subprocess, sys, time
runs, label, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
cmd = [os.environ["BIN"], *args]
def once():
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.decode()[-2000:]}")
    return time.perf_counter() - t0
once()
times = [once() for _ in range(runs)]
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"| {label} | {statistics.median(times) * 1000:.0f} ms | {min(times) * 1000:.0f}-{max(times) * 1000:.0f} ms | {rss / 1024:.1f} MB |")
PY
}

echo "| check of large_300 (300 tasks) -p policy.yaml | median | range | peak RSS |"
echo "|---|---|---|---|"
median_run "--nodes synthetic $N nodes, YAML ($(du -h "$OUT/nodes-$N.yaml" | cut -f1))" check -p $P/policy.yaml --nodes "$OUT/nodes-$N.yaml" $P/plain.yaml
median_run "--nodes synthetic $N nodes, JSON ($(du -h "$OUT/nodes-$N.json" | cut -f1))" check -p $P/policy.yaml --nodes "$OUT/nodes-$N.json" $P/plain.yaml
median_run "the same YAML, -o json" check -p $P/policy.yaml --nodes "$OUT/nodes-$N.yaml" -o json $P/plain.yaml
[ -f "$OUT/nodes-50.yaml" ] || python3 bench/alt/make_nodes.py 50 yaml "$OUT/nodes-50.yaml"
median_run "--nodes 50 nodes (the fixed cost)" check -p $P/policy.yaml --nodes "$OUT/nodes-50.yaml" $P/plain.yaml

[ "${SKIP_CLUSTER:-}" = 1 ] && exit 0

export KFSCHED_CLUSTER_DIR=${KFSCHED_CLUSTER_DIR:-$PWD/.cache/cluster-bench}
started=0
if ! scripts/cluster.sh status >/dev/null 2>&1; then
  scripts/cluster.sh start
  started=1
fi
ns=bench-check-$$
cleanup() {
  "$KUBECTL" --kubeconfig "$KC" delete ns "$ns" --wait=false >/dev/null 2>&1 || true
  "$KUBECTL" --kubeconfig "$KC" delete nodes -l bench-check=1 --wait=false >/dev/null 2>&1 || true
  if [ "$started" = 1 ]; then scripts/cluster.sh stop >/dev/null; fi
}
eval "$(scripts/cluster.sh env)"
KC=$KFSCHED_ADMIN_KUBECONFIG
trap cleanup EXIT

# The same nodes on the cluster (kwok plays their kubelets), labelled for cleanup.
python3 - "$OUT/nodes-$N.json" "$OUT/cluster-nodes.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for n in d["items"]:
    n["metadata"] = {"name": n["metadata"]["name"], "labels": dict(n["metadata"]["labels"], **{"bench-check": "1"})}
    n["spec"].pop("podCIDR", None); n["spec"].pop("podCIDRs", None); n["spec"].pop("providerID", None)
    n["spec"]["taints"] = [t for t in n["spec"].get("taints", []) if t["key"] != "node.kubernetes.io/unschedulable"]
    n["status"] = {"allocatable": n["status"]["allocatable"], "capacity": n["status"]["capacity"]}
json.dump(d, open(sys.argv[2], "w"))
PY
start=$(date +%s.%N)
"$KUBECTL" --kubeconfig "$KC" create -f "$OUT/cluster-nodes.json" >/dev/null
echo "cluster: created $N nodes in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s; waiting until they are Ready" >&2
until [ "$("$KUBECTL" --kubeconfig "$KC" get nodes -l bench-check=1 -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
ok = sum(1 for n in items
         if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))
         and not any(t["key"] == "node.kubernetes.io/not-ready" for t in n["spec"].get("taints", [])))
print(ok)')" -ge "$N" ]; do sleep 5; done
# kubectl's own snapshot of the cluster.
"$KUBECTL" --kubeconfig "$KC" get nodes -o yaml > "$OUT/cluster-snapshot.yaml"
"$KUBECTL" --kubeconfig "$KC" get nodes -o json > "$OUT/cluster-snapshot.json"
total=$("$KUBECTL" --kubeconfig "$KC" get nodes --no-headers | wc -l)
echo
echo "| against the cluster's $total nodes | median | range | peak RSS |"
echo "|---|---|---|---|"
median_run "--nodes \`kubectl get nodes -o yaml\` ($(du -h "$OUT/cluster-snapshot.yaml" | cut -f1))" check -p $P/policy.yaml --nodes "$OUT/cluster-snapshot.yaml" $P/plain.yaml
median_run "--nodes \`kubectl get nodes -o json\` ($(du -h "$OUT/cluster-snapshot.json" | cut -f1))" check -p $P/policy.yaml --nodes "$OUT/cluster-snapshot.json" $P/plain.yaml
median_run "live (--kubeconfig)" check -p $P/policy.yaml --kubeconfig "$KC" $P/plain.yaml

# The scheduler: the 300 pods check says the KFP backend makes, created at once.
"$BIN" check -p $P/policy.yaml --nodes "$OUT/cluster-snapshot.yaml" -o json $P/plain.yaml > "$OUT/verdicts.json" || true
"$KUBECTL" --kubeconfig "$KC" create namespace "$ns" >/dev/null
python3 - "$OUT/verdicts.json" "$ns" "$OUT/pods.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
items = []
for i, c in enumerate(v["components"]):
    spec = c["pod"]["spec"]
    for k in ("containers", "initContainers"):
        for x in spec.get(k, []):
            x["image"] = "registry.k8s.io/pause:3.10"
    spec["terminationGracePeriodSeconds"] = 0
    items.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"c{i:03d}", "namespace": sys.argv[2]}, "spec": spec})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[3], "w"))
PY
start=$(date +%s.%N)
"$KUBECTL" --kubeconfig "$KC" create -f "$OUT/pods.json" >/dev/null
until "$KUBECTL" --kubeconfig "$KC" get pods -n "$ns" -o json > "$OUT/pods-status.json" && python3 - "$OUT/pods-status.json" <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
done = [p for p in items if p["spec"].get("nodeName") or any(c["type"] == "PodScheduled" and c["status"] == "False" for c in p.get("status", {}).get("conditions", []))]
sys.exit(0 if len(done) == len(items) == 300 else 1)
PY
do sleep 0.2; done
took=$(python3 -c "print(round(($(date +%s.%N) - $start) * 1000))")
python3 - "$OUT/verdicts.json" "$OUT/pods-status.json" "$took" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["components"]
pods = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[2]))["items"]}
agree = 0
for i, c in enumerate(v):
    p = pods[f"c{i:03d}"]
    node = p["spec"].get("nodeName")
    if node:
        agree += node in c["nodes"]
    else:
        m = next(x["message"] for x in p["status"]["conditions"] if x["type"] == "PodScheduled")
        agree += c["message"] == m
print()
print("| the scheduler | wall |")
print("|---|---|")
print(f"| create the 300 pods, wait for every PodScheduled condition | {sys.argv[3]} ms |")
print(f"\nThe scheduler confirms {agree} of 300 verdicts (bound to a node check lists, or the same message).")
PY
