"""Errors name the argument they refuse, machine-readably (since 0.9.4): ``extensions.argument``
is the argument as the client wrote it (``first``, ``filter.categories[1]``), a nested field's
included, so a form can mark the input without reading the message; an error about no one
argument has no ``argument`` key.

Over real HTTP, on both backends, each document sent twice: the resolvers answer it first
(its text new to the server), its plan then (the same text again); the answers must be equal.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from apitest import Api, _neo4j_api, api, corpus, memory_api, memory_reader, neo4j_api, neo4j_corpus  # noqa: F401

_SENT = itertools.count()
_LONG_KEY = "x" * 5000  # longer than any key the graph holds (4,096 bytes)
_NODES = "{ nodes { title } }"  # what "@ }" in a query below stands for (with its "}")
_TOO_MANY = "[" + ", ".join(['"cs.LG"'] * 51) + "]"
_IDS = "[" + ", ".join(['"x"'] * 501) + "]"

#: (query, variables, code, extensions.argument)
REFUSED: list[tuple[str, dict[str, Any], str, str]] = [
    ("{ papers(first: -1) @ }", {}, "BAD_USER_INPUT", "first"),
    ("{ papers(first: 101) @ }", {}, "LIMIT_EXCEEDED", "first"),
    ('{ papers(after: "forged") @ }', {}, "BAD_USER_INPUT", "after"),
    ("{ papers(last: -1) @ }", {}, "BAD_USER_INPUT", "last"),
    ("{ papers(last: 1000) @ }", {}, "LIMIT_EXCEEDED", "last"),
    ('{ papers(last: 2, before: "forged") @ }', {}, "BAD_USER_INPUT", "before"),
    ('{ author(name: "  ") { name } }', {}, "BAD_USER_INPUT", "name"),
    ("query($n: String!) { author(name: $n) { name } }", {"n": _LONG_KEY}, "BAD_USER_INPUT", "name"),
    ('{ category(code: "") { code } }', {}, "BAD_USER_INPUT", "code"),
    ('{ signer(id: " ") { id } }', {}, "BAD_USER_INPUT", "id"),
    ('{ paper(id: " ") { title } }', {}, "BAD_USER_INPUT", "id"),
    ('{ resolve(id: "") { title } }', {}, "BAD_USER_INPUT", "id"),
    ('{ search(text: "!!!") @ }', {}, "BAD_USER_INPUT", "text"),
    ('{ search(text: "graph", after: "forged") @ }', {}, "BAD_USER_INPUT", "after"),
    ('{ papers(filter: {author: " "}) @ }', {}, "BAD_USER_INPUT", "filter.author"),
    ('{ papers(filter: {categories: ["cs.LG", " "]}) @ }', {}, "BAD_USER_INPUT", "filter.categories[1]"),
    ("{ papers(filter: {categories: []}) @ }", {}, "BAD_USER_INPUT", "filter.categories"),
    (
        "{ papers(filter: {excludeCategories: " + _TOO_MANY + "}) @ }",
        {},
        "LIMIT_EXCEEDED",
        "filter.excludeCategories",
    ),
    ('{ papers(filter: {submittedFrom: "yesterday"}) @ }', {}, "BAD_USER_INPUT", "filter.submittedFrom"),
    ('{ papers(filter: {title: "?"}) @ }', {}, "BAD_USER_INPUT", "filter.title"),
    ('{ collaborationPath(from: " ", to: "ann lee") { paper { title } } }', {}, "BAD_USER_INPUT", "from"),
    (
        'query($t: String!) { collaborationPath(from: "ann lee", to: $t) { paper { title } } }',
        {"t": _LONG_KEY},
        "BAD_USER_INPUT",
        "to",
    ),
    (
        '{ collaborationPath(from: "a", to: "b", maxHops: 0) { paper { title } } }',
        {},
        "BAD_USER_INPUT",
        "maxHops",
    ),
    (
        '{ collaborationPath(from: "a", to: "b", maxHops: 99) { paper { title } } }',
        {},
        "LIMIT_EXCEEDED",
        "maxHops",
    ),
    ("query($p: String!) { authors(prefix: $p) { name } }", {"p": "x" * 501}, "BAD_USER_INPUT", "prefix"),
    ('{ authors(prefix: "a", first: 1000) { name } }', {}, "LIMIT_EXCEEDED", "first"),
    ("{ papersById(ids: " + _IDS + ") { title } }", {}, "LIMIT_EXCEEDED", "ids"),
    ("{ nodes(ids: " + _IDS + ") { id } }", {}, "LIMIT_EXCEEDED", "ids"),
    # an unknown author: the first of the two the path names (since 0.9.4)
    (
        '{ collaborationPath(from: "No Such Person", to: "Nobody") { paper { title } } }',
        {},
        "NOT_FOUND",
        "from",
    ),
    (
        'query($t: String!) { collaborationPath(from: "Ann Lee", to: $t) { paper { title } } }',
        {"t": "Nobody"},
        "NOT_FOUND",
        "to",
    ),
    ("{ papers(first: 1) { facets(first: 1000) { categories { value } } } }", {}, "LIMIT_EXCEEDED", "first"),
    # graphql-core's refusal of a value at execution: a variable whose default let it stand
    # for a non-null code, sent null
    (
        'query($c: String = "cs.LG") { papers(filter: {categories: ["cs.AI", $c]}) @ }',
        {"c": None},
        "BAD_USER_INPUT",
        "filter.categories[1]",
    ),
]

#: Arguments of nested fields: (query, code, argument, the error's path).
NESTED: list[tuple[str, str, str, list[str]]] = [
    ('{ author(name: "ann lee") { papers(first: 101) @ } }', "LIMIT_EXCEEDED", "first", ["author"]),
    ('{ category(code: "cs.LG") { papers(after: "forged") @ } }', "BAD_USER_INPUT", "after", ["category"]),
    (
        '{ author(name: "ann lee") { coauthors(after: "Ann Lee") { sharedPapers } } }',
        "BAD_USER_INPUT",
        "after",
        ["author"],
    ),
    (
        '{ category(code: "cs.LG") { coListed(after: " ") { count } } }',
        "BAD_USER_INPUT",
        "after",
        ["category"],
    ),
]

#: Errors about no one argument: no ``argument`` key.
UNNAMED: list[tuple[str, dict[str, Any], str]] = [
    ("{ nope }", {}, "GRAPHQL_VALIDATION_FAILED"),
    ("{ papers(first: 2, last: 2) @ }", {}, "BAD_USER_INPUT"),  # two arguments
    ("query($n: Int) { papers(first: $n) @ }", {"n": "two"}, "BAD_USER_INPUT"),  # a variable
    # a variable's null refused where it stands for a non-null argument (a directive's if)
    (
        "query($b: Boolean = true) { papers(first: 1) @include(if: $b) { nodes { title } } }",
        {"b": None},
        "BAD_USER_INPUT",
    ),
    (
        "{ "
        + " ".join(
            f"a{i}: papers(first: 100) {{ nodes {{ authors {{ papers(first: 100) @ }} }} }}"
            for i in range(30)
        )
        + " }",
        {},
        "LIMIT_EXCEEDED",  # the cost
    ),
]


def _errors(api: Api, query: str, variables: dict[str, Any]) -> list[dict[str, Any]]:
    """The errors of ``query``, answered by the resolvers and then by its plan, alike."""
    text = f"{query.replace('@ }', _NODES + ' }')} # {next(_SENT)}"
    first = api.post(text, variables)
    assert api.post(text, variables) == first, query
    errors: list[dict[str, Any]] = first["errors"]
    return errors


@pytest.mark.parametrize(
    ("query", "variables", "code", "argument"), REFUSED, ids=[case[3] for case in REFUSED]
)
def test_a_refused_argument_is_named(
    api: Api, query: str, variables: dict[str, Any], code: str, argument: str
) -> None:
    (error,) = _errors(api, query, variables)
    assert error["extensions"]["code"] == code, error
    assert error["extensions"]["argument"] == argument, error
    assert error["extensions"]["suggestion"], error


@pytest.mark.parametrize(
    ("query", "code", "argument", "parent"), NESTED, ids=[f"{case[3][0]}-{case[2]}" for case in NESTED]
)
def test_a_nested_fields_argument_is_named(
    api: Api, query: str, code: str, argument: str, parent: list[str]
) -> None:
    (error,) = _errors(api, query, {})
    assert error["extensions"]["code"] == code, error
    assert error["extensions"]["argument"] == argument, error
    assert error["path"][: len(parent)] == parent and len(error["path"]) > len(parent), error


@pytest.mark.parametrize(("query", "variables", "code"), UNNAMED, ids=[case[2] for case in UNNAMED])
def test_an_error_about_no_one_argument_names_none(
    api: Api, query: str, variables: dict[str, Any], code: str
) -> None:
    (error,) = _errors(api, query, variables)
    assert error["extensions"]["code"] == code, error
    assert "argument" not in error["extensions"], error


def test_the_messages_are_unchanged(api: Api) -> None:
    """The argument is added; what people read stays as it was."""
    (error,) = _errors(api, '{ papers(filter: {categories: ["cs.LG", " "]}) @ }', {})
    assert error["message"] == "filter.categories[1] is empty."
    assert error["extensions"] == {
        "code": "BAD_USER_INPUT",
        "suggestion": "Pass a filter.categories[1] with something in it, or leave it out.",
        "argument": "filter.categories[1]",
    }
