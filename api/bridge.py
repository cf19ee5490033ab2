"""Blocking-style code on the event loop: the Neo4j reads of a request, without threads.

The Neo4j reader is written as plain functions that return rows (``reader.papers_of_authors``
runs a statement and decodes what comes back). Run on threads, 16 concurrent requests spend
more CPU handing the GIL between the threads and the event loop than the driver spends on
the statements (``benchmarks/``: about 0.8 ms of CPU per request on 16 threads against
0.35 ms with the asyncio driver on the loop). :func:`run_bridged` runs such a function in a
greenlet on the event loop's thread instead: where the function needs to wait for the
database it calls :func:`wait_for` with an awaitable (the asyncio driver's), which suspends
the greenlet; the event loop awaits the awaitable and resumes the greenlet with its result or
its exception. The function keeps its ordinary shape, and a request that waits on Neo4j holds
no thread. This is how SQLAlchemy runs its ORM over asyncio drivers.

A bridged call is cancelled like any coroutine: the cancellation is raised inside the
function at the :func:`wait_for` it is suspended on, so its ``finally`` blocks and context
managers run. Only :func:`wait_for` gives the loop back: CPU work in a bridged call holds
the loop, as any coroutine's would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import greenlet

__all__ = ["BridgeRunner", "in_bridge", "run_bridged", "wait_for"]

T = TypeVar("T")


class _Bridged(greenlet.greenlet):
    """A greenlet running one :func:`run_bridged` call; its parent is the caller's."""


def in_bridge() -> bool:
    """Whether the calling code runs inside :func:`run_bridged` (and may :func:`wait_for`)."""
    return isinstance(greenlet.getcurrent(), _Bridged)


def wait_for(awaitable: Awaitable[T]) -> T:
    """The result of ``awaitable``, awaited by the event loop while this call is suspended.
    Only inside :func:`run_bridged` (else a ``RuntimeError``, and ``awaitable`` is closed)."""
    current = greenlet.getcurrent()
    if not isinstance(current, _Bridged):
        close = getattr(awaitable, "close", None)
        if close is not None:
            close()  # never awaited: no "coroutine was never awaited" warning
        raise RuntimeError("wait_for() outside run_bridged(): nothing would await it")
    parent = current.parent
    assert parent is not None  # run_bridged made it with the caller's greenlet as parent
    return cast(T, parent.switch(awaitable))


async def run_bridged(fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)`` run on this event loop, awaiting what it passes to :func:`wait_for`."""
    bridged = _Bridged(fn, greenlet.getcurrent())
    step = bridged.switch(*args)
    while not bridged.dead:
        try:
            value = await step
        except BaseException as error:  # cancellation too: raised where fn waits
            step = bridged.throw(error)
        else:
            step = bridged.switch(value)
    return cast(T, step)


class BridgeRunner:
    """A request runner (:class:`~pith_graph.api.context.Context`) whose reads run through
    :func:`run_bridged` on the event loop: with it, a Neo4j request reader uses the asyncio
    driver (:meth:`~pith_graph.api.reads.neo4j.Neo4jReader.for_request`)."""

    async def __call__(self, fn: Callable[..., T], /, *args: Any) -> T:
        return await run_bridged(fn, *args)
