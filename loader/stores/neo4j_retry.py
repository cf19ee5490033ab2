"""When :class:`~pith_graph.loader.stores.neo4j.Neo4jStore` runs a write transaction again, and
how a batch whose COMMIT's outcome is unknown is reported truthfully once retried.

A connection lost after COMMIT was sent (``IncompleteCommit``) leaves the batch written or
not, and the client cannot tell which. Applying a batch again is safe either way (the update
rules find its bundles stored and change nothing), so the batch is retried like any transient
failure; only the report would be wrong: a retry after a lost commit that did land finds the
batch's own bundles stored, and would count them as duplicates, and the papers it removed as
already gone. :class:`LostCommits` remembers what the attempt whose commit was lost decided
(under the source locks, against what was then stored): the next attempt counts a bundle it
finds stored exactly as that attempt would have written it (same ``bundleSha256`` and
``bundleKeyId``) as what that attempt did (``inserted``, ``replaced``), and a paper that
attempt removed, found gone, as removed. What it cannot tell apart: another loader writing
the same bundle (or removing the same paper) between the two attempts, which then both count.

A removal (``remove_papers``, which ``pith-graph prune`` runs) is retried the same way: the
retry finds the papers a landed lost commit removed gone, and reports them as removed all the
same (:meth:`LostCommits.decide_removal`: they are gone because of this call); those the lost
attempt would have removed that the retry finds still there (it did not land) are judged
again, removed only if still unchanged. The same ambiguity: another process removing one of
those papers between the two attempts makes both count it.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import TypeVar

import neo4j
from neo4j.exceptions import DriverError, IncompleteCommit, Neo4jError

from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores.base import AppliedBatch
from pith_graph.loader.stores.neo4j_connect import BATCH, Work
from pith_graph.loader.stores.rules import BatchPlan, Outcome, StoredPaper

T = TypeVar("T")

__all__ = [
    "LOST_COMMIT_RETRY",
    "OUT_OF_MEMORY",
    "RACE_ATTEMPTS",
    "RACE_CODES",
    "RETRY",
    "WRITE_TIMEOUT_SECONDS",
    "BatchTooLarge",
    "LostCommits",
    "Raced",
    "retry_delays",
    "timed",
]

#: Longest a write transaction may run, its waits for locks included: sent with each, so that
#: the server ends it past that and releases its locks. A loader suspended (Ctrl-Z) with a
#: batch open held them, and every other loader and prune waited, silently, for as long as the
#: server let the transaction live: 10 minutes on scripts/neo4j's, for ever on a server
#: without ``db.transaction.timeout`` (a review of concurrent runs). An ordinary batch of
#: 1,000 bundles takes about a second.
WRITE_TIMEOUT_SECONDS = 300.0


def timed(work: Callable[..., T]) -> Callable[..., T]:
    """``work`` (a transaction function) with :data:`WRITE_TIMEOUT_SECONDS` as its timeout."""
    return neo4j.unit_of_work(timeout=WRITE_TIMEOUT_SECONDS)(work)


#: Errors a concurrent writer can cause that the driver does not retry by itself (a node
#: matched by MERGE and deleted by another transaction before it was locked). The batch is
#: re-run from the start: it re-reads and re-decides everything.
RACE_CODES = frozenset(
    {
        "Neo.ClientError.Statement.EntityNotFound",
        "Neo.ClientError.Schema.ConstraintValidationFailed",
    }
)
RACE_ATTEMPTS = 8


class Raced(Exception):
    """Raised in a transaction function that finds a node it locked gone: Neo4j grants the lock
    on a node that the transaction holding it deleted, and then reads it as deleted without an
    error (a ``MATCH`` finds nothing, a ``SET`` does nothing). The attempt is rolled back and the
    write run again from the start, as after ``RACE_CODES``, at most ``RACE_ATTEMPTS`` times."""


#: The transaction outgrew the server's transaction memory: all transactions' pool
#: (``dbms.memory.transaction.total.max``) or its own share (``db.memory.transaction.max``).
OUT_OF_MEMORY = frozenset(
    {
        "Neo.TransientError.General.MemoryPoolOutOfMemoryError",
        "Neo.TransientError.General.TransactionOutOfMemoryError",
    }
)

#: The warning of a write retried after a lost commit (``Work.noun``, ``error``, ``delay``).
LOST_COMMIT_RETRY = (
    "the connection of a %s was lost while it committed (%s): whether it was written is unknown; "
    "trying it again in %.1f s, counting what it finds written"
)
#: The warning of a write retried after any other transient failure (``Work.action``, ...).
RETRY = "%s failed (%s); trying again in %.1f s"

#: What a lost commit would have written: counted as that attempt's outcome when found stored.
_WRITTEN = (Outcome.INSERTED, Outcome.REPLACED)


class BatchTooLarge(Exception):
    """A write transaction outgrew the server's transaction memory."""

    def __init__(self, error: Neo4jError | DriverError) -> None:
        super().__init__(str(error))
        self.error = error


def retry_delays() -> Iterator[float]:
    """The driver's back-off between retries: 1 s, doubling, ±20% jitter."""
    for delay in itertools.chain((2.0**n for n in range(6)), itertools.repeat(32.0)):
        yield delay * random.uniform(0.8, 1.2)


class LostCommits:
    """The attempts of one batch (or removal): what the current one decided (:meth:`decide`,
    :meth:`decide_removal`, in the transaction function) and what the last one whose commit
    was lost did, if it landed.

    One instance per batch or removal (``work``: how messages name it), shared by its
    attempts, which run one after the other."""

    def __init__(self, work: Work = BATCH) -> None:
        self.work = work
        self.decided: AppliedBatch | None = None
        #: What the batch did if the last lost commit landed; ``None``: no commit was lost.
        self.lost: AppliedBatch | None = None

    def decide(
        self, batch: Sequence[PaperRows], stored: Iterable[StoredPaper], plan: BatchPlan[PaperRows]
    ) -> AppliedBatch:
        """This attempt's report: ``plan``'s outcomes, with what a lost commit found landed
        did instead of ``duplicate``; ``stored`` is what the attempt read under its locks."""
        outcomes, removed = list(plan.outcomes), plan.remove
        if self.lost is not None:
            found = {paper.pith_number: paper for paper in stored}
            for index, (rows, before) in enumerate(zip(batch, self.lost.outcomes, strict=True)):
                paper = found.get(rows.pith_number)
                if (
                    outcomes[index] is Outcome.DUPLICATE
                    and before in _WRITTEN
                    and paper is not None
                    and (paper.bundle_sha256, paper.bundle_key_id) == (rows.bundle_sha256, rows.bundle_key_id)
                ):
                    outcomes[index] = before
            # the stored papers of the batch's source ids are all read: one the lost attempt removed is gone
            removed = self._with_lost_removals(removed, found)
        self.decided = AppliedBatch(outcomes, removed)
        return self.decided

    def decide_removal(self, present: Collection[str], removing: Sequence[str]) -> list[str]:
        """A removal attempt's report: ``removing``, and each paper a lost commit removed that
        is not ``present`` (the requested papers this attempt found, under its locks)."""
        self.decided = AppliedBatch([], self._with_lost_removals(removing, present))
        return self.decided.removed

    def _with_lost_removals(self, removed: Iterable[str], present: Collection[str]) -> list[str]:
        lost = self.lost.removed if self.lost is not None else []
        return sorted({*removed, *(pith for pith in lost if pith not in present)})

    def commit_lost(self) -> None:
        """The connection was lost after this attempt's COMMIT was sent: it may have landed."""
        if self.decided is not None:  # the transaction function ran to its end: it always has
            self.lost, self.decided = self.decided, None

    def lost_by(self, error: Exception) -> bool:
        """Whether ``error`` lost this attempt's commit (:meth:`commit_lost`, then called)."""
        if isinstance(error, IncompleteCommit):
            self.commit_lost()
            return True
        return False
