"""A Neo4j load decides ``Paper.isLatest`` in its batch's transaction from what it read under
its sources' locks (``neo4j_latest.latest_updates``; since 0.9.5), where it ran
``cypher.REFRESH_LATEST`` after its writes: the same flags, written where they change, and
REFRESH_LATEST still for a source whose papers Python cannot order as Cypher does."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_store_behaviour import bundle, load, spec

from pith_graph.loader.stores import cypher
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_latest import latest_updates
from pith_graph.loader.stores.rules import SourceKey

A: SourceKey = ("arxiv", "2401.00001")
B: SourceKey = ("arxiv", "2401.00002")


@dataclass(frozen=True)
class Row:
    """What latest_updates reads of a written bundle."""

    pith_number: str
    source_version: int
    built_at: str
    source: SourceKey = A
    bundle_sha256: str = ""
    bundle_key_id: str = ""


def test_a_new_version_is_latest_and_the_stored_one_turns_off() -> None:
    updates = latest_updates({A: [["p1", 1, "2026-01-01", True]]}, [Row("p2", 2, "2026-01-01")], [])
    assert (updates.written, updates.stored, updates.refresh) == ({"p2": True}, [["p1", False]], [])


def test_an_older_version_written_is_not_latest_and_nothing_stored_changes() -> None:
    updates = latest_updates({A: [["p2", 2, "2026-01-01", True]]}, [Row("p1", 1, "2026-01-01")], [])
    assert (updates.written, updates.stored) == ({"p1": False}, [])


def test_removing_the_newest_turns_the_one_before_on() -> None:
    stored = {A: [["p1", 1, "2026-01-01", False], ["p2", 2, "2026-01-01", True]]}
    updates = latest_updates(stored, [], ["p2"])
    assert (updates.written, updates.stored) == ({}, [["p1", True]])


def test_a_paper_rewritten_is_ranked_as_written_and_a_missing_flag_is_set() -> None:
    stored = {A: [["p1", 1, "2026-01-01", None], ["p2", 3, "2026-01-01", None]], B: [["q1", 1, "x", None]]}
    updates = latest_updates(stored, [Row("p2", 2, "2026-01-02")], [])  # p2 rebuilt as version 2
    assert (updates.written, updates.stored) == ({"p2": True}, [["p1", False], ["q1", True]])


def test_papers_without_a_build_time_are_not_ranked() -> None:
    stored = {A: [["analyst", 9, None, "odd"], ["", 8, "2026", None], ["p1", 1, "2026", False]]}
    assert latest_updates(stored, [], []).stored == [["p1", True]]


def test_a_source_python_cannot_order_as_cypher_is_left_to_refresh_latest() -> None:
    odds = (
        ["p0", "9", "2026", None],
        ["p0", 9, "2026-é", None],
        [["p0"], 9, "2026", None],
        ["p0", True, "x", 0],
    )
    for odd in odds:
        stored = {A: [odd, ["p1", 1, "2026", False]], B: [["q1", 1, "2026", False]]}
        updates = latest_updates(stored, [Row("p2", 2, "2026")], [])
        assert (updates.written, updates.stored, updates.refresh) == ({}, [["q1", True]], [list(A)])


@pytest.mark.parametrize("number", [1, 0, 1.0, 0.0])
def test_a_flag_an_analyst_stored_as_a_number_is_written_as_a_boolean(number: float) -> None:
    """``1 == True`` in Python, not in Cypher: ``p.isLatest = true`` (the API's filter) is false
    for a stored 1, so a 1 left in place would leave the source without a latest paper
    (REFRESH_LATEST rewrites it: ``1 <> true``)."""
    stored = {A: [["p1", 1, "2026-01-01", number], ["p2", 2, "2026-01-01", number]]}
    updates = latest_updates(stored, [Row("p0", 1, "2025-01-01")], [])
    assert sorted(updates.stored) == [["p1", False], ["p2", True]]
    assert updates.written == {"p0": False}


def test_the_flags_are_those_of_the_newest_version_order() -> None:
    """Random sources: exactly one paper per source is latest, the greatest (version, builtAt, pith)."""
    draw = random.Random(5)
    for _ in range(300):
        count = draw.randint(1, 6)
        papers = {f"p{n}": (draw.randint(1, 3), f"2026-0{draw.randint(1, 3)}", f"p{n}") for n in range(count)}
        stored = [
            [pith, *key[:2], draw.choice([True, False, None])]
            for pith, key in papers.items()
            if draw.random() < 0.6
        ]
        written = [Row(pith, key[0], key[1]) for pith, key in papers.items() if draw.random() < 0.4]
        removed = [
            p[0] for p in stored if draw.random() < 0.2 and p[0] not in {r.pith_number for r in written}
        ]
        updates = latest_updates({A: stored}, written, removed)
        after = {p[0]: p[3] for p in stored if p[0] not in removed} | updates.written
        after |= dict(updates.stored)
        held = {p[0] for p in stored if p[0] not in removed} | {r.pith_number for r in written}
        if held:
            newest = max(held, key=papers.__getitem__)
            assert after == {pith: pith == newest for pith in held}
            assert all(flag != next(p[3] for p in stored if p[0] == pith) for pith, flag in updates.stored)


def _flags(db: Neo4jStore) -> dict[str, Any]:
    return dict(
        db.read(
            lambda tx: [tuple(r) for r in tx.run("MATCH (p:Paper) RETURN p.pithNumber, p.isLatest")], "read"
        )
    )


def test_a_loads_flags_are_refresh_latests(neo4j_server: Any, tmp_path: Path) -> None:
    """Versions loaded out of order, in batches, beside an analyst's papers of the same source
    id (one Python cannot order: a version as text): each load leaves the flags REFRESH_LATEST
    would set, and running it after changes none."""
    db: Neo4jStore = neo4j_server.connect()
    try:
        db.clear()
        db.ensure_schema()
        analyst = "CREATE (:Paper {pithNumber: $pith, sourceKind: 'arxiv', sourceId: $id, sourceVersion: $v, builtAt: 'x'})"
        with db.driver.session() as session:
            session.run(analyst, pith="analyst-a", id="2401.00003", v="2").consume()
            session.run(analyst, pith="analyst-b", id="2401.00004", v=1).consume()
        sources = [["arxiv", f"2401.0000{n}"] for n in range(1, 5)]
        for versions in ([2, 1], [3], [1, 4], [5, 2]):
            papers = [spec(f"2401.0000{n}", version=v, title=f"v{v}") for n in range(1, 5) for v in versions]
            load(db, tmp_path, [bundle(p) for p in papers], batch_size=3)
            flags = _flags(db)
            assert sum(flag is True for flag in flags.values()) == 4
            with db.driver.session() as session:
                session.run(cypher.REFRESH_LATEST, sources=sources).consume()
            assert _flags(db) == flags
    finally:
        db.close()
