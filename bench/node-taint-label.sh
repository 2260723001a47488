#!/usr/bin/env bash
# Side by side on one control plane: kubectl vs kfsched tainting and
# labelling N nodes (default 200) selected by a label, RUNS times each
# (default 5, alternating which tool goes first). Prints every timing, the
# medians and the ratio kubectl / kfsched, and checks after every run that
# all N nodes carry the taint or label.
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
KUBECTL=${KUBECTL:-kubectl}
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

ms() { # runs "$@", prints wall milliseconds
  local s e
  s=$(date +%s%N)
  "$@" >/dev/null 2>&1
  e=$(date +%s%N)
  echo $(((e - s) / 1000000))
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

declare -a KT KL FT FL
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
  if [ $((r % 2)) = 1 ]; then kubectl_taint; kfsched_taint; else kfsched_taint; kubectl_taint; fi
  echo "run $r: taint kubectl ${KT[-1]} ms, kfsched ${FT[-1]} ms; label kubectl ${KL[-1]} ms, kfsched ${FL[-1]} ms"
done

mkt=$(printf '%s\n' "${KT[@]}" | median)
mft=$(printf '%s\n' "${FT[@]}" | median)
mkl=$(printf '%s\n' "${KL[@]}" | median)
mfl=$(printf '%s\n' "${FL[@]}" | median)
"$KUBECTL" --kubeconfig "$ADMIN" delete nodes -l "$SEL" >/dev/null
echo
echo "$N nodes selected by label, added round-trip latency ${LATENCY_MS} ms, median of $RUNS runs (kubectl $("$KUBECTL" version --client -o json 2>/dev/null | grep -m1 gitVersion | tr -d ' ",' | cut -d: -f2), $BIN):"
awk -v a="$mkt" -v b="$mft" 'BEGIN {printf "  taint: kubectl %d ms, kfsched %d ms, kfsched is %.1fx faster\n", a, b, a / b}'
awk -v a="$mkl" -v b="$mfl" 'BEGIN {printf "  label: kubectl %d ms, kfsched %d ms, kfsched is %.1fx faster\n", a, b, a / b}'
