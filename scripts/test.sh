#!/usr/bin/env bash
# Runs every test of kfsched on this machine, as CI does:
#   1. cargo fmt --check, cargo clippy -D warnings and cargo doc with rustdoc's
#      warnings as errors;
#   2. a real Kubernetes control plane (etcd, kube-apiserver, kube-scheduler,
#      kube-controller-manager, kwok) and kubectl, built from Go modules;
#   3. the real clients the integration tests drive (kubectl, and kustomize,
#      krew and its manifest validator, yq and kpt built from Go modules,
#      pre-commit from PyPI);
#   4. the static release binaries for x86_64 and aarch64 Linux (musl) and their
#      Python wheels, built and packed by scripts/release.sh --wheel, which
#      tests/integrations/release.rs runs (the aarch64 one under qemu) and installs
#      through krew, and wheels.rs, precommit.rs and python_api.rs install with pip;
#   5. the control plane started on loopback for this run, stopped afterwards;
#   6. cargo test with --include-ignored, so the tests that need 2 to 5 run
#      (the real-file sweep only with $KFSCHED_SWEEP_KFP, a kubeflow/pipelines
#      checkout);
#   7. every fuzz target on the seed corpus and the kept regressions, with a fixed
#      seed and number of runs (scripts/fuzz.sh, with the control plane stopped):
#      a crash fails the run and its input is kept under fuzz/regressions/
#      (KFSCHED_FUZZ_SECONDS=0 leaves fuzzing out, for a quick local run).
# Versions come from versions.env. Builds are cached by version stamps under
# .cache/: a cold run builds everything (see scripts/README.md for measured
# times), a warm one skips it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export GOWORK=off GOTOOLCHAIN=local
step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }

step "format and lints"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
RUSTDOCFLAGS='-D warnings' cargo doc --workspace --no-deps -q

step "control plane binaries"
scripts/build-control-plane.sh
scripts/build-control-plane.sh argo

step "integration tools"
scripts/setup-integrations.sh >/dev/null
eval "$(scripts/setup-integrations.sh env)"

step "release archives"
scripts/release.sh --setup >/dev/null
export KFSCHED_RELEASE_DIST=${KFSCHED_RELEASE_DIST:-$root/.cache/release-dist}
export KFSCHED_RELEASE_TARGETS=${KFSCHED_RELEASE_TARGETS:-x86_64-unknown-linux-musl aarch64-unknown-linux-musl}
release_targets=()
for t in $KFSCHED_RELEASE_TARGETS; do release_targets+=(--target "$t"); done
export KFSCHED_WHEEL_DIST=${KFSCHED_WHEEL_DIST:-$KFSCHED_RELEASE_DIST}
scripts/release.sh --wheel "${release_targets[@]}" --out "$KFSCHED_RELEASE_DIST"

step "control plane"
export KFSCHED_CLUSTER_DIR=${KFSCHED_CLUSTER_DIR:-$root/.cache/cluster-test}
scripts/cluster.sh stop >/dev/null 2>&1 || true
scripts/cluster.sh start
trap 'scripts/cluster.sh stop' EXIT
scripts/cluster.sh argo
eval "$(scripts/cluster.sh env)"

step "tests"
# The real-file sweep needs a kubeflow/pipelines checkout, which CI cannot
# fetch: it runs only when $KFSCHED_SWEEP_KFP names one.
sweep=(--skip integrations::sweep)
if [ -n "${KFSCHED_SWEEP_KFP:-}" ]; then sweep=(); fi
cargo test --all-targets -- --include-ignored "${sweep[@]}" "$@"

# The fuzzers have both cores to themselves: the control plane is not needed any more.
scripts/cluster.sh stop
trap - EXIT
step "fuzzing"
if [ "${KFSCHED_FUZZ_SECONDS:-60}" = 0 ]; then
  echo "left out (KFSCHED_FUZZ_SECONDS=0)"
else
  scripts/fuzz.sh
fi
step "done"
