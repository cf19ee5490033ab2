"""Verification workers that die with the loader.

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
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

__all__ = ["WATCHDOG_SECONDS", "die_with_parent"]

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
