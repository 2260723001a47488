#!/usr/bin/env bash
# Builds the Go tools the tests and benchmarks use, from the Go module proxy, at the
# versions that versions.env pins:
#   kustomize               sigs.k8s.io/kustomize/kustomize/v5  KUSTOMIZE_VERSION
#   krew, kubectl-krew      sigs.k8s.io/krew/cmd/krew            KREW_VERSION (the krew kubectl plugin)
#   validate-krew-manifest  sigs.k8s.io/krew/cmd/validate-krew-manifest
#   yq                      github.com/mikefarah/yq/v4           YQ_VERSION (benchmarks)
#   kpt                     github.com/kptdev/kpt                KPT_VERSION (wrapper module tools/kpt)
#   argo-pods               tools/argo-pods: the pods Argo's controller makes of a workflow's
#                           templates (k8s.io/api and apimachinery at KUBE_VERSION's v0 tag)
# kustomize, krew and yq have no replace directives, so plain `go install module/cmd@version`
# works. kpt needs one module the proxy does not serve, so it is built from tools/kpt,
# whose go.mod scripts/sync-pins.sh keeps at KPT_VERSION (see tools/kpt/README.md).
# Binaries land in $KFSCHED_TOOLS_BIN (default .cache/tools-bin); one version stamp per
# tool (.stamp-<tool>) skips tools that are already built.
#
#   scripts/build-tools.sh            # all tools
#   scripts/build-tools.sh kustomize  # only the named ones (kustomize krew yq kpt argo-pods)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=SCRIPTDIR/../versions.env
. "$root/versions.env"
bin=${KFSCHED_TOOLS_BIN:-$root/.cache/tools-bin}
export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false

goversion=$(go env GOVERSION)
mkdir -p "$bin"

# build NAME STAMP -- COMMAND...: runs COMMAND unless $bin/.stamp-NAME holds STAMP.
build() {
  local name=$1 stamp=$2; shift 3
  if [ -f "$bin/.stamp-$name" ] && [ "$(cat "$bin/.stamp-$name")" = "$stamp" ]; then
    echo "$name ${stamp%% *} up to date in $bin"
    return 0
  fi
  local start; start=$(date +%s)
  echo "building $name ${stamp%% *}"
  "$@"
  echo "$stamp" > "$bin/.stamp-$name"
  echo "$name ${stamp%% *} built in $(( $(date +%s) - start ))s"
}
# goinstall ARGS...: go install from / so that no go.mod around matters.
goinstall() { (cd / && GOBIN="$bin" go install -trimpath "$@"); }

ARGS=("$@")
sel() { [ ${#ARGS[@]} -eq 0 ] && return 0; local a; for a in "${ARGS[@]}"; do [ "$a" = "$1" ] && return 0; done; return 1; }
for a in "${ARGS[@]}"; do
  case $a in kustomize|krew|yq|kpt|argo-pods) ;; *) echo "unknown tool $a (kustomize krew yq kpt argo-pods)" >&2; exit 2 ;; esac
done

"$root/scripts/sync-pins.sh" --check go >/dev/null
t0=$(date +%s)
if sel kustomize; then
  build kustomize "$KUSTOMIZE_VERSION $goversion" -- goinstall -ldflags "-s -w" \
    "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
fi
if sel krew; then
  build krew "$KREW_VERSION $goversion" -- goinstall \
    -ldflags "-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$KREW_VERSION -X sigs.k8s.io/krew/internal/version.gitCommit=$KREW_VERSION" \
    "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION" \
    "sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION"
  # kubectl finds plugins by name: krew installs itself as kubectl-krew.
  ln -sf krew "$bin/kubectl-krew"
fi
if sel yq; then
  build yq "$YQ_VERSION $goversion" -- goinstall -ldflags "-s -w" "github.com/mikefarah/yq/v4@$YQ_VERSION"
fi
if sel kpt; then
  "$root/scripts/sync-pins.sh" --check kpt >/dev/null
  kpt_sum=$(cat "$root"/tools/kpt/go.{mod,sum} "$root"/tools/kpt/rollouts-stub/go.mod \
    "$root"/tools/kpt/rollouts-stub/api/v1alpha1/*.go | sha256sum | cut -c1-16)
  build kpt "$KPT_VERSION $goversion $kpt_sum" -- \
    go -C "$root/tools/kpt" build -trimpath -o "$bin/kpt" \
    -ldflags "-s -w -X github.com/kptdev/kpt/run.version=$KPT_VERSION" github.com/kptdev/kpt
fi
if sel argo-pods; then
  # The helper judges pods with the API types of the control plane it runs against.
  staging=v0.${KUBE_VERSION#v1.}
  for m in k8s.io/api k8s.io/apimachinery; do
    have=$(go -C "$root/tools/argo-pods" list -m -f '{{.Version}}' "$m")
    [ "$have" = "$staging" ] || {
      echo "tools/argo-pods/go.mod requires $m $have, but KUBE_VERSION=$KUBE_VERSION wants $staging:" \
           "run \`go -C tools/argo-pods get $m@$staging && go -C tools/argo-pods mod tidy\`" >&2
      exit 2
    }
  done
  argo_sum=$(cat "$root"/tools/argo-pods/{go.mod,go.sum,main.go} | sha256sum | cut -c1-16)
  build argo-pods "$staging $goversion $argo_sum" -- \
    go -C "$root/tools/argo-pods" build -trimpath -ldflags "-s -w" -o "$bin/argo-pods" .
fi
echo "tools ready in $bin ($(( $(date +%s) - t0 ))s)"
