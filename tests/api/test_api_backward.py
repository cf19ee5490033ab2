"""``papers(last:, before:)`` (since 0.9.2): Relay's backward paging, on both backends alike.

The corpus of :mod:`test_api_oldest_first` (shared submission times, cross-lists, second
versions), served by the memory and the Neo4j backend over HTTP: walked back from the end
in pages of 2 (Neo4j scans the ``submittedAt`` index) and of 50 (it walks a category's or an
author's edges), in either order and with each filter, every page must be the forward
walk's papers at the same places, in the listing's order, with the forward walk's cursors
and pageInfo at both ends. Then what is refused: mixing directions, a page over the cap, a
cursor of the other order or of a search; and ``last`` costs what ``first`` does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from apitest import Api, alike, both_fixture, corpus, memory_api, memory_reader  # noqa: F401
from test_api_oldest_first import FILTERS, _specs

both = both_fixture("backward", _specs, 41)

EDGES = "edges { cursor node { pithNumber submittedAt } }"
PAGE = f"{EDGES} pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}"
FORWARD = (
    "query($f: PaperFilter, $n: Int, $a: String, $o: PaperOrder) "
    f"{{ papers(filter: $f, first: $n, after: $a, orderBy: $o) {{ {PAGE} }} }}"
)
BACKWARD = (
    "query($f: PaperFilter, $n: Int, $b: String, $o: PaperOrder) "
    f"{{ papers(filter: $f, last: $n, before: $b, orderBy: $o) {{ {PAGE} }} }}"
)


def _forward(both: tuple[Api, Api], size: int, order: str | None, where: dict[str, Any]) -> list[Any]:
    """Every edge of the listing, walked forwards (both backends alike)."""
    edges: list[Any] = []
    after = None
    while True:
        page = alike(both, FORWARD, f=where, n=size, a=after, o=order)["papers"]
        edges += page["edges"]
        if not page["pageInfo"]["hasNextPage"]:
            return edges
        after = page["pageInfo"]["endCursor"]


def _backward(both: tuple[Api, Api], size: int, order: str | None, where: dict[str, Any]) -> list[Any]:
    """The pages of the listing walked back from its end, each as answered (both alike)."""
    pages: list[Any] = []
    before = None
    while True:
        page = alike(both, BACKWARD, f=where, n=size, b=before, o=order)["papers"]
        pages.append(page)
        assert len(page["edges"]) <= size
        if not page["pageInfo"]["hasPreviousPage"]:
            return pages
        before = page["pageInfo"]["startCursor"]


@pytest.mark.neo4j
@pytest.mark.parametrize("order", [None, "OLDEST"])
@pytest.mark.parametrize("where", FILTERS, ids=lambda where: ",".join(where) or "none")
def test_a_walk_back_is_the_forward_walk_by_pages(
    both: tuple[Api, Api], where: dict[str, Any], order: str | None
) -> None:
    every = _forward(both, 50, order, where)
    assert every, where
    for size in (2, 50):  # a page of 2: Neo4j scans; of 50: it walks the edges
        pages = _backward(both, size, order, where)
        end = len(every)
        for index, page in enumerate(pages):
            start = max(0, end - size)
            assert page["edges"] == every[start:end], (size, index)  # the same places and cursors
            info = page["pageInfo"]
            assert info["hasPreviousPage"] is (start > 0)
            assert info["hasNextPage"] is (index > 0)  # before was given
            assert info["startCursor"] == every[start]["cursor"]
            assert info["endCursor"] == every[end - 1]["cursor"]
            end = start
        assert end == 0


@pytest.mark.neo4j
def test_the_page_before_a_cursor_is_the_forward_page_before_it(both: tuple[Api, Api]) -> None:
    for order in ("NEWEST", "OLDEST"):
        first = alike(both, FORWARD, f={}, n=3, a=None, o=order)["papers"]
        second = alike(both, FORWARD, f={}, n=3, a=first["pageInfo"]["endCursor"], o=order)["papers"]
        back = alike(both, BACKWARD, f={}, n=3, b=second["pageInfo"]["startCursor"], o=order)["papers"]
        assert back["edges"] == first["edges"]
        assert back["pageInfo"] == {**first["pageInfo"], "hasNextPage": True, "hasPreviousPage": False}
        # A smaller page before the same cursor: the papers just before it.
        one = alike(both, BACKWARD, f={}, n=1, b=second["pageInfo"]["startCursor"], o=order)["papers"]
        assert one["edges"] == first["edges"][-1:]
        assert one["pageInfo"]["hasPreviousPage"] is True
        # last alone: the listing's end; before alone: 20 before it (both null: forwards).
        end = alike(both, BACKWARD, f={}, n=20, b=None, o=order)["papers"]
        every = _forward(both, 50, order, {})
        assert end["edges"] == every[-20:]
        assert end["pageInfo"]["hasNextPage"] is False
        before = alike(both, BACKWARD, f={}, n=None, b=every[-1]["cursor"], o=order)["papers"]
        assert before["edges"] == every[-21:-1]


def _error(api: Api, query: str, **variables: Any) -> dict[str, Any]:
    answer = api.post(query, variables)
    errors = answer["errors"]
    assert len(errors) == 1, errors
    assert answer["data"] is None, answer
    error: dict[str, Any] = errors[0]
    return error


def _page(**arguments: Any) -> str:
    """A query of ``papers`` with these arguments (literals; an order as its name)."""
    written = ", ".join(f"{k}: {v if k == 'orderBy' else json.dumps(v)}" for k, v in arguments.items())
    return f"{{ papers({written}) {{ nodes {{ pithNumber }} }} }}"


def _refused(api: Api, **arguments: Any) -> dict[str, Any]:
    return _error(api, _page(**arguments))


def test_a_page_is_forwards_or_backward_not_both(memory_api: Api) -> None:
    cursor = memory_api.data("{ papers(first: 2) { pageInfo { endCursor } } }")["papers"]["pageInfo"][
        "endCursor"
    ]
    for mixed, given in (
        ({"first": 2, "last": 2}, "first and last"),
        ({"after": cursor, "before": cursor}, "after and before"),
        ({"first": 2, "before": cursor}, "first and before"),  # Apollo's fetchMore keeps first
        ({"first": 2, "after": cursor, "last": 2, "before": cursor}, "first, after, last and before"),
    ):
        error = _refused(memory_api, **mixed)
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        assert error["message"] == (  # since 0.9.4 it says which were given
            "papers pages forwards (first, after) or backwards (last, before), not both in one page: "
            f"{given} were given."
        ), error
        suggestion = error["extensions"]["suggestion"]
        assert "last and before" in suggestion and "other direction's arguments to null" in suggestion, error
    assert _refused(memory_api, last=2, after=cursor)["extensions"]["code"] == "BAD_USER_INPUT"
    # Null is not given: first: null and after: null with last page back.
    back = memory_api.data(_page(first=None, after=None, last=2))["papers"]["nodes"]
    assert back == memory_api.data(_page(last=2))["papers"]["nodes"]
    assert len(back) == 2


def test_last_has_first_s_limits(memory_api: Api) -> None:
    error = _refused(memory_api, last=101)
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED", error
    assert error["message"] == "last must be at most 100.", error
    assert "startCursor as before" in error["extensions"]["suggestion"], error
    error = _refused(memory_api, last=-1)
    assert (error["extensions"]["code"], error["message"]) == ("BAD_USER_INPUT", "last must not be negative.")
    assert len(memory_api.data(_page(last=100))["papers"]["nodes"]) == 100
    empty = memory_api.data(
        "{ papers(last: 0) { edges { cursor } pageInfo { hasPreviousPage hasNextPage } } }"
    )
    assert empty["papers"] == {"edges": [], "pageInfo": {"hasPreviousPage": True, "hasNextPage": False}}


def test_before_is_checked_as_after_is(memory_api: Api) -> None:
    """A cursor this API did not issue, one of the other order, or one of a search is refused."""
    query = "query($o: PaperOrder) { papers(first: 2, orderBy: $o) { pageInfo { endCursor } } }"
    newest = memory_api.data(query, o="NEWEST")["papers"]["pageInfo"]["endCursor"]
    oldest = memory_api.data(query, o="OLDEST")["papers"]["pageInfo"]["endCursor"]
    searched = memory_api.data('{ search(text: "graph", first: 1) { pageInfo { endCursor } } }')
    found = searched["search"]["pageInfo"]["endCursor"]
    assert found is not None
    for cursor, order, told in (
        ("forged", None, "before is not a cursor this API issued."),
        (found, None, "before is a cursor of a search; a listing of papers takes its own cursors."),
        (oldest, None, "before is a cursor of a listing oldest first; this one lists newest first."),
        (newest, "OLDEST", "before is a cursor of a listing newest first; this one lists oldest first."),
    ):
        ordered = {} if order is None else {"orderBy": order}
        error = _refused(memory_api, last=2, before=cursor, **ordered)
        assert (error["extensions"]["code"], error["message"]) == ("BAD_USER_INPUT", told), error
    assert "errors" not in memory_api.post(_page(before=oldest, orderBy="OLDEST"))


def test_last_costs_what_first_costs(memory_api: Api) -> None:
    """The cost counts ``last`` as ``first``, also once the document has a plan (a variable)."""
    query = (
        "query($n: Int) { papers(@: $n) { nodes { authors(first: 10) { papers(first: 100) "
        "{ nodes { title } } } } } }"
    )
    for argument in ("first", "last"):
        sized = query.replace("@", argument)
        assert "errors" not in memory_api.post(sized, {"n": 2})  # 2 + 20 + 2,000; compiles a plan
        assert "errors" not in memory_api.post(sized, {"n": 2})
        error = _error(memory_api, sized, n=100)  # 100 + 1,000 + 100,000 = 101,100
        assert error["extensions"]["code"] == "LIMIT_EXCEEDED", error
        assert "101100" in error["message"].replace(",", ""), error


def test_search_pages_forwards_only(memory_api: Api) -> None:
    """Search pages forwards only (the papers of an author, a category or a signer page back
    too since 0.9.4: :mod:`test_api_nested_backward`)."""
    for query in (
        '{ search(text: "graph", last: 2) { nodes { title } } }',
        '{ search(text: "graph", before: "x") { nodes { title } } }',
    ):
        error = memory_api.post(query, {})["errors"][0]
        assert error["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED", error


#: hasNextPage alone, answered by the plan (the second time a text is sent) and by the
#: resolvers (a directive: no plan).
ENDS = [
    "query($f: PaperFilter, $b: String, $o: PaperOrder) "
    f"{{ papers(filter: $f, last: 1, before: $b, orderBy: $o) {{ pageInfo {{ hasNextPage{skip} }} }} }}"
    for skip in ("", " startCursor @include(if: false)")
]


#: Listings leaving some papers out: first versions (one left at the listing's start), a category.
_LEAVING = (
    {"latestVersions": True},
    {"latestVersions": True, "submittedBefore": "2024-03-02"},
    {"category": "cs.LG"},
)


@pytest.mark.neo4j
def test_has_next_page_before_a_cursor_is_whether_papers_follow(both: tuple[Api, Api]) -> None:
    """Since 0.9.3, hasNextPage of a page before a cursor says whether the listing has a paper
    at or after the cursor's place: false for a cursor of a paper the filter does not list
    (latestVersions: a first version; a category) with none of the listing after it."""
    seen = set()
    for order in ("NEWEST", "OLDEST"):
        every = [edge["cursor"] for edge in _forward(both, 50, order, {})]
        place = {cursor: index for index, cursor in enumerate(every)}
        for where in ({}, *_LEAVING):
            listed = [place[edge["cursor"]] for edge in _forward(both, 50, order, where)]
            for cursor in every:
                expected = any(index >= place[cursor] for index in listed)
                seen.add(("latestVersions" in where, expected, place[cursor] in listed))
                for query in ENDS:  # the plan answers the first from its second time on
                    answer = alike(both, query, f=where, b=cursor, o=order)["papers"]["pageInfo"]
                    assert answer["hasNextPage"] is expected, (where, place[cursor], listed)
    # A first version left with none of the listing after it, and a paper of another category;
    # not listed with papers after it; listed.
    assert {(True, False, False), (False, False, False), (True, True, False), (False, True, True)} <= seen
