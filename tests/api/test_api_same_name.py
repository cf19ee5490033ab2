"""One selection may ask for one response name at most ``MAX_SAME_NAME`` times (fragments
spread there counted), refused before validation (api/overlaps.py): graphql-core compares
every pair of such fields, so hundreds of copies cost it about a second of CPU per request.
The count follows graphql-core's collection (vectors/same_name.json)."""

from __future__ import annotations

from typing import Any

import pytest
from apitest import (  # noqa: F401 (fixtures)
    Api,
    corpus,
    load_vectors,
    memory_api,
    memory_reader,
)
from graphql import parse

from pith_graph.api.overlaps import MAX_SAME_NAME, most_repeated

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
