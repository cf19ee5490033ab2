"""A load or a removal beside a writer of another signer sharing authors, driven step by step
on a real Neo4j: each locks every author it touches in ``nameKey`` order (a load's
MERGE_AUTHORS order) before it deletes any edge. Those of the papers it detached were locked
later, in elementId order (DELETE_ORPHANS), so a writer holding one author (locked in
``nameKey`` order) and then locking the next deadlocked with it (before 0.9.7; one of the
two was retried)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import neo4j
import orjson
import pytest
from test_neo4j_atomicity import _blocked
from test_store_behaviour import KEYRING, bundle, load, spec

from pith_graph.loader.rows import build_rows
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.verify import verify_bundle

pytestmark = pytest.mark.neo4j

#: The stored paper's authors, in nameKey order; a rebuild of it drops the first. Each has a
#: paper of its own, loaded before it, last first: so their elementIds, the order
#: DELETE_ORPHANS took, are not in nameKey order (in a cleared database, the reverse).
AUTHORS = ("Ann Lee", "Bo Chen", "Cy Dunn")
#: A later build of the same record: the same pith, written again over the stored paper.
REBUILT = "2026-07-03T00:00:00Z"


def _author_keys(driver: neo4j.Driver) -> list[str]:
    found = driver.execute_query("MATCH (a:Author) RETURN a.nameKey AS key ORDER BY key").records
    return [record["key"] for record in found]


def _replace(db: Neo4jStore, tmp_path: Path) -> Callable[[], object]:
    return lambda: load(db, tmp_path, [bundle(spec(authors=AUTHORS[1:], built_at=REBUILT))])


def _remove(db: Neo4jStore, tmp_path: Path) -> Callable[[], object]:
    rows = build_rows(verify_bundle(orjson.loads(bundle(spec(authors=AUTHORS))), KEYRING), KEYRING)
    return lambda: db.remove_papers([rows.paper.pith_number])


@pytest.mark.parametrize("write", [_replace, _remove], ids=["load", "removal"])
def test_a_write_locks_the_authors_it_detaches_in_name_key_order(
    db: Neo4jStore,
    driver: neo4j.Driver,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    write: Callable[[Neo4jStore, Path], Callable[[], object]],
) -> None:
    """Another signer's load holds the first author (by nameKey) of a stored paper, as its
    MERGE_AUTHORS would, while this source's load replaces the paper with one without that
    author (or a prune removes it); then it locks the paper's other authors. The write waits
    for the first with the others unlocked. It had locked them first: the load merged its own
    authors and then judged the one it dropped (DELETE_ORPHANS), the removal judged them all
    in elementId order; and one of the two deadlocked."""
    for number, name in enumerate(reversed(AUTHORS), 2):  # created in reverse nameKey order
        load(db, tmp_path, [bundle(spec(f"2401.{number:05d}", authors=[name]))])
    load(db, tmp_path, [bundle(spec(authors=AUTHORS))])
    first, *others = _author_keys(driver)
    caplog.set_level(logging.WARNING, "pith_graph.loader.stores.neo4j")
    errors: list[Exception] = []
    with driver.session() as session, session.begin_transaction(timeout=60) as other:
        other.run("MATCH (a:Author {nameKey: $key}) SET a._lock = true", key=first).consume()
        writer = threading.Thread(target=write(db, tmp_path))
        writer.start()
        try:
            assert _blocked(driver), "the write never waited for the author's lock"
            try:
                other.run(
                    "MATCH (a:Author) WHERE a.nameKey IN $keys SET a._lock = true", keys=others
                ).consume()
            except neo4j.exceptions.Neo4jError as error:
                errors.append(error)
            finally:
                other.rollback()
        finally:
            writer.join(60)
    assert not writer.is_alive()
    assert not errors, f"the other signer's load deadlocked with the write: {errors[0]}"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], "the write was retried"
    assert _author_keys(driver) == [first, *others]  # each has a paper of its own
    found = "MATCH (p:Paper {sourceId: '2401.00001'}) RETURN p.builtAt AS builtAt"
    papers = [record["builtAt"] for record in driver.execute_query(found).records]
    assert papers == ([REBUILT] if write is _replace else [])
