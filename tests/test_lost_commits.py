"""What a batch retried after a lost commit reports (:class:`LostCommits`), without a server:
the attempts are played through the update rules against what each would find stored.
tests/test_neo4j_frozen.py cuts real connections; here are the cases its corpus lacks (a
paper displaced, a bundle another loader wrote meanwhile)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from neo4j.exceptions import IncompleteCommit, ServiceUnavailable

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.stores import neo4j as store_module
from pith_graph.loader.stores.base import AppliedBatch
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_retry import LostCommits
from pith_graph.loader.stores.rules import Outcome, StoredPaper, plan_batch

HIGH, LOW = "key-high", "key-low"


@dataclass(frozen=True)
class Row:
    """What the rules and :class:`LostCommits` read of a bundle."""

    pith_number: str
    bundle_sha256: str
    bundle_key_id: str = HIGH
    built_at: str = "2026-01-01T00:00:00Z"
    source: tuple[str, str] = ("arxiv", "2601.00001")
    source_version: int = 1


def rank(key_id: str) -> int:
    return {HIGH: 0, LOW: 1}[key_id]


def stored(row: Row) -> StoredPaper:
    """``row`` as a store holds it once written."""
    return StoredPaper(
        row.pith_number,
        row.source,
        row.source_version,
        row.built_at,
        row.bundle_sha256,
        row.bundle_key_id,
        (row.bundle_key_id,),
    )


def attempt(commits: LostCommits, batch: Sequence[Row], found: list[StoredPaper]) -> Any:
    """One attempt of ``batch`` against ``found``: what it reports, as _apply_batch does."""
    return commits.decide(batch, found, plan_batch(batch, found, rank))  # type: ignore[arg-type]


OLD = Row("pith-old", "d-old", LOW)  # a lower-ranked signer's paper of the source
NEW = Row("pith-new", "d-new")  # the batch's: takes the source over
TWIN = Row("pith-new", "d-new")  # the same bundle again, later in the batch


def test_a_lost_commit_that_landed_counts_as_what_it_did_inserted_and_displacing() -> None:
    commits = LostCommits()
    first = attempt(commits, [NEW, TWIN], [stored(OLD)])
    assert (first.outcomes, first.removed) == ([Outcome.INSERTED, Outcome.DUPLICATE], ["pith-old"])
    commits.commit_lost()
    retried = attempt(commits, [NEW, TWIN], [stored(NEW)])  # it landed: OLD gone, NEW stored
    assert (retried.outcomes, retried.removed) == (first.outcomes, first.removed)


def test_a_lost_commit_that_did_not_land_is_decided_again_with_the_same_report() -> None:
    commits = LostCommits()
    first = attempt(commits, [NEW, TWIN], [stored(OLD)])
    commits.commit_lost()
    retried = attempt(commits, [NEW, TWIN], [stored(OLD)])
    assert (retried.outcomes, retried.removed) == (first.outcomes, first.removed)


def test_lost_twice_the_first_landed_still_counts() -> None:
    commits = LostCommits()
    attempt(commits, [NEW], [stored(OLD)])
    commits.commit_lost()  # landed
    attempt(commits, [NEW], [stored(NEW)])
    commits.commit_lost()  # a no-op commit, lost too
    retried = attempt(commits, [NEW], [stored(NEW)])
    assert (retried.outcomes, retried.removed) == ([Outcome.INSERTED], ["pith-old"])


def test_a_replacement_that_landed_counts_as_replaced() -> None:
    older = Row("pith-new", "d-older", built_at="2025-01-01T00:00:00Z")
    commits = LostCommits()
    assert attempt(commits, [NEW], [stored(older)]).outcomes == [Outcome.REPLACED]
    commits.commit_lost()
    assert attempt(commits, [NEW], [stored(NEW)]).outcomes == [Outcome.REPLACED]


def test_the_same_body_stored_under_another_key_is_not_taken_for_the_lost_commit() -> None:
    """A copy of the body signed by another key of the signer (greater key id, so it wins)
    is stored when the retry runs: not what the lost commit wrote, so a duplicate."""
    other_key = Row("pith-new", "d-new", "key-higher")
    commits = LostCommits()
    attempt(commits, [NEW], [])
    commits.commit_lost()
    retried = commits.decide([NEW], [stored(other_key)], plan_batch([NEW], [stored(other_key)], lambda _: 0))  # type: ignore[list-item]
    assert retried.outcomes == [Outcome.DUPLICATE]


def test_without_a_lost_commit_the_plan_is_the_report() -> None:
    commits = LostCommits()
    done = attempt(commits, [NEW, TWIN], [stored(NEW)])
    assert (done.outcomes, done.removed) == ([Outcome.DUPLICATE, Outcome.DUPLICATE], [])


# -- the retry loop, with a driver whose commits are all lost ---------------------------------


class LosingDriver:
    """Stands in for a driver: each transaction runs ``work`` (tx ``None``), then its commit
    raises ``errors[attempt]`` (the last one again past the end)."""

    def __init__(self, *errors: Exception) -> None:
        self.errors, self.attempts = errors, 0

    @contextmanager
    def session(self, **_config: Any) -> Iterator[LosingDriver]:
        yield self

    def execute_write(self, work: Callable[..., Any], *args: Any) -> Any:
        work(None, *args)
        self.attempts += 1
        raise self.errors[min(self.attempts, len(self.errors)) - 1]


def _decide(_tx: None, commits: LostCommits) -> AppliedBatch:
    return commits.decide([NEW], [], plan_batch([NEW], [], rank))  # type: ignore[list-item]


@pytest.fixture
def short_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "MAX_RETRY_SECONDS", 0.3)
    monkeypatch.setattr(store_module, "_retry_delays", lambda: itertools.repeat(0.05))


@pytest.mark.parametrize("last", [IncompleteCommit("lost"), ServiceUnavailable("gone")], ids=type)
def test_a_batch_given_up_after_a_lost_commit_says_it_may_be_written(
    last: Exception, short_window: None
) -> None:
    """Commits lost past the retry window (or a lost one, then the server gone): the batch was
    retried, and whether it was written is unknown, which the error says (not "not retried",
    nor "was not written")."""
    driver = LosingDriver(IncompleteCommit("lost"), last)
    store = Neo4jStore(driver, uri="bolt://nowhere:7687")  # type: ignore[arg-type]
    commits = LostCommits()
    with pytest.raises(StoreError) as raised:
        store._write_transaction(_decide, commits, commits=commits)
    message = str(raised.value)
    assert driver.attempts >= 3, message
    assert raised.value.code is StoreErrorCode.UNAVAILABLE, message
    assert f"gave up after {driver.attempts} attempts over" in message, message
    assert "whether the batch was written is unknown" in message, message
    assert "not retried" not in message and "was not written" not in message, message


def test_a_lost_commit_is_retried_only_for_a_batch(short_window: None) -> None:
    """A removal (no ``commits``) is not retried after a lost commit, and says so."""
    driver = LosingDriver(IncompleteCommit("lost"))
    store = Neo4jStore(driver, uri="bolt://nowhere:7687")  # type: ignore[arg-type]
    with pytest.raises(StoreError) as raised:
        store._write_transaction(lambda _tx: None)
    assert driver.attempts == 1
    assert "whether it was written is unknown, so it was not retried" in str(raised.value)
