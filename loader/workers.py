"""Worker processes that die with the loader, and :func:`in_processes` to share out work.

A worker of :mod:`pith_graph.loader.pipeline` waits on its task queue; if the loader is
killed (``kill -9``, the OOM killer) nothing ever closes that queue, because every sibling
worker holds a copy of it, so the workers would wait forever, orphaned. :func:`die_with_parent`
runs first in every worker (the pool's initializer) and ties the worker's life to the
loader's:

* On Linux it asks the kernel, with ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, to kill the worker
  the moment its parent dies: no thread, no polling, no delay, and it works while the worker
  is busy inside C code (hashing, Ed25519). The parent may have died between the fork and
  the ``prctl``, so the worker then checks that its parent is still the process that
  started it, and exits if not.
* Elsewhere (macOS, or a Linux without the call), a daemon thread polls ``os.getppid()``
  every :data:`WATCHDOG_SECONDS` and exits the worker when it changes.

The kernel sends the signal when the *thread* that forked the worker ends. The pipeline's
pool forks all its workers from the thread that runs the load and shuts them down before
that thread returns, so the two lifetimes are the same.

:func:`in_processes` runs ``work(k)`` for ``k < count`` at once, in forked processes that
die with the caller in the same way (the bulk import's decide and node passes use it).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import TypeVar, cast

from pith_graph.errors import StoreError, StoreErrorCode

__all__ = [
    "WATCHDOG_SECONDS",
    "become_worker",
    "die_with_parent",
    "how_it_ended",
    "in_processes",
    "signals_held",
]

T = TypeVar("T")

#: How often the fallback watchdog thread checks its parent.
WATCHDOG_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _kernel_kills_orphans() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _exit_now() -> None:
    os._exit(1)  # no clean-up: the parent that would collect results is gone


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(WATCHDOG_SECONDS)
    _exit_now()


def die_with_parent(parent_pid: int) -> None:
    """Make this (worker) process end when ``parent_pid``, the process that started it, dies."""
    if _kernel_kills_orphans():
        if os.getppid() != parent_pid:  # died before prctl took effect: no signal will come
            _exit_now()
        return
    threading.Thread(target=_watch, args=(parent_pid,), name="parent-watchdog", daemon=True).start()


def become_worker(parent_pid: int) -> None:
    """The first thing a worker process does: end when ``parent_pid`` dies, leave interrupts
    (Ctrl-C reaches the whole process group) to the parent, which decides what one ends, and
    end at SIGTERM as a process does by default. A fork keeps the parent's Python handlers
    (``pith-graph import`` turns SIGTERM into an interrupt), and the pool stops a worker with
    SIGTERM: one that caught it would report the interrupt and then wait for ever at exit,
    flushing its unread results into a pipe nobody reads any more."""
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while a worker is forked, then take them: an interrupt raised in
    one of ``os.fork``'s at-fork handlers (logging releases its lock in one) is "ignored" by
    Python, and the command went on to its end and exited 0 (seen once in CI: a SIGTERM that
    landed as ``load -`` forked its workers). Outside the main thread, as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, frame: object) -> None:
        caught.append(signum)

    held = (signal.SIGINT, signal.SIGTERM)
    previous = [signal.signal(signum, hold) for signum in held]
    try:
        yield
    finally:
        for kind, handler in zip(held, previous, strict=True):
            signal.signal(kind, handler)
        for number in dict.fromkeys(caught):
            signal.raise_signal(number)  # to its own handler now, outside the fork


def _run_and_send(send: Connection, work: Callable[[int], object], index: int, parent_pid: int) -> None:
    become_worker(parent_pid)
    try:
        result: tuple[bool, object] = (True, work(index))
    except BaseException as error:  # sent to the parent, which raises it
        result = (False, error)
    try:
        send.send(result)
    except Exception:  # the result or the error does not pickle
        send.send((False, RuntimeError(f"process {index} failed: {result[1]!r}")))
    finally:
        send.close()


def how_it_ended(exitcode: int | None) -> str:
    """How a child process ended, from its exit code (``None``: it has not)."""
    if exitcode is None:
        return "stopped answering"
    if exitcode >= 0:
        return f"exited with code {exitcode}"
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        name = f"signal {-exitcode}"
    return f"was killed by {name}" + (
        " (as the out-of-memory killer does)" if -exitcode == signal.SIGKILL else ""
    )


def in_processes(count: int, work: Callable[[int], T]) -> list[T]:
    """``[work(0), ..., work(count - 1)]``, run at the same time: ``work(0)`` in this process,
    each other in a forked process of its own (``work`` itself is never pickled, only what it
    returns). Where there is no ``fork``, or ``count`` is 1, they run here one after another.

    The first error raised by any of them is raised here, after every process has ended (the
    others are stopped at once if this process's own share failed); a process that ended
    without a result (killed) is :class:`~pith_graph.errors.StoreError` ``worker_failed``.
    """
    if count <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [work(index) for index in range(count)]
    context = multiprocessing.get_context("fork")
    children = []
    for index in range(1, count):
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_run_and_send, args=(send, work, index, os.getpid()), daemon=True)
        with signals_held():
            process.start()
        send.close()
        children.append((process, receive))
    outcomes: list[tuple[bool, object]] = []
    try:
        outcomes.append((True, work(0)))
    except BaseException:
        for process, _ in children:
            process.kill()
        for process, receive in children:
            process.join()
            receive.close()
        raise
    for index, (process, receive) in enumerate(children, start=1):
        try:
            outcomes.append(receive.recv())
        except EOFError:
            process.join()
            how = how_it_ended(process.exitcode)
            failed = f"worker process {index} (pid {process.pid}) {how} before its result: the run stopped"
            outcomes.append((False, StoreError(StoreErrorCode.WORKER_FAILED, failed)))
        finally:
            receive.close()
            process.join()
    for ok, value in outcomes:
        if not ok:
            assert isinstance(value, BaseException)
            raise value
    return [cast(T, value) for _, value in outcomes]
