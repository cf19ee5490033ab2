"""Worker processes that read their own tasks and stream results back, in input order.

:func:`run_tasks` hands :class:`~pith_graph.loader.tasks.Task`\\ s to one process per worker
and yields what they produce as :class:`Part`\\ s, task after task in the order given, so a
run's output never depends on the number of workers. Each worker processes every bundle of
its task with a :class:`Handler` and sends back only what the parent needs: how many
bundles it saw and the results that are not ``None`` (rows to write, rejections), in parts
of at most ``PART_RESULTS`` results or ``PART_BUNDLES`` bundles.

Memory stays bounded: a worker runs ahead of the parent by at most ``AHEAD`` tasks, and by
at most ``HEAVY_PARTS`` parts holding results its handler calls heavy (graph rows); then it
waits (a semaphore per worker). The parent reads the worker that holds the oldest task, so
a waiting worker never blocks the one the parent waits for.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import queue
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from typing import Any, Protocol

from pith_graph.errors import BundleError, StoreError, StoreErrorCode
from pith_graph.loader.sources import RawBundle
from pith_graph.loader.tasks import Task, read_task
from pith_graph.loader.workers import become_worker, how_it_ended, signals_held

__all__ = ["AHEAD", "HEAVY_PARTS", "MAX_WORKERS", "Handler", "Part", "cyclic_gc_paused", "run_tasks"]

#: The most worker processes a run starts (``--workers``, ``load_graph(workers=)``):
#: verification is CPU-bound, so more than one per core gains nothing. The loader keeps four
#: file descriptors per worker (its pipes), and each worker inherits them all: 128 workers
#: take half the usual limit of 1024 open files (a lower limit is reported as ``worker_failed``).
MAX_WORKERS = 128

AHEAD = 2
HEAVY_PARTS = 4
PART_RESULTS = 256
PART_BUNDLES = 2048
_POLL_SECONDS = 1.0
_STOP_SECONDS = 5.0


class Handler(Protocol):
    """What a worker does with each bundle (built in the worker by a factory)."""

    def handle(self, item: RawBundle | BundleError) -> object | None:
        """The result to send to the parent, or ``None`` for nothing."""

    def heavy(self, result: object) -> bool:
        """Whether ``result`` counts against the worker's run-ahead limit."""

    def close(self) -> object:
        """Finish (flush files); the value is handed to the parent."""


@dataclass(slots=True)
class Part:
    """Results of one task, in order. The last part of a task has ``last`` set and, for a
    ``range`` task, ``lines``: how many lines it read (the next range's lines follow)."""

    task: Task
    seen: int
    results: list[Any] = field(default_factory=list)
    last: bool = False
    lines: int = 0


# -- the worker side ---------------------------------------------------------------------------

#: (task id, seen, results, last, lines, heavy)
_Message = tuple[int, int, list[Any], bool, int, bool]


def _work(task_id: int, task: Task, handler: Handler, limit: int, results: Any, slots: Any) -> None:
    seen, found, heavy = 0, list[Any](), False

    def send(last: bool = False, lines: int = 0) -> None:
        nonlocal seen, found, heavy
        if heavy:
            slots.acquire()
        results.put((task_id, seen, found, last, lines, heavy))
        seen, found, heavy = 0, [], False

    lines = 0
    for item in read_task(task, limit):
        if item is None:  # the end of a share's block: a part of its own
            send()
            continue
        if isinstance(item, int):
            lines = item
            continue
        seen += 1
        result = handler.handle(item)
        if result is not None:
            found.append(result)
            heavy = heavy or handler.heavy(result)
        if task.kind != "share" and (len(found) >= PART_RESULTS or seen >= PART_BUNDLES):
            send()
    send(last=True, lines=lines)


def _worker_main(
    index: int,
    parent_pid: int,
    make_handler: Callable[[int], Handler],
    limit: int,
    niceness: int,
    tasks: Any,
    results: Any,
    slots: Any,
) -> None:
    become_worker(parent_pid)  # a killed loader must not leave its workers behind
    if niceness > 0 and hasattr(os, "nice"):
        os.nice(niceness)
    try:
        handler = make_handler(index)
        while (item := tasks.get()) is not None:
            task_id, task = item
            _work(task_id, task, handler, limit, results, slots)
        results.put(("closed", handler.close()))
    except BaseException as error:  # reported to the parent, which raises it
        results.put(("failed", error))


# -- the parent side ---------------------------------------------------------------------------


def _context() -> BaseContext:
    # fork: workers inherit the loaded modules and never re-import a script's __main__
    # (forkserver and spawn would, breaking scripts without a main guard).
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


class _Worker:
    def __init__(self, context: BaseContext, index: int, args: tuple[Any, ...]) -> None:
        self.tasks: Any = context.SimpleQueue()
        self.results: Any = context.Queue()
        self.slots: Any = context.Semaphore(HEAVY_PARTS)
        self.outstanding = 0
        self.index = index
        self.process = context.Process(  # type: ignore[attr-defined]
            target=_worker_main,
            args=(index, os.getpid(), *args, self.tasks, self.results, self.slots),
            daemon=True,
            name=f"pith-graph-worker-{index}",
        )

    def start(self) -> None:
        with signals_held():
            self.process.start()
        # Keep only this side's ends of the worker's pipes: once the worker has gone, reading
        # its results ends (EOF) instead of waiting for ever on a half-sent part, and handing
        # it a task fails instead of blocking on a full pipe.
        self.tasks._reader.close()
        self.results._writer.close()

    def stop(self) -> None:
        """End the process if it still runs (SIGTERM; SIGKILL if it has not ended
        ``_STOP_SECONDS`` later), and close this side's pipes (a run that failed for want of
        file descriptors frees them before its error is reported)."""
        if self.process.is_alive():
            self.process.terminate()
        if self.process.pid is not None:
            self.process.join(_STOP_SECONDS)
            if self.process.exitcode is None:
                self.process.kill()
                self.process.join()
        self.process.close()
        self.tasks.close()
        self.results.close()
        self.results.cancel_join_thread()
        self.results._reader.close()

    def put(self, item: tuple[int, Task] | None) -> None:
        try:
            self.tasks.put(item)
        except OSError as error:  # no reader: the worker has gone
            raise self.died() from error

    def died(self) -> StoreError:
        """The error that says this worker has gone (and how, once it is reaped)."""
        self.process.join(_POLL_SECONDS)
        how = how_it_ended(self.process.exitcode)
        return StoreError(
            StoreErrorCode.WORKER_FAILED,
            f"verification worker {self.index + 1} (pid {self.process.pid}) {how}: the run stopped",
        )

    def get(self) -> Any:
        while True:
            try:
                message = self.results.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                if not self.process.is_alive():
                    raise self.died() from None
                continue
            except (EOFError, OSError) as error:  # the pipe ended: the worker has gone
                raise self.died() from error
            if message[0] == "failed":
                raise message[1]
            return message

    def part(self, task: Task) -> Part:
        _, seen, found, last, lines, heavy = self.get()
        if heavy:
            self.slots.release()
        return Part(task, seen, found, last, lines)


Assigned = list[tuple[Task, _Worker]]


class _Scheduler:
    """Hands tasks to workers (at most ``AHEAD`` each) and yields their parts in order."""

    def __init__(self, tasks: Iterable[Task | list[Task]], pool: list[_Worker]) -> None:
        self.upcoming = iter(tasks)
        self.pool = pool
        self.pending: deque[Assigned] = deque()
        self.held: Task | list[Task] | None = None
        self.next_id = 0

    def _fits(self, item: Task | list[Task]) -> Assigned | None:
        if isinstance(item, list):  # shares run side by side, one per worker
            if self.pending and any(w.outstanding >= AHEAD for w in self.pool):
                return None
            return list(zip(item, self.pool, strict=True))
        worker = min(self.pool, key=lambda w: w.outstanding)
        if self.pending and worker.outstanding >= AHEAD:
            return None
        return [(item, worker)]

    def _assign(self) -> None:
        while True:
            item = self.held if self.held is not None else next(self.upcoming, None)
            self.held = None
            if item is None:
                return
            assigned = self._fits(item)
            if assigned is None:
                self.held = item
                return
            for task, worker in assigned:
                worker.put((self.next_id, task))
                worker.outstanding += 1
            self.pending.append(assigned)
            self.next_id += 1

    def parts(self) -> Iterator[Part]:
        while True:
            self._assign()
            if not self.pending:
                return
            assigned = self.pending.popleft()
            yield from _consume(assigned)
            for _task, worker in assigned:
                worker.outstanding -= 1


def _consume(assigned: Assigned) -> Iterator[Part]:
    """Every part of one task; for the shares of a file, their blocks in turn."""
    if len(assigned) == 1:
        task, worker = assigned[0]
        while not (part := worker.part(task)).last:
            yield part
        yield part
        return
    turn = 0
    while True:
        task, worker = assigned[turn % len(assigned)]
        part = worker.part(task)
        if part.last:  # no block here: the file has ended; the other shares end too
            for other_task, other in assigned:
                while other is not worker and not (tail := other.part(other_task)).last:
                    yield tail  # pragma: no cover - shares end together
            yield part
            return
        yield part
        turn += 1


def run_tasks(
    tasks: Iterable[Task | list[Task]],
    workers: int,
    make_handler: Callable[[int], Handler],
    limit: int,
    on_close: Callable[[list[object]], None] | None = None,
    niceness: int = 0,
) -> Iterator[Part]:
    """Run ``tasks`` on ``workers`` processes; yield their parts in task order.

    A list of tasks is the shares of one file, one per worker: they run side by side and
    their blocks are yielded in turn. ``on_close`` receives what each worker's handler
    returned when it closed, once every task is done. ``niceness`` lowers the workers' CPU
    priority below this process's (``os.nice``; where there is no ``os.nice``, it does
    nothing).

    A worker that cannot start (no file descriptor, process or memory left) or dies
    (``kill -9``, the out-of-memory killer) stops the run: it raises
    :class:`~pith_graph.errors.StoreError` (``worker_failed``) naming the worker and how it
    ended, and the other workers are stopped.
    """
    context = _context()
    pool: list[_Worker] = []
    try:
        for index in range(workers):  # each started before the next is made: see _Worker.start
            try:
                pool.append(_Worker(context, index, (make_handler, limit, niceness)))
                pool[-1].start()
            except OSError as error:  # out of file descriptors, processes or memory
                raise StoreError(
                    StoreErrorCode.WORKER_FAILED,
                    f"cannot start verification worker {index + 1} of {workers}: "
                    f"{error.strerror or error}: start fewer workers",
                ) from error
        yield from _Scheduler(tasks, pool).parts()
        for worker in pool:
            worker.put(None)
        closed = [worker.get()[1] for worker in pool]
        for worker in pool:
            worker.process.join()
        if on_close is not None:
            on_close(closed)
    finally:
        for worker in pool:
            worker.stop()


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector, restoring its state after. Rows, bundles and
    the graph hold no reference cycles, so reference counting frees everything a load
    discards. Left on, the collector's full passes rescan the whole growing graph (about
    1.5 s each at 100k papers): a fifth of a large in-memory load."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
