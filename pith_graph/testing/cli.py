"""``pith-graph ARGS`` run to its end for tests: in a child process, as a user runs it (its
exit codes, its one-line errors, its output), or in this process, for the many cases that
only check how the command answers its arguments."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from unittest import mock

__all__ = ["run_cli", "run_main"]


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


class _Expired(BaseException):
    """:func:`run_main`'s time ran out."""


class _Alarm:
    """SIGALRM to ``handler`` in ``seconds``; :meth:`disarm` gives back the handler and the
    alarm there were before (one the caller had set, due meanwhile, comes as it ends)."""

    def __init__(self, handler: Callable[[int, object], None], seconds: float) -> None:
        self._before = signal.signal(signal.SIGALRM, handler)
        self._began = time.monotonic()
        try:
            self._pending, self._interval = signal.setitimer(signal.ITIMER_REAL, seconds)
        except BaseException:
            signal.signal(signal.SIGALRM, self._before)
            raise
        self._armed = True

    def disarm(self) -> None:
        """Idempotent: the handler may raise as it begins (the alarm just due), and it is
        called again."""
        if not self._armed:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        self._armed = False
        signal.signal(signal.SIGALRM, self._before)
        if self._pending:
            left = self._pending - (time.monotonic() - self._began)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), self._interval)


def run_main(
    *args: str,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """What :func:`run_cli` returns, from the CLI's ``main(ARGS)`` run in this process: no
    interpreter to start (0.6 to 1.3 s a case, most of it imports), so a test can check many
    arguments. ``env`` and ``cwd`` hold while it runs; stdout and stderr are captured; an
    exit (argparse's usage errors, ``--version``) is its code.

    For commands refused before they start work, from the main thread: past ``timeout``
    seconds (a refusal that no longer happens, the command at work) :class:`subprocess.TimeoutExpired`
    is raised inside it (SIGALRM), as :func:`run_cli` raises it. A test of the process itself
    (signals, its stdout's failures, start-up) needs :func:`run_cli`. tests/test_cli_options.py
    checks the two answer alike.
    """
    from pith_graph.cli import main

    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")

    def expired(signum: int, frame: object) -> None:
        raise _Expired  # (not an Exception: main would report one as its own failure, exit 70)

    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, env or {}, clear=not inherit_env),
        contextlib.chdir(cwd if cwd is not None else os.getcwd()),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        alarm = _Alarm(expired, timeout)
        try:
            try:
                code = main(list(args))
            except SystemExit as exit:
                if isinstance(exit.code, str):  # sys.exit("message"): the message on stderr, exit 1
                    print(exit.code, file=sys.stderr)
                code = 1 if isinstance(exit.code, str) else exit.code or 0
            finally:
                alarm.disarm()
        except _Expired:  # (also when it came as the block ended: disarming again is harmless)
            alarm.disarm()
            raise subprocess.TimeoutExpired(["pith-graph", *args], timeout) from None
    return subprocess.CompletedProcess(
        ["pith-graph", *args], code, stdout=stdout.getvalue(), stderr=stderr.getvalue()
    )
