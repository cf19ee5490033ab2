"""Graph analysis helpers for scripts working on the in-memory graph."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import networkx as nx

from pith_graph.errors import UsageError, quoted
from pith_graph.loader.stores.latest import IS_LATEST
from pith_graph.loader.stores.memory_guard import checked_graph
from pith_graph.schema.graph import (
    AUTHOR,
    AUTHORED,
    LABEL_ATTRIBUTE,
    PAPER,
    RELATIONSHIPS,
    TYPE_ATTRIBUTE,
)

__all__ = ["coauthorship_graph", "papers_of"]


def _directed(G: nx.DiGraph) -> nx.DiGraph:
    """``G`` (:func:`.memory_guard.checked_graph`), if its first edge runs the way the schema
    says; a :class:`UsageError` if it runs backwards, as every edge of ``G.reverse()`` does
    (since 0.9.12: the analyses followed no edge there and answered empty, without a word).
    Every relationship type joins two different labels, so one edge tells; a graph a script
    edited otherwise is :func:`.memory_guard.check_built`'s to refuse, not this check's."""
    G = checked_graph(G, "G")
    for start, end, kind in G.edges(data=TYPE_ATTRIBUTE):
        spec = RELATIONSHIPS.get(kind) if isinstance(kind, str) else None
        labels = (G.nodes[start].get(LABEL_ATTRIBUTE), G.nodes[end].get(LABEL_ATTRIBUTE))
        if spec is not None and labels == (spec.end, spec.start):
            raise UsageError(
                f"G: its edges run backwards ({spec.type} from {spec.end} to {spec.start}): "
                "G.reverse() of a loaded graph? pass the graph load_graph returned"
            )
        break
    return G


def papers_of(G: nx.DiGraph, author: str) -> list[str]:
    """Paper node ids of an Author node id (``"Author:<nameKey>"``).

    Raises :class:`UsageError` (since 0.8.8) if ``author`` is not an Author node of ``G``: a
    name, or a typo, used to give ``[]``, as an author with no papers would; and (since
    0.8.9) if ``G`` is not a ``DiGraph`` as a load builds (:func:`.memory_guard.checked_graph`).

    >>> from pith_graph.loader import SAMPLES, load_graph
    >>> G, _report = load_graph([SAMPLES])
    >>> author = next(n for n, label in G.nodes(data="label") if label == "Author")
    >>> all(G.nodes[p]["label"] == "Paper" for p in papers_of(G, author))
    True
    >>> papers_of(G, G.nodes[author]["name"])
    Traceback (most recent call last):
    ...
    pith_graph.errors.UsageError: ...
    """
    G = _directed(G)
    if author not in G or G.nodes[author].get(LABEL_ATTRIBUTE) != AUTHOR.label:
        raise UsageError(
            f"papers_of: {quoted(author)} is not an Author node of the graph "
            '(it takes a node id, "Author:<nameKey>", not a name)'
        )
    return [paper for _a, paper, kind in G.out_edges(author, data=TYPE_ATTRIBUTE) if kind == AUTHORED.type]


def coauthorship_graph(G: nx.DiGraph, *, latest_versions: bool = False) -> nx.Graph:
    """Project the paper graph onto authors: an edge per pair of coauthors.

    Parameters
    ----------
    G : the ``DiGraph`` a load produced (anything else: :class:`UsageError`, since 0.8.9).
    latest_versions : count works, not versions (since 0.9.5; the name of GraphQL's
        ``PaperFilter.latestVersions``): only the papers whose ``isLatest`` is true, the newest
        version of each arXiv id, with that version's authors; an author named only on older
        versions is left out. False (the default): every version is a paper of its own, as in
        the graph, so v1 and v2 of one id count twice.

    Returns
    -------
    An undirected ``nx.Graph`` whose nodes are the Author node ids (with their ``name`` and
    ``nameKey``) and whose edge ``weight`` is the number of papers the two share.

    Examples
    --------
    >>> from pith_graph.loader import SAMPLES, load_graph
    >>> G, report = load_graph([SAMPLES])
    >>> C = coauthorship_graph(G)
    >>> C.number_of_nodes() == report.counts.nodes["Author"]
    True
    >>> works = coauthorship_graph(G, latest_versions=True)
    >>> all(works[a][b]["weight"] <= C[a][b]["weight"] for a, b in works.edges)
    True
    """
    G = _directed(G)
    if type(latest_versions) is not bool:
        raise UsageError(f"latest_versions: expected a bool, not {type(latest_versions).__name__}")
    weights: Counter[tuple[str, str]] = Counter()
    named: set[str] = set()
    for paper, data in G.nodes(data=True):
        if data.get(LABEL_ATTRIBUTE) != PAPER.label or (latest_versions and data.get(IS_LATEST) is not True):
            continue
        authors = sorted(
            start for start, _p, kind in G.in_edges(paper, data=TYPE_ATTRIBUTE) if kind == AUTHORED.type
        )
        named.update(authors)
        weights.update(combinations(authors, 2))
    C = nx.Graph()
    for node, data in G.nodes(data=True):
        if data.get(LABEL_ATTRIBUTE) == AUTHOR.label and (not latest_versions or node in named):
            C.add_node(node, **{name: data[name] for name in AUTHOR.property_names if name in data})
    C.add_weighted_edges_from((a, b, w) for (a, b), w in weights.items())
    return C
