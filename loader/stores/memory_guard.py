"""What keeps a :class:`~pith_graph.loader.stores.memory.MemoryStore`'s graph one the loader
could have built: a write is whole even when Ctrl-C comes in the middle of it
(:func:`interrupts_held`)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["interrupts_held"]


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) in the block is delivered when it ends, to the handler there was before
    (``KeyboardInterrupt`` by default; Jupyter's "interrupt kernel" sends the same): raised
    inside a write, it left the caller's graph half changed (an Author's ``paperCount`` below
    its edges, a Paper without its bundle's SIGNED edge), which no later load would take.
    Only the main thread receives signals: elsewhere, and when Ctrl-C is ignored, the block
    runs as it is."""
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
