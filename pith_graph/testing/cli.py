"""``pith-graph ARGS`` in a child process, run to its end: for tests of the real command (its
exit codes, its one-line errors, its output), as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

__all__ = ["run_cli"]


def run_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    cwd: str | os.PathLike[str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pith_graph ARGS`` and return its exit code, stdout and stderr as text.

    ``env`` is added to this process's environment; with ``inherit_env=False`` it is the
    whole environment instead (to leave variables out). ``input`` is written to its stdin.
    It never hangs a test: past ``timeout`` seconds it is killed and
    :class:`subprocess.TimeoutExpired` raised. A non-zero exit is returned, not raised.
    """
    return subprocess.run(
        [sys.executable, "-m", "pith_graph", *args],
        env={**(os.environ if inherit_env else {}), **(env or {})},
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
