"""The Neo4j store: the same graph as :class:`~pith_graph.loader.stores.memory.MemoryStore`, in Neo4j.

Each :meth:`Neo4jStore.apply` is ONE managed write transaction (``execute_write``, retried
by the driver on transient errors such as ``DeadlockDetected`` or a lost connection):

1. lock the batch's source ids, in order, and read their stored papers: the update rules
   (:func:`~pith_graph.loader.stores.rules.plan_batch`) are decided against the database,
   under those locks, not against this process;
2. lock (or create) the signers of the papers to write and of the stored papers it
   detaches (a displaced bundle's co-signer), in id order. A corpus's papers
   share their registry signer, so concurrent loaders take turns here rather than
   deadlocking on the authors and categories they share;
3. merge and lock, by key, the authors and categories the batch links and those of the
   stored papers it detaches (a removal's too): every writer takes them in this order before
   it deletes an edge; delete the papers to remove, with their edges and the authors left
   without one, then the edges of the stored papers to replace; then write each paper, its
   aliases and edges in one ``UNWIND $rows`` (one lookup each);
4. delete the detached nodes left without an edge; lock, then recompute ``Signer.keyIds``
   and the ``Author.paperCount`` of every signer and author the batch touched, and the name
   of each author whose spellings it changed (:mod:`~pith_graph.loader.stores.names`).

A batch is therefore either wholly in the database or not at all: a killed loader or a
restarted server leaves no half-written paper, and loading again converges; so a batch (or
a removal) whose connection was lost after COMMIT was sent is retried too, and reported as
what it did (:mod:`~pith_graph.loader.stores.neo4j_retry`). A batch the
server has not the memory to hold in one transaction (``MemoryPoolOutOfMemoryError``: say,
papers of 20,000 authors each, which one signer may publish) is applied as two halves, in
order, each its own transaction, down to single bundles: as ``--batch-size`` smaller.

Node ids in :meth:`Neo4jStore.export` are :func:`pith_graph.schema.graph.node_id` strings, so exports of
both stores compare with ``==``.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import neo4j
from neo4j.exceptions import DriverError, Neo4jError

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.doi_upgrade import fold_doi_aliases
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores import cypher, cypher_export, neo4j_batch, neo4j_connect
from pith_graph.loader.stores.base import AppliedBatch, GraphCounts, GraphExport, Unchanged, schema_counts
from pith_graph.loader.stores.cypher_export import own_properties
from pith_graph.loader.stores.neo4j_connect import MAX_RETRY_SECONDS, open_driver, translate, translated
from pith_graph.loader.stores.neo4j_latest import upgrade_latest
from pith_graph.loader.stores.neo4j_names import refold_authors, upgrade_authors
from pith_graph.loader.stores.neo4j_retry import (
    LOST_COMMIT_RETRY,
    OUT_OF_MEMORY,
    RACE_ATTEMPTS,
    RACE_CODES,
    RETRY,
    BatchTooLarge,
    LostCommits,
    Raced,
    timed,
)
from pith_graph.loader.stores.neo4j_retry import retry_delays as _retry_delays  # tests shorten it
from pith_graph.loader.stores.neo4j_schema import ensure_schema
from pith_graph.loader.stores.rules import SourceKey, StoredPaper
from pith_graph.schema.graph import LABEL_ATTRIBUTE, NODES, RELATIONSHIPS, node_id

__all__ = ["Neo4jStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")

INDEX_WAIT_SECONDS = 300


class Neo4jStore:
    """A :class:`~pith_graph.loader.stores.base.GraphStore` writing to one Neo4j database."""

    #: A batch mostly waits on the server: the pipeline writes it on a thread of its own
    #: while it verifies the next one (one batch at a time, in order).
    background_writes = True

    def __init__(self, driver: neo4j.Driver, *, uri: str, database: str = "neo4j") -> None:
        self.driver = driver
        self.uri = uri
        self.database = database
        self._interrupts = 0  # how many times interrupt() was called
        self._interrupted = threading.Condition()  # (guards the two below too)
        self._writes = 0  # writes in flight, on any thread
        self._close_deferred = False  # close() came while one was: the last to end closes

    @classmethod
    def connect(
        cls,
        uri: str,
        user: str = "neo4j",
        password: str | None = None,
        database: str = "neo4j",
    ) -> Neo4jStore:
        """Open a store, checking that the server answers, accepts the credentials and has
        the database; otherwise raise :class:`~pith_graph.errors.StoreError` (``unavailable``,
        ``auth`` or ``database``)."""
        return cls(open_driver(uri, user, password, database), uri=uri, database=database)

    def __enter__(self) -> Neo4jStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @contextmanager
    def _session(self, action: str) -> Iterator[neo4j.Session]:
        with (
            translated(self.uri, self.database, action),
            self.driver.session(database=self.database) as session,
        ):
            yield session

    # -- GraphStore ----------------------------------------------------------------------

    def ensure_schema(self) -> None:
        """Create every constraint and index (idempotent), check that each is the graph's
        (:mod:`~pith_graph.loader.stores.neo4j_schema`) and wait until they are online.

        Safe with concurrent loaders on a fresh database: each statement is a managed
        transaction, so a transient error (two loaders creating schema at once deadlock on
        the schema lock) is retried with the driver's jittered back-off, and a rule another
        loader created first is accepted.
        """
        with self._session("creating constraints and indexes") as session:
            ensure_schema(session, INDEX_WAIT_SECONDS)
            upgrade_authors(session)
            fold_doi_aliases(session)
            upgrade_latest(session)

    def create_schema(self) -> None:
        """:meth:`ensure_schema` without its passes over data an earlier version wrote
        (``nameFolded``, ``paperCount``, DOI case, ``isLatest``): for the database
        ``pith-graph import`` has just built, whose CSV rows already hold all of them
        (since 0.9.13; the passes found nothing there, and took 3-6 s at 250k bundles)."""
        with self._session("creating constraints and indexes") as session:
            ensure_schema(session, INDEX_WAIT_SECONDS)

    def refold_authors(self) -> int:
        """Give every author the ``nameFolded`` of its key where a database written before 0.9.8
        holds its display name's (:func:`.neo4j_names.refold_authors`): ``pith-graph schema``
        runs it, not every load (one pass over the authors, comparing only those whose two
        folds can differ: 0.18–0.55 s at 100k). The number of authors changed."""
        with self._session("folding the authors' names again") as session:
            return refold_authors(session)

    def known_bundle_digests(self) -> set[str]:
        found = self._rows("reading stored bundle digests", cypher.KNOWN_BUNDLE_DIGESTS)
        return {record["digest"] for record in found}

    def known_bundles(self) -> dict[str, str]:
        found = self._rows("reading stored bundle digests", cypher.KNOWN_BUNDLES)
        return {record["digest"]: record["keyId"] for record in found}

    def interrupt(self) -> None:
        """Stop the writes under way (the pipeline's, when a load is interrupted): one waiting
        to be tried again gives up at once, one whose attempt is in flight when that attempt
        fails, raising ``write_failed``; the attempt itself is left to end, committed whole or
        not at all. Writes begun after the call are not affected."""
        with self._interrupted:
            self._interrupts += 1
            self._interrupted.notify_all()

    def apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int]) -> AppliedBatch:
        """Apply a batch in one transaction; see the module docstring for the steps."""
        return self._apply(batch, rank, self._interrupts)

    def _apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int], since: int) -> AppliedBatch:
        if not batch:
            return AppliedBatch([])
        try:
            commits = LostCommits()
            return self._write_transaction(
                neo4j_batch.apply_batch, batch, rank, commits, splittable=True, commits=commits, since=since
            )
        except BatchTooLarge as too_large:
            if len(batch) == 1:
                paper = batch[0].paper
                raise translate(
                    too_large.error,
                    self.uri,
                    self.database,
                    f"writing the bundle of {paper.source_id}v{paper.source_version} ({paper.pith_number}) "
                    "alone (raise the server's transaction memory: db.memory.transaction.max, "
                    "dbms.memory.transaction.total.max, or its heap)",
                ) from too_large
        half = len(batch) // 2
        log.info("a batch of %d bundles outgrew the transaction memory; applying it in halves", len(batch))
        first, second = self._apply(batch[:half], rank, since), self._apply(batch[half:], rank, since)
        return AppliedBatch(first.outcomes + second.outcomes, first.removed + second.removed)

    def remove_papers(self, pith_numbers: Sequence[str], unchanged: Unchanged | None = None) -> list[str]:
        """In one transaction, with the nodes left without a paper; ``unchanged`` checked once
        locked. Retried after a lost commit too, reporting what it removed (``LostCommits``).
        Removals the server cannot hold in one transaction's memory go in halves, each a
        transaction, as a load's batches do (prune failed on every run: since 0.8.8)."""
        piths = sorted(set(pith_numbers))
        try:
            commits = LostCommits(neo4j_connect.REMOVAL)
            return self._write_transaction(
                neo4j_batch.remove_papers, piths, unchanged, commits, commits=commits, splittable=True
            )
        except BatchTooLarge as too_large:
            if len(piths) <= 1:
                raise translate(
                    too_large.error,
                    self.uri,
                    self.database,
                    f"removing the paper {piths[0] if piths else ''} alone (raise the server's transaction "
                    "memory: db.memory.transaction.max, dbms.memory.transaction.total.max, or its heap)",
                ) from too_large
        half = len(piths) // 2
        log.info("removing %d papers outgrew the transaction memory; removing them in halves", len(piths))
        return self.remove_papers(piths[:half], unchanged) + self.remove_papers(piths[half:], unchanged)

    def stored_papers(self, sources: Iterable[SourceKey]) -> list[StoredPaper]:
        wanted = [list(source) for source in sorted(set(sources))]
        return [
            StoredPaper(
                r["pith"],
                (r["source"][0], r["source"][1]),
                r["version"],
                r["builtAt"],
                r["digest"],
                r["keyId"],
                tuple(r["keyIds"] or ()),
            )
            for r in self._rows("checking papers", cypher.STORED_PAPERS, sources=wanted)
            if r["pith"] is not None and r["digest"] is not None
        ]

    def papers_signed_with(self, key_ids: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        found = self._rows("finding papers by signing key", cypher.PAPERS_SIGNED_WITH, keys=list(key_ids))
        return [(r["pith"], r["builtAt"], list(r["keyIds"])) for r in found]

    def _write_transaction(
        self,
        work: Callable[..., T],
        *args: Any,
        commits: LostCommits,
        splittable: bool = False,
        since: int | None = None,
    ) -> T:
        """``work(tx, *args)`` in one managed write transaction, run again from scratch:

        * when it raced a concurrent writer (``RACE_CODES``, or :class:`Raced` raised by ``work``;
          at most ``RACE_ATTEMPTS`` times);
        * after a transient error (a lost connection, a deadlock, a restarting server), for
          ``MAX_RETRY_SECONDS`` from the first, with the driver's back-off; also after a commit
          of unknown outcome (``commits``, which ``work`` reports through, counts what it did).

        The driver's own retries are off (``max_transaction_retry_time=0``): it would also
        retry a transaction that outgrew the server's memory (``OUT_OF_MEMORY``, transient,
        raised by a statement or at commit), which would not fit the next time either. That
        one raises :class:`BatchTooLarge` at once when the caller can split its work
        (``splittable``), else fails as ``write_failed``. No attempt follows an
        :meth:`interrupt` called after ``since`` (their count when the write began)."""
        with self._writing():
            return self._attempts(work, *args, commits=commits, splittable=splittable, since=since)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Count a write in flight; the last one to end closes the driver if :meth:`close`
        was called meanwhile."""
        with self._interrupted:
            self._writes += 1
        try:
            yield
        finally:
            with self._interrupted:
                self._writes -= 1
                close = self._close_deferred and not self._writes
            if close:
                self.driver.close()

    def _attempts(
        self, work: Callable[..., T], *args: Any, commits: LostCommits, splittable: bool, since: int | None
    ) -> T:
        since = self._interrupts if since is None else since
        delays, started, give_up = _retry_delays(), time.monotonic(), float("inf")
        races = 0  # attempts that raced a concurrent writer (of any kind)
        for attempt in itertools.count(1):
            try:
                with self.driver.session(database=self.database, max_transaction_retry_time=0) as session:
                    return session.execute_write(timed(work), *args)
            except Raced as error:  # a node this attempt locked was deleted under it
                races += 1
                if races >= RACE_ATTEMPTS:
                    work_, lost = commits.work, commits.lost is not None  # a lost commit may have landed
                    written = "whether it was written is unknown" if lost else "it was not written"
                    raise StoreError(
                        StoreErrorCode.WRITE_FAILED,
                        f"{work_.action} raced concurrent writers {races} times ({error}); "
                        f"{written}: {work_.again} is safe",
                    ) from error
                log.info("a %s raced a concurrent writer (%s); retrying", commits.work.noun, error)
                self._pause(0.05 * races, since, commits, error)
            except (Neo4jError, DriverError) as error:
                code = error.code if isinstance(error, Neo4jError) else None
                lost = commits.lost_by(error)  # the next attempt counts what it did
                if code in OUT_OF_MEMORY and splittable:
                    raise BatchTooLarge(error) from error
                now = time.monotonic()
                give_up = min(give_up, now + MAX_RETRY_SECONDS)  # from the first failure
                if code in RACE_CODES and (races := races + 1) < RACE_ATTEMPTS:
                    log.info("a %s raced a concurrent writer (%s); retrying", commits.work.noun, code)
                    self._pause(0.05 * races, since, commits, error)
                    continue
                if code in OUT_OF_MEMORY or not (lost or error.is_retryable()) or give_up <= now:
                    tried = neo4j_connect.Attempts(attempt, started, give_up - MAX_RETRY_SECONDS, now)
                    maybe = commits.lost is not None  # a lost commit may have landed
                    raise neo4j_connect.write_failed(
                        error, self.uri, self.database, tried, commits.work, maybe_written=maybe
                    ) from error
                self._pause(0.0, since, commits, error)  # interrupted: no word of trying again
                delay = min(next(delays), give_up - now)  # the last attempt at the deadline, not past it
                named = commits.work.noun if lost else commits.work.action
                log.warning(LOST_COMMIT_RETRY if lost else RETRY, named, error, delay)
                self._pause(delay, since, commits, error)
        raise AssertionError("unreachable")  # pragma: no cover

    def _pause(self, seconds: float, since: int, commits: LostCommits, error: Exception) -> None:
        """Wait ``seconds`` before the next attempt, unless :meth:`interrupt` is (or was) called."""
        with self._interrupted:
            if self._interrupted.wait_for(lambda: self._interrupts != since, seconds):
                maybe = " (a lost commit may have written it)" if commits.lost is not None else ""
                raise StoreError(
                    StoreErrorCode.WRITE_FAILED,
                    f"{commits.work.action} was interrupted before it was tried again{maybe}; "
                    f"it had failed: {error}",
                ) from error

    def every_node(self) -> int:
        """How many nodes the database holds, of any label (an analyst's own included)."""
        with self._session("counting nodes") as session:
            return session.execute_read(lambda tx: _single_count(tx, cypher.COUNT_EVERY_NODE))

    def counts(self) -> GraphCounts:
        def read(tx: neo4j.ManagedTransaction) -> GraphCounts:
            nodes = [(label, _single_count(tx, cypher.count_nodes(label))) for label in NODES]
            edges = [(kind, _single_count(tx, cypher.count_edges(kind))) for kind in RELATIONSHIPS]
            return schema_counts(nodes, edges)

        with self._session("counting nodes and edges") as session:
            return session.execute_read(read)

    def export(self) -> GraphExport:
        def read(tx: neo4j.ManagedTransaction) -> GraphExport:
            ids: dict[str, str] = {}
            nodes: dict[str, dict[str, Any]] = {}
            for record in tx.run(cypher_export.EXPORT_NODES):
                label = record["label"]
                props = own_properties(label, record["props"])
                key = node_id(label, *(str(props[name]) for name in NODES[label].key))
                ids[record["id"]] = key
                nodes[key] = {LABEL_ATTRIBUTE: label, **props}
            edges = {
                (ids[r["start"]], r["type"], ids[r["end"]]): own_properties(r["type"], r["props"])
                for r in tx.run(cypher_export.EXPORT_EDGES)
            }
            return GraphExport(nodes, edges)

        with self._session("exporting the graph") as session:
            return session.execute_read(read)

    def read(self, work: Callable[[neo4j.ManagedTransaction], T], action: str) -> T:
        """``work(tx)`` in one managed read transaction; driver errors become StoreError."""
        with self._session(action) as session:
            return session.execute_read(work)

    def _rows(self, action: str, statement: str, **params: Any) -> list[dict[str, Any]]:
        return self.read(lambda tx: neo4j_batch.read_rows(tx, statement, **params), action)

    def close(self) -> None:
        """Close the driver; if a write is in flight on another thread (an interrupted load's
        batch, left to end on its own), that write closes it as it ends. Closed under it, the
        driver's connection was used by two threads at once: the write's attempt and the
        pool's closing wrote into one buffer (``BufferError``, exit 70 instead of 130)."""
        with self._interrupted:
            if self._writes:
                self._close_deferred = True
                return
        self.driver.close()

    # -- tests and tools -----------------------------------------------------------------

    def clear(self) -> None:
        """Delete every node and edge (constraints and indexes stay). For tests."""
        with self._session("clearing the database") as session:
            session.run(cypher.CLEAR_RELATIONSHIPS).consume()
            session.run(cypher.CLEAR_NODES).consume()


def _single_count(tx: neo4j.ManagedTransaction, statement: str) -> int:
    record = tx.run(statement).single(strict=True)
    return int(record["count"])
