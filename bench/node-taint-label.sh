#!/usr/bin/env bash
# Side by side on one control plane: kubectl vs kfsched tainting and
# labelling N nodes (default 200) selected by a label, RUNS times each
# (default 5, alternating which tool goes first). Prints every timing, the
# medians and the ratio kubectl / kfsched, and checks after every run that
# all N nodes carry the taint or label. A third pair times the whole pool
# job, a taint and a label on every node: `kubectl taint` then `kubectl
# label` against one `kubectl kfsched node apply` of a policy pool.
#
# With a cluster from scripts/cluster.sh it also counts CPU time: the
# client's own (user + system, from /usr/bin/time) and the control plane's
# (etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok, from
# /proc/<pid>/stat) during each timed command, and the control plane's idle
# rate before the runs. "floor" is (client + control plane CPU) / cores: the
# wall time below which no client can go on this machine, since every node
# write costs the API server, etcd and every node watcher CPU whoever sends it.
#
#   bench/node-taint-label.sh                 # starts its own cluster in .cache/cluster-bench
#   N=200 RUNS=5 KFSCHED_BIN=target/release/kubectl-kfsched bench/node-taint-label.sh
#   LATENCY_MS=5 bench/node-taint-label.sh    # both tools through a TCP proxy that adds 5 ms
#                                             # round-trip time, like a remote control plane
#
# Uses a running cluster when $KFSCHED_CLUSTER_DIR has one (scripts/cluster.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-200}
RUNS=${RUNS:-5}
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
  if [ -n "${PROXY_PID:-}" ]; then kill "$PROXY_PID" 2>/dev/null || true; fi
  if [ "$started" = 1 ]; then scripts/cluster.sh stop >/dev/null; fi
}
trap cleanup EXIT
eval "$(scripts/cluster.sh env)"
KC=$KFSCHED_ADMIN_KUBECONFIG
SEL="bench-tl=$$"
LATENCY_MS=${LATENCY_MS:-0}
ADMIN=$KC
if [ "$LATENCY_MS" != 0 ]; then
  # A TCP proxy on loopback that holds every chunk LATENCY_MS/2 in each
  # direction (TLS stays end to end: the certificate is for 127.0.0.1).
  PROXY_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  python3 - "$PROXY_PORT" "${KFSCHED_API_PORT}" "$LATENCY_MS" <<'PY' &
import asyncio, sys
listen, upstream, ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
delay = ms / 2000.0
async def pipe(reader, writer):
    loop = asyncio.get_running_loop()
    q = asyncio.Queue()
    async def rd():
        while True:
            data = await reader.read(65536)
            await q.put((loop.time() + delay, data))
            if not data:
                return
    async def wr():
        while True:
            t, data = await q.get()
            wait = t - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                writer.close()
                return
            writer.write(data)
            await writer.drain()
    await asyncio.gather(rd(), wr(), return_exceptions=True)
async def handle(cr, cw):
    ur, uw = await asyncio.open_connection("127.0.0.1", upstream)
    await asyncio.gather(pipe(cr, uw), pipe(ur, cw), return_exceptions=True)
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()
asyncio.run(main())
PY
  PROXY_PID=$!
  KC=$(mktemp)
  sed "s#https://127.0.0.1:${KFSCHED_API_PORT}#https://127.0.0.1:${PROXY_PORT}#" "$ADMIN" >"$KC"
  sleep 1
fi

# N nodes in one List.
{
  echo "apiVersion: v1"
  echo "kind: List"
  echo "items:"
  for i in $(seq 1 "$N"); do
    printf -- "- {apiVersion: v1, kind: Node, metadata: {name: bench-tl-%s-%03d, labels: {bench-tl: \"%s\"}}}\n" "$$" "$i" "$$"
  done
} | "$KUBECTL" --kubeconfig "$ADMIN" create -f - >/dev/null
# Wait until node-lifecycle has removed the not-ready taint admission adds,
# so nothing else edits the nodes while we measure.
for _ in $(seq 1 120); do
  left=$("$KUBECTL" --kubeconfig "$ADMIN" get nodes -l "$SEL" -o jsonpath='{range .items[*]}{.spec.taints}{"\n"}{end}' | grep -c not-ready || true)
  [ "$left" = 0 ] && break
  sleep 1
done

CP_PIDS="${KFSCHED_PID_ETCD:-} ${KFSCHED_PID_APISERVER:-} ${KFSCHED_PID_SCHEDULER:-} ${KFSCHED_PID_KCM:-} ${KFSCHED_PID_KWOK:-}"
CORES=$(nproc)
TICK_MS=$((1000 / $(getconf CLK_TCK)))
cp_ms() { # CPU milliseconds the control plane has used so far, or -1 when unknown
  local t=0 p v
  for p in $CP_PIDS; do
    v=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null) || { echo -1; return; }
    t=$((t + v))
  done
  [ -n "${CP_PIDS// /}" ] || { echo -1; return; }
  echo $((t * TICK_MS))
}
TIMEF=$(mktemp)
ms() { # runs "$@"; prints wall ms, the command's CPU ms and the control plane's CPU ms
  local s e c0 c1 u
  c0=$(cp_ms)
  s=$(date +%s%N)
  /usr/bin/time -f "%U %S" -o "$TIMEF" "$@" >/dev/null 2>&1
  e=$(date +%s%N)
  c1=$(cp_ms)
  u=$(awk '{printf "%d", ($1 + $2) * 1000}' "$TIMEF")
  if [ "$c0" -ge 0 ]; then echo "$(((e - s) / 1000000)) $u $((c1 - c0))"; else echo "$(((e - s) / 1000000)) $u -1"; fi
}
count_taint() { "$KUBECTL" --kubeconfig "$ADMIN" get nodes -l "$SEL" -o jsonpath='{range .items[*]}{.spec.taints}{"\n"}{end}' | grep -c "\"$1\"" || true; }
count_label() { "$KUBECTL" --kubeconfig "$ADMIN" get nodes -l "$SEL,$1" -o name | wc -l; }
check() { # what got want
  if [ "$2" != "$3" ]; then echo "FAILED: $1: $2 of $3 nodes" >&2; exit 1; fi
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print int((a[NR/2]+a[NR/2+1])/2)}'; }

# Warm-up, not timed: kubectl fills its discovery cache for this server.
"$KUBECTL" --kubeconfig "$KC" get nodes -l "$SEL" -o name >/dev/null
"$BIN" node label --kubeconfig "$KC" -l "$SEL" "bench-warm=1" >/dev/null
"$BIN" node label --kubeconfig "$KC" -l "$SEL" "bench-warm-" >/dev/null

idle=-1
if [ "$(cp_ms)" -ge 0 ]; then
  c0=$(cp_ms); sleep 3; idle=$((($(cp_ms) - c0) / 3))
fi

# The pool job: the nodes carry a taint and a label. kubectl needs its two
# commands (400 writes, one after another); kfsched's declarative route is
# one `node apply` of a policy pool (one write per node, 32 in flight).
POOL=$(mktemp --suffix=.yaml)
NOPOOL=$(mktemp --suffix=.yaml)
cat >"$POOL" <<EOF
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: bench-$$}
spec:
  nodePools:
  - name: bench
    nodeSelector: "$SEL"
    labels: {bench-p: v}
    taints:
    - {key: bench-p, value: v, effect: NoSchedule}
EOF
printf 'apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: bench-%s}\nspec:\n  rules: []\n' "$$" >"$NOPOOL"

declare -a KT KL FT FL KB FB
for r in $(seq 1 "$RUNS"); do
  kubectl_taint() {
    KT+=("$(ms "$KUBECTL" --kubeconfig "$KC" taint nodes -l "$SEL" "bench-k=v:NoSchedule")")
    check "kubectl taint" "$(count_taint bench-k)" "$N"
    "$KUBECTL" --kubeconfig "$KC" taint nodes -l "$SEL" "bench-k-" >/dev/null
    KL+=("$(ms "$KUBECTL" --kubeconfig "$KC" label nodes -l "$SEL" "bench-k=v")")
    check "kubectl label" "$(count_label bench-k=v)" "$N"
    "$KUBECTL" --kubeconfig "$KC" label nodes -l "$SEL" "bench-k-" >/dev/null
  }
  kfsched_taint() {
    FT+=("$(ms "$BIN" node taint --kubeconfig "$KC" -l "$SEL" "bench-f=v:NoSchedule")")
    check "kfsched taint" "$(count_taint bench-f)" "$N"
    "$BIN" node taint --kubeconfig "$KC" -l "$SEL" "bench-f-" >/dev/null
    FL+=("$(ms "$BIN" node label --kubeconfig "$KC" -l "$SEL" "bench-f=v")")
    check "kfsched label" "$(count_label bench-f=v)" "$N"
    "$BIN" node label --kubeconfig "$KC" -l "$SEL" "bench-f-" >/dev/null
  }
  kubectl_both() {
    KB+=("$(ms bash -c '"$0" --kubeconfig "$1" taint nodes -l "$2" bench-p=v:NoSchedule && "$0" --kubeconfig "$1" label nodes -l "$2" bench-p=v' "$KUBECTL" "$KC" "$SEL")")
    check "kubectl taint+label (taint)" "$(count_taint bench-p)" "$N"
    check "kubectl taint+label (label)" "$(count_label bench-p=v)" "$N"
    "$KUBECTL" --kubeconfig "$KC" taint nodes -l "$SEL" "bench-p-" >/dev/null
    "$KUBECTL" --kubeconfig "$KC" label nodes -l "$SEL" "bench-p-" >/dev/null
  }
  kfsched_both() {
    FB+=("$(ms "$BIN" -p "$POOL" node apply --kubeconfig "$KC")")
    check "kfsched node apply (taint)" "$(count_taint bench-p)" "$N"
    check "kfsched node apply (label)" "$(count_label bench-p=v)" "$N"
    "$BIN" -p "$NOPOOL" node apply --prune --kubeconfig "$KC" >/dev/null
    check "kfsched node apply --prune (taint)" "$(count_taint bench-p)" 0
  }
  if [ $((r % 2)) = 1 ]; then
    kubectl_taint; kfsched_taint; kubectl_both; kfsched_both
  else
    kfsched_taint; kubectl_taint; kfsched_both; kubectl_both
  fi
  echo "run $r (wall, client CPU, control-plane CPU in ms): taint kubectl ${KT[-1]}, kfsched ${FT[-1]}; label kubectl ${KL[-1]}, kfsched ${FL[-1]}; taint+label kubectl ${KB[-1]}, kfsched node apply ${FB[-1]}"
done

col() { awk -v c="$1" '{print $c}'; }
summary() { # name kubectl-array-name kfsched-array-name
  local -n K=$2 F=$3
  local kw kc kp fw fc fp
  kw=$(printf '%s\n' "${K[@]}" | col 1 | median); kc=$(printf '%s\n' "${K[@]}" | col 2 | median); kp=$(printf '%s\n' "${K[@]}" | col 3 | median)
  fw=$(printf '%s\n' "${F[@]}" | col 1 | median); fc=$(printf '%s\n' "${F[@]}" | col 2 | median); fp=$(printf '%s\n' "${F[@]}" | col 3 | median)
  awk -v n="$1" -v a="$kw" -v b="$fw" 'BEGIN {printf "  %s: kubectl %d ms, kfsched %d ms, kfsched is %.1fx faster\n", n, a, b, a / b}'
  if [ "$kp" -ge 0 ]; then
    awk -v kc="$kc" -v kp="$kp" -v fc="$fc" -v fp="$fp" -v fw="$fw" -v cores="$CORES" -v n="$N" 'BEGIN {
      printf "    CPU: kubectl %d ms + control plane %d ms; kfsched %d ms + control plane %d ms (%.1f ms per node, idle included)\n", kc, kp, fc, fp, fp / n
      printf "    floor on %d cores: (kfsched + control plane CPU) / %d = %d ms; kfsched wall is %.2fx the floor\n", cores, cores, (fc + fp) / cores, fw / ((fc + fp) / cores)
    }'
  fi
}
"$KUBECTL" --kubeconfig "$ADMIN" delete nodes -l "$SEL" >/dev/null
rm -f "$TIMEF" "$POOL" "$NOPOOL"
echo
echo "$N nodes selected by label, added round-trip latency ${LATENCY_MS} ms, median of $RUNS runs (kubectl $("$KUBECTL" version --client -o json 2>/dev/null | grep -m1 gitVersion | tr -d ' ",' | cut -d: -f2), $BIN):"
summary taint KT FT
summary label KL FL
summary "taint+label (kubectl taint, then kubectl label; kfsched: one node apply of a pool)" KB FB
[ "$idle" -lt 0 ] || echo "  control plane idle: $idle ms of CPU per second (node heartbeats and leases)"
