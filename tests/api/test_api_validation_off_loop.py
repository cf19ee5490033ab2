"""Validation runs off the event loop (api/validation.py): a document graphql-core takes long
to validate must not stall the loop that answers every other request (the Neo4j backend
executes on it), and a document seen before is not validated again."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from graphql import parse, validate

import pith_graph.api.overlaps as overlaps
import pith_graph.api.validation as validation
from pith_graph.api.schema import build_schema

#: Valid but slow to validate (OverlappingFieldsCanBeMergedRule compares every pair), within
#: every limit but the fields of one name and the budget of comparisons (raised for the test:
#: any document graphql-core is slow on will do); the unknown field at the end keeps it from executing.
SLOW = "{ " + " ".join(["papers { totalCount }"] * 399) + " %s: unknownField }"


def _unique(template: str) -> str:
    return template % f"a{uuid.uuid4().hex}"  # a text no earlier test cached


SCHEMA = build_schema()  # one schema, as a server has: its validation rules key the cache


async def _execute(query: str) -> list[str]:
    result = await SCHEMA.execute(query)
    return sorted(error.message for error in result.errors or [])


def test_a_document_is_validated_once_on_another_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    validated: list[int] = []
    real = validation.validate_document

    def recording(*args: Any) -> Any:
        validated.append(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(validation, "validate_document", recording)
    query = _unique("{ %s: unknownField }")

    async def twice() -> tuple[int, list[list[str]]]:
        return threading.get_ident(), [await _execute(query), await _execute(query)]

    loop_thread, (first, again) = asyncio.run(twice())
    assert first == again == ["Cannot query field 'unknownField' on type 'Query'."]
    assert len(validated) == 1, "validated again: the cache missed"
    assert validated[0] != loop_thread


@pytest.fixture
def frozen_heap() -> Iterator[None]:
    """What the test process holds already, kept out of the collector's passes, as ``serve``
    keeps what it loaded (``freeze_loaded_objects``): else a full collection over the suite's
    graphs, set off by validation's allocations, stalls the loop for a second whatever runs
    where (seen in CI: 'the loop stalled 0.726 s of a 1.212 s validation')."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.usefixtures("frozen_heap")
def test_the_loop_keeps_its_turn_while_a_slow_document_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overlaps, "MAX_SAME_NAME", 1000)
    monkeypatch.setattr(overlaps, "MERGE_BUDGET", 10**7)  # graphql-core's own is 500,000
    query = _unique(SLOW)
    started = time.perf_counter()
    validate(SCHEMA._schema, parse(query))
    alone = time.perf_counter() - started
    assert alone > 0.15, f"validation took {alone:.3f} s: too fast to show a stall"

    async def ticking() -> tuple[list[str], float]:
        gaps: list[float] = []
        done = asyncio.Event()

        async def tick() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0.02)
        try:
            messages = await _execute(query)
        finally:
            done.set()
            await ticker
        return messages, max(gaps)

    messages, longest = asyncio.run(ticking())
    assert "Cannot query field 'unknownField' on type 'Query'." in messages
    assert longest < alone / 2, f"the loop stalled {longest:.3f} s of a {alone:.3f} s validation"
