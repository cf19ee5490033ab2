"""Global object ids (Relay's Node): every paper, author, category and signer has an ``id``
that ``node(id:)`` and ``nodes(ids:)`` look up again, over real HTTP, on both backends."""

from __future__ import annotations

from base64 import urlsafe_b64encode
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
    neo4j_reader,
)
from test_api_nplus1 import Counted, _serve

from pith_graph.api.reads.neo4j import Neo4jReader

#: Objects of every Node type, with their ids and keys.
OBJECTS = """{ papers(first: 3) { nodes { id pithNumber
  authors(first: 2) { id nameKey } primaryCategory { id code } signers { id signerId } } } }"""
#: What a node answers with: its type and key, whatever the type.
NODE = "__typename id ... on Paper { pithNumber } ... on Author { nameKey } ... on Category { code } ... on Signer { signerId }"
KEYS = {"Paper": "pithNumber", "Author": "nameKey", "Category": "code", "Signer": "signerId"}


def _encoded(text: str) -> str:
    return urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def _objects(api: Api) -> list[dict[str, Any]]:
    """One object of each type, ``{"__typename", "id", <key>}`` as a node answers with it."""
    papers = api.data(OBJECTS)["papers"]["nodes"]
    found = []
    for paper in papers[:1]:
        found.append({"__typename": "Paper", "id": paper["id"], "pithNumber": paper["pithNumber"]})
        for kind, value in (
            ("Author", paper["authors"][0]),
            ("Category", paper["primaryCategory"]),
            ("Signer", paper["signers"][0]),
        ):
            found.append({"__typename": kind, **value})
    return found


def test_every_node_type_round_trips(api: Api) -> None:
    objects = _objects(api)
    assert [o["__typename"] for o in objects] == ["Paper", "Author", "Category", "Signer"]
    for found in objects:
        # The id is the unpadded base64url of "<type>:<key>": URL-safe, the same everywhere.
        assert found["id"] == _encoded(f"{found['__typename']}:{found[KEYS[found['__typename']]]}")
        assert api.data(f"query($id: ID!) {{ node(id: $id) {{ {NODE} }} }}", id=found["id"])["node"] == found
    answer = api.data(
        f"query($ids: [ID!]!) {{ nodes(ids: $ids) {{ {NODE} }} }}", ids=[o["id"] for o in objects]
    )
    assert answer["nodes"] == objects


@pytest.mark.parametrize(
    "wrong",
    [
        pytest.param("", id="empty"),
        pytest.param("not an id!", id="garbage"),
        pytest.param(_encoded("Paper:pith:2000:AAAAAAAAAAAAAAAAAAAAAAAAAA"), id="unknown-paper"),
        pytest.param(_encoded("Author:no such person at all"), id="unknown-author"),
        pytest.param(_encoded("Category:xx.YY"), id="unknown-category"),
        pytest.param(_encoded("Signer:nobody"), id="unknown-signer"),
        pytest.param(_encoded("Query:papers"), id="foreign-type"),
        pytest.param(_encoded("PaperConnection:x"), id="not-a-node"),
        pytest.param(_encoded("Paper"), id="no-key"),
        pytest.param(_encoded("Category:cs.LG") + "=", id="padded"),
        pytest.param("🚀", id="not-ascii"),
    ],
)
def test_an_id_that_names_nothing_is_null(api: Api, wrong: str) -> None:
    assert api.data("query($id: ID!) { node(id: $id) { id } }", id=wrong) == {"node": None}
    assert api.data("query($ids: [ID!]!) { nodes(ids: $ids) { id } }", ids=[wrong]) == {"nodes": [None]}


def test_an_id_spelled_otherwise_names_nothing(api: Api) -> None:
    """Only the id itself names its object: another padding or letter case does not."""
    paper = _objects(api)[0]
    for other in (paper["id"] + "==", paper["id"].lower(), " " + paper["id"]):
        assert api.data("query($id: ID!) { node(id: $id) { id } }", id=other) == {"node": None}


def test_nodes_keep_the_order_and_repeats_given(api: Api) -> None:
    paper, author, category, signer = _objects(api)
    ids = [signer["id"], paper["id"], "nope", author["id"], paper["id"], category["id"], signer["id"]]
    answer = api.data(f"query($ids: [ID!]!) {{ nodes(ids: $ids) {{ {NODE} }} }}", ids=ids)["nodes"]
    assert answer == [signer, paper, None, author, paper, category, signer]
    assert api.data("{ nodes(ids: []) { id } }") == {"nodes": []}


def test_nodes_past_the_cap_are_refused(api: Api) -> None:
    paper = _objects(api)[0]
    body = api.post("query($ids: [ID!]!) { nodes(ids: $ids) { id } }", {"ids": [paper["id"]] * 501})
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert error["message"] == "ids holds 501 identifiers; at most 500 are looked up at once."
    assert (
        len(api.data("query($ids: [ID!]!) { nodes(ids: $ids) { id } }", ids=[paper["id"]] * 500)["nodes"])
        == 500
    )


def test_a_node_costs_what_its_costliest_type_may(memory_api: Api) -> None:
    """A node's selection counts in the cost limit (here 20 × 100 authors of 100 papers)."""
    query = "query($ids: [ID!]!) { nodes(ids: $ids) { ... on Author { papers(first: 100) { nodes { authors { name } } } } } }"
    body = memory_api.post(query, {"ids": ["x"] * 20})
    assert body["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED", body
    assert "costs 202020" in body["errors"][0]["message"]


@pytest.mark.neo4j
def test_ids_are_the_same_on_both_backends(memory_api: Api, neo4j_api: Api) -> None:
    objects = _objects(memory_api)
    assert _objects(neo4j_api) == objects
    query = f"query($ids: [ID!]!) {{ nodes(ids: $ids) {{ {NODE} }} }}"
    ids = [o["id"] for o in objects] + ["nope"]
    assert neo4j_api.post(query, {"ids": ids}) == memory_api.post(query, {"ids": ids})


@pytest.mark.neo4j
def test_nodes_read_once_per_type(neo4j_reader: Neo4jReader, memory_api: Api) -> None:
    """Many ids of each type: one statement per type (papers, authors, categories, signers)."""
    papers = memory_api.data(
        "{ papers(first: 5) { nodes { id authors(first: 3) { id } categories { id } signers { id } } } }"
    )
    ids = [
        found["id"]
        for paper in papers["papers"]["nodes"]
        for found in [paper, *paper["authors"], *paper["categories"], *paper["signers"]]
    ]
    counted = Counted(neo4j_reader)
    with _serve(counted, "bridged") as api:
        data, statements, transactions = counted.ask(
            api, "{ nodes(ids: [" + ", ".join(f'"{i}"' for i in ids) + "]) { id } }"
        )
    assert [found["id"] for found in data["nodes"]] == ids
    assert len(statements) == 4, statements
    assert transactions == 1
