#!/usr/bin/env bash
# Sets up the real clients that the integration tests (tests/integrations/) drive, at the
# versions that versions.env pins:
#   kubectl                                     scripts/build-control-plane.sh kubectl (KUBE_VERSION)
#   kustomize, krew + validate-krew-manifest, kpt, argo-pods   scripts/build-tools.sh (Go modules)
#   pre-commit (PRECOMMIT_VERSION, PyPI)        a venv in .cache/precommit-venv
#   setuptools (SETUPTOOLS_VERSION, PyPI)       its wheel in .cache/precommit-wheelhouse: the build
#                                               backend of pre-commit-hooks/, for the local wheel
#                                               index of the language: python hooks' test
#   kfp (KFP_V2_VERSION, PyPI)                  wheels of testdata/pipelines/requirements-v2.txt in
#                                               .cache/kfp-wheelhouse, for the Python API test's
#                                               fresh environment (no index at test time)
#   zsh and fish (completion script tests),     apt-get, when missing and possible
#   valgrind (scaling tests)
# Idempotent: each piece has a stamp and is skipped when it matches (0 s).
#
#   scripts/setup-integrations.sh        # set everything up, then print the exports below
#   scripts/setup-integrations.sh env    # only print the exports: eval "$(scripts/setup-integrations.sh env)"
#
# The tests read (defaults in brackets, relative to the repository root; a variable
# already set in the environment is printed as it is):
#   KFSCHED_TOOLS_BIN        kustomize, krew, kubectl-krew, validate-krew-manifest, kpt, argo-pods   [.cache/tools-bin]
#   KFSCHED_PRECOMMIT        the pre-commit executable                               [.cache/precommit-venv/bin/pre-commit]
#   KFSCHED_PRECOMMIT_WHEELHOUSE  the setuptools wheel (above)                      [.cache/precommit-wheelhouse]
#   KFSCHED_KFP_WHEELHOUSE   the kfp wheels (above)                                 [.cache/kfp-wheelhouse]
#   KFSCHED_PRECOMMIT_TARGET CARGO_TARGET_DIR for pre-commit's `cargo install` of the hook (kept
#                            between runs so only kfsched itself is rebuilt)          [.cache/precommit-target]
#   KFSCHED_KUBECTL          kubectl                                                  [$KFSCHED_KUBE_BIN/kubectl]
#   KFSCHED_KPT              kpt                                                      [$KFSCHED_TOOLS_BIN/kpt]
#   KFSCHED_ZSH, KFSCHED_FISH                                                         [zsh, fish on PATH]
#   KFSCHED_VALGRIND                                                                  [valgrind on PATH]
#   KFSCHED_ADMIN_KUBECONFIG admin kubeconfig of a running scripts/cluster.sh cluster (live node-name
#                            completion only; scripts/cluster.sh env prints it)
# Read here: KFSCHED_KUBE_BIN [.cache/kube-bin] and KFSCHED_TOOLS_BIN, where the builds put
# kubectl and the tools; KFSCHED_PRECOMMIT_VENV [.cache/precommit-venv]. Set KFSCHED_NO_APT=1
# to never call apt-get (zsh, fish and valgrind must then be on PATH already). When KFSCHED_KUBECTL or
# KFSCHED_KPT is set, that program is used and the pinned one is not built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=SCRIPTDIR/../versions.env
. "$root/versions.env"
cache=$root/.cache
venv=${KFSCHED_PRECOMMIT_VENV:-$cache/precommit-venv}
wheelhouse=${KFSCHED_PRECOMMIT_WHEELHOUSE:-$cache/precommit-wheelhouse}
kfp_wheelhouse=${KFSCHED_KFP_WHEELHOUSE:-$cache/kfp-wheelhouse}
tools_bin=${KFSCHED_TOOLS_BIN:-$cache/tools-bin}
kube_bin=${KFSCHED_KUBE_BIN:-$cache/kube-bin}

print_env() {
  cat <<EOF
export KFSCHED_TOOLS_BIN=$tools_bin
export KFSCHED_PRECOMMIT=${KFSCHED_PRECOMMIT:-$venv/bin/pre-commit}
export KFSCHED_PRECOMMIT_WHEELHOUSE=$wheelhouse
export KFSCHED_KFP_WHEELHOUSE=$kfp_wheelhouse
export KFSCHED_PRECOMMIT_TARGET=${KFSCHED_PRECOMMIT_TARGET:-$cache/precommit-target}
export KFSCHED_KUBECTL=${KFSCHED_KUBECTL:-$kube_bin/kubectl}
export KFSCHED_KPT=${KFSCHED_KPT:-$tools_bin/kpt}
export KFSCHED_ZSH=${KFSCHED_ZSH:-$(command -v zsh || echo zsh)}
export KFSCHED_FISH=${KFSCHED_FISH:-$(command -v fish || echo fish)}
export KFSCHED_VALGRIND=${KFSCHED_VALGRIND:-$(command -v valgrind || echo valgrind)}
EOF
}

if [ "${1:-}" = env ]; then
  print_env
  exit 0
fi
[ $# -eq 0 ] || { echo "usage: $0 [env]" >&2; exit 2; }

t0=$(date +%s)
if [ -z "${KFSCHED_KUBECTL:-}" ]; then
  "$root/scripts/build-control-plane.sh" kubectl
fi
tools=(kustomize krew yq argo-pods)
[ -n "${KFSCHED_KPT:-}" ] || tools+=(kpt)
"$root/scripts/build-tools.sh" "${tools[@]}"

# pre-commit from PyPI into its own venv.
stamp="pre-commit $PRECOMMIT_VERSION $(python3 --version 2>&1)"
if [ -f "$venv/.stamp" ] && [ "$(cat "$venv/.stamp")" = "$stamp" ] && [ -x "$venv/bin/pre-commit" ]; then
  echo "pre-commit $PRECOMMIT_VERSION up to date in $venv"
else
  start=$(date +%s)
  echo "installing pre-commit $PRECOMMIT_VERSION into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pre-commit==$PRECOMMIT_VERSION"
  "$venv/bin/pre-commit" --version
  echo "$stamp" > "$venv/.stamp"
  echo "pre-commit installed in $(( $(date +%s) - start ))s"
fi

# The build backend of pre-commit-hooks/ as a wheel: pre-commit pip-installs the hook
# repository, and the test's local index (PIP_NO_INDEX) must hold what that build needs.
if ls "$wheelhouse/setuptools-$SETUPTOOLS_VERSION-"*.whl >/dev/null 2>&1; then
  echo "setuptools $SETUPTOOLS_VERSION up to date in $wheelhouse"
else
  rm -rf "$wheelhouse"
  "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: --dest "$wheelhouse" "setuptools==$SETUPTOOLS_VERSION"
  echo "setuptools $SETUPTOOLS_VERSION downloaded into $wheelhouse"
fi

# kfp and what it needs, as wheels for this Python (kfp itself is an sdist: built once here).
lock=$root/testdata/pipelines/requirements-v2.txt
stamp="$(sha256sum "$lock" | cut -d' ' -f1) $(python3 --version 2>&1)"
if [ -f "$kfp_wheelhouse/.stamp" ] && [ "$(cat "$kfp_wheelhouse/.stamp")" = "$stamp" ]; then
  echo "kfp $KFP_V2_VERSION wheels up to date in $kfp_wheelhouse"
else
  start=$(date +%s)
  rm -rf "$kfp_wheelhouse"
  "$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
    --wheel-dir "$kfp_wheelhouse" -r "$lock"
  echo "$stamp" > "$kfp_wheelhouse/.stamp"
  echo "kfp $KFP_V2_VERSION wheels built in $kfp_wheelhouse in $(( $(date +%s) - start ))s"
fi

# Shells for the completion-script tests (bash is assumed), valgrind for the scaling tests.
missing=()
for tool in zsh fish valgrind; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "${KFSCHED_NO_APT:-}" != 1 ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing ${missing[*]} with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }
  else
    echo "error: ${missing[*]} not found: install them (the completion and scaling tests need them) or set KFSCHED_ZSH/KFSCHED_FISH/KFSCHED_VALGRIND" >&2
    exit 1
  fi
fi

for tool in "${KFSCHED_KUBECTL:-$kube_bin/kubectl}" "${KFSCHED_KPT:-$tools_bin/kpt}" git cargo; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found" >&2; exit 1; }
done
echo "integration tools ready ($(( $(date +%s) - t0 ))s):"
print_env
