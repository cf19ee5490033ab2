"""Serving processes: one port, several forked workers, one supervisor.

:func:`serve_in_workers` forks ``count`` workers from the process that reserved the port
(and, for the memory backend, loaded the graph and froze it out of the garbage collector's
reach: the workers share its pages copy-on-write, nothing is loaded twice). Each worker
listens on that port with a socket of its own (``SO_REUSEPORT``: the kernel spreads new
connections over the workers by their addresses, where one shared socket lets whichever
worker wakes first take a whole burst of them) and serves them with its own event loop.

The supervisor (the parent) forwards SIGTERM and SIGINT to the workers once, waits for them
to finish their requests and exit, and returns 0. Workers run in their own process group, so
a Ctrl-C in a terminal reaches the supervisor only (which passes it on once), and they ask
the kernel for SIGTERM should the supervisor die (``PR_SET_PDEATHSIG``), so none outlives
it. A worker that crashes is replaced (at most once a second); one that could not start
(exit code 3) stops them all with exit code 3.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from types import FrameType

__all__ = ["STARTUP_FAILURE", "bind", "default_workers", "serve_in_workers"]

log = logging.getLogger("pith_graph.api.workers")

#: A worker's exit code when it could not start serving (uvicorn's own, too).
STARTUP_FAILURE = 3
_PR_SET_PDEATHSIG = 1


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def bind(host: str, port: int, *, listen: bool = True, backlog: int = 2048) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: any free one), listening unless
    ``listen`` is false. ``SO_REUSEPORT`` lets every worker bind a listening socket of its
    own to the same port; the kernel then spreads new connections over them (a socket
    that only reserves the port, not listening, gets none)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if hasattr(socket, "SO_REUSEPORT"):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
        if listen:
            sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def _die_with(parent: int) -> None:
    """Ask for SIGTERM when the supervisor dies (Linux); leave if it already has."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:
        os._exit(0)


def _fork(serve_one: Callable[[], int]) -> int:
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        os.setpgid(0, 0)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        _die_with(parent)
        code = serve_one()
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise AssertionError("unreachable")  # pragma: no cover


def serve_in_workers(count: int, serve_one: Callable[[], int]) -> int:
    """Run ``serve_one`` (it serves until SIGTERM, returns an exit code) in ``count`` forked
    workers until they are stopped; 0 when they all stopped cleanly."""
    workers: dict[int, float] = {}  # pid -> when it started
    stopping = False

    def stop(sig: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        log.info("stopping %d workers", len(workers))
        for pid in list(workers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for _ in range(count):
            workers[_fork(serve_one)] = time.monotonic()
        log.info("started %d workers: %s", count, " ".join(map(str, workers)))
        code = 0
        while workers:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            started = workers.pop(pid, None)
            if started is None:
                continue
            exit_code = os.waitstatus_to_exitcode(status)
            if stopping:
                code = code or (0 if exit_code in (0, -signal.SIGTERM) else exit_code)
                continue
            if exit_code == STARTUP_FAILURE:
                log.error("worker %d could not start; stopping", pid)
                stop(signal.SIGTERM, None)
                code = STARTUP_FAILURE
                continue
            log.error("worker %d exited with %d; starting another", pid, exit_code)
            time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
            workers[_fork(serve_one)] = time.monotonic()
        return code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
