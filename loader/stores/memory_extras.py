"""A script's own properties on a paper the in-memory store writes again, kept as Neo4j keeps
an analyst's (``neo4j_batch``: ``SET p += props`` and ``EDGE_EXTRAS``): on the Paper node, and
on each of the paper's edges written again (same ends, same type). The graph's own properties,
those its schema declares, are the newer bundle's alone (one it lacks is removed).

A property is a script's when its label's or type's schema does not declare it. Edges with
none share their read-only attributes (:class:`.memory_graph.EdgeData`); an edge that keeps a
script's properties has a plain dict of its own, as the script's annotated copy had.

A paper's properties equal to a stored version's (:data:`SHARED`) take that version's objects
(since 0.9.10), as few-valued ones are interned: one string for the versions' text."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import networkx as nx

from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores.latest import IS_LATEST
from pith_graph.loader.stores.memory_graph import INTERNED
from pith_graph.schema.graph import (
    LABEL_ATTRIBUTE,
    PAPER,
    PROPERTY_NAMES,
    RELATIONSHIPS,
    TYPE_ATTRIBUTE,
    node_id,
)

__all__ = ["SHARED", "EdgeExtras", "edge_extras", "paper_properties", "rewrite_paper", "with_extras"]

_KEY_IDS = PAPER.prop("keyIds")
#: Paper properties with few distinct values, interned (one string object per value).
_INTERNED = tuple(name for name in INTERNED[PAPER.label] if name != _KEY_IDS)
#: Paper properties a source's versions most often hold alike (``sourceId`` always): a paper
#: written takes a stored version's value where equal. At 100k generated bundles (95k papers,
#: 66k sources) 24 MB of strings the graph no longer holds twice.
SHARED = tuple(PAPER.prop(name) for name in ("sourceId", "title", "abstractExcerpt", "submittedAt"))
_YEAR = PAPER.prop("submittedYear")
_YEARS: dict[int, int] = {}  # year -> one int object for it (past 256, each paper had its own)


def paper_properties(
    rows: PaperRows, nodes: Mapping[str, Mapping[str, Any]] | None = None, versions: Iterable[str] = ()
) -> dict[str, Any]:
    """The Paper node's properties as the in-memory store holds them: few-valued strings
    interned, those equal to a stored version's (the papers of pith numbers ``versions`` among
    ``nodes``) that version's objects (:data:`SHARED`), and ``isLatest`` last (false until its
    source's papers are marked: :func:`~pith_graph.loader.stores.latest.mark_latest`), so
    every paper's are in one order."""
    props = rows.paper_properties()
    for name in _INTERNED:
        props[name] = sys.intern(props[name])
    props[_KEY_IDS] = [sys.intern(key) for key in props[_KEY_IDS]]
    if (year := props.get(_YEAR)).__class__ is int:
        props[_YEAR] = _YEARS.setdefault(year, year)
    for pith in versions:
        stored = {} if nodes is None else nodes.get(node_id(PAPER.label, pith), {})
        for name in SHARED:
            value = stored.get(name)
            if value.__class__ is str and value == props.get(name):
                props[name] = value
    props[IS_LATEST] = False
    return props


#: A Paper's own attributes: its label and its schema's properties.
_PAPER_OWN = PROPERTY_NAMES[PAPER.label] | {LABEL_ATTRIBUTE}
#: Each relationship type's own attributes: its type and its schema's properties.
_EDGE_OWN = {kind: PROPERTY_NAMES[kind] | {TYPE_ATTRIBUTE} for kind in RELATIONSHIPS}

#: (start, end) -> (type, a script's properties on that edge).
EdgeExtras = dict[tuple[str, str], tuple[str, dict[str, Any]]]


def rewrite_paper(data: dict[str, Any], props: Mapping[str, Any]) -> None:
    """Give a stored Paper's attributes ``props`` (its label too), keeping a script's own."""
    mine = data.keys() - _PAPER_OWN  # (a set difference: quick, and most often empty)
    kept = {name: data[name] for name in mine} if mine else None
    data.clear()
    data[LABEL_ATTRIBUTE] = PAPER.label
    data.update(props)
    if kept:
        data.update(kept)


def edge_extras(graph: nx.DiGraph, paper: str) -> EdgeExtras:
    """A script's properties on ``paper``'s edges (none: ``{}``), before they are removed.
    Read from the adjacency dicts: networkx's edge views cost more than the rest of the look."""
    found: EdgeExtras = {}
    own, kind = _EDGE_OWN, TYPE_ATTRIBUTE  # (locals: a rewrite looks at every edge of its paper)
    for start, data in graph._pred[paper].items():  # (an edge of no type the schema knows,
        # which MemoryStore(G) takes as given, goes with the paper's edges, keeping nothing)
        if not data.keys() <= own.get(data.get(kind), data.keys()):
            found[start, paper] = _extra(data)
    for end, data in graph._succ[paper].items():
        if not data.keys() <= own.get(data.get(kind), data.keys()):
            found[paper, end] = _extra(data)
    return found


def _extra(data: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    kind = data[TYPE_ATTRIBUTE]
    return kind, {name: data[name] for name in data.keys() - _EDGE_OWN[kind]}


def with_extras(edges: Sequence[tuple[str, str, Any]], extras: EdgeExtras) -> list[tuple[str, str, Any]]:
    """``edges`` (start, end, shared attributes), each written again with a script's
    properties on it (same ends and type) in a dict of its own."""
    kept = []
    for start, end, data in edges:
        extra = extras.get((start, end))
        if extra is not None and extra[0] == data[TYPE_ATTRIBUTE]:
            data = {**data, **extra[1]}
        kept.append((start, end, data))
    return kept
