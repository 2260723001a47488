"""The API: each function runs the bundled binary once, as the command line
would, with ``KFSCHED_DIAGNOSTICS=json`` so that its errors and warnings come
back as :class:`Diagnostic` objects, and returns what its JSON output says."""

from __future__ import annotations

import json
import os
import subprocess
import warnings as _warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

from ._binary import find_binary
from ._errors import (
    ClusterError,
    Diagnostic,
    InputError,
    KfschedError,
    KfschedWarning,
    PolicyError,
)
from ._types import CheckReport, ExplainReport

PathArg = Union[str, "os.PathLike[str]"]
Paths = Union[PathArg, Sequence[PathArg]]


@dataclass(frozen=True)
class RewriteResult:
    """What :func:`rewrite` did.

    ``changed`` lists the files the policy changes (rewritten, or that would
    be with ``check=True``), ``unchanged`` the others it read; ``diffs`` maps
    each changed file to its unified diff and ``diff`` is all of them, exactly
    what ``kubectl kfsched diff`` prints. ``written`` is whether files were
    written.
    """

    changed: List[str]
    unchanged: List[str]
    diffs: Dict[str, str]
    written: bool
    warnings: List[Diagnostic] = field(default_factory=list)

    @property
    def diff(self) -> str:
        return "".join(self.diffs.values())


@dataclass(frozen=True)
class Explanation:
    """What :func:`explain` found: ``report`` is ``explain -o json``."""

    report: ExplainReport
    warnings: List[Diagnostic] = field(default_factory=list)


@dataclass(frozen=True)
class CheckResult:
    """What :func:`check` judged: ``report`` is ``check -o json``; ``ok`` is
    false when a component fits no node (the command's exit code 1)."""

    report: CheckReport
    ok: bool
    warnings: List[Diagnostic] = field(default_factory=list)

    @property
    def unschedulable(self) -> List[Dict[str, Any]]:
        """The components that fail the check, with the scheduler's message:
        those that fit no node (with ``pools=True``, that miss a pool their
        rules name). Empty exactly when ``ok`` is true."""
        return [dict(c) for c in self.report["components"] if not c["ok"]]


@dataclass(frozen=True)
class Validation:
    """A valid policy: its file, ``metadata.name``, rule and pool names."""

    file: str
    name: str
    rules: List[str]
    pools: List[str]
    warnings: List[Diagnostic] = field(default_factory=list)


@dataclass(frozen=True)
class _Ran:
    stdout: str
    code: int
    warnings: List[Diagnostic]


def _paths(paths: Paths) -> List[str]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise ValueError("no paths given: name pipeline files or directories")
    return out


def _diagnostics(stderr: str) -> List[Diagnostic]:
    out = []
    for line in stderr.splitlines():
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            out.append(
                Diagnostic(
                    level=d["level"],
                    category=d["category"],
                    message=d["message"],
                    file=d["file"],
                    line=d["line"],
                    column=d["column"],
                    path=d["path"],
                )
            )
        except (ValueError, KeyError, TypeError):
            # Not a diagnostic: a crash's message, kept whole.
            out.append(Diagnostic(level="error", category="internal", message=line))
    return out


def _run(args: List[str], ok: Sequence[int], cwd: Optional[PathArg]) -> _Ran:
    binary = find_binary()
    command = [binary, *args]
    env = dict(os.environ, KFSCHED_DIAGNOSTICS="json")
    proc = subprocess.run(
        command,
        cwd=None if cwd is None else os.fspath(cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    diags = _diagnostics(proc.stderr.decode("utf-8", "replace"))
    errors = [d for d in diags if d.level == "error"]
    warnings = [d for d in diags if d.level == "warning"]
    for w in warnings:
        _warnings.warn(str(w), KfschedWarning, stacklevel=3)
    if proc.returncode in ok:
        return _Ran(proc.stdout.decode("utf-8"), proc.returncode, warnings)
    if proc.returncode == 130:
        raise KeyboardInterrupt
    message = "\n".join(str(d) for d in errors) or (
        f"{os.path.basename(binary)} exited with {proc.returncode}"
    )
    cls: type[KfschedError]
    if proc.returncode == 3:
        cls = ClusterError
    elif proc.returncode == 2 and any(d.category == "policy" for d in errors):
        cls = PolicyError
    elif proc.returncode == 2:
        cls = InputError
    else:
        cls = KfschedError
    raise cls(
        message,
        diagnostics=errors,
        warnings=warnings,
        exit_code=proc.returncode,
        command=command,
    )


def _policy(policy: Optional[PathArg]) -> List[str]:
    return [] if policy is None else ["--policy", os.fspath(policy)]


def rewrite(
    paths: Paths,
    *,
    policy: Optional[PathArg] = None,
    check: bool = False,
    version_suffix: Optional[str] = None,
    cwd: Optional[PathArg] = None,
) -> RewriteResult:
    """Rewrites compiled pipelines in place so every component has the
    scheduling the policy asks for (``kubectl kfsched rewrite --in-place``).

    ``paths`` are files or directories (searched for ``*.yaml``/``*.yml``).
    The policy is ``policy``, else ``$KFSCHED_POLICY``, else the nearest
    ``.kfsched.yaml`` upward from ``cwd``. With ``check=True`` nothing is
    written (``--check``): the result says what would change.

    Raises :class:`PolicyError` for an invalid or missing policy and
    :class:`InputError` for an input that cannot be read or rewritten; in
    both cases nothing was written.
    """
    args = ["rewrite", "--check" if check else "--in-place", "--output", "json"]
    if version_suffix is not None:
        args += ["--version-suffix", version_suffix]
    ran = _run(args + _policy(policy) + ["--", *_paths(paths)], (0, 1), cwd)
    files = json.loads(ran.stdout)["files"]
    return RewriteResult(
        changed=[f["file"] for f in files if f["changed"]],
        unchanged=[f["file"] for f in files if not f["changed"]],
        diffs={f["file"]: f["diff"] for f in files if f["changed"]},
        written=not check,
        warnings=ran.warnings,
    )


def explain(
    paths: Paths,
    *,
    policy: Optional[PathArg] = None,
    rules: Sequence[str] = (),
    version_suffix: Optional[str] = None,
    cwd: Optional[PathArg] = None,
) -> Explanation:
    """Every component of the pipelines, the rules that matched it (and why
    the others did not) and its scheduling before and after
    (``kubectl kfsched explain -o json``); ``rules`` keeps only those rules.
    Writes nothing."""
    args = ["explain", "--output", "json"]
    for r in rules:
        args += ["--rule", r]
    if version_suffix is not None:
        args += ["--version-suffix", version_suffix]
    ran = _run(args + _policy(policy) + ["--", *_paths(paths)], (0,), cwd)
    report: ExplainReport = json.loads(ran.stdout)
    return Explanation(report=report, warnings=ran.warnings)


def check(
    paths: Paths,
    *,
    policy: Optional[PathArg] = None,
    nodes: Optional[PathArg] = None,
    pools: bool = False,
    usage: bool = False,
    kubeconfig: Optional[PathArg] = None,
    context: Optional[str] = None,
    cwd: Optional[PathArg] = None,
) -> CheckResult:
    """Which nodes each component can be scheduled on, judged as
    kube-scheduler judges (``kubectl kfsched check -o json``).

    The nodes are a ``kubectl get nodes -o yaml`` snapshot (``nodes``), the
    policy's pools (``pools=True``), or else the live cluster (``kubeconfig``,
    ``context``, as kubectl). With ``policy``, each file is judged as
    :func:`rewrite` would make it (nothing is written). A component that fits
    no node is not an error: ``ok`` is false. Raises :class:`ClusterError`
    when the cluster cannot be read.
    """
    args = ["check", "--output", "json"]
    if nodes is not None:
        args += ["--nodes", os.fspath(nodes)]
    if pools:
        args.append("--pools")
    if usage:
        args.append("--usage")
    if kubeconfig is not None:
        args += ["--kubeconfig", os.fspath(kubeconfig)]
    if context is not None:
        args += ["--context", context]
    ran = _run(args + _policy(policy) + ["--", *_paths(paths)], (0, 1), cwd)
    report: CheckReport = json.loads(ran.stdout)
    return CheckResult(report=report, ok=ran.code == 0, warnings=ran.warnings)


def validate(policy: Optional[PathArg] = None, *, cwd: Optional[PathArg] = None) -> Validation:
    """Checks a SchedulingPolicy as the Kubernetes API server would
    (``kubectl kfsched validate``): every error at once, as the
    :class:`PolicyError`'s diagnostics; the warnings in the result.
    ``policy`` defaults as for every command."""
    args = ["validate", "--output", "json"]
    if policy is not None:
        args += ["--", os.fspath(policy)]
    ran = _run(args, (0,), cwd)
    j = json.loads(ran.stdout)
    return Validation(
        file=j["file"],
        name=j["name"],
        rules=list(j["rules"]),
        pools=list(j["pools"]),
        warnings=ran.warnings,
    )
