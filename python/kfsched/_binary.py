"""Where the bundled ``kubectl-kfsched`` binary is: the scripts directory that
pip installed it into beside this package (never another copy on PATH, whose
version could differ from this package's)."""

from __future__ import annotations

import os
import sys
import sysconfig
from typing import List

from ._errors import InstallError

BINARY = "kubectl-kfsched"


def _user_scheme() -> str:
    if sys.version_info >= (3, 10):
        return sysconfig.get_preferred_scheme("user")
    if os.name == "nt":
        return "nt_user"
    if sys.platform == "darwin" and getattr(sys, "_framework", None):
        return "osx_framework_user"
    return "posix_user"


def _candidates(name: str) -> List[str]:
    exe = name + (sysconfig.get_config_var("EXE") or "")
    dirs = [sysconfig.get_path("scripts")]
    try:
        dirs.append(sysconfig.get_path("scripts", scheme=_user_scheme()))
    except KeyError:
        pass
    # `pip install --target DIR` puts the scripts in DIR/bin beside the
    # package; `--prefix P` in P/bin above P/lib/pythonX.Y/site-packages
    # (P\Scripts above P\Lib\site-packages on Windows).
    site = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs.append(os.path.join(site, "bin"))
    up = 2 if os.name == "nt" else 3
    prefix = site
    for _ in range(up):
        prefix = os.path.dirname(prefix)
    dirs.append(os.path.join(prefix, "Scripts" if os.name == "nt" else "bin"))
    seen: List[str] = []
    for d in dirs:
        p = os.path.join(d, exe)
        if p not in seen:
            seen.append(p)
    return seen


def find_binary(name: str = BINARY) -> str:
    """The path of the bundled binary ``name``.

    Raises :class:`kfsched.InstallError`, saying how to repair the
    installation, when it is missing or cannot be executed.
    """
    candidates = _candidates(name)
    for path in candidates:
        if os.path.isfile(path):
            if not os.access(path, os.X_OK):
                raise InstallError(
                    f"{path} is not executable: the kfsched installation is broken; "
                    f"run `chmod +x {path}` or {_reinstall()}",
                    exit_code=126,
                )
            return path
    raise InstallError(
        f"the {name} binary of the kfsched package is missing (looked in "
        f"{', '.join(os.path.dirname(p) for p in candidates)}): the installation is "
        f"broken; {_reinstall()}",
        exit_code=127,
    )


def _reinstall() -> str:
    from . import __version__

    pin = f"kfsched=={__version__}" if __version__ != "unknown" else "kfsched"
    return f"reinstall it: `{os.path.basename(sys.executable)} -m pip install --force-reinstall {pin}`"
