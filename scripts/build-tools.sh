#!/usr/bin/env bash
# Builds the Go tools the tests and benchmarks use, from the Go module proxy:
#   kustomize               sigs.k8s.io/kustomize/kustomize/v5  (>= 5.7: exec functions take `args`)
#   krew, kubectl-krew      sigs.k8s.io/krew/cmd/krew            (the krew kubectl plugin)
#   validate-krew-manifest  sigs.k8s.io/krew/cmd/validate-krew-manifest
#   yq                      github.com/mikefarah/yq/v4           (benchmarks)
# None of these modules has replace directives, so plain `go install module/cmd@version`
# works and no wrapper module is needed. Binaries land in $KFSCHED_TOOLS_BIN (default
# .cache/tools-bin); one version stamp per tool skips tools that are already built.
#
#   scripts/build-tools.sh            # all tools
#   scripts/build-tools.sh kustomize  # only the named ones (kustomize krew yq)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${KFSCHED_TOOLS_BIN:-$root/.cache/tools-bin}
export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false

# v5.8.3 needs go 1.27 (its go.mod says `go 1.27.0`); v5.8.2 is the newest for Go 1.26.
KUSTOMIZE_VERSION=v5.8.2
# The proxy serves only v0.4.3 of sigs.k8s.io/krew (krew-index CI uses v0.4.5).
KREW_VERSION=v0.4.3
YQ_VERSION=v4.54.3

goversion=$(go env GOVERSION)
mkdir -p "$bin"

# build NAME VERSION -- go install args...: skips when $bin/.stamp-NAME matches.
build() {
  local name=$1 version=$2; shift 3
  local stamp="$version $goversion"
  if [ -f "$bin/.stamp-$name" ] && [ "$(cat "$bin/.stamp-$name")" = "$stamp" ]; then
    echo "$name $version up to date in $bin"
    return 0
  fi
  local start; start=$(date +%s)
  echo "building $name $version"
  # Run from / so no go.mod around us matters.
  (cd / && GOBIN="$bin" go install -trimpath "$@")
  echo "$stamp" > "$bin/.stamp-$name"
  echo "$name $version built in $(( $(date +%s) - start ))s"
}

ARGS=("$@")
sel() { [ ${#ARGS[@]} -eq 0 ] && return 0; local a; for a in "${ARGS[@]}"; do [ "$a" = "$1" ] && return 0; done; return 1; }
for a in "${ARGS[@]}"; do
  case $a in kustomize|krew|yq) ;; *) echo "unknown tool $a (kustomize krew yq)" >&2; exit 2 ;; esac
done

t0=$(date +%s)
if sel kustomize; then
  build kustomize "$KUSTOMIZE_VERSION" -- -ldflags "-s -w" \
    "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
fi
if sel krew; then
  build krew "$KREW_VERSION" -- \
    -ldflags "-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$KREW_VERSION -X sigs.k8s.io/krew/internal/version.gitCommit=$KREW_VERSION" \
    "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION" \
    "sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION"
  # kubectl finds plugins by name: krew installs itself as kubectl-krew.
  ln -sf krew "$bin/kubectl-krew"
fi
if sel yq; then
  build yq "$YQ_VERSION" -- -ldflags "-s -w" "github.com/mikefarah/yq/v4@$YQ_VERSION"
fi
echo "tools ready in $bin ($(( $(date +%s) - t0 ))s)"
