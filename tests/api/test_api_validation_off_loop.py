"""Validation runs off the event loop (api/validation.py): a document graphql-core takes long
to validate must not stall the loop that answers every other request (the Neo4j backend
executes on it), and a document seen before is not validated again."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import uuid
from typing import Any

import pytest

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


def test_the_loop_keeps_its_turn_while_a_slow_document_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a document is validated, the loop runs its other callbacks: validation waits, in
    its middle, for the loop to take a turn, which it can only if validation runs elsewhere and
    the loop does not wait for it (a thread's ``result()`` called on the loop would pass the
    test above and fail this one). A handshake, not a stall measured: timing it failed on a
    loaded machine ('the loop stalled 1.376 s of a 2.619 s validation', load 8 on 2 cores)."""
    monkeypatch.setattr(overlaps, "MAX_SAME_NAME", 1000)
    monkeypatch.setattr(overlaps, "MERGE_BUDGET", 10**7)  # graphql-core's own is 500,000
    real = validation.validate_document
    turns: list[bool] = []

    async def validated() -> list[str]:
        loop = asyncio.get_running_loop()

        def validating(*args: Any) -> Any:
            errors = real(*args)  # the slow work, then the loop must take a turn
            loop_ran = threading.Event()
            loop.call_soon_threadsafe(loop_ran.set)
            turns.append(loop_ran.wait(timeout=10))
            return errors

        monkeypatch.setattr(validation, "validate_document", validating)
        return await _execute(_unique(SLOW))

    messages = asyncio.run(validated())
    assert "Cannot query field 'unknownField' on type 'Query'." in messages
    assert turns == [True], "the loop took no turn while a document was validated"


def _validate_in_child() -> None:
    messages = asyncio.run(_execute(_unique("{ %s: unknownField }")))
    os._exit(0 if messages == ["Cannot query field 'unknownField' on type 'Query'."] else 1)


def test_a_process_forked_after_a_validation_validates_at_once() -> None:
    """A forked process has none of its parent's threads, but the validation pool it copied
    believed its idle worker was there: the child's first validation waited for it (15 s: the
    first request of bench_api.py's forked server; a ``gunicorn --preload`` fork alike). The
    wait is bounded generously: a validation takes milliseconds."""
    assert asyncio.run(_execute(_unique("{ %s: unknownField }")))  # the parent's pool has its thread
    child = multiprocessing.get_context("fork").Process(target=_validate_in_child)
    child.start()
    child.join(10)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked process's validation did not answer within 10 s")
    assert child.exitcode == 0
