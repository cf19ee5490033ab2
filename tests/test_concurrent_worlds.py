"""Concurrent writers into one Neo4j end as some sequential order of their work would.

Loads: for each seed, :func:`test_order_independence.world`'s bundles (hostile: signers of
three ranks, rebuilds, corrected records, one author spelt six ways, a journal DOI two ids
share, re-signed bodies) are split among two or three loaders, each with an overlapping
part in its own order and a batch size of 1 to 3, each a thread with its own
:class:`Neo4jStore`, released together. The graph is a function of the set of bundles, so
the export must equal the memory store's after one batch of the union of the parts, names
included (and checked as :func:`test_order_independence.check_names` does). Once, the loaders are
``pith-graph load`` processes.

Pruning: a world is loaded, then a loader (under a keyring that revokes LOW's key) and
:func:`prune_revoked` run at once. Pruning is one transaction between two of the loader's
batches, so the export must equal the memory store's for one of the cut points.

The store retries what a concurrent writer causes (deadlocks, with the driver's back-off;
an entity deleted under it): every warning it logs must be such a retry. The last tests
pin down three races found by probing what these worlds make possible, each by pausing one
transaction at a statement while another runs.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from neo4j.exceptions import DriverError
from test_order_independence import (
    HIGH,
    HIGH_2,
    KEYRING,
    LOW,
    MIDDLE,
    Arrival,
    check_names,
    load,
    one_batch,
    world,
)

from pith_graph.loader.keyfiles import load_keyring_file
from pith_graph.loader.keyring import REVOKED_ALWAYS, PinnedKey, default_keyring
from pith_graph.loader.prune import PruneReport, prune_revoked
from pith_graph.loader.rows import PaperRows, build_rows
from pith_graph.loader.stores import cypher, neo4j_batch
from pith_graph.loader.stores.base import AppliedBatch, GraphExport, Unchanged
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.rules import Outcome
from pith_graph.loader.verify import verify_bundle
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle

STORE_LOG = "pith_graph.loader.stores.neo4j"
#: KEYRING with LOW's key revoked for all time (the same ranks).
# built by hand: HIGH is pinned with the type its events claim, pith_registry, which keys files and resolve_keyring keep for pith.science
REVOKING = default_keyring().with_keys(
    [
        PinnedKey(s.key_id, s.public_key, s.signer_id, signer_type=s.signer_type)
        for s in (HIGH, HIGH_2, MIDDLE)
    ]
    + [PinnedKey(LOW.key_id, LOW.public_key, LOW.signer_id, revoked_at=REVOKED_ALWAYS)]
)


def _seeds(default: str) -> tuple[int, ...]:
    """``1-3,7`` as (1, 2, 3, 7): ``PITH_CONCURRENT_SEEDS`` or ``default``."""
    seeds: list[int] = []
    for part in os.environ.get("PITH_CONCURRENT_SEEDS", default).split(","):
        low, _, high = part.partition("-")
        seeds += range(int(low), int(high or low) + 1)
    return tuple(seeds)


def split(rng: random.Random, count: int) -> list[Arrival]:
    """Two or three loaders' runs: each a random, overlapping part of ``count`` bundles."""
    return [
        Arrival([rng.sample(range(count), rng.randint(count // 2, count))], rng.randint(1, 3), layout)
        for layout in rng.choices(["files", "jsonl"], k=rng.randint(2, 3))
    ]


def together(jobs: Sequence[Callable[[], object]]) -> list[BaseException]:
    """Run ``jobs`` on threads released at once; the exceptions they raised."""
    start = threading.Barrier(len(jobs))
    errors: list[BaseException] = []

    def body(job: Callable[[], object]) -> None:
        start.wait()
        try:
            job()
        except BaseException as error:  # reported by the caller
            errors.append(error)

    threads = [threading.Thread(target=body, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.fixture
def connect(neo4j_server: Any) -> Iterator[Callable[[], Neo4jStore]]:
    """Open stores on the session's server (closed after the test)."""
    opened: list[Neo4jStore] = []

    def open_one() -> Neo4jStore:
        opened.append(neo4j_server.connect())
        return opened[-1]

    yield open_one
    for store in opened:
        store.close()


def retried(caplog: pytest.LogCaptureFixture, context: str) -> list[str]:
    """The store's retries since the last ``caplog.clear()``; any other warning fails."""
    records = [r for r in caplog.records if r.name == STORE_LOG]
    for record in records:
        if record.levelno >= logging.WARNING:
            assert "DeadlockDetected" in record.getMessage(), (context, record.getMessage())
    found = [
        r.getMessage()[:120] for r in records if "retr" in r.getMessage() or "trying again" in r.getMessage()
    ]
    print(f"{context}: {len(found)} retries {found}")  # shown with -s
    return found


#: More seeds locally: ``PITH_CONCURRENT_SEEDS=1-40`` (both tests; about 2 s a round).
SEEDS = _seeds("1-2")
ROUNDS = 2
PROCESS_SEED = 4
#: The warning of a batch retried after a deadlock (Neo4j's message spans lines).
DEADLOCK_RETRY = re.compile(
    r"writing a batch failed \(\{neo4j_code: \S+DeadlockDetected\}.*?trying again in \S+ s", re.S
)


@pytest.mark.parametrize("seed", SEEDS)
def test_concurrent_loads_end_in_the_graph_of_one_batch(
    seed: int, connect: Callable[[], Neo4jStore], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """ROUNDS splits of the world among loader threads into a cleared database."""
    bundles = world(seed).bundles
    rng = random.Random(f"concurrent-{seed}")
    db = connect()
    stores = [connect() for _ in range(3)]
    caplog.set_level(logging.INFO, logger=STORE_LOG)
    for _ in range(ROUNDS):
        loaders = split(rng, len(bundles))
        context = f"seed={seed} " + " | ".join(map(str, loaders))
        part = [bundles[i] for i in sorted({i for how in loaders for i in how.runs[0]})]
        memory = MemoryStore()
        load(memory, tmp_path, part, one_batch(len(part)))
        db.clear()
        caplog.clear()
        jobs = [
            (lambda store=store, how=how: load(store, tmp_path, bundles, how))
            for store, how in zip(stores, loaders, strict=False)
        ]
        assert together(jobs) == [], context
        retried(caplog, context)
        actual = db.export()
        assert actual == memory.export(), context
        check_names(actual, part, context=context)


def test_concurrent_load_processes_end_in_the_graph_of_one_batch(
    neo4j_server: Any, connect: Callable[[], Neo4jStore], tmp_path: Path, stray: list[int]
) -> None:
    """The same with ``pith-graph load`` processes (one world, one split): each exits 0 with no
    traceback; a deadlock it retried is the only warning it may print."""
    bundles = world(PROCESS_SEED).bundles
    keys = tmp_path / "keys.json"
    keys.write_bytes(
        orjson.dumps(
            [
                {"key_id": s.key_id, "public_key_hex": s.public_key_hex, "signer_id": s.signer_id}
                | ({} if s is LOW else {"signer_type": s.signer_type})
                for s in (HIGH, HIGH_2, MIDDLE, LOW)
            ]
        )
    )
    keyring = load_keyring_file(keys)
    assert [keyring.rank(s.key_id) for s in (HIGH, HIGH_2, MIDDLE, LOW)] == [
        KEYRING.rank(s.key_id) for s in (HIGH, HIGH_2, MIDDLE, LOW)
    ]
    loaders = split(random.Random(f"processes-{PROCESS_SEED}"), len(bundles))
    db = connect()
    db.clear()
    processes = []
    for number, how in enumerate(loaders):
        corpus = tmp_path / f"loader-{number}.jsonl"
        corpus.write_bytes(b"".join(bundles[i] + b"\n" for i in how.runs[0]))
        args = [sys.executable, "-m", "pith_graph", "load", str(corpus), "--backend", "neo4j"]
        args += [*neo4j_server.cli_args(), "--trusted-keys", str(keys), "--batch-size", str(how.batch_size)]
        processes.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        stray.append(processes[-1].pid)
    for process in processes:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0 and "Traceback" not in stderr, stderr
        rest, retries = DEADLOCK_RETRY.subn("", stderr)
        assert not rest.strip(), stderr
        print(f"a loader retried {retries} times")  # shown with -s
    part = [bundles[i] for i in sorted({i for how in loaders for i in how.runs[0]})]
    memory = MemoryStore()
    load(memory, tmp_path, part, one_batch(len(part)))
    actual = db.export()
    assert actual == memory.export()
    check_names(actual, part, context=" | ".join(map(str, loaders)))


PRUNE_SEEDS = _seeds("4,12")


@pytest.mark.parametrize("seed", PRUNE_SEEDS)
def test_a_prune_during_a_load_ends_as_one_of_their_serial_orders(
    seed: int, connect: Callable[[], Neo4jStore], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The world is loaded; then, at once, a load of it in a random order under REVOKING
    (LOW's bundles are refused; others, pruned papers' losers among them, arrive) and a prune
    of what LOW's key vouched for."""
    bundles = world(seed).bundles
    rng = random.Random(f"prune-{seed}")
    order = rng.sample(range(len(bundles)), len(bundles))
    how = Arrival([order], rng.randint(1, 2), "files")
    context = f"seed={seed} {how}"
    before = MemoryStore()
    load(before, tmp_path, bundles, one_batch(len(bundles)))
    doomed = prune_revoked(copy.deepcopy(before), REVOKING, dry_run=True).removed
    if not doomed:
        pytest.skip(f"seed={seed}: LOW's key vouches for no paper of this world")
    candidates: list[GraphExport] = []
    for cut in range(len(order) + 1):  # prune after the first ``cut`` bundles of the load
        memory = copy.deepcopy(before)
        if cut:
            load(memory, tmp_path, bundles, Arrival([order[:cut]], how.batch_size, how.layout), REVOKING)
        prune_revoked(memory, REVOKING)
        if order[cut:]:
            load(memory, tmp_path, bundles, Arrival([order[cut:]], how.batch_size, how.layout), REVOKING)
        candidates.append(memory.export())

    db, loader, pruner = connect(), connect(), connect()
    db.clear()
    load(db, tmp_path, bundles, one_batch(len(bundles)))
    caplog.set_level(logging.INFO, logger=STORE_LOG)
    pruned: list[PruneReport] = []
    jobs = [
        lambda: load(loader, tmp_path, bundles, how, REVOKING),
        lambda: pruned.append(prune_revoked(pruner, REVOKING)),
    ]
    assert together(jobs) == [], context
    retried(caplog, context)
    assert pruned[0].removed == doomed, context
    actual = db.export()
    assert actual in candidates, context
    check_names(actual, bundles, context=context)


# -- found by probing the interleavings the worlds make possible ---------------------------------

BLOCKED = "SHOW TRANSACTIONS YIELD status WHERE status STARTS WITH 'Blocked' RETURN count(*) AS n"


def rows_of(
    paper: PaperSpec, signer: SignerIdentity, event_signer: SignerIdentity | None = None
) -> PaperRows:
    bundle = build_bundle(paper, signer, extra_event_signer=event_signer)
    return build_rows(verify_bundle(bundle, KEYRING), KEYRING)


def interleave(
    monkeypatch: pytest.MonkeyPatch, db: Neo4jStore, statement: str, other: Callable[[], object]
) -> Callable[[], None]:
    """Once this thread's transaction has run ``statement``, run ``other`` on a thread of its
    own until it ends or a transaction waits on a lock; returns the function that joins it."""
    errors: list[BaseException] = []

    def body() -> None:
        try:
            other()
        except BaseException as error:  # re-raised by finish
            errors.append(error)

    thread, main = threading.Thread(target=body), threading.current_thread()
    originals = {
        name: getattr(neo4j_batch, name) for name in ("_run", "read_rows")
    }  # statements run by either

    def pausing(original: Callable[..., Any]) -> Callable[..., Any]:
        def paused(tx: Any, ran: str, /, **params: Any) -> Any:
            done = original(tx, ran, **params)
            if ran == statement and threading.current_thread() is main and thread.ident is None:
                thread.start()
                deadline = time.monotonic() + 60
                while thread.is_alive() and not db.driver.execute_query(BLOCKED).records[0]["n"]:
                    assert time.monotonic() < deadline, "neither done nor waiting on a lock"
                    time.sleep(0.01)
            return done

        return paused

    def finish() -> None:
        assert thread.ident is not None, "the statement never ran"
        thread.join()
        for name, original in originals.items():
            monkeypatch.setattr(neo4j_batch, name, original)
        if errors:
            raise errors[0]

    for name, original in originals.items():
        monkeypatch.setattr(neo4j_batch, name, pausing(original))
    return finish


def test_a_category_emptied_by_a_concurrent_batch_keeps_the_paper_that_joins_it(
    connect: Callable[[], Neo4jStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batch B (a paper in math.OC) has merged its categories; batch A then replaces the only
    paper in math.OC with one in cs.LG and commits before B links its paper (a MATCH): the
    graph is that of the three bundles in any order. (MERGE_CATEGORIES locked nothing: A
    deleted math.OC as an orphan, and B's paper was written without its category.)"""
    first = PaperSpec.example("2401.00001", authors=["Cy Dunn"], primary_cat="math.OC", cross_cats=[])
    moved = dataclasses.replace(first, primary_cat="cs.LG", built_at="2026-08-01T00:00:00Z")
    joins = PaperSpec.example("2401.00002", authors=["Di Ek"], primary_cat="math.OC", cross_cats=[])
    a, b, db = connect(), connect(), connect()
    db.clear()
    db.apply([rows_of(first, HIGH)], KEYRING.rank)
    finish = interleave(
        monkeypatch, db, cypher.MERGE_CATEGORIES, lambda: a.apply([rows_of(moved, HIGH)], KEYRING.rank)
    )
    b.apply([rows_of(joins, MIDDLE)], KEYRING.rank)
    finish()
    expected = MemoryStore()
    for paper, signer in ((first, HIGH), (joins, MIDDLE), (moved, HIGH)):
        expected.apply([rows_of(paper, signer)], KEYRING.rank)
    assert db.export() == expected.export()


@pytest.mark.parametrize("how", ["replaced", "pruned"])
def test_signer_keys_a_concurrent_batch_adds_are_kept(
    connect: Callable[[], Neo4jStore], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Batch C writes the first paper signed with HIGH_2's key (high.invalid gains a key id)
    and, before it commits, A takes away another signature of high.invalid: a newer record
    of a paper it co-signed (an event) without it, or the pruning of a paper it signed.
    ``Signer.keyIds`` keeps both keys. (A read the keys, waited for C's lock, and wrote them
    back without C's.)"""
    cosigned = PaperSpec.example("2401.00001", authors=["Cy Dunn"], primary_cat="cs.LG", cross_cats=[])
    own = PaperSpec.example("2401.00002", authors=["Di Ek"], primary_cat="cs.LG", cross_cats=[])
    added = PaperSpec.example("2402.00001", authors=["Bo Chen"], primary_cat="math.OC", cross_cats=[])
    newer = dataclasses.replace(cosigned, built_at="2026-08-01T00:00:00Z")
    before = [rows_of(cosigned, MIDDLE, HIGH), rows_of(own, HIGH)]
    a, c, db = connect(), connect(), connect()
    db.clear()
    db.apply(before, KEYRING.rank)
    expected = MemoryStore()
    expected.apply(before, KEYRING.rank)
    expected.apply([rows_of(added, HIGH_2)], KEYRING.rank)

    def take_away(store: MemoryStore | Neo4jStore) -> object:
        if how == "replaced":
            return store.apply([rows_of(newer, MIDDLE)], KEYRING.rank)
        return store.remove_papers([before[1].paper.pith_number])

    take_away(expected)  # the graph of C, then A
    finish = interleave(monkeypatch, db, cypher.REFRESH_SIGNER_KEYS, lambda: take_away(a))
    c.apply([rows_of(added, HIGH_2)], KEYRING.rank)
    finish()
    assert db.export() == expected.export()


class _LoadsBetween:
    """A store whose first :meth:`papers_signed_with` lets ``load`` commit before it returns:
    a load that lands between pruning's read and its removal (two transactions)."""

    def __init__(self, store: Neo4jStore, load: Callable[[], object]) -> None:
        self.store, self.load, self.reads = store, load, 0

    def papers_signed_with(self, key_ids: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        found = self.store.papers_signed_with(key_ids)
        self.reads += 1
        if self.reads == 1:
            self.load()
        return found

    def remove_papers(self, pith_numbers: Sequence[str], unchanged: Unchanged | None = None) -> list[str]:
        return self.store.remove_papers(pith_numbers, unchanged)


def test_a_paper_a_load_takes_from_a_revoked_key_before_pruning_removes_it_stays(
    connect: Callable[[], Neo4jStore],
) -> None:
    """LOW's paper is doomed when pruning reads; a newer rebuild by HIGH (the same pith number)
    replaces it before pruning removes it: HIGH's paper stays, as after either order alone.
    (Pruning removed the pith numbers it had read, whatever bundle they held by then.)"""
    paper = PaperSpec.example("2401.00001", authors=["Cy Dunn"])
    newer = rows_of(dataclasses.replace(paper, built_at="2026-08-01T00:00:00Z"), HIGH)
    db, loader = connect(), connect()
    db.clear()
    db.apply([rows_of(paper, LOW)], KEYRING.rank)
    assert newer.paper.pith_number == rows_of(paper, LOW).paper.pith_number
    racing: Any = _LoadsBetween(db, lambda: loader.apply([newer], REVOKING.rank))  # a GraphStore in part
    assert prune_revoked(racing, REVOKING).removed == []
    expected = MemoryStore()
    expected.apply([newer], REVOKING.rank)
    assert db.export() == expected.export()


def test_a_store_closed_while_its_batch_waits_on_a_lock_lets_it_commit_then_closes(
    connect: Callable[[], Neo4jStore],
) -> None:
    """An interrupted load closes its store while its batch is still in flight on the writer
    thread (left to end on its own): the batch ends as it would have, committed whole, and the
    driver is closed after it. (Closed under the batch, the driver's connection was used by two
    threads at once: a load stopped by SIGTERM once ended in a BufferError, exit 70, not 130.)"""
    rows = rows_of(PaperSpec.example("2401.00001", authors=["Cy Dunn"]), HIGH)
    store, db = connect(), connect()
    db.clear()
    applied: list[AppliedBatch] = []
    errors: list[BaseException] = []

    def write() -> None:
        try:
            applied.append(store.apply([rows], KEYRING.rank))
        except BaseException as error:  # asserted below
            errors.append(error)

    writer = threading.Thread(target=write)
    with db.driver.session(database=db.database) as session:
        holder = session.begin_transaction()  # holds the lock the batch takes first
        holder.run(
            "MERGE (a:Alias {kind: $kind, value: $value}) SET a._lock = true",
            kind=rows.source[0],
            value=rows.source[1],
        ).consume()
        writer.start()
        deadline = time.monotonic() + 60
        while not db.driver.execute_query(BLOCKED).records[0]["n"]:
            assert writer.is_alive() and time.monotonic() < deadline, errors
            time.sleep(0.01)
        store.close()
        holder.rollback()
    writer.join(60)
    assert not errors and [applied[0].outcomes] == [[Outcome.INSERTED]], errors
    assert [paper.pith_number for paper in db.stored_papers([rows.source])] == [rows.paper.pith_number]
    with pytest.raises(DriverError, match="closed"):
        store.driver.verify_connectivity()
