"""What a batch retried after a lost commit reports (:class:`LostCommits`), without a server:
the attempts are played through the update rules against what each would find stored.
tests/test_neo4j_frozen.py cuts real connections; here are the cases its corpus lacks (a
paper displaced, a bundle another loader wrote meanwhile), and removals (``prune``) retried
against a fake transaction."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from neo4j.exceptions import IncompleteCommit, ServiceUnavailable

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.stores import cypher, cypher_locks
from pith_graph.loader.stores import neo4j as store_module
from pith_graph.loader.stores.base import AppliedBatch
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_retry import RACE_ATTEMPTS, LostCommits, Raced
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
    assert "while writing a batch" in message, message
    assert "whether the batch was written is unknown; loading again is safe" in message, message
    assert "not retried" not in message and "was not written" not in message, message


class RacingDriver(LosingDriver):
    """Each attempt's work raises :class:`Raced` (a node it locked found deleted) ``races``
    times, then the transaction commits."""

    def __init__(self, races: int) -> None:
        super().__init__(Raced("an author deleted meanwhile"))
        self.races = races

    def execute_write(self, work: Callable[..., Any], *args: Any) -> Any:
        self.attempts += 1
        if self.attempts <= self.races:
            raise Raced("an author deleted meanwhile")
        return work(None, *args)


def test_a_batch_that_raced_is_run_again_from_the_start(short_window: None) -> None:
    driver = RacingDriver(RACE_ATTEMPTS - 1)
    store = Neo4jStore(driver, uri="bolt://nowhere:7687")  # type: ignore[arg-type]
    commits = LostCommits()
    applied = store._write_transaction(_decide, commits, commits=commits)
    assert (applied.outcomes, driver.attempts) == ([Outcome.INSERTED], RACE_ATTEMPTS)


def test_a_batch_that_raced_every_time_fails_saying_it_was_not_written(short_window: None) -> None:
    driver = RacingDriver(RACE_ATTEMPTS + 5)
    store = Neo4jStore(driver, uri="bolt://nowhere:7687")  # type: ignore[arg-type]
    commits = LostCommits()
    with pytest.raises(StoreError) as raised:
        store._write_transaction(_decide, commits, commits=commits)
    assert raised.value.code is StoreErrorCode.WRITE_FAILED
    assert driver.attempts == RACE_ATTEMPTS
    assert f"raced concurrent writers {RACE_ATTEMPTS} times" in str(raised.value)
    assert "it was not written: loading again is safe" in str(raised.value)


class ScriptedDriver(LosingDriver):
    """Each attempt raises the next of ``failures`` (before its work runs), then commits."""

    def __init__(self, *failures: Exception) -> None:
        super().__init__(*failures)
        self.failures = list(failures)

    def execute_write(self, work: Callable[..., Any], *args: Any) -> Any:
        self.attempts += 1
        if self.failures:
            raise self.failures.pop(0)
        return work(None, *args)


def test_a_race_after_other_failures_is_still_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The races are counted apart from the attempts: seven transient failures, then one race,
    gave up at that race ("raced concurrent writers 8 times")."""
    monkeypatch.setattr(store_module, "MAX_RETRY_SECONDS", 30.0)
    monkeypatch.setattr(store_module, "_retry_delays", lambda: itertools.repeat(0.01))
    driver = ScriptedDriver(*[ServiceUnavailable("gone")] * (RACE_ATTEMPTS - 1), Raced("an author deleted"))
    store = Neo4jStore(driver, uri="bolt://nowhere:7687")  # type: ignore[arg-type]
    commits = LostCommits()
    applied = store._write_transaction(_decide, commits, commits=commits)
    assert (applied.outcomes, driver.attempts) == ([Outcome.INSERTED], RACE_ATTEMPTS + 1)


# -- a removal (prune) retried after a lost commit ------------------------------------------

Papers = dict[str, tuple[str, list[str]]]  # pith number → (builtAt, keyIds), as the lock reads them
AT, LATER = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"


class _Result(list[dict[str, Any]]):
    """What ``tx.run`` returns: its records; nothing to consume, no ``data`` besides them."""

    def consume(self) -> None:
        pass

    def data(self) -> list[dict[str, Any]]:
        return list(self)


class RemovingTx:
    """A transaction on a copy of the stored papers: the reads finding and locking them (ids:
    their pith numbers here) and the deletion of ``_remove_papers`` (the rest of what it runs
    touches no paper; these papers have no source, as an analyst's)."""

    def __init__(self, papers: Papers) -> None:
        self.papers = dict(papers)

    def run(self, statement: str, params: dict[str, Any] | None = None, **more: Any) -> _Result:
        values = {**(params or {}), **more}
        piths = values.get("piths", [])
        if statement == cypher_locks.PAPER_IDS:
            return _Result({"id": pith} for pith in piths if pith in self.papers)
        if statement == cypher_locks.LOCK_PAPERS_TO_REMOVE:
            found = [(pith, self.papers[pith]) for pith in values["ids"] if pith in self.papers]
            return _Result(
                {"pith": pith, "builtAt": at, "keyIds": keys, "source": [None, None]}
                for pith, (at, keys) in found
            )
        if statement == cypher.DELETE_PAPERS:
            for pith in piths:
                del self.papers[pith]
        return _Result()


class RemovingDriver(LosingDriver):
    """A :class:`LosingDriver` over stored ``papers``: each attempt runs ``work`` in a
    :class:`RemovingTx`, then its commit goes as ``fates`` says (the last one again past the
    end): ``landed`` (written, connection lost), ``dropped`` (lost before the server got it)
    or ``committed``. ``meanwhile`` changes the papers before each attempt but the first."""

    def __init__(
        self, papers: Papers, *fates: str, meanwhile: Callable[[Papers], None] | None = None
    ) -> None:
        super().__init__(IncompleteCommit("lost"))
        self.papers, self.fates, self.meanwhile = papers, fates, meanwhile

    def execute_write(self, work: Callable[..., Any], *args: Any) -> Any:
        if self.attempts and self.meanwhile is not None:
            self.meanwhile(self.papers)
        tx = RemovingTx(self.papers)
        report = work(tx, *args)
        fate = self.fates[min(self.attempts, len(self.fates) - 1)]
        self.attempts += 1
        if fate != "dropped":
            self.papers.clear()
            self.papers.update(tx.papers)
        if fate == "committed":
            return report
        raise IncompleteCommit("lost")


def _stored_papers() -> Papers:
    return {"pith-a": (AT, [LOW]), "pith-b": (AT, [LOW]), "pith-c": (AT, [HIGH])}


UNCHANGED = {"pith-a": (AT, [LOW]), "pith-b": (AT, [LOW])}  # as a prune revoking LOW read them


def _remove(driver: RemovingDriver) -> list[str]:
    store = Neo4jStore(driver, uri="bolt://nowhere:7687")  # type: ignore[arg-type]
    return store.remove_papers(["pith-b", "pith-a"], unchanged=UNCHANGED)


def test_a_removal_whose_lost_commit_landed_reports_every_paper_it_removed(
    short_window: None, caplog: pytest.LogCaptureFixture
) -> None:
    """The retry finds both papers gone (the lost commit removed them): it removes nothing
    itself, and still reports both, as a removal without the cut does (it used to end at
    once, "whether it was written is unknown, so it was not retried"). Its warning names a
    removal (it used to say "a batch's connection")."""
    driver = RemovingDriver(_stored_papers(), "landed", "committed")
    with caplog.at_level(logging.WARNING, logger=store_module.__name__):
        assert _remove(driver) == ["pith-a", "pith-b"]
    assert (driver.attempts, sorted(driver.papers)) == (2, ["pith-c"])
    [warning] = [r.getMessage() for r in caplog.records if r.name == store_module.__name__]
    assert warning.startswith("the connection of a removal was lost while it committed (lost)"), warning


def test_a_removal_whose_lost_commit_did_not_land_is_judged_again(short_window: None) -> None:
    """The lost commit did not land; before the retry, a concurrent load gave pith-b another
    bundle: the retry removes pith-a only, and reports pith-a only (what was decided before
    the cut counts for nothing the retry finds still there)."""

    def reloaded(papers: Papers) -> None:
        papers["pith-b"] = (LATER, [HIGH])

    driver = RemovingDriver(_stored_papers(), "dropped", "committed", meanwhile=reloaded)
    assert _remove(driver) == ["pith-a"]
    assert driver.papers == {"pith-b": (LATER, [HIGH]), "pith-c": (AT, [HIGH])}


@pytest.mark.parametrize(
    "fates",
    [("landed", "landed"), ("landed", "dropped"), ("dropped", "landed"), ("dropped", "dropped")],
    ids="-".join,
)
def test_a_removal_lost_twice_reports_what_the_lost_commits_did(
    fates: tuple[str, str], short_window: None
) -> None:
    """Two commits lost in a row, each landed or not: the third attempt reports both papers,
    whichever attempt removed them (the first's report is carried through the second's)."""
    driver = RemovingDriver(_stored_papers(), *fates, "committed")
    assert _remove(driver) == ["pith-a", "pith-b"]
    assert (driver.attempts, sorted(driver.papers)) == (3, ["pith-c"])


def test_a_removal_given_up_after_lost_commits_says_it_may_be_written(short_window: None) -> None:
    """Commits lost past the retry window: the removal was retried, and the error says, of
    the removal (it used to say "the batch" and "loading again"), that whether it was written
    is unknown (not "not retried")."""
    driver = RemovingDriver(_stored_papers(), "landed")
    with pytest.raises(StoreError) as raised:
        _remove(driver)
    message = str(raised.value)
    assert driver.attempts >= 3, message
    assert raised.value.code is StoreErrorCode.UNAVAILABLE, message
    assert "cannot reach Neo4j at bolt://nowhere:7687" in message and "while removing papers" in message, (
        message
    )
    assert f"gave up after {driver.attempts} attempts over" in message, message
    assert "whether the removal was written is unknown; pruning again is safe" in message, message
    assert "batch" not in message and "loading" not in message and "not retried" not in message, message


def test_a_paper_the_lost_attempt_kept_is_not_reported_when_found_gone() -> None:
    """:meth:`LostCommits.decide_removal`: only what the lost attempt removed counts when
    found gone; a paper it found changed and kept, gone by the retry (another process
    removed it), is not this removal's."""
    commits = LostCommits()
    assert commits.decide_removal(["pith-a", "pith-b"], ["pith-a"]) == ["pith-a"]
    commits.commit_lost()
    assert commits.decide_removal([], []) == ["pith-a"]
