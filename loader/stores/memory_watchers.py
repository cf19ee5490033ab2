"""Who is told when pith-graph changes an in-memory graph.

A reader of the graph (``api/reads``' :class:`MemoryReader`) builds indexes from it on first
use; a load or a removal written into the same ``DiGraph`` (``load_graph(graph=G)``,
``MemoryStore(G).apply``, ``prune``) calls :func:`changed`, which has every reader watching
that graph forget its indexes (``refresh()``), so that its next read sees the change. The
graph and the readers are held weakly: watching keeps neither alive. A script that changes
the graph itself, with networkx's own calls, calls ``reader.refresh()``.
"""

from __future__ import annotations

from typing import Protocol
from weakref import WeakKeyDictionary, WeakSet

import networkx as nx

__all__ = ["Refreshable", "changed", "watch"]


class Refreshable(Protocol):
    def refresh(self) -> None:
        """Forget whatever was built from the graph."""


_WATCHERS: WeakKeyDictionary[nx.DiGraph, WeakSet[Refreshable]] = WeakKeyDictionary()


def watch(graph: nx.DiGraph, watcher: Refreshable) -> None:
    """Have ``watcher.refresh()`` called whenever pith-graph changes ``graph``."""
    _WATCHERS.setdefault(graph, WeakSet()).add(watcher)


def changed(graph: nx.DiGraph) -> None:
    """``graph`` changed: every watcher of it forgets what it built."""
    for watcher in list(_WATCHERS.get(graph, ())):
        watcher.refresh()
