#!/usr/bin/env bash
# Two builds of kfsched side by side in one run: the release build of commit REV against
# the release build of the working tree, on the same inputs, alternating which goes first.
# For a change that must not move performance (a restructuring, a dependency bump).
#
#   bench/builds.sh REV                 # offline rewrites, then the node benchmarks
#   RUNS=20 bench/builds.sh REV
#   SKIP_CLUSTER=1 bench/builds.sh REV  # only the offline rewrites
#
# Offline: `rewrite -p POLICY FILE` of the 300-task KFP v2 and KFP v1 fixtures, the ~10 MB
# KFP v2 file of bench/rewrite.sh (when it has made it), and `rewrite --check` of a tree of
# 1,000 fixture copies; medians of RUNS runs (default 10) per build, the ratio
# REV / working tree, and whether both builds print the same bytes.
# Node: bench/node-taint-label.sh and bench/node-drain.sh once with each build
# (KFSCHED_BIN), against one control plane, so both builds' ratios to the same kubectl
# come from the same run. REV is built in $TMPDIR/kfsched-builds/rev-<commit>.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ $# = 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
rev=$(git rev-parse --short=9 "$1^{commit}")
RUNS=${RUNS:-10}
out=$root/.cache/bench
# Outside the repository: inside it, cargo would take the old tree for a member of this workspace.
src=${TMPDIR:-/tmp}/kfsched-builds/rev-$rev
mkdir -p "$out"

if [ ! -x "$src/target/release/kubectl-kfsched" ]; then
  rm -rf "$src" && mkdir -p "$src"
  git archive "$rev" | tar -x -C "$src"
  (cd "$src" && cargo build --release -q --locked --bin kubectl-kfsched)
fi
cargo build --release -q --bin kubectl-kfsched
A=$src/target/release/kubectl-kfsched
B=$root/target/release/kubectl-kfsched
echo "A = $rev ($(git log -1 --format=%cs "$rev")), B = the working tree ($(git rev-parse --short=9 HEAD)$(git diff --quiet HEAD -- crates src Cargo.toml Cargo.lock || echo ', modified'))"

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
i=0
for _ in $(seq 1 60); do
  for f in testdata/golden/*/*/plain.yaml; do
    [ $i -lt 1000 ] || break 2
    mkdir -p "$tree/d$((i % 20))"
    cp "$f" "$tree/d$((i % 20))/$i.yaml"
    i=$((i + 1))
  done
done

python3 - "$A" "$B" "$RUNS" "$tree" "$out/big-v2.yaml" <<'PY'
import os, statistics, subprocess, sys, time
a, b, runs, tree, big = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
g = "testdata/golden"
cases = [
    ("KFP v2, 300 tasks", ["rewrite", "-p", f"{g}/v2/large_300/policy.yaml", f"{g}/v2/large_300/plain.yaml"]),
    ("KFP v1, 300 templates", ["rewrite", "-p", f"{g}/v1/large_300/policy.yaml", f"{g}/v1/large_300/plain.yaml"]),
]
if os.path.exists(big):
    cases.append(("KFP v2, ~10 MB", ["rewrite", "-p", f"{g}/v2/large_300/policy.yaml", big]))
cases.append(("1,000-file tree, --check", ["rewrite", "--check", "-p", f"{g}/v2/large_300/policy.yaml", tree]))

def once(binary, args):
    t0 = time.perf_counter()
    r = subprocess.run([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, r.stdout

print(f"\n| rewrite, median of {runs} | A | B | A / B | same output |")
print("|---|---|---|---|---|")
for label, args in cases:
    ta, tb = [], []
    _, oa = once(a, args)
    _, ob = once(b, args)
    for r in range(runs):
        first, second = ((a, ta), (b, tb)) if r % 2 == 0 else ((b, tb), (a, ta))
        for binary, times in (first, second):
            times.append(once(binary, args)[0])
    ma, mb = statistics.median(ta), statistics.median(tb)
    print(f"| {label} | {ma * 1000:.1f} ms | {mb * 1000:.1f} ms | {ma / mb:.2f} | {'yes' if oa == ob else 'no'} |")
PY

[ "${SKIP_CLUSTER:-}" = 1 ] && exit 0
export KFSCHED_CLUSTER_DIR=${KFSCHED_CLUSTER_DIR:-$root/.cache/cluster-bench}
started=0
if ! scripts/cluster.sh status >/dev/null 2>&1; then
  scripts/cluster.sh start >/dev/null
  started=1
fi
[ "$started" = 0 ] || trap 'rm -rf "$tree"; scripts/cluster.sh stop >/dev/null' EXIT
for bench in node-taint-label node-drain; do
  for build in A B; do
    bin=$A; [ $build = B ] && bin=$B
    echo
    echo "$bench with build $build:"
    # The benchmark's summary: what it prints after its per-run lines.
    KFSCHED_BIN=$bin RUNS=${NODE_RUNS:-3} "bench/$bench.sh" | sed -n '/^$/,$p' | sed '/^$/d'
  done
done
