#!/usr/bin/env bash
# What an exported admission policy costs a pod create: the latency of a server
# dry-run create (POST .../pods?dryRun=All, every admission step run, nothing stored)
# with no policy, with the export of a 20-rule and a 100-rule policy
# (testdata/admission-large, written by bench/alt/make_admission_policy.py), and,
# given an older build as KFSCHED_BASELINE_BIN, with that build's exports of the
# same policies, and with a policy of one constant operation that annotates every
# workflow pod (the floor: what any mutation of a pod costs), side by side in one
# run. Five pods: a KFP v2 executor a rule
# selects, one no rule selects, a KFP v2 driver, a KFP v1 pod, and a pod of no
# workflow (which the policy's match condition turns away). Rounds interleave the
# namespaces (one bound to nothing); medians of RUNS rounds (default 200) over one
# kept-alive HTTPS connection, as a client such as the Argo controller makes them.
# Also the size of each export and the time `kubectl apply --server-side` takes to
# have it accepted (the API server compiles its CEL then).
#
#   bench/admission.sh                  # starts its own cluster in .cache/cluster-bench
#   RUNS=500 KFSCHED_BASELINE_BIN=/tmp/kubectl-kfsched-old bench/admission.sh
#
# Uses a running cluster when $KFSCHED_CLUSTER_DIR has one (scripts/cluster.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-200}
BIN=${KFSCHED_BIN:-target/release/kubectl-kfsched}
# An older kubectl-kfsched whose exports are measured side by side (optional).
BASELINE=${KFSCHED_BASELINE_BIN:-}
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
  for ns in none 20 100 floor before-20 before-100; do
    [ -f "$OUT/admission-$ns.yaml" ] && "$KUBECTL" --kubeconfig "$KC" delete -f "$OUT/admission-$ns.yaml" --wait=false >/dev/null 2>&1 || true
    "$KUBECTL" --kubeconfig "$KC" delete ns "bench-admission-$ns" --wait=false >/dev/null 2>&1 || true
  done
  if [ "$started" = 1 ]; then scripts/cluster.sh stop >/dev/null; fi
}
trap cleanup EXIT

NS="none 20 100 floor"
[ -n "$BASELINE" ] && NS="$NS before-20 before-100"
for ns in $NS; do
  "$KUBECTL" --kubeconfig "$KC" create namespace "bench-admission-$ns" >/dev/null
  "$KUBECTL" --kubeconfig "$KC" label namespace "bench-admission-$ns" "kfsched-bench=$ns" >/dev/null
done
until "$KUBECTL" --kubeconfig "$KC" get serviceaccount default -n bench-admission-100 >/dev/null 2>&1; do sleep 0.5; done

# The floor: what any mutation costs. A policy of one constant operation that
# annotates every workflow pod (what marking each pod the policy considered
# would cost), beside the exports.
cat > "$OUT/admission-floor.yaml" <<'EOF_FLOOR'
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: kfsched-bench-floor}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  matchConditions:
  - name: argo-workflow-pod
    expression: "object.metadata.?labels[?'workflows.argoproj.io/workflow'].orValue('') != ''"
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/metadata/annotations/kfsched.dev~1considered', value: 'bench'}]"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: kfsched-bench-floor}
spec:
  policyName: kfsched-bench-floor
  matchResources:
    namespaceSelector: {matchLabels: {kfsched-bench: floor}}
EOF_FLOOR
"$KUBECTL" --kubeconfig "$KC" apply --server-side --force-conflicts -f "$OUT/admission-floor.yaml" >/dev/null

echo "| export | rules | size | kubectl apply --server-side |"
echo "|---|---|---|---|"
for n in 20 100; do
  for which in after before; do
    bin=$BIN; ns=$n; label="this build"
    if [ "$which" = before ]; then
      [ -n "$BASELINE" ] || continue
      bin=$BASELINE; ns=before-$n; label="baseline"
    fi
    out="$OUT/admission-$ns.yaml"
    "$bin" export admission -p "testdata/admission-large/rules-$n.yaml" \
      --name-prefix "kfsched-bench-$which." --namespace-selector "kfsched-bench=$ns" > "$out" 2>/dev/null
    t0=$(date +%s.%N)
    "$KUBECTL" --kubeconfig "$KC" apply --server-side --force-conflicts -f "$out" >/dev/null
    t1=$(date +%s.%N)
    python3 -c "print(f'| {\"$label\"} | {$n} | {$(wc -c < "$out") / 1024:.0f} KiB | {($t1 - $t0):.1f} s |')"
  done
done

python3 - "$RUNS" "$NS" <<'PY'
import http.client, json, os, ssl, statistics, sys, time
runs = int(sys.argv[1])
namespaces = ["bench-admission-" + n for n in sys.argv[2].split()]
host, port = os.environ["KFSCHED_API_SERVER"].replace("https://", "").split(":")
token = next(l.split()[1] for l in open(os.environ["KFSCHED_ADMIN_KUBECONFIG"]) if l.strip().startswith("token:"))
ctx = ssl.create_default_context(cafile=os.environ["KFSCHED_CA_FILE"])
wf = "bench-x7k2p"
ARGOEXEC = "quay.io/argoproj/argoexec:v3.7.1"
def v2_pod(template, node, role, main, init=()):
    return {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{wf}-{template}-1",
            "labels": {"pipelines.kubeflow.org/v2_component": "true", "workflows.argoproj.io/workflow": wf,
                       "workflows.argoproj.io/completed": "false", "pipeline/runid": "0b5f6e0c"},
            "annotations": {"pipelines.kubeflow.org/v2_component": "true", "workflows.argoproj.io/node-name": node,
                            "pipelines.kubeflow.org/runtime-role": role}},
        "spec": {"restartPolicy": "Never",
            "initContainers": [{"name": "init", "image": ARGOEXEC}] + list(init),
            "containers": [{"name": "wait", "image": ARGOEXEC}, main]}}
def executor(task):
    return v2_pod("system-container-impl", f"{wf}.root.{task}.executor", "launcher",
        {"name": "main", "image": "pytorch/pytorch:2.1",
         "command": ["/var/run/argo/argoexec", "emissary", "--", "/kfp-launcher/launch", "--pipeline_name", "bench",
                     "--component_spec", json.dumps({"executorLabel": f"exec-{task}"}), "--"],
         "args": ["python", "train.py"]},
        [{"name": "kfp-launcher", "image": "ghcr.io/kubeflow/kfp-launcher:2.17.0"}])
def driver(task):
    task_json = json.dumps({"componentRef": {"name": f"comp-{task}"}, "taskInfo": {"name": task}}, separators=(",", ":"))
    return v2_pod("system-container-driver", f"{wf}.root.{task}-driver", "driver",
        {"name": "main", "image": "ghcr.io/kubeflow/kfp-driver:2.17.0",
         "command": ["/var/run/argo/argoexec", "emissary", "--", "driver"],
         "args": ["--type", "CONTAINER", "--pipeline_name", "bench", "--run_id", "0b5f6e0c", "--task", task_json,
                  "--task_name", task, "--container", json.dumps({"image": "pytorch/pytorch:2.1"}, separators=(",", ":"))]})
def kfp_v1(task):
    return {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{wf}-{task}-2", "labels": {"workflows.argoproj.io/workflow": wf,
                       "pipelines.kubeflow.org/pipeline-sdk-type": "kfp", "workflows.argoproj.io/completed": "false"},
            "annotations": {"workflows.argoproj.io/node-name": f"{wf}.{task}",
                            "pipelines.kubeflow.org/component_spec": json.dumps({"name": task})}},
        "spec": {"restartPolicy": "Never", "initContainers": [{"name": "init", "image": ARGOEXEC}],
            "containers": [{"name": "wait", "image": ARGOEXEC},
                {"name": "main", "image": "pytorch/pytorch:2.1", "command": ["python", "train.py"]}]}}
plain = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
         "spec": {"containers": [{"name": "main", "image": "nginx"}]}}
pods = [("KFP v2 executor, selected", executor("step-3"), True),
        ("KFP v2 executor, no rule selects it", executor("unlisted"), False),
        ("KFP v2 driver, selected", driver("step-3"), True),
        ("KFP v1 pod, selected", kfp_v1("step-3"), True),
        ("pod of no workflow", plain, False)]
conn = http.client.HTTPSConnection(host, int(port), context=ctx)
def create(ns, body):
    conn.request("POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", body,
                 {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = conn.getresponse(); d = r.read()
    if r.status >= 300:
        raise SystemExit(f"{ns}: {r.status} {d[:500]!r}")
    return json.loads(d)
def admitted(pod):
    return "kfsched.dev/admitted" in pod["metadata"].get("annotations", {})
def considered(pod):
    return "kfsched.dev/considered" in pod["metadata"].get("annotations", {})
# The policies are in force about a second after they are accepted.
for ns in namespaces[1:]:
    test = considered if ns.endswith("-floor") else admitted
    for _ in range(120):
        try:
            if test(create(ns, json.dumps(pods[0][1]))):
                break
        except Exception:
            conn = http.client.HTTPSConnection(host, int(port), context=ctx)
        time.sleep(0.5)
    else:
        raise SystemExit(f"{ns}: the policy is not in force")
# Each pod selected or not as its label says, in every bound namespace.
for label, pod, sel in pods:
    for ns in namespaces[1:]:
        if ns.endswith("-floor"):
            continue
        if admitted(create(ns, json.dumps(pod))) != sel:
            raise SystemExit(f"{ns}: {label}: admitted is {not sel}")
# Rounds interleave the namespaces, so load on the machine falls on all alike.
times = {(l, ns): [] for l, _, _ in pods for ns in namespaces}
for i in range(runs + 3):
    for label, pod, _ in pods:
        body = json.dumps(pod)
        for ns in namespaces:
            t0 = time.perf_counter()
            create(ns, body)
            if i >= 3:
                times[(label, ns)].append((time.perf_counter() - t0) * 1000)
cols = [n.replace("bench-admission-", "") for n in namespaces]
names = {"floor": "one constant operation", "none": "no policy", "20": "20 rules", "100": "100 rules", "before-20": "20 rules, baseline", "before-100": "100 rules, baseline"}
print()
print(f"Added median latency of a pod create (server dry-run, {runs} interleaved rounds, one kept-alive connection);"
      " in brackets the median itself / p90 in ms")
print()
print("| pod | " + " | ".join(names[c] for c in cols[1:]) + " |")
print("|---|" + "---|" * (len(cols) - 1))
for label, _, _ in pods:
    base = statistics.median(times[(label, namespaces[0])])
    cells = []
    for ns in namespaces[1:]:
        t = sorted(times[(label, ns)])
        m = statistics.median(t)
        cells.append(f"+{m - base:.1f} ms ({m:.1f} / {t[int(len(t) * 0.9)]:.1f})")
    print(f"| {label} (no policy: {base:.1f} ms) | " + " | ".join(cells) + " |")
PY
