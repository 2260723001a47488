#!/usr/bin/env bash
# Compiles the golden fixtures testdata/golden/v2, v1 and pv with the real KFP SDKs from
# PyPI: every pipeline in testdata/pipelines/v2/*.py (kfp KFP_V2_VERSION + kfp-kubernetes
# KFP_KUBERNETES_VERSION), testdata/pipelines/v1/*.py (kfp KFP_V1_VERSION) and
# testdata/pipelines/pv/*.py (kfp KFP_V2_VERSION, the Kubernetes manifest format:
# PipelineVersion; versions from versions.env) is compiled twice, without scheduling
# (plain.yaml) and with the SDK's own scheduling calls (expected.yaml), next to the case's
# policy.yaml and notes.md; derived variants (CRLF, BOM, other Argo kinds, a kustomize
# stream and a kubectl List of PipelineVersions) are made from that SDK output. Then
# testdata/pipelines/check_golden.py checks that every policy means what the SDK calls did
# (SPEC semantics) before anything is replaced.
#
#   scripts/compile-fixtures.sh            regenerate testdata/golden/{v1,v2,pv}
#   scripts/compile-fixtures.sh --check    regenerate into a temp dir and diff (exit 1 if
#                                          the committed fixtures are stale)
#
# Venvs live in $KFSCHED_FIXTURE_CACHE (default .cache/, gitignored), one per SDK, installed
# with --no-deps from the full locks testdata/pipelines/requirements-v{1,2}.txt and rebuilt
# only when a lock or the Python version changes; the locks must pin the KFP versions that
# versions.env names. Needs the CPython minor of versions.env's FIXTURE_PYTHON_VERSION
# ($KFSCHED_PYTHON, default python3); the committed files were produced with exactly
# FIXTURE_PYTHON_VERSION, another patch level only warns. The pv stream needs kustomize
# ($KFSCHED_KUSTOMIZE, else built once into the cache with `go install` at KUSTOMIZE_VERSION),
# the pv List needs kubectl ($KFSCHED_KUBECTL, default kubectl) but no cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=SCRIPTDIR/../versions.env
. "$root/versions.env"
src=$root/testdata/pipelines
golden=$root/testdata/golden
cache=${KFSCHED_FIXTURE_CACHE:-$root/.cache}
py=${KFSCHED_PYTHON:-python3}
mode="write"
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

start=$(date +%s)
# The locks must pin what versions.env says.
check_lock() { # LOCK REQUIREMENT
  grep -qx "$2" "$src/$1" || {
    echo "error: testdata/pipelines/$1 does not pin $2 as versions.env says;" \
         "regenerate the lock or change versions.env" >&2
    exit 2
  }
}
check_lock requirements-v2.txt "kfp==$KFP_V2_VERSION"
check_lock requirements-v2.txt "kfp-kubernetes==$KFP_KUBERNETES_VERSION"
check_lock requirements-v1.txt "kfp==$KFP_V1_VERSION"
want_minor=${FIXTURE_PYTHON_VERSION%.*}
ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
case "$ver" in
  "$want_minor".*) ;;
  *) echo "error: need CPython $want_minor (kfp $KFP_V1_VERSION supports nothing newer), got $ver" \
          "from $py; set KFSCHED_PYTHON" >&2; exit 2 ;;
esac
[ "$ver" = "$FIXTURE_PYTHON_VERSION" ] ||
  echo "warning: the committed fixtures were compiled with Python $FIXTURE_PYTHON_VERSION, this is $ver" >&2

# Deterministic compilation: fixed hash seed, clock frozen by build_v1.py, no bytecode
# written into testdata/pipelines.
export PYTHONHASHSEED=0 TZ=UTC LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1

ensure_venv() { # NAME LOCKFILE -> prints the venv's python
  local dir=$cache/fixtures-$1 lock=$2 stamp
  stamp="python-$ver $(sha256sum "$lock" | cut -c1-16)"
  if [ ! -f "$dir/.stamp" ] || [ "$(cat "$dir/.stamp")" != "$stamp" ]; then
    echo "creating $dir from $(basename "$lock")" >&2
    rm -rf "$dir"
    mkdir -p "$cache"
    "$py" -m venv "$dir"
    "$dir/bin/pip" install --quiet --no-deps -r "$lock" >&2
    "$dir/bin/pip" check >&2
    echo "$stamp" > "$dir/.stamp"
  fi
  echo "$dir/bin/python"
}

py2=$(ensure_venv kfp-v2 "$src/requirements-v2.txt")
py1=$(ensure_venv kfp-v1 "$src/requirements-v1.txt")

kustomize_version=$KUSTOMIZE_VERSION
if [ -z "${KFSCHED_KUSTOMIZE:-}" ]; then
  KFSCHED_KUSTOMIZE=$cache/fixtures-kustomize-$kustomize_version/kustomize
  if [ ! -x "$KFSCHED_KUSTOMIZE" ]; then
    echo "building kustomize $kustomize_version into $(dirname "$KFSCHED_KUSTOMIZE")" >&2
    GOBIN=$(dirname "$KFSCHED_KUSTOMIZE") \
      go install "sigs.k8s.io/kustomize/kustomize/v5@$kustomize_version" >&2
  fi
fi
"$KFSCHED_KUSTOMIZE" version | grep -qx "$kustomize_version" ||
  echo "warning: the committed pv/stream was printed by kustomize $kustomize_version, this is $("$KFSCHED_KUSTOMIZE" version)" >&2
KFSCHED_KUBECTL=${KFSCHED_KUBECTL:-$(command -v kubectl || true)}
[ -n "$KFSCHED_KUBECTL" ] || { echo "error: kubectl not found (needed for pv/list); set KFSCHED_KUBECTL" >&2; exit 2; }
export KFSCHED_KUSTOMIZE KFSCHED_KUBECTL

mkdir -p "$cache"
out=$(mktemp -d "$cache/fixtures-out.XXXXXX")
trap 'rm -rf "$out"' EXIT
"$py2" "$src/build_v2.py" "$out/v2"
"$py1" "$src/build_v1.py" "$out/v1"
"$py2" "$src/build_pv.py" "$out/pv"
"$py2" "$src/check_golden.py" "$out"

if [ "$mode" = check ]; then
  if diff -r "$golden/v2" "$out/v2" >/dev/null && diff -r "$golden/v1" "$out/v1" >/dev/null &&
      diff -r "$golden/pv" "$out/pv" >/dev/null; then
    echo "fixtures up to date ($(( $(date +%s) - start ))s)"
  else
    for sdk in v2 v1 pv; do diff -rq "$golden/$sdk" "$out/$sdk" || true; done
    echo "error: committed fixtures differ from a fresh compile; run $0" >&2
    exit 1
  fi
else
  mkdir -p "$golden"
  for sdk in v2 v1 pv; do
    rm -rf "${golden:?}/$sdk"
    mv "$out/$sdk" "$golden/$sdk"
  done
  echo "wrote $golden/v2, $golden/v1 and $golden/pv ($(( $(date +%s) - start ))s)"
fi
