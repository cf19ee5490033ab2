"""``coauthorship_graph(G, latest_versions=True)`` counts works, not versions (since 0.9.5):
each arXiv id once, with its newest version's authors (``Paper.isLatest``). Before, every
version was a paper of its own, and a script pruned the older versions from ``G`` first."""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest

from pith_graph import UsageError, coauthorship_graph, papers_of
from pith_graph.loader.facade import load_graph
from pith_graph.testing import write_corpus


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> nx.DiGraph:
    info = write_corpus(tmp_path_factory.mktemp("coauthors"), 400, seed=8, workers=1, layout="jsonl")
    G, report = load_graph(info.shards, trusted_keys=info.keyring_path, workers=1)
    assert report.rejected == 0
    return G


def _newest_only(G: nx.DiGraph) -> nx.DiGraph:
    """``G`` as a script pruned it: the older versions removed, then the authors they alone named."""
    H = G.copy()
    H.remove_nodes_from(
        [n for n, data in G.nodes(data=True) if data["label"] == "Paper" and not data["isLatest"]]
    )
    H.remove_nodes_from(
        [n for n, label in H.nodes(data="label") if label == "Author" and not H.out_degree(n)]
    )
    return H


def _as_data(C: nx.Graph) -> tuple[dict[str, Any], dict[frozenset[str], Any]]:
    return dict(C.nodes(data=True)), {frozenset((a, b)): data for a, b, data in C.edges(data=True)}


def test_latest_versions_counts_each_arxiv_id_once_with_its_newest_authors(graph: nx.DiGraph) -> None:
    works = coauthorship_graph(graph, latest_versions=True)
    assert _as_data(works) == _as_data(coauthorship_graph(_newest_only(graph)))
    versions = coauthorship_graph(graph)
    assert _as_data(versions) == _as_data(coauthorship_graph(graph, latest_versions=False))
    # the corpus has versions: some pairs counted twice or more before count once now
    assert sum(w for *_, w in works.edges(data="weight")) < sum(w for *_, w in versions.edges(data="weight"))
    assert all(works[a][b]["weight"] <= versions[a][b]["weight"] for a, b in works.edges)


def test_an_author_only_an_older_version_names_is_left_out(graph: nx.DiGraph) -> None:
    H = graph.copy()
    old = next(n for n, data in H.nodes(data=True) if data["label"] == "Paper" and not data["isLatest"])
    H.add_node("Author:only old", label="Author", nameKey="only old", name="Only Old")
    H.add_edge("Author:only old", old, type="AUTHORED")
    assert "Author:only old" in coauthorship_graph(H)
    assert "Author:only old" not in coauthorship_graph(H, latest_versions=True)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_latest_versions_is_a_bool(graph: nx.DiGraph, value: Any) -> None:
    with pytest.raises(UsageError, match=f"latest_versions: expected a bool, not {type(value).__name__}"):
        coauthorship_graph(graph, latest_versions=value)


@pytest.mark.parametrize("copy", [True, False], ids=["reverse", "reverse_view"])
def test_a_reversed_graph_is_refused_not_answered_empty(graph: nx.DiGraph, copy: bool) -> None:
    """``G.reverse()`` keeps every node and edge, each edge the other way round: the analyses
    found no AUTHORED edge into any paper and answered with authors and no coauthorship, and
    ``papers_of`` with ``[]`` (before 0.9.12). Now they say why."""
    author = next(node for node, label in graph.nodes(data="label") if label == "Author")
    assert coauthorship_graph(graph).number_of_edges() > 0 and papers_of(graph, author)
    backwards = graph.reverse(copy=copy)
    said = r"G: its edges run backwards \(\w+ from \w+ to \w+\): G\.reverse\(\)"
    with pytest.raises(UsageError, match=said):
        coauthorship_graph(backwards)
    with pytest.raises(UsageError, match=said):
        papers_of(backwards, author)
