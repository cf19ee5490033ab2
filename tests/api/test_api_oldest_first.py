"""``papers(orderBy: OLDEST)`` (since 0.9.1): papers oldest first, exactly the reverse of the
newest-first listing, on both backends alike; cursors of one order never page the other.

A corpus where papers share submission times (so the pith number decides), with cross-lists
and a second version of some ids, served by the memory and the Neo4j backend over HTTP:
walked oldest first in pages of 2 (Neo4j scans the ``submittedAt`` index) and of 50 (it walks
a category's or an author's edges), with each filter, it must be the newest-first listing
reversed, and answer alike. Then the cursors: a newest-first cursor as 0.9.0 issued it still
pages ``papers`` (and an author's), one of either order is refused by the other.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from apitest import Api, alike, both_fixture, corpus, memory_api, memory_reader, walk_alike  # noqa: F401

from pith_graph.testing.signer import PaperSpec

_CODES = ["cs.LG", "cs.AI", "stat.ML", "math.PR", "math.AP", "hep-th"]


def _specs() -> list[PaperSpec]:
    """20 papers, two by two submitted at the same time; primaries round the codes, some
    cross-listed; every fourth id also has a second version, submitted later."""
    specs = []
    for index in range(20):
        primary = _CODES[index % 6]
        fields: dict[str, Any] = {
            "title": f"{'Solitons' if index % 2 else 'Graphs'} in order, part {index}",
            "authors": ["Ann Lee" if index % 3 else "Bo Chen"],
            "abstract_excerpt": f"On order, {index}.",
            "primary_cat": primary,
        }
        arxiv_id = f"2402.{index + 1:05d}"
        cross = [_CODES[(index + 2) % 6]] if index % 3 == 1 else []
        at = f"2024-03-{index // 2 + 1:02d}T12:00:00Z"
        specs.append(PaperSpec.example(arxiv_id, cross_cats=cross, submitted_at=at, **fields))
        if index % 4 == 0:
            later = f"2024-04-{index // 2 + 1:02d}T12:00:00Z"
            specs.append(
                PaperSpec.example(
                    arxiv_id, version=2, submitted_at=later, built_at="2026-02-05T10:00:00Z", **fields
                )
            )
    return specs


both = both_fixture("oldest-first", _specs, 37)

PAPER = "pithNumber submittedAt categories { code }"
PAGE = f"edges {{ cursor node {{ {PAPER} }} }} pageInfo {{ hasNextPage hasPreviousPage endCursor }}"
ORDERED = (
    "query($f: PaperFilter, $n: Int, $a: String, $o: PaperOrder) "
    "{ papers(filter: $f, first: $n, after: $a, orderBy: $o) { @ } }"
)
FILTERS: list[dict[str, Any]] = [
    {},
    {"author": "ann lee"},
    {"category": "cs.LG"},
    {"archive": "math"},
    {"title": "solitons"},
    {"categories": ["cs.LG", "math.PR", "hep-th"]},
    {"excludeCategories": ["cs.AI", "stat.ML"]},
    {"categories": ["math.AP", "cs.AI"], "excludeCategories": ["cs.LG"]},
    {"latestVersions": True},
    {"submittedFrom": "2024-03-03", "submittedBefore": "2024-04-05"},
    {"latestVersions": True, "archive": "cs", "submittedBefore": "2024-04-01"},
]


def _walk(both: tuple[Api, Api], size: int, order: str | None, where: dict[str, Any]) -> list[dict[str, Any]]:
    return walk_alike(both, ORDERED, "papers", size, PAGE, f=where, o=order)


def _sent(cursor: str) -> str:
    """What a cursor holds (an opaque encoding: tests only)."""
    return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()


@pytest.mark.neo4j
@pytest.mark.parametrize("where", FILTERS, ids=lambda where: ",".join(where) or "none")
def test_oldest_first_is_newest_first_reversed(both: tuple[Api, Api], where: dict[str, Any]) -> None:
    newest = _walk(both, 50, None, where)
    assert newest, where
    assert _walk(both, 50, "NEWEST", where) == newest
    keys = [(node["submittedAt"], node["pithNumber"]) for node in newest]
    assert keys == sorted(keys, reverse=True)
    assert _walk(both, 2, "OLDEST", where) == newest[::-1]  # a page of 2: Neo4j scans
    assert _walk(both, 50, "OLDEST", where) == newest[::-1]  # of 50: it walks the edges
    if not where:
        times = [node["submittedAt"] for node in newest]
        assert len(set(times)) < len(times)  # ties: the pith number decides
    counted = (
        "query($f: PaperFilter, $o: PaperOrder) { papers(filter: $f, orderBy: $o, first: 0) { totalCount } }"
    )
    assert alike(both, counted, f=where, o="OLDEST") == alike(both, counted, f=where, o=None)


@pytest.mark.neo4j
def test_an_oldest_page_starts_after_its_cursor(both: tuple[Api, Api]) -> None:
    first = alike(both, ORDERED.replace("@", PAGE), f={}, n=3, a=None, o="OLDEST")["papers"]
    assert first["pageInfo"]["hasPreviousPage"] is False
    assert _sent(first["pageInfo"]["endCursor"]).startswith("o1|")
    then = alike(both, ORDERED.replace("@", PAGE), f={}, n=3, a=first["pageInfo"]["endCursor"], o="OLDEST")
    assert then["papers"]["pageInfo"]["hasPreviousPage"] is True
    every = _walk(both, 50, "OLDEST", {})
    shown = [edge["node"] for page in (first, then["papers"]) for edge in page["edges"]]
    assert shown == every[:6]


def _error(api: Api, query: str, **variables: Any) -> dict[str, Any]:
    errors = api.post(query, variables)["errors"]
    assert len(errors) == 1, errors
    error: dict[str, Any] = errors[0]
    return error


def test_a_cursor_of_one_order_does_not_page_the_other(memory_api: Api) -> None:
    query = ORDERED.replace("@", "pageInfo { endCursor } nodes { pithNumber }")
    oldest = memory_api.data(query, f={}, n=2, a=None, o="OLDEST")["papers"]["pageInfo"]["endCursor"]
    newest = memory_api.data(query, f={}, n=2, a=None, o="NEWEST")["papers"]["pageInfo"]["endCursor"]
    assert memory_api.data(query, f={}, n=2, a=None, o=None)["papers"]["pageInfo"]["endCursor"] == newest
    for cursor, order, other in (
        (oldest, None, "newest"),
        (oldest, "NEWEST", "newest"),
        (newest, "OLDEST", "oldest"),
    ):
        error = _error(memory_api, query, f={}, n=2, a=cursor, o=order)
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        assert f"this one lists {other} first" in error["message"], error
        assert "orderBy" in error["extensions"]["suggestion"], error
    # An author's, a category's papers are newest first: an oldest cursor is refused there too.
    author = '{ author(name: "@") { papers(first: 2, after: "#") { nodes { pithNumber } } } }'
    name = memory_api.data("{ papers(first: 1) { nodes { authors { name } } } }")["papers"]["nodes"][0]
    listed = author.replace("@", name["authors"][0]["name"])
    assert _error(memory_api, listed.replace("#", oldest))["extensions"]["code"] == "BAD_USER_INPUT"
    assert "errors" not in memory_api.post(listed.replace("#", newest))


def test_newest_cursors_are_as_0_9_0_issued_them(memory_api: Api) -> None:
    """A cursor 0.9.0 handed out (``p1|time|pith``, unpadded base64url) pages on, by default and
    with orderBy: NEWEST, as it did."""
    query = ORDERED.replace("@", "pageInfo { endCursor } nodes { pithNumber submittedAt }")
    page = memory_api.data(query, f={}, n=3, a=None, o=None)["papers"]
    last = page["nodes"][-1]
    issued = base64.urlsafe_b64encode(f"p1|{last['submittedAt']}|{last['pithNumber']}".encode())
    cursor = issued.decode().rstrip("=")
    assert page["pageInfo"]["endCursor"] == cursor
    following = memory_api.data(query, f={}, n=5, a=None, o=None)["papers"]["nodes"][3:]
    for order in (None, "NEWEST"):
        assert memory_api.data(query, f={}, n=2, a=cursor, o=order)["papers"]["nodes"] == following[:2]
