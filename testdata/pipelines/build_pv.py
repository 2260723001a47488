#!/usr/bin/env python3
"""Compile the KFP PipelineVersion fixtures (Kubernetes-native manifests) with the real SDK
(kfp 2.17.3 + kfp-kubernetes 2.17.3).

Run by scripts/compile-fixtures.sh inside the venv built from requirements-v2.txt:

    python build_pv.py OUT_DIR     # writes OUT_DIR/<case>/{plain,expected,policy,notes}

Each module testdata/pipelines/pv/<case>.py (files starting with `_` are helpers) defines

    pipeline(scheduled: bool)  -> a @dsl.pipeline function, as in testdata/pipelines/v2
                                  (often the v2 case's own, through _common.v2_source)
    OPTIONS: dict              -> keyword arguments of KubernetesManifestOptions
    POLICY: str, NOTES: str    -> policy.yaml, notes.md

plain.yaml is `Compiler().compile(pipeline(False), path, kubernetes_manifest_format=True,
kubernetes_manifest_options=KubernetesManifestOptions(**OPTIONS))`, expected.yaml the same
with pipeline(True); both are the SDK's bytes, unchanged.  The builder checks that they
differ only inside `spec.platformSpec` (or by its creation) and that a second compile of
each is byte-identical.

Derived cases (DERIVED below) are made from those SDK outputs by tools, never by hand:

    stream  plain.yaml / expected.yaml are what `kustomize build` prints for a
            kustomization listing several cases' plain.yaml / expected.yaml files
            (`$KFSCHED_KUSTOMIZE`, kustomize v5.8.2).
    list    plain.yaml / expected.yaml are what `kubectl get pipelineversions -A -o yaml`
            prints (`$KFSCHED_KUBECTL`, the real kubectl) when a stand-in API server on
            loopback serves several cases' PipelineVersions (see kubectl_list and
            server_objects for what it adds).

Their policy.yaml joins the base cases' rules (merged_policy); their notes.md is
pv/_<name>.md.
"""
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import kfp
import yaml
from kfp import compiler
from kfp.compiler.compiler_utils import KubernetesManifestOptions

HERE = Path(__file__).resolve().parent
SRC = HERE / "pv"
SDK_NOTE = (f"kfp {kfp.__version__}, kfp-kubernetes "
            f"{__import__('kfp.kubernetes').kubernetes.__version__}, "
            f"Python {sys.version.split()[0]}")

# name -> base cases, in document order
DERIVED = {
    "stream": ("pipeline_manifest", "basic", "platform_config", "namespace"),
    "list": ("basic", "platform_config", "reused_components"),
}


def load_cases():
    sys.path.insert(0, str(SRC))
    cases = []
    for path in sorted(SRC.glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"kfsched_pv_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attr in ("pipeline", "OPTIONS", "POLICY", "NOTES"):
            if not hasattr(module, attr):
                raise SystemExit(f"{path}: missing {attr}")
        cases.append((path.stem, module))
    return cases


def compile_manifest(func, tmp: Path, options: dict) -> bytes:
    out = tmp / "pipeline.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # dsl.Condition in control_flow
        compiler.Compiler().compile(
            func, str(out), kubernetes_manifest_format=True,
            kubernetes_manifest_options=KubernetesManifestOptions(**options))
    data = out.read_bytes()
    out.unlink()
    return data


PLATFORM_SPEC_LINE = re.compile(r"^( *)platformSpec:$")


def without_platform_spec(text: str) -> str:
    out, depth = [], None
    for line in text.split("\n"):
        if depth is not None:
            if line.startswith(" " * (depth + 1)):
                continue
            depth = None
        m = PLATFORM_SPEC_LINE.match(line)
        if m:
            depth = len(m.group(1))
            continue
        out.append(line)
    return "\n".join(out)


def check_pair(name: str, plain: bytes, expected: bytes):
    if without_platform_spec(plain.decode()) != without_platform_spec(expected.decode()):
        raise SystemExit(f"pv/{name}: plain and expected differ outside spec.platformSpec")
    if plain == expected:
        raise SystemExit(f"pv/{name}: the scheduling calls changed nothing")


def write_case(out: Path, name: str, plain: bytes, expected: bytes, policy: str, notes: str):
    d = out / name
    d.mkdir(parents=True)
    (d / "plain.yaml").write_bytes(plain)
    (d / "expected.yaml").write_bytes(expected)
    (d / "policy.yaml").write_text(policy.lstrip("\n"), encoding="utf-8")
    (d / "notes.md").write_text(notes.strip("\n") + "\n", encoding="utf-8")


def tool(env: str) -> str:
    path = os.environ.get(env)
    if not path:
        raise SystemExit(f"{env} is not set (scripts/compile-fixtures.sh sets it)")
    return path


def kustomize_build(files, tmp: Path) -> bytes:
    """`kustomize build` of a kustomization whose resources are `files`, in order."""
    d = tmp / "kustomization"
    d.mkdir()
    names = []
    for i, data in enumerate(files):
        names.append(f"{i:02d}.yaml")
        (d / names[-1]).write_bytes(data)
    (d / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        + "".join(f"- {n}\n" for n in names))
    data = subprocess.run([tool("KFSCHED_KUSTOMIZE"), "build", str(d)], check=True,
                          stdout=subprocess.PIPE).stdout
    for n in names:
        (d / n).unlink()
    (d / "kustomization.yaml").unlink()
    d.rmdir()
    return data


LIST_NAMESPACE = "kubeflow"
LIST_CREATED = "2024-05-01T12:00:00Z"


def server_objects(files):
    """The PipelineVersions of `files` as the API server would return them after
    `kubectl apply` in namespace LIST_NAMESPACE (when the document names none) with KFP's
    webhooks: the manifest's fields (sent as JSON), plus the server's metadata
    (`creationTimestamp`, `generation`, `resourceVersion`, `uid`) and the mutating
    webhook's labels and ownerReference to the Pipeline. Those values are made up (fixed,
    so the build is reproducible); `managedFields` are left out (kubectl hides them)."""
    import json
    import uuid
    items = []
    for data in files:
        for doc in yaml.safe_load_all(data):
            if doc["kind"] != "PipelineVersion":
                continue
            doc = json.loads(json.dumps(doc))  # what kubectl sends: JSON
            md = doc["metadata"]
            md.setdefault("namespace", LIST_NAMESPACE)
            pipeline = doc["spec"]["pipelineName"]
            pipeline_uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"pipeline/{md['namespace']}/{pipeline}"))
            md.update({
                "creationTimestamp": LIST_CREATED,
                "generation": 1,
                "labels": {**md.get("labels", {}),
                           "pipelines.kubeflow.org/pipeline": pipeline,
                           "pipelines.kubeflow.org/pipeline-id": pipeline_uid},
                "ownerReferences": [{"apiVersion": "pipelines.kubeflow.org/v2beta1",
                                     "blockOwnerDeletion": True, "kind": "Pipeline",
                                     "name": pipeline, "uid": pipeline_uid}],
                "uid": str(uuid.uuid5(uuid.NAMESPACE_URL,
                                      f"pipelineversion/{md['namespace']}/{md['name']}")),
            })
            items.append(doc)
    items.sort(key=lambda d: (d["metadata"]["namespace"], d["metadata"]["name"]))  # etcd order
    for i, doc in enumerate(items):
        doc["metadata"]["resourceVersion"] = str(1000 + i)
    return items


def kubectl_list(files, tmp: Path) -> bytes:
    """What `kubectl get pipelineversions -A -o yaml` prints for the PipelineVersions of
    `files`: the real kubectl ($KFSCHED_KUBECTL) against a stand-in API server on loopback
    that serves discovery for pipelines.kubeflow.org/v2beta1 and the objects of
    server_objects(files) as a PipelineVersionList."""
    import http.server
    import json
    import threading

    items = server_objects(files)
    group, version = "pipelines.kubeflow.org", "v2beta1"
    gv = f"{group}/{version}"
    resources = [
        {"name": "pipelines", "singularName": "pipeline", "namespaced": True,
         "kind": "Pipeline", "verbs": ["get", "list"]},
        {"name": "pipelineversions", "singularName": "pipelineversion", "namespaced": True,
         "kind": "PipelineVersion", "verbs": ["get", "list"]},
    ]
    routes = {
        "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.4", "platform": "linux/amd64"},
        "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]},
        "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": []},
        "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
            "name": group, "versions": [{"groupVersion": gv, "version": version}],
            "preferredVersion": {"groupVersion": gv, "version": version}}]},
        f"/apis/{gv}": {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                        "resources": resources},
        f"/apis/{gv}/pipelineversions": {
            "apiVersion": gv, "kind": "PipelineVersionList",
            "metadata": {"resourceVersion": str(1000 + len(items))}, "items": items},
    }
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = self.path.split("?", 1)[0]
            seen.append(path)
            body = routes.get(path)
            code = 200 if body is not None else 404
            if body is None:
                body = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "reason": "NotFound", "code": 404}
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        kubeconfig = tmp / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: stand-in\n  cluster:\n"
            f"    server: http://127.0.0.1:{server.server_address[1]}\n"
            "contexts:\n- name: stand-in\n  context: {cluster: stand-in, user: nobody}\n"
            "current-context: stand-in\nusers:\n- name: nobody\n  user: {}\n")
        data = subprocess.run(
            [tool("KFSCHED_KUBECTL"), "--kubeconfig", str(kubeconfig),
             "--cache-dir", str(tmp / "kube-cache"), "get", "pipelineversions",
             "--all-namespaces", "-o", "yaml"],
            check=True, stdout=subprocess.PIPE).stdout
    finally:
        server.shutdown()
        server.server_close()
    if f"/apis/{gv}/pipelineversions" not in seen:
        raise SystemExit(f"kubectl did not list pipelineversions (requests: {seen})")
    kubeconfig.unlink()
    return data


RULE_KEYS = ["name", "match", "exclude", "pool", "tolerations", "nodeSelector", "affinity",
             "podLabels", "podAnnotations", "strategy"]


def merged_policy(name: str, bases, modules, compiled) -> str:
    """One policy holding the rules of the base cases' policies, in the order of `bases`:
    names prefixed with the case name (so they stay unique), and a rule without
    `match.pipelines` limited to its case's pipeline (`spec.pipelineName`), so that it
    selects in the combined file exactly what it selects in its own case."""
    rules = []
    for base in bases:
        pol = yaml.safe_load(modules[base].POLICY)
        pv = [d for d in yaml.safe_load_all(compiled[base][0]) if d["kind"] == "PipelineVersion"]
        for rule in pol["spec"].get("rules") or []:
            rule = dict(rule, name=f"{base}.{rule['name']}")
            match = dict(rule.get("match") or {})
            match.setdefault("pipelines", [pv[0]["spec"]["pipelineName"]])
            rule["match"] = match
            rules.append(dict(sorted(rule.items(), key=lambda kv: RULE_KEYS.index(kv[0]))))
    body = yaml.safe_dump({"apiVersion": "kfsched.dev/v1alpha1", "kind": "SchedulingPolicy",
                           "metadata": {"name": f"pv-{name}"}, "spec": {"rules": rules}},
                          sort_keys=False, default_flow_style=None, width=100)
    return (f"# pv/{name} (derived; generated by testdata/pipelines/build_pv.py): the rules of\n# "
            + ", ".join(f"pv/{b}" for b in bases)
            + ", in that order, each named <case>.<rule>;\n# a rule without match.pipelines is "
              "limited to its case's pipeline (spec.pipelineName).\n" + body)


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: build_pv.py OUT_DIR")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    compiled, modules = {}, {}
    with tempfile.TemporaryDirectory() as tmpname:
        tmp = Path(tmpname)
        for name, module in load_cases():
            plain = compile_manifest(module.pipeline(False), tmp, module.OPTIONS)
            expected = compile_manifest(module.pipeline(True), tmp, module.OPTIONS)
            if (compile_manifest(module.pipeline(False), tmp, module.OPTIONS) != plain or
                    compile_manifest(module.pipeline(True), tmp, module.OPTIONS) != expected):
                raise SystemExit(f"pv/{name}: a second compile gave other bytes")
            check_pair(name, plain, expected)
            write_case(out, name, plain, expected, module.POLICY,
                       module.NOTES.rstrip("\n") + f"\n\nCompiled with {SDK_NOTE}.\n")
            compiled[name], modules[name] = (plain, expected), module
            print(f"pv/{name}: plain {len(plain)} B, expected {len(expected)} B")
        for name, bases in DERIVED.items():
            make = kustomize_build if name == "stream" else kubectl_list
            plain = make([compiled[b][0] for b in bases], tmp)
            expected = make([compiled[b][1] for b in bases], tmp)
            check_pair(name, plain, expected)
            notes = (HERE / "pv" / f"_{name}.md").read_text(encoding="utf-8")
            write_case(out, name, plain, expected, merged_policy(name, bases, modules, compiled), notes)
            print(f"pv/{name}: derived from {', '.join(bases)}: plain {len(plain)} B, "
                  f"expected {len(expected)} B")
    print(f"pv: compiled with {SDK_NOTE}")


if __name__ == "__main__":
    main()
