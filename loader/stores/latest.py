"""``Paper.isLatest`` in memory: true for the newest version of its source, false for the others.

A source's papers (same ``sourceKind`` and ``sourceId``) are ordered by
``(sourceVersion, builtAt, pithNumber)`` (:func:`version_key`): the order in which
``paper(id:)`` picks an arXiv id's newest version and ``latestVersions`` keeps it. Every write
recomputes it for each source it touches (:func:`mark_latest`: a source has a few versions);
a graph saved before 0.9.4 gets it on opening (:func:`fill_latest`). Neo4j's writes do the
same in Cypher (``cypher.REFRESH_LATEST``), the bulk import per partition (``bulk.merge``).

A saved graph is checked (:func:`bad_latest`) the way ``paperCount`` is: a paper marked latest
must be its source's newest in the graph; one not marked may be the newest of an export of a
part of a database (whose newer version was not exported), as an author's ``paperCount`` may
exceed its edges there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import networkx as nx

from pith_graph.schema.graph import LABEL_ATTRIBUTE, PAPER, node_id

__all__ = [
    "IS_LATEST",
    "Versioned",
    "bad_latest",
    "fill_latest",
    "mark_latest",
    "row_version_key",
    "version_key",
]

IS_LATEST = PAPER.prop("isLatest")
_KIND, _ID = PAPER.prop("sourceKind"), PAPER.prop("sourceId")
_VERSION, _BUILT, _PITH = PAPER.prop("sourceVersion"), PAPER.prop("builtAt"), PAPER.prop("pithNumber")


def version_key(data: Mapping[str, Any]) -> tuple[int, str, str]:
    """A paper's place among its source's versions: the newest has the greatest."""
    return (data[_VERSION], data[_BUILT], data[_PITH])


class Versioned(Protocol):
    """A paper as a row or a bundle holds it (``PaperRow``, the bulk import's records)."""

    @property
    def source_version(self) -> int: ...
    @property
    def built_at(self) -> str: ...
    @property
    def pith_number(self) -> str: ...


def row_version_key(row: Versioned) -> tuple[int, str, str]:
    """:func:`version_key` of a row or bundle, read from its fields."""
    return (row.source_version, row.built_at, row.pith_number)


def mark_latest(nodes: Mapping[str, dict[str, Any]], piths: Iterable[str]) -> None:
    """Set ``isLatest`` on every paper of ``piths`` (all the papers of one source)."""
    papers = [nodes[node_id(PAPER.label, pith)] for pith in piths]
    if papers:
        _mark(papers)


def _mark(papers: list[dict[str, Any]]) -> None:
    newest = max(papers, key=version_key)
    for data in papers:
        data[IS_LATEST] = data is newest


def _sources(graph: nx.DiGraph) -> dict[tuple[str, str], list[dict[str, Any]]]:
    found: defaultdict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for data in graph._node.values():  # (one of the wrong types is left to check_types to refuse)
        if data.get(LABEL_ATTRIBUTE) == PAPER.label and _typed(data):
            found[data[_KIND], data[_ID]].append(data)
    return found


def _typed(data: Mapping[str, Any]) -> bool:
    version = data.get(_VERSION)
    return type(version) is int and all(type(data.get(name)) is str for name in (_KIND, _ID, _BUILT, _PITH))


def fill_latest(graph: nx.DiGraph) -> None:
    """Give the papers of a graph saved before 0.9.4 their ``isLatest`` (every paper's, when
    one lacks it); a graph that has them is left as it is (one look at each node)."""
    nodes = graph._node.values()
    if all(IS_LATEST in data for data in nodes if data.get(LABEL_ATTRIBUTE) == PAPER.label):
        return
    for papers in _sources(graph).values():
        _mark(papers)


def bad_latest(graph: nx.DiGraph) -> tuple[str, str] | None:
    """The first paper (its id, and what is wrong) marked latest while a paper of its source
    in ``graph`` is newer; ``None``: none is (properties of the right types: ``check_types``)."""
    for papers in _sources(graph).values():
        newest = max(papers, key=version_key)
        for data in papers:
            if data.get(IS_LATEST) and data is not newest:
                return (
                    node_id(PAPER.label, data[_PITH]),
                    f"isLatest is true, but {newest[_PITH]!r:.60} is a newer version of its source",
                )
    return None
