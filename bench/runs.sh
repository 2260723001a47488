#!/usr/bin/env bash
# What the policy costs while pipelines run: R concurrent runs (default 200) of a T-task
# pipeline (default 50) through Argo's own workflow controller on the test control plane,
# three ways side by side: with no policy, with the policy exported to admission (`export
# admission`, bound to the runs' namespace) and with the workflow rewritten offline
# (`rewrite`). Each way runs on a fresh cluster (nothing of the last way left to slow it).
# The pipeline is an Argo DAG: one task, then T-2 in parallel (a tenth of them `train-N`,
# the rest `step-N`), then one; the policy sends the train tasks to a tainted GPU pool and
# the rest to a general pool. Pods run on kwok nodes and end Succeeded a second after they
# start (scripts/kwok/pod-complete-workflow.yaml).
#
# Prints per way: the wall time from the first create until every run succeeded, pods
# created per second over it, and the CPU of the API server and of the workflow
# controller (seconds, average cores, milliseconds per pod); then the ratios against no
# policy. Checks the result too: every pod bound, every train pod on the GPU pool with a
# policy, none of the others there, and no pod at all on it without one.
#
#   bench/runs.sh                            # 200 runs of 50 tasks, once each way
#   R=20 T=50 ROUNDS=3 bench/runs.sh         # smaller, medians of three rounds
#
# Needs scripts/build-control-plane.sh (control plane and argo) in $KFSCHED_KUBE_BIN, and
# python3 with PyYAML. The controller runs with KFSCHED_ARGO_QPS=${QPS:-500}: at its own
# 20 requests a second the controller's throttle, not the control plane, would set the
# pace. The clusters live under .cache/bench/runs/ and are stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

R=${R:-200}
T=${T:-50}
ROUNDS=${ROUNDS:-1}
QPS=${QPS:-500}
TIMEOUT=${TIMEOUT:-1800}
BIN=${KFSCHED_BIN:-target/release/kubectl-kfsched}
KUBE_BIN=${KFSCHED_KUBE_BIN:-$root/.cache/kube-bin}
[ -x "$BIN" ] || cargo build --release --bin kubectl-kfsched
[ -x "$KUBE_BIN/workflow-controller" ] || scripts/build-control-plane.sh argo
[ -x "$KUBE_BIN/kube-apiserver" ] || scripts/build-control-plane.sh
python3 -c 'import yaml' 2>/dev/null || { echo "bench/runs.sh: python3 with PyYAML is needed" >&2; exit 2; }
OUT=$root/.cache/bench/runs
mkdir -p "$OUT"
export KFSCHED_KUBE_BIN=$KUBE_BIN
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

cat > "$OUT/policy.yaml" <<'EOF'
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: bench-runs}
spec:
  nodePools:
  - name: gpu
    nodes: ["bench-runs-gpu-*"]
    labels: {kfsched.dev/pool: bench-gpu}
    taints:
    - {key: kfsched.dev/pool, value: bench-gpu, effect: NoSchedule}
  - name: general
    nodes: ["bench-runs-general-*"]
    labels: {kfsched.dev/pool: bench-general}
  rules:
  - name: train-on-gpu
    match: {names: ["train-*"]}
    pool: gpu
  - name: the-rest-on-general
    match: {names: ["step-*", first, last]}
    pool: general
EOF

python3 - "$T" "$OUT/pipeline.yaml" <<'PY'
import sys, yaml
t, out = int(sys.argv[1]), sys.argv[2]
middle = [f"train-{i}" if i % 10 == 0 else f"step-{i}" for i in range(t - 2)]
tasks = [{"name": "first", "template": "first"}]
tasks += [{"name": n, "template": n, "dependencies": ["first"]} for n in middle]
tasks += [{"name": "last", "template": "last", "dependencies": middle}]
container = {"image": "python:3.12-slim", "command": ["python", "-c", "print('ok')"],
             "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
templates = [{"name": "main", "dag": {"tasks": tasks}}]
templates += [{"name": n, "container": dict(container)} for n in ["first", *middle, "last"]]
wf = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
      "metadata": {"generateName": "bench-run-"},
      "spec": {"entrypoint": "main", "serviceAccountName": "default", "templates": templates}}
yaml.safe_dump(wf, open(out, "w"), sort_keys=False)
PY
"$BIN" rewrite -p "$OUT/policy.yaml" "$OUT/pipeline.yaml" > "$OUT/pipeline-rewritten.yaml"

results=$OUT/results.jsonl
: > "$results"
current=""
cleanup() {
  if [ -n "$current" ]; then KFSCHED_CLUSTER_DIR=$current scripts/cluster.sh stop >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

for round in $(seq 1 "$ROUNDS"); do
  for way in none admission rewrite; do
    current=$OUT/cluster-$way
    export KFSCHED_CLUSTER_DIR=$current
    scripts/cluster.sh start >/dev/null
    KFSCHED_ARGO_QPS=$QPS scripts/cluster.sh argo >/dev/null
    echo "round $round, $way: $R runs of $T tasks ($(date +%T))" >&2
    (
      eval "$(scripts/cluster.sh env)"
      KFSCHED_BIN=$BIN KUBECTL=$KUBE_BIN/kubectl python3 - "$way" "$R" "$OUT" "$TIMEOUT" <<'PY'
import json, os, re, ssl, subprocess, sys, time, urllib.parse, urllib.request
import yaml

way, runs, out, timeout = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
kfsched, kubectl = os.environ["KFSCHED_BIN"], os.environ["KUBECTL"]
kc = ["--kubeconfig", os.environ["KFSCHED_ADMIN_KUBECONFIG"]]
api = os.environ["KFSCHED_API_SERVER"]
token = re.search(r"token: (\S+)", open(os.environ["KFSCHED_ADMIN_KUBECONFIG"]).read()).group(1)
ctx = ssl.create_default_context(cafile=os.environ["KFSCHED_CA_FILE"])
ns = "bench-runs"

def run(args, stdin=None):
    r = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench/runs.sh: {' '.join(args[:4])}... exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout

def k(*args, stdin=None):
    return run([kubectl, *kc, *args], stdin)

def names(path, selector):
    # Metadata only: the poll itself should cost the API server little.
    q = urllib.parse.urlencode({"labelSelector": selector})
    req = urllib.request.Request(f"{api}{path}?{q}", headers={
        "Authorization": f"Bearer {token}",
        "Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"})
    with urllib.request.urlopen(req, context=ctx) as r:
        return [i["metadata"]["name"] for i in json.load(r)["items"] or []]

def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

# Nodes: kwok plays their kubelets. Room for every pod of every run at once.
nodes = [(f"bench-runs-gpu-{i}", "gpu") for i in range(2)]
nodes += [(f"bench-runs-general-{i}", "general") for i in range(10)]
items = [{"apiVersion": "v1", "kind": "Node",
          "metadata": {"name": n, "labels": {"type": "kwok", "kubernetes.io/hostname": n},
                       "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
          "status": {"allocatable": {"cpu": "1000", "memory": "4Ti", "pods": "5000"},
                     "capacity": {"cpu": "1000", "memory": "4Ti", "pods": "5000"}}} for n, _ in nodes]
k("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
run([kfsched, "node", "apply", "-p", f"{out}/policy.yaml", *kc])
k("create", "namespace", ns)
k("label", "namespace", ns, "kfsched-bench=runs")
for _ in range(120):
    if subprocess.run([kubectl, *kc, "get", "serviceaccount", "default", "-n", ns],
                      capture_output=True).returncode == 0:
        break
    time.sleep(0.5)

source = f"{out}/pipeline.yaml"
if way == "admission":
    export = run([kfsched, "export", "admission", "-p", f"{out}/policy.yaml",
                  "--namespace-selector", "kfsched-bench=runs"])
    k("apply", "--server-side", "-f", "-", stdin=export)
    time.sleep(3)  # the API server takes a new policy in about a second
elif way == "rewrite":
    source = f"{out}/pipeline-rewritten.yaml"
wf = yaml.safe_load(open(source))
wf["metadata"]["namespace"] = ns
wf["metadata"]["labels"] = {"workflows.argoproj.io/controller-instanceid": "kfsched-test"}
lst = {"apiVersion": "v1", "kind": "List", "items": [wf] * runs}

pids = {"apiserver": os.environ["KFSCHED_PID_APISERVER"], "controller": os.environ["KFSCHED_PID_ARGO"]}
c0 = {n: cpu(p) for n, p in pids.items()}
t0 = time.time()
k("create", "-f", "-", stdin=json.dumps(lst))
path = f"/apis/argoproj.io/v1alpha1/namespaces/{ns}/workflows"
while True:
    time.sleep(2)
    done = names(path, "workflows.argoproj.io/phase=Succeeded")
    failed = names(path, "workflows.argoproj.io/phase in (Failed,Error)")
    if failed:
        sys.exit(f"bench/runs.sh: {way}: {len(failed)} runs failed, e.g. {failed[0]}")
    if len(done) == runs:
        break
    if time.time() - t0 > timeout:
        sys.exit(f"bench/runs.sh: {way}: {len(done)} of {runs} runs succeeded after {timeout:.0f} s")
wall = time.time() - t0
used = {n: cpu(p) - c0[n] for n, p in pids.items()}

# Where the pods went (after the measurement).
pods = json.loads(k("get", "pods", "-n", ns, "-o", "json"))["items"]
pool = {n: p for n, p in nodes}
wrong = []
for p in pods:
    task = p["metadata"].get("annotations", {}).get("workflows.argoproj.io/node-name", "").rsplit(".", 1)[-1]
    got = pool.get(p["spec"].get("nodeName", ""))
    if way == "none":
        want = "general"
    else:
        want = "gpu" if task.startswith("train-") else "general"
    if got != want:
        wrong.append(f"{p['metadata']['name']} ({task}) on {got}, want {want}")
if wrong:
    sys.exit(f"bench/runs.sh: {way}: {len(wrong)} pods where they should not be, e.g. {wrong[0]}")
print(json.dumps({"way": way, "runs": runs, "pods": len(pods), "wall": wall,
                  "apiserver_cpu": used["apiserver"], "controller_cpu": used["controller"]}))
PY
    ) >> "$results"
    scripts/cluster.sh stop >/dev/null
    current=""
  done
done

python3 - "$results" "$R" "$T" "$QPS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
runs, tasks, qps = sys.argv[2], sys.argv[3], sys.argv[4]
ways = ["none", "admission", "rewrite"]
label = {"none": "no policy", "admission": "exported admission policy", "rewrite": "rewritten files"}
med = {}
for w in ways:
    rs = [r for r in rows if r["way"] == w]
    m = lambda k: statistics.median(r[k] for r in rs)
    med[w] = {"pods": m("pods"), "wall": m("wall"), "api": m("apiserver_cpu"), "ctl": m("controller_cpu"), "n": len(rs)}
print(f"{runs} concurrent runs of a {tasks}-task pipeline through Argo's workflow controller "
      f"(--qps {qps}); medians of {med['none']['n']} rounds")
print(f"| way | pods | wall | pods/s | API server CPU | API server ms/pod | controller CPU | controller ms/pod |")
print("|---|---|---|---|---|---|---|---|")
for w in ways:
    x = med[w]
    print(f"| {label[w]} | {x['pods']:.0f} | {x['wall']:.1f} s | {x['pods'] / x['wall']:.1f} | "
          f"{x['api']:.1f} s ({x['api'] / x['wall']:.2f} cores) | {1000 * x['api'] / x['pods']:.2f} | "
          f"{x['ctl']:.1f} s ({x['ctl'] / x['wall']:.2f} cores) | {1000 * x['ctl'] / x['pods']:.2f} |")
base = med["none"]
for w in ["admission", "rewrite"]:
    x = med[w]
    print(f"{label[w]} / no policy: pods/s {(x['pods'] / x['wall']) / (base['pods'] / base['wall']):.2f}x, "
          f"API server CPU per pod {(x['api'] / x['pods']) / (base['api'] / base['pods']):.2f}x")
PY
