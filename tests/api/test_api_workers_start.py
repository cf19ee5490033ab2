"""``serve --workers N`` as it starts: its "Uvicorn running" line means a connection is
taken, and a stop that lands while it forks its workers stops every one of them.

Both are timed with at-fork handlers in a child interpreter that runs the real command, so
neither depends on how loaded the machine is (CI found each by chance)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import httpx

from pith_graph.testing.serving import serving

#: Runs ``pith-graph serve ARGS`` after registering ``AT_FORK`` (an ``os.register_at_fork``
#: call) in this interpreter.
SCRIPT = """
import os, runpy, signal, sys, time
{at_fork}
sys.argv = ["pith-graph", "serve", *sys.argv[1:]]
runpy.run_module("pith_graph", run_name="__main__")
"""

ARGS = ["--port", "0", "--workers", "2", "--load-workers", "1"]


def _command(at_fork: str) -> list[str]:
    return [sys.executable, "-c", SCRIPT.format(at_fork=textwrap.dedent(at_fork))]


def test_the_running_line_comes_once_a_connection_is_taken() -> None:
    """Each worker starts 3 s late: a client that connects as soon as the line is printed
    is answered once one has started (its connection waited in the socket's queue). Before,
    the workers bound their sockets after the line, and it was refused (CI, under load)."""
    late = "os.register_at_fork(after_in_child=lambda: time.sleep(3))"
    with serving(ARGS, command=_command(late)) as url:
        health = httpx.get(f"{url}/healthz", timeout=30)
    assert health.json() == {"status": "ok", "backend": "memory"}


def test_a_sigterm_that_lands_as_the_first_worker_is_forked_stops_them_all() -> None:
    """The supervisor took it before noting the first worker's pid, so no worker was sent it,
    the second was forked anyway, and the command served on (CI: a test's stop that waited
    60 s). Now it ends at once, exit 0."""
    stop_in_first_fork = """
    sent = []

    def stop_now():
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)

    os.register_at_fork(after_in_parent=stop_now)
    """
    done = subprocess.run([*_command(stop_in_first_fork), *ARGS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "stopping 1 worker\n" in done.stderr, done.stderr
    assert "Uvicorn running" not in done.stderr, done.stderr  # it never served
