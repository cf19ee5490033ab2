"""A removal (``pith-graph prune``) beside a load of the same source ids or signers, each
interleaving driven step by step on a real Neo4j: what deadlocked (and was retried, about a
second lost) before 0.9.5 now waits its turn."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import neo4j
import orjson
import pytest
from test_neo4j_atomicity import _blocked
from test_store_behaviour import KEYRING, SIGNER, bundle, load, spec

from pith_graph.loader.rows import build_rows
from pith_graph.loader.stores import cypher
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.verify import verify_bundle

pytestmark = pytest.mark.neo4j

SOURCE = "2401.00001"


def _pith(version: int) -> str:
    return str(
        build_rows(
            verify_bundle(orjson.loads(bundle(spec(version=version))), KEYRING), KEYRING
        ).paper.pith_number
    )


def test_a_load_waits_for_a_prune_that_deletes_the_emptied_sources_lock_alias(
    db: Neo4jStore, driver: neo4j.Driver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A prune holds the source's lock alias and removes its last paper, deleting the alias (an
    orphan), then refreshes the source's isLatest; a load of the source waits for it. The
    load's MERGE of the alias held its unique index entry (shared) while it waited, and the
    refresh's seek of the deleted entry needs it exclusively: DeadlockDetected, one retried."""
    load(db, tmp_path, [bundle(spec())])
    caplog.set_level(logging.WARNING, "pith_graph.loader.stores.neo4j")
    errors: list[Exception] = []
    with driver.session() as session, session.begin_transaction(timeout=60) as prune:
        prune.run("MATCH (a:Alias {kind: 'arxiv', value: $id}) SET a._lock = true", id=SOURCE).consume()
        loader = threading.Thread(target=lambda: load(db, tmp_path, [bundle(spec(version=2))]))
        loader.start()
        try:
            assert _blocked(driver), "the load never waited for the source's lock"
            try:
                prune.run("MATCH (p:Paper) DETACH DELETE p").consume()
                prune.run("MATCH (n) WHERE NOT (n)--() DELETE n").consume()
                prune.run(cypher.REFRESH_LATEST, sources=[["arxiv", SOURCE]]).consume()  # as a removal ends
                prune.commit()
            except neo4j.exceptions.Neo4jError as error:
                errors.append(error)
        finally:
            loader.join(60)
    assert not errors, f"the prune deadlocked with the waiting load: {errors[0]}"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], "the load was retried"
    assert [
        r["pith"] for r in driver.execute_query("MATCH (p:Paper) RETURN p.pithNumber AS pith").records
    ] == [_pith(2)]
    alias = "MATCH (a:Alias {kind: 'arxiv', value: $id}) RETURN count(a) AS n"
    assert driver.execute_query(alias, id=SOURCE).records[0]["n"] == 1


def test_a_removal_leaves_a_paper_written_after_it_read_its_papers_sources(
    db: Neo4jStore, driver: neo4j.Driver
) -> None:
    """A removal reads its papers' sources, locks them, then the papers. A paper a load wrote
    in between (here: an open transaction that holds the source and creates it) has a source
    the removal does not hold: it was locked and removed all the same, beside the next load of
    that source, unserialised (both deleting the same authors' edges: deadlocks). It is left
    now, for the prune to judge again (it reads the papers again when one was not removed),
    and the removal does not wait for it (its pith's index entry, which a removal's write
    statement locked, is only read)."""
    pith = _pith(1)
    with driver.session() as session, session.begin_transaction(timeout=60) as writer:
        writer.run(
            "CREATE (:Alias {kind: 'arxiv', value: $id})-[:IDENTIFIES]->"
            "(:Paper {pithNumber: $pith, sourceKind: 'arxiv', sourceId: $id, sourceVersion: 1,"
            " builtAt: '2026-07-02T00:00:00Z', keyIds: ['k']})",
            id=SOURCE,
            pith=pith,
        ).consume()
        removed: list[list[str]] = []
        remover = threading.Thread(target=lambda: removed.append(db.remove_papers([pith])))
        remover.start()
        try:
            remover.join(10)  # it reads no paper there yet, and needs none of the writer's locks
        finally:
            writer.commit()
            remover.join(60)
    assert removed == [[]]
    assert driver.execute_query("MATCH (p:Paper) RETURN count(p) AS n").records[0]["n"] == 1
    assert db.remove_papers([pith]) == [pith]  # read again, with its source locked


def test_a_removal_locks_its_papers_signers_before_their_authors(
    db: Neo4jStore, driver: neo4j.Driver, tmp_path: Path
) -> None:
    """A load locks its signers, then its authors (LOCK_SIGNERS, MERGE_AUTHORS). A removal of
    another source's paper by the same signer and authors locked the authors first (deleting
    their edges, judging orphans) and the signer after: with a load holding the signer and
    about to lock the authors, one of the two deadlocked. Here a load's open batch holds the
    signer: the removal waits for it with the authors still unlocked."""
    load(db, tmp_path, [bundle(spec())])
    pith = _pith(1)
    with driver.session() as session, session.begin_transaction(timeout=60) as holding:
        holding.run("MATCH (s:Signer {signerId: $id}) SET s._lock = true", id=SIGNER.signer_id).consume()
        removed: list[list[str]] = []
        remover = threading.Thread(target=lambda: removed.append(db.remove_papers([pith])))
        remover.start()
        try:
            assert _blocked(driver), "the removal never waited for the signer's lock"
            with driver.session() as probe_session:
                probe = probe_session.begin_transaction(timeout=3)
                try:
                    probe.run("MATCH (a:Author) SET a._probe = true").consume()
                except neo4j.exceptions.Neo4jError as error:
                    pytest.fail(f"the removal locked the authors before the signer: {error.code}")
                finally:
                    probe.close()
        finally:
            holding.rollback()
            remover.join(60)
    assert removed == [[pith]]
