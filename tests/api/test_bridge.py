"""Blocking-style code bridged onto the event loop (api/bridge.py): results, errors,
interleaving and cancellation behave as they would for a coroutine."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pith_graph.api.bridge import BridgeRunner, in_bridge, run_bridged, wait_for


async def _later(value: Any, seconds: float = 0.0) -> Any:
    await asyncio.sleep(seconds)
    return value


async def _fails(message: str) -> None:
    await asyncio.sleep(0)
    raise KeyError(message)


def test_a_bridged_call_returns_what_it_waited_for() -> None:
    def read(a: int, b: int) -> tuple[bool, int]:
        return in_bridge(), wait_for(_later(a)) + wait_for(_later(b))

    assert asyncio.run(run_bridged(read, 2, 3)) == (True, 5)
    assert asyncio.run(BridgeRunner()(read, 4, 5)) == (True, 9)
    assert not in_bridge()


def test_an_error_awaited_is_raised_where_the_call_waits_and_can_be_handled() -> None:
    def read() -> str:
        try:
            wait_for(_fails("gone"))
        except KeyError as error:
            return f"handled {error}"
        return "not raised"

    def unhandled() -> None:
        wait_for(_fails("passed on"))

    assert asyncio.run(run_bridged(read)) == "handled 'gone'"
    with pytest.raises(KeyError, match="passed on"):
        asyncio.run(run_bridged(unhandled))


def test_an_error_of_the_call_itself_reaches_the_caller() -> None:
    def read() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        asyncio.run(run_bridged(read))


def test_bridged_calls_interleave_on_one_loop() -> None:
    order: list[str] = []

    def read(name: str, seconds: float) -> str:
        order.append(f"{name} starts")
        wait_for(_later(None, seconds))
        order.append(f"{name} ends")
        return name

    async def both() -> list[str]:
        return list(await asyncio.gather(run_bridged(read, "slow", 0.05), run_bridged(read, "fast", 0.0)))

    assert asyncio.run(both()) == ["slow", "fast"]
    assert order == ["slow starts", "fast starts", "fast ends", "slow ends"]


def test_cancelling_raises_inside_the_call_and_its_clean_up_may_still_wait() -> None:
    cleaned: list[str] = []

    def read() -> None:
        try:
            wait_for(_later(None, 10))
        finally:
            cleaned.append(wait_for(_later("closed")))  # e.g. closing a session

    async def timed() -> None:
        async with asyncio.timeout(0.05):
            await run_bridged(read)

    with pytest.raises(TimeoutError):
        asyncio.run(timed())
    assert cleaned == ["closed"]


def test_waiting_outside_a_bridged_call_is_refused_without_leaving_a_coroutine() -> None:
    awaitable = _later(1)
    with pytest.raises(RuntimeError, match="outside run_bridged"):
        wait_for(awaitable)
    assert awaitable.cr_frame is None  # closed: no "never awaited" warning (warnings are errors)
