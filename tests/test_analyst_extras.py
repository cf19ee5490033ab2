"""A Neo4j database an analyst also works in: their own indexes, nodes, labels,
relationships and properties beside the graph's (README "What lands in Neo4j").

Loads keep what is theirs and never let it change the graph; exports leave it out; an index
of theirs that stands where one of the graph's must be is named, not passed over in silence.
Each test leaves the session's server with the graph's indexes and none of its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import networkx as nx
import orjson
import pytest
from neo4j.exceptions import Neo4jError

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.export import Selection, export_subgraph
from pith_graph.loader.facade import SAMPLES, load_graph, resolve_keyring
from pith_graph.loader.keyring import PinnedKey
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores import cypher
from pith_graph.loader.stores.memory import MemoryStore, open_graph
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_schema import schema_problems
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, run_cli

pytestmark = pytest.mark.neo4j

SIGNER = SignerIdentity.from_seed(b"analyst-extras", key_id="x-key", signer_id="x.example")
SAMPLE_KEYS = resolve_keyring()
KEYRING = resolve_keyring([PinnedKey(SIGNER.key_id, SIGNER.public_key, SIGNER.signer_id)])
V1 = PaperSpec.example("2403.00001", title="Kept by the analyst", authors=["Lone Author", "Kim Q"])
OTHER = replace(V1, arxiv_id="2403.00002", title="Another", authors=["Kim Q"])


@pytest.fixture
def neo4j(neo4j_server: Any) -> Iterator[Neo4jStore]:
    store: Neo4jStore = neo4j_server.connect()
    store.clear()
    graphs = _schema(store)
    try:
        yield store
    finally:
        _cypher(store, "MATCH (n) DETACH DELETE n")
        for row in _cypher(store, "SHOW INDEXES YIELD name, owningConstraint WHERE name STARTS WITH 'my_'"):
            kind = "CONSTRAINT" if row["owningConstraint"] else "INDEX"
            _cypher(store, f"DROP {kind} {row['owningConstraint'] or row['name']} IF EXISTS")
        if _schema(store) != graphs:  # most tests leave it alone: ~0.2 s of planning saved each
            store.ensure_schema()  # the graph's indexes back, for the next test
        store.close()


def _schema(store: Neo4jStore) -> list[dict[str, Any]]:
    """Every index and constraint as it stands, whatever of it ``ensure_schema`` looks at."""
    indexes = "SHOW INDEXES YIELD name, type, entityType, labelsOrTypes, properties, state, owningConstraint"
    constraints = "SHOW CONSTRAINTS YIELD name, type, entityType, labelsOrTypes, properties, ownedIndex"
    rows = _cypher(store, indexes + " RETURN * ORDER BY name")
    return rows + _cypher(store, constraints + " RETURN * ORDER BY name")


def _cypher(store: Neo4jStore, statement: str, **params: Any) -> list[dict[str, Any]]:
    with store.driver.session(database=store.database) as session:
        return session.run(statement, **params).data()


def _index_names(store: Neo4jStore) -> set[str]:
    return {row["name"] for row in _cypher(store, "SHOW INDEXES YIELD name")}


# -- indexes -----------------------------------------------------------------------------------


def test_an_analysts_full_text_index_in_place_of_the_graphs_is_refused_by_name(neo4j: Neo4jStore) -> None:
    _cypher(neo4j, "DROP INDEX paper_title_fulltext")
    _cypher(neo4j, "CREATE FULLTEXT INDEX my_title_ft FOR (n:Paper) ON EACH [n.title]")
    with pytest.raises(StoreError) as caught:
        neo4j.ensure_schema()
    assert caught.value.code == "write_failed"
    assert caught.value.message == (
        "paper_title_fulltext is missing: my_title_ft stands in its place: DROP INDEX my_title_ft, "
        "then run pith-graph schema"
    )
    _cypher(neo4j, "DROP INDEX my_title_ft")
    neo4j.ensure_schema()
    assert "paper_title_fulltext" in _index_names(neo4j)


def test_an_equivalent_range_index_of_another_name_is_a_warning(
    neo4j: Neo4jStore, caplog: pytest.LogCaptureFixture
) -> None:
    _cypher(neo4j, "DROP INDEX paper_license_index")
    _cypher(neo4j, "CREATE INDEX my_license FOR (n:Paper) ON (n.license)")
    with caplog.at_level(logging.WARNING):
        neo4j.ensure_schema()
    assert (
        "paper_license_index is missing: my_license (range index on Paper(license)) serves in its place"
        in caplog.text
    )
    assert run([str(SAMPLES)], keyring=SAMPLE_KEYS, store=neo4j, workers=1).inserted == 3  # loads as before


def test_a_range_index_in_place_of_a_uniqueness_constraint_is_refused(neo4j: Neo4jStore) -> None:
    _cypher(neo4j, "DROP CONSTRAINT signer_signerid_unique")
    _cypher(neo4j, "CREATE INDEX my_signers FOR (n:Signer) ON (n.signerId)")
    with pytest.raises(StoreError) as caught:
        neo4j.ensure_schema()
    assert caught.value.message == (
        "signer_signerid_unique is missing: my_signers stands in its place: DROP INDEX my_signers, "
        "then run pith-graph schema"
    )


def test_a_failed_index_of_an_analysts_does_not_hold_loads_back(neo4j: Neo4jStore) -> None:
    _cypher(neo4j, "CREATE (:Scratch {blob: $blob})", blob="x" * 40_000)
    _cypher(neo4j, "CREATE INDEX my_blob FOR (n:Scratch) ON (n.blob)")
    states: list[dict[str, Any]] = []
    for _ in range(100):
        states = _cypher(neo4j, "SHOW INDEXES YIELD name, state WHERE name = 'my_blob' RETURN state")
        if states and states[0]["state"] != "POPULATING":
            break
        time.sleep(0.1)
    assert states == [{"state": "FAILED"}]
    neo4j.ensure_schema()  # was write_failed: it waited for every index, the failed one too
    assert run([str(SAMPLES)], keyring=SAMPLE_KEYS, store=neo4j, workers=1).inserted == 3


def test_a_retired_name_is_dropped_only_where_it_is_still_the_old_index(neo4j: Neo4jStore) -> None:
    _cypher(neo4j, "CREATE FULLTEXT INDEX author_name_fulltext FOR (n:Paper) ON EACH [n.abstractExcerpt]")
    neo4j.ensure_schema()
    assert "author_name_fulltext" in _index_names(neo4j)  # someone else's: kept
    _cypher(neo4j, "DROP INDEX author_name_fulltext")
    _cypher(neo4j, "CREATE FULLTEXT INDEX author_name_fulltext FOR (n:Author) ON EACH [n.name]")
    neo4j.ensure_schema()
    assert "author_name_fulltext" not in _index_names(neo4j)  # the graph's old one: dropped


def test_schema_problems_from_rows_of_show_indexes() -> None:
    errors, warnings = schema_problems([])
    assert len(errors) == 15 and warnings == []  # nothing there: every one of the graph's missing
    wrong = [
        {"name": "paper_license_index", "type": "RANGE", "labelsOrTypes": ["Paper"], "properties": ["doi"]}
    ]
    errors, _ = schema_problems(wrong)
    assert len(errors) == 15
    assert errors[9] == (
        "paper_license_index is not the graph's range index on Paper(license) but a range index on Paper(doi): "
        "DROP INDEX paper_license_index, then run pith-graph schema"
    )


# -- nodes, relationships and properties of an analyst's -------------------------------------


def _load(store: Neo4jStore | MemoryStore, folder: Path, *specs: PaperSpec) -> None:
    path = folder / f"{len(list(folder.iterdir()))}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(build_bundle(spec, SIGNER)) + b"\n" for spec in specs))
    report = run([str(path)], keyring=KEYRING, store=store, workers=1)
    assert report.rejected == 0


def _same(one: nx.DiGraph, other: nx.DiGraph) -> None:
    assert dict(one.nodes(data=True)) == dict(other.nodes(data=True))
    assert {(a, b): d for a, b, d in one.edges(data=True)} == {
        (a, b): d for a, b, d in other.edges(data=True)
    }


def test_exports_leave_out_what_is_an_analysts(neo4j: Neo4jStore) -> None:
    assert run([str(SAMPLES)], keyring=SAMPLE_KEYS, store=neo4j, workers=1).inserted == 3
    _cypher(neo4j, "CREATE (:Tag {name: 'todo'})")  # made export exit 70: KeyError 'Tag'
    _cypher(neo4j, "MATCH (p:Paper) WITH p LIMIT 1 CREATE (:Note {text: 'read'})-[:ABOUT]->(p)")
    _cypher(neo4j, "MATCH (p:Paper) SET p.myScore = 0.5")
    _cypher(
        neo4j,
        "MATCH (a:Paper), (b:Paper) WHERE a.pithNumber < b.pithNumber CREATE (a)-[:CITES {since: 2020}]->(b)",
    )
    _cypher(neo4j, "MATCH (a:Author) SET a:Favourite, a.orcid = '0000'")  # a label of theirs, and a property
    _cypher(neo4j, "MATCH (s:Signer)-[r:SIGNED]->() SET r.checked = true")
    expected, _ = load_graph([SAMPLES])
    _same(export_subgraph(neo4j), expected)
    memory = MemoryStore()
    run([str(SAMPLES)], keyring=SAMPLE_KEYS, store=memory, workers=1)
    assert neo4j.export() == memory.export()


#: An analyst's nodes of the graph's labels, each case: the statements that make them, and the
#: stub authors among them (an author export of each is empty).
STUBS = {
    # A stub (:Paper) of a cited work with no pithNumber, cited by a paper, and an (:Author)
    # with no nameKey: the stub paper made the whole export exit 3, "the database changed
    # under the export 5 times", and the stub author made Neo4jStore.export raise KeyError.
    "without-its-key": (
        [
            "MATCH (p:Paper) WITH p ORDER BY p.pithNumber LIMIT 1 "
            "CREATE (p)-[:CITES]->(:Paper {title: 'Attention is all you need', sourceId: '1706.03762'})",
            "CREATE (:Author {name: 'A. Reader'})",
        ],
        (),
    ),
    # A stub (:Paper {pithNumber}) cited by a paper, a lone (:Author {nameKey}), one that the
    # stub names and one that real papers name, a stub Signer and Category: they made
    # export exit 70, KeyError: 'bundleSha256' and KeyError: 'name'.
    "with-its-key-not-the-properties-the-graph-always-writes": (
        [
            "MATCH (p:Paper) WITH p ORDER BY p.pithNumber LIMIT 1 "
            "CREATE (p)-[:CITES]->(:Paper {pithNumber: 'pith:2099:STUB'})",
            "MERGE (:Author {nameKey: 'zz stub'})",
            "MATCH (p:Paper {pithNumber: 'pith:2099:STUB'}) CREATE (:Author {nameKey: 'yy stub'})-[:AUTHORED]->(p)",
            "MERGE (a:Author {nameKey: 'xx stub'}) WITH a MATCH (p:Paper) WHERE p.title IS NOT NULL "
            "CREATE (a)-[:AUTHORED]->(p)",
            "MERGE (:Signer {signerId: 'zz.example'}) MERGE (:Category {code: 'zz.ZZ'})",
        ],
        ("xx stub", "yy stub", "zz stub"),
    ),
}


@pytest.mark.parametrize("case", list(STUBS))
def test_a_node_of_the_graphs_label_without_what_the_graph_writes_is_the_analysts(
    neo4j: Neo4jStore, case: str
) -> None:
    """A node of one of the graph's labels without its key, or with it but without a
    property pith-graph always writes, is not the graph's: every export leaves it out."""
    statements, stub_authors = STUBS[case]
    assert run([str(SAMPLES)], keyring=SAMPLE_KEYS, store=neo4j, workers=1).inserted == 3
    part = export_subgraph(neo4j, Selection(category="cs.LG", submitted_from="2019-01-01"))
    for statement in statements:
        _cypher(neo4j, statement)
    expected, _ = load_graph([SAMPLES])
    _same(export_subgraph(neo4j), expected)
    _same(export_subgraph(neo4j, Selection(category="cs.LG", submitted_from="2019-01-01")), part)
    assert part.number_of_nodes() > 0
    for stub in stub_authors:
        assert export_subgraph(neo4j, Selection(author=stub)).number_of_nodes() == 0
    memory = MemoryStore()
    run([str(SAMPLES)], keyring=SAMPLE_KEYS, store=memory, workers=1)
    assert neo4j.export() == memory.export()


#: An analyst's stub (:Author) that `pith-graph schema` and `load`, bringing the authors of a
#: database before 0.3 up to date, must leave alone: the statement, and the stub's properties.
UPGRADE_STUBS = {
    # folded_name(None): both exited 70, "internal error: TypeError".
    "an-author-without-its-name": (
        "CREATE (:Author {nameKey: 'mallory attacker'})",
        {"nameKey": "mallory attacker"},
    ),
    # The upgrade matched it on a null nameKey, never changed it, and read it again: both
    # ran for ever (here, past the timeout).
    "an-author-without-its-key": ("CREATE (:Author {name: 'Some Person'})", {"name": "Some Person"}),
}


@pytest.mark.parametrize("case", list(UPGRADE_STUBS))
def test_schema_and_load_leave_an_analysts_stub_author_alone(
    neo4j_server: Any, neo4j: Neo4jStore, tmp_path: Path, case: str
) -> None:
    statement, props = UPGRADE_STUBS[case]
    _load(neo4j, tmp_path, V1)
    _cypher(neo4j, statement)
    bundles = tmp_path / "other.jsonl"
    bundles.write_bytes(orjson.dumps(build_bundle(OTHER, SIGNER)) + b"\n")
    keys = tmp_path / "keys.json"
    keys.write_bytes(orjson.dumps([SIGNER.keyring_entry()]))
    for command in (["schema"], ["load", str(bundles), "--trusted-keys", str(keys), "--backend", "neo4j"]):
        done = run_cli(*command, *neo4j_server.cli_args(), timeout=60)
        assert done.returncode == 0, done.stderr
    stubs = _cypher(
        neo4j, "MATCH (a:Author) WHERE a.nameKey IS NULL OR a.name IS NULL RETURN properties(a) AS p"
    )
    assert [row["p"] for row in stubs] == [props]
    expected, _ = load_graph([tmp_path / "0.jsonl", bundles], trusted_keys=KEYRING)
    _same(export_subgraph(neo4j), expected)


#: An analyst's stub (:Paper) with a key id of a key revoked, and the revocation: `prune` must
#: remove the graph's paper that key signed and leave the stub as it is.
PRUNE_STUBS = {
    # revoked_at compared with a null builtAt: exit 70, "TypeError: 'NoneType' object is not subscriptable".
    "without-builtAt-revoked-at": (
        "CREATE (:Paper {pithNumber: 'stub-2', keyIds: [$key]})",
        "2000-01-01T00:00:00Z",
    ),
    # The stub was removed as a paper of the graph's.
    "with-builtAt-revoked-at": (
        "CREATE (:Paper {pithNumber: 'stub-3', keyIds: [$key], builtAt: '2026-01-01T00:00:00Z'})",
        "2000-01-01T00:00:00Z",
    ),
    "without-builtAt-revoked": ("CREATE (:Paper {pithNumber: 'stub-4', keyIds: [$key]})", True),
}


@pytest.mark.parametrize("case", list(PRUNE_STUBS))
def test_prune_leaves_an_analysts_stub_paper_alone(
    neo4j_server: Any, neo4j: Neo4jStore, tmp_path: Path, case: str
) -> None:
    statement, revoked = PRUNE_STUBS[case]
    _load(neo4j, tmp_path, V1)
    _cypher(neo4j, statement, key=SIGNER.key_id)
    stub = _cypher(neo4j, "MATCH (p:Paper) WHERE p.title IS NULL RETURN properties(p) AS p")
    paper = _cypher(neo4j, "MATCH (p:Paper) WHERE p.title IS NOT NULL RETURN p.pithNumber AS pith")[0]["pith"]
    keys = tmp_path / "keys.json"
    keys.write_bytes(orjson.dumps([SIGNER.keyring_entry()]))
    revocation = "revoked_at" if isinstance(revoked, str) else "revoked"
    revocations = tmp_path / "revoked.json"
    revocations.write_bytes(orjson.dumps([{**SIGNER.keyring_entry(), revocation: revoked}]))
    args = [
        "--trusted-keys",
        str(keys),
        "--revoked-keys",
        str(revocations),
        "--json",
        *neo4j_server.cli_args(),
    ]
    for dry_run in (["--dry-run"], []):
        done = run_cli("prune", *args, *dry_run)
        assert done.returncode == 0, done.stderr
        assert orjson.loads(done.stdout)["removed"] == [paper]
    assert _cypher(neo4j, "MATCH (p:Paper) RETURN properties(p) AS p") == stub


def _load_two_signers(store: Neo4jStore, folder: Path) -> None:
    """The samples (signed by pith.science) and V1 (by x.example): a signer and a paper it
    did not sign, for an analyst's SIGNED between them."""
    assert run([str(SAMPLES)], keyring=SAMPLE_KEYS, store=store, workers=1).inserted == 3
    _load(store, folder, V1)


#: An analyst's relationships of the graph's types without a property pith-graph always
#: writes on them: not the graph's, as a node without one is, so every export leaves them
#: out. A SIGNED without keyIds made export exit 70 (KeyError: 'keyIds'); an IN_CATEGORY
#: without primary wrote a file serve --graph refused ("no primary").
EDGE_STUBS = {
    "signed-without-its-properties": "MATCH (s:Signer {signerId: 'x.example'}), (p:Paper) "
    "WHERE NOT (s)-[:SIGNED]->(p) CREATE (s)-[:SIGNED]->(p)",
    "signed-without-signedBundle": "MATCH (s:Signer {signerId: 'x.example'}), (p:Paper) "
    "WHERE NOT (s)-[:SIGNED]->(p) CREATE (s)-[:SIGNED {keyIds: ['x-key']}]->(p)",
    "in-category-without-primary": "MATCH (p:Paper), (c:Category) WHERE NOT (p)-[:IN_CATEGORY]->(c) "
    "CREATE (p)-[:IN_CATEGORY]->(c)",
}


@pytest.mark.parametrize("case", list(EDGE_STUBS))
def test_a_relationship_of_the_graphs_type_without_what_the_graph_writes_is_the_analysts(
    neo4j: Neo4jStore, tmp_path: Path, case: str
) -> None:
    """Every export (and Neo4jStore.export) is as before the analyst's relationships, and
    serve --graph opens the file written of it."""
    _load_two_signers(neo4j, tmp_path)
    selections = [
        Selection(),
        Selection(category="cs.LG"),
        Selection(category="cs.AI"),
        Selection(author="Kim Q"),
    ]
    before = [export_subgraph(neo4j, selection) for selection in selections]
    whole = neo4j.export()
    _cypher(neo4j, EDGE_STUBS[case])
    for selection, expected in zip(selections, before, strict=True):
        G = export_subgraph(neo4j, selection)
        _same(G, expected)
        MemoryStore(G).save(tmp_path / "export.json")  # and serve --graph opens what export writes
        _same(open_graph(tmp_path / "export.json"), expected)
    assert neo4j.export() == whole


#: Hand edits of the graph's own nodes and relationships (all their properties there, one
#: not as pith-graph writes it): export wrote a file serve --graph refused (or exited 70);
#: now it refuses, naming the node or edge, and writes nothing. Each case: the statement,
#: what the message says. Each edit is in the part an export of Kim Q's papers holds too.
HAND_EDITS = {
    "integer-as-string": (
        "MATCH (a:Author {nameKey: 'kim q'}) SET a.paperCount = '7'",
        "node 'Author:kim q': paperCount is not an integer: '7'",
    ),
    "integer-as-float": (
        "MATCH (a:Author {nameKey: 'kim q'}) SET a.paperCount = 7.0",
        "node 'Author:kim q': paperCount is not an integer: 7.0",
    ),
    "string-as-a-neo4j-datetime": (
        "MATCH (p:Paper {sourceId: '2403.00001'}) SET p.builtAt = datetime('2024-03-01T00:00:00Z')",
        "builtAt is not a string: neo4j.time.DateTime(2024, 3, 1",
    ),
    "integer-past-2**31-1": (
        "MATCH (a:Author {nameKey: 'kim q'}) SET a.paperCount = 2147483648",
        "node 'Author:kim q': paperCount is not from 0 to 2147483647: 2147483648",
    ),
    "list-as-string": (
        "MATCH (s:Signer {signerId: 'x.example'}) SET s.keyIds = 'x-key'",
        "node 'Signer:x.example': keyIds is not a list<string>: 'x-key'",
    ),
    "edge-list-as-string": (
        "MATCH (:Signer {signerId: 'x.example'})-[r:SIGNED]->() SET r.keyIds = 'x-key'",
        "keyIds is not a list<string>: 'x-key'",
    ),
    "edge-list-as-integer": (  # (exit 70 before: TypeError in the store the export made)
        "MATCH (:Signer {signerId: 'x.example'})-[r:SIGNED]->() SET r.keyIds = 5",
        "keyIds is not a list<string>: 5",
    ),
    "edge-boolean-as-string": (
        "MATCH (p:Paper {sourceId: '2403.00001'})-[r:IN_CATEGORY]->() SET r.primary = 'yes'",
        "primary is not a boolean: 'yes'",
    ),
    "a-whole-signed-of-a-key-its-signer-lacks": (
        "MATCH (s:Signer {signerId: 'pith.science'}), (p:Paper {sourceId: '2403.00001'}) "
        "CREATE (s)-[:SIGNED {keyIds: ['y-key'], signedBundle: false}]->(p)",
        "keys of its SIGNED edges",
    ),
    "count-below-its-edges": (
        "MATCH (a:Author {nameKey: 'kim q'}) SET a.paperCount = 0",
        "node 'Author:kim q': paperCount 0 is below its 1 AUTHORED edges",
    ),
    "an-authored-edge-deleted": (  # (its author left without papers: the paper is met first)
        "MATCH (:Author {nameKey: 'lone author'})-[r:AUTHORED]->() DELETE r",
        "its authorNames ['Lone Author', 'Kim Q'] are not the Authors of its AUTHORED edges",
    ),
}


@pytest.mark.parametrize("case", list(HAND_EDITS))
def test_a_hand_edit_serve_would_refuse_stops_the_export_in_one_line(
    neo4j_server: Any, neo4j: Neo4jStore, tmp_path: Path, case: str
) -> None:
    statement, problem = HAND_EDITS[case]
    _load_two_signers(neo4j, tmp_path)
    _cypher(neo4j, statement)
    for selection in [Selection(), Selection(author="Kim Q")]:
        with pytest.raises(StoreError) as refused:
            export_subgraph(neo4j, selection)
        assert refused.value.code == StoreErrorCode.HAND_EDITED
        assert problem in str(refused.value) and str(refused.value).endswith("fix it in the database")
    out = tmp_path / "out"
    out.mkdir()
    earlier = out / "graph.json"
    earlier.write_bytes(b"an earlier export")
    done = run_cli("export", "--save", str(earlier), *neo4j_server.cli_args())
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("pith-graph: store error: hand_edited: the database holds what pith-graph")
    assert problem in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert [p.name for p in out.iterdir()] == ["graph.json"] and earlier.read_bytes() == b"an earlier export"


def test_loads_keep_an_analysts_relationships_and_never_keep_the_graphs_orphans(
    neo4j: Neo4jStore, tmp_path: Path
) -> None:
    _load(neo4j, tmp_path, V1, OTHER)
    _cypher(neo4j, "MATCH (a:Author {nameKey: 'lone author'}) CREATE (:Note {text: 'ask'})-[:ABOUT]->(a)")
    _cypher(
        neo4j,
        "MATCH (a:Paper {sourceId: $a}), (b:Paper {sourceId: $b}) CREATE (a)-[:CITES]->(b)",
        a=OTHER.arxiv_id,
        b=V1.arxiv_id,
    )
    # The same paper rebuilt (same version, newer bundle) without its lone author: the
    # author goes (it had stayed, with paperCount 0, held by the analyst's note), the
    # note stays, and the analyst's citation of the rewritten paper survives.
    _load(neo4j, tmp_path, replace(V1, authors=["Kim Q"], built_at="2026-08-01T00:00:00Z"))
    assert _cypher(neo4j, "MATCH (a:Author {nameKey: 'lone author'}) RETURN a") == []
    assert _cypher(neo4j, "MATCH (n:Note) RETURN n.text AS text") == [{"text": "ask"}]
    assert len(_cypher(neo4j, "MATCH (:Paper)-[c:CITES]->(:Paper) RETURN c")) == 1
    memory = MemoryStore()
    _load(memory, tmp_path, V1, OTHER)
    _load(memory, tmp_path, replace(V1, authors=["Kim Q"], built_at="2026-08-01T00:00:00Z"))
    assert neo4j.export() == memory.export()


def test_an_orphan_given_an_edge_by_a_concurrent_loader_is_not_taken_with_it(neo4j: Neo4jStore) -> None:
    """Loader A rewrites a paper without its author X, so X looks orphaned, while loader B
    has given X an edge to another paper, not yet committed. A locks X before judging it, so
    it waits for B and then sees B's edge: X stays, with B's edge, as if B had loaded first.
    A DETACH DELETE (or a delete of whatever A saw after an unlocked check) took X with B's
    committed edge, without an error."""
    assert run([str(SAMPLES)], keyring=SAMPLE_KEYS, store=neo4j, workers=1).inserted == 3
    first, second = (
        row["p"] for row in _cypher(neo4j, "MATCH (p:Paper) RETURN p.pithNumber AS p ORDER BY p LIMIT 2")
    )
    _cypher(
        neo4j,
        "MATCH (p:Paper {pithNumber: $p}) CREATE (:Author {nameKey: 'race x', name: 'Race X', "
        "nameFolded: 'race x', paperCount: 1})-[:AUTHORED]->(p)",
        p=first,
    )
    with (
        neo4j.driver.session(database=neo4j.database) as b_session,
        neo4j.driver.session(database=neo4j.database) as a_session,
    ):
        b = b_session.begin_transaction()
        # B locks its authors first, as MERGE_AUTHORS does, then gives X its edge.
        b.run("MERGE (a:Author {nameKey: 'race x'}) SET a._lock = true REMOVE a._lock").consume()
        b.run(
            "MATCH (a:Author {nameKey: 'race x'}), (p:Paper {pithNumber: $p}) CREATE (a)-[:AUTHORED]->(p)",
            p=second,
        ).consume()
        a = a_session.begin_transaction()
        ids = [row["id"] for row in a.run(cypher.DETACH_PAPERS, piths=[first]) if row["nameKey"] == "race x"]
        failed: list[BaseException] = []

        def delete_orphans() -> None:
            try:
                a.run(cypher.DELETE_ORPHANS, ids=ids).consume()  # waits for B's lock on X
                a.commit()
            except Neo4jError as error:
                failed.append(error)

        thread = threading.Thread(target=delete_orphans)
        thread.start()
        time.sleep(0.5)
        b.commit()
        thread.join(timeout=30)
        assert not thread.is_alive() and failed == []
    found = _cypher(
        neo4j, "MATCH (:Author {nameKey: 'race x'})-[:AUTHORED]->(p) RETURN p.pithNumber AS p ORDER BY p"
    )
    assert [row["p"] for row in found] == [second]  # A's rewrite took its own edge; B's is kept
