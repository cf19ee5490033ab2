"""Parse → verify → build rows → write, streamed and parallel.

:func:`run` reads bundles lazily from the inputs, verifies them in worker processes (one
per core; small inputs stay in this process), and hands verified rows to a store in batches.
Memory stays bounded: only a fixed window of chunks is in flight, whatever the input size.
A rejected bundle is recorded with its code, message, file and line, and the run goes on.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import BinaryIO

from pith_graph.errors import BundleError, Source, printable
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.parse import DEFAULT_INPUT_LIMITS, InputLimits, parse_bundle
from pith_graph.loader.rows import PaperRows, build_rows
from pith_graph.loader.sources import RawBundle, expand_paths, iter_inputs
from pith_graph.loader.stores.base import GraphCounts, GraphStore, Outcome
from pith_graph.loader.verify import DEFAULT_CLOCK_SKEW, stated_bundle_digest, verify_bundle
from pith_graph.loader.workers import die_with_parent

__all__ = ["LoadReport", "Rejection", "WorkerConfig", "process_one", "run"]

CHUNK = 64
GROUP_BYTES = 1 << 20
MAX_FILE_TASK_BYTES = 32 << 20  # ~20k gzipped or ~2k plain bundles per worker task
MAX_KEPT_REJECTIONS = 1000


@dataclass(frozen=True, slots=True)
class Rejection:
    """One rejected bundle: a stable code, a message and where it came from."""

    code: str
    message: str
    source: Source

    def __str__(self) -> str:
        return f"{self.source}: {self.code}: {printable(self.message)}"


@dataclass(frozen=True, slots=True)
class Unchanged:
    """A bundle whose ``bundleSha256`` the store already holds (not re-verified)."""

    bundle_sha256: str


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """What every worker needs to process a bundle."""

    keyring: Keyring
    limits: InputLimits = DEFAULT_INPUT_LIMITS
    known: frozenset[str] = frozenset()
    clock_skew: float = DEFAULT_CLOCK_SKEW


@dataclass(slots=True)
class LoadReport:
    """What a run did. ``accepted`` = inserted + replaced; ``outranked``: bundles not applied
    because a higher-ranked signer holds their source id; ``displaced``: stored papers
    removed because a higher-ranked signer's bundle took their source id over."""

    seen: int = 0
    inserted: int = 0
    replaced: int = 0
    duplicate: int = 0
    stale: int = 0
    outranked: int = 0
    displaced: int = 0
    rejected: int = 0
    rejections: list[Rejection] = field(default_factory=list)
    counts: GraphCounts | None = None
    seconds: float = 0.0

    @property
    def accepted(self) -> int:
        return self.inserted + self.replaced

    @property
    def verified(self) -> int:
        return self.seen - self.rejected

    def add_rejection(self, rejection: Rejection) -> None:
        self.rejected += 1
        if len(self.rejections) < MAX_KEPT_REJECTIONS:
            self.rejections.append(rejection)

    def add_outcome(self, outcome: Outcome) -> None:
        if outcome is Outcome.INSERTED:
            self.inserted += 1
        elif outcome is Outcome.REPLACED:
            self.replaced += 1
        elif outcome is Outcome.DUPLICATE:
            self.duplicate += 1
        elif outcome is Outcome.OUTRANKED:
            self.outranked += 1
        elif outcome is Outcome.STALE:
            self.stale += 1
        else:
            raise ValueError(f"not an outcome: {outcome!r}")

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary (what ``--json`` prints)."""
        return {
            "seen": self.seen,
            "verified": self.verified,
            "accepted": self.accepted,
            "inserted": self.inserted,
            "replaced": self.replaced,
            "duplicate": self.duplicate,
            "stale": self.stale,
            "outranked": self.outranked,
            "displaced": self.displaced,
            "rejected": self.rejected,
            "rejections": [
                {
                    "code": r.code,
                    "message": printable(r.message),
                    "file": r.source.shown_path,
                    "line": r.source.line,
                }
                for r in self.rejections
            ],
            "nodes": self.counts.nodes if self.counts else None,
            "edges": self.counts.edges if self.counts else None,
            "seconds": round(self.seconds, 3),
        }


Result = PaperRows | Unchanged | Rejection


def process_one(raw: RawBundle, config: WorkerConfig) -> Result:
    """Parse, (skip if already stored,) verify and build rows for one bundle."""
    try:
        bundle = parse_bundle(raw.data, config.limits)
        if config.known:
            digest = stated_bundle_digest(bundle)
            if digest is not None and digest in config.known:
                return Unchanged(digest)
        return build_rows(verify_bundle(bundle, config.keyring, clock_skew=config.clock_skew), config.keyring)
    except BundleError as err:
        return Rejection(err.code.value, err.message, raw.source)


_worker_config: WorkerConfig | None = None


def _init_worker(config: WorkerConfig, parent_pid: int) -> None:
    global _worker_config
    die_with_parent(parent_pid)  # a killed loader must not leave its workers behind
    _worker_config = config


def _result(item: RawBundle | BundleError, config: WorkerConfig) -> Result:
    if isinstance(item, BundleError):
        return Rejection(item.code.value, item.message, item.source or Source("?"))
    return process_one(item, config)


def _process_chunk(chunk: list[RawBundle | BundleError]) -> list[Result]:
    """Worker task: bundles the parent read."""
    assert _worker_config is not None, "worker not initialised"
    return [_result(item, _worker_config) for item in chunk]


def _chunks(items: Iterator[RawBundle | BundleError], size: int) -> Iterator[list[RawBundle | BundleError]]:
    while chunk := list(islice(items, size)):
        yield chunk


def _process_files(paths: list[str]) -> list[Result]:
    """Worker task: whole files, read by the worker itself (the parent only collects)."""
    config = _worker_config
    assert config is not None, "worker not initialised"
    inputs = iter_inputs(paths, max_bytes=config.limits.max_bytes)
    return [_result(item, config) for item in inputs]


def _file_groups(files: list[str], workers: int) -> list[list[str]] | None:
    """Files grouped into tasks of about ``GROUP_BYTES`` each, when that spreads the work.

    ``None`` when reading in the parent is better: stdin, too few groups to keep every
    worker busy, or a file over ``MAX_FILE_TASK_BYTES`` (a worker returns a task's results
    at once, so a huge file must be split into chunks, which only the parent can do; this
    keeps memory bounded whatever the input).
    """
    if "-" in files:
        return None
    groups: list[list[str]] = []
    size = GROUP_BYTES
    for path in files:
        if size >= GROUP_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(path)
        try:
            file_size = os.path.getsize(path)
        except OSError:
            file_size = GROUP_BYTES  # unreadable: its own task, reported by the worker
        if file_size > MAX_FILE_TASK_BYTES:
            return None
        size += file_size
    return groups if len(groups) >= 2 * workers else None


def _pool(workers: int, config: WorkerConfig) -> ProcessPoolExecutor:
    # fork: workers inherit the loaded modules and never re-import a script's __main__
    # (forkserver and spawn would, breaking scripts without a main guard).
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    return ProcessPoolExecutor(workers, context, initializer=_init_worker, initargs=(config, os.getpid()))


def _ordered(futures: Iterator[Future[list[Result]]], window: int) -> Iterator[Result]:
    """Results of ``futures`` in submission order, at most ``window`` tasks in flight."""
    in_flight: deque[Future[list[Result]]] = deque()
    for future in futures:
        in_flight.append(future)
        while len(in_flight) > window:
            yield from in_flight.popleft().result()
    while in_flight:
        yield from in_flight.popleft().result()


def _results(
    files: list[str], config: WorkerConfig, workers: int, stdin: BinaryIO | None
) -> Iterator[Result]:
    """Results in input order, from worker processes when the input is large enough."""
    groups = _file_groups(files, workers) if workers > 1 else None
    if groups is not None:
        with _pool(workers, config) as pool:
            yield from _ordered((pool.submit(_process_files, g) for g in groups), workers * 2)
        return
    inputs = iter_inputs(files, max_bytes=config.limits.max_bytes, stdin=stdin)
    chunks = _chunks(inputs, CHUNK)
    head = list(islice(chunks, 2))
    if workers <= 1 or len(head) < 2:
        for chunk in chain(head, chunks):
            yield from (_result(item, config) for item in chunk)
        return
    with _pool(workers, config) as pool:
        tasks = (pool.submit(_process_chunk, chunk) for chunk in chain(head, chunks))
        yield from _ordered(tasks, workers * 4)


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector, restoring its state after.

    Rows, bundles and the graph hold no reference cycles, so reference counting frees
    everything a load discards. Left on, the collector's full passes rescan the whole
    growing graph (about 1.5 s each at 100k papers): a fifth of a large in-memory load.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run(
    paths: Iterable[str],
    *,
    keyring: Keyring,
    store: GraphStore | None = None,
    limits: InputLimits = DEFAULT_INPUT_LIMITS,
    workers: int | None = None,
    batch_size: int = 1000,
    skip_known: bool = True,
    clock_skew: float = DEFAULT_CLOCK_SKEW,
    stdin: BinaryIO | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_rejection: Callable[[Rejection], None] | None = None,
    exclude: Iterable[str | os.PathLike[str]] = (),
) -> LoadReport:
    """Verify every bundle of ``paths`` and, given a ``store``, write the accepted ones.

    Without a store this is ``pith-graph verify``. Files of ``exclude`` (the trusted-keys
    files) are never read as bundles, even inside a folder of ``paths``. Raises
    :class:`~pith_graph.errors.UsageError` for a path that does not exist (before reading
    anything) and :class:`~pith_graph.errors.StoreError` when the store fails.
    """
    started = time.perf_counter()
    files = expand_paths(paths, exclude=exclude)
    known = frozenset(store.known_bundle_digests()) if (store is not None and skip_known) else frozenset()
    config = WorkerConfig(keyring, limits, known, clock_skew)
    report = LoadReport()
    batch: list[PaperRows] = []

    def flush() -> None:
        if store is not None and batch:
            applied = store.apply(batch, keyring.rank)
            for outcome in applied.outcomes:
                report.add_outcome(outcome)
            report.displaced += len(applied.removed)
        batch.clear()

    with cyclic_gc_paused():
        for result in _results(
            files, config, workers if workers is not None else (os.cpu_count() or 1), stdin
        ):
            report.seen += 1
            if isinstance(result, Rejection):
                report.add_rejection(result)
                if on_rejection is not None:
                    on_rejection(result)
            elif isinstance(result, Unchanged):
                report.duplicate += 1
            elif store is not None:
                batch.append(result)
                if len(batch) >= batch_size:
                    flush()
            if on_progress is not None:
                on_progress(report.seen)
        flush()
    if store is not None:
        report.counts = store.counts()
    report.seconds = time.perf_counter() - started
    return report
