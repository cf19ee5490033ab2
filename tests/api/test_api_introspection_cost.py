"""Introspection has a cost: its lists count their largest size in the (static) schema, so one
standard introspection (GraphiQL's) answers and a flood of aliased ones is refused before it
runs (it counted 0: 30 aliased `__schema { types { fields { args } } }` in 2.4 KB asked for a
1 MB answer, and on Neo4j ten of them held the event loop: `/healthz` answered 503 in 4 s)."""

from __future__ import annotations

from typing import Any

import pytest
from apitest import Api, corpus, memory_api, memory_reader  # noqa: F401 (fixtures)
from graphql import get_introspection_query, graphql_sync, parse

from pith_graph.api.cost import query_cost
from pith_graph.api.limits import RequestLimits
from pith_graph.api.schema import build_schema

SCHEMA = build_schema()._schema
TYPE_REF = "type { name kind ofType { name kind ofType { name } } }"
#: The reviewer's request: 30 aliases of every type's fields and their arguments (2.4 KB).
EVERY_FIELD = (
    "__schema { types { name description fields(includeDeprecated: true) { name description"
    f" args {{ name description {TYPE_REF} }} {TYPE_REF} }} }} }}"
)
FLOOD = "{ " + " ".join(f"s{i}: {EVERY_FIELD}" for i in range(30)) + " }"
#: Introspection queries that answer: the cost of each bounds the objects its answer holds.
ANSWERED = [
    pytest.param(get_introspection_query(), id="graphiql"),
    pytest.param(
        get_introspection_query(
            specified_by_url=True,
            directive_is_repeatable=True,
            schema_description=True,
            input_value_deprecation=True,
        ),
        id="graphiql-everything",
    ),
    pytest.param("{ " + EVERY_FIELD + " }", id="every-field"),
    pytest.param("{ __schema { queryType { name } types { name } } }", id="type-names"),
    pytest.param('{ __type(name: "Paper") { name fields { name args { name } } } }', id="one-type"),
    pytest.param(
        "{ ...S } fragment S on Query { __schema { types { enumValues { name } inputFields { name } } } }",
        id="fragment",
    ),
]


def _objects(value: Any) -> int:
    """The objects ``value`` (a JSON answer) holds in lists, as the cost counts them."""
    if isinstance(value, dict):
        return sum(_objects(item) for item in value.values())
    if isinstance(value, list):
        return sum(isinstance(item, dict) for item in value) + sum(_objects(item) for item in value)
    return 0


@pytest.mark.parametrize("query", ANSWERED)
def test_the_cost_of_introspection_bounds_its_answer(query: str) -> None:
    answer = graphql_sync(SCHEMA, query)
    assert answer.errors is None, answer.errors
    held = _objects(answer.data)
    assert held > 0
    assert held <= query_cost(SCHEMA, parse(query), None, None, RequestLimits()) <= RequestLimits().max_cost


def test_the_cost_of_introspection_multiplies_down_its_lists() -> None:
    limits = RequestLimits()
    one = query_cost(SCHEMA, parse("{ " + EVERY_FIELD + " }"), None, None, limits)
    assert 0 < one <= limits.max_cost
    assert query_cost(SCHEMA, parse(FLOOD), None, None, limits) == 30 * one > limits.max_cost


@pytest.mark.parametrize("query", ANSWERED)
def test_introspection_answers_over_http(memory_api: Api, query: str) -> None:
    data = memory_api.data(query)
    assert data.get("__schema") or data.get("__type")


def test_a_flood_of_aliased_introspections_is_refused_before_it_runs(memory_api: Api) -> None:
    response = memory_api.client.post("/graphql", json={"query": FLOOD})
    assert response.status_code == 200
    assert len(response.content) < 1000  # not the 1 MB answer
    body = response.json()
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert error["message"].startswith("The query costs ")
    assert "aliases" in error["extensions"]["suggestion"]
