#!/usr/bin/env bash
# kfsched rewrite side by side with what users do today (recompiling with the KFP SDKs,
# PyYAML and ruamel.yaml scripts, yq, kubectl kustomize patches) and the floor of only
# parsing the file, on the same inputs, in one run; then throughput on a ~10 MB file and a
# 1,000-file tree. Prints wall time, CPU, peak RSS, ratio to kfsched and diff noise.
#
#   bench/rewrite.sh              # RUNS=10 by default
#   RUNS=20 bench/rewrite.sh
#   BENCH=formats bench/rewrite.sh  # only every format against the parser's floor (time and
#                                   # peak RSS against the floor's + 2x the input, and the
#                                   # peak RSS of the rewrite alone: bench/rewrite_only.rs),
#                                   # a PipelineVersion against its IR file and the KRM
#                                   # function against rewrite on the same workloads
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cache=$root/.cache
export GOWORK=off GOTOOLCHAIN=local

# The binary on its own: built together with the example it would take the example's
# dev-dependency features (a multi-threaded tokio, which links libm) and not be the
# binary users run.
cargo build --release -q --bin kubectl-kfsched
cargo build --release -q --example parse-floor
# The rewrite as a library call in a program with nothing else linked in (BENCH=formats).
cargo build --release -q --example rewrite-only
# The SDK venvs (kfp 2.17.3, kfp 1.8.22) that compile the fixtures (BENCH=formats needs only
# kfp 2.17.3's, for the ~10 MB KFP v2 file).
if [ ! -x "$cache/fixtures-kfp-v2/bin/python" ] ||
  { [ "${BENCH:-}" != formats ] && [ ! -x "$cache/fixtures-kfp-v1/bin/python" ]; }; then
  scripts/compile-fixtures.sh --check >/dev/null
fi
bench_venv=$cache/bench-venv
if [ "${BENCH:-}" != formats ]; then
  # A venv with PyYAML (the version the SDKs use) and ruamel.yaml.
  if [ ! -x "$bench_venv/bin/python" ]; then
    python3 -m venv "$bench_venv"
    "$bench_venv/bin/pip" install -q PyYAML==6.0.4 ruamel.yaml==0.19.1
  fi
  scripts/build-tools.sh yq >/dev/null
  # kubectl (for `kubectl kustomize`) at the Kubernetes pin, unless $KUBECTL names another.
  if [ -z "${KUBECTL:-}" ]; then
    export KUBECTL=${KFSCHED_KUBECTL:-$root/.cache/kube-bin/kubectl}
    [ -x "$KUBECTL" ] || scripts/build-control-plane.sh kubectl >/dev/null
  fi
fi
big=$cache/bench/big-v2.yaml
if [ ! -f "$big" ]; then
  mkdir -p "$cache/bench"
  "$cache/fixtures-kfp-v2/bin/python" bench/alt/make_big_v2.py testdata/pipelines/v2/large_300.py 1000 "$big"
fi

export KFSCHED_PY_V2=$cache/fixtures-kfp-v2/bin/python
export KFSCHED_PY_V1=$cache/fixtures-kfp-v1/bin/python
export KFSCHED_PY_BENCH=$bench_venv/bin/python
export KFSCHED_YQ=$cache/tools-bin/yq
export KFSCHED_PARSE_FLOOR=$root/target/release/examples/parse-floor
export KFSCHED_REWRITE_ONLY=$root/target/release/examples/rewrite-only
export KFSCHED_BIG_V2=$big
exec python3 bench/rewrite.py
