"""How a request's reader calls run: a :class:`Runner` awaits a blocking call, inline
(:func:`run_inline`, for readers that never block) or on a :class:`ThreadRunner`'s lanes
(one thread each, a request holding one for all its reads). Used by
:class:`~pith_graph.api.context.Context`."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

__all__ = ["Lane", "Runner", "ThreadRunner", "run_inline"]

T = TypeVar("T")


class Runner(Protocol):
    """Runs a blocking reader call and awaits its result."""

    def __call__(self, fn: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


async def run_inline(fn: Callable[..., T], /, *args: Any) -> T:
    """Run in the event loop: for readers that never block."""
    return fn(*args)


Lane = ThreadPoolExecutor


class ThreadRunner:
    """``threads`` lanes, each a thread of its own, for readers that wait on a database.

    A request holds one lane for all its reads (:meth:`acquire`, :meth:`release`), so they
    run on one thread in order; calling the runner itself runs one call on any free lane.
    Requests beyond ``threads`` wait for a lane.
    """

    def __init__(self, threads: int) -> None:
        self._lanes = [ThreadPoolExecutor(1, thread_name_prefix=f"graph-read-{i}") for i in range(threads)]
        self._idle: list[Lane] = list(self._lanes)
        self._waiting: deque[asyncio.Future[Lane]] = deque()

    async def acquire(self) -> Lane:
        """A free lane (waits for one); give it back with :meth:`release`."""
        if self._idle:
            return self._idle.pop()
        waiter: asyncio.Future[Lane] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        return await waiter

    def release(self, lane: Lane) -> None:
        """Give a lane back (on the event loop's thread)."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(lane)
                return
        self._idle.append(lane)

    async def __call__(self, fn: Callable[..., T], /, *args: Any) -> T:
        lane = await self.acquire()
        try:
            return await asyncio.get_running_loop().run_in_executor(lane, fn, *args)
        finally:
            self.release(lane)

    def close(self) -> None:
        for lane in self._lanes:
            lane.shutdown(wait=True, cancel_futures=True)
