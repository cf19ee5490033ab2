"""An author's, a category's and a signer's ``papers(last:, before:)`` (since 0.9.4): Relay's
backward paging as ``Query.papers`` has it, on both backends alike and both executions.

The corpus and signers of :mod:`test_api_nested_order` (second versions, cross-lists, two
signers), served by the memory and the Neo4j backend over HTTP, each query text sent twice
(the resolvers answer it, then its plan: the answers must be equal). Each parent's papers
walked back from the end in pages of 2 (Neo4j scans the ``submittedAt`` index) and of 50 (it
walks the node's edges), either order, must be its forward walk, page by page, with the
same cursors. Every cursor of the whole listing passed as before must answer the parent's
papers strictly before it, the last two, in the listing's order, with an exact hasNextPage
(a paper of the parent's at or after the cursor) and hasPreviousPage: for an author and a
category exactly the page ``papers(filter:, last:, before:)`` answers. Then the refusals
(``Query.papers``' own, word for word) and the statements (one per level, per order);
:mod:`test_api_nested_order` checks that the cost counts ``last`` as ``first``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from apitest import Api, alike
from test_api_nested_order import (  # noqa: F401
    PARENTS,
    QUERIES,
    _error,
    _id,
    _page,
    _variables,
    both,
    page_statements,
)
from test_api_nplus1 import Counted, _serve

from pith_graph.api.reads.neo4j import Neo4jReader

BACK_PAGE = (
    "edges { cursor node { pithNumber submittedAt } } "
    "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"
)
#: field -> a page of one parent's papers before a cursor (``$n``: last, ``$a``: before).
BACKWARD = {
    field: query.replace("first: $n, after: $a", "last: $n, before: $a") for field, query in QUERIES.items()
}
#: field -> the papers(filter:) of the same papers, paged back alike.
FLAT = (
    "query($f: PaperFilter, $n: Int, $a: String, $o: PaperOrder) "
    f"{{ papers(filter: $f, last: $n, before: $a, orderBy: $o) {{ {BACK_PAGE} }} }}"
)
FILTERS = {"author": "author", "category": "category"}
EVERY = (
    "query($o: PaperOrder) { papers(first: 50, orderBy: $o) { edges { cursor } pageInfo { hasNextPage } } }"
)


def _back(both: tuple[Api, Api], parent: tuple[str, str, bool | None], **page: Any) -> dict[str, Any]:
    field = parent[0]
    query = BACKWARD[field].replace("@", BACK_PAGE)
    found: dict[str, Any] = alike(both, query, **_variables(parent, **page))[field]["papers"]
    return found


def _every(both: tuple[Api, Api], order: str) -> list[str]:
    """Every cursor of the whole listing in ``order``."""
    page = alike(both, EVERY, o=order)["papers"]
    assert not page["pageInfo"]["hasNextPage"]
    return [edge["cursor"] for edge in page["edges"]]


@pytest.mark.neo4j
@pytest.mark.parametrize("parent", PARENTS, ids=_id)
def test_a_walk_back_is_the_forward_walk_by_pages(
    both: tuple[Api, Api], parent: tuple[str, str, bool | None]
) -> None:
    for order in (None, "NEWEST", "OLDEST"):
        forward = _page(both, parent, n=50, a=None, o=order)
        assert not forward["pageInfo"]["hasNextPage"]
        for size in (2, 50):
            pages = []
            before = None
            while True:
                page = _back(both, parent, n=size, a=before, o=order)
                assert len(page["edges"]) <= size
                info = page["pageInfo"]
                assert info["hasNextPage"] is (before is not None), (
                    parent,
                    order,
                    size,
                )  # the cursor's paper
                edges = page["edges"]
                assert (info["startCursor"], info["endCursor"]) == (
                    (edges[0]["cursor"], edges[-1]["cursor"]) if edges else (None, None)
                )
                pages.append(page)
                if not info["hasPreviousPage"]:
                    break
                before = info["startCursor"]
            walked = [edge for page in reversed(pages) for edge in page["edges"]]
            assert walked == forward["edges"], (parent, order, size)
    if parent[:2] == ("author", "ann lee"):
        assert len(forward["edges"]) > 2


@pytest.mark.neo4j
@pytest.mark.parametrize("parent", PARENTS, ids=_id)
def test_the_page_before_any_cursor_is_exact(
    both: tuple[Api, Api], parent: tuple[str, str, bool | None]
) -> None:
    """Before every cursor of the whole listing (its parent's papers or not): the parent's
    last two papers strictly before it; hasNextPage whether one is at or after it,
    hasPreviousPage whether more come before the page; an author's and a category's page is
    the one ``Query.papers(filter:)`` answers, pageInfo and all."""
    seen = set()
    for order in ("NEWEST", "OLDEST"):
        every = _every(both, order)
        place = {cursor: index for index, cursor in enumerate(every)}
        listed = _page(both, parent, n=50, a=None, o=order)["edges"]
        for cursor in every:
            page = _back(both, parent, n=2, a=cursor, o=order)
            earlier = [edge for edge in listed if place[edge["cursor"]] < place[cursor]]
            assert page["edges"] == earlier[-2:], (parent, order, place[cursor])
            info = page["pageInfo"]
            later = any(place[edge["cursor"]] >= place[cursor] for edge in listed)
            assert (info["hasNextPage"], info["hasPreviousPage"]) == (later, len(earlier) > 2)
            seen.add((later, len(earlier) > 2))
            if parent[0] in FILTERS:
                flat = alike(both, FLAT, f={FILTERS[parent[0]]: parent[1]}, n=2, a=cursor, o=order)
                assert page == flat["papers"], (parent, order, place[cursor])
    if len(listed) > 3:
        assert {(True, False), (True, True)} <= seen, seen


#: field -> every paging argument of a parent's papers (``$z``: before; a signer's ``$b`` is
#: its signedBundle).
_ALL = "first: $f, after: $a, last: $l, before: $z, orderBy: $o"
REFUSED = {
    field: query.replace("$n: Int, $a: String", "$f: Int, $a: String, $l: Int, $z: String")
    .replace("first: $n, after: $a, orderBy: $o", _ALL)
    .replace("@", "nodes { pithNumber }")
    for field, query in QUERIES.items()
}
REFUSED_FLAT = (
    "query($f: Int, $a: String, $l: Int, $z: String, $o: PaperOrder) "
    f"{{ papers({_ALL}) {{ nodes {{ pithNumber }} }} }}"
)


@pytest.mark.neo4j
@pytest.mark.parametrize("parent", [PARENTS[0], PARENTS[2], PARENTS[6]], ids=_id)
def test_what_query_papers_refuses_is_refused_alike(
    both: tuple[Api, Api], parent: tuple[str, str, bool | None]
) -> None:
    """Mixed directions (naming the arguments given), last over the cap (LIMIT_EXCEEDED, its
    argument named) or negative, a before that is no cursor of this listing's order: the
    same message and extensions as Query.papers; the parent is null, as for after."""
    field = parent[0]
    ordered = "query($o: PaperOrder) { papers(first: 2, orderBy: $o) { pageInfo { endCursor } } }"
    newest = alike(both, ordered, o="NEWEST")["papers"]["pageInfo"]["endCursor"]
    oldest = alike(both, ordered, o="OLDEST")["papers"]["pageInfo"]["endCursor"]
    searched = alike(both, '{ search(text: "graphs", first: 1) { pageInfo { endCursor } } }')
    found = searched["search"]["pageInfo"]["endCursor"]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"f": 2, "l": 2}, "BAD_USER_INPUT"),
        ({"a": newest, "z": newest}, "BAD_USER_INPUT"),
        ({"f": 2, "z": newest}, "BAD_USER_INPUT"),
        ({"l": 2, "a": newest}, "BAD_USER_INPUT"),
        ({"f": 2, "a": newest, "l": 2, "z": newest}, "BAD_USER_INPUT"),
        ({"l": 101}, "LIMIT_EXCEEDED"),
        ({"l": 101, "z": "forged"}, "LIMIT_EXCEEDED"),  # the size is checked first
        ({"l": -1}, "BAD_USER_INPUT"),
        ({"l": 2, "z": "forged"}, "BAD_USER_INPUT"),
        ({"z": found}, "BAD_USER_INPUT"),
        ({"l": 2, "z": oldest}, "BAD_USER_INPUT"),
        ({"l": 2, "z": oldest, "o": "NEWEST"}, "BAD_USER_INPUT"),
        ({"l": 2, "z": newest, "o": "OLDEST"}, "BAD_USER_INPUT"),
    ]
    for given, code in cases:
        variables = {"f": None, "a": None, "l": None, "z": None, "o": None, **given}
        flat = _error(both[0], REFUSED_FLAT, variables)
        assert flat["extensions"]["code"] == code, (given, flat)
        for api in both:
            body = api.post(REFUSED[field], _variables(parent, **variables))
            assert body["data"] == {field: None}, (given, body)
            [error] = body["errors"]
            assert (error["message"], error["extensions"]) == (flat["message"], flat["extensions"]), given
    assert "errors" not in both[0].post(REFUSED[field], _variables(parent, l=2, z=oldest, o="OLDEST"))


#: Two levels of parents, paged back in both orders: every author's, category's and signer's
#: page of one order and level in one statement (the other order's, read forwards).
QUERY_MANY = (
    "{ papers(first: 30) { nodes { authors { papers(last: 2@) { nodes { pithNumber } } } "
    "categories { papers(last: 2@) { nodes { pithNumber } } } } } "
    'a: signer(id: "a.example") { papers(last: 2@, signedBundle: true) { nodes { pithNumber } } } '
    'b: signer(id: "b.example") { papers(last: 2@, signedBundle: true) { nodes { pithNumber } } } }'
)
_READS = ("authors", "categories", "signers_by_bundle")


def _statements(pages: tuple[str, ...], order: str) -> dict[str, set[str]]:
    return {page: page_statements(page, order) for page in pages}


@pytest.mark.neo4j
def test_the_parents_pages_back_are_read_in_one_statement_each(both: tuple[Api, Api]) -> None:
    """No N+1: newest first, every author's page back of the request in the one statement
    that reads oldest first (and the other way round); the resolvers' and the plan's. A
    page before a cursor asked for its hasNextPage reads every parent's end in one more."""
    reader = both[1].reader
    assert isinstance(reader, Neo4jReader)
    counted = Counted(reader)
    cursor = json.dumps(_every(both, "NEWEST")[8])
    with _serve(counted, "bridged") as api:
        for order, read in (("", "oldest"), (", orderBy: OLDEST", "newest")):
            query = QUERY_MANY.replace("@", order)
            reads = _statements(_READS, read)
            data, resolved, _ = counted.ask(api, query)  # the first time: the resolvers
            again, planned, _ = counted.ask(api, query)  # then: its plan
            assert again == data
            for statements in (resolved, planned):
                ran = {name: sum(s in found for s in statements) for name, found in reads.items()}
                assert ran == dict.fromkeys(reads, 1), (order, ran)
            pages = [a["papers"]["nodes"] for p in data["papers"]["nodes"] for a in p["authors"]]
            assert len({tuple(n["pithNumber"] for n in page) for page in pages}) > 1
        reads = _statements(("authors",), "oldest")
        for selected, expected in (("startCursor", 1), ("hasNextPage", 2)):
            page = f"papers(last: 2, before: {cursor}) {{ pageInfo {{ {selected} }} }}"
            query = f"{{ papers(first: 30) {{ nodes {{ authors {{ {page} }} }} }} }}"
            data, resolved, _ = counted.ask(api, query)
            again, planned, _ = counted.ask(api, query)
            assert again == data
            for statements in (resolved, planned):
                assert sum(s in reads["authors"] for s in statements) == expected, selected
