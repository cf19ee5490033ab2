"""Fragments that spread fragments: a document of n fragments, each spreading the next twice,
stands for 2^n fields in about 1 KB. It is refused at once (``LIMIT_EXCEEDED``) over both
backends, and every check (the fields spread, depth, aliases, cost) measures each fragment once,
so even n = 30 takes milliseconds; a document of many fragments used once each still works.
The execution threads count a job as busy until it has ended there, not when its caller gave up.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from typing import Any

import pytest
from apitest import (  # noqa: F401 (fixtures)
    Api,
    _neo4j_api,
    api,
    corpus,
    memory_api,
    memory_reader,
    neo4j_api,
    neo4j_corpus,
)
from graphql import parse, validate

from pith_graph.api.cost import LIST_SIZES, query_cost
from pith_graph.api.limits import SPREAD_FACTOR, DocumentShape, RequestLimits, shape_rule
from pith_graph.api.loops import LoopThreads
from pith_graph.api.schema import build_schema

SCHEMA = build_schema()._schema


def fan_out(n: int, body: str = "__typename", on: str = "Query") -> str:
    """The reviewer's document: fragment F_i selects ``body`` and spreads F_{i+1} twice, so the
    operation's fields, fragments spread, are (2^(n+1) - 1) times ``body``'s."""
    parts = ["query { ...F0 }"] if on == "Query" else ["query { papers(first: 2) { nodes { ...F0 } } }"]
    parts += [f"fragment F{i} on {on} {{ {body} ...F{i + 1} ...F{i + 1} }}" for i in range(n)]
    parts.append(f"fragment F{n} on {on} {{ {body} }}")
    return "\n".join(parts)


def chain(n: int) -> str:
    """n + 1 fragments on Paper, each used once: F_i selects a field and spreads F_{i+1}."""
    fields = ["title", "license", "sourceId", "submittedAt"]
    parts = ["{ papers(first: 3) { nodes { ...F0 } } }"]
    parts += [f"fragment F{i} on Paper {{ {fields[i % 4]} ...F{i + 1} }}" for i in range(n)]
    parts.append(f"fragment F{n} on Paper {{ title }}")
    return "\n".join(parts)


# -- over HTTP, both backends ------------------------------------------------------------------------


@pytest.mark.parametrize("n", [20, 22, 24])
def test_a_fragment_fan_out_is_refused_at_once(api: Api, n: int) -> None:
    """On the old code n = 20 ran about 15 s (validation), then answered TIMEOUT while the
    thread kept burning CPU."""
    for _ in range(2):  # and again: nothing was cached or planned the first time
        started = time.monotonic()
        body = api.post(fan_out(n))
        seconds = time.monotonic() - started
        assert body["data"] is None
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "LIMIT_EXCEEDED", error
        limit = RequestLimits().max_tokens * SPREAD_FACTOR
        assert error["message"] == (
            f"The document holds more than {limit} fields once its fragments are spread "
            "(each spread counts its fragment's fields again)."
        )
        assert error["extensions"]["suggestion"]
        assert seconds < 2, f"{seconds:.1f} s"


def test_the_fan_out_is_refused_past_the_cap_only(api: Api) -> None:
    """The cap is 10 × the token limit (20,000 fields): n = 13 spreads to 16,383 fields and is
    answered (fast: it is all linear), n = 14 to 32,767 and is refused."""
    assert DocumentShape(parse(fan_out(13))).fields == 2**14 - 1 <= 20_000 < 2**15 - 1
    for _ in range(2):  # the second time from its plan, where there is one
        started = time.monotonic()
        assert api.data(fan_out(13)) == {"__typename": "Query"}
        assert time.monotonic() - started < 2
    assert api.post(fan_out(14))["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"


def test_many_fragments_used_once_each_still_work(api: Api) -> None:
    plain = api.data("{ papers(first: 3) { nodes { title license sourceId submittedAt } } }")
    assert len(plain["papers"]["nodes"]) == 3
    for _ in range(2):  # the second time from its plan
        assert api.data(chain(120)) == plain


def test_a_fan_out_within_the_cap_still_counts_its_cost(api: Api) -> None:
    """Each spread counts its fragment's cost again (a fragment's cost is memoised, not
    deduplicated): 2 papers × (2^10 - 1) spreads × 20 categories."""
    query = fan_out(9, "categories { code }", on="Paper")
    cost = 2 + 2 * (2**10 - 1) * LIST_SIZES["Paper.categories"]
    assert query_cost(SCHEMA, parse(query), None, {}, RequestLimits()) == cost
    (error,) = api.post(query)["errors"]
    assert error["message"] == f"The query costs {cost}, over the limit of 25000."


# -- the checks themselves, on n = 30 (hours each on the old code) ------------------------------------

N = 30
SPREAD = 2 ** (N + 1) - 1  # the operation's fields, fragments spread, per field of the body
#: Lifts the fields cap so that the depth and alias checks run on the whole fan-out.
UNCAPPED = RequestLimits(max_tokens=SPREAD)


def _errors(query: str, limits: RequestLimits) -> list[str]:
    return [error.message for error in validate(SCHEMA, parse(query), [shape_rule(limits)])]


def test_the_checks_measure_each_fragment_once() -> None:
    started = time.monotonic()
    assert _errors(fan_out(N, "a: __typename"), UNCAPPED) == [f"{SPREAD} aliases found. Allowed: 30"]
    deep = RequestLimits(max_tokens=SPREAD, max_depth=1)
    assert _errors(fan_out(N, "papers { nodes { title } }"), deep) == [
        "'anonymous' exceeds maximum operation depth of 1"
    ]
    assert _errors(fan_out(N, "papers { totalCount }"), deep) == []
    assert _errors(fan_out(N), RequestLimits()) == [
        "The document holds more than 20000 fields once its fragments are spread "
        "(each spread counts its fragment's fields again)."
    ]
    categories = query_cost(SCHEMA, parse(fan_out(N, "categories { code }")), None, {}, RequestLimits())
    assert categories == SPREAD * LIST_SIZES["Query.categories"]
    assert time.monotonic() - started < 2


def test_fragment_depth_counts_where_the_fragment_sits() -> None:
    """A fragment spread three levels down adds its own depth there (as strawberry's rule did)."""
    query = (
        "{ papers { nodes { authors { ...A } } } }"
        " fragment A on Author { papers { nodes { ...T } } } fragment T on Paper { authors { name } }"
    )
    assert _errors(query, RequestLimits(max_depth=6)) == []
    assert _errors(query, RequestLimits(max_depth=5)) == ["'anonymous' exceeds maximum operation depth of 5"]
    # introspection is not measured for depth (its own rule bounds it); aliases count everywhere
    introspection = "{ __schema { a: types { fields { b: name } } } }"
    assert _errors(introspection, RequestLimits(max_depth=1, max_aliases=2)) == []
    assert _errors(introspection, RequestLimits(max_aliases=1)) == ["2 aliases found. Allowed: 1"]


def test_a_fragment_cycle_is_left_to_graphql() -> None:
    query = "{ ...A } fragment A on Query { ...B } fragment B on Query { ...A __typename }"
    assert DocumentShape(parse(query)).cyclic
    assert _errors(query, RequestLimits()) == []  # NoFragmentCyclesRule refuses it
    assert query_cost(SCHEMA, parse(query), None, {}, RequestLimits()) == 0


# -- the execution threads ---------------------------------------------------------------------------


def test_a_job_its_caller_gave_up_on_keeps_its_thread_busy() -> None:
    """A job still in CPU work after its caller was cancelled (the hard deadline) holds its
    thread: new work goes to the other thread, and the count drops when the job ends there."""
    threads = LoopThreads(2)
    release = threading.Event()

    async def stuck() -> None:
        release.wait(10)  # CPU work between two awaits: the cancel waits for it

    async def where() -> str:
        return threading.current_thread().name

    async def scenario() -> tuple[list[int], str, str]:
        caller = asyncio.ensure_future(threads.run(stuck))
        await asyncio.sleep(0.2)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        during = await threads.run(where)
        assert during == "graphql-execution-1"  # not the thread still busy with the job
        busy = threads.busy()
        release.set()
        for _ in range(100):
            if threads.busy() == [0, 0]:
                break
            await asyncio.sleep(0.02)
        after = await threads.run(where)
        return busy, during, after

    try:
        busy, during, after = asyncio.run(scenario())
        assert busy == [1, 0]
        assert during == "graphql-execution-1"
        assert threads.busy() == [0, 0]
        assert after == "graphql-execution-0"
    finally:
        release.set()
        threads.close()


def test_a_job_given_up_before_it_started_is_released_unrun() -> None:
    threads = LoopThreads(1)
    release = threading.Event()
    ran: list[str] = []

    async def stuck() -> None:
        release.wait(10)

    def never() -> Coroutine[Any, Any, None]:
        async def body() -> None:
            ran.append("ran")

        return body()

    async def scenario() -> list[int]:
        first = asyncio.ensure_future(threads.run(stuck))
        await asyncio.sleep(0.1)
        # a light job: admitted at once, queued on the busy thread
        second = asyncio.ensure_future(threads.run(never, heavy=False))
        await asyncio.sleep(0.1)
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
        busy = threads.busy()
        release.set()
        await first
        return busy

    try:
        assert asyncio.run(scenario()) == [2]
        for _ in range(100):
            if threads.busy() == [0]:
                break
            time.sleep(0.02)
        assert threads.busy() == [0]
        assert ran == []
    finally:
        release.set()
        threads.close()
