"""``export --latest-versions`` (``Selection(latest_versions=True)``, ``export_graph(latest_versions=)``,
since 0.9.5): the newest version of each arXiv id only, one more condition every exported
paper meets, as the category and the dates are; and ``export --save FILE.graphml``. Checked
against the same bundles loaded in memory, the selection made there (``test_export.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from test_export import _export, _papers, _same, _touched, loaded  # noqa: F401 (a fixture)
from test_graphml import decoded

from pith_graph import export_graph
from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.loader.export import Selection, export_subgraph
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing import run_cli


def _latest(G: nx.DiGraph, papers: set[str]) -> set[str]:
    return {p for p in papers if G.nodes[p]["isLatest"]}


def _versions(G: nx.DiGraph) -> set[str]:
    older = {p for p in _papers(G) if not G.nodes[p]["isLatest"]}
    assert len(older) > 20  # the corpus has versions: the selection leaves some out
    return older


@pytest.mark.neo4j
def test_the_whole_graph_s_newest_versions(loaded: tuple[Any, nx.DiGraph, Path]) -> None:
    server, G, _ = loaded
    _versions(G)
    expected = _touched(G, _latest(G, set(_papers(G))))
    _same(_export(server, Selection(latest_versions=True)), expected)
    password = {"password": server.password} if server.password else {}
    exported = export_graph(
        server.uri, user=server.user, database=server.database, latest_versions=True, **password
    )
    _same(exported, expected)


@pytest.mark.neo4j
def test_a_category_and_dates_with_latest_versions(loaded: tuple[Any, nx.DiGraph, Path]) -> None:
    server, G, _ = loaded
    papers = {p for p in _papers(G) if "Category:cs.LG" in G.succ[p]}
    assert _latest(G, papers) < papers
    _same(_export(server, Selection(category="cs.LG", latest_versions=True)), _touched(G, _latest(G, papers)))
    stamps = sorted(G.nodes[p]["submittedAt"] for p in papers)
    low, high = stamps[len(stamps) // 4], stamps[3 * len(stamps) // 4]
    within = {p for p in papers if low <= G.nodes[p]["submittedAt"] <= high}
    selection = Selection(category="cs.LG", submitted_from=low, submitted_to=high, latest_versions=True)
    _same(_export(server, selection), _touched(G, _latest(G, within)))


@pytest.mark.neo4j
def test_an_author_s_hops_go_through_every_version_then_keep_the_newest(
    loaded: tuple[Any, nx.DiGraph, Path],
) -> None:
    """The hops reach coauthors through all papers, as without it; then each paper exported
    must be a newest version, as each must be within the dates."""
    server, G, _ = loaded
    author = max((n for n, label in G.nodes(data="label") if label == "Author"), key=G.out_degree)
    mine = set(G.succ[author])
    coauthors = {a for p in mine for a in G.pred[p] if G.nodes[a]["label"] == "Author"}
    papers = mine | {p for a in coauthors for p in G.succ[a]}
    assert _latest(G, papers) < papers
    selection = Selection(author=G.nodes[author]["name"], hops=2, latest_versions=True)
    _same(_export(server, selection), _touched(G, _latest(G, papers)))


@pytest.mark.neo4j
def test_a_database_written_before_0_9_4_is_refused_as_without_it(
    loaded: tuple[Any, nx.DiGraph, Path],
) -> None:
    """A paper without ``isLatest`` is not left out (the export would lack it, and say
    nothing): it is read, and the export refused, saying what to run."""
    server, G, _ = loaded
    paper = next(p for p in _papers(G) if "Category:cs.LG" in G.succ[p])
    with server.connect() as store:
        with store.driver.session(database=store.database) as session:
            session.run(
                "MATCH (p:Paper {pithNumber: $pith}) REMOVE p.isLatest", pith=G.nodes[paper]["pithNumber"]
            )
        try:
            with pytest.raises(StoreError) as raised:
                export_subgraph(store, Selection(category="cs.LG", latest_versions=True))
        finally:
            store.ensure_schema()  # gives it back, as pith-graph schema does
        assert raised.value.code is StoreErrorCode.HAND_EDITED
        assert "written before 0.9.4: run pith-graph schema" in raised.value.message
        assert _export(server, Selection(category="cs.LG", latest_versions=True)).has_node(paper) is bool(
            G.nodes[paper]["isLatest"]
        )


def _as_dicts(G: nx.DiGraph) -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
    def plain(data: dict[str, Any]) -> dict[str, Any]:
        return {name: list(value) if isinstance(value, tuple) else value for name, value in data.items()}

    return {n: plain(d) for n, d in G.nodes(data=True)}, {(u, v): plain(d) for u, v, d in G.edges(data=True)}


@pytest.mark.neo4j
def test_export_latest_versions_save_graphml_and_node_link(
    loaded: tuple[Any, nx.DiGraph, Path], tmp_path: Path
) -> None:
    server, G, _ = loaded
    expected = _touched(G, _latest(G, set(_papers(G))))
    for name in ("g.json", "g.graphml", "g.graphml.gz"):
        done = run_cli(
            "export", "--latest-versions", "--save", str(tmp_path / name), *server.cli_args(), timeout=300
        )
        assert done.returncode == 0, done.stderr
    _same(MemoryStore.open(tmp_path / "g.json").graph, expected)
    for name in ("g.graphml", "g.graphml.gz"):
        assert _as_dicts(decoded(nx.read_graphml(tmp_path / name))) == _as_dicts(expected)


def test_latest_versions_is_a_bool_given_by_keyword() -> None:
    with pytest.raises(UsageError, match="latest_versions: expected a bool, not str"):
        Selection(latest_versions="yes")  # type: ignore[arg-type]
    assert not Selection(latest_versions=True).everything
    assert Selection(latest_versions=True) != Selection()
