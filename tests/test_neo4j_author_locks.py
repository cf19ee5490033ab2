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
from typing import Any

import neo4j
import orjson
import pytest
from test_neo4j_atomicity import _blocked
from test_store_behaviour import BUILDER, KEYRING, bundle, load, spec

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


def _interleaved(
    driver: neo4j.Driver,
    write: Callable[[], object],
    held: tuple[str, dict[str, Any]],
    then: tuple[str, dict[str, Any]],
) -> list[Exception]:
    """Another transaction runs ``held``; ``write`` starts and waits for it; then the other
    runs ``then`` and rolls back. What the other was refused (a deadlock), if anything."""
    errors: list[Exception] = []
    with driver.session() as session, session.begin_transaction(timeout=60) as other:
        other.run(held[0], held[1]).consume()
        writer = threading.Thread(target=write)
        writer.start()
        try:
            assert _blocked(driver), "the write never waited for the lock held"
            try:
                other.run(then[0], then[1]).consume()
            except neo4j.exceptions.Neo4jError as error:
                errors.append(error)
            finally:
                other.rollback()
        finally:
            writer.join(60)
    assert not writer.is_alive()
    return errors


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
    errors = _interleaved(
        driver,
        write(db, tmp_path),
        ("MATCH (a:Author {nameKey: $key}) SET a._lock = true", {"key": first}),
        ("MATCH (a:Author) WHERE a.nameKey IN $keys SET a._lock = true", {"keys": others}),
    )
    assert not errors, f"the other signer's load deadlocked with the write: {errors[0]}"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], "the write was retried"
    assert _author_keys(driver) == [first, *others]  # each has a paper of its own
    found = "MATCH (p:Paper {sourceId: '2401.00001'}) RETURN p.builtAt AS builtAt"
    papers = [record["builtAt"] for record in driver.execute_query(found).records]
    assert papers == ([REBUILT] if write is _replace else [])


def test_a_load_locks_a_displaced_bundles_co_signer_with_its_own_signers(
    db: Neo4jStore, driver: neo4j.Driver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The stored paper is co-signed by the builder; its rebuild is not. Another writer holds
    the builder (its LOCK_SIGNERS), then locks the paper's author (its MERGE_AUTHORS). The
    rebuild waits for the builder with the author unlocked: it locked the builder only when
    detaching the paper (its SIGNED edge), after the authors, and one of the two deadlocked
    (review R2, 0.9.7)."""
    load(db, tmp_path, [bundle(spec(), extra=BUILDER)])
    signed = "MATCH (s:Signer)-[:SIGNED]->(:Paper) RETURN s.signerId AS id ORDER BY id"
    assert [r["id"] for r in driver.execute_query(signed).records] == ["behaviour.invalid", "builder.invalid"]
    caplog.set_level(logging.WARNING, "pith_graph.loader.stores.neo4j")
    errors = _interleaved(
        driver,
        lambda: load(db, tmp_path, [bundle(spec(built_at=REBUILT))]),
        ("MATCH (s:Signer {signerId: 'builder.invalid'}) SET s._lock = true", {}),
        ("MATCH (a:Author) SET a._lock = true", {}),
    )
    assert not errors, f"the other writer deadlocked with the load: {errors[0]}"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], "the load was retried"
    assert [r["id"] for r in driver.execute_query(signed).records] == ["behaviour.invalid"]
    kinds = "MATCH (s:Signer) RETURN s.signerId AS id, s.signerType AS type ORDER BY id"
    assert all(r["type"] is not None for r in driver.execute_query(kinds).records)  # types kept


@pytest.mark.parametrize(
    "node",
    [
        pytest.param("CREATE (:Author {nameKey: 7})-[:AUTHORED]->(p)", id="author-number-key"),
        pytest.param("CREATE (p)-[:IN_CATEGORY]->(:Category {code: 7})", id="category-number-code"),
    ],
)
@pytest.mark.parametrize("write", ["rebuild", "removal"])
def test_an_analysts_node_keyed_by_a_number_does_not_stop_a_write(
    db: Neo4jStore, driver: neo4j.Driver, tmp_path: Path, node: str, write: str
) -> None:
    """Such a node is not the graph's: the lock step leaves it out (the first 0.9.7 commits
    sorted its number among the keys, TypeError, or took an author's for a category's)."""
    load(db, tmp_path, [bundle(spec())])
    driver.execute_query(f"MATCH (p:Paper) {node}")
    if write == "rebuild":
        assert load(db, tmp_path, [bundle(spec(built_at=REBUILT))]).replaced == 1
    else:
        rows = build_rows(verify_bundle(orjson.loads(bundle(spec())), KEYRING), KEYRING)
        assert db.remove_papers([rows.paper.pith_number]) == [rows.paper.pith_number]
