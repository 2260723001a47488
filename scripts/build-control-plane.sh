#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, kwok) and kubectl from Go modules through the Go module proxy,
# at the versions that versions.env pins (KUBE_VERSION, ETCD_VERSION, KWOK_VERSION).
# Kubernetes and etcd come from the wrapper module tools/kube-bins (see its README);
# kwok is a plain `go install module@version`.
#
#   scripts/build-control-plane.sh                # control plane and kubectl
#   scripts/build-control-plane.sh kubectl        # only kubectl
#   scripts/build-control-plane.sh control-plane  # only the control plane
#   scripts/build-control-plane.sh argo           # Argo's workflow controller (ARGO_VERSION)
#
# Binaries land in $KFSCHED_KUBE_BIN (default .cache/kube-bin). Each part has a stamp
# (.stamp for the control plane, .stamp-kubectl) made of the pins, the Go version and
# go.sum; a part whose stamp matches is not rebuilt. Before building, the script checks
# (scripts/sync-pins.sh --check) that tools/kube-bins/go.mod agrees with versions.env.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=SCRIPTDIR/../versions.env
. "$root/versions.env"
bin=${KFSCHED_KUBE_BIN:-$root/.cache/kube-bin}
mod=$root/tools/kube-bins
export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false

want_cp=0 want_kubectl=0 want_argo=0
for a in "$@"; do
  case $a in
    control-plane) want_cp=1 ;;
    kubectl) want_kubectl=1 ;;
    argo) want_argo=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-control-plane.sh: unknown argument $a (control-plane, kubectl, argo)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { want_cp=1; want_kubectl=1; }

"$root/scripts/sync-pins.sh" --check kube-bins >/dev/null

gosum=$(sha256sum "$mod/go.sum" | cut -c1-16)
goversion=$(go env GOVERSION)
cp_stamp="$KUBE_VERSION etcd-$ETCD_VERSION kwok-$KWOK_VERSION $goversion $gosum"
kubectl_stamp="$KUBE_VERSION $goversion $gosum"
argo_stamp="$ARGO_VERSION $goversion"

# up_to_date FILE STAMP: true when FILE holds STAMP.
up_to_date() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

# Version fields of the Kubernetes binaries (what `--version` and `kubectl version` show).
minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
ldf="-s -w \
 -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z \
 -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.buildDate=2026-01-01T00:00:00Z"

mkdir -p "$bin"
t0=$(date +%s)
if [ "$want_cp" = 1 ]; then
  if up_to_date "$bin/.stamp" "$cp_stamp"; then
    echo "control plane binaries up to date in $bin ($cp_stamp)"
  else
    start=$(date +%s)
    echo "building kube-apiserver, kube-controller-manager, kube-scheduler ($KUBE_VERSION)"
    (cd "$mod" && go build -trimpath -ldflags "$ldf" -o "$bin/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler)
    echo "building etcd $ETCD_VERSION"
    (cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3)
    echo "building kwok $KWOK_VERSION"
    # kwok has its own module graph (no replaces), so go install @version works. From /
    # so that no go.mod around matters.
    (cd / && GOBIN="$bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
    echo "$cp_stamp" > "$bin/.stamp"
    echo "control plane built in $(( $(date +%s) - start ))s into $bin"
  fi
fi
if [ "$want_kubectl" = 1 ]; then
  if up_to_date "$bin/.stamp-kubectl" "$kubectl_stamp" && [ -x "$bin/kubectl" ]; then
    echo "kubectl $KUBE_VERSION up to date in $bin"
  else
    start=$(date +%s)
    echo "building kubectl $KUBE_VERSION"
    (cd "$mod" && go build -trimpath -ldflags "$ldf" -o "$bin/kubectl" k8s.io/kubernetes/cmd/kubectl)
    echo "$kubectl_stamp" > "$bin/.stamp-kubectl"
    echo "kubectl built in $(( $(date +%s) - start ))s into $bin"
  fi
fi
if [ "$want_argo" = 1 ]; then
  if up_to_date "$bin/.stamp-argo" "$argo_stamp" && [ -x "$bin/workflow-controller" ]; then
    echo "workflow-controller $ARGO_VERSION up to date in $bin"
  else
    start=$(date +%s)
    echo "building Argo's workflow-controller $ARGO_VERSION"
    # Its own module graph (no replaces): go install @version, from / as kwok.
    (cd / && GOBIN="$bin" go install -trimpath -ldflags "-s -w" \
      "github.com/argoproj/argo-workflows/v4/cmd/workflow-controller@$ARGO_VERSION")
    echo "$argo_stamp" > "$bin/.stamp-argo"
    echo "workflow-controller built in $(( $(date +%s) - start ))s into $bin"
  fi
fi
echo "kube binaries ready in $bin ($(( $(date +%s) - t0 ))s)"
