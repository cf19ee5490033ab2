"""A graph from node-link JSON (``MemoryStore.save``, networkx's interchange format): anyone
may write one, so it must name each node once and join two nodes by one edge, directed, or
it is refused (:class:`ValueError`, :class:`TypeError`) before its structure is checked
(:func:`~pith_graph.loader.stores.memory_graph.check_structure`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx

from pith_graph.errors import quoted

__all__ = ["first_repeated", "from_node_link"]


def from_node_link(data: dict[str, Any]) -> nx.DiGraph | nx.MultiDiGraph:
    """networkx's graph of node-link ``data``, which must name each node once and join two
    nodes by one edge (of a type: an earlier version's ``MultiDiGraph``): networkx would merge
    them silently, the last copy's attributes winning (a second copy of an author under its
    id renamed it). Raises :class:`ValueError`, as a snapshot that does so."""
    if not isinstance(data.get("nodes"), list):  # a bundle, say: KeyError 'nodes' said nothing
        raise TypeError("expected a node-link JSON object, its nodes a list (is it a bundle?)")
    if not isinstance(data.get("edges"), list):  # (KeyError: 'edges' said nothing)
        links = (
            ' (it has "links", the default name of networkx before 3.6; pith-graph saves "edges")'
            if "links" in data
            else ""
        )
        raise TypeError(f'expected a node-link JSON object, its edges a list under "edges"{links}')
    graph = nx.node_link_graph(data, directed=True, edges="edges")
    if not graph.is_directed():
        raise ValueError("its graph is not directed; pith-graph's is (an nx.DiGraph)")
    if len(data["nodes"]) != graph.number_of_nodes():
        listed = [node["id"] for node in data["nodes"]]
        known = set(listed)
        if len(known) != len(listed):
            raise ValueError(f"two nodes share an id: {quoted(first_repeated(listed))}")
        missing = next(node for node in graph if node not in known)  # networkx made it for an edge
        raise ValueError(f"an edge names node {missing!r:.80}, which the nodes do not list")
    pairs = len({(u, v) for u, v in graph.edges()}) if graph.is_multigraph() else graph.number_of_edges()
    if len(data.get("edges", ())) != pairs:  # (a multigraph's parallel edges: one once made a DiGraph)
        raise ValueError("two edges join the same two nodes")
    return graph


def first_repeated(values: Iterable[Any]) -> Any:
    """The first of ``values`` met a second time (``None``: none is)."""
    seen = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None
