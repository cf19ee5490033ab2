"""``Paper.isLatest`` (since 0.9.4) follows every write on both stores: a new version loaded
turns the older's off, removing (pruning) the newest turns the one before back on, a rebuilt
older version changes nothing; a graph or database written before 0.9.4 gets it on opening
(memory) or from ``ensure_schema`` (Neo4j: ``pith-graph schema`` and every load), and a saved
graph marking an older version latest is refused as a wrong ``paperCount`` is. On Neo4j the
property holds exactly where the subquery ``latestVersions`` ran before 0.9.4 held."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import networkx as nx
import orjson
import pytest
from test_store_behaviour import BUILDER, SIGNER, bundle, labelled, load, spec

from pith_graph.api.reads.cypher_parts import LATEST_SUBQUERY
from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_latest import upgrade_latest
from pith_graph.testing.signer import PaperSpec, build_bundle


def _version(arxiv_id: str, version: int, built_at: str = "2026-07-02T00:00:00Z") -> PaperSpec:
    return spec(arxiv_id, version=version, title=f"{arxiv_id} v{version}", built_at=built_at)


def _pith(paper: PaperSpec) -> str:
    return str(build_bundle(paper, SIGNER)["pith_number"])


def latest(store: GraphStore) -> dict[str, bool]:
    """Each paper's ``isLatest``, by title."""
    return {node["title"]: node["isLatest"] for node in labelled(store.export(), "Paper").values()}


def test_a_new_version_turns_the_older_off_and_removing_it_turns_it_back_on(
    store: GraphStore, tmp_path: Path
) -> None:
    v1, v2, other = _version("2406.00001", 1), _version("2406.00001", 2), _version("2406.00002", 1)
    load(store, tmp_path, [bundle(v1), bundle(other)])
    assert latest(store) == {"2406.00001 v1": True, "2406.00002 v1": True}
    load(store, tmp_path, [bundle(v2)])
    assert latest(store) == {"2406.00001 v1": False, "2406.00001 v2": True, "2406.00002 v1": True}
    rebuilt = _version("2406.00001", 1, built_at="2026-09-01T00:00:00Z")  # v1 rebuilt later: still older
    assert load(store, tmp_path, [bundle(rebuilt)]).replaced == 1
    assert latest(store) == {"2406.00001 v1": False, "2406.00001 v2": True, "2406.00002 v1": True}
    assert store.remove_papers([_pith(v2)]) == [_pith(v2)]  # what prune does
    assert latest(store) == {"2406.00001 v1": True, "2406.00002 v1": True}


def test_a_batch_of_several_versions_marks_only_the_newest(store: GraphStore, tmp_path: Path) -> None:
    """In one batch, in any order, and when the newest is loaded first."""
    papers = [_version("2406.00003", v, built_at=f"2026-07-0{5 - v}T00:00:00Z") for v in (3, 1, 2)]
    load(store, tmp_path, [bundle(p) for p in papers], batch_size=2)
    assert latest(store) == {"2406.00003 v1": False, "2406.00003 v2": False, "2406.00003 v3": True}


def _without_latest(store: GraphStore) -> None:
    """Make ``store`` look written before 0.9.4: no paper has isLatest."""
    if isinstance(store, MemoryStore):
        for _node, data in store.graph.nodes(data=True):
            data.pop("isLatest", None)
        return
    assert isinstance(store, Neo4jStore)
    with store.driver.session(database=store.database) as session:
        session.run("MATCH (p:Paper) REMOVE p.isLatest").consume()


def test_a_graph_written_before_0_9_4_gets_is_latest(store: GraphStore, tmp_path: Path) -> None:
    papers = [_version(f"2406.0001{i}", v) for i in range(3) for v in range(1, i + 2)]
    load(store, tmp_path, [bundle(p) for p in papers])
    expected = store.export()
    _without_latest(store)
    if isinstance(store, MemoryStore):
        assert MemoryStore(store.graph).export() == expected
        return
    assert isinstance(store, Neo4jStore)
    with store.driver.session(database=store.database) as session:
        assert upgrade_latest(session, batch=2) == 3  # two sources a transaction, on from the last
        assert upgrade_latest(session) == 0
    assert store.export() == expected
    _without_latest(store)
    store.ensure_schema()  # what pith-graph schema and pith-graph load run first
    assert store.export() == expected


@pytest.mark.neo4j
def test_neo4j_is_latest_holds_where_the_subquery_did(neo4j_server: Any, tmp_path: Path) -> None:
    papers = [
        _version(f"2406.0003{i}", v, built_at=f"2026-07-0{1 + (v * 7 + i) % 8}T00:00:00Z")
        for i in range(4)
        for v in range(1, i + 2)
    ]
    with neo4j_server.connect() as store:
        store.clear()
        load(store, tmp_path, [bundle(p) for p in papers], batch_size=3)
        store.remove_papers([_pith(papers[-1])])
        with store.driver.session(database=store.database) as session:
            rows = session.run(
                f"MATCH (p:Paper) RETURN p.pithNumber AS pith, p.isLatest AS kept, {LATEST_SUBQUERY} AS asked"
            ).data()
        store.clear()
    assert len(rows) == len(papers) - 1 and sum(row["kept"] for row in rows) == 4
    assert all(row["kept"] is row["asked"] for row in rows), rows


def _saved(tmp_path: Path, edit: Any) -> Path:
    """The graph of three versions of one id, edited, saved as node-link JSON (as a script
    or an earlier version may write it)."""
    tmp_path.mkdir(exist_ok=True)
    store = MemoryStore()
    load(store, tmp_path, [bundle(_version("2406.00040", v)) for v in (1, 2, 3)])
    store.graph = nx.DiGraph(store.graph)
    edit({data["title"]: data for _node, data in store.graph.nodes(data=True) if data["label"] == "Paper"})
    path = tmp_path / "graph.json"
    path.write_bytes(store.node_link_json())
    return path


def test_a_saved_graph_without_is_latest_opens_with_it(tmp_path: Path) -> None:
    def strip(papers: dict[str, dict[str, Any]]) -> None:
        for data in papers.values():
            del data["isLatest"]

    path = _saved(tmp_path, strip)
    opened = MemoryStore.open(path)
    assert latest(opened) == {"2406.00040 v1": False, "2406.00040 v2": False, "2406.00040 v3": True}
    store = MemoryStore(opened.graph)
    store.save_snapshot(tmp_path / "graph.snapshot")
    assert latest(MemoryStore.open(tmp_path / "graph.snapshot")) == latest(opened)


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        pytest.param({"sourceVersion": "3"}, "sourceVersion is not an integer: '3'", id="version-text"),
        pytest.param(
            {"sourceVersion": 3, "builtAt": 20260702},
            "builtAt is not a string: 20260702",
            id="built-at-number",
        ),
    ],
)
def test_a_saved_graph_without_is_latest_holding_a_wrong_type_is_refused_by_its_check(
    tmp_path: Path, edits: dict[str, Any], message: str
) -> None:
    """Giving isLatest to a graph saved before 0.9.4 leaves a paper of the wrong types to the
    check that names the property (comparing its versions raised TypeError instead)."""

    def edit(papers: dict[str, dict[str, Any]]) -> None:
        for data in papers.values():
            del data["isLatest"]
        papers["2406.00040 v2"].update(edits)

    with pytest.raises(UsageError) as refused:
        MemoryStore.open(_saved(tmp_path, edit))
    assert str(refused.value).endswith(message), refused.value


def test_a_saved_graph_marking_an_older_version_latest_is_refused(tmp_path: Path) -> None:
    """As one whose Author's paperCount is below its edges: opening it refuses it, saving it
    is refused. A newest version not marked is taken: an export of a part of a database keeps
    the database's isLatest (its newer version may not be in the part)."""

    def mark(papers: dict[str, dict[str, Any]]) -> None:
        papers["2406.00040 v2"]["isLatest"] = True

    with pytest.raises(UsageError, match="isLatest is true, but 'pith:"):
        MemoryStore.open(_saved(tmp_path / "a", mark))
    store = MemoryStore()
    load(store, tmp_path, [bundle(_version("2406.00041", v)) for v in (1, 2)])
    older = next(data for _node, data in store.graph.nodes(data=True) if data.get("isLatest") is False)
    older["isLatest"] = True
    with pytest.raises(StoreError) as refused:
        store.save(tmp_path / "edited.json")
    assert refused.value.code is StoreErrorCode.HAND_EDITED and "isLatest is true" in str(refused.value)

    def unmark(papers: dict[str, dict[str, Any]]) -> None:
        papers["2406.00040 v3"]["isLatest"] = False

    assert not any(latest(MemoryStore.open(_saved(tmp_path / "b", unmark))).values())


def test_a_higher_ranked_signer_displacing_the_newest_turns_its_version_on(
    store: GraphStore, tmp_path: Path
) -> None:
    """BUILDER (ranked below SIGNER) holds v1 and v2; SIGNER's v1 takes over v1 (one pith
    number) and displaces v2 (one signer's papers per id): v1 is the id's newest now."""
    v1, v2 = _version("2406.00050", 1), _version("2406.00050", 2)
    load(store, tmp_path, [orjson.dumps(build_bundle(p, BUILDER)) for p in (v1, v2)])
    assert latest(store) == {"2406.00050 v1": False, "2406.00050 v2": True}
    report = load(store, tmp_path, [bundle(v1)])
    assert (report.replaced, report.displaced) == (1, 1)
    assert latest(store) == {"2406.00050 v1": True}


@pytest.mark.neo4j
def test_neo4j_a_prune_beside_a_load_of_the_same_ids_leaves_one_newest(
    neo4j_server: Any, tmp_path: Path
) -> None:
    """A removal takes each source's lock alias before it decides the newest: with a load of
    new versions of the same ids committing meanwhile, every id ends with its newest alone."""
    ids = [f"2406.{70 + i:05d}" for i in range(24)]
    with neo4j_server.connect() as store, neo4j_server.connect() as other:
        store.clear()
        load(store, tmp_path, [bundle(_version(i, v)) for i in ids for v in (1, 2)])
        newer = [bundle(_version(i, 3)) for i in ids]
        doomed = [_pith(_version(i, 2)) for i in ids]
        pruning = threading.Thread(target=lambda: [other.remove_papers(doomed[k::4]) for k in range(4)])
        pruning.start()
        load(store, tmp_path, newer, batch_size=3)
        pruning.join()
        assert latest(store) == {f"{i} v{v}": v == 3 for i in ids for v in (1, 3)}
        store.clear()
