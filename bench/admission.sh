#!/usr/bin/env bash
# What an exported admission policy costs a pod create: the latency of a server
# dry-run create (POST .../pods?dryRun=All, every admission step run, nothing stored)
# with no policy, with the export of a 20-rule and a 100-rule policy
# (testdata/admission-large, written by bench/alt/make_admission_policy.py), side by
# side in one run. Three pods each time: a KFP v2 executor pod that a rule selects,
# one no rule selects, and a pod of no workflow (which the policy's match condition
# turns away). Medians of RUNS creates (default 200) over one kept-alive HTTPS
# connection, as a client such as the Argo controller makes them; also the time
# `kubectl apply --server-side` takes to have each export accepted (the API server
# compiles its CEL then).
#
#   bench/admission.sh                  # starts its own cluster in .cache/cluster-bench
#   RUNS=500 bench/admission.sh
#
# Uses a running cluster when $KFSCHED_CLUSTER_DIR has one (scripts/cluster.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-200}
BIN=${KFSCHED_BIN:-target/release/kubectl-kfsched}
KUBECTL=${KUBECTL:-${KFSCHED_KUBECTL:-$PWD/.cache/kube-bin/kubectl}}
[ -x "$KUBECTL" ] || command -v "$KUBECTL" >/dev/null || scripts/build-control-plane.sh kubectl >/dev/null
[ -x "$BIN" ] || cargo build --release --bin kubectl-kfsched
OUT=.cache/bench
mkdir -p "$OUT"

export KFSCHED_CLUSTER_DIR=${KFSCHED_CLUSTER_DIR:-$PWD/.cache/cluster-bench}
started=0
if ! scripts/cluster.sh status >/dev/null 2>&1; then
  scripts/cluster.sh start
  started=1
fi
eval "$(scripts/cluster.sh env)"
KC=$KFSCHED_ADMIN_KUBECONFIG
cleanup() {
  for n in 20 100; do
    [ -f "$OUT/admission-$n.yaml" ] && "$KUBECTL" --kubeconfig "$KC" delete -f "$OUT/admission-$n.yaml" --wait=false >/dev/null 2>&1 || true
    "$KUBECTL" --kubeconfig "$KC" delete ns "bench-admission-$n" --wait=false >/dev/null 2>&1 || true
  done
  "$KUBECTL" --kubeconfig "$KC" delete ns bench-admission-none --wait=false >/dev/null 2>&1 || true
  if [ "$started" = 1 ]; then scripts/cluster.sh stop >/dev/null; fi
}
trap cleanup EXIT

for ns in none 20 100; do
  "$KUBECTL" --kubeconfig "$KC" create namespace "bench-admission-$ns" >/dev/null
  "$KUBECTL" --kubeconfig "$KC" label namespace "bench-admission-$ns" "kfsched-bench=$ns" >/dev/null
done
until "$KUBECTL" --kubeconfig "$KC" get serviceaccount default -n bench-admission-100 >/dev/null 2>&1; do sleep 0.5; done

echo "| policy | export | kubectl apply --server-side |"
echo "|---|---|---|"
for n in 20 100; do
  "$BIN" export admission -p "testdata/admission-large/rules-$n.yaml" \
    --name-prefix "kfsched-bench." --namespace-selector "kfsched-bench=$n" > "$OUT/admission-$n.yaml" 2>/dev/null
  t0=$(date +%s.%N)
  "$KUBECTL" --kubeconfig "$KC" apply --server-side --force-conflicts -f "$OUT/admission-$n.yaml" >/dev/null
  t1=$(date +%s.%N)
  python3 -c "print(f'| {$n} rules | {$(wc -c < "$OUT/admission-$n.yaml") / 1024:.0f} KiB | {($t1 - $t0):.1f} s |')"
done

python3 - "$RUNS" <<'PY'
import http.client, json, os, ssl, statistics, sys, time
runs = int(sys.argv[1])
host, port = os.environ["KFSCHED_API_SERVER"].replace("https://", "").split(":")
token = next(l.split()[1] for l in open(os.environ["KFSCHED_ADMIN_KUBECONFIG"]) if l.strip().startswith("token:"))
ctx = ssl.create_default_context(cafile=os.environ["KFSCHED_CA_FILE"])
wf = "bench-x7k2p"
def executor(task):
    node = f"{wf}.root.{task}.executor"
    return {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{wf}-system-container-impl-1",
            "labels": {"pipelines.kubeflow.org/v2_component": "true", "workflows.argoproj.io/workflow": wf,
                       "workflows.argoproj.io/completed": "false", "pipeline/runid": "0b5f6e0c"},
            "annotations": {"pipelines.kubeflow.org/v2_component": "true", "workflows.argoproj.io/node-name": node,
                            "pipelines.kubeflow.org/runtime-role": "launcher"}},
        "spec": {"restartPolicy": "Never",
            "initContainers": [{"name": "kfp-launcher", "image": "ghcr.io/kubeflow/kfp-launcher:2.17.0"}],
            "containers": [{"name": "wait", "image": "quay.io/argoproj/argoexec:v3.7.1"},
                {"name": "main", "image": "pytorch/pytorch:2.1",
                 "command": ["/var/run/argo/argoexec", "emissary", "--", "/kfp-launcher/launch", "--pipeline_name", "bench",
                             "--component_spec", json.dumps({"executorLabel": f"exec-{task}"}), "--"],
                 "args": ["python", "train.py"]}]}}
plain = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
         "spec": {"containers": [{"name": "main", "image": "nginx"}]}}
pods = [("a KFP v2 executor a rule selects", executor("step-3")),
        ("a KFP v2 executor no rule selects", executor("unlisted")),
        ("a pod of no workflow", plain)]
def median(ns, body, check):
    c = http.client.HTTPSConnection(host, int(port), context=ctx)
    times = []
    for i in range(runs + 3):
        t0 = time.perf_counter()
        c.request("POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", body,
                  {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        r = c.getresponse(); d = r.read()
        if r.status >= 300:
            raise SystemExit(f"{ns}: {r.status} {d[:500]!r}")
        if i == 0 and check:
            check(json.loads(d))
        if i >= 3:
            times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9)]
def selected(pod):
    if "kfsched.dev/admitted" not in pod["metadata"].get("annotations", {}):
        raise SystemExit("the policy did not select the executor: not in force yet?")
# The policies are in force about a second after they are accepted.
for ns in ("bench-admission-20", "bench-admission-100"):
    for _ in range(120):
        try:
            c = http.client.HTTPSConnection(host, int(port), context=ctx)
            c.request("POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", json.dumps(pods[0][1]),
                      {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
            if "kfsched.dev/admitted" in json.loads(c.getresponse().read())["metadata"].get("annotations", {}):
                break
        except Exception:
            pass
        time.sleep(0.5)
print()
print(f"| pod create, server dry-run (median / p90 of {runs}) | no policy | 20 rules | 100 rules | 20 rules vs none | 100 rules vs none |")
print("|---|---|---|---|---|---|")
for label, pod in pods:
    body = json.dumps(pod)
    chk = selected if pod is pods[0][1] else None
    none = median("bench-admission-none", body, None)
    r20 = median("bench-admission-20", body, chk)
    r100 = median("bench-admission-100", body, chk)
    print(f"| {label} | {none[0]:.1f} / {none[1]:.1f} ms | {r20[0]:.1f} / {r20[1]:.1f} ms | {r100[0]:.1f} / {r100[1]:.1f} ms"
          f" | +{r20[0] - none[0]:.1f} ms ({r20[0] / none[0]:.1f}x) | +{r100[0] - none[0]:.1f} ms ({r100[0] / none[0]:.1f}x) |")
PY
