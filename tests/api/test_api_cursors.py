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
from pith_graph.api.reads.records import ListingOrder, PaperKey
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
    ("name", "suggestion"),
    [("after", "Pass an endCursor or edge cursor."), ("before", "Pass a startCursor or edge cursor.")],
)
def test_a_forged_cursor_is_told_which_cursor_to_pass(name: str, suggestion: str) -> None:
    with pytest.raises(BadUserInput) as refused:
        decode_cursor("cDF8eHx5", "newest", name)
    assert (refused.value.message, refused.value.suggestion) == (
        f"{name} is not a cursor this API issued.",
        suggestion,
    )


@pytest.mark.parametrize("order", ["newest", "oldest"])
@pytest.mark.parametrize("digits", range(10))
def test_a_position_with_any_fraction_of_a_second_is_a_cursor(order: ListingOrder, digits: int) -> None:
    """Bundles may write 1 to 9 digits of a second: the cursor of each (unpadded, of every
    length base64 gives them) decodes to its position, in both orders."""
    fraction = "." + "123456789"[:digits] if digits else ""
    key = PaperKey(f"2019-07-30T23:20:50{fraction}Z", POSITION.pith_number)
    assert decode_cursor(encode_cursor(key, order), order) == key


@pytest.mark.parametrize(
    ("cursor", "named"),
    [
        # unpadded as issued, of each length base64 gives (no padding, one or two left out)
        pytest.param(_encoded("s1|f|1.0|t|p|3"), True, id="19-characters"),
        pytest.param(_encoded("s1|f|1.0|t|p|33"), True, id="20-characters"),
        pytest.param(_encoded("s1|f|1.0|t|p|333"), True, id="22-characters"),
        pytest.param(_encoded("s1|fffffffff|1.0|t|p|3"), True, id="30-characters"),
        # a search takes cursors of at most 300 characters: a longer one is no search's
        pytest.param(_encoded("s1|" + "f" * 212 + "|1.0|t|p|3"), True, id="300-characters"),
        pytest.param(_encoded("s1|" + "f" * 213 + "|1.0|t|p|3"), False, id="302-characters"),
        pytest.param(_encoded("s1|f|1.0|t|p|3") + "\u00e9", False, id="not-ascii"),
        pytest.param(_encoded("s1|f|1.0|t|p"), False, id="five-parts"),
    ],
)
def test_a_search_cursor_is_told_by_its_shape(cursor: str, named: bool) -> None:
    """A cursor of a search's shape given to a listing is named as one (since 0.9.4); anything
    else is "not a cursor this API issued"."""
    with pytest.raises(BadUserInput) as refused:
        decode_cursor(cursor)
    said = "after is a cursor of a search; a listing of papers takes its own cursors."
    assert (refused.value.message == said) is named, (len(cursor), refused.value.message)


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


_SIDES = (
    "query($f: PaperFilter, $o: PaperOrder, $n: Int, $a: String, $l: Int, $b: String) "
    "{ papers(filter: $f, orderBy: $o, first: $n, after: $a, last: $l, before: $b) "
    "{ edges { cursor } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }"
)


def _every(api: Api, order: str, where: dict[str, Any]) -> list[str]:
    """Every cursor of a listing, in its order (walked by endCursor)."""
    cursors: list[str] = []
    after = None
    while True:
        page = api.data(_SIDES, f=where, o=order, n=100, a=after)["papers"]
        cursors += [edge["cursor"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return cursors
        after = page["pageInfo"]["endCursor"]


@pytest.mark.parametrize(
    "where", [{}, {"category": "cs.LG"}, {"latestVersions": True}, {"category": "no.such-category"}]
)
@pytest.mark.parametrize("order", ["NEWEST", "OLDEST"])
def test_page_info_is_exact_on_both_sides_of_a_cursor(api: Api, order: str, where: dict[str, Any]) -> None:
    """The suite's corpus, one page of one paper each side of a cursor of the whole listing
    (listed or not): hasPreviousPage after it is whether the listing has a paper at or before
    its place, hasNextPage whether more than one comes after it; before it, hasNextPage is
    whether one is at or after it, hasPreviousPage whether more than one comes before it. A
    page without a cursor: nothing before the first page, nothing after the last. An empty
    listing has nothing on either side of any cursor."""
    every = _every(api, order, {})
    place = {cursor: index for index, cursor in enumerate(every)}
    listed = [place[cursor] for cursor in _every(api, order, where)]
    first = api.data(_SIDES, f=where, o=order, n=1)["papers"]["pageInfo"]
    last = api.data(_SIDES, f=where, o=order, l=1)["papers"]["pageInfo"]
    assert (first["hasPreviousPage"], first["hasNextPage"]) == (False, len(listed) > 1)
    assert (last["hasPreviousPage"], last["hasNextPage"]) == (len(listed) > 1, False)
    seen = set()
    for cursor in every[:: max(1, len(every) // 40)] + every[-2:]:
        at = place[cursor]
        after = api.data(_SIDES, f=where, o=order, n=1, a=cursor)["papers"]
        before = api.data(_SIDES, f=where, o=order, l=1, b=cursor)["papers"]
        expected = {
            "after": (any(i <= at for i in listed), sum(i > at for i in listed) > 1),
            "before": (sum(i < at for i in listed) > 1, any(i >= at for i in listed)),
        }
        for side, page in (("after", after), ("before", before)):
            info = page["pageInfo"]
            assert (info["hasPreviousPage"], info["hasNextPage"]) == expected[side], (side, at, listed)
            ends = (
                [page["edges"][0]["cursor"], page["edges"][-1]["cursor"]] if page["edges"] else [None, None]
            )
            assert [info["startCursor"], info["endCursor"]] == ends
        seen.add((at in listed, expected["after"][0]))
    if listed:  # listed; not, with papers before
        assert (True, True) in seen and (not where or (False, True) in seen)
