#!/usr/bin/env bash
# `kubectl kfsched audit` on a big cluster, side by side with the read it cannot do with
# less: `kubectl get pods -A -l workflows.argoproj.io/workflow -o json` (the same pods,
# listed by kubectl in pages of 500 too). Creates N nodes (default 5000; a tenth in the
# policy's pool) and M pipeline pods (default 50000, KFP v2 executors of 1,000 workflows
# in 20 namespaces; a tenth selected by the policy) on the test control plane. The pods
# name a scheduler that does not exist, so they stay Pending and nothing else touches
# them. Prints medians of RUNS runs (default 3), the peak RSS, the list requests audit
# made, and the ratio.
#
#   bench/audit.sh                        # starts its own cluster in .cache/cluster-bench
#   N=5000 M=50000 RUNS=3 bench/audit.sh
#   KEEP=1 bench/audit.sh                 # leaves the nodes, pods and cluster for a rerun,
#                                         # which then measures without creating them again
#
# Uses a running cluster when $KFSCHED_CLUSTER_DIR has one (scripts/cluster.sh). The
# cluster it starts runs kwok with 600 s node leases (KFSCHED_KWOK_LEASE_SECONDS): with
# the kubelet's 40 s, renewing 5,000 leases keeps the API server busy on a core of its own
# before anything is measured, on a machine whose two cores the client shares.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-5000}
M=${M:-50000}
RUNS=${RUNS:-3}
BIN=${KFSCHED_BIN:-target/release/kubectl-kfsched}
KUBECTL=${KUBECTL:-${KFSCHED_KUBECTL:-$PWD/.cache/kube-bin/kubectl}}
[ -x "$KUBECTL" ] || command -v "$KUBECTL" >/dev/null || scripts/build-control-plane.sh kubectl >/dev/null
[ -x "$BIN" ] || cargo build --release --bin kubectl-kfsched
OUT=.cache/bench/audit
mkdir -p "$OUT"
export BIN KUBECTL

export KFSCHED_CLUSTER_DIR=${KFSCHED_CLUSTER_DIR:-$PWD/.cache/cluster-bench}
started=0
if ! scripts/cluster.sh status >/dev/null 2>&1; then
  KFSCHED_KWOK_LEASE_SECONDS=${KFSCHED_KWOK_LEASE_SECONDS:-600} scripts/cluster.sh start
  started=1
fi
eval "$(scripts/cluster.sh env)"
KC=$KFSCHED_ADMIN_KUBECONFIG
export KC
cleanup() {
  [ "${KEEP:-0}" = 1 ] && return 0
  for i in $(seq 0 19); do
    "$KUBECTL" --kubeconfig "$KC" delete ns "bench-audit-$i" --wait=false >/dev/null 2>&1 || true
  done
  "$KUBECTL" --kubeconfig "$KC" delete nodes -l bench-audit=1 --wait=false >/dev/null 2>&1 || true
  if [ "$started" = 1 ]; then scripts/cluster.sh stop >/dev/null; fi
}
trap cleanup EXIT

cat > "$OUT/policy.yaml" <<'EOF'
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: bench-audit}
spec:
  nodePools:
  - name: gpu
    nodeSelector: "bench-audit-pool=gpu"
    labels: {bench-audit-pool: gpu}
  rules:
  - name: train-on-gpu
    pool: gpu
    match: {names: ["train"]}
EOF

# N nodes (kwok plays their kubelets), a tenth in the pool; M pods in Lists of 1,000.
python3 - "$N" "$M" "$OUT" <<'PY'
import json, sys
n, m, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
nodes = []
for i in range(n):
    labels = {"bench-audit": "1", "kubernetes.io/hostname": f"bench-audit-{i}"}
    if i % 10 == 0:
        labels["bench-audit-pool"] = "gpu"
    nodes.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"bench-audit-{i}", "labels": labels},
                  "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                             "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
json.dump({"apiVersion": "v1", "kind": "List", "items": nodes}, open(f"{out}/nodes.json", "w"))
per = 1000
for chunk in range((m + per - 1) // per):
    items = []
    for j in range(chunk * per, min(m, (chunk + 1) * per)):
        wf = f"pipeline-{j // 50:04d}-x7k2p"
        task = "train" if j % 10 == 0 else f"step-{j % 50}"
        items.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": f"{wf}-system-container-impl-{j}",
                "namespace": f"bench-audit-{j % 20}",
                "labels": {"workflows.argoproj.io/workflow": wf, "pipelines.kubeflow.org/v2_component": "true"},
                "annotations": {"workflows.argoproj.io/node-name": f"{wf}.root.{task}.executor",
                                "pipelines.kubeflow.org/runtime-role": "launcher"},
            },
            "spec": {
                "schedulerName": "bench-audit-none",
                "initContainers": [{"name": "kfp-launcher", "image": "ghcr.io/kubeflow/kfp-launcher:2.5.0"}],
                "containers": [{"name": "main", "image": "python:3.11-slim",
                                "command": ["sh", "-c", "python train.py"],
                                "args": ["--executor_input", "{}", "--function_to_execute", task]}],
            },
        })
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(f"{out}/pods-{chunk:03d}.json", "w"))
PY
count() { "$KUBECTL" --kubeconfig "$KC" get --raw "$1" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["items"]))'; }
if [ "$(count "/api/v1/nodes?labelSelector=bench-audit%3D1")" = "$N" ] &&
  [ "$(count "/api/v1/pods?labelSelector=workflows.argoproj.io%2Fworkflow")" = "$M" ]; then
  echo "cluster: reusing the $N nodes and $M pods an earlier KEEP=1 run left" >&2
else
  # What an earlier run left behind goes first.
  cleanup_wait() {
    "$KUBECTL" --kubeconfig "$KC" delete nodes -l bench-audit=1 >/dev/null 2>&1 || true
    for i in $(seq 0 19); do
      "$KUBECTL" --kubeconfig "$KC" delete ns "bench-audit-$i" --ignore-not-found >/dev/null 2>&1 || true
    done
  }
  cleanup_wait
  t0=$(date +%s.%N)
  "$KUBECTL" --kubeconfig "$KC" create -f "$OUT/nodes.json" >/dev/null
  for i in $(seq 0 19); do "$KUBECTL" --kubeconfig "$KC" create ns "bench-audit-$i" >/dev/null; done
  # Pods need each namespace's default service account.
  for i in $(seq 0 19); do
    until "$KUBECTL" --kubeconfig "$KC" get sa default -n "bench-audit-$i" >/dev/null 2>&1; do sleep 0.5; done
  done
  for f in "$OUT"/pods-*.json; do "$KUBECTL" --kubeconfig "$KC" create -f "$f" >/dev/null; done
  echo "cluster: created $N nodes and $M pods in $(python3 -c "print(round($(date +%s.%N) - $t0))") s" >&2
fi
# The pool's nodes carry what the pool asks.
"$BIN" node apply -p "$OUT/policy.yaml" --kubeconfig "$KC" >/dev/null

python3 - "$RUNS" "$OUT" <<'PY'
import os, statistics, subprocess, sys, time
runs, out = int(sys.argv[1]), sys.argv[2]
kc, binary, kubectl = os.environ["KC"], os.environ["BIN"], os.environ["KUBECTL"]
def timed(cmd, ok):
    # GNU time's %M: this command's own peak RSS, in KB.
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    took = time.perf_counter() - t0
    if r.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.decode()[-2000:]}")
    err = r.stderr.decode().rstrip("\n").split("\n")
    return took, int(err[-1]) / 1024, "\n".join(err[:-1])
def summary(label, runs_):
    times = [t for t, _, _ in runs_]
    return label, statistics.median(times), min(times), max(times), max(m for _, m, _ in runs_), runs_[-1][2]
commands = [
    ("kubectl get pods -A -l workflows.argoproj.io/workflow -o json",
     [kubectl, "--kubeconfig", kc, "get", "pods", "-A", "-l", "workflows.argoproj.io/workflow", "-o", "json"], (0,)),
    ("kubectl kfsched audit -o json",
     [binary, "audit", "-p", f"{out}/policy.yaml", "--kubeconfig", kc, "-o", "json", "-v"], (0, 1)),
]
# Round by round, so that a slow moment of the machine falls on both.
results = [[] for _ in commands]
for _ in range(runs):
    for i, (_, cmd, ok) in enumerate(commands):
        results[i].append(timed(cmd, ok))
rows = [summary(label, r) for (label, _, _), r in zip(commands, results)]
print("| command | median | range | peak RSS |")
print("|---|---|---|---|")
for label, med, lo, hi, rss, _ in rows:
    print(f"| {label} | {med:.2f} s | {lo:.2f}-{hi:.2f} s | {rss:.0f} MB |")
print()
print(f"audit / kubectl get: {rows[1][1] / rows[0][1]:.2f}x the time, {rows[1][4] / rows[0][4]:.2f}x the memory")
for line in rows[1][5].splitlines():
    if line.startswith("read "):
        print(f"audit: {line}")
PY
