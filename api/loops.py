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
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["INLINE_COST", "LoopThreads", "run_execution"]

T = TypeVar("T")

#: Executions whose cost (:mod:`pith_graph.api.cost`: objects their lists may return) is
#: known and at most this run on the event loop itself: well under a millisecond of reads on
#: the memory backend, less than the hop to an execution thread and back. Costlier ones go
#: to the threads, so that no query can hold the loop (and ``/healthz``) for long.
INLINE_COST = 200


class LoopThreads:
    """``threads`` threads, each running an event loop; :meth:`run` runs a coroutine on the
    least busy one and awaits it from the caller's loop."""

    def __init__(self, threads: int) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self._loops = [asyncio.new_event_loop() for _ in range(threads)]
        self._busy = [0] * threads  # touched only from the server's loop
        self._threads = [
            threading.Thread(target=loop.run_forever, name=f"graphql-execution-{index}", daemon=True)
            for index, loop in enumerate(self._loops)
        ]
        for thread in self._threads:
            thread.start()

    async def run(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """The result of the coroutine ``make()`` run on one of the threads. Cancelling the
        caller cancels it there."""
        index = min(range(len(self._busy)), key=self._busy.__getitem__)
        self._busy[index] += 1
        try:
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(make(), self._loops[index]))
        finally:
            self._busy[index] -= 1

    def close(self) -> None:
        """Stop the loops and their threads (after the server stopped taking requests)."""
        for loop in self._loops:
            loop.call_soon_threadsafe(loop.stop)
        for thread in self._threads:
            thread.join()
        for loop in self._loops:
            loop.close()


async def run_execution(
    threads: LoopThreads | None,
    make: Callable[[], Coroutine[Any, Any, T]],
    cost: Callable[[], int] | None = None,
) -> T:
    """The result of the execution ``make()``: on the caller's event loop when there are no
    ``threads`` or when its ``cost`` (asked for only when there are; ``None``: not known)
    is at most :data:`INLINE_COST`, else on one of the ``threads``."""
    if threads is None or (cost is not None and cost() <= INLINE_COST):
        return await make()
    return await threads.run(make)
