"""One selection may ask for one response name at most ``MAX_SAME_NAME`` times (fragments
spread there counted), refused before validation (api/overlaps.py): graphql-core compares
every pair of such fields, so hundreds of copies cost it about a second of CPU per request.
The count follows graphql-core's collection (vectors/same_name.json)."""

from __future__ import annotations

from typing import Any

import graphql.validation.rules.overlapping_fields_can_be_merged as overlapping
import pytest
from apitest import (  # noqa: F401 (fixtures)
    Api,
    corpus,
    load_vectors,
    memory_api,
    memory_reader,
)
from graphql import OverlappingFieldsCanBeMergedRule, parse, validate

from pith_graph.api.overlaps import MAX_SAME_NAME, MERGE_BUDGET, BudgetedOverlaps, most_repeated
from pith_graph.api.schema import build_schema

VECTORS = load_vectors("same_name.json")


@pytest.mark.parametrize("case", VECTORS, ids=[case["id"] for case in VECTORS])
def test_the_most_repeated_name_is_counted_as_graphql_collects(case: dict[str, Any]) -> None:
    assert most_repeated(parse(case["document"])) == (case["name"], case["count"])


def _copies(count: int, field: str = "papers { totalCount }") -> str:
    return "{ " + " ".join([field] * count) + " }"


def test_up_to_the_limit_answers(memory_api: Api) -> None:
    body = memory_api.post(_copies(MAX_SAME_NAME))
    assert "errors" not in body and body["data"]["papers"]["totalCount"] > 0


@pytest.mark.parametrize(
    "document",
    [
        _copies(MAX_SAME_NAME + 1),
        _copies(399),  # 8 KB; took graphql-core 0.6-1.3 s to validate
        "{ papers { nodes { " + "title " * (MAX_SAME_NAME + 1) + "} } }",
        "query Q { papers { totalCount } "
        + " ".join(f"...F{i}" for i in range(MAX_SAME_NAME))
        + " } "
        + " ".join(f"fragment F{i} on Query {{ papers {{ totalCount }} }}" for i in range(MAX_SAME_NAME)),
    ],
    ids=["one-over", "399-copies", "nested", "through-fragments"],
)
def test_over_the_limit_is_refused_before_validation(memory_api: Api, document: str) -> None:
    response = memory_api.client.post("/graphql", json={"query": document})
    assert response.status_code == 200, response.text
    errors = response.json()["errors"]
    assert len(errors) == 1 and errors[0]["extensions"]["code"] == "LIMIT_EXCEEDED", errors
    assert (
        errors[0]["message"].startswith("A selection asks for '")
        and f"at most {MAX_SAME_NAME}" in errors[0]["message"]
    )
    assert "data" not in response.json() or response.json()["data"] is None


#: 32 copies of a page asking for ``nodes { title }`` 14 times (7.5 KB): within the bound of
#: one response name per selection, each pair of pages compares 196 pairs of ``nodes``; with
#: graphql-core's default budget it gave up only after 0.8-2 s of CPU.
MULTIPLIED = "{ " + " ".join(["papers { " + "nodes { title } " * 14 + "}"] * MAX_SAME_NAME) + " }"


def test_comparisons_multiplied_down_the_levels_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget (api/overlaps.py) stops the rule early: the comparisons it makes are
    counted (graphql-core's own function, wrapped), not timed."""
    schema = build_schema()._schema
    document = parse(MULTIPLIED)
    original = overlapping.find_conflict
    calls: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(overlapping, "find_conflict", counting)
    spent = {}
    for name, rule in (("default", OverlappingFieldsCanBeMergedRule), ("budgeted", BudgetedOverlaps)):
        calls.clear()
        errors = validate(schema, document, [rule])
        assert [error.message for error in errors] == ["Validation aborted."]
        spent[name] = len(calls)
    assert spent["budgeted"] <= MERGE_BUDGET / 2 < spent["default"] / 5, spent  # 2 units a comparison


def test_a_multiplied_document_is_a_limit(memory_api: Api) -> None:
    response = memory_api.client.post("/graphql", json={"query": MULTIPLIED})
    assert response.status_code == 200, response.text
    (error,) = response.json()["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert "merge repeated fields" in error["extensions"]["suggestion"]


def test_the_suite_s_largest_documents_are_within_the_budget(memory_api: Api) -> None:
    """32 copies of a page with its nodes, authors and their names: valid and answered."""
    document = (
        "{ " + " ".join(["papers(first: 1) { nodes { title authors { name } } }"] * MAX_SAME_NAME) + " }"
    )
    body = memory_api.post(document)
    assert "errors" not in body and body["data"]["papers"]["nodes"]
