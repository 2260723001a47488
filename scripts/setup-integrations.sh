#!/usr/bin/env bash
# Sets up the real clients that the integration tests (tests/integrations/) drive:
#   kustomize v5.8.2, krew + validate-krew-manifest v0.4.3   scripts/build-tools.sh (Go modules)
#   pre-commit (PyPI, pinned)                                 a venv in .cache/precommit-venv
#   zsh and fish (completion script tests)                    apt-get, when missing and possible
# kubectl (with its bundled kustomize) and kpt are used as installed on PATH.
# Idempotent: each piece has a stamp and is skipped when it matches (0 s).
#
#   scripts/setup-integrations.sh        # set everything up, then print the exports below
#   scripts/setup-integrations.sh env    # only print the exports: eval "$(scripts/setup-integrations.sh env)"
#
# The tests read (defaults in brackets, relative to the repository root):
#   KFSCHED_TOOLS_BIN        kustomize, krew, kubectl-krew, validate-krew-manifest   [.cache/tools-bin]
#   KFSCHED_PRECOMMIT        the pre-commit executable                               [.cache/precommit-venv/bin/pre-commit]
#   KFSCHED_PRECOMMIT_TARGET CARGO_TARGET_DIR for pre-commit's `cargo install` of the hook (kept
#                            between runs so only kfsched itself is rebuilt)          [.cache/precommit-target]
#   KFSCHED_KUBECTL          kubectl                                                  [kubectl on PATH]
#   KFSCHED_KPT              kpt                                                      [kpt on PATH]
#   KFSCHED_ZSH, KFSCHED_FISH                                                         [zsh, fish on PATH]
#   KFSCHED_ADMIN_KUBECONFIG admin kubeconfig of a running scripts/cluster.sh cluster (live node-name
#                            completion only; scripts/cluster.sh env prints it)
# Set KFSCHED_NO_APT=1 to never call apt-get (zsh and fish must then be on PATH already).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=$root/.cache
PRECOMMIT_VERSION=4.7.0
venv=${KFSCHED_PRECOMMIT_VENV:-$cache/precommit-venv}

print_env() {
  cat <<EOF
export KFSCHED_TOOLS_BIN=${KFSCHED_TOOLS_BIN:-$cache/tools-bin}
export KFSCHED_PRECOMMIT=${KFSCHED_PRECOMMIT:-$venv/bin/pre-commit}
export KFSCHED_PRECOMMIT_TARGET=${KFSCHED_PRECOMMIT_TARGET:-$cache/precommit-target}
export KFSCHED_KUBECTL=${KFSCHED_KUBECTL:-$(command -v kubectl || echo kubectl)}
export KFSCHED_KPT=${KFSCHED_KPT:-$(command -v kpt || echo kpt)}
export KFSCHED_ZSH=${KFSCHED_ZSH:-$(command -v zsh || echo zsh)}
export KFSCHED_FISH=${KFSCHED_FISH:-$(command -v fish || echo fish)}
EOF
}

if [ "${1:-}" = env ]; then
  print_env
  exit 0
fi
[ $# -eq 0 ] || { echo "usage: $0 [env]" >&2; exit 2; }

t0=$(date +%s)
"$root/scripts/build-tools.sh"

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

# Shells for the completion-script tests (bash is assumed).
missing=()
for sh in zsh fish; do command -v "$sh" >/dev/null || missing+=("$sh"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "${KFSCHED_NO_APT:-}" != 1 ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing ${missing[*]} with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }
  else
    echo "error: ${missing[*]} not found: install them (the completion tests need them) or set KFSCHED_ZSH/KFSCHED_FISH" >&2
    exit 1
  fi
fi

for tool in kubectl kpt git cargo; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found on PATH" >&2; exit 1; }
done
echo "integration tools ready ($(( $(date +%s) - t0 ))s):"
print_env
