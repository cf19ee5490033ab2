"""Which operation of a document runs: the one ``operationName`` names, or the only one; a
document of several operations without a name is a request error (the GraphQL spec's
GetOperation), answered as an unknown name is: HTTP 400, ``BAD_REQUEST``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from apitest import Api, corpus, memory_api, memory_reader  # noqa: F401 (fixtures)

TWO = "query A { papers(first: 1) { nodes { title } } } query B { categories { code } }"
GRAPHQL_RESPONSE = "application/graphql-response+json"


def _ask(api: Api, method: str, request: dict[str, Any], accept: str) -> httpx.Response:
    headers = {"accept": accept}
    if method == "GET":
        return api.client.get("/graphql", params=request, headers=headers)
    return api.client.post("/graphql", json=request, headers=headers)


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("accept", ["application/json", GRAPHQL_RESPONSE])
@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param(None, "Must provide operationName: the document holds several operations.", id="none"),
        pytest.param("C", 'Unknown operation named "C".', id="unknown"),
    ],
)
def test_several_operations_need_a_name_that_is_one_of_them(
    memory_api: Api,
    method: str,
    accept: str,
    name: str | None,
    message: str,
) -> None:
    request = {"query": TWO} if name is None else {"query": TWO, "operationName": name}
    for _ in range(2):  # the second time from any execution plan recorded
        response = _ask(memory_api, method, request, accept)
        assert response.status_code == 400
        body = response.json()
        assert "data" not in body or body["data"] is None
        assert body["errors"] == [{"message": message, "extensions": {"code": "BAD_REQUEST"}}]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_the_named_operation_runs(memory_api: Api, method: str) -> None:
    for name, key in (("A", "papers"), ("B", "categories")):
        response = _ask(memory_api, method, {"query": TWO, "operationName": name}, "application/json")
        assert response.status_code == 200
        assert list(response.json()["data"]) == [key]


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("query", ["{ categories { code } }", "query B { categories { code } }"])
def test_a_sole_operation_needs_no_name(memory_api: Api, method: str, query: str) -> None:
    response = _ask(memory_api, method, {"query": query}, "application/json")
    assert response.status_code == 200
    assert list(response.json()["data"]) == ["categories"]
