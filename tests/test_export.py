"""Subgraphs from Neo4j into networkx: the whole database equals ``load --save`` of its
bundles; a selection holds exactly its papers and everything they touch (checked against
networkx on the in-memory graph of the same bundles)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from conftest import plan_steps

import pith_graph.loader.export as export_module
from pith_graph import export_graph
from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.export import PAST_THE_END, Selection, export_subgraph
from pith_graph.loader.facade import load_graph
from pith_graph.loader.stores import cypher_export
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.schema.graph import NODES, RELATIONSHIPS
from pith_graph.testing import run_cli, write_corpus

pytestmark = pytest.mark.neo4j


@pytest.fixture(scope="module")
def loaded(neo4j_server: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, nx.DiGraph, Path]:
    """A corpus loaded into the session's Neo4j, and the same bundles loaded in memory."""
    info = write_corpus(tmp_path_factory.mktemp("export"), 600, seed=21, workers=2, layout="jsonl")
    store: Neo4jStore = neo4j_server.connect()
    try:
        store.clear()
        done = run_cli(
            *("load", *map(str, info.shards), "--backend", "neo4j"),
            *("--trusted-keys", str(info.keyring_path), *neo4j_server.cli_args()),
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
    finally:
        store.close()
    G, report = load_graph(info.shards, trusted_keys=info.keyring_path, workers=1)
    assert report.rejected == 0
    return neo4j_server, G, info.keyring_path


def _export(server: Any, selection: Selection | None = None) -> nx.DiGraph:
    store: Neo4jStore = server.connect()
    try:
        return export_subgraph(store, selection)
    finally:
        store.close()


def _same(actual: nx.DiGraph, expected: nx.DiGraph) -> None:
    assert type(actual) is type(expected)
    assert MemoryStore(actual).export() == MemoryStore(expected).export()
    assert sorted(actual.edges()) == sorted(expected.edges())


def _touched(G: nx.DiGraph, papers: set[str]) -> nx.DiGraph:
    """The expected export: ``papers``, their neighbours and the edges between them."""
    keep = set(papers)
    for paper in papers:
        keep |= set(G.pred[paper]) | set(G.succ[paper])
    H = G.subgraph(keep).copy()
    H.remove_edges_from([(u, v) for u, v in H.edges() if u not in papers and v not in papers])
    return H


def _papers(G: nx.DiGraph) -> list[str]:
    return [n for n, label in G.nodes(data="label") if label == "Paper"]


def test_the_whole_database_equals_load_save_of_its_bundles(
    loaded: tuple[Any, nx.DiGraph, Path], tmp_path: Path
) -> None:
    server, G, _ = loaded
    _same(_export(server), G)
    saved = tmp_path / "whole.json"
    done = run_cli("export", "--save", str(saved), "--json", *server.cli_args(), timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # since 0.8.9 counts by label and type (tests/test_json_reports.py)
    assert set(summary) == {"nodes", "edges", "totalNodes", "totalEdges", "seconds"}
    labels = Counter(label for _, label in G.nodes(data="label"))
    types = Counter(kind for _, _, kind in G.edges(data="type"))
    assert summary["nodes"] == {label: labels[label] for label in sorted(NODES)}
    assert summary["edges"] == {kind: types[kind] for kind in sorted(RELATIONSHIPS)}
    assert (summary["totalNodes"], summary["totalEdges"]) == (G.number_of_nodes(), G.number_of_edges())
    from_file = nx.node_link_graph(json.loads(saved.read_bytes()), edges="edges")
    _same(from_file, G)


def test_a_category_export_holds_its_papers_and_all_they_touch(
    loaded: tuple[Any, nx.DiGraph, Path],
) -> None:
    server, G, _ = loaded
    code = "cs.LG"
    papers = {p for p in _papers(G) if f"Category:{code}" in G.succ[p]}
    assert len(papers) > 20
    _same(_export(server, Selection(category=code)), _touched(G, papers))
    # the same through the package's entry point, connection settings as arguments
    password = {"password": server.password} if server.password else {}
    exported = export_graph(server.uri, user=server.user, database=server.database, category=code, **password)
    _same(exported, _touched(G, papers))


def test_an_author_export_follows_coauthors_for_each_hop(loaded: tuple[Any, nx.DiGraph, Path]) -> None:
    server, G, _ = loaded
    author = max((n for n, label in G.nodes(data="label") if label == "Author"), key=G.out_degree)
    reached, frontier, papers = {author}, {author}, set()
    for hops in (1, 2):
        found = {p for a in frontier for p in G.succ[a]}
        papers |= found
        name = G.nodes[author]["name"].upper()  # matched by name key: case does not matter
        _same(_export(server, Selection(author=name, hops=hops)), _touched(G, papers))
        frontier = {a for p in found for a in G.pred[p] if G.nodes[a]["label"] == "Author"} - reached
        reached |= frontier


def test_dates_bound_the_papers_both_ends_inclusive(loaded: tuple[Any, nx.DiGraph, Path]) -> None:
    server, G, _ = loaded
    stamps = sorted(G.nodes[p]["submittedAt"] for p in _papers(G))
    low, high = stamps[len(stamps) // 4], stamps[3 * len(stamps) // 4]
    papers = {p for p in _papers(G) if low <= G.nodes[p]["submittedAt"] <= high}
    _same(_export(server, Selection(submitted_from=low, submitted_to=high)), _touched(G, papers))
    day = high[:10]
    papers = {p for p in _papers(G) if G.nodes[p]["submittedAt"][:10] <= day}
    _same(_export(server, Selection(submitted_to=day)), _touched(G, papers))


def test_a_from_alone_bounds_the_papers_from_it_on(loaded: tuple[Any, nx.DiGraph, Path]) -> None:
    server, G, _ = loaded
    stamps = sorted(G.nodes[p]["submittedAt"] for p in _papers(G))
    low = stamps[len(stamps) // 2]
    papers = {p for p in _papers(G) if G.nodes[p]["submittedAt"] >= low}
    assert papers < set(_papers(G))
    _same(_export(server, Selection(submitted_from=low)), _touched(G, papers))


@pytest.mark.parametrize("bounds", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize(
    "statements", ["EXPORT_PAPERS_BETWEEN", "EXPORT_PAPERS_OF_CATEGORY_BETWEEN", "EXPORT_COUNT_BETWEEN"]
)
def test_a_dates_export_seeks_the_dates_in_the_submitted_at_index(
    loaded: tuple[Any, nx.DiGraph, Path], driver: Any, bounds: tuple[bool, bool], statements: str
) -> None:
    """A bound is written only when given: as ``$from IS NULL OR …`` the planner could not
    use it, and read every paper (an index scan, then a filter). No statement names the
    index (a database without it is read by a scan): the planner must choose the range."""
    given = {"from": "2020-03-01T00:00:00Z", "before": "2020-04-01T00:00:00Z"}
    params = {name: value for name, value, on in zip(given, given.values(), bounds, strict=True) if on}
    statement = getattr(cypher_export, statements)[bounds]
    summary = driver.execute_query(
        "EXPLAIN " + statement, latest=True, category="cs.LG", cap=10, **params
    ).summary
    steps = [(operator, details) for _, operator, details in plan_steps(summary.plan)]
    seeks = [details for operator, details in steps if operator == "NodeIndexSeekByRange"]
    assert len(seeks) == 1 and "submittedAt" in seeks[0], steps
    assert not any(operator.endswith(("Scan", "AllNodesScan")) for operator, _ in steps), steps


def _middle_half(G: nx.DiGraph, papers: set[str]) -> tuple[str, str, set[str]]:
    """Bounds around the middle half of ``papers``' submission times, and the papers within
    them (both ends inclusive): some of ``papers``, not all."""
    stamps = sorted(G.nodes[p]["submittedAt"] for p in papers)
    low, high = stamps[len(stamps) // 4], stamps[3 * len(stamps) // 4]
    within = {p for p in papers if low <= G.nodes[p]["submittedAt"] <= high}
    assert within and within < papers
    return low, high, within


def test_a_category_and_dates_export_holds_the_category_s_papers_within_the_dates(
    loaded: tuple[Any, nx.DiGraph, Path],
) -> None:
    """As README's ``export --category cs.LG --from 2019-01-01 --to 2020-12-31``: both hold."""
    server, G, _ = loaded
    code = "cs.LG"
    papers = {p for p in _papers(G) if f"Category:{code}" in G.succ[p]}
    low, high, within = _middle_half(G, papers)
    assert within < {p for p in _papers(G) if low <= G.nodes[p]["submittedAt"] <= high}
    selection = Selection(category=code, submitted_from=low, submitted_to=high)
    _same(_export(server, selection), _touched(G, within))


@pytest.mark.parametrize(
    ("window", "start"),
    [
        pytest.param("day", (True, True), id="a-day-from-the-dates"),
        pytest.param("to", (False, True), id="a-to-alone-from-the-dates"),
        pytest.param("years", None, id="every-year-from-the-category"),
    ],
)
def test_a_category_and_dates_export_starts_from_the_side_holding_fewer_papers(
    loaded: tuple[Any, nx.DiGraph, Path], driver: Any, window: str, start: tuple[bool, bool] | None
) -> None:
    """A day of a big category is found from the dates (a range of the index, then each
    paper's categories), years of it from the category (its edges, then each paper's dates):
    either way the export holds the category's papers within the dates."""
    server, G, _ = loaded
    code = "cs.LG"
    papers = {p for p in _papers(G) if f"Category:{code}" in G.succ[p]}
    stamps = sorted(G.nodes[p]["submittedAt"] for p in papers)
    middle = stamps[len(stamps) // 2][:10]
    low, high = {
        "day": (middle, middle),
        "to": (None, stamps[0][:10]),
        "years": ("1990-01-01", "2099-12-31"),
    }[window]
    selection = Selection(category=code, submitted_from=low, submitted_to=high)
    with driver.session() as session:
        given, before = selection.bounds()
        dates: dict[str, Any] = {"from": given, "before": before, "latest": False}
        chosen = session.execute_read(lambda tx: export_module._category_start(tx, code, dates))
    expected = cypher_export.EXPORT_PAPERS_OF_CATEGORY
    if start is not None:
        expected = cypher_export.EXPORT_PAPERS_OF_CATEGORY_BETWEEN[start]
    assert chosen == expected
    within = {p for p in papers if (low or "") <= G.nodes[p]["submittedAt"][:10] <= (high or "9")}
    assert within and (within < papers) == (window != "years")
    _same(_export(server, selection), _touched(G, within))


def test_an_author_hops_and_dates_export_holds_the_hops_papers_within_the_dates(
    loaded: tuple[Any, nx.DiGraph, Path],
) -> None:
    server, G, _ = loaded
    author = max((n for n, label in G.nodes(data="label") if label == "Author"), key=G.out_degree)
    mine = set(G.succ[author])
    coauthors = {a for p in mine for a in G.pred[p] if G.nodes[a]["label"] == "Author"}
    papers = mine | {p for a in coauthors for p in G.succ[a]}  # two hops
    low, high, within = _middle_half(G, papers)
    selection = Selection(author=G.nodes[author]["name"], hops=2, submitted_from=low, submitted_to=high)
    _same(_export(server, selection), _touched(G, within))


@pytest.mark.parametrize("low", ["9999-12-31T23:59:59.5", "9999-12-31T23:59:59.000001Z"])
def test_a_from_past_the_last_second_there_is_selects_nothing(
    loaded: tuple[Any, nx.DiGraph, Path], low: str
) -> None:
    """Rounded up to the next whole second, such a bound is past every time: it used to
    become no bound at all, and the whole graph was exported."""
    server, _, _ = loaded
    assert Selection(submitted_from=low).bounds() == (PAST_THE_END, None)
    assert _export(server, Selection(submitted_from=low)).number_of_nodes() == 0


# -- a database that changes under the export (last: these clear the session's database) -----


def _papers_of(G: nx.DiGraph) -> set[str]:
    return {node for node, label in G.nodes(data="label") if label == "Paper"}


#: A paper removed and the nodes it leaves without a paper with it, in one commit, as a load or
#: prune removes one (an orphan left is no graph pith-graph writes: export refuses it).
REMOVE_PAPER = """
MATCH (p:Paper {pithNumber: $p})
OPTIONAL MATCH (p)--(n)
WITH p, collect(DISTINCT n) AS neighbours
DETACH DELETE p
WITH neighbours
UNWIND neighbours AS n
WITH n WHERE NOT EXISTS { (n)--(:Paper) }
DETACH DELETE n
"""


def test_an_export_the_database_changes_under_starts_again(
    neo4j_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Neo4j reads see each statement's committed state: papers listed, then replaced or
    removed by a load before their chunk is read, used to be left out silently (an export
    during a load missed 40-190 of 2,500 papers, with authors' counts off). The export now
    notices a listed paper gone and reads again; if the database keeps changing it stops
    with a StoreError rather than write a graph of no state."""
    store: Neo4jStore = neo4j_server.connect()
    try:
        store.clear()
        info = write_corpus(tmp_path, 12, seed=5, workers=1, layout="jsonl")  # a paper for each attempt
        done = run_cli(
            *("load", *map(str, info.shards), "--trusted-keys", str(info.keyring_path)),
            *("--backend", "neo4j", *neo4j_server.cli_args()),
        )
        assert done.returncode == 0, done.stderr
        before = _papers_of(export_subgraph(store))
        real = export_module._chunks
        calls: list[list[str]] = []

        def a_writer_first(items: list[str], size: int) -> Iterator[list[str]]:
            calls.append(items)
            if items and (len(calls) == 1 or always):  # a paper listed is removed before it is read
                with store.driver.session() as session:  # with its orphans, as a load or prune does
                    session.run(REMOVE_PAPER, p=items[0]).consume()
            return real(items, size)

        monkeypatch.setattr(export_module, "_chunks", a_writer_first)
        always = False
        G = export_subgraph(store)
        assert len(calls) == 2 and _papers_of(G) == before - {f"Paper:{calls[0][0]}"}
        always, calls[:] = True, []
        with pytest.raises(StoreError, match=r"changed under the export 5 times \(1 of the papers listed"):
            export_subgraph(store)
        assert len(calls) == export_module.EXPORT_ATTEMPTS
    finally:
        store.clear()
        store.close()


def test_an_export_a_prune_moves_a_newest_version_under_starts_again(
    neo4j_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Chunks are read one after another and each sees what has committed: a source's
    newest paper read, then removed by a prune (which marks the version before it latest),
    then that version read, gave a graph of two latest papers of one source, refused as one
    the database's own edits had made ("hand_edited: … fix it in the database"). The export
    reads again instead and gives the graph after the prune."""
    store: Neo4jStore = neo4j_server.connect()
    try:
        store.clear()
        info = write_corpus(tmp_path, 300, seed=7, workers=1, layout="jsonl")
        done = run_cli(
            *("load", *map(str, info.shards), "--trusted-keys", str(info.keyring_path)),
            *("--backend", "neo4j", *neo4j_server.cli_args()),
        )
        assert done.returncode == 0, done.stderr
        whole = export_subgraph(store)
        versions: dict[tuple[str, str], list[tuple[int, str]]] = {}
        for node, data in whole.nodes(data=True):
            if data["label"] == "Paper":
                versions.setdefault((data["sourceKind"], data["sourceId"]), []).append(
                    (data["sourceVersion"], node)
                )
        newest, older = (
            node.split(":", 1)[1]
            for _, node in sorted(next(v for v in versions.values() if len(v) > 1))[::-1][:2]
        )
        real = export_module._chunks
        removed: list[str] = []

        def newest_then_a_prune(items: list[str], size: int) -> Iterator[list[str]]:
            if newest not in items:  # read again after the prune: as it is
                yield from real(items, size)
                return
            yield [newest]  # read first, latest
            removed.extend(store.remove_papers([newest]))  # its older version is latest now
            yield from real([pith for pith in items if pith != newest], size)

        monkeypatch.setattr(export_module, "_chunks", newest_then_a_prune)
        G = export_subgraph(store)
        assert removed == [newest]
        assert f"Paper:{newest}" not in G and G.nodes[f"Paper:{older}"]["isLatest"] is True
        assert sum(1 for _, latest in G.nodes(data="isLatest") if latest) == len(versions)
        monkeypatch.setattr(export_module, "_chunks", real)
        untouched = next(v for v in versions.values() if len(v) > 1 and (max(v)[1] != f"Paper:{newest}"))
        with store.driver.session() as session:  # an analyst's edit: it stays, read after read
            edit = "MATCH (p:Paper {pithNumber: $p}) SET p.isLatest = true"
            session.run(edit, p=min(untouched)[1].split(":", 1)[1]).consume()
        with pytest.raises(StoreError) as refused:
            export_subgraph(store)
        assert refused.value.code is StoreErrorCode.HAND_EDITED and "isLatest is true" in str(refused.value)
    finally:
        store.clear()
        store.close()
