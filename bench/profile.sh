#!/usr/bin/env bash
# Where `kubectl kfsched rewrite` spends its CPU time on the KFP v1 file (300 templates)
# and on the Argo stream of KFP v1 workflows that BENCH=formats bench/rewrite.sh measures,
# by stage: parse (saphyr-parser's events), tree (the span tree: the quick one-pass build
# of PyYAML's output, or built from the parser's events), plan (detect, match, merge), edit (render and splice), re-check of inserted text, output,
# reading the input, the policy, and the process itself (exec, loader, start-up, exit).
# perf samples the runs with call stacks (bench/profile_stages.py assigns each sample to
# its stage); the shares divide the CPU time of one run measured without
# sampling (medians, run alternately with parse-floor on the same file).
#
#   bench/profile.sh                 # 40 runs of each input
#   RUNS=100 bench/profile.sh
#   KFSCHED_BIN=path/to/kubectl-kfsched bench/profile.sh   # another build of kfsched
#
# Needs perf (linux-perf) with permission to sample this user's processes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
RUNS=${RUNS:-40}
command -v perf >/dev/null || { echo "perf is not installed (linux-perf)" >&2; exit 2; }
# The binary on its own: built together with the example it would take the example's
# dev-dependency features (a multi-threaded tokio, which links libm) and not be the
# binary users run.
cargo build --release -q --bin kubectl-kfsched
cargo build --release -q --example parse-floor
BIN=${KFSCHED_BIN:-$root/target/release/kubectl-kfsched}
FLOOR=$root/target/release/examples/parse-floor
v1=testdata/golden/v1/large_300
argo=.cache/bench/big-argo.yaml
[ -f "$argo" ] || { echo "run BENCH=formats bench/rewrite.sh once first: it writes $argo" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# both CMD_A... --vs CMD_B...: the median CPU time (ms) of each, run alternately.
both() { python3 bench/profile_stages.py --cpu "$RUNS" "$@"; }

# The start-up of each program: its run on a 4-line file.
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n' > "$tmp/tiny.yaml"
read -r kf0 fl0 < <(both "$BIN" rewrite -p "$v1/policy.yaml" "$tmp/tiny.yaml" --vs "$FLOOR" "$tmp/tiny.yaml")
printf 'start-up (a 4-line file): kfsched %.2f ms CPU, parse-floor %.2f ms CPU\n' "$kf0" "$fl0"

for input in "$v1/plain.yaml" "$argo"; do
  cmd=("$BIN" rewrite -p "$v1/policy.yaml" "$input")
  read -r kf fl < <(both "${cmd[@]}" --vs "$FLOOR" "$input")
  printf '\n%s (%s bytes): kfsched %.2f ms CPU, parse-floor %.2f ms CPU: %.2fx, %.2fx beyond start-up\n' \
    "$input" "$(stat -c %s "$input")" "$kf" "$fl" "$(echo "$kf / $fl" | bc -l)" \
    "$(echo "($kf - $kf0) / ($fl - $fl0)" | bc -l)"
  runs=$RUNS
  [ "$input" = "$argo" ] && runs=$(( RUNS / 4 > 3 ? RUNS / 4 : 3 ))
  perf record -q -F 10000 -g --call-graph dwarf,32768 -o "$tmp/perf.data" -- \
    sh -c 'n=$1; shift; for _ in $(seq "$n"); do "$@" >/dev/null 2>&1; done' sh "$runs" "${cmd[@]}" 2>/dev/null
  perf script -i "$tmp/perf.data" -F comm,ip,sym 2>/dev/null | python3 bench/profile_stages.py "$runs" "$kf"
done
