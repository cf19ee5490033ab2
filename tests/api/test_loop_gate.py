"""Admission on the event loop (api/loops.LoopGate), what the Neo4j backend's executions
run through: heavy ones a few at a time, in the order they came, none started past its
deadline; light ones at once."""

from __future__ import annotations

import asyncio
import time

import pytest

from pith_graph.api.loops import INLINE_COST, LoopGate, run_execution


def test_heavy_executions_run_a_few_at_a_time_in_order_and_light_ones_at_once() -> None:
    running, most, order = 0, 0, []

    async def execution(name: str) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        order.append(name)
        await asyncio.sleep(0.05)
        running -= 1
        return name

    async def main() -> list[str]:
        gate = LoopGate(2)
        heavy = [run_execution(gate, lambda n=f"h{i}": execution(n), lambda: 10_000) for i in range(6)]
        light = run_execution(gate, lambda: execution("light"), lambda: INLINE_COST)
        return await asyncio.gather(*heavy, light)

    assert asyncio.run(main()) == ["h0", "h1", "h2", "h3", "h4", "h5", "light"]
    assert most == 3  # two heavy ones, and the light one beside them
    assert order[:3] == ["h0", "h1", "light"] and order[3:] == ["h2", "h3", "h4", "h5"]


def test_an_execution_not_admitted_by_its_deadline_never_starts() -> None:
    started = []
    # The first one comes well before the deadline, however busy the host (with 0.1 s, a
    # pause of the test's process refused it too), and holds the slot until the deadline
    # has passed, however soon it started.
    deadline = 0.0

    async def execution(name: str) -> str:
        started.append(name)
        await asyncio.sleep(max(0.0, deadline - time.monotonic()) + 0.2)
        return name

    async def main() -> list[object]:
        nonlocal deadline
        gate = LoopGate(1)
        deadline = time.monotonic() + 1.0
        calls = [
            run_execution(gate, lambda n=f"e{i}": execution(n), None, deadline=deadline) for i in range(3)
        ]
        return await asyncio.gather(*calls, return_exceptions=True)

    first, *late = asyncio.run(main())
    assert first == "e0" and started == ["e0"]
    assert all(isinstance(outcome, TimeoutError) for outcome in late)


@pytest.mark.parametrize("slots", [1, 3])
def test_a_slot_is_given_back_when_an_execution_fails(slots: int) -> None:
    async def failing() -> None:
        raise ValueError("a failed execution")

    async def main() -> None:
        gate = LoopGate(slots)
        for _ in range(slots + 2):
            with pytest.raises(ValueError, match="a failed execution"):
                await run_execution(gate, failing, None)
        assert await run_execution(gate, lambda: asyncio.sleep(0, "after"), None) == "after"

    asyncio.run(main())
