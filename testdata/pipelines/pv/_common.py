"""Helpers shared by the PipelineVersion fixture sources (kfp 2.17.3 + kfp-kubernetes).

`v2_source(name)` loads testdata/pipelines/v2/<name>.py, so a PipelineVersion case can
compile the same pipeline as a v2 IR case, in the Kubernetes manifest format.
`pv_policy(text)` turns a v2 case's policy into the PipelineVersion one: the document kind
that `kinds` matches is `PipelineVersion` here, not `PipelineSpec`.
"""
import importlib.util
from pathlib import Path

V2 = Path(__file__).resolve().parent.parent / "v2"
PY = "python:3.11-slim"


def v2_source(name: str):
    spec = importlib.util.spec_from_file_location(f"kfsched_pv_base_{name}", V2 / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pv_policy(text: str, case: str, base: str) -> str:
    """The v2 case `base`'s policy for the PipelineVersion case `case`: its header comment
    says so, and `kinds: ["PipelineSpec"]` becomes `kinds: ["PipelineVersion"]`."""
    assert text.startswith(f"# {base} (kfp v2)."), text.splitlines()[0]
    header = (f"# pv/{case} (KFP PipelineVersion): the policy of v2/{base}, with\n"
              f"# `kinds: [PipelineSpec]` read as `kinds: [PipelineVersion]`.\n")
    return header + text.replace('kinds: ["PipelineSpec"]', 'kinds: ["PipelineVersion"]')
