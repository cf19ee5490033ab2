"""The writer of a load's batches: each handed to the store in order, on a thread of its own
for a store whose writes wait on a server, so that verification and writing overlap."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future

from pith_graph.loader.report import LoadReport
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores.base import AppliedBatch, GraphStore

__all__ = ["BatchWriter"]


class BatchWriter:
    """Hands batches to the store in order. A store whose writes wait on a server
    (``background_writes``) gets them on a thread, one batch at a time, while this thread
    collects the next one from the workers: verification and writing overlap, and at most
    two batches are in memory.

    A load that ends with an exception (Ctrl-C, SIGTERM, a failed worker) does not wait for
    the batch in flight: the store is told to stop retrying it (its ``interrupt``), and the
    batch is left to its thread, a daemon, which the process does not wait for as it exits.
    Its transaction commits whole or not at all. Waiting would have kept an interrupted load
    for as long as the batch took to give up: a minute or more with its server gone or frozen."""

    def __init__(self, store: GraphStore | None, rank: Callable[[str], int], report: LoadReport) -> None:
        self.store = store
        self.rank = rank
        self.report = report
        self.background = store is not None and getattr(store, "background_writes", False)
        self.pending: Future[AppliedBatch] | None = None

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, error_type: type[BaseException] | None, *_exc: object) -> None:
        if error_type is not None:
            self._stop_pending()
            return
        try:
            self._collect()  # the last batch: Ctrl-C most often comes while the load waits for it
        except BaseException:
            self._stop_pending()
            raise

    def _stop_pending(self) -> None:
        """Tell the store to stop the batch in flight, if one is (see the class docstring)."""
        if self.pending is not None and not self.pending.done():
            interrupt: Callable[[], None] | None = getattr(self.store, "interrupt", None)
            if interrupt is not None:
                interrupt()

    def _count(self, applied: AppliedBatch) -> None:
        for outcome in applied.outcomes:
            self.report.add_outcome(outcome)
        self.report.displaced += len(applied.removed)

    def _collect(self) -> None:
        if self.pending is not None:
            applied = self.pending.result()  # (interrupted here, it is still pending for __exit__)
            self.pending = None
            self._count(applied)

    def write(self, batch: list[PaperRows]) -> None:
        if self.store is None or not batch:
            return
        if not self.background:
            self._count(self.store.apply(batch, self.rank))
            return
        self._collect()  # the previous batch is committed before the next one starts
        self.pending = _in_background(self.store.apply, batch, self.rank)


def _in_background(
    apply: Callable[[list[PaperRows], Callable[[str], int]], AppliedBatch],
    batch: list[PaperRows],
    rank: Callable[[str], int],
) -> Future[AppliedBatch]:
    """``apply(batch, rank)`` on a daemon thread of its own; its outcome in the future."""
    future: Future[AppliedBatch] = Future()

    def work() -> None:
        try:
            future.set_result(apply(batch, rank))
        except BaseException as error:  # the load's thread re-raises it (Future.result)
            future.set_exception(error)

    threading.Thread(target=work, name="pith-graph-writer", daemon=True).start()
    return future
