"""Paper cursors: every one the API hands out pages on, in every paper listing; one it could
not have issued — well-formed base64 or not — is ``BAD_USER_INPUT`` (README, error codes), on
both backends and both executions (the resolvers answer a document first, its plan after)."""

from __future__ import annotations

import base64
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

from pith_graph.api.cursors import decode_cursor, encode_cursor
from pith_graph.api.reads.records import PaperKey
from pith_graph.errors import BadUserInput

BODY = "BR75OIUY7WDYHPO53K7WUNQ4NZ"
#: A position no paper need have, but one a paper could: a cursor of its listing.
POSITION = PaperKey("2019-07-30T23:20:50Z", f"pith:2019:{BODY}")


def _encoded(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


FORGED = [
    pytest.param("cDF8eHx5", id="review-p1|x|y"),
    pytest.param(_encoded(f"p1|2019-07-30T23:20:50Z|pith:2018:{BODY}"), id="pith-year-not-submission-year"),
    pytest.param(_encoded(f"p1|2019-07-30T23:20:50Z|pith:2019:{BODY.lower()}"), id="lower-case-pith"),
    pytest.param(_encoded(f"p1|2019-07-30 23:20:50|pith:2019:{BODY}"), id="not-utc-text"),
    pytest.param(_encoded(f"p1|2019-07-30T23:20:50Z|pith:2019:{BODY}|x"), id="three-parts"),
    pytest.param(_encoded(f"p2|2019-07-30T23:20:50Z|pith:2019:{BODY}"), id="another-version"),
    pytest.param(_encoded(f"p1|2019-07-30T23:20:50Z|pith:2019:{BODY[:-1]}"), id="short-pith"),
    pytest.param(encode_cursor(POSITION) + "==", id="padded"),
    pytest.param(encode_cursor(POSITION) + "!!", id="junk-the-decoder-skips"),
    # a search cursor's first characters (base64 of "s1|") are no search cursor (0.9.3 said one)
    pytest.param("czF8garbage", id="a-search-cursors-start"),
    pytest.param("czF8", id="a-search-cursors-prefix"),
]
LISTINGS = [
    pytest.param("query($a: String) { papers(first: 2, after: $a) { nodes { title } } }", id="papers"),
    pytest.param(
        'query($a: String) { category(code: "cs.LG") { papers(first: 2, after: $a) { nodes { title } } } }',
        id="category",
    ),
]


def test_a_position_a_database_loaded_before_0_8_2_may_hold_is_a_cursor() -> None:
    """0.8.1 verified times by their shape: a paper may stand at 2019-02-29, and its endCursor
    must page on (listings order by text, which needs no calendar)."""
    key = PaperKey("2019-02-29T23:20:50Z", f"pith:2019:{BODY}")
    assert decode_cursor(encode_cursor(key)) == key


@pytest.mark.parametrize("cursor", FORGED)
def test_a_cursor_the_api_could_not_have_issued_is_refused(cursor: str) -> None:
    with pytest.raises(BadUserInput):
        decode_cursor(cursor)


@pytest.mark.parametrize("query", LISTINGS)
@pytest.mark.parametrize("cursor", FORGED)
def test_a_forged_cursor_is_bad_user_input(api: Api, query: str, cursor: str) -> None:
    for _ in range(2):
        body = api.post(query, {"a": cursor})
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        assert error["message"] == "after is not a cursor this API issued."


@pytest.mark.parametrize("query", LISTINGS)
def test_a_search_cursor_given_to_a_listing_is_named_as_one(api: Api, query: str) -> None:
    """A search's cursor is one this API issued: refused as "not a cursor this API issued"
    (0.9.3 and earlier), a client looked for a corrupted cursor; it is named for what it is (since 0.9.4)."""
    search = api.data('{ search(text: "learning", first: 1) { edges { cursor } } }')
    cursor = search["search"]["edges"][0]["cursor"]
    for _ in range(2):
        (error,) = api.post(query, {"a": cursor})["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        assert error["message"] == "after is a cursor of a search; a listing of papers takes its own cursors."
        assert error["extensions"]["suggestion"].startswith(
            "Pass an endCursor or edge cursor of this listing"
        )


def test_a_well_formed_position_is_a_cursor() -> None:
    """Without a MAC a client may write a position; it is one its listing could have issued."""
    assert decode_cursor(encode_cursor(POSITION)) == POSITION
    fractional = PaperKey("2019-07-30T23:20:50.25Z", POSITION.pith_number)
    assert decode_cursor(encode_cursor(fractional)) == fractional


@pytest.mark.parametrize(
    "listing",
    [
        "papers(first: $f, after: $a)",
        'papers(filter: {category: "cs.LG"}, first: $f, after: $a)',
        'category(code: "cs.LG") { papers(first: $f, after: $a)',
    ],
)
def test_every_cursor_handed_out_pages_on(api: Api, listing: str) -> None:
    """Every edge cursor of the first 100 papers, taken as after, gives the next paper; a walk
    by endCursor gives them in order, none skipped or repeated."""
    closing = " }" if listing.startswith("category") else ""
    query = (
        f"query($f: Int, $a: String) {{ {listing} {{ edges {{ cursor node {{ pithNumber }} }} "
        f"pageInfo {{ hasNextPage endCursor }} }}{closing} }}"
    )

    def page(first: int, after: str | None) -> tuple[list[str], list[str], dict[str, Any]]:
        data = api.data(query, f=first, a=after)
        found = data["category"]["papers"] if "category" in data else data["papers"]
        edges = found["edges"]
        return [e["node"]["pithNumber"] for e in edges], [e["cursor"] for e in edges], found["pageInfo"]

    numbers, cursors, _ = page(100, None)
    assert len(numbers) > 10
    for index, cursor in enumerate(cursors[:-2]):
        assert page(2, cursor)[0] == numbers[index + 1 : index + 3]
    walked: list[str] = []
    after: str | None = None
    while len(walked) < len(numbers):
        found, _, info = page(7, after)
        walked += found
        if not info["hasNextPage"]:
            break
        after = info["endCursor"]
    assert walked[: len(numbers)] == numbers
