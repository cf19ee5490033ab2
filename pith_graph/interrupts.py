"""Ctrl-C held over a block that must not be cut in the middle: raised when it ends.

Python raises ``KeyboardInterrupt`` wherever the main thread stands when SIGINT comes. Two
places must not be cut so: the command line's start-up, where a native module initialising
(orjson's, as it imported ``uuid``) crashed Python with a segmentation fault (exit 139,
nothing said, about 1 start in 15 interrupted at 0.10–0.15 s); and a write into the
in-memory graph, which an interrupt left half made (an Author's ``paperCount`` below its
edges), so that no later load took the graph. Standard library only: the command line holds
Ctrl-C with it before anything heavy is imported.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["interrupts_held"]


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) in the block is delivered when it ends, to the handler there was before
    (``KeyboardInterrupt`` by default; Jupyter's "interrupt kernel" sends the same). Only the
    main thread receives signals: elsewhere, and when Ctrl-C is ignored (a background job),
    the block runs as it is.

    >>> said = []
    >>> before = signal.signal(signal.SIGINT, lambda signum, frame: said.append("delivered"))
    >>> with interrupts_held():
    ...     signal.raise_signal(signal.SIGINT)
    ...     said.append("the block ended")
    >>> _ = signal.signal(signal.SIGINT, before)
    >>> said
    ['the block ended', 'delivered']
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN or previous is None:  # (None: a handler not set from Python)
        yield
        return
    came: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if came:
            signal.raise_signal(signal.SIGINT)  # to the handler restored (raises KeyboardInterrupt)
