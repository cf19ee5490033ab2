"""A run's memory stays bounded however slowly its results are taken: workers run at most
``AHEAD`` tasks and ``HEAVY_PARTS`` parts of rows ahead of the loader, the loader holds the
batch being written and at most the next one, and the cyclic garbage collector is paused
for the run and restored after (``loader/pool.py``, ``loader/pipeline.py``; the README's
"What a load does")."""

from __future__ import annotations

import gc
import multiprocessing
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

import pith_graph.loader.pool as pool
from pith_graph.errors import BundleError, StoreError, StoreErrorCode
from pith_graph.loader.facade import SAMPLES, load_graph, resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import Rejection, run
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.sources import RawBundle
from pith_graph.loader.stores.base import AppliedBatch
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.tasks import Task
from pith_graph.testing.corpus import corpus_signers, generate_bundles
from pith_graph.testing.signer import SignerIdentity

WORKERS = 2


def test_the_bounds_are_the_documented_ones() -> None:
    assert (pool.AHEAD, pool.HEAVY_PARTS) == (2, 4)  # README: "two tasks, and four parts"


class _Counting:
    """A worker's handler that counts, in memory shared by every worker, the bundles it
    handled and the tasks it began; every result is heavy (as graph rows are)."""

    def __init__(self, handled: Any, begun: Any) -> None:
        self.handled, self.begun = handled, begun
        self.path: str | None = None

    def handle(self, item: RawBundle | BundleError) -> object:
        assert isinstance(item, RawBundle)
        with self.handled.get_lock():
            self.handled.value += 1
        if item.source.path != self.path:  # a worker's tasks are one file each, in turn
            self.path = item.source.path
            with self.begun.get_lock():
                self.begun.value += 1
        return item.source.line

    def heavy(self, result: object) -> bool:
        return True

    def close(self) -> None:
        return None


def _settled(counters: Sequence[Any]) -> list[int]:
    """The counters once they have stopped moving for 0.1 s: the workers have gone as far
    ahead as they may (at most two seconds: a loaded machine may pause a worker a while)."""
    values, still, deadline = [c.value for c in counters], 0, time.monotonic() + 2
    while still < 20 and time.monotonic() < deadline:
        time.sleep(0.005)
        now = [c.value for c in counters]
        still = still + 1 if now == values else 0
        values = now
    return values


def _slow_run(tmp_path: Path, files: int, lines: int) -> tuple[int, int]:
    """Run one task per file of ``lines`` lines; take each part only once the workers have
    settled. The most tasks begun and not yet taken whole (the one being taken included),
    and the most bundles handled and not yet taken, at any part."""
    tasks = []
    for index in range(files):
        path = tmp_path / f"{index}.jsonl"
        path.write_bytes(b"".join(b'{"n": %d}\n' % line for line in range(lines)))
        tasks.append(Task("files", (str(path),)))
    context = multiprocessing.get_context("fork")
    handled, begun = context.Value("i", 0), context.Value("i", 0)

    def make_handler(_index: int) -> _Counting:
        return _Counting(handled, begun)

    taken = finished = most_tasks = most_bundles = 0
    for part in pool.run_tasks(tasks, WORKERS, make_handler, 1 << 20):
        taken += len(part.results)
        now_handled, now_begun = _settled([handled, begun])
        most_tasks = max(most_tasks, now_begun - finished)
        most_bundles = max(most_bundles, now_handled - taken)
        finished += part.last
    assert taken == files * lines and finished == files
    return most_tasks, most_bundles


def test_workers_run_at_most_two_tasks_ahead_of_a_slow_loader(tmp_path: Path) -> None:
    """Tasks of one bundle each: the task bound binds (a worker's parts never fill)."""
    most_tasks, _ = _slow_run(tmp_path, files=12, lines=1)
    assert most_tasks == WORKERS * pool.AHEAD


def test_workers_hold_at_most_four_parts_of_rows_ahead_of_a_slow_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long tasks in parts of two: each worker sends ``HEAVY_PARTS`` parts the loader has
    not taken, fills one more, then waits."""
    monkeypatch.setattr(pool, "PART_RESULTS", 2)  # the forked workers see it too
    _, most_bundles = _slow_run(tmp_path, files=4, lines=12)
    assert most_bundles == WORKERS * (pool.HEAVY_PARTS + 1) * 2


def _signed_lines(tmp_path: Path, lines: list[bytes], signer: SignerIdentity) -> tuple[str, Keyring]:
    """``lines`` as a JSON Lines file, and the keyring that trusts ``signer`` (from a keys file)."""
    path, keys = tmp_path / "bundles.jsonl", tmp_path / "keys.json"
    path.write_bytes(b"".join(lines))
    keys.write_bytes(orjson.dumps([signer.keyring_entry()]))
    return str(path), resolve_keyring(keys)


class _SlowWrites(MemoryStore):
    """A store that writes on the loader's writer thread (as Neo4j's does), slowly, noting
    how far the loader had read when each write ended."""

    background_writes = True

    def __init__(self, progress: list[int]) -> None:
        super().__init__()
        self.progress = progress
        self.batches: list[list[str]] = []
        self.read_by_end: list[int] = []

    def apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int]) -> AppliedBatch:
        self.batches.append([rows.pith_number for rows in batch])
        time.sleep(0.2)  # long enough for the loader to read everything, were it not held
        self.read_by_end.append(max(self.progress, default=0))
        return super().apply(batch, rank)


def test_the_loader_collects_only_the_next_batch_while_one_is_written(tmp_path: Path) -> None:
    """Bundle ``i`` on line ``2i+1`` and a line of garbage after each (its rejection shows
    how far the loader has read). While batch ``k`` is written the loader reads batch ``k+1``
    and waits before its last bundle's rejection: two batches in memory, no more."""
    signer, _ = corpus_signers(4)
    bundles = list(generate_bundles(24, signer=signer, seed=4))
    path, keyring = _signed_lines(tmp_path, [bundle + b"\n{not json\n" for bundle in bundles], signer)
    progress: list[int] = []

    def rejected(rejection: Rejection) -> None:
        assert rejection.source.line is not None
        progress.append(rejection.source.line)

    store = _SlowWrites(progress)
    report = run([path], keyring=keyring, store=store, workers=1, batch_size=4, on_rejection=rejected)
    assert report.rejected == 24
    piths = [orjson.loads(bundle)["pith_number"] for bundle in bundles]
    assert store.batches == [piths[at : at + 4] for at in range(0, 24, 4)]  # one at a time, in order
    # While batch k was written, the loader read at most up to the garbage before batch k+1's
    # last bundle (line 2(4k+7)+1), then waited for the write; it does get there (a loaded
    # machine may keep it from doing so for every batch, never for all of them).
    held = [8 * k + 14 for k in range(5)]
    assert all(read <= bound for read, bound in zip(store.read_by_end[:-1], held, strict=True))
    assert any(read == bound for read, bound in zip(store.read_by_end[:-1], held, strict=True))


class _StuckWrites(MemoryStore):
    """A store that writes in the background and whose first write never ends by itself (a
    server gone or frozen): it ends when told to stop (``interrupt``), as Neo4j's does."""

    background_writes = True

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.stopped = threading.Event()

    def interrupt(self) -> None:
        self.stopped.set()

    def apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int]) -> AppliedBatch:
        self.started.set()
        if not self.stopped.wait(60):
            raise AssertionError("never told to stop")
        raise StoreError(StoreErrorCode.WRITE_FAILED, "interrupted")


def test_an_interrupted_load_stops_the_write_in_flight_and_does_not_wait_for_it(tmp_path: Path) -> None:
    """Ctrl-C (here: raised by the rejection callback) while a batch is being written: the
    load ends at once, telling the store to stop that write. It used to wait for the write
    to end by itself: with a server gone or frozen, a minute or more."""
    signer, _ = corpus_signers(4)
    lines = [bundle + b"\n" for bundle in generate_bundles(8, signer=signer, seed=4)]
    path, keyring = _signed_lines(
        tmp_path, [*lines[:5], b"{not json\n", *lines[5:]], signer
    )  # read as batch 1 is written
    store = _StuckWrites()

    def interrupted(rejection: Rejection) -> None:
        assert store.started.wait(10), "the first batch was not written"
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run([path], keyring=keyring, store=store, workers=1, batch_size=4, on_rejection=interrupted)
    assert store.stopped.is_set() and time.monotonic() - started < 10


def test_an_interrupt_while_the_load_waits_for_its_last_batch_stops_that_batch(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT, from a timer) once everything is read and the load waits for its last
    batch, the usual moment when writing is the slower part: the store is told to stop it
    too (it was not: the batch went on retrying, and said so after "interrupted")."""
    signer, _ = corpus_signers(4)
    path, keyring = _signed_lines(
        tmp_path, [b + b"\n" for b in generate_bundles(3, signer=signer, seed=4)], signer
    )
    store = _StuckWrites()
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)  # raises KeyboardInterrupt
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            run([path], keyring=keyring, store=store, workers=1, batch_size=10)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert store.started.is_set() and store.stopped.is_set() and time.monotonic() - started < 10


# -- the cyclic garbage collector --------------------------------------------------------------


class _Watching(MemoryStore):
    """Notes whether the collector runs while batches are written; fails if told to."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.collector: list[bool] = []

    def apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int]) -> AppliedBatch:
        self.collector.append(gc.isenabled())
        if self.fail:
            raise StoreError(StoreErrorCode.WRITE_FAILED, "refused")
        return super().apply(batch, rank)


def test_the_cyclic_collector_is_paused_during_a_run_and_restored_after() -> None:
    assert gc.isenabled()
    store = _Watching()
    run([SAMPLES], keyring=resolve_keyring(), store=store, workers=1)
    assert store.collector == [False]
    assert gc.isenabled()
    load_graph([SAMPLES], workers=1)
    assert gc.isenabled()


def test_the_cyclic_collector_is_restored_after_a_run_that_raises() -> None:
    store = _Watching(fail=True)
    with pytest.raises(StoreError):
        run([SAMPLES], keyring=resolve_keyring(), store=store, workers=1)
    assert store.collector == [False]
    assert gc.isenabled()


def test_a_collector_paused_before_the_run_stays_paused() -> None:
    gc.disable()
    try:
        load_graph([SAMPLES], workers=1)
        assert not gc.isenabled()
    finally:
        gc.enable()


# A run whose worker 0 is killed while worker 1's results fill its pipe, in a process that
# turns SIGTERM into an interrupt (as ``pith-graph import`` does). Run as a script of its own:
# on the old code it never ended (worker 1 inherited the handler, caught the pool's SIGTERM,
# and waited at exit to flush results nobody read; the pool waited for it without a bound).
_KILLED_BESIDE_A_FULL_PIPE = """
import os, signal, sys, time
import pith_graph.loader.pool as pool
from pith_graph.errors import StoreError
from pith_graph.loader.tasks import Task

def interrupt(signum, frame):
    raise KeyboardInterrupt

class Handler:
    def __init__(self, index):
        self.index = index
    def handle(self, item):
        if self.index == 0:
            time.sleep(1.0)  # worker 1 meanwhile sends more than its pipe holds
            os.kill(os.getpid(), signal.SIGKILL)
        return "x" * 100_000
    def heavy(self, result):
        return False
    def close(self):
        return None

signal.signal(signal.SIGTERM, interrupt)
tasks = [Task("files", (sys.argv[1],)), Task("files", (sys.argv[2],))]
try:
    for part in pool.run_tasks(tasks, 2, Handler, 1 << 20):
        pass
except StoreError as error:
    print(error.code.value, error.message)
"""


def test_a_killed_worker_ends_the_run_although_its_sibling_s_pipe_is_full(tmp_path: Path) -> None:
    """The run ends ``worker_failed`` at once: worker 1 ends at the pool's SIGTERM whatever
    handler the parent set (and the pool does not wait for a worker without a bound)."""
    paths = []
    for name in ("slow", "full"):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(b"".join(b'{"n": %d}\n' % line for line in range(100)))  # 10 MB of results
        paths.append(str(path))
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_BESIDE_A_FULL_PIPE, *paths],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("worker_failed verification worker 1 (pid "), done.stdout
    assert "was killed by SIGKILL" in done.stdout, done.stdout
    assert time.monotonic() - started < 30


def test_workers_end_at_sigterm_whatever_handler_the_parent_set() -> None:
    """Forked workers (the pool's and :func:`in_processes`') do not keep the parent's Python
    SIGTERM handler."""
    from pith_graph.loader.workers import in_processes

    def default(_index: int) -> bool:
        return signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    class Reporting:
        def __init__(self, index: int) -> None:
            self.index = index

        def handle(self, item: RawBundle | BundleError) -> object | None:
            return None

        def heavy(self, result: object) -> bool:
            return False

        def close(self) -> bool:
            return default(self.index)

    closed: list[object] = []
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        for _ in pool.run_tasks([], WORKERS, Reporting, 1 << 20, on_close=closed.extend):
            pass
        shares = in_processes(3, default)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert closed == [True] * WORKERS
    assert shares[1:] == [True, True]  # share 0 runs here, where the handler stays
    assert shares[0] is False
