"""Event loops on threads of their own, for GraphQL executions that are CPU work, admitted
first come, first served.

The memory backend answers from Python data structures: a large query is seconds of pure
CPU in resolvers and in graphql-core, and run on the server's event loop it would stall
every other request and ``/healthz`` until done. :class:`LoopThreads` runs such executions
on other threads, each with an event loop of its own (DataLoaders batch within it), so the
server's loop keeps accepting and answering (it takes the GIL back every switch interval,
5 ms). :func:`run_execution` decides, for every execution, where it goes.

Under the GIL a process gains nothing from running more CPU-bound executions at once: each
only runs slower. Shared by thirty heavy requests, the CPU finished none of them within the
time limit; so a heavy execution waits for one of ``heavy`` *slots* (each a thread of its
own, :data:`HEAVY_EXECUTIONS` unless said), in the order the requests came, and only while its
request has time left: one still waiting at its deadline is answered ``TIMEOUT`` without
having run. Light ones (a known cost of at most :data:`INLINE_COST`) never wait behind
heavy ones: they run on the event loop, or have slots and threads of their own. The Neo4j
backend's executions run on the event loop (their reads wait on the server) and are admitted
the same way, without threads (:class:`LoopGate`).
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

__all__ = [
    "HEAVY_EXECUTIONS",
    "INLINE_COST",
    "Admission",
    "LoopGate",
    "LoopThreads",
    "loop_time",
    "run_execution",
]

T = TypeVar("T")

#: Executions whose cost (:mod:`pith_graph.api.cost`: objects their lists may return) is
#: known and at most this, and whose reads that cost bounds (none of
#: :data:`~pith_graph.api.unbounded.UNBOUNDED_READS`), run on the event loop itself: well under a
#: millisecond of reads on the memory backend, less than the hop to an execution thread and
#: back. Those of known cost at most this whose reads it does not bound are *light*: they
#: run on the threads, but never wait behind heavy ones. The others, and every execution
#: whose cost is not known before it starts, are *heavy*: a cost of 40 can read 400,000
#: authors.
INLINE_COST = 200
#: Heavy executions at once per process, unless said (``PITH_API_HEAVY_EXECUTIONS``).
HEAVY_EXECUTIONS = 2


class Admission:
    """Slots (tokens) handed out first come, first served to callers on any event loop (the
    lowest free one); given back from any thread (:meth:`leave`)."""

    def __init__(self, tokens: Iterable[int]) -> None:
        self._lock = threading.Lock()
        self._free = sorted(tokens)
        self._waiting: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[int]]] = deque()

    def waiting(self) -> int:
        """How many callers wait for a slot."""
        with self._lock:
            return len(self._waiting)

    async def enter(self, deadline: float | None = None) -> int:
        """A slot, once every caller before this one has had one; ``TimeoutError`` if none
        came by ``deadline`` (``time.monotonic()``; ``None``: wait as long as it takes)."""
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError("no time left to start")
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free and not self._waiting:
                return self._free.pop(0)
            waiter: asyncio.Future[int] = loop.create_future()
            self._waiting.append((loop, waiter))
        try:
            async with asyncio.timeout_at(None if deadline is None else loop_time(loop, deadline)):
                return await waiter
        except BaseException:  # out of time, or the caller gave up
            with self._lock:
                if (loop, waiter) in self._waiting:
                    self._waiting.remove((loop, waiter))
            if waiter.done() and not waiter.cancelled():
                self.leave(waiter.result())  # handed over as this gave up: pass it on
            raise

    def leave(self, token: int) -> None:
        """Give a slot back (from any thread): to the first caller still waiting, if any."""
        while True:
            with self._lock:
                if not self._waiting:
                    bisect.insort(self._free, token)
                    return
                loop, waiter = self._waiting.popleft()
            try:
                loop.call_soon_threadsafe(self._hand, waiter, token)
                return
            except RuntimeError:  # that caller's loop is closed: the next one
                continue

    def _hand(self, waiter: asyncio.Future[int], token: int) -> None:  # on the waiter's loop
        if waiter.done():  # it gave up meanwhile (enter took it out of the queue)
            self.leave(token)
        else:
            waiter.set_result(token)


def loop_time(loop: asyncio.AbstractEventLoop, deadline: float) -> float:
    """``deadline`` (``time.monotonic()``) on ``loop``'s clock."""
    return loop.time() + (deadline - time.monotonic())


class LoopThreads:
    """``threads`` threads, each running an event loop; :meth:`run` runs a coroutine on one
    of them and awaits it from the caller's loop.

    A heavy coroutine first waits for one of ``heavy`` slots (:class:`Admission`; default
    :data:`HEAVY_EXECUTIONS`, at most ``threads``) and runs alone on that slot's thread. A light
    one waits only for one of ``threads`` light slots, and runs on the least busy of the
    other threads (on any, when every thread is a heavy slot's).

    A slot and its thread count as busy until the coroutine has ended *there*, not when its
    caller stopped waiting: a caller that gives up (the hard deadline of
    :meth:`~pith_graph.api.app.GraphQLView.execute_single`) cancels it, but CPU work between
    two awaits runs on until the next await, and the next heavy execution starts only
    then. Every execution checks its request's time at each read and list (the memory
    reader's long reads inside, :mod:`~pith_graph.api.reads.deadline`), so this is soon.
    """

    def __init__(self, threads: int, heavy: int | None = None) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        heavy = min(threads, HEAVY_EXECUTIONS if heavy is None else heavy)
        if heavy < 1:
            raise ValueError("heavy must be at least 1")
        self._loops = [asyncio.new_event_loop() for _ in range(threads)]
        self._busy = [0] * threads  # coroutines not yet ended on each thread
        self._lock = threading.Lock()  # _busy is counted down on the execution threads
        self.heavy = Admission(range(heavy))  # a heavy slot is the index of its thread
        self.light = Admission(range(threads))
        self._light_loops = list(range(heavy, threads)) or list(range(threads))
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

    async def run(
        self, make: Callable[[], Coroutine[Any, Any, T]], *, heavy: bool = True, deadline: float | None = None
    ) -> T:
        """The result of the coroutine ``make()`` run on one of the threads, once admitted
        (``TimeoutError`` if not by ``deadline``, ``time.monotonic()``; ``make`` is then
        never called). Cancelling the caller cancels it there."""
        admission = self.heavy if heavy else self.light
        token = await admission.enter(deadline)
        with self._lock:
            index = token if heavy else min(self._light_loops, key=self._busy.__getitem__)
            self._busy[index] += 1

        def release() -> None:
            with self._lock:
                self._busy[index] -= 1
            admission.leave(token)

        try:
            coroutine = make()
        except BaseException:
            release()
            raise
        return await self._dispatch(index, coroutine, release)

    async def _dispatch(
        self, index: int, coroutine: Coroutine[Any, Any, T], release: Callable[[], None]
    ) -> T:
        loop = self._loops[index]
        outcome: concurrent.futures.Future[T] = concurrent.futures.Future()
        tasks: list[asyncio.Task[T]] = []

        def settle(task: asyncio.Task[T]) -> None:  # on the thread, when the task has ended
            release()
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
                release()
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


class LoopGate:
    """Admission without threads, for executions that run on the event loop (the Neo4j
    backend's: their reads wait on the server, handed to the loop). A heavy execution waits
    for one of ``heavy`` slots (:class:`Admission`), in the order the requests came, and
    one still waiting at its deadline is ``TimeoutError`` without having run; a light one
    runs at once. Without it every request ran at once: on two cores, 30 searches of 0.45 s
    each sent together all answered ``TIMEOUT`` at the 10 s limit, sharing the loop's time
    until none finished, and everyone else's requests waited behind them.

    ``cpu``: threads for executions that read nothing (introspection), which are CPU work
    alone, without an await: on the loop, each one held it whole (80 ms at the cost limit),
    and a request waited that long at each of its many steps."""

    def __init__(self, heavy: int, cpu: LoopThreads | None = None) -> None:
        self.heavy = Admission(range(heavy))
        self.cpu = cpu

    async def run(
        self, make: Callable[[], Coroutine[Any, Any, T]], *, heavy: bool = True, deadline: float | None = None
    ) -> T:
        """The result of ``make()``, on this loop, once admitted if ``heavy``."""
        if not heavy:
            return await make()
        token = await self.heavy.enter(deadline)
        try:
            return await make()
        finally:
            self.heavy.leave(token)

    def close(self) -> None:
        """Stop the ``cpu`` threads, if any."""
        if self.cpu is not None:
            self.cpu.close()


async def run_execution(
    threads: LoopThreads | LoopGate | None,
    make: Callable[[], Coroutine[Any, Any, T]],
    cost: Callable[[], int] | None = None,
    bounded: Callable[[], bool] | None = None,
    deadline: float | None = None,
) -> T:
    """The result of the execution ``make()``: on the caller's event loop when there are no
    ``threads``, or when its ``cost`` is at most :data:`INLINE_COST` and ``bounded()`` says
    that cost bounds its reads (see :func:`~pith_graph.api.unbounded.unbounded_reads`); else on
    the ``threads``, light (that cost, reads unbounded) or heavy (more, or ``cost`` not known),
    once admitted by ``deadline`` (the request's, ``time.monotonic()``; ``TimeoutError`` past
    it, without running; ``None``: no limit). ``cost`` and ``bounded`` are asked only when
    there are threads, ``bounded`` only for a cheap execution."""
    if threads is None:
        return await make()
    cheap = cost is not None and cost() <= INLINE_COST
    if cheap and bounded is not None and bounded():
        return await make()
    return await threads.run(make, heavy=not cheap, deadline=deadline)
