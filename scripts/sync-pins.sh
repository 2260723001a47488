#!/usr/bin/env bash
# Keeps the Go wrapper modules in step with versions.env, the one file of version pins.
#
#   scripts/sync-pins.sh                   rewrite tools/kube-bins and tools/kpt from versions.env
#   scripts/sync-pins.sh kube-bins         only that module (kube-bins | kpt)
#   scripts/sync-pins.sh --check [MODULE]  compare only, offline: exit 1 naming what differs
#   scripts/sync-pins.sh --check go        only the Go toolchain
#
# Sync (needs the Go module proxy):
#   tools/kube-bins  requires k8s.io/kubernetes@KUBE_VERSION and go.etcd.io/etcd/server/v3@
#                    ETCD_VERSION, and replaces every staging module that k8s.io/kubernetes'
#                    own go.mod maps to ./staging/src/k8s.io/<m> with k8s.io/<m> at the
#                    published tag v0.<minor>.<patch> (the list is read from the go.mod that
#                    the proxy serves for KUBE_VERSION, so modules added or removed upstream
#                    follow);
#   tools/kpt        requires github.com/kptdev/kpt@KPT_VERSION (its rollouts replace stays).
# Every other requirement is dropped and `go mod tidy` recomputes it, so go.mod and go.sum
# depend only on versions.env and the module's `tool` list. Commit both files afterwards.
#
# Check (what scripts/build-control-plane.sh and scripts/build-tools.sh run before building):
# the go on PATH is at least GO_MIN_VERSION, and each go.mod requires and replaces the
# versions that versions.env names.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=SCRIPTDIR/../versions.env
. "$root/versions.env"
export GOWORK=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

mode=sync
modules=()
for a in "$@"; do
  case $a in
    --check) mode=check ;;
    kube-bins|kpt|go) modules+=("$a") ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "sync-pins.sh: unknown argument $a (--check, kube-bins, kpt, go)" >&2; exit 2 ;;
  esac
done
[ ${#modules[@]} -gt 0 ] || modules=(kube-bins kpt)

# The published tag of the staging modules: v1.36.3 -> v0.36.3.
STAGING_VERSION=v0.${KUBE_VERSION#v1.}
problems=0
problem() { echo "sync-pins.sh: $*" >&2; problems=$((problems + 1)); }

# gomod_entries DIR: the require and replace entries of DIR/go.mod, one a line, as
# "PATH VERSION" (require) or "OLD => NEW [VERSION]" (replace), comments dropped.
gomod_entries() {
  (cd "$1" && go mod edit -print) | sed -e 's|//.*||' -e 's/^\(require\|replace\)[[:space:]]//' \
    -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -Ev '^(module|go|tool|toolchain|godebug)( |$)|^[()]*$' || true
}
# required DIR PATH: the version DIR/go.mod requires of PATH (empty when none).
required() { gomod_entries "$1" | awk -v m="$2" 'NF == 2 && $1 == m { print $2 }'; }

check_go() {
  local have
  have=$(go env GOVERSION 2>/dev/null) || { problem "go not found on PATH (need Go >= $GO_MIN_VERSION)"; return; }
  have=${have#go}
  if [ "$(printf '%s\n%s\n' "$GO_MIN_VERSION" "$have" | sort -V | head -n1)" != "$GO_MIN_VERSION" ]; then
    problem "go on PATH is $have but versions.env says GO_MIN_VERSION=$GO_MIN_VERSION" \
      "(the scripts use GOTOOLCHAIN=local: install a newer Go)"
  fi
}

check_kube_bins() {
  local dir=$root/tools/kube-bins rel=tools/kube-bins/go.mod have old arrow new ver n=0
  have=$(required "$dir" k8s.io/kubernetes)
  if [ "$have" != "$KUBE_VERSION" ]; then
    problem "$rel pins k8s.io/kubernetes ${have:-nothing} but versions.env says" \
      "KUBE_VERSION=$KUBE_VERSION; run scripts/sync-pins.sh kube-bins"
  fi
  local wrong=()
  while read -r old arrow new ver; do
    [ "$arrow" = "=>" ] || continue
    case $old in k8s.io/*) ;; *) continue ;; esac
    n=$((n + 1))
    if [ "$new" != "$old" ] || [ "$ver" != "$STAGING_VERSION" ]; then
      wrong+=("$old => $new${ver:+ $ver}")
    fi
  done < <(gomod_entries "$dir")
  if [ ${#wrong[@]} -gt 0 ]; then
    problem "$rel replaces ${#wrong[@]} of $n staging modules otherwise than with their" \
      "$STAGING_VERSION tag that versions.env's KUBE_VERSION=$KUBE_VERSION means (${wrong[0]}" \
      "...); run scripts/sync-pins.sh kube-bins"
  fi
  [ "$n" -gt 0 ] || problem "$rel replaces no staging module; run scripts/sync-pins.sh kube-bins"
  have=$(required "$dir" go.etcd.io/etcd/server/v3)
  if [ "$have" != "$ETCD_VERSION" ]; then
    problem "$rel resolves go.etcd.io/etcd/server/v3 ${have:-(absent)} but versions.env says" \
      "ETCD_VERSION=$ETCD_VERSION; run scripts/sync-pins.sh kube-bins (if it is still" \
      "higher afterwards, k8s.io/kubernetes $KUBE_VERSION needs that etcd: raise ETCD_VERSION)"
  fi
}

check_kpt() {
  local have
  have=$(required "$root/tools/kpt" github.com/kptdev/kpt)
  if [ "$have" != "$KPT_VERSION" ]; then
    problem "tools/kpt/go.mod pins github.com/kptdev/kpt ${have:-nothing} but versions.env says" \
      "KPT_VERSION=$KPT_VERSION; run scripts/sync-pins.sh kpt"
  fi
}

# drop_requires DIR KEEP...: removes every requirement of DIR/go.mod but the KEEP paths.
drop_requires() {
  local dir=$1; shift
  local args=() path ver k keep
  while read -r path ver; do
    [ -n "$ver" ] || continue
    keep=0
    for k in "$@"; do [ "$path" = "$k" ] && keep=1; done
    [ "$keep" = 1 ] || args+=("-droprequire=$path")
  done < <(gomod_entries "$dir" | awk 'NF == 2')
  [ ${#args[@]} -eq 0 ] || (cd "$dir" && go mod edit "${args[@]}")
}

sync_kube_bins() {
  local dir=$root/tools/kube-bins upstream staging m old arrow args=()
  echo "tools/kube-bins: k8s.io/kubernetes $KUBE_VERSION, staging modules $STAGING_VERSION, etcd $ETCD_VERSION"
  upstream=$(cd / && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" \
    | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [ -f "$upstream" ] || { echo "sync-pins.sh: no go.mod for k8s.io/kubernetes@$KUBE_VERSION from the Go module proxy" >&2; exit 1; }
  staging=$(sed -n 's|^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/src/.*|\1|p' "$upstream" | sort -u)
  [ -n "$staging" ] || { echo "sync-pins.sh: found no staging replaces in $upstream" >&2; exit 1; }
  while read -r old arrow _; do
    [ "$arrow" = "=>" ] && case $old in k8s.io/*) args+=("-dropreplace=$old") ;; esac
  done < <(gomod_entries "$dir")
  for m in $staging; do args+=("-replace=$m=$m@$STAGING_VERSION"); done
  drop_requires "$dir" k8s.io/kubernetes go.etcd.io/etcd/server/v3
  (cd "$dir" && go mod edit "${args[@]}" \
    "-require=k8s.io/kubernetes@$KUBE_VERSION" "-require=go.etcd.io/etcd/server/v3@$ETCD_VERSION" \
    && go mod tidy)
  echo "tools/kube-bins: $(echo "$staging" | wc -w) staging modules replaced"
}

sync_kpt() {
  local dir=$root/tools/kpt
  echo "tools/kpt: github.com/kptdev/kpt $KPT_VERSION"
  drop_requires "$dir" github.com/kptdev/kpt
  (cd "$dir" && go mod edit "-require=github.com/kptdev/kpt@$KPT_VERSION" && go mod tidy)
}

check_go
[ "$problems" = 0 ] || exit 1
for m in "${modules[@]}"; do
  if [ "$mode" = sync ]; then
    case $m in kube-bins) sync_kube_bins ;; kpt) sync_kpt ;; go) ;; esac
  fi
  case $m in kube-bins) check_kube_bins ;; kpt) check_kpt ;; go) ;; esac
done
if [ "$problems" != 0 ]; then
  exit 1
fi
if [ "$mode" = check ]; then
  echo "pins agree with versions.env: ${modules[*]}"
else
  echo "synced ${modules[*]} with versions.env; commit their go.mod and go.sum"
fi
