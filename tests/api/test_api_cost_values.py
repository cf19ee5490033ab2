"""A query costs the same whichever way its values come: inline, as a variable, or as a
variable's default; an explicit null overrides a default, as execution has it."""

from __future__ import annotations

import json
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
from graphql import parse

from pith_graph.api.cost import query_cost
from pith_graph.api.limits import RequestLimits
from pith_graph.api.schema import build_schema

SCHEMA = build_schema()._schema
IDS = [f"pith:2020:{i:032d}" for i in range(500)]
#: The review's query: 500 ids with two lists each, 500 + 500 × 50 + 500 × 20.
ID_FIELDS = "{ title v: versions { title } c: categories { code } }"


def _forms(template: str, kind: str, literal: str, value: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    """The query of ``template`` with ``$V`` written inline, passed as a variable, and left to
    the variable's default (documents and variables)."""
    return {
        "inline": ("{ " + template.replace("$V", literal) + " }", {}),
        "variable": (f"query($V: {kind}) {{ {template} }}", {"V": value}),
        "default": (f"query($V: {kind} = {literal}) {{ {template} }}", {}),
    }


FORMS = [
    pytest.param(
        "papersById(ids: $V) " + ID_FIELDS,
        "[String!]!",
        json.dumps(IDS),
        IDS,
        500 + 500 * 50 + 500 * 20,
        id="id-list",
    ),
    pytest.param("papersById(ids: $V) { authors { name } }", "[String!]!", '"a"', "a", 1 + 100, id="one-id"),
    pytest.param(
        'papersById(ids: ["a", $V, "c"]) { authors { name } }', "String!", '"b"', "b", 3 + 300, id="list-item"
    ),
    pytest.param("papers(first: $V) { nodes { title } }", "Int", "7", 7, 7, id="first"),
    pytest.param("papers(first: $V) { nodes { title } }", "Int", "null", None, 20, id="first-null"),
    pytest.param("papers(first: $V) { nodes { title } }", "Int", "1000", 1000, 100, id="first-over-cap"),
    pytest.param("papers(first: $V) { nodes { title } }", "Int", "-5", -5, 0, id="first-negative"),
    pytest.param(
        "papers(first: 2) { nodes { authors(first: $V) { name } } }",
        "Int",
        "null",
        None,
        2 + 2 * 100,  # a paper's whole authors
        id="authors-null",
    ),
    pytest.param(
        "papers { facets(first: $V) { years { value } authors { value } } }",
        "Int",
        "3",
        3,
        2 * 3,
        id="facets",
    ),
    pytest.param('authors(prefix: "a", first: $V) { name }', "Int", "4", 4, 4, id="typeahead"),
    pytest.param(
        'collaborationPath(from: "a", to: "b", maxHops: $V) { paper { title } }', "Int", "2", 2, 2, id="hops"
    ),
    pytest.param(
        "papers(filter: $V, first: 5) { nodes { title } }",
        "PaperFilter",
        '{category: "cs.LG", title: "graph"}',
        {"category": "cs.LG", "title": "graph"},
        5,
        id="input-object",
    ),
    pytest.param(
        'search(text: "x", orderBy: $V, first: 5) { nodes { title } }',
        "SearchOrder",
        "NEWEST",
        "NEWEST",
        5,
        id="enum",
    ),
]


@pytest.mark.parametrize(("template", "kind", "literal", "value", "cost"), FORMS)
def test_a_value_costs_the_same_inline_as_a_variable_or_its_default(
    template: str, kind: str, literal: str, value: Any, cost: int
) -> None:
    costs = {
        form: query_cost(SCHEMA, parse(query), None, variables, RequestLimits())
        for form, (query, variables) in _forms(template, kind, literal, value).items()
    }
    assert costs == dict.fromkeys(costs, cost)


DEFAULT_9 = "query($n: Int = 9) { papers(first: $n) { nodes { title } } }"
AUTHORS_9 = "query($n: Int = 9) { papers(first: 2) { nodes { authors(first: $n) { name } } } }"
IDS_2 = 'query($ids: [String!] = ["a", "b"]) { papersById(ids: $ids) { authors { name } } }'


@pytest.mark.parametrize(
    ("query", "variables", "cost"),
    [
        pytest.param(DEFAULT_9, {}, 9, id="omitted"),
        pytest.param(DEFAULT_9, {"n": None}, 20, id="null-overrides"),  # as first: null
        pytest.param(DEFAULT_9, {"n": 3}, 3, id="given"),
        pytest.param(AUTHORS_9, {}, 2 + 2 * 9, id="authors-omitted"),
        pytest.param(AUTHORS_9, {"n": None}, 2 + 2 * 100, id="authors-null"),
        pytest.param(IDS_2, {}, 2 + 200, id="ids-omitted"),
        pytest.param(IDS_2, {"ids": None}, 0, id="ids-null"),  # the field is refused: nothing runs
        pytest.param("query($n: Int) { papers(first: $n) { nodes { title } } }", {}, 20, id="no-default"),
    ],
)
def test_an_omitted_variable_takes_its_default_and_a_null_overrides_it(
    query: str, variables: dict[str, Any], cost: int
) -> None:
    assert query_cost(SCHEMA, parse(query), None, variables, RequestLimits()) == cost


@pytest.mark.parametrize("variables", [{}, {"n": None}], ids=["omitted", "null"])
def test_execution_answers_as_the_cost_counts(api: Api, variables: dict[str, Any]) -> None:
    expected = query_cost(SCHEMA, parse(DEFAULT_9), None, variables, RequestLimits())
    assert len(api.data(DEFAULT_9, **variables)["papers"]["nodes"]) == expected


def test_a_list_default_is_refused_like_the_same_list_given(api: Api) -> None:
    """The review's request: a default of 500 ids ran (1.7 s, stopped by the object count)
    where the same ids given as a variable were refused before execution."""
    forms = _forms("papersById(ids: $V) " + ID_FIELDS, "[String!]!", json.dumps(IDS), IDS)
    message = "The query costs 35500, over the limit of 25000."
    for query, variables in forms.values():
        for _ in range(2):  # the second time from the execution plan, if it has one
            body = api.post(query, variables)
            assert body["data"] is None
            assert [e["extensions"]["code"] for e in body["errors"]] == ["LIMIT_EXCEEDED"]
            assert body["errors"][0]["message"] == message
