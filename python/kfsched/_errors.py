"""What goes wrong, as the binary says it: :class:`Diagnostic` is one line of
its ``KFSCHED_DIAGNOSTICS=json`` output, and the exceptions carry them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Literal, Optional, Sequence

Level = Literal["error", "warning", "info"]
Category = Literal["policy", "input", "usage", "cluster", "internal"]


@dataclass(frozen=True)
class Diagnostic:
    """One error, warning or note of the binary.

    ``file``, ``line``, ``column`` and ``path`` (the YAML path, such as
    ``spec.rules[0].tolerations[1].operator``) are ``None`` where the problem
    has no place in a file; ``line`` and ``column`` are 1-based.
    """

    level: Level
    category: Category
    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    path: Optional[str] = None

    def __str__(self) -> str:
        """The diagnostic as the command line prints it, without its level:
        ``FILE:LINE:COL: YAML.PATH: message``."""
        where = ""
        if self.file is not None:
            where = self.file
            if self.line is not None:
                where += f":{self.line}:{self.column}"
            if self.path:
                where += f": {self.path}"
            where += ": "
        return where + self.message


class KfschedError(Exception):
    """A command failed. ``diagnostics`` are its errors, ``warnings`` what it
    warned about, ``exit_code`` the command line's exit code and ``command``
    the command that ran."""

    def __init__(
        self,
        message: str,
        *,
        diagnostics: Sequence[Diagnostic] = (),
        warnings: Sequence[Diagnostic] = (),
        exit_code: int = 2,
        command: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.diagnostics: List[Diagnostic] = list(diagnostics)
        self.warnings: List[Diagnostic] = list(warnings)
        self.exit_code = exit_code
        self.command: List[str] = list(command)


class PolicyError(KfschedError):
    """The SchedulingPolicy is invalid or cannot be found (exit code 2)."""


class InputError(KfschedError):
    """An input cannot be read or rewritten, or the arguments are wrong (exit
    code 2); nothing was written."""


class ClusterError(KfschedError):
    """The cluster could not be reached or answered with an error (exit code 3)."""


class InstallError(KfschedError):
    """The bundled binary is missing or cannot be executed: the installation
    is broken, and the message says how to repair it. ``exit_code`` is what a
    shell returns for such a command: 127 missing, 126 not executable."""

    def __init__(self, message: str, *, exit_code: int) -> None:
        super().__init__(message, exit_code=exit_code)


class KfschedWarning(UserWarning):
    """A warning of the binary (a deprecated label, a rule that matched
    nothing, ...), issued through :mod:`warnings` as well as returned."""
