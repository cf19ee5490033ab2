"""Arguments a client writes are refused with BAD_USER_INPUT, never an internal error, on both
backends and both executions (the resolvers answer a document first, its plan after)."""

from __future__ import annotations

import base64
import logging
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

from pith_graph.api.inputs import instant, text
from pith_graph.errors import BadUserInput


@pytest.mark.parametrize(
    ("query", "message"),
    [
        pytest.param(
            '{ papers(filter: {submittedFrom: "9999-12-31T23:59:59-23:59"}) { totalCount } }',
            "filter.submittedFrom is outside the years 1 to 9999 in UTC: '9999-12-31T23:59:59-23:59'.",
            id="after-the-calendar",
        ),
        pytest.param(
            '{ papers(filter: {submittedBefore: "0001-01-01T00:00:00+00:01"}) { nodes { title } } }',
            "filter.submittedBefore is outside the years 1 to 9999 in UTC: '0001-01-01T00:00:00+00:01'.",
            id="before-the-calendar",
        ),
        pytest.param(
            '{ search(text: "learning", filter: {submittedFrom: "9999-12-31T23:00:00-01:00"}) { totalCount } }',
            "filter.submittedFrom is outside the years 1 to 9999 in UTC: '9999-12-31T23:00:00-01:00'.",
            id="search-filter",
        ),
        pytest.param(
            '{ papers(filter: {submittedFrom: "2019-01-01T00:00:00+99:00"}) { totalCount } }',
            "filter.submittedFrom is not an ISO 8601 date or date-time: '2019-01-01T00:00:00+99:00'.",
            id="no-such-offset",
        ),
    ],
)
def test_a_date_out_of_range_is_bad_user_input(
    api: Api, query: str, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    for _ in range(2):
        body = api.post(query)
        assert body["data"] is None
        (error,) = body["errors"]
        assert (error["extensions"]["code"], error["message"]) == ("BAD_USER_INPUT", message)
        assert error["extensions"]["suggestion"]
    # Nothing logged as unexpected (a traceback per request flooded the log).
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]


def test_dates_before_the_year_1000_compare_as_dates(api: Api) -> None:
    """Such a date was written without its leading zero (``999-01-01…``), which compares after
    every real date: then nothing was submitted after the year 999."""
    query = "query($d: String!) { papers(filter: {submittedFrom: $d}) { totalCount } }"
    everything = api.data("{ papers { totalCount } }")["papers"]["totalCount"]
    for _ in range(2):
        assert api.data(query, d="0999-01-01")["papers"]["totalCount"] == everything
    before = "query($d: String!) { papers(filter: {submittedBefore: $d}) { totalCount } }"
    assert api.data(before, d="0999-01-01")["papers"]["totalCount"] == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("2020-01-31", "2020-01-31T00:00:00Z", id="date"),
        pytest.param("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z", id="first-second"),
        pytest.param("9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z", id="last-second"),
        pytest.param("0999-12-31T23:30:00-01:00", "1000-01-01T00:30:00Z", id="into-the-year-1000"),
        pytest.param("2020-01-01T00:00:00.999+00:00", "2020-01-01T00:00:00Z", id="fraction"),
    ],
)
def test_instant_is_utc_with_four_digit_years(value: str, expected: str) -> None:
    assert instant(value, "from") == expected


@pytest.mark.parametrize(
    "value",
    ["9999-12-31T23:59:59-00:01", "0001-01-01T00:00:00+00:01", "yesterday", "2020-13-01", "+2020-01-01"],
)
def test_instant_refuses(value: str) -> None:
    with pytest.raises(BadUserInput):
        instant(value, "from")


def _edited(cursor: str, **parts: Any) -> str:
    """A search cursor with some of its parts replaced (score, offset)."""
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    fields = raw.split("|")
    index = {"score": 2, "at": 3, "pith": 4, "offset": 5}
    parts = dict(parts)  # the test's parameters are used again
    padding = parts.pop("padding", "")
    for name, value in parts.items():
        fields[index[name]] = value(fields[index[name]]) if callable(value) else value
    return base64.urlsafe_b64encode("|".join(fields).encode()).decode().rstrip("=") + padding


@pytest.mark.parametrize(
    "parts",
    [
        pytest.param({"offset": str(10**30)}, id="offset-past-64-bits"),
        pytest.param({"offset": str(2**31)}, id="offset-past-32-bits"),
        pytest.param({"score": "nan"}, id="score-nan"),
        pytest.param({"score": "inf"}, id="score-infinite"),
        # Not as issued, though Python's float() and int() read them:
        pytest.param({"offset": "1_0"}, id="offset-underscore"),
        pytest.param({"offset": "+2"}, id="offset-plus"),
        pytest.param({"offset": "\u0662"}, id="offset-arabic-digit"),
        pytest.param({"offset": " 2"}, id="offset-space"),
        pytest.param({"score": lambda score: f"{score}0"}, id="score-trailing-zero"),
        pytest.param({"padding": "="}, id="padded"),
        # No paper has these places:
        pytest.param({"pith": "zzz pith"}, id="pith-garbage"),
        pytest.param({"pith": lambda pith: pith.replace(":20", ":19", 1)}, id="pith-of-another-year"),
        pytest.param({"at": "yesterday"}, id="date-garbage"),
        pytest.param({"at": lambda at: at.replace("T", " ")}, id="date-not-utc-text"),
    ],
)
def test_an_edited_search_cursor_is_bad_user_input(
    api: Api, parts: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    query = (
        'query($after: String) { search(text: "learning", first: 2, after: $after) '
        "{ edges { node { title } } pageInfo { endCursor } } }"
    )
    cursor = api.data(query)["search"]["pageInfo"]["endCursor"]
    assert api.data(query, after=cursor)["search"]["edges"]  # the cursor as handed out pages on
    body = api.post(query, {"after": _edited(cursor, **parts)})
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"] == "after is not a search cursor this API issued."
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]


def test_a_cursor_at_the_largest_offset_pages_on(api: Api) -> None:
    """The offset only sizes the reader's first fetch: a cursor written with the largest one it
    takes pages on as the cursor issued does, and hands out cursors that page on too."""
    query = (
        'query($after: String) { search(text: "learning", first: 2, after: $after) '
        "{ edges { node { pithNumber } } pageInfo { endCursor } } }"
    )
    first = api.data(query)["search"]["pageInfo"]["endCursor"]
    issued = api.data(query, after=first)["search"]
    written = api.data(query, after=_edited(first, offset=str(2**31 - 1)))["search"]
    assert written["edges"] == issued["edges"] and written["edges"]
    onwards = api.data(query, after=written["pageInfo"]["endCursor"])["search"]
    assert onwards["edges"] == api.data(query, after=issued["pageInfo"]["endCursor"])["search"]["edges"]


@pytest.mark.parametrize(
    ("query", "message", "suggestion"),
    [
        ('author(name: "") { name }', "name is empty.", "Pass a name with something in it."),
        ('category(code: " ") { code }', "code is empty.", "Pass a code with something in it."),
        ('search(text: "") { totalCount }', "text is empty.", "Pass a text with something in it."),
        ('signer(id: "") { signerId }', "id is empty.", "Pass an id with something in it."),
        (
            'collaborationPath(from: "", to: "Ann Lee") { paper { title } }',
            "from is empty.",
            "Pass a from with something in it.",
        ),
        (
            'papers(filter: {category: ""}) { totalCount }',
            "filter.category is empty.",
            "Pass a filter.category with something in it, or leave it out.",
        ),
        (
            'search(text: "learning", filter: {submittedFrom: " "}) { totalCount }',
            "filter.submittedFrom is empty.",
            "Pass a filter.submittedFrom with something in it, or leave it out.",
        ),
        (
            'papers(filter: {title: ""}) { totalCount }',
            "filter.title is empty.",
            "Pass a filter.title with something in it, or leave it out.",
        ),
    ],
)
def test_an_empty_text_is_told_to_be_left_out_only_when_it_may_be(
    memory_api: Api, query: str, message: str, suggestion: str
) -> None:
    """A required argument (String!) left out is a validation error: before 0.8.9 an empty
    one was told "or leave it out" as an empty filter field rightly is."""
    for _ in range(2):  # the second may run from the document's plan
        (error,) = memory_api.post(f"{{ {query} }}")["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        assert (error["message"], error["extensions"]["suggestion"]) == (message, suggestion)


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        pytest.param("w" * 500, "w" * 500, id="500-characters"),
        pytest.param("  " + "w" * 500 + "\n", "w" * 500, id="500-once-stripped"),
        pytest.param("w" * 501, None, id="501-characters"),
        pytest.param("é" * 501, None, id="501-two-byte-characters"),
    ],
)
def test_free_text_holds_at_most_500_characters(value: str, kept: str | None) -> None:
    """README: free text (search words, filter.title, dates) is at most 500 characters,
    counted once stripped."""
    if kept is not None:
        assert text(value, "text") == kept
        return
    with pytest.raises(BadUserInput) as refused:
        text(value, "text")
    assert refused.value.message == "text is longer than 500 characters."


@pytest.mark.parametrize("title", ["?!", " -- ", "\u2014 \u00b7"])
def test_a_title_filter_of_punctuation_alone_is_bad_user_input(api: Api, title: str) -> None:
    """filter.title holds every word of its text, as search does: punctuation alone has none."""
    for _ in range(2):  # the second may run from the document's plan
        (error,) = api.post(
            "query($f: PaperFilter) { papers(filter: $f) { totalCount } }", {"f": {"title": title}}
        )["errors"]
        assert (error["extensions"]["code"], error["message"]) == (
            "BAD_USER_INPUT",
            "filter.title has no words to search for.",
        )
