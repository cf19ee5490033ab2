"""What a request's :class:`~pith_graph.api.context.Context` costs by itself, whatever it reads.

Every request makes one; on the memory backend its fixed cost is a good part of a small
request's (``benchmarks/bench_overhead.py``, README "Speed"). A context that referred
to itself (its runner a bound method of its own, kept as an attribute) was a reference
cycle: nothing freed it until the cyclic collector ran, about 3 µs a request of collection
on the memory backend (2026-12-05).
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import networkx as nx
import pytest

from pith_graph.api.bridge import BridgeRunner
from pith_graph.api.context import Context
from pith_graph.api.lanes import ThreadRunner, run_inline
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.records import NO_RANKS


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic collector off: what is freed is freed by reference counting alone."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("runner", ["inline", "lanes", "bridged"])
def test_a_context_is_freed_as_soon_as_the_request_drops_it(no_collector: None, runner: str) -> None:
    """A context that read and was closed is gone once its last reference is: no cycle
    waits for the collector (with the collector off, the weak reference is dead at once)."""
    reader = MemoryReader(nx.DiGraph())
    lanes = ThreadRunner(1) if runner == "lanes" else None

    async def request() -> weakref.ref[Context]:
        run = {"inline": run_inline, "lanes": lanes, "bridged": BridgeRunner()}[runner]
        context = Context(reader, RequestLimits(), {}, run)  # type: ignore[arg-type]
        assert await context.run(reader.categories_by_codes, ["cs.AI"]) == {}
        closed = context.close()
        if closed is not None:
            await closed
        return weakref.ref(context)

    try:
        gone = asyncio.run(request())
    finally:
        if lanes is not None:
            lanes.close()
    assert gone() is None


def test_contexts_without_keys_share_the_empty_ranks() -> None:
    """A context given no keys (tests, benchmarks, tools: each its own empty mapping) makes
    no ranks: ranks_of found each new mapping unknown and made ranks of it, about 6k
    instructions a request of ``bench_overhead.py``, which passes ``{}`` each time."""
    reader = MemoryReader(nx.DiGraph())
    first, second = (Context(reader, RequestLimits(), {}, run_inline) for _ in range(2))
    assert first.ranks is NO_RANKS
    assert second.ranks is NO_RANKS
    assert not first.ranks
