"""What keeps a :class:`~pith_graph.loader.stores.memory.MemoryStore`'s graph one the loader
could have built: a graph a script edited is neither saved nor written to
(:func:`check_built`, :func:`built_or_refused`) as if the loader had built it (a write is
whole even when Ctrl-C comes in the middle of it: :mod:`pith_graph.interrupts`); and what
every function of the Python API that takes a graph takes (:func:`checked_graph`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import networkx as nx

from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.loader.stores.memory_graph import check_structure

__all__ = ["EDITED", "built_or_refused", "check_built", "checked_graph"]

#: What checking a graph a script edited may raise (a property missing, of another type).
_UNBUILT = (ValueError, KeyError, TypeError)


def checked_graph(graph: object, name: str, *, added_to: bool = False) -> nx.DiGraph:
    """``graph``, if it is an ``nx.DiGraph`` as a load builds; else :class:`UsageError`
    naming the argument ``name`` and what to pass (``None``, a list or an undirected graph
    were an ``AttributeError`` from inside). A ``MultiDiGraph`` (what earlier versions built)
    is a ``DiGraph`` to ``isinstance``, refused too; and, ``added_to`` (``load_graph(graph=)``),
    a frozen graph or a view, which cannot take a load's writes."""
    if not isinstance(graph, nx.DiGraph):
        raise UsageError(
            f"{name}: expected a DiGraph load_graph built, not a value of type {type(graph).__name__}"
        )
    if graph.is_multigraph():  # MemoryStore would add to a DiGraph copy, not to it
        raise UsageError(
            f"{name}: a MultiDiGraph (what earlier versions built) cannot be added to in place: "
            f"pass nx.DiGraph({name}) and use the graph load_graph returns"
            if added_to
            else f"{name}: a MultiDiGraph (what earlier versions built): pass nx.DiGraph({name})"
        )
    if added_to and (
        nx.is_frozen(graph) or any(type(inner) is not dict for inner in (graph._node, graph._adj))
    ):
        raise UsageError(  # a view's dicts refused the load's writes half-way; a frozen graph took them
            f"{name}: a frozen graph or a view (G.subgraph, nx.restricted_view) cannot be added to: "
            "pass a graph of its own, G.copy() or nx.DiGraph(view)"
        )
    return graph


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
