"""``kfsched`` and ``python -m kfsched``: run the bundled ``kubectl-kfsched``
with the same arguments, so its output and exit code are the command's own
(``uvx kfsched`` and ``pipx run kfsched`` start here)."""

from __future__ import annotations

import os
import sys

from ._binary import find_binary
from ._errors import InstallError


def main() -> None:
    try:
        binary = find_binary()
    except InstallError as e:
        print(f"kfsched: error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    argv = [binary, *sys.argv[1:]]
    if sys.platform == "win32":
        import subprocess

        sys.exit(subprocess.run(argv).returncode)
    os.execv(binary, argv)


if __name__ == "__main__":
    main()
