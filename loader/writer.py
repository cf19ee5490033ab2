"""The writer of a load's batches: each handed to the store in order, on a thread of its own
for a store whose writes wait on a server, so that verification and writing overlap."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from pith_graph.loader.report import LoadReport
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores.base import AppliedBatch, GraphStore

__all__ = ["BatchWriter"]


class BatchWriter:
    """Hands batches to the store in order. A store whose writes wait on a server
    (``background_writes``) gets them on a thread, one batch at a time, while this thread
    collects the next one from the workers: verification and writing overlap, and at most
    two batches are in memory."""

    def __init__(self, store: GraphStore | None, rank: Callable[[str], int], report: LoadReport) -> None:
        self.store = store
        self.rank = rank
        self.report = report
        background = store is not None and getattr(store, "background_writes", False)
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="pith-graph-writer") if background else None
        self.pending: Future[AppliedBatch] | None = None

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        try:
            self._collect()
        finally:
            if self.thread is not None:
                self.thread.shutdown(wait=True)

    def _count(self, applied: AppliedBatch) -> None:
        for outcome in applied.outcomes:
            self.report.add_outcome(outcome)
        self.report.displaced += len(applied.removed)

    def _collect(self) -> None:
        if self.pending is not None:
            pending, self.pending = self.pending, None
            self._count(pending.result())

    def write(self, batch: list[PaperRows]) -> None:
        if self.store is None or not batch:
            return
        if self.thread is None:
            self._count(self.store.apply(batch, self.rank))
            return
        self._collect()  # the previous batch is committed before the next one starts
        self.pending = self.thread.submit(self.store.apply, batch, self.rank)
