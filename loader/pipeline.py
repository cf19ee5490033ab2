"""Parse → verify → build rows → write, streamed and parallel.

:func:`run` reads bundles lazily from the inputs, verifies them in worker processes (one
per core; small inputs stay in this process), and hands verified rows to a store in batches.
Memory stays bounded: only a fixed window of chunks is in flight, whatever the input size.
A rejected bundle is recorded with its code, message, file and line, and the run goes on;
any other exception while one bundle is parsed, verified or turned into rows is a bug: that
bundle alone is rejected as ``internal_error`` (nothing of it is written).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any, BinaryIO

from pith_graph.errors import BundleError, RejectCode, Source, StoreError, StoreErrorCode
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.parse import DEFAULT_INPUT_LIMITS, InputLimits, parse_bundle
from pith_graph.loader.pool import Handler, cyclic_gc_paused, run_tasks
from pith_graph.loader.report import LoadReport, Rejection
from pith_graph.loader.rows import PaperRows, build_rows
from pith_graph.loader.sources import RawBundle, expand_paths, iter_inputs
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.stores.rules import Outcome, SourceKey, plan_batch
from pith_graph.loader.tasks import Task, plan_tasks
from pith_graph.loader.trust import check_clock_skew, still_trusted
from pith_graph.loader.verify import DEFAULT_CLOCK_SKEW, stated_bundle_digest, verify_bundle
from pith_graph.loader.writer import BatchWriter

__all__ = [
    "BundleHandler",
    "LoadReport",
    "Rejection",
    "WorkerConfig",
    "check_one",
    "parts",
    "process_one",
    "run",
]

log = logging.getLogger(__name__)

CHUNK = 64
#: How far below the loader's the verification workers' CPU priority is (``os.nice``) while a
#: store writes on a thread of its own: the writes are then what the load waits for (a local
#: server's query thread among them), and the workers, which finish each batch early, fill
#: the CPU they leave. ``benchmarks/bench_import.py`` measures it against workers at the
#: loader's priority.
BACKGROUND_WORKER_NICENESS = 10
#: Below this much (estimated inflated) input, verification stays in this process.
PARALLEL_MIN_BYTES = 2 << 20
#: A batch holds at most this many author, category and alias rows (or one bundle), whatever
#: its bundle count: ten bundles of 25,000 authors in one batch took a 1 GB Neo4j down (heap);
#: 100,000 rows held. Above an ordinary batch: 5,000 generated bundles hold about 62,000.
MAX_BATCH_ROWS = 80_000


@dataclass(frozen=True, slots=True)
class Unchanged:
    """A bundle stored already, signed with the same bundle key (``known_bundles``): not
    re-verified, with what the update rules read of it (a ``Candidate``; no pith number: not
    checked later). (In a pass of ``WorkerConfig.only``, also any bundle that pass does not ask for.)"""

    bundle_sha256: str
    pith_number: str = ""
    built_at: str = ""
    source: SourceKey = ("", "")
    source_version: int = 0
    bundle_key_id: str = ""


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """What every worker needs to process a bundle (``known``: the store's ``known_bundles``)."""

    keyring: Keyring
    limits: InputLimits = DEFAULT_INPUT_LIMITS
    known: Mapping[str, str] = field(default_factory=dict)
    clock_skew: float = DEFAULT_CLOCK_SKEW
    only: frozenset[str] | None = None  # a pass over these bundles (digests) alone: run's passes again

    def __post_init__(self) -> None:
        check_clock_skew(self.clock_skew)


Result = PaperRows | Unchanged | Rejection


def _internal_error(err: Exception, source: Source) -> Rejection:
    """The rejection of a bundle whose checking raised ``err``: a bug in pith-graph, never the
    bundle's fault alone. The message names the exception's type only (its text may quote the
    bundle); the traceback goes to the debug log."""
    log.debug("internal error on %s", source, exc_info=err)
    return Rejection(
        RejectCode.INTERNAL_ERROR.value,
        f"checking this bundle raised {type(err).__name__}: a bug in pith-graph, please report it",
        source,
    )


def _signature(bundle: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``bundle_signature`` object, as a bundle not yet verified states it (or nothing)."""
    return signature if isinstance(signature := bundle.get("bundle_signature"), dict) else {}


def _stored_digest(bundle: Mapping[str, Any], config: WorkerConfig) -> str | None:
    """Its ``bundleSha256`` if ``config.known`` maps it to the key ``bundle_signature`` names,
    its keys are still trusted (:func:`still_trusted`) and it recomputes."""
    stated = _signature(bundle)
    digest = stated.get("bundle_sha256")
    stored = isinstance(digest, str) and config.known.get(digest, ...) == stated.get("key_id")
    return stated_bundle_digest(bundle) if stored and still_trusted(bundle, config.keyring) else None


def _unchanged(bundle: Mapping[str, Any], digest: str) -> Unchanged:
    """A bundle skipped as stored. Its body (all but ``bundle_signature``) hashes to a stored
    paper's digest, so it is a body verified when that paper was written."""
    source, signature = bundle["canonical_record"]["source"], bundle["bundle_signature"]
    return Unchanged(
        digest,
        bundle["pith_number"],
        bundle["built_at"],
        (source["kind"], source["id"]),
        source["version"],
        signature["key_id"],
    )


def process_one(raw: RawBundle, config: WorkerConfig) -> Result:
    """Parse, (skip if stored with the same bundle key,) verify and build rows for one bundle."""
    try:
        bundle = parse_bundle(raw.data, config.limits)
        if config.only is not None and _signature(bundle).get("bundle_sha256") not in config.only:
            return Unchanged("")  # not this pass's (a rejection is not counted in such a pass either)
        if config.known and (digest := _stored_digest(bundle, config)) is not None:
            return _unchanged(bundle, digest)
        return build_rows(verify_bundle(bundle, config.keyring, clock_skew=config.clock_skew), config.keyring)
    except BundleError as err:
        return Rejection(err.code.value, err.message, raw.source)
    except Exception as err:  # a bug: this bundle is rejected, the batch goes on
        return _internal_error(err, raw.source)


def check_one(raw: RawBundle, config: WorkerConfig) -> Rejection | None:
    """Parse and verify one bundle, and check its rows as a load would (``pith-graph verify``)."""
    try:
        verified = verify_bundle(
            parse_bundle(raw.data, config.limits), config.keyring, clock_skew=config.clock_skew
        )
        build_rows(verified, config.keyring)  # its rows may not fit Neo4j's indexes: as a load
    except BundleError as err:
        return Rejection(err.code.value, err.message, raw.source)
    except Exception as err:  # a bug: this bundle is rejected, the batch goes on
        return _internal_error(err, raw.source)
    return None


@dataclass(frozen=True, slots=True)
class BundleHandler:
    """The worker's handler for ``run``: rows of accepted bundles (``rows``), or only the
    rejections (verification alone). Built in each worker by :meth:`__call__`."""

    config: WorkerConfig
    rows: bool = True

    def __call__(self, _index: int) -> BundleHandler:
        return self

    def handle(self, item: RawBundle | BundleError) -> Result | None:
        if isinstance(item, BundleError):
            return Rejection(item.code.value, item.message, item.source or Source("?"))
        return process_one(item, self.config) if self.rows else check_one(item, self.config)

    def heavy(self, result: object) -> bool:
        return isinstance(result, PaperRows)

    def close(self) -> None:
        """Nothing to flush."""


def _renumbered(results: list[Result], offset: int) -> list[Result]:
    """Rejections of a byte range, numbered from the file's first line."""
    if not offset:
        return results
    return [
        Rejection(r.code, r.message, Source(r.source.path, r.source.line + offset))
        if isinstance(r, Rejection) and r.source.line is not None
        else r
        for r in results
    ]


def _cannot_open(result: Result) -> bool:
    """A read error of a whole file (no line): what each of its ranges reports alike."""
    return (
        isinstance(result, Rejection) and result.code == RejectCode.UNREADABLE and result.source.line is None
    )


def _stdin_tasks(files: list[str], limits: InputLimits, stdin: BinaryIO | None) -> Iterator[Task]:
    inputs = iter_inputs(files, max_bytes=limits.max_bytes, stdin=stdin)
    while chunk := tuple(islice(inputs, CHUNK)):
        yield Task("bundles", bundles=chunk)


def _estimated_bytes(files: list[str]) -> int:
    total = 0
    for path in files:
        try:
            total += os.path.getsize(path) * (10 if path.endswith(".gz") else 1)
        except OSError:
            continue
    return total


def parts(
    files: list[str],
    make_handler: Callable[[int], Handler],
    limits: InputLimits,
    workers: int,
    stdin: BinaryIO | None = None,
    on_close: Callable[[list[object]], None] | None = None,
    niceness: int = 0,
) -> Iterator[tuple[int, list[Any]]]:
    """``(bundles seen, results)`` for ``files`` in input order: in worker processes when
    the input is large enough (they read their own tasks; ``niceness`` lowers their CPU
    priority), else in this process."""
    if workers <= 1 or ("-" not in files and _estimated_bytes(files) < PARALLEL_MIN_BYTES):
        handler = make_handler(0)
        seen, found = 0, []
        try:
            for item in iter_inputs(files, max_bytes=limits.max_bytes, stdin=stdin):
                seen += 1
                if (result := handler.handle(item)) is not None:
                    found.append(result)
                if seen >= CHUNK:
                    yield seen, found
                    seen, found = 0, []
        finally:
            closed = handler.close()
        yield seen, found
        if on_close is not None:
            on_close([closed])
        return
    tasks = _stdin_tasks(files, limits, stdin) if "-" in files else plan_tasks(files, workers)
    offsets: dict[str, int] = {}  # lines before the range, from its file's first range on
    unreadable: set[str] = set()  # files a range of which could not be opened
    for part in run_tasks(tasks, workers, make_handler, limits.max_bytes, on_close, niceness):
        if part.task.kind == "range":
            path = part.task.path
            if part.task.start == 0:  # a file read again restarts
                unreadable.discard(path)
            offset = 0 if part.task.start == 0 else offsets[path]
            seen, results = part.seen, _renumbered(part.results, offset)
            if path in unreadable:  # gone (or unreadable) since planning: reported once
                kept = [r for r in results if not _cannot_open(r)]
                seen, results = seen - (len(results) - len(kept)), kept
            elif any(_cannot_open(r) for r in results):
                unreadable.add(path)
            yield seen, results
            if part.last:
                offsets[path] = offset + part.lines
        else:
            yield part.seen, part.results


#: Passes over the input again for bundles skipped as stored and removed meanwhile (each pass
#: can meet another prune); past them the load stops with an error saying so.
_PASSES_AGAIN = 3
#: Skipped bundles checked at a time: still stored, or removed since the load began?
_CHECK_EVERY = 8192
#: What the update rules make of a skipped bundle the store no longer holds, nor anything
#: that outranks it: a load after the prune would write it.
_NOT_HELD = frozenset({Outcome.INSERTED, Outcome.REPLACED})


def _not_held(store: GraphStore, skipped: list[Unchanged], rank: Callable[[str], int]) -> set[str]:
    """The digests of ``skipped`` whose papers are neither still stored as these bundles nor
    superseded by what is (a newer bundle of the version, a higher-ranked signer's): decided
    by the update rules against the stored papers of their source ids (a prune alongside may
    have removed a paper, and this load or another written an older bundle of it since)."""
    outcomes = plan_batch(skipped, store.stored_papers(b.source for b in skipped), rank).outcomes
    return {b.bundle_sha256 for b, outcome in zip(skipped, outcomes, strict=True) if outcome in _NOT_HELD}


def _load(
    files: list[str],
    config: WorkerConfig,
    *,
    store: GraphStore | None,
    report: LoadReport,
    batch_size: int,
    workers: int,
    stdin: BinaryIO | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_rejection: Callable[[Rejection], None] | None = None,
    niceness: int | None = None,
) -> set[str]:
    """One pass of :func:`run` over ``files`` into ``report``; the digests of the bundles it
    skipped as stored that the store no longer holds by the time they are checked (every
    :data:`_CHECK_EVERY`, and at the end: :func:`_not_held`). A pass of ``config.only``
    writes those, counted by what becomes of them (the pass before counted each as a
    duplicate), and nothing else."""
    batch: list[PaperRows] = []
    rows = 0  # the batch's author, category and alias rows
    writer = BatchWriter(store, config.keyring.rank, report)
    skipped: dict[str, Unchanged] = {}  # pith number -> bundle skipped as stored
    gone: set[str] = set()

    def check() -> None:
        if store is not None and skipped:
            gone.update(_not_held(store, list(skipped.values()), config.keyring.rank))
            skipped.clear()

    with cyclic_gc_paused(), writer:
        handler = BundleHandler(config, rows=store is not None)
        if niceness is None:
            niceness = BACKGROUND_WORKER_NICENESS if writer.background else 0
        for seen, results in parts(files, handler, config.limits, workers, stdin, niceness=niceness):
            for result in results:
                if config.only is not None and not isinstance(result, PaperRows):
                    continue  # counted by the pass before (a rejection: reported there)
                if isinstance(result, Rejection):
                    report.add_rejection(result)
                    if on_rejection is not None:
                        on_rejection(result)
                elif isinstance(result, Unchanged):
                    report.duplicate += 1
                    if result.pith_number:
                        skipped[result.pith_number] = result
                        if len(skipped) >= _CHECK_EVERY:
                            check()
                elif store is not None:
                    report.duplicate -= config.only is not None  # counted as one by the pass before
                    size = len(result.authors) + len(result.categories) + len(result.aliases)
                    if batch and rows + size > MAX_BATCH_ROWS:  # at most that many, or one bundle
                        writer.write(batch)
                        batch, rows = [], 0
                    batch.append(result)
                    rows += size
                    if len(batch) >= batch_size:
                        writer.write(batch)
                        batch, rows = [], 0
            if config.only is None:
                report.seen += seen
                if on_progress is not None and seen:
                    on_progress(report.seen)
        writer.write(batch)
    check()
    return gone


def run(
    paths: Iterable[str | os.PathLike[str]],
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
    worker_niceness: int | None = None,
) -> LoadReport:
    """Verify every bundle of ``paths`` and, given a ``store``, write the accepted ones.

    Without a store this is ``pith-graph verify``. Files of ``exclude`` (the trusted-keys
    files) are never read as bundles, even inside a folder of ``paths``. Worker processes run
    ``worker_niceness`` below this process's CPU priority (by default
    ``BACKGROUND_WORKER_NICENESS`` for a store that writes in the background, else 0). Raises
    :class:`~pith_graph.errors.UsageError` for a path that does not exist (before reading
    anything) and :class:`~pith_graph.errors.StoreError` when the store fails.
    """
    started = time.perf_counter()
    files = expand_paths(paths, exclude=exclude)
    known = store.known_bundles() if (store is not None and skip_known) else {}
    config = WorkerConfig(keyring, limits, known, clock_skew)
    report = LoadReport()
    count = workers if workers is not None else (os.cpu_count() or 1)
    load = partial(_load, files, store=store, report=report, batch_size=batch_size, workers=count)
    gone = load(
        config, stdin=stdin, on_progress=on_progress, on_rejection=on_rejection, niceness=worker_niceness
    )
    for _ in range(_PASSES_AGAIN):
        if not gone or "-" in files:
            break
        # Skipped as stored, then removed while this load ran (a prune alongside): loaded again,
        # as they would be by a load after the prune, and counted by what becomes of them.
        assert store is not None
        again = WorkerConfig(keyring, limits, store.known_bundles(), clock_skew, frozenset(gone))
        gone = load(again, on_rejection=on_rejection, niceness=worker_niceness)
    if gone:
        raise StoreError(
            StoreErrorCode.WRITE_FAILED,
            f"{len(gone)} bundles this load skipped as stored were removed while it ran (a prune "
            "alongside); the rest is written: load the same input again to restore them",
        )
    if store is not None:
        report.counts = store.counts()
    report.seconds = time.perf_counter() - started
    return report
