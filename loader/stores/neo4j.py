"""The Neo4j store: the same graph as :class:`~pith_graph.loader.stores.memory.MemoryStore`, in Neo4j.

Each :meth:`Neo4jStore.apply` is ONE managed write transaction (``execute_write``, retried
by the driver on transient errors such as ``DeadlockDetected`` or a lost connection):

1. lock the batch's source ids, in order, and read their stored papers: the update rules
   (:func:`~pith_graph.loader.stores.rules.plan_batch`) are decided against the database,
   under those locks, not against this process;
2. lock (or create) the signers of the papers to write, in id order. A corpus's papers
   share their registry signer, so concurrent loaders take turns here rather than
   deadlocking on the authors and categories they share;
3. delete the papers to remove, with their edges and the authors left without one, then
   the edges of the stored papers to replace; merge and lock authors and categories (by key),
   then write each paper, its aliases and edges in one ``UNWIND $rows`` (one lookup each);
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
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import neo4j
from neo4j.exceptions import DriverError, Neo4jError

from pith_graph.loader.doi_upgrade import fold_doi_aliases
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores import cypher, neo4j_connect
from pith_graph.loader.stores.base import AppliedBatch, GraphCounts, GraphExport, Unchanged, sorted_counts
from pith_graph.loader.stores.names import Spellings
from pith_graph.loader.stores.neo4j_connect import MAX_RETRY_SECONDS, open_driver, translate, translated
from pith_graph.loader.stores.neo4j_names import paper_author_names, refresh_authors, upgrade_authors
from pith_graph.loader.stores.neo4j_retry import (
    LOST_COMMIT_RETRY,
    OUT_OF_MEMORY,
    RACE_ATTEMPTS,
    RACE_CODES,
    RETRY,
    BatchTooLarge,
    LostCommits,
    timed,
)
from pith_graph.loader.stores.neo4j_retry import retry_delays as _retry_delays  # tests shorten it
from pith_graph.loader.stores.rules import StoredPaper, plan_batch
from pith_graph.schema.graph import LABEL_ATTRIBUTE, NODES, RELATIONSHIPS, node_id
from pith_graph.schema.rows import AuthorRow

__all__ = ["Neo4jStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_SCHEMA_RACE_CODES = frozenset(
    {
        "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
        "Neo.ClientError.Schema.ConstraintAlreadyExists",
        "Neo.ClientError.Schema.IndexAlreadyExists",
    }
)
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
        """Create every constraint and index (idempotent) and wait until they are online.

        Safe with concurrent loaders on a fresh database: each statement is a managed
        transaction, so a transient error (two loaders creating schema at once deadlock on
        the schema lock) is retried with the driver's jittered back-off, and a rule another
        loader created first is accepted.
        """
        with self._session("creating constraints and indexes") as session:
            for statement in cypher.schema_statements():
                try:
                    session.execute_write(_run_schema_statement, statement)
                except Neo4jError as error:  # another loader created it at the same moment
                    if error.code not in _SCHEMA_RACE_CODES:
                        raise
            session.run(cypher.AWAIT_INDEXES, seconds=INDEX_WAIT_SECONDS).consume()
            upgrade_authors(session)
            fold_doi_aliases(session)

    def known_bundle_digests(self) -> set[str]:
        found = self._rows("reading stored bundle digests", cypher.KNOWN_BUNDLE_DIGESTS)
        return {record["digest"] for record in found}

    def known_bundles(self) -> dict[str, str]:
        found = self._rows("reading stored bundle digests", cypher.KNOWN_BUNDLES)
        return {record["digest"]: record["keyId"] for record in found}

    def apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int]) -> AppliedBatch:
        """Apply a batch in one transaction; see the module docstring for the steps."""
        if not batch:
            return AppliedBatch([])
        try:
            commits = LostCommits()
            return self._write_transaction(
                _apply_batch, batch, rank, commits, splittable=True, commits=commits
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
        first, second = self.apply(batch[:half], rank), self.apply(batch[half:], rank)
        return AppliedBatch(first.outcomes + second.outcomes, first.removed + second.removed)

    def remove_papers(self, pith_numbers: Sequence[str], unchanged: Unchanged | None = None) -> list[str]:
        """In one transaction, with the nodes left without a paper; ``unchanged`` checked once
        locked. Retried after a lost commit too, reporting what it removed (``LostCommits``)."""
        commits, piths = LostCommits(neo4j_connect.REMOVAL), sorted(set(pith_numbers))
        return self._write_transaction(_remove_papers, piths, unchanged, commits, commits=commits)

    def papers_present(self, pith_numbers: Sequence[str]) -> set[str]:
        return {
            r["pith"] for r in self._rows("checking papers", cypher.PAPERS_PRESENT, piths=list(pith_numbers))
        }

    def papers_signed_with(self, key_ids: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        found = self._rows("finding papers by signing key", cypher.PAPERS_SIGNED_WITH, keys=list(key_ids))
        return [(r["pith"], r["builtAt"], list(r["keyIds"])) for r in found]

    def _write_transaction(
        self, work: Callable[..., T], *args: Any, commits: LostCommits, splittable: bool = False
    ) -> T:
        """``work(tx, *args)`` in one managed write transaction, run again from scratch:

        * when it raced a concurrent writer (``RACE_CODES``, at most ``RACE_ATTEMPTS`` times);
        * after a transient error (a lost connection, a deadlock, a restarting server), for
          ``MAX_RETRY_SECONDS`` from the first, with the driver's back-off; also after a commit
          of unknown outcome (``commits``, which ``work`` reports through, counts what it did).

        The driver's own retries are off (``max_transaction_retry_time=0``): it would also
        retry a transaction that outgrew the server's memory (``OUT_OF_MEMORY``, transient,
        raised by a statement or at commit), which would not fit the next time either. That
        one raises :class:`BatchTooLarge` at once when the caller can split its work
        (``splittable``), else fails as ``write_failed``."""
        delays, started, give_up = _retry_delays(), time.monotonic(), float("inf")
        for attempt in itertools.count(1):
            try:
                with self.driver.session(database=self.database, max_transaction_retry_time=0) as session:
                    return session.execute_write(timed(work), *args)
            except (Neo4jError, DriverError) as error:
                code = error.code if isinstance(error, Neo4jError) else None
                lost = commits.lost_by(error)  # the next attempt counts what it did
                if code in OUT_OF_MEMORY and splittable:
                    raise BatchTooLarge(error) from error
                now = time.monotonic()
                give_up = min(give_up, now + MAX_RETRY_SECONDS)  # from the first failure
                if code in RACE_CODES and attempt < RACE_ATTEMPTS:
                    log.info("a %s raced a concurrent writer (%s); retrying", commits.work.noun, code)
                    time.sleep(0.05 * attempt)
                    continue
                if code in OUT_OF_MEMORY or not (lost or error.is_retryable()) or give_up <= now:
                    tried = neo4j_connect.Attempts(attempt, started, give_up - MAX_RETRY_SECONDS, now)
                    maybe = commits.lost is not None  # a lost commit may have landed
                    raise neo4j_connect.write_failed(
                        error, self.uri, self.database, tried, commits.work, maybe_written=maybe
                    ) from error
                delay = min(next(delays), give_up - now)  # the last attempt at the deadline, not past it
                named = commits.work.noun if lost else commits.work.action
                log.warning(LOST_COMMIT_RETRY if lost else RETRY, named, error, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def counts(self) -> GraphCounts:
        def read(tx: neo4j.ManagedTransaction) -> GraphCounts:
            nodes = [(label, _single_count(tx, cypher.count_nodes(label))) for label in NODES]
            edges = [(kind, _single_count(tx, cypher.count_edges(kind))) for kind in RELATIONSHIPS]
            return GraphCounts(
                sorted_counts((k, n) for k, n in nodes if n),
                sorted_counts((k, n) for k, n in edges if n),
            )

        with self._session("counting nodes and edges") as session:
            return session.execute_read(read)

    def export(self) -> GraphExport:
        def read(tx: neo4j.ManagedTransaction) -> GraphExport:
            ids: dict[str, str] = {}
            nodes: dict[str, dict[str, Any]] = {}
            for record in tx.run(cypher.EXPORT_NODES):
                label = record["labels"][0]
                props = dict(record["props"])
                key = node_id(label, *(str(props[name]) for name in NODES[label].key))
                ids[record["id"]] = key
                nodes[key] = {LABEL_ATTRIBUTE: label, **props}
            edges = {
                (ids[record["start"]], record["type"], ids[record["end"]]): dict(record["props"])
                for record in tx.run(cypher.EXPORT_EDGES)
            }
            return GraphExport(nodes, edges)

        with self._session("exporting the graph") as session:
            return session.execute_read(read)

    def read(self, work: Callable[[neo4j.ManagedTransaction], T], action: str) -> T:
        """``work(tx)`` in one managed read transaction; driver errors become StoreError."""
        with self._session(action) as session:
            return session.execute_read(work)

    def _rows(self, action: str, statement: str, **params: Any) -> list[dict[str, Any]]:
        return self.read(lambda tx: _read_rows(tx, statement, **params), action)

    def close(self) -> None:
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


def _run_schema_statement(tx: neo4j.ManagedTransaction, statement: str, /) -> None:
    tx.run(statement).consume()


def _run(tx: neo4j.ManagedTransaction, statement: str, /, **params: Any) -> None:
    tx.run(statement, params).consume()


def _read_rows(tx: neo4j.ManagedTransaction, statement: str, /, **params: Any) -> list[dict[str, Any]]:
    return tx.run(statement, params).data()


def _apply_batch(
    tx: neo4j.ManagedTransaction, batch: Sequence[PaperRows], rank: Callable[[str], int], commits: LostCommits
) -> AppliedBatch:
    """The transaction function: lock, decide, write. Re-run from scratch on a retry, which
    ``commits`` tells what an attempt whose commit was lost would have done."""
    sources = sorted({rows.source for rows in batch})
    stored: list[StoredPaper] = []
    locks: list[str] = []
    for record in tx.run(cypher.LOCK_SOURCES, sources=[list(source) for source in sources]):
        locks.append(record["lockId"])
        source = (record["source"][0], record["source"][1])
        for pith, version, built_at, bundle_sha256, key_id, key_ids in record["papers"]:
            if pith is not None and bundle_sha256 is not None:
                stored.append(
                    StoredPaper(pith, source, version, built_at, bundle_sha256, key_id, tuple(key_ids or ()))
                )
    plan = plan_batch(batch, stored, rank)
    if plan.write or plan.remove:
        held = {paper.pith_number for paper in stored}
        _write(tx, plan.write, plan.remove, locks, held)
    elif locks:
        _run(tx, cypher.DELETE_ORPHANS, ids=locks)  # lock aliases of outranked sources
    return commits.decide(batch, stored, plan)


def _remove_papers(
    tx: neo4j.ManagedTransaction, piths: list[str], unchanged: Unchanged | None, commits: LostCommits
) -> list[str]:
    """Remove those of ``piths`` still as ``unchanged`` says; ``commits`` is told every one
    found (a retry after a lost commit reports one that lost attempt removed, found gone)."""
    found = {
        r["pith"]: (r["builtAt"], list(r["keyIds"] or ()))
        for r in tx.run(cypher.LOCK_PAPERS_TO_REMOVE, piths=piths)
    }
    remove = [pith for pith, now in found.items() if unchanged is None or unchanged.get(pith) == now]
    if remove:
        _write(tx, [], remove, [], set(remove))
    return commits.decide_removal(found, remove)


def _write(
    tx: neo4j.ManagedTransaction,
    to_write: list[PaperRows],
    remove: list[str],
    locks: list[str],
    held: set[str],
) -> None:
    """Write the winning rows of a batch (one per paper) and delete the ``remove`` papers in
    the current transaction; ``locks`` are the batch's lock aliases (deleted if unused),
    ``held`` the pith numbers stored before (only those have edges to detach)."""
    signer_types: dict[str, str] = {}
    batch_keys: dict[str, set[str]] = {}
    authors: dict[str, AuthorRow] = {}
    categories: dict[str, str] = {}
    papers: list[dict[str, Any]] = []
    spellings = Spellings()
    if remove:
        spellings.remove(paper_author_names(tx, remove))
    for rows in sorted(to_write, key=lambda r: r.pith_number):
        for author in rows.authors:
            known = authors.get(author.name_key)
            if known is None or author.name < known.name:
                authors[author.name_key] = author
        for category in rows.categories:
            categories.setdefault(category.code, category.archive)
        for signer in rows.signers:
            signer_types.setdefault(signer.signer_id, signer.signer_type)
            batch_keys.setdefault(signer.signer_id, set()).update(signer.key_ids)
        papers.append(
            {
                "props": rows.paper_properties(),
                "authors": [author.name_key for author in rows.authors],
                "categories": [[c.code, c.primary] for c in rows.categories],
                "aliases": [[a.kind, a.value] for a in rows.aliases],
                "signers": [
                    [s.signer_id, list(s.key_ids), s.stored_event_types, s.signed_bundle]
                    for s in rows.signers
                ],
            }
        )

    if signer_types:
        _run(
            tx,
            cypher.LOCK_SIGNERS,
            rows=[{"signerId": s, "signerType": t} for s, t in sorted(signer_types.items())],
        )
    detached = tx.run(cypher.DETACH_PAPERS, piths=remove).data() if remove else []
    if remove:  # an author left without a paper goes first, as in the memory store
        _run(tx, cypher.DELETE_PAPERS, piths=remove)
        ids = sorted({r["id"] for r in detached if r["nameKey"] is not None})
        for gone in tx.run(cypher.DELETE_ORPHANS, ids=ids):
            spellings.forget(gone["key"])  # gone with all its papers: a new one starts afresh
    if piths := sorted(rows.pith_number for rows in to_write if rows.pith_number in held):
        spellings.remove(paper_author_names(tx, piths))
        detached += tx.run(cypher.DETACH_PAPERS, piths=piths).data()
    for rows in to_write:
        for author in rows.authors:
            spellings.add(author.name_key, author.name)
    if papers:
        _run(tx, cypher.MERGE_AUTHORS, rows=[list(authors[key]) for key in sorted(authors)])
        _run(tx, cypher.MERGE_CATEGORIES, rows=sorted(categories.items()))
        _run(tx, cypher.WRITE_PAPERS, rows=papers)
    orphans = sorted({record["id"] for record in detached} | set(locks))
    if orphans:
        _run(tx, cypher.DELETE_ORPHANS, ids=orphans)
    counted = set(authors)
    for record in detached:
        if record["signerId"] is not None:
            batch_keys.setdefault(record["signerId"], set())
        elif record["nameKey"] is not None:
            counted.add(record["nameKey"])
    if counted:
        refresh_authors(tx, sorted(counted), spellings)
    signers = [{"signerId": s, "keyIds": sorted(keys)} for s, keys in sorted(batch_keys.items())]
    kept = _read_rows(tx, cypher.REFRESH_SIGNER_KEYS, rows=signers)
    _run(
        tx,
        cypher.SET_SIGNER_KEYS,
        rows=[{"signerId": r["signerId"], "keyIds": sorted(r["keys"])} for r in kept],
    )
