"""A node deleted while a write waited for its lock, on a real Neo4j: the server grants the
lock on a node the transaction holding it deleted, without an error, and then reads it as
deleted (a MATCH finds nothing). Each interleaving is driven step by step, a plain
transaction standing for the other writer (a prune deleting an orphan)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import neo4j
import orjson
import pytest
from test_neo4j_atomicity import _blocked
from test_store_behaviour import KEYRING, bundle, load, spec

from pith_graph.loader.rows import build_rows
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.verify import verify_bundle

pytestmark = pytest.mark.neo4j

FIRST, SECOND = "2401.00001", "2401.00002"
EDGES = (
    "MATCH (p:Paper {sourceId: $id}) "
    "RETURN [(a:Author)-[:AUTHORED]->(p) | a.nameKey] AS authors, p.authorNames AS names"
)
PAPERS = "MATCH (p:Paper) RETURN p.sourceId AS id ORDER BY id"


def _pith(arxiv_id: str) -> str:
    verified = verify_bundle(orjson.loads(bundle(spec(arxiv_id))), KEYRING)
    return str(build_rows(verified, KEYRING).paper.pith_number)


def test_a_load_writes_again_an_author_deleted_while_it_waited_for_it(
    db: Neo4jStore, driver: neo4j.Driver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another writer (a prune's DELETE_ORPHANS) holds an author and deletes it; a load naming
    that author waits in MERGE_AUTHORS, which found it, and is then granted the lock on the
    deleted node. Its WRITE_PAPERS matched no author: the paper was written without the edge,
    reported inserted, and loading it again found it a duplicate. The load now sees the edge
    missing and runs the batch again, which creates the author."""
    load(db, tmp_path, [bundle(spec(FIRST, authors=("Aaa Abe", "Bo Chen")))])
    caplog.set_level(logging.INFO, "pith_graph.loader.stores.neo4j")
    reports: list[Any] = []
    with driver.session() as session, session.begin_transaction(timeout=60) as prune:
        prune.run("MATCH (a:Author {nameKey: 'aaa abe'}) SET a._lock = true").consume()
        loader = threading.Thread(
            target=lambda: reports.append(load(db, tmp_path, [bundle(spec(SECOND, authors=("Aaa Abe",)))]))
        )
        loader.start()
        try:
            assert _blocked(driver), "the load never waited for the author's lock"
            prune.run("MATCH (a:Author {nameKey: 'aaa abe'}) DETACH DELETE a").consume()
            prune.commit()
        finally:
            loader.join(60)
    assert [report.inserted for report in reports] == [1]
    written = driver.execute_query(EDGES, id=SECOND).records
    assert [(r["authors"], r["names"]) for r in written] == [(["aaa abe"], ["Aaa Abe"])]
    count = "MATCH (a:Author {nameKey: 'aaa abe'}) RETURN a.paperCount AS n"
    assert [r["n"] for r in driver.execute_query(count).records] == [1]
    assert any("raced a concurrent writer" in r.getMessage() for r in caplog.records)


def test_a_removal_leaves_a_source_whose_lock_alias_was_deleted_while_it_waited(
    db: Neo4jStore, driver: neo4j.Driver, tmp_path: Path
) -> None:
    """A removal of two papers waits for the first one's source alias, which another writer
    (a prune that emptied the source) holds and deletes; granted the lock on the deleted
    alias, it then waits for the second source. Meanwhile a load writes the first paper again,
    under a new alias the removal does not hold. The removal removed it all the same, beside
    any transaction holding that new alias; it now removes only the paper whose source it holds
    (the prune judges the other again)."""
    load(db, tmp_path, [bundle(spec(FIRST)), bundle(spec(SECOND))])
    lock = "MATCH (a:Alias {kind: 'arxiv', value: $id}) SET a._lock = true"
    removed: list[list[str]] = []
    with (
        driver.session() as first_session,
        driver.session() as second_session,
        first_session.begin_transaction(timeout=60) as prune,
        second_session.begin_transaction(timeout=60) as holding,
    ):
        prune.run(lock, id=FIRST).consume()
        holding.run(lock, id=SECOND).consume()
        remover = threading.Thread(
            target=lambda: removed.append(db.remove_papers([_pith(FIRST), _pith(SECOND)]))
        )
        remover.start()
        try:
            assert _blocked(driver), "the removal never waited for the first source's alias"
            prune.run("MATCH (p:Paper {sourceId: $id}) DETACH DELETE p", id=FIRST).consume()
            prune.run("MATCH (a:Alias {kind: 'arxiv', value: $id}) DETACH DELETE a", id=FIRST).consume()
            prune.commit()
            assert _blocked(driver), "the removal never waited for the second source's alias"
            load(db, tmp_path, [bundle(spec(FIRST))])  # written again, under a new alias
            holding.commit()
        finally:
            remover.join(60)
    assert removed == [[_pith(SECOND)]]
    assert [r["id"] for r in driver.execute_query(PAPERS).records] == [FIRST]
