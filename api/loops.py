"""Event loops on threads of their own, for GraphQL executions that are CPU work.

The memory backend answers from Python data structures: a large query is seconds of pure
CPU in resolvers and in graphql-core, and run on the server's event loop it would stall
every other request and ``/healthz`` until done. :class:`LoopThreads` runs such executions
on other threads, each with an event loop of its own (DataLoaders batch within it): the
server's loop keeps accepting and answering, taking the GIL back every switch interval
(5 ms), and one heavy request shares the CPU with the others instead of blocking them.
:func:`run_execution` decides, for every execution, whether it goes there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["INLINE_COST", "LoopThreads", "run_execution"]

T = TypeVar("T")

#: Executions whose cost (:mod:`pith_graph.api.cost`: objects their lists may return) is
#: known and at most this, and whose reads that cost bounds (none of
#: :data:`~pith_graph.api.unbounded.UNBOUNDED_READS`), run on the event loop itself: well under a
#: millisecond of reads on the memory backend, less than the hop to an execution thread and
#: back. The others go to the threads, so that no query can hold the loop (and ``/healthz``)
#: for long: a cost of 40 can read 400,000 authors.
INLINE_COST = 200


class LoopThreads:
    """``threads`` threads, each running an event loop; :meth:`run` runs a coroutine on the
    least busy one and awaits it from the caller's loop.

    A thread counts as busy with a coroutine until the coroutine has ended *there*, not when
    its caller stopped waiting: a caller that gives up (the hard deadline of
    :meth:`~pith_graph.api.app.GraphQLView.execute_single`) cancels it, but CPU work between
    two awaits runs on until the next await, and meanwhile new work goes to other threads.
    The memory reader's long reads end soon after the request's time limit
    (:mod:`~pith_graph.api.reads.deadline`), so a thread is not held long past it.
    """

    def __init__(self, threads: int) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self._loops = [asyncio.new_event_loop() for _ in range(threads)]
        self._busy = [0] * threads  # coroutines not yet ended on each thread
        self._lock = threading.Lock()  # _busy is counted down on the execution threads
        self._threads = [
            threading.Thread(target=loop.run_forever, name=f"graphql-execution-{index}", daemon=True)
            for index, loop in enumerate(self._loops)
        ]
        for thread in self._threads:
            thread.start()

    def busy(self) -> list[int]:
        """How many coroutines each thread holds that have not ended there."""
        with self._lock:
            return list(self._busy)

    def _release(self, index: int) -> None:
        with self._lock:
            self._busy[index] -= 1

    async def run(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """The result of the coroutine ``make()`` run on one of the threads. Cancelling the
        caller cancels it there."""
        with self._lock:
            index = min(range(len(self._busy)), key=self._busy.__getitem__)
            self._busy[index] += 1
        loop = self._loops[index]
        outcome: concurrent.futures.Future[T] = concurrent.futures.Future()
        tasks: list[asyncio.Task[T]] = []
        try:
            coroutine = make()
        except BaseException:
            self._release(index)
            raise

        def settle(task: asyncio.Task[T]) -> None:  # on the thread, when the task has ended
            self._release(index)
            if outcome.done():
                return
            if task.cancelled():
                outcome.set_exception(asyncio.CancelledError())
            elif (error := task.exception()) is not None:
                outcome.set_exception(error)
            else:
                outcome.set_result(task.result())

        def start() -> None:  # on the thread
            if not outcome.set_running_or_notify_cancel():  # the caller gave up first
                coroutine.close()
                self._release(index)
                return
            task = loop.create_task(coroutine)
            task.add_done_callback(settle)
            tasks.append(task)

        def cancel() -> None:  # on the thread, after start (call_soon_threadsafe keeps order)
            for task in tasks:
                task.cancel()

        loop.call_soon_threadsafe(start)
        try:
            return await asyncio.wrap_future(outcome)
        except asyncio.CancelledError:
            loop.call_soon_threadsafe(cancel)
            raise

    def close(self, timeout: float = 5.0) -> None:
        """Stop the loops and their threads (after the server stopped taking requests),
        waiting at most ``timeout`` seconds in all: a thread still in CPU work past that is
        left to end with the process (the threads are daemons)."""
        for loop in self._loops:
            loop.call_soon_threadsafe(loop.stop)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        for loop, thread in zip(self._loops, self._threads, strict=True):
            if not thread.is_alive():
                loop.close()


async def run_execution(
    threads: LoopThreads | None,
    make: Callable[[], Coroutine[Any, Any, T]],
    cost: Callable[[], int] | None = None,
    bounded: Callable[[], bool] | None = None,
) -> T:
    """The result of the execution ``make()``: on the caller's event loop when there are no
    ``threads``, or when its ``cost`` is at most :data:`INLINE_COST` and ``bounded()`` says
    that cost bounds its reads (see :func:`~pith_graph.api.unbounded.unbounded_reads`); else on
    one of the ``threads``. ``cost`` and ``bounded`` are asked only when there are threads,
    ``bounded`` only for a cheap execution; either ``None``: not known, so not inline."""
    if threads is None or (cost is not None and bounded is not None and cost() <= INLINE_COST and bounded()):
        return await make()
    return await threads.run(make)
