"""kfsched: one SchedulingPolicy for Kubeflow Pipelines, from Python.

``pip install kfsched`` puts ``kubectl-kfsched`` (the kubectl plugin),
``kubectl_complete-kfsched`` and ``kfsched`` on PATH. This package is a thin
typed API over that bundled binary, for compile scripts and notebooks::

    from kfp import compiler
    import kfsched

    compiler.Compiler().compile(my_pipeline, "pipeline.yaml")
    result = kfsched.rewrite("pipeline.yaml", policy="policy.yaml")
    print(result.diff)

Each function runs the binary once, exactly as the command line does, and
returns what it reports; bad input raises :class:`PolicyError` or
:class:`InputError` carrying the diagnostics (file, line, column, YAML path,
message), and nothing is written.
"""

from __future__ import annotations

from ._api import (
    CheckResult,
    Explanation,
    RewriteResult,
    Validation,
    check,
    explain,
    rewrite,
    validate,
)
from ._binary import find_binary
from ._errors import (
    ClusterError,
    Diagnostic,
    InputError,
    InstallError,
    KfschedError,
    KfschedWarning,
    PolicyError,
)
from ._types import CheckReport, ExplainReport



def __getattr__(name: str) -> str:
    # The version on first use: importlib.metadata takes longer to import
    # than the rest of the package.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("kfsched")
        except PackageNotFoundError:  # imported from a source tree, not installed
            return "unknown"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CheckReport",
    "CheckResult",
    "ClusterError",
    "Diagnostic",
    "ExplainReport",
    "Explanation",
    "InputError",
    "InstallError",
    "KfschedError",
    "KfschedWarning",
    "PolicyError",
    "RewriteResult",
    "Validation",
    "__version__",
    "check",
    "explain",
    "find_binary",
    "rewrite",
    "validate",
]
