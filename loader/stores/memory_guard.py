"""What keeps a :class:`~pith_graph.loader.stores.memory.MemoryStore`'s graph one the loader
could have built: a write is whole even when Ctrl-C comes in the middle of it
(:func:`interrupts_held`); a graph a script edited is neither saved nor written to
(:func:`check_built`, :func:`built_or_refused`) as if the loader had built it."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

import networkx as nx

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.stores.memory_graph import check_structure

__all__ = ["EDITED", "built_or_refused", "check_built", "interrupts_held"]

#: What checking a graph a script edited may raise (a property missing, of another type).
_UNBUILT = (ValueError, KeyError, TypeError)


#: What :func:`check_built` says of a graph a script edited.
EDITED = "the graph is not one a load could have built (MemoryStore.open would refuse it)"


def check_built(graph: nx.DiGraph, said: str = EDITED, advice: str = "") -> nx.DiGraph:
    """``graph``, if :func:`check_structure` finds it one the loader could have built (what
    ``MemoryStore.open``, ``load_graph(graph=...)`` and ``serve --graph`` take); else a
    ``hand_edited`` :class:`StoreError`, ``said`` then the first node or edge that is not
    (``pith-graph export`` says it of a database): a saved file nothing would open is never
    written."""
    try:
        check_structure(graph)
    except _UNBUILT as err:
        raise StoreError(StoreErrorCode.HAND_EDITED, f"{said}: {err}{advice}") from err
    return graph


@contextlib.contextmanager
def built_or_refused(graph: nx.DiGraph) -> Iterator[None]:
    """A ``KeyError`` or ``TypeError`` in the block (a store reading ``graph``'s papers and
    signers) is :func:`check_built`'s ``hand_edited`` error when ``graph`` is not one the
    loader could have built (it was a bare ``KeyError: 'bundleSha256'``)."""
    try:
        yield
    except (KeyError, TypeError):
        check_built(graph)
        raise


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
