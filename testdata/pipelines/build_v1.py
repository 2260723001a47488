#!/usr/bin/env python3
"""Compile the KFP v1 fixture pipelines with the real SDK (kfp 1.8.22, Argo Workflow YAML).

Run by scripts/compile-fixtures.sh inside the venv built from requirements-v1.txt:

    python build_v1.py OUT_DIR        # writes OUT_DIR/<case>/{plain,expected,policy,notes}

Each module testdata/pipelines/v1/<case>.py (files starting with `_` are helpers) defines

    pipeline(scheduled: bool)  -> a @dsl.pipeline function; scheduled=True adds the SDK's
                                  scheduling calls (add_toleration, add_affinity, ...)
    POLICY: str, NOTES: str    -> policy.yaml, notes.md
    VARIANTS: tuple            -> optional derived copies: "crlf", "bom", "workflowtemplate",
                                  "clusterworkflowtemplate", "cronworkflow"
    TEMPLATE_FIELDS: dict      -> optional: template name -> fields kfp 1.8 has no call for,
                                  written into the scheduled compile's workflow object (see
                                  add_template_fields) before the SDK's dumper writes it

The only change to the compiler is the clock: the workflow annotation
`pipelines.kubeflow.org/pipeline_compilation_time` is frozen at FROZEN_TIME so that plain.yaml
and expected.yaml differ only in scheduling and a rebuild is byte-identical.

Kind variants are made from the compiled workflow object itself: the dict the compiler hands
to `Compiler._write_workflow` (which dumps it with `kfp.components._yaml_utils.dump_yaml`) is
captured, its metadata/spec are moved to where
the other Argo kind keeps them, and the result is written by that same SDK dumper, for plain
and expected alike.  For WorkflowTemplate / ClusterWorkflowTemplate, `spec` stays where it
is, and the builder checks that the result equals the textual edit of the Workflow file
(kind line, generateName -> name).  CronWorkflow moves the spec one level down
(`spec.workflowSpec`), so re-dumping is what keeps its 80-column wrapping SDK-written.
"""
import copy
import datetime
import importlib.util
import json
import sys
import tempfile
import warnings
from pathlib import Path

import kfp
import kfp.compiler.compiler as kfp_compiler_module
from kfp import compiler
from kfp.components._yaml_utils import dump_yaml

HERE = Path(__file__).resolve().parent
SRC = HERE / "v1"
FROZEN_TIME = datetime.datetime(2024, 5, 1, 12, 0, 0, 123456)
CRON_SCHEDULE = "0 2 * * *"
SDK_NOTE = f"kfp {kfp.__version__}, Python {sys.version.split()[0]}"


class _FrozenDatetime(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return FROZEN_TIME


class _FrozenDatetimeModule:
    datetime = _FrozenDatetime


_captured = []
_write_workflow = compiler.Compiler._write_workflow


def _capturing_write_workflow(workflow, package_path=None):
    _captured.append(copy.deepcopy(workflow))
    return _write_workflow(workflow, package_path)


# The compiler module did `import datetime`; Compiler._write_workflow is a staticmethod
# that dumps the finished workflow with kfp.components._yaml_utils.dump_yaml.
kfp_compiler_module.datetime = _FrozenDatetimeModule
compiler.Compiler._write_workflow = staticmethod(_capturing_write_workflow)


def load_cases():
    sys.path.insert(0, str(SRC))
    cases = []
    for path in sorted(SRC.glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"kfsched_v1_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attr in ("pipeline", "POLICY", "NOTES"):
            if not hasattr(module, attr):
                raise SystemExit(f"{path}: missing {attr}")
        cases.append((path.stem, module))
    return cases


def compile_workflow(func, tmp: Path):
    """Returns (bytes written by the SDK, the workflow dict it dumped)."""
    out = tmp / "pipeline.yaml"
    _captured.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FutureWarning for raw ContainerOp, etc.
        compiler.Compiler().compile(func, str(out))
    data = out.read_bytes()
    out.unlink()
    if len(_captured) != 1:
        raise RuntimeError(f"expected one _write_workflow call, got {len(_captured)}")
    workflow = _captured[0]
    if dump_yaml(workflow).encode() != data:
        raise RuntimeError("re-dumping the captured workflow does not reproduce the SDK file")
    return data, workflow


def add_template_fields(workflow, fields):
    """The workflow object with `fields` (template name -> {key: value}) written as a user
    editing it would: each key set on its template, in order (a new key goes last), and
    `podSpecPatch`'s keys set in the JSON of the template's patch (`json.loads`, then the
    keys, then `json.dumps` as kfp 1.8 writes its own). Returns the object and its bytes
    as the SDK's dumper writes them."""
    wf = copy.deepcopy(workflow)
    seen = set()
    for t in wf["spec"]["templates"]:
        for key, value in fields.get(t["name"], {}).items():
            seen.add(t["name"])
            if key == "podSpecPatch":
                patch = json.loads(t.get("podSpecPatch") or "{}")
                patch.update(value)
                t["podSpecPatch"] = json.dumps(patch)
            else:
                t[key] = value
    missing = set(fields) - seen
    if missing:
        raise RuntimeError(f"TEMPLATE_FIELDS names no template {sorted(missing)}")
    return wf, dump_yaml(wf).encode()


def pipeline_name(workflow) -> str:
    gen = workflow["metadata"]["generateName"]
    assert gen.endswith("-"), gen
    return gen[:-1]


def to_kind(workflow, kind: str):
    """The compiled Workflow as another Argo kind, keys in the SDK's order."""
    wf = copy.deepcopy(workflow)
    assert list(wf) == ["apiVersion", "kind", "metadata", "spec"], list(wf)
    metadata = {}
    for key, value in wf["metadata"].items():
        if key == "generateName":
            metadata["name"] = pipeline_name(wf)
        else:
            metadata[key] = value
    if kind in ("WorkflowTemplate", "ClusterWorkflowTemplate"):
        spec = wf["spec"]
    elif kind == "CronWorkflow":
        spec = {"schedule": CRON_SCHEDULE, "workflowSpec": wf["spec"]}
    else:
        raise ValueError(kind)
    return {"apiVersion": wf["apiVersion"], "kind": kind, "metadata": metadata, "spec": spec}


KINDS = {
    "workflowtemplate": "WorkflowTemplate",
    "clusterworkflowtemplate": "ClusterWorkflowTemplate",
    "cronworkflow": "CronWorkflow",
}


def derive(variant: str, data: bytes, workflow) -> bytes:
    if variant == "crlf":
        assert b"\r" not in data
        return data.replace(b"\n", b"\r\n")
    if variant == "bom":
        return b"\xef\xbb\xbf" + data
    kind = KINDS[variant]
    out = dump_yaml(to_kind(workflow, kind)).encode()
    if kind != "CronWorkflow":
        name = pipeline_name(workflow)
        textual = data.replace(b"kind: Workflow\n", f"kind: {kind}\n".encode(), 1).replace(
            f"  generateName: {name}-\n".encode(), f"  name: {name}\n".encode(), 1)
        if textual != out:
            raise RuntimeError(f"{kind}: SDK re-dump differs from the textual edit")
    return out


def variant_notes(variant: str, base: str, notes: str) -> str:
    how = {
        "crlf": "every `\\n` of the base case's plain.yaml and expected.yaml replaced by `\\r\\n` "
                "(the SDK writes `\\n`). kfsched must keep CRLF and write its inserted lines "
                "with CRLF too.",
        "bom": "a UTF-8 byte order mark (EF BB BF) prepended to the base case's plain.yaml and "
               "expected.yaml. kfsched must keep the BOM.",
        "workflowtemplate": "the compiled Workflow turned into an Argo `WorkflowTemplate`: "
                            "`kind: WorkflowTemplate`, `metadata.generateName: <p>-` replaced "
                            "by `metadata.name: <p>`, `spec` unchanged. Written by the SDK's "
                            "own dumper (kfp.components._yaml_utils.dump_yaml) from the "
                            "compiled workflow object, which here is byte-identical to that "
                            "textual edit of the base files.",
        "clusterworkflowtemplate": "the compiled Workflow turned into an Argo "
                                   "`ClusterWorkflowTemplate` (same edit as the "
                                   "workflowtemplate variant, other kind). Written by the SDK's "
                                   "own dumper; byte-identical to the textual edit.",
        "cronworkflow": "the compiled Workflow turned into an Argo `CronWorkflow`: "
                        "`metadata.generateName: <p>-` replaced by `metadata.name: <p>`, and "
                        f"`spec` becomes `spec.workflowSpec` next to `spec.schedule: "
                        f"'{CRON_SCHEDULE}'`. Everything under `spec` is indented 2 more "
                        "columns, so the file is re-dumped by the SDK's own dumper "
                        "(kfp.components._yaml_utils.dump_yaml, 80-column flow wrapping) "
                        "from the compiled workflow objects, plain and expected alike: "
                        "line wrapping differs from the base case, and the scheduling lines "
                        "in expected.yaml are wrapped for their new indentation.",
    }[variant]
    return (f"# v1 / {base}_{variant} (derived)\n\n"
            f"Derived by scripts/compile-fixtures.sh from `../{base}` (SDK output): {how} "
            f"policy.yaml is the base case's, unchanged. Template names, task names and paths "
            f"are the same as in the base case, so everything below applies.\n\n---\n\n"
            f"{notes.strip()}\n")


def write_case(out: Path, name: str, plain: bytes, expected: bytes, policy: str, notes: str):
    d = out / name
    d.mkdir(parents=True)
    (d / "plain.yaml").write_bytes(plain)
    (d / "expected.yaml").write_bytes(expected)
    (d / "policy.yaml").write_text(policy.lstrip("\n"), encoding="utf-8")
    (d / "notes.md").write_text(notes.strip("\n") + "\n", encoding="utf-8")


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: build_v1.py OUT_DIR")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmpname:
        tmp = Path(tmpname)
        for name, module in load_cases():
            plain, plain_wf = compile_workflow(module.pipeline(False), tmp)
            expected, expected_wf = compile_workflow(module.pipeline(True), tmp)
            if hasattr(module, "TEMPLATE_FIELDS"):
                expected_wf, expected = add_template_fields(expected_wf,
                                                            module.TEMPLATE_FIELDS)
            write_case(out, name, plain, expected, module.POLICY, module.NOTES)
            print(f"v1/{name}: plain {len(plain)} B, expected {len(expected)} B")
            for variant in getattr(module, "VARIANTS", ()):
                write_case(out, f"{name}_{variant}", derive(variant, plain, plain_wf),
                           derive(variant, expected, expected_wf), module.POLICY,
                           variant_notes(variant, name, module.NOTES))
                print(f"v1/{name}_{variant}: derived")
    print(f"v1: compiled with {SDK_NOTE}")


if __name__ == "__main__":
    main()
