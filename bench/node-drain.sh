#!/usr/bin/env bash
# Side by side on one control plane: `kubectl drain` vs `kubectl kfsched
# node drain` of a node that runs PODS ReplicaSet pods (default 200).
# Two nodes take turns: each drain moves all pods to the other node, so
# every run drains a full node; RUNS runs per tool (default 3), alternating.
# Before each drain the script waits until all pods are Ready on the node
# to drain; afterwards it checks that none is left there. It also prints how
# many pod GET and LIST requests the API server served while each drain ran
# (from its /metrics): polling shows up there, watching does not.
#
#   bench/node-drain.sh                         # starts its own cluster in .cache/cluster-bench
#   PODS=200 RUNS=3 KFSCHED_BIN=target/release/kubectl-kfsched bench/node-drain.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PODS=${PODS:-200}
RUNS=${RUNS:-3}
BIN=${KFSCHED_BIN:-target/release/kubectl-kfsched}
# kubectl at the Kubernetes pin (versions.env), built with the control plane.
KUBECTL=${KUBECTL:-${KFSCHED_KUBECTL:-$PWD/.cache/kube-bin/kubectl}}
[ -x "$KUBECTL" ] || command -v "$KUBECTL" >/dev/null || scripts/build-control-plane.sh kubectl >/dev/null
export KFSCHED_CLUSTER_DIR=${KFSCHED_CLUSTER_DIR:-$PWD/.cache/cluster-bench}

[ -x "$BIN" ] || cargo build --release --bin kubectl-kfsched
started=0
if ! scripts/cluster.sh status >/dev/null 2>&1; then
  scripts/cluster.sh start
  started=1
fi
cleanup() {
  "$KUBECTL" --kubeconfig "${KC:-/dev/null}" delete namespace "${NS:-none}" --wait=false >/dev/null 2>&1 || true
  "$KUBECTL" --kubeconfig "${KC:-/dev/null}" delete nodes -l "${SEL:-none}" >/dev/null 2>&1 || true
  if [ "$started" = 1 ]; then scripts/cluster.sh stop >/dev/null; fi
}
trap cleanup EXIT
eval "$(scripts/cluster.sh env)"
KC=$KFSCHED_ADMIN_KUBECONFIG
K() { "$KUBECTL" --kubeconfig "$KC" "$@"; }
ID=$$
SEL="bench-drain=$ID"
NS="bench-drain-$ID"
A="bench-drain-$ID-a"
B="bench-drain-$ID-b"

for n in "$A" "$B"; do
  printf 'apiVersion: v1\nkind: Node\nmetadata: {name: %s, labels: {bench-drain: "%s", kubernetes.io/hostname: %s}}\n' "$n" "$ID" "$n" | K create -f - >/dev/null
done
K wait --for=condition=Ready node "$A" "$B" --timeout=120s >/dev/null
K create namespace "$NS" >/dev/null
for _ in $(seq 1 60); do K -n "$NS" get serviceaccount default >/dev/null 2>&1 && break; sleep 1; done
K cordon "$B" >/dev/null
cat <<EOF | K -n "$NS" create -f - >/dev/null
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: $PODS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {bench-drain: "$ID"}
      terminationGracePeriodSeconds: 30
      containers: [{name: c, image: example.invalid/web:1}]
EOF

ready_on() { # node: waits until PODS pods are Ready there and none is terminating
  for _ in $(seq 1 300); do
    local got
    got=$(K -n "$NS" get pods -o jsonpath='{range .items[*]}{.spec.nodeName} {.metadata.deletionTimestamp} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' \
      | awk -v n="$1" '$1 == n && NF == 2 && $2 == "True"' | wc -l)
    local total
    total=$(K -n "$NS" get pods --no-headers 2>/dev/null | wc -l)
    [ "$got" = "$PODS" ] && [ "$total" = "$PODS" ] && return 0
    sleep 1
  done
  echo "FAILED: $PODS pods never became Ready on $1; pods by node, deletion, Ready:" >&2
  K -n "$NS" get pods -o jsonpath='{range .items[*]}{.spec.nodeName} {.metadata.deletionTimestamp} {.status.phase} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | sort | uniq -c >&2
  exit 1
}
# Pod GET and LIST requests the API server has served so far (all clients; the
# controllers and kwok use watches, so during a drain these are the drain's).
pod_reads() {
  K get --raw /metrics | awk '
    /^apiserver_request_total\{/ && /resource="pods"/ && /subresource=""/ {
      if ($0 ~ /verb="GET"/) g += $NF; else if ($0 ~ /verb="LIST"/) l += $NF
    }
    END { printf "%d %d\n", g, l }'
}
left_on() { K -n "$NS" get pods --field-selector "spec.nodeName=$1" --no-headers 2>/dev/null | wc -l; }
ms() {
  local s e
  s=$(date +%s%N)
  "$@" >/dev/null 2>&1
  e=$(date +%s%N)
  echo $(((e - s) / 1000000))
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print int((a[NR/2]+a[NR/2+1])/2)}'; }

ready_on "$A"
K uncordon "$B" >/dev/null
from=$A to=$B
declare -a KD FD
drain_with() { # tool
  ready_on "$from"
  local t r0 r1
  r0=$(pod_reads)
  if [ "$1" = kubectl ]; then
    t=$(ms K drain "$from" --ignore-daemonsets --timeout=300s)
    KD+=("$t")
  else
    t=$(ms "$BIN" node drain --kubeconfig "$KC" "$from" --ignore-daemonsets --timeout=300s)
    FD+=("$t")
  fi
  r1=$(pod_reads)
  local reads
  reads=$(awk -v a="$r0" -v b="$r1" 'BEGIN {split(a, x, " "); split(b, y, " "); printf "%d GET and %d LIST of pods", y[1] - x[1], y[2] - x[2]}')
  local left
  left=$(left_on "$from")
  if [ "$left" != 0 ]; then echo "FAILED: $1 left $left pods on $from" >&2; exit 1; fi
  echo "  $1 drained $PODS pods from $from in $t ms ($reads while it ran)"
  # Reopen the drained node only once every replacement runs on the other
  # one, so the next drain again moves all the pods.
  ready_on "$to"
  K uncordon "$from" >/dev/null
  local tmp=$from
  from=$to to=$tmp
}
for r in $(seq 1 "$RUNS"); do
  if [ $((r % 2)) = 1 ]; then drain_with kubectl; drain_with kfsched; else drain_with kfsched; drain_with kubectl; fi
done

mk=$(printf '%s\n' "${KD[@]}" | median)
mf=$(printf '%s\n' "${FD[@]}" | median)
echo
echo "drain of a node with $PODS ReplicaSet pods, median of $RUNS runs:"
awk -v a="$mk" -v b="$mf" 'BEGIN {printf "  kubectl drain %d ms, kfsched node drain %d ms: kfsched takes %.2fx kubectl'"'"'s wall time (%.1fx faster)\n", a, b, b / a, a / b}'
