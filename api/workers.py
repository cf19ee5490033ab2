"""Serving processes: one port, several forked workers, one supervisor.

:func:`serve_in_workers` forks ``count`` workers from the process that reserved the port
(and, for the memory backend, loaded the graph and froze it out of the garbage collector's
reach: the workers share its pages copy-on-write, nothing is loaded twice). Each worker
listens on that port with a socket of its own, made listening by the supervisor just before
the worker is forked (``SO_REUSEPORT``: the kernel spreads new
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


#: Blocked while a worker is forked (see :func:`serve_in_workers`).
_STOPS = {signal.SIGTERM, signal.SIGINT}


def _fork(listener: socket.socket, serve_one: Callable[[socket.socket], int]) -> int:
    """Fork a worker that serves on ``listener``; its pid. Called with :data:`_STOPS`
    blocked: the worker takes their default action before it unblocks them."""
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        os.setpgid(0, 0)
        for sig in _STOPS:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)  # one sent meanwhile ends it now
        _die_with(parent)
        code = serve_one(listener)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise AssertionError("unreachable")  # pragma: no cover


def serve_in_workers(
    count: int,
    listen: Callable[[], socket.socket],
    serve_one: Callable[[socket.socket], int],
    on_listening: Callable[[], None] = lambda: None,
) -> int:
    """Run ``serve_one(listen())`` (it serves on that listening socket until SIGTERM, returns
    an exit code) in ``count`` forked workers until they are stopped; 0 when they all stopped
    cleanly. ``on_listening`` is called once the first ``count`` sockets listen.

    Each socket is made here, listening before its worker is forked (a connection made while
    the worker starts waits in its queue; a worker that bound its own after the "running"
    line left a client that believed it refused, as CI saw), and closed here once forked.
    SIGTERM and SIGINT are blocked from just before a fork until its worker is noted, so a
    stop that lands meanwhile reaches that worker too (one forked after the stop was handled
    served on, unstopped, and the supervisor waited for it)."""
    workers: dict[int, float] = {}  # pid -> when it started
    stopping = False

    def stop(sig: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        log.info("stopping %d worker%s", len(workers), "s"[: len(workers) != 1])
        for pid in list(workers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def start() -> None:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        try:
            listener = listen()
            try:
                pid = _fork(listener, serve_one)
            finally:
                listener.close()  # the worker's now: it stops listening when the worker ends
            workers[pid] = time.monotonic()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for _ in range(count):
            if not stopping:
                start()
        if not stopping:
            log.info("started %d workers: %s", count, " ".join(map(str, workers)))
            on_listening()
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
            if stopping:  # a stop during the pause
                continue
            try:
                start()
            except OSError as err:
                log.error("cannot listen for another worker (%s); stopping", err.strerror)
                stop(signal.SIGTERM, None)
                code = 1
        return code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
