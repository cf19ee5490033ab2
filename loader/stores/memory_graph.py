"""The in-memory graph's compact representation: shared, read-only edge attributes.

A networkx ``DiGraph`` holds one attribute dict per edge. In this schema most edges carry
the same few attribute sets (``{"type": "AUTHORED"}``, ``{"type": "IN_CATEGORY",
"primary": True}``, ...), so :class:`EdgeData` values are interned and shared between
edges: a read-only dict (every mutating method raises ``TypeError``; list-valued
properties are tuples), so a script cannot change one edge's attributes and silently
change thousands. ``nx.DiGraph(G)`` or ``G.copy()`` gives plain, private dicts.

networkx's ``add_edge`` always makes a new dict per edge, so :func:`put` writes the
adjacency dicts itself (``_node``, ``_succ``, ``_pred``: the documented ``DiGraph``
structure) and then clears networkx's cached views, as ``add_edge`` does. It is the only
code that writes networkx's private structures; ``tests/test_memory_graph.py`` checks it
against networkx's own methods, so a change in networkx fails there first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

import networkx as nx

__all__ = ["EdgeData", "EdgeInterner", "put"]


class EdgeData(dict[str, Any]):
    """An edge's attributes, shared with every edge whose attributes are equal: read-only."""

    __slots__ = ()

    def _read_only(self, *_args: object, **_kwargs: object) -> NoReturn:
        raise TypeError(
            "pith-graph's edge attributes are shared between edges and read-only; "
            "work on a copy (nx.DiGraph(G)) to change them"
        )

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _read_only
    __ior__ = _read_only

    def __reduce__(self) -> tuple[object, ...]:  # pickle and deepcopy build it whole
        return (EdgeData, (dict(self),))

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, _memo: object) -> dict[str, Any]:
        return dict(self)


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class EdgeInterner:
    """One :class:`EdgeData` per distinct attribute set."""

    def __init__(self) -> None:
        self._known: dict[tuple[tuple[str, Any], ...], EdgeData] = {}

    def __call__(self, attributes: Mapping[str, Any]) -> EdgeData:
        items = tuple((name, _frozen(value)) for name, value in attributes.items())
        found = self._known.get(items)
        if found is None:
            found = self._known[items] = EdgeData(items)
        return found


def put(
    graph: nx.DiGraph,
    nodes: Iterable[tuple[str, dict[str, Any]]],
    edges: Iterable[tuple[str, str, EdgeData]],
) -> None:
    """Add ``nodes`` (ids not yet in ``graph``, each with its own attribute dict, kept as
    given) and ``edges`` (between nodes of ``graph``, their attributes shared as given)."""
    node, succ, pred = graph._node, graph._succ, graph._pred
    for name, attributes in nodes:
        node[name] = attributes
        succ[name] = {}
        pred[name] = {}
    for start, end, data in edges:
        succ[start][end] = data
        pred[end][start] = data
    nx._clear_cache(graph)
