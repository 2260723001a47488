#!/usr/bin/env bash
# A throwaway Kubernetes control plane on 127.0.0.1 for integration tests:
# etcd + kube-apiserver + kube-scheduler + kube-controller-manager + kwok
# (kwok stands in for the kubelet of every Node). Binaries come from
# scripts/build-control-plane.sh. See scripts/README.md.
#
#   scripts/cluster.sh start    # fresh etcd, new PKI and tokens, free ports; waits until ready
#   scripts/cluster.sh status   # exit 0 when every recorded process is alive and /readyz is ok
#   scripts/cluster.sh env      # prints shell exports; eval "$(scripts/cluster.sh env)"
#   scripts/cluster.sh stop     # kills exactly the PIDs that start recorded; safe to repeat
#   scripts/cluster.sh argo     # also runs Argo's workflow controller (built by
#                               # scripts/build-control-plane.sh argo) with its CRDs
#
# Environment: KFSCHED_CLUSTER_DIR (run dir, default .cache/cluster),
# KFSCHED_KUBE_BIN (binaries, default .cache/kube-bin),
# KFSCHED_CLUSTER_TIMEOUT (seconds per readiness wait, default 120),
# KFSCHED_KWOK_STAGES (kwok stage config; default: the module cache's kustomize/stage/fast),
# KFSCHED_KWOK_LEASE_SECONDS (the node leases kwok renews, default 40 as the kubelet's; a
# bench with thousands of nodes raises it, or their renewals alone fill two cores; the
# node lifecycle controller's grace period follows, at least 2m),
# KFSCHED_ARGO_QPS (the workflow controller's client rate, --qps, with a burst of twice it;
# default the controller's own 20: a bench of many runs raises it so that the control
# plane, not the client's throttle, sets the pace),
# KFSCHED_APISERVER_PROFILING=true (serve /debug/pprof on the apiserver, for CPU profiles
# with `go tool pprof`; off by default, as in production).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=SCRIPTDIR/../versions.env
. "$root/versions.env"
RUN=${KFSCHED_CLUSTER_DIR:-$root/.cache/cluster}
BIN=${KFSCHED_KUBE_BIN:-$root/.cache/kube-bin}
TIMEOUT=${KFSCHED_CLUSTER_TIMEOUT:-120}
LEASE=${KFSCHED_KWOK_LEASE_SECONDS:-40}
case $LEASE in '' | *[!0-9]* | 0) echo "error: KFSCHED_KWOK_LEASE_SECONDS must be a whole number of seconds above 0, got '$LEASE'" >&2; exit 2 ;; esac
# A node is late after three lease periods, and never before 2m.
NODE_GRACE=$((LEASE * 3 > 120 ? LEASE * 3 : 120))s
PIDS=$RUN/pids            # lines: "<name> <pid> <binary path>"
LOGS=$RUN/logs
P=$RUN/pki
# The node name the kubelet identity (kubelet.kubeconfig) may register.
KUBELET_NODE=kfsched-kubelet-node

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------- process helpers
# alive PID BINARY: true if PID runs BINARY (guards against PID reuse) and is no zombie.
alive() {
  local pid=$1 bin=$2 exe state
  [ -d "/proc/$pid" ] || return 1
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null) || return 1
  [ "$state" != Z ] || return 1
  exe=$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | head -n1) || return 1
  [ "$exe" = "$bin" ]
}

# running: true if any recorded process is still alive.
running() {
  [ -f "$PIDS" ] || return 1
  local name pid bin
  while read -r name pid bin; do
    alive "$pid" "$bin" && return 0
  done < "$PIDS"
  return 1
}

# launch NAME BINARY ARGS...: starts BINARY in its own session, logs to $LOGS/NAME.log,
# records the PID. LAUNCH_HOME, when set, becomes the process's HOME (kwok).
launch() {
  local name=$1 bin=$2; shift 2
  [ -x "$bin" ] || die "$bin missing: run scripts/build-control-plane.sh"
  if [ -n "${LAUNCH_HOME:-}" ]; then
    HOME=$LAUNCH_HOME setsid "$bin" "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  else
    setsid "$bin" "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  fi
  local pid=$!
  echo "$name $pid $bin" >> "$PIDS"
  eval "PID_$(echo "$name" | tr a-z- A-Z_)=$pid"
  # setsid must not have forked (it only does for a process-group leader): check that
  # the recorded PID really turns into the binary.
  local i
  for i in $(seq 1 50); do
    alive "$pid" "$bin" && return 0
    [ -d "/proc/$pid" ] || break
    sleep 0.1
  done
  fail "$name" "process $pid exited at once or did not start as $bin"
}

# fail NAME MSG: prints the tail of NAME's log, stops what was started, exits 1.
fail() {
  local name=$1; shift
  log "ERROR: $name: $*"
  if [ -f "$LOGS/$name.log" ]; then
    log "---- last 40 lines of $LOGS/$name.log ----"
    tail -n 40 "$LOGS/$name.log" >&2 || true
    log "----"
  fi
  stop_cluster >&2 || true
  exit 1
}

# wait_for NAME PID BIN DESCRIPTION CMD...: polls CMD until it succeeds, the process dies
# or $TIMEOUT seconds pass.
wait_for() {
  local name=$1 pid=$2 bin=$3 what=$4; shift 4
  local deadline=$(( $(date +%s) + TIMEOUT )) delay=0.1
  until "$@" >/dev/null 2>&1; do
    alive "$pid" "$bin" || fail "$name" "process $pid exited while waiting for $what"
    [ "$(date +%s)" -lt "$deadline" ] || fail "$name" "not ready after ${TIMEOUT}s: $what"
    sleep "$delay"
    case $delay in 0.1) delay=0.2 ;; 0.2) delay=0.5 ;; esac
  done
}

# ---------------------------------------------------------------- ports
# free_port: a port in 20000-32767 (below the ephemeral range) that no socket uses and
# that this start has not handed out yet.
USED_PORTS=" "
free_port() {
  local inuse p i
  inuse=$(ss -Htan 2>/dev/null | awk '{n=split($4,a,":"); print a[n]}' | sort -u | tr '\n' ' ')
  for i in $(seq 1 200); do
    p=$(( 20000 + RANDOM % 12768 ))
    case " $inuse $USED_PORTS " in *" $p "*) continue ;; esac
    USED_PORTS="$USED_PORTS$p "
    echo "$p"; return 0
  done
  die "no free port found"
}

# ---------------------------------------------------------------- http checks
api() {  # api TOKEN PATH [curl args...]
  local token=$1 path=$2; shift 2
  curl -sS --max-time 10 --cacert "$P/ca.crt" -H "Authorization: Bearer $token" \
    "https://127.0.0.1:$API_PORT$path" "$@"
}
etcd_ok()  { curl -sf --max-time 5 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
api_ok()   { [ "$(api "$ADMIN_TOKEN" /readyz -f)" = ok ]; }
https_ok() { [ "$(curl -sfk --max-time 5 "https://127.0.0.1:$1$2")" = ok ]; }
http_ok()  { [ "$(curl -sf --max-time 5 "http://127.0.0.1:$1$2")" = ok ]; }
default_sa_ok() { api "$ADMIN_TOKEN" /api/v1/namespaces/default/serviceaccounts/default -f; }
post_ok() {  # post_ok PATH JSON: 201 Created or 409 AlreadyExists
  local code
  code=$(api "$ADMIN_TOKEN" "$1" -o /dev/null -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' --data "$2")
  [ "$code" = 201 ] || [ "$code" = 409 ]
}

# ---------------------------------------------------------------- pki + kubeconfigs
make_pki() {
  mkdir -p "$P"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kfsched-test-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$P/ca.key" -out "$P/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$P/apiserver.key" -out "$P/apiserver.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.96.0.1" \
    > "$P/apiserver.ext"
  openssl x509 -req -in "$P/apiserver.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
    -days 3650 -extfile "$P/apiserver.ext" -out "$P/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
  chmod 600 "$P"/*.key
}

kubeconfig() {  # kubeconfig USER TOKEN FILE
  cat > "$3" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kfsched-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $P/ca.crt
users:
- name: $1
  user:
    token: $2
contexts:
- name: kfsched-test
  context:
    cluster: kfsched-test
    user: $1
    namespace: default
current-context: kfsched-test
EOF
  chmod 600 "$3"
}

kwok_stages() {
  if [ -n "${KFSCHED_KWOK_STAGES:-}" ]; then echo "$KFSCHED_KWOK_STAGES"; return; fi
  local modcache dir
  modcache=$(GOWORK=off GOTOOLCHAIN=local go env GOMODCACHE 2>/dev/null || echo "$HOME/go/pkg/mod")
  dir=$modcache/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage/fast
  if [ ! -d "$dir" ]; then
    # build-control-plane.sh's `go install kwok@version` puts it there; fetch it if it is gone.
    (cd / && GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download "sigs.k8s.io/kwok@$KWOK_VERSION") >&2 || true
  fi
  [ -d "$dir" ] || die "kwok stages not found at $dir (set KFSCHED_KWOK_STAGES)"
  echo "$dir"
}

# ---------------------------------------------------------------- start
start_cluster() {
  command -v openssl >/dev/null || die "openssl is needed"
  command -v curl >/dev/null || die "curl is needed"
  command -v ss >/dev/null || die "ss (iproute2) is needed"
  if running; then
    die "a cluster from $RUN is already running (scripts/cluster.sh stop first)"
  fi
  local t0; t0=$(date +%s.%N)
  mkdir -p "$RUN"
  rm -rf "$RUN/etcd" "$LOGS" "$P" "$RUN/.kwok" "${RUN:?}/home" "$PIDS" "$RUN/env"
  mkdir -p "$LOGS"
  : > "$PIDS"
  local stages; stages=$(kwok_stages)

  ETCD_PORT=$(free_port); ETCD_PEER_PORT=$(free_port); API_PORT=$(free_port)
  SCHED_PORT=$(free_port); KCM_PORT=$(free_port); KWOK_PORT=$(free_port)

  make_pki
  ADMIN_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  READER_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  KUBELET_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  # The kubelet identity a real kubelet registers its Node with: user
  # system:node:<name> in group system:nodes, held to its own Node by the Node
  # authorizer and the NodeRestriction admission plugin.
  printf '%s\n' "$ADMIN_TOKEN,admin,admin-uid,system:masters" \
    "$READER_TOKEN,reader,reader-uid" \
    "$KUBELET_TOKEN,system:node:$KUBELET_NODE,kubelet-uid,system:nodes" > "$RUN/tokens.csv"
  chmod 600 "$RUN/tokens.csv"
  kubeconfig admin "$ADMIN_TOKEN" "$RUN/admin.kubeconfig"
  kubeconfig reader "$READER_TOKEN" "$RUN/readonly.kubeconfig"
  kubeconfig "system:node:$KUBELET_NODE" "$KUBELET_TOKEN" "$RUN/kubelet.kubeconfig"

  # etcd: single member, throwaway data dir, no fsync.
  launch etcd "$BIN/etcd" --name=default --data-dir="$RUN/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="default=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync=true --log-level=warn
  wait_for etcd "$PID_ETCD" "$BIN/etcd" "etcd /health" etcd_ok

  # kube-apiserver: own CA, token auth, the Node authorizer and RBAC, the default
  # admission plugins and NodeRestriction (as every production cluster has).
  launch kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --cert-dir="$P/apiserver-certdir" \
    --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
    --client-ca-file="$P/ca.crt" --token-auth-file="$RUN/tokens.csv" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --runtime-config=admissionregistration.k8s.io/v1beta1=true \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$P/sa.key" --service-account-signing-key-file="$P/sa.key" \
    --service-cluster-ip-range=10.96.0.0/24 \
    --allow-privileged=true --profiling="${KFSCHED_APISERVER_PROFILING:-false}" \
    --endpoint-reconciler-type=none --enable-priority-and-fairness=false
  wait_for kube-apiserver "$PID_KUBE_APISERVER" "$BIN/kube-apiserver" "apiserver /readyz" api_ok

  # The read-only user: get/list/watch on nodes, nothing else.
  post_ok /apis/rbac.authorization.k8s.io/v1/clusterroles \
    '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"kfsched-node-reader"},"rules":[{"apiGroups":[""],"resources":["nodes"],"verbs":["get","list","watch"]}]}' \
    || fail kube-apiserver "could not create ClusterRole kfsched-node-reader"
  post_ok /apis/rbac.authorization.k8s.io/v1/clusterrolebindings \
    '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"kfsched-node-reader"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"kfsched-node-reader"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"reader"}]}' \
    || fail kube-apiserver "could not create ClusterRoleBinding kfsched-node-reader"

  cat > "$RUN/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $RUN/admin.kubeconfig
leaderElection:
  leaderElect: false
EOF
  launch kube-scheduler "$BIN/kube-scheduler" --config="$RUN/scheduler.yaml" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --cert-dir="$P/scheduler-certdir"

  # taint-eviction-controller enforces NoExecute taints (tests/node/noexecute.rs); a
  # heartbeat late on a loaded machine would only taint a node after the 2m grace
  # period, and pods tolerate that taint for 300 s more. node-ipam, csr and token
  # controllers need extra flags and nothing here uses them.
  launch kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$RUN/admin.kubeconfig" --leader-elect=false \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --cert-dir="$P/kcm-certdir" \
    --root-ca-file="$P/ca.crt" \
    --controllers=serviceaccount-controller,namespace-controller,garbage-collector-controller,replicaset-controller,deployment-controller,statefulset-controller,daemonset-controller,job-controller,disruption-controller,pod-garbage-collector-controller,node-lifecycle-controller,taint-eviction-controller,root-ca-certificate-publisher-controller \
    --node-monitor-grace-period="$NODE_GRACE"

  # kwok: fake kubelet for all nodes. HOME=$RUN so no ~/.kwok/kwok.yaml sneaks in.
  LAUNCH_HOME=$RUN launch kwok "$BIN/kwok" --kubeconfig="$RUN/admin.kubeconfig" \
    --manage-all-nodes=true --config="$stages" \
    --config="$root/scripts/kwok/pod-complete-workflow.yaml" --node-lease-duration-seconds="$LEASE" \
    --cidr=10.244.0.0/16 --server-address="127.0.0.1:$KWOK_PORT"

  wait_for kube-scheduler "$PID_KUBE_SCHEDULER" "$BIN/kube-scheduler" "scheduler /readyz" \
    https_ok "$SCHED_PORT" /readyz
  wait_for kube-controller-manager "$PID_KUBE_CONTROLLER_MANAGER" "$BIN/kube-controller-manager" \
    "controller-manager /healthz" https_ok "$KCM_PORT" /healthz
  wait_for kwok "$PID_KWOK" "$BIN/kwok" "kwok /healthz" http_ok "$KWOK_PORT" /healthz
  wait_for kube-controller-manager "$PID_KUBE_CONTROLLER_MANAGER" "$BIN/kube-controller-manager" \
    "ServiceAccount default/default" default_sa_ok

  cat > "$RUN/env" <<EOF
export KUBECONFIG=$RUN/admin.kubeconfig
export KFSCHED_CLUSTER_DIR=$RUN
export KFSCHED_ADMIN_KUBECONFIG=$RUN/admin.kubeconfig
export KFSCHED_READONLY_KUBECONFIG=$RUN/readonly.kubeconfig
export KFSCHED_KUBELET_KUBECONFIG=$RUN/kubelet.kubeconfig
export KFSCHED_KUBELET_NODE=$KUBELET_NODE
export KFSCHED_API_SERVER=https://127.0.0.1:$API_PORT
export KFSCHED_CA_FILE=$P/ca.crt
export KFSCHED_ETCD_PORT=$ETCD_PORT
export KFSCHED_ETCD_PEER_PORT=$ETCD_PEER_PORT
export KFSCHED_API_PORT=$API_PORT
export KFSCHED_SCHEDULER_PORT=$SCHED_PORT
export KFSCHED_KCM_PORT=$KCM_PORT
export KFSCHED_KWOK_PORT=$KWOK_PORT
export KFSCHED_PID_ETCD=$PID_ETCD
export KFSCHED_PID_APISERVER=$PID_KUBE_APISERVER
export KFSCHED_PID_SCHEDULER=$PID_KUBE_SCHEDULER
export KFSCHED_PID_KCM=$PID_KUBE_CONTROLLER_MANAGER
export KFSCHED_PID_KWOK=$PID_KWOK
EOF
  local t1; t1=$(date +%s.%N)
  log "ready in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')s: https://127.0.0.1:$API_PORT (KUBECONFIG=$RUN/admin.kubeconfig)"
}

# ---------------------------------------------------------------- stop
# terminate GRACE INDEX...: SIGTERM to the given entries of pids[], wait up to GRACE
# seconds for them to exit, then SIGKILL what is left.
terminate() {
  local grace=$1 i left deadline; shift
  for i in "$@"; do
    if alive "${pids[i]}" "${bins[i]}"; then kill -TERM "${pids[i]}" 2>/dev/null || true; fi
  done
  deadline=$(( $(date +%s) + grace ))
  while :; do
    left=0
    for i in "$@"; do alive "${pids[i]}" "${bins[i]}" && left=1; done
    [ "$left" = 1 ] || return 0
    [ "$(date +%s)" -lt "$deadline" ] || break
    sleep 0.1
  done
  for i in "$@"; do
    if alive "${pids[i]}" "${bins[i]}"; then
      log "${names[i]} (${pids[i]}) ignored SIGTERM for ${grace}s: SIGKILL"
      kill -KILL "${pids[i]}" 2>/dev/null || true
    fi
  done
  for _ in $(seq 1 50); do
    left=0
    for i in "$@"; do alive "${pids[i]}" "${bins[i]}" && left=1; done
    [ "$left" = 1 ] || return 0
    sleep 0.1
  done
  log "WARNING: some of ${*} still alive after SIGKILL"
}

stop_cluster() {
  if [ ! -f "$PIDS" ]; then
    log "not running (no $PIDS)"
    return 0
  fi
  local name pid bin pids=() bins=() names=() i clients=() apiserver=() etcd=()
  while read -r name pid bin; do
    [ -n "$pid" ] || continue
    names+=("$name"); pids+=("$pid"); bins+=("$bin")
  done < "$PIDS"
  for i in "${!names[@]}"; do
    case ${names[i]} in
      etcd) etcd+=("$i") ;;
      kube-apiserver) apiserver+=("$i") ;;
      *) clients+=("$i") ;;
    esac
  done
  # In stages, so the apiserver never shuts down with etcd already gone (it can hang
  # then): API clients first, then the apiserver, then etcd. Only recorded PIDs.
  [ ${#clients[@]} -eq 0 ] || terminate 15 "${clients[@]}"
  [ ${#apiserver[@]} -eq 0 ] || terminate 30 "${apiserver[@]}"
  [ ${#etcd[@]} -eq 0 ] || terminate 15 "${etcd[@]}"
  rm -f "$PIDS" "$RUN/env"
  log "stopped"
}

# ---------------------------------------------------------------- status
status_cluster() {
  if [ ! -f "$PIDS" ]; then echo "stopped"; return 3; fi
  local name pid bin rc=0 rss
  while read -r name pid bin; do
    if alive "$pid" "$bin"; then
      rss=$(sed -n 's/^VmRSS:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null)
      printf '%-24s pid %-7s running  rss %s\n' "$name" "$pid" "$rss"
    else
      printf '%-24s pid %-7s DEAD\n' "$name" "$pid"; rc=1
    fi
  done < "$PIDS"
  if [ -f "$RUN/env" ]; then
    # shellcheck disable=SC1091
    . "$RUN/env"
    API_PORT=$KFSCHED_API_PORT
    ADMIN_TOKEN=$(sed -n 's/^[[:space:]]*token: //p' "$RUN/admin.kubeconfig")
    if api_ok; then echo "apiserver https://127.0.0.1:$API_PORT readyz ok"
    else echo "apiserver https://127.0.0.1:$API_PORT NOT ready"; rc=1; fi
  else
    echo "no $RUN/env (start did not finish)"; rc=1
  fi
  return "$rc"
}

# ---------------------------------------------------------------- argo
# Argo's workflow controller on the running control plane: its CRDs (from its module
# in the Go module cache), the namespace argo with the controller's ConfigMap, and the
# controller itself (an API client: `stop` ends it with the rest). Leader election off,
# workflows requeued after 1 s instead of 10 s. Its instance ID, kfsched-test, keeps it
# to the workflows (and their pods) labelled workflows.argoproj.io/controller-instanceid:
# kfsched-test, away from the pods other tests shape as Argo's. Pods run on kwok nodes and end
# Succeeded through scripts/kwok/pod-complete-workflow.yaml.
start_argo() {
  [ -f "$RUN/env" ] && running || die "the cluster is not running: scripts/cluster.sh start"
  local ctl=$BIN/workflow-controller kubectl=$BIN/kubectl modcache crds
  [ -x "$ctl" ] || die "$ctl missing: run scripts/build-control-plane.sh argo"
  if grep -q '^workflow-controller ' "$PIDS"; then
    local pid bin
    read -r _ pid bin < <(grep '^workflow-controller ' "$PIDS")
    if alive "$pid" "$bin"; then log "workflow-controller already running ($pid)"; return 0; fi
    sed -i '/^workflow-controller /d' "$PIDS"
  fi
  modcache=$(GOWORK=off GOTOOLCHAIN=local go env GOMODCACHE 2>/dev/null || echo "$HOME/go/pkg/mod")
  crds=$modcache/github.com/argoproj/argo-workflows/v4@$ARGO_VERSION/manifests/base/crds/minimal
  if [ ! -d "$crds" ]; then
    (cd / && GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download "github.com/argoproj/argo-workflows/v4@$ARGO_VERSION") >&2 || true
  fi
  [ -d "$crds" ] || die "Argo's CRDs not found at $crds"
  local kc=(--kubeconfig "$RUN/admin.kubeconfig")
  # Server-side: the WorkflowTaskSet CRD is too big for client-side apply's annotation.
  "$kubectl" "${kc[@]}" apply --server-side --force-conflicts -k "$crds" >/dev/null
  "$kubectl" "${kc[@]}" wait --for=condition=Established --timeout=60s -f <("$kubectl" kustomize "$crds") >/dev/null
  "$kubectl" "${kc[@]}" create namespace argo --dry-run=client -o yaml | "$kubectl" "${kc[@]}" apply -f - >/dev/null
  "$kubectl" "${kc[@]}" -n argo create configmap workflow-controller-configmap \
    --from-literal=metricsConfig='{enabled: false}' --from-literal=instanceID=kfsched-test \
    --dry-run=client -o yaml |
    "$kubectl" "${kc[@]}" apply -f - >/dev/null
  local rate=()
  if [ -n "${KFSCHED_ARGO_QPS:-}" ]; then
    case $KFSCHED_ARGO_QPS in *[!0-9]* | 0) die "KFSCHED_ARGO_QPS must be a whole number above 0, got '$KFSCHED_ARGO_QPS'" ;; esac
    rate=(--qps "$KFSCHED_ARGO_QPS" --burst "$((KFSCHED_ARGO_QPS * 2))")
  fi
  LEADER_ELECTION_DISABLE=true DEFAULT_REQUEUE_TIME=1s launch workflow-controller "$ctl" \
    --kubeconfig "$RUN/admin.kubeconfig" -n argo \
    --executor-image "quay.io/argoproj/argoexec:$ARGO_VERSION" "${rate[@]}"
  local i
  for i in $(seq 1 "$TIMEOUT"); do
    grep -q "Starting Workflow Controller\|Started workflow\|Manager" "$LOGS/workflow-controller.log" 2>/dev/null && break
    alive "$PID_WORKFLOW_CONTROLLER" "$ctl" || { tail -20 "$LOGS/workflow-controller.log" >&2; die "workflow-controller exited"; }
    sleep 1
  done
  echo "export KFSCHED_PID_ARGO=$PID_WORKFLOW_CONTROLLER" >> "$RUN/env"
  log "workflow-controller $ARGO_VERSION running ($PID_WORKFLOW_CONTROLLER), logs in $LOGS/workflow-controller.log"
}

case ${1:-} in
  start)  start_cluster ;;
  argo)   start_argo ;;
  stop)   stop_cluster ;;
  status) status_cluster ;;
  env)    [ -f "$RUN/env" ] || die "no $RUN/env: cluster not started"; cat "$RUN/env" ;;
  *) echo "usage: $0 start|stop|status|env|argo" >&2; exit 2 ;;
esac
