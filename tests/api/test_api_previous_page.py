"""hasPreviousPage of a page after a cursor (since 0.9.4): whether the listing has a paper at
or before the cursor's place, read only when asked for; and a stored plan reads hasNextPage
before a cursor only when asked for too.

The corpus and signers of :mod:`test_api_nested_order` (second versions, cross-lists, two
signers), served by the memory and the Neo4j backend over HTTP, each query text sent twice
(the resolvers answer it, then its plan: the answers must be equal). Every cursor of the
whole listing, in either order, is passed as after to ``Query.papers`` of listings leaving
papers out and to every parent's ``papers``: hasPreviousPage must say whether a paper of
that listing sits at or before it (0.9.2 answered true whenever after was given). Then the
statements: the extra read runs only when its field is selected, in both executions.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from apitest import Api, alike
from test_api_nested_order import PARENTS, QUERIES, _id, _page, _variables, both  # noqa: F401
from test_api_nplus1 import Counted, _serve

from pith_graph.api.reads.neo4j import Neo4jReader

EVERY = (
    "query($f: PaperFilter, $o: PaperOrder) "
    "{ papers(filter: $f, first: 50, orderBy: $o) { edges { cursor } pageInfo { hasNextPage } } }"
)
PREVIOUS = (
    "query($f: PaperFilter, $a: String, $o: PaperOrder) "
    "{ papers(filter: $f, first: 1, after: $a, orderBy: $o) { pageInfo { hasPreviousPage } } }"
)
#: Listings leaving some papers out: first versions, a category; and every paper.
LISTINGS: tuple[dict[str, Any], ...] = (
    {},
    {"latestVersions": True},
    {"latestVersions": True, "submittedBefore": "2024-03-02"},
    {"category": "cs.LG"},
)


def _cursors(both: tuple[Api, Api], order: str, where: dict[str, Any]) -> list[str]:
    page = alike(both, EVERY, f=where, o=order)["papers"]
    assert not page["pageInfo"]["hasNextPage"]
    return [edge["cursor"] for edge in page["edges"]]


@pytest.mark.neo4j
def test_has_previous_page_after_a_cursor_is_whether_papers_come_before(both: tuple[Api, Api]) -> None:
    """Query.papers(after:): true when the listing has a paper at or before the cursor's
    place; false for the cursor of a paper the listing does not hold with none of it before
    (the newest paper, in cs.LG's listing of older ones)."""
    seen = set()
    for order in ("NEWEST", "OLDEST"):
        every = _cursors(both, order, {})
        place = {cursor: index for index, cursor in enumerate(every)}
        for where in LISTINGS:
            listed = [place[cursor] for cursor in _cursors(both, order, where)]
            for cursor in every:
                expected = any(index <= place[cursor] for index in listed)
                seen.add((expected, place[cursor] in listed))
                answer = alike(both, PREVIOUS, f=where, a=cursor, o=order)["papers"]["pageInfo"]
                assert answer["hasPreviousPage"] is expected, (order, where, place[cursor], listed)
    # Not listed with none before it; not listed with papers before it; listed.
    assert {(False, False), (True, False), (True, True)} <= seen


@pytest.mark.neo4j
def test_a_parents_has_previous_page_is_whether_its_papers_come_before(both: tuple[Api, Api]) -> None:
    """An author's, a category's and a signer's papers(after:): the same, in their listing (a
    signer's ``signedBundle: false`` listing may be empty: false for every cursor)."""
    seen = set()
    for order in ("NEWEST", "OLDEST"):
        every = _cursors(both, order, {})
        place = {cursor: index for index, cursor in enumerate(every)}
        for parent in PARENTS:
            page = _page(both, parent, n=50, a=None, o=order)
            assert not page["pageInfo"]["hasNextPage"]
            listed = [place[edge["cursor"]] for edge in page["edges"]]
            query = QUERIES[parent[0]].replace("@", "pageInfo { hasPreviousPage }")
            for cursor in every:
                expected = any(index <= place[cursor] for index in listed)
                seen.add((parent[0], expected))
                variables = _variables(parent, n=1, a=cursor, o=order)
                answer = alike(both, query, **variables)[parent[0]]["papers"]["pageInfo"]
                assert answer["hasPreviousPage"] is expected, (order, parent, place[cursor], listed)
    assert {(field, flag) for field in QUERIES for flag in (False, True)} <= seen


#: Pages whose side toward the cursor is read (``%s``: the cursor) without and with the field
#: that reads it, under an alias or a fragment; the plan must run the read only for the second.
_FRAGMENT = " fragment P on PageInfo { hasPreviousPage }"
SHAPES = [
    (
        "{ a: papers(last: 1, before: %s) { edges { cursor } } b: papers(last: 1, before: %s) "
        "{ pageInfo { startCursor } } }",
        "{ a: papers(last: 1, before: %s) { edges { cursor } } b: papers(last: 1, before: %s) "
        "{ pageInfo { startCursor hasNextPage } } }",
    ),
    (
        "{ papers(first: 1, after: %s) { pageInfo { hasNextPage endCursor } } }",
        "{ papers(first: 1, after: %s) { pageInfo { hasNextPage endCursor } p: pageInfo { ...P } } }"
        + _FRAGMENT,
    ),
    (  # the same side asked for under five aliases is read once (the resolvers read it each time)
        "{ papers(first: 0, after: %s) { totalCount pageInfo { endCursor } } }",
        "{ papers(first: 0, after: %s) { totalCount pageInfo { h1: hasPreviousPage h2: hasPreviousPage "
        "h3: hasPreviousPage } p: pageInfo { hasPreviousPage } q: pageInfo { hasPreviousPage } } }",
    ),
    (
        '{ author(name: "ann lee") { papers(first: 1, after: %s) { pageInfo { hasNextPage } } } }',
        '{ author(name: "ann lee") { papers(first: 1, after: %s) { pageInfo { ... on PageInfo '
        "{ hasPreviousPage } } } } }",
    ),
    (
        '{ signer(id: "b.example") { papers(first: 1, after: %s, signedBundle: true) { nodes { pithNumber } } } }',
        '{ signer(id: "b.example") { papers(first: 1, after: %s, signedBundle: true) { nodes { pithNumber } '
        "pageInfo { hasPreviousPage } } } }",
    ),
]


@pytest.mark.neo4j
def test_the_side_toward_the_cursor_is_read_only_when_asked_for(both: tuple[Api, Api]) -> None:
    """The resolvers read it when the field is resolved, a stored plan when its selection holds
    it (0.9.3's plan read hasNextPage before a cursor whether asked for or not): one statement
    more with the field, none without, in both executions."""
    reader = both[1].reader
    assert isinstance(reader, Neo4jReader)
    cursor = json.dumps(_cursors(both, "NEWEST", {})[5])
    counted = Counted(reader)
    with _serve(counted, "bridged") as api:
        for without, with_it in SHAPES:
            ran = []
            for query in (without, with_it):
                text = query.replace("%s", cursor)
                data, resolved, _ = counted.ask(api, text)  # the first time: the resolvers
                again, planned, _ = counted.ask(api, text)  # then: its plan
                assert again == data
                ran.append((len(resolved), len(planned)))
            assert ran[1] == (ran[0][0] + 1, ran[0][1] + 1), (without, ran)
