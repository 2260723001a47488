#!/usr/bin/env bash
# Runs workflows through Argo's own workflow controller on the test control plane and says
# where every pod landed: one JSON line per pod (workflow, Argo node name, template, task
# path, role, node, the node's pool, or the scheduler's reason when it stays Pending), and
# the pools where `kubectl kfsched check` says the pod's component fits.
#
#   scripts/e2e.sh -p POLICY --mode admission FILE...   # export the policy, submit the files as they are
#   scripts/e2e.sh -p POLICY --mode rewrite FILE...     # rewrite the files, submit the result
#
# It reuses the cluster of $KFSCHED_CLUSTER_DIR when one runs (else starts one and stops it
# at the end), starts Argo's controller (scripts/cluster.sh argo), makes one kwok node per
# node pool of the policy (named from its first node glob, or carrying its nodeSelector's
# labels) and one node of no pool, runs `kubectl kfsched node apply` for the pools' labels
# and taints, and submits every Workflow of the files in a namespace of its own, labelled
# for the controller's instance ID, with a workflow node selector that holds its pods to
# the nodes it made. It waits until every workflow has ended, or no pod has
# changed for E2E_SETTLE seconds (default 10) with every pod bound or Pending, at most
# E2E_TIMEOUT seconds (default 300). Pods end through kwok's stages; a template with
# outputs waits for a WorkflowTaskResult that nothing writes, so such a workflow does not
# end (its pods are still reported). KFP v2 files need KFP's Argo compiler, whose Go module
# the module proxy does not serve: they are refused.
#
# Exit 0 when every workflow succeeded, 1 when one did not end or failed, 2 on error.
# Needs python3 with PyYAML, scripts/build-control-plane.sh argo, and a kfsched binary
# ($KFSCHED_BIN, default target/debug/kubectl-kfsched, built when missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
policy="" mode="" files=()
while [ $# -gt 0 ]; do
  case $1 in
    -p|--policy) policy=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "e2e.sh: unknown option $1" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
[ -n "$policy" ] || { echo "e2e.sh: -p POLICY is required" >&2; exit 2; }
case $mode in rewrite|admission) ;; *) echo "e2e.sh: --mode rewrite|admission is required" >&2; exit 2 ;; esac
[ ${#files[@]} -gt 0 ] || { echo "e2e.sh: no workflow files given" >&2; exit 2; }
python3 -c 'import yaml' 2>/dev/null || { echo "e2e.sh: python3 with PyYAML is needed" >&2; exit 2; }

bin=${KFSCHED_BIN:-$root/target/debug/kubectl-kfsched}
[ -x "$bin" ] || (cd "$root" && cargo build -q --bin kubectl-kfsched)
started=0
if ! "$root/scripts/cluster.sh" status >/dev/null 2>&1; then
  "$root/scripts/cluster.sh" start >&2
  started=1
fi
cleanup() { if [ "$started" = 1 ]; then "$root/scripts/cluster.sh" stop >&2; fi; }
trap cleanup EXIT
"$root/scripts/cluster.sh" argo >&2
eval "$("$root/scripts/cluster.sh" env)"

KFSCHED_BIN=$bin KUBECTL=${KFSCHED_KUBE_BIN:-$root/.cache/kube-bin}/kubectl \
  python3 - "$policy" "$mode" "${files[@]}" <<'PY'
import json, os, random, string, subprocess, sys, tempfile, time
import yaml

policy_file, mode, files = sys.argv[1], sys.argv[2], sys.argv[3:]
kfsched, kubectl = os.environ["KFSCHED_BIN"], os.environ["KUBECTL"]
kc = ["--kubeconfig", os.environ["KFSCHED_ADMIN_KUBECONFIG"]]
settle = float(os.environ.get("E2E_SETTLE", "10"))
timeout = float(os.environ.get("E2E_TIMEOUT", "300"))
INSTANCE = "kfsched-test"

def fail(msg):
    print(f"e2e.sh: {msg}", file=sys.stderr)
    sys.exit(2)

def run(args, stdin=None, check=True):
    r = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        fail(f"{' '.join(args[:3])}... exited {r.returncode}: {r.stderr.strip()}")
    return r

def k(*args, stdin=None, check=True):
    return run([kubectl, *kc, *args], stdin, check)

with open(policy_file) as f:
    pol = yaml.safe_load(f)
pools = (pol.get("spec") or {}).get("nodePools") or []
run_id = "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
ns = f"e2e-{run_id}"

# One node per pool, and one of no pool: a Node object is enough, kwok plays its kubelet.
def node_name(glob):
    out, i = "", 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            out += f"e2e-{run_id}"
        elif c == "?":
            out += "0"
        elif c == "[":
            j = glob.index("]", i)
            out += glob[i + 1:j].lstrip("!^")[:1] or "0"
            i = j
        else:
            out += c
        i += 1
    return out.lower()

nodes = {}  # node name -> pool
for p in pools:
    labels = {}
    if p.get("nodes"):
        name = node_name(p["nodes"][0])
    else:
        name = f"{p['name']}-e2e-{run_id}"
        for req in (p.get("nodeSelector") or "").split(","):
            if "=" in req and "!=" not in req:
                key, value = req.replace("==", "=").split("=", 1)
                labels[key.strip()] = value.strip()
    nodes[name] = (p["name"], labels)
# A node of no pool, unless a pool without taints takes the pods no rule sends elsewhere.
if all(p.get("taints") for p in pools):
    nodes[f"general-e2e-{run_id}"] = (None, {})
for name, (_, labels) in nodes.items():
    labels = {**labels, "type": "kwok", "kfsched-e2e": run_id}
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels,
                         "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                       "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"}}}
    k("apply", "-f", "-", stdin=json.dumps(node))
if pools:
    run([kfsched, "node", "apply", "-p", policy_file, *kc])

k("create", "namespace", ns)
k("label", "namespace", ns, f"kfsched-e2e={run_id}")
for _ in range(120):
    if k("get", "serviceaccount", "default", "-n", ns, check=False).returncode == 0:
        break
    time.sleep(0.5)

tmp = tempfile.mkdtemp()
sources = files
if mode == "admission":
    export = run([kfsched, "export", "admission", "-p", policy_file,
                  "--name-prefix", f"kfsched-e2e-{run_id}.", "--namespace-selector", f"kfsched-e2e={run_id}"]).stdout
    k("apply", "--server-side", "-f", "-", stdin=export)
    time.sleep(2)  # the API server takes the policy in about a second
else:
    sources = []
    for i, f in enumerate(files):
        out = os.path.join(tmp, f"{i}-{os.path.basename(f)}")
        with open(out, "w") as o:
            o.write(run([kfsched, "rewrite", "-p", policy_file, f]).stdout)
        sources.append(out)

workflows = []
for f in sources:
    with open(f) as fh:
        docs = [d for d in yaml.safe_load_all(fh) if isinstance(d, dict)]
    for d in docs:
        if d.get("kind") in ("PipelineSpec",) or "pipelineInfo" in d or "deploymentSpec" in d:
            fail(f"{f}: a KFP v2 pipeline needs KFP's Argo compiler, whose Go module the proxy does not serve")
        if d.get("kind") != "Workflow":
            continue
        meta = d.setdefault("metadata", {})
        meta["namespace"] = ns
        meta.setdefault("labels", {})["workflows.argoproj.io/controller-instanceid"] = INSTANCE
        # Every pod held to this run's nodes (the cluster may have others).
        d.setdefault("spec", {}).setdefault("nodeSelector", {})["kfsched-e2e"] = run_id
        created = json.loads(k("create", "-o", "json", "-f", "-", stdin=json.dumps(d)).stdout)
        workflows.append(created["metadata"]["name"])
if not workflows:
    fail("the files hold no Workflow")

def pods():
    return json.loads(k("get", "pods", "-n", ns, "-o", "json").stdout)["items"]

def settled(p):
    if p["spec"].get("nodeName"):
        return True
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False"
               for c in p.get("status", {}).get("conditions", []))

deadline, last, since = time.time() + timeout, None, time.time()
phases = {}
while True:
    wfs = json.loads(k("get", "workflows.argoproj.io", "-n", ns, "-o", "json").stdout)["items"]
    phases = {w["metadata"]["name"]: w.get("status", {}).get("phase", "") for w in wfs}
    ps = pods()
    state = sorted((p["metadata"]["name"], p["spec"].get("nodeName", ""), p.get("status", {}).get("phase", "")) for p in ps)
    if state != last:
        last, since = state, time.time()
    if all(v in ("Succeeded", "Failed", "Error") for v in phases.values()):
        break
    if time.time() - since >= settle and all(settled(p) for p in ps):
        break
    if time.time() > deadline:
        print(f"e2e.sh: gave up after {timeout:.0f} s", file=sys.stderr)
        break
    time.sleep(1)

# Each pod as admission reads it (`explain`, component i is pod i), and where it is.
ps = sorted(pods(), key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
readings = []
if ps:
    listing = json.dumps({"apiVersion": "v1", "kind": "List", "items": ps})
    r = run([kfsched, "explain", "-o", "json", "-p", policy_file, "-"], stdin=listing, check=False)
    try:
        readings = json.loads(r.stdout)["files"][0]["documents"][0]["components"]
    except (ValueError, KeyError, IndexError, TypeError):
        print(f"e2e.sh: explain could not read the pods: {r.stderr.strip()}", file=sys.stderr)
# What `check` predicts for each component of the files, against this run's nodes.
snapshot = os.path.join(tmp, "nodes.json")
with open(snapshot, "w") as f:
    f.write(k("get", "nodes", "-l", f"kfsched-e2e={run_id}", "-o", "json").stdout)
r = run([kfsched, "check", "-p", policy_file, "--nodes", snapshot, "-o", "json", *files], check=False)
try:
    predictions = json.loads(r.stdout)["components"]
except (ValueError, KeyError):
    fail(f"check could not judge the files: {r.stderr.strip()}")

def predicted(wf, template, task):
    """The pools (None: a node of no pool) where check says the pod's component fits."""
    base = wf[:-6] if len(wf) > 6 else wf
    for c in predictions:
        if base not in (c.get("pipelines") or []):
            continue
        if (template and c.get("component") == template) or (not template and task in (c.get("names") or [])):
            return sorted({nodes.get(n, (None,))[0] or "" for n in c.get("nodes") or []}), c.get("message")
    return None, None

for i, p in enumerate(ps):
    a = p["metadata"].get("annotations", {})
    wf = p["metadata"].get("labels", {}).get("workflows.argoproj.io/workflow", "")
    name = p["metadata"]["name"]
    template = name[len(wf) + 1:name.rfind("-")] if name.startswith(wf + "-") and name.rfind("-") > len(wf) else ""
    node = p["spec"].get("nodeName", "")
    c = readings[i] if i < len(readings) else {}
    line = {
        "workflow": wf,
        "node": a.get("workflows.argoproj.io/node-name", ""),
        "template": template,
        "taskPath": c.get("taskPath") or "",
        "role": c.get("role") or "",
        "rules": [x["rule"] for x in c.get("rules", []) if x.get("matched")],
        "boundTo": node,
        "pool": nodes.get(node, (None,))[0] if node else None,
        "admitted": a.get("kfsched.dev/admitted", ""),
    }
    pools, message = predicted(wf, template, line["taskPath"].split("/")[-1])
    line["predicted"] = pools
    if message:
        line["predictedMessage"] = message
    if not node:
        line["pending"] = next((cond.get("message", "") for cond in p.get("status", {}).get("conditions", [])
                                if cond.get("type") == "PodScheduled"), "")
    print(json.dumps(line))
print(json.dumps({"workflows": phases}), file=sys.stderr)
k("delete", "namespace", ns, "--wait=false", check=False)
k("delete", "nodes", "-l", f"kfsched-e2e={run_id}", "--wait=false", check=False)
if mode == "admission":
    k("delete", "-f", "-", "--wait=false", stdin=export, check=False)
sys.exit(0 if phases and all(v == "Succeeded" for v in phases.values()) else 1)
PY
