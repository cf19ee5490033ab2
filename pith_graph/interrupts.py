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
def interrupts_held(*also: signal.Signals) -> Iterator[None]:
    """Ctrl-C (SIGINT), and the signals ``also`` names (SIGTERM, which the command line turns
    into an interrupt too), in the block are delivered when it ends, to the handler there was
    before (``KeyboardInterrupt`` by default; Jupyter's "interrupt kernel" sends the same).
    Only the main thread receives signals: elsewhere the block runs as it is, and so it does
    for a signal that is ignored (Ctrl-C in a background job).

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
    came: list[int] = []
    previous: dict[signal.Signals, signal._HANDLER] = {}
    for signum in dict.fromkeys((signal.SIGINT, *also)):
        handler = signal.getsignal(signum)
        if handler is not signal.SIG_IGN and handler is not None:  # (None: a handler not set from Python)
            previous[signum] = signal.signal(signum, lambda number, _frame: came.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for number in dict.fromkeys(came):
            signal.raise_signal(number)  # to the handler restored (raises KeyboardInterrupt)
