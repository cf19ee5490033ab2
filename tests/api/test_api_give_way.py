"""A plan that gives way leaves the request to the resolvers once, in the time it had.

Over HTTP a planned request runs its plan first (:mod:`pith_graph.api.planned`); when the plan
gives way (here: a ``first`` refused two levels down, after the levels above were read and
their objects counted), the view answers. Before, the view ran the plan a second time, on
its own context, and then the resolvers on that same context: the reads were made three
times, the objects of the plan counted into the resolvers' budget (a request within the cost
limit was refused ``LIMIT_EXCEEDED``), and the view began a new time limit of its own (the
answer could come after twice the limit).
"""

from __future__ import annotations

import time
from typing import Any

from apitest import Corpus, corpus, memory_reader, served  # noqa: F401 (fixtures)
from graphql import parse

from pith_graph.api.app import create_app
from pith_graph.api.cost import query_cost
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.records import Page
from pith_graph.api.schema import build_schema

#: Two levels read, then ``first: -1`` refused: the plan gives way, the resolvers answer
#: ``BAD_USER_INPUT`` with the data above it.
QUERY = "{ papers(first: 5) { nodes { title authors(first: 1) { name papers(first: -1) { totalCount } } } } }"


class CountingReader(MemoryReader):
    """The corpus, counting (and optionally slowing) its pages of papers."""

    def __init__(self, graph: Any, delay: float = 0.0) -> None:
        super().__init__(graph)
        self.pages = 0
        self.delay = delay

    def list_papers(self, *args: Any, **kwargs: Any) -> Page:
        self.pages += 1
        time.sleep(self.delay)
        return super().list_papers(*args, **kwargs)


def _post(client: Any, query: str) -> dict[str, Any]:
    response = client.post("/graphql", json={"query": query})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


def test_a_plan_that_gives_way_costs_the_resolvers_nothing(
    memory_reader: MemoryReader, corpus: Corpus
) -> None:
    """The cost limit is exactly the query's cost, which the resolvers' answer reaches: only
    counting the plan's objects as well could push it over."""
    cost = query_cost(build_schema()._schema, parse(QUERY), None, {}, RequestLimits())
    limits = RequestLimits(max_cost=cost)
    reader = CountingReader(memory_reader.G)
    reference = CountingReader(memory_reader.G)
    with served(create_app(reference, keyring=corpus.keyring, limits=limits), "memory", reference) as plain:
        expected = _post(plain.client, QUERY)
    with served(create_app(reader, keyring=corpus.keyring, limits=limits), "memory", reader) as api:
        answers = [_post(api.client, QUERY) for _ in range(3)]  # the first compiles the plan
    assert _codes(expected) == ["BAD_USER_INPUT"]
    assert answers == [expected] * 3, answers
    # Resolvers alone read the page once; each planned request once in its plan, once by them.
    assert reference.pages == 1
    assert reader.pages == 1 + 2 + 2


def test_the_resolvers_after_a_plan_have_what_is_left_of_its_time(
    memory_reader: MemoryReader, corpus: Corpus
) -> None:
    """Each read of the page takes 0.6 of the limit: the plan's and the resolvers' together
    are over it, so the request is ``TIMEOUT`` and ends soon after the limit, not at twice it."""
    limit = 1.0
    limits = RequestLimits(timeout_seconds=limit)
    reader = CountingReader(memory_reader.G)
    with served(create_app(reader, keyring=corpus.keyring, limits=limits), "memory", reader) as api:
        assert _codes(_post(api.client, QUERY)) == ["BAD_USER_INPUT"]  # compiles the plan, fast
        reader.delay, reader.pages = 0.6 * limit, 0
        started = time.monotonic()
        body = _post(api.client, QUERY)
        took = time.monotonic() - started
    assert _codes(body) == ["TIMEOUT"]
    assert reader.pages == 2, "the plan read once, the resolvers once"
    assert took < 2 * 0.6 * limit + 0.5
