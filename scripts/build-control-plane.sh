#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, kwok) from Go modules through the Go module proxy.
# Binaries land in $KFSCHED_KUBE_BIN (default: .cache/kube-bin); a version stamp
# skips the build when the binaries for this go.mod are already there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${KFSCHED_KUBE_BIN:-$root/.cache/kube-bin}
mod=$root/tools/kube-bins
export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
KUBE_VERSION=v1.36.3
KWOK_VERSION=v0.8.0
stamp="$KUBE_VERSION kwok-$KWOK_VERSION $(sha256sum "$mod/go.sum" | cut -c1-16)"
if [ -f "$bin/.stamp" ] && [ "$(cat "$bin/.stamp")" = "$stamp" ]; then
  echo "control plane binaries up to date in $bin ($stamp)"
  exit 0
fi
mkdir -p "$bin"
start=$(date +%s)
ldf="-s -w \
 -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z \
 -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=36"
cd "$mod"
echo "building kube-apiserver, kube-controller-manager, kube-scheduler ($KUBE_VERSION)"
go build -trimpath -ldflags "$ldf" -o "$bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler
echo "building etcd"
go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3
echo "building kwok $KWOK_VERSION"
# kwok has its own module graph (no replaces), so go install @version works.
GOBIN="$bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
echo "$stamp" > "$bin/.stamp"
echo "control plane built in $(( $(date +%s) - start ))s into $bin"
