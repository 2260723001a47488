#!/usr/bin/env python3
"""Compile the KFP v2 fixture pipelines with the real SDK (kfp 2.17.3 + kfp-kubernetes 2.17.3).

Run by scripts/compile-fixtures.sh inside the venv built from requirements-v2.txt:

    python build_v2.py OUT_DIR        # writes OUT_DIR/<case>/{plain,expected,policy,notes}

Each module testdata/pipelines/v2/<case>.py (files starting with `_` are helpers) defines

    pipeline(scheduled: bool)  -> a @dsl.pipeline function; scheduled=True adds the
                                  kfp.kubernetes scheduling calls, False leaves them out
    POLICY: str                -> policy.yaml, the SchedulingPolicy with the same intent
    NOTES: str                 -> notes.md
    VARIANTS: tuple            -> optional derived copies: "crlf", "bom"
    JSON: bool                 -> optional: also write plain.json, the pipeline compiled to a
                                  .json path (deprecated, still supported), and check that
                                  the SDK refuses to compile the scheduled pipeline to JSON
    MANIFEST: bool             -> optional: also write manifest.yaml, the pipeline compiled
                                  with kubernetes_manifest_format=True (a Pipeline and a
                                  PipelineVersion), which v1alpha1 skips with a warning

plain.yaml is compile(pipeline(False)), expected.yaml is compile(pipeline(True)); both are
written by `kfp.compiler.Compiler().compile` unchanged.  Derived variants only convert line
endings or prepend a UTF-8 BOM to those two SDK outputs.
"""
import importlib.util
import os
import sys
import tempfile
import warnings
from pathlib import Path

import kfp
from kfp import compiler
from kfp.compiler.compiler_utils import KubernetesManifestOptions

HERE = Path(__file__).resolve().parent
SRC = HERE / "v2"
SDK_NOTE = (f"kfp {kfp.__version__}, kfp-kubernetes "
            f"{__import__('kfp.kubernetes').kubernetes.__version__}, "
            f"Python {sys.version.split()[0]}")


def load_cases():
    sys.path.insert(0, str(SRC))
    cases = []
    for path in sorted(SRC.glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"kfsched_v2_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attr in ("pipeline", "POLICY", "NOTES"):
            if not hasattr(module, attr):
                raise SystemExit(f"{path}: missing {attr}")
        cases.append((path.stem, module))
    return cases


def compile_text(func, tmp: Path, name: str = "pipeline.yaml", **options) -> bytes:
    """The SDK's bytes for `func` compiled to `tmp/name` (the extension picks YAML or
    JSON) with compiler `options`."""
    out = tmp / name
    with warnings.catch_warnings():
        # dsl.Condition is deprecated in favour of dsl.If (the fixtures use both on
        # purpose), and so is compiling to JSON (which plain.json is about).
        warnings.simplefilter("ignore", DeprecationWarning)
        compiler.Compiler().compile(func, str(out), **options)
    data = out.read_bytes()
    out.unlink()
    return data


JSON_REFUSAL = "Platform-specific features are only supported when serializing to YAML"


JSON_NOTE = f"""
plain.json is the same pipeline compiled to a `.json` path (deprecated in kfp 2, still
written: `json.dump(indent=2, sort_keys=True)`). The SDK refuses to compile the scheduled
pipeline to JSON ("{JSON_REFUSAL}"; build_v2.py checks that it still does), and
`kubectl kfsched rewrite plain.json` refuses likewise, exit 2, writing nothing.
"""


def check_json_refusal(func, tmp: Path):
    """The SDK cannot write scheduling (a platform spec) into a JSON file."""
    try:
        compile_text(func, tmp, "pipeline.json")
    except ValueError as e:
        if JSON_REFUSAL not in str(e):
            raise
        (tmp / "pipeline.json").unlink(missing_ok=True)
        return
    raise SystemExit("the SDK compiled a scheduled pipeline to JSON; kfsched's JSON refusal assumes it cannot")


MANIFEST_NOTE = """
manifest.yaml is the same pipeline compiled with `kubernetes_manifest_format=True`
(`KubernetesManifestOptions(include_pipeline_manifest=True)`): a `Pipeline` and a
`PipelineVersion` (pipelines.kubeflow.org/v2beta1) holding the IR. SPEC v1alpha1 does not
rewrite that format; kfsched skips the PipelineVersion with a warning that says so.
"""


def write_case(out: Path, name: str, plain: bytes, expected: bytes, policy: str, notes: str):
    d = out / name
    d.mkdir(parents=True)
    (d / "plain.yaml").write_bytes(plain)
    (d / "expected.yaml").write_bytes(expected)
    (d / "policy.yaml").write_text(policy.lstrip("\n"), encoding="utf-8")
    (d / "notes.md").write_text(notes.strip("\n") + "\n", encoding="utf-8")


def variant_notes(kind: str, base: str, notes: str) -> str:
    how = {
        "crlf": "every `\\n` of the base case's plain.yaml and expected.yaml replaced by `\\r\\n` "
                "(the SDK writes `\\n`). kfsched must keep CRLF and write its inserted lines "
                "with CRLF too.",
        "bom": "a UTF-8 byte order mark (EF BB BF) prepended to the base case's plain.yaml and "
               "expected.yaml. kfsched must keep the BOM.",
    }[kind]
    return (f"# v2 / {base}_{kind} (derived)\n\n"
            f"Derived by scripts/compile-fixtures.sh from `../{base}` (SDK output): {how} "
            f"policy.yaml is the base case's, unchanged. Apart from that, everything below "
            f"applies.\n\n---\n\n{notes.strip()}\n")


def derive(kind: str, data: bytes) -> bytes:
    if kind == "crlf":
        assert b"\r" not in data
        return data.replace(b"\n", b"\r\n")
    if kind == "bom":
        assert not data.startswith(b"\xef\xbb\xbf")
        return b"\xef\xbb\xbf" + data
    raise ValueError(kind)


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: build_v2.py OUT_DIR")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmpname:
        tmp = Path(tmpname)
        for name, module in load_cases():
            plain = compile_text(module.pipeline(False), tmp)
            expected = compile_text(module.pipeline(True), tmp)
            write_case(out, name, plain, expected, module.POLICY, module.NOTES)
            print(f"v2/{name}: plain {len(plain)} B, expected {len(expected)} B")
            if getattr(module, "JSON", False):
                data = compile_text(module.pipeline(False), tmp, "pipeline.json")
                (out / name / "plain.json").write_bytes(data)
                with open(out / name / "notes.md", "a", encoding="utf-8") as f:
                    f.write(JSON_NOTE)
                check_json_refusal(module.pipeline(True), tmp)
                print(f"v2/{name}: plain.json {len(data)} B; the scheduled pipeline is refused as JSON")
            if getattr(module, "MANIFEST", False):
                data = compile_text(
                    module.pipeline(False), tmp, "manifest.yaml", kubernetes_manifest_format=True,
                    kubernetes_manifest_options=KubernetesManifestOptions(
                        include_pipeline_manifest=True))
                (out / name / "manifest.yaml").write_bytes(data)
                with open(out / name / "notes.md", "a", encoding="utf-8") as f:
                    f.write(MANIFEST_NOTE)
                print(f"v2/{name}: manifest.yaml {len(data)} B")
            for kind in getattr(module, "VARIANTS", ()):
                write_case(out, f"{name}_{kind}", derive(kind, plain), derive(kind, expected),
                           module.POLICY, variant_notes(kind, name, module.NOTES))
                print(f"v2/{name}_{kind}: derived")
    print(f"v2: compiled with {SDK_NOTE}")


if __name__ == "__main__":
    main()
