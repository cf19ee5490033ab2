"""``PaperFilter.categories`` and ``PaperFilter.excludeCategories`` (since 0.9.1): papers
listed in any of some categories, or in none of them (primary or cross-list), on both
backends alike.

A corpus of papers with cross-lists (and an id with two versions), served by the memory and
the Neo4j backend over HTTP: ``papers`` (with each other filter), ``search`` (both orders),
their ``totalCount`` and ``facets``, and pages walked by their cursors (pages small enough
that Neo4j scans the ``submittedAt`` index, and large enough that it walks the categories'
edges), must answer what the papers' own categories say, and answer alike. Then the input's
checks: empty lists, too many codes, blank codes, repeats.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from apitest import (  # noqa: F401 (fixtures)
    PAPERS_QUERY,
    SEARCH_QUERY,
    Api,
    alike,
    both_fixture,
    corpus,
    memory_api,
    memory_reader,
    walk_alike,
)

from pith_graph.api.inputs import PaperFilterInput, to_filter
from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.search import SearchOrder, fingerprint
from pith_graph.testing.signer import PaperSpec

_CODES = ["cs.LG", "cs.AI", "stat.ML", "math.PR", "math.AP", "hep-th"]
_LICENSES = [
    "http://creativecommons.org/licenses/by/4.0/",
    "http://arxiv.org/licenses/nonexclusive-distrib/1.0/",
]


def _specs() -> list[PaperSpec]:
    """18 papers: primaries round the codes, most cross-listed in one or two more; every
    fifth id also has a second version (submitted later, cross-listed differently)."""
    specs = []
    for index in range(18):
        primary = _CODES[index % 6]
        cross = [code for code in (_CODES[(index * 7 + 2) % 6], _CODES[(index + 3) % 6]) if code != primary]
        fields: dict[str, Any] = {
            "title": f"{'Solitons' if index % 2 else 'Graphs'} and more, part {index}",
            "authors": ["Ann Lee" if index % 3 else "Bo Chen"],
            "abstract_excerpt": f"On solitons and graphs, {index}.",
            "primary_cat": primary,
            "license": _LICENSES[index % 2],
        }
        arxiv_id = f"2401.{index + 1:05d}"
        specs.append(
            PaperSpec.example(
                arxiv_id,
                cross_cats=cross[: index % 3],
                submitted_at=f"2024-01-{index + 1:02d}T00:00:00Z",
                **fields,
            )
        )
        if index % 5 == 0:
            specs.append(
                PaperSpec.example(
                    arxiv_id,
                    version=2,
                    cross_cats=cross[:1] if index % 2 else [],
                    submitted_at=f"2024-02-{index + 1:02d}T00:00:00Z",
                    built_at="2026-02-05T10:00:00Z",
                    **fields,
                )
            )
    return specs


#: The corpus, signed, served by the memory and the Neo4j backend.
both = both_fixture("category-lists", _specs, 31)

PAPER = "pithNumber sourceId sourceVersion categories { code }"
FACETS = "facets(first: 50) { years { value count } categories { value count } archives { value count } }"
PAGE = f"edges {{ cursor node {{ {PAPER} }} }} pageInfo {{ hasNextPage endCursor }}"
PAPERS, SEARCH = PAPERS_QUERY, SEARCH_QUERY
#: The filters the lists are combined with.
BASES: list[dict[str, Any]] = [
    {},
    {"author": "ann lee"},
    {"category": "math.AP"},
    {"archive": "math"},
    {"title": "solitons"},
    {"license": _LICENSES[0]},
    {"submittedFrom": "2024-01-05", "submittedBefore": "2024-02-03"},
    {"latestVersions": True},
]
#: (categories, excludeCategories): None leaves the field out.
LISTS: list[tuple[list[str] | None, list[str] | None]] = [
    (["cs.LG", "math.PR"], None),
    (["cs.AI"], None),
    (None, ["cs.LG", "stat.ML"]),
    (["math.AP", "hep-th", "no.SUCH", "hep-th"], ["math.PR"]),
    (["stat.ML", "cs.AI"], ["stat.ML"]),  # nothing: each such paper is in stat.ML
]


_both = alike


def _walk(both: tuple[Api, Api], query: str, field: str, size: int, **variables: Any) -> list[dict[str, Any]]:
    return walk_alike(both, query, field, size, PAGE, **variables)


#: The listings without the lists, walked alike once per module (several tests compare with
#: each): keyed by the served pair and the walk's arguments.
_WALKED: dict[str, list[dict[str, Any]]] = {}


def _every(both: tuple[Api, Api], query: str, field: str, **variables: Any) -> list[dict[str, Any]]:
    """:func:`_walk` with pages of 50, walked (and so compared on both backends) on its first
    call for these arguments only."""
    key = repr((id(both), query, field, sorted(variables.items())))
    if key not in _WALKED:
        _WALKED[key] = _walk(both, query, field, 50, **variables)
    return _WALKED[key]


def _given(categories: list[str] | None, excluded: list[str] | None) -> dict[str, Any]:
    given: dict[str, Any] = {}
    if categories is not None:
        given["categories"] = categories
    if excluded is not None:
        given["excludeCategories"] = excluded
    return given


def _kept(nodes: list[dict[str, Any]], categories: list[str] | None, excluded: list[str] | None) -> list[Any]:
    """The nodes the lists keep, by each node's own categories."""
    kept = []
    for node in nodes:
        codes = {category["code"] for category in node["categories"]}
        if categories is not None and not codes & set(categories):
            continue
        if excluded is not None and codes & set(excluded):
            continue
        kept.append(node)
    return kept


def _facets_of(nodes: list[dict[str, Any]]) -> dict[str, int]:
    return dict(Counter(category["code"] for node in nodes for category in node["categories"]))


@pytest.mark.neo4j
@pytest.mark.parametrize(("categories", "excluded"), LISTS, ids=lambda value: ",".join(value or ["-"]))
@pytest.mark.parametrize("where", BASES, ids=lambda where: ",".join(where) or "none")
def test_papers_list_count_and_facet_what_the_categories_say(
    both: tuple[Api, Api], where: dict[str, Any], categories: list[str] | None, excluded: list[str] | None
) -> None:
    every = _every(both, PAPERS, "papers", f=where)
    expected = _kept(every, categories, excluded)
    if (categories, excluded) != (["stat.ML", "cs.AI"], ["stat.ML"]) and not where:
        assert 0 < len(expected) < len(every)
    given = {**where, **_given(categories, excluded)}
    assert _walk(both, PAPERS, "papers", 2, f=given) == expected  # a page of 2: Neo4j scans
    assert _walk(both, PAPERS, "papers", 50, f=given) == expected  # of 50: it walks the edges
    counted = "query($f: PaperFilter) { papers(filter: $f, first: 0) { totalCount @ } }"
    found = _both(both, counted.replace("@", FACETS), f=given)["papers"]
    assert found["totalCount"] == len(expected)
    assert sum(year["count"] for year in found["facets"]["years"]) == len(expected)
    assert {c["value"]: c["count"] for c in found["facets"]["categories"]} == _facets_of(expected)


@pytest.mark.neo4j
@pytest.mark.parametrize("order", ["RELEVANCE", "NEWEST"])
@pytest.mark.parametrize(("categories", "excluded"), LISTS[:4], ids=lambda value: ",".join(value or ["-"]))
def test_search_keeps_what_the_categories_say(
    both: tuple[Api, Api], order: str, categories: list[str] | None, excluded: list[str] | None
) -> None:
    words = {"t": "solitons", "o": order}
    every = _every(both, SEARCH, "search", f={}, **words)
    expected = _kept(every, categories, excluded)
    given = _given(categories, excluded)
    assert _walk(both, SEARCH, "search", 2, f=given, **words) == expected
    counted = (
        "query($t: String!, $f: PaperFilter) { search(text: $t, filter: $f, first: 0) { totalCount @ } }"
    )
    found = _both(both, counted.replace("@", FACETS), t="solitons", f=given)["search"]
    assert found["totalCount"] == len(expected)
    assert {c["value"]: c["count"] for c in found["facets"]["categories"]} == _facets_of(expected)


@pytest.mark.neo4j
def test_a_search_cursor_pages_only_its_own_categories(both: tuple[Api, Api]) -> None:
    query = SEARCH.replace("@", PAGE)
    words = {"t": "solitons", "o": "RELEVANCE", "n": 1}
    for api in both:
        plain = api.data(query, f={}, a=None, **words)["search"]["pageInfo"]["endCursor"]
        listed = api.data(query, f={"categories": ["cs.AI"]}, a=None, **words)["search"]["pageInfo"][
            "endCursor"
        ]
        for cursor, other in ((plain, {"categories": ["cs.AI"]}), (listed, {"excludeCategories": ["cs.AI"]})):
            errors = api.post(query, {**words, "f": other, "a": cursor})["errors"]
            assert errors[0]["extensions"]["code"] == "BAD_USER_INPUT", errors
        # Repeats and order do not matter, nor an empty exclusion.
        same = {"categories": ["cs.AI", "cs.AI"], "excludeCategories": []}
        assert "errors" not in api.post(query, {**words, "f": same, "a": listed})


def test_a_search_without_the_lists_keeps_its_cursor_fingerprint() -> None:
    """Search cursors handed out before 0.9.1 stay valid: the digest is the same."""
    listing = Listing(PaperFilter(archive="cs"), text=("solitons",))
    assert fingerprint(listing, SearchOrder.RELEVANCE) == "b6125e9bf2bd0478"  # 0.8.9's
    unset = to_filter(PaperFilterInput(archive="cs", exclude_categories=[]))
    assert fingerprint(Listing(unset, text=("solitons",)), SearchOrder.RELEVANCE) == "b6125e9bf2bd0478"
    prints = {
        fingerprint(Listing(PaperFilter(archive="cs", **lists), text=("solitons",)), SearchOrder.RELEVANCE)
        for lists in ({}, {"categories": ("cs.LG",)}, {"exclude_categories": ("cs.LG",)})
    }
    assert len(prints) == 3


def test_the_lists_are_checked_sorted_and_without_repeats() -> None:
    given = PaperFilterInput(
        categories=[" stat.ML", "cs.LG", "stat.ML "], exclude_categories=["cs.AI", "cs.AI"]
    )
    assert to_filter(given) == PaperFilter(categories=("cs.LG", "stat.ML"), exclude_categories=("cs.AI",))
    assert to_filter(PaperFilterInput(exclude_categories=[])) == PaperFilter()


LISTED = "query($f: PaperFilter) { papers(filter: $f, first: 100) { totalCount nodes { pithNumber } } }"


def _code(api: Api, where: dict[str, Any]) -> str:
    """The code of the one error ``papers(filter: where)`` answers; its message names the field."""
    errors = api.post(LISTED, {"f": where})["errors"]
    assert len(errors) == 1, errors
    assert any(f"filter.{field}" in errors[0]["message"] for field in where), errors
    code: str = errors[0]["extensions"]["code"]
    return code


def test_an_empty_or_blank_list_is_refused(memory_api: Api) -> None:
    assert _code(memory_api, {"categories": []}) == "BAD_USER_INPUT"
    assert _code(memory_api, {"categories": ["cs.LG", "  "]}) == "BAD_USER_INPUT"
    assert _code(memory_api, {"excludeCategories": [""]}) == "BAD_USER_INPUT"
    assert _code(memory_api, {"categories": ["x" * 4097]}) == "BAD_USER_INPUT"
    assert _code(memory_api, {"excludeCategories": ["é" * 2049]}) == "BAD_USER_INPUT"  # 4,098 bytes
    assert "errors" not in memory_api.post(LISTED, {"f": {"categories": ["x" * 4096]}})  # 501 before 0.9.3


def test_more_codes_than_the_limit_are_refused(memory_api: Api) -> None:
    """The README's figure: at most 50 codes, repeats counted (the literal, not the constant,
    so a change of the limit is a change of this test and of the README)."""
    codes = [f"cs.X{index}" for index in range(50)]
    for field in ("categories", "excludeCategories"):
        assert "errors" not in memory_api.post(LISTED, {"f": {field: codes}})
        assert _code(memory_api, {field: [*codes, "cs.LG"]}) == "LIMIT_EXCEEDED"
        assert _code(memory_api, {field: ["cs.LG"] * 51}) == "LIMIT_EXCEEDED"


def test_repeats_an_empty_exclusion_and_null_change_nothing(memory_api: Api) -> None:
    every = memory_api.data(LISTED, f=None)["papers"]
    for unset in ({"excludeCategories": []}, {"categories": None, "excludeCategories": None}):
        assert memory_api.data(LISTED, f=unset)["papers"] == every
    listed = memory_api.data(LISTED, f={"categories": ["cs.LG", "math.PR"]})["papers"]
    assert 0 < listed["totalCount"] < every["totalCount"]
    again = memory_api.data(LISTED, f={"categories": ["math.PR", " cs.LG", "cs.LG", "math.PR"]})["papers"]
    assert again == listed
    one = memory_api.data(LISTED, f={"category": "cs.LG"})["papers"]
    assert memory_api.data(LISTED, f={"categories": ["cs.LG"]})["papers"] == one
    coded = LISTED.replace("pithNumber", "pithNumber categories { code }")
    recent = {"category": "cs.LG", "submittedFrom": "2022-01-01"}  # fewer than a page of 100
    both = memory_api.data(coded, f={**recent, "categories": ["math.PR", "stat.ML"]})["papers"]
    in_lg = memory_api.data(coded, f=recent)["papers"]
    assert 0 < in_lg["totalCount"] <= 100
    every_coded = in_lg["nodes"]
    expected = [
        node
        for node in every_coded
        if {"cs.LG"} <= {c["code"] for c in node["categories"]}
        and {"math.PR", "stat.ML"} & {c["code"] for c in node["categories"]}
    ]
    assert 0 < len(expected) < in_lg["totalCount"]
    assert both["nodes"] == expected
    assert both["totalCount"] == len(expected)
