"""``PaperFilter.allAuthors`` (since 0.9.5): the papers two or more people wrote together.

A corpus whose bylines are known (a prolific pair, a rare author, one who never wrote with
the pair's second, ids with a second version whose byline differs), served over HTTP by the
memory and the Neo4j backend. Each case's documents are new to the servers (a comment
naming the call; a server plans a document it has answered, by its text): the first page of
a listing and each count are answered by each backend's resolvers, then by the plan they
compiled, and the later pages by that plan, once each. Every answer must be equal; what they answer is checked
against an oracle made from the specs themselves (the bylines, titles, categories, dates),
not from the reader: ``papers`` newest and oldest first, forwards and backwards, pages of 2
(Neo4j scans the ``submittedAt`` index from a prolific author) and of 50 (it walks the rarest
author's edges), with each other filter; ``totalCount``, ``facets`` and ``search``. Then
the input's checks: empty list, too many names, a key too long, a null name.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest
from apitest import Api, both_fixture

from pith_graph.api.inputs import MAX_FILTER_AUTHORS, PaperFilterInput, to_filter
from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.search import SearchOrder, fingerprint
from pith_graph.testing.signer import PaperSpec

_LICENSES = [
    "http://creativecommons.org/licenses/by/4.0/",
    "http://arxiv.org/licenses/nonexclusive-distrib/1.0/",
]
_PRIMARIES = ["cs.LG", "math.PR", "hep-th"]
_RARE = {5, 9, 14, 22}


def _byline(index: int) -> list[str]:
    """Ann Lee on 3 papers of 4, Bo Chen on 2 of 3, Cy Rare on a few, Di Solo on one (not
    with Bo Chen); each paper has a filler author too."""
    names = ["Ann Lee"] if index % 4 != 3 else []
    names += ["Bo Chen"] if index % 3 != 0 else []
    names += ["Cy Rare"] if index in _RARE else []
    names += ["Di Solo"] if index == 9 else []
    return [*names, f"Filler {index}"]


def _specs() -> list[PaperSpec]:
    """28 papers, one a day, and a second version of every seventh id (submitted in March,
    without Bo Chen and with Cy Rare)."""
    specs = []
    for index in range(28):
        word = "Solitons" if index % 2 else "Graphs"
        fields: dict[str, Any] = {
            "title": f"{word} and more, part {index}",
            "abstract_excerpt": f"On {word.lower()}, {index}.",
            "primary_cat": _PRIMARIES[index % 3],
            "cross_cats": ["stat.ML"] if index % 5 == 0 else [],
            "license": _LICENSES[(index // 2) % 2],
        }
        arxiv_id = f"2401.{index + 1:05d}"
        specs.append(
            PaperSpec.example(
                arxiv_id, authors=_byline(index), submitted_at=f"2024-01-{index + 1:02d}T00:00:00Z", **fields
            )
        )
        if index % 7 == 0:
            later = [name for name in _byline(index) if name != "Bo Chen"] + ["Cy Rare"]
            specs.append(
                PaperSpec.example(
                    arxiv_id,
                    version=2,
                    authors=list(dict.fromkeys(later)),
                    submitted_at=f"2024-03-{index + 1:02d}T00:00:00Z",
                    built_at="2026-02-05T10:00:00Z",
                    **fields,
                )
            )
    return specs


SPECS = _specs()
both = both_fixture("all-authors", _specs, 37)


# -- the oracle: what the specs say ------------------------------------------------------------


def _key(name: str) -> str:
    """An ASCII name's key: case and spacing ignored."""
    return " ".join(name.split()).casefold()


#: name key -> the one display name the specs give it.
_DISPLAYED = {_key(name): name for spec in SPECS for name in spec.authors}


def _codes(spec: PaperSpec) -> set[str]:
    return {spec.primary_cat, *spec.cross_cats}


_NEWEST = {spec.arxiv_id: max(s.version for s in SPECS if s.arxiv_id == spec.arxiv_id) for spec in SPECS}
#: filter field -> whether a spec meets it.
_MEETS: dict[str, Any] = {
    "author": lambda spec, value: _key(value) in {_key(n) for n in spec.authors},
    "allAuthors": lambda spec, value: {_key(v) for v in value} <= {_key(n) for n in spec.authors},
    "category": lambda spec, value: value in _codes(spec),
    "archive": lambda spec, value: value in {code.split(".")[0] for code in _codes(spec)},
    "title": lambda spec, value: value.casefold() in spec.title.casefold().split(),
    "license": lambda spec, value: spec.license == value,
    "submittedFrom": lambda spec, value: spec.submitted_at >= f"{value}T00:00:00Z",
    "submittedBefore": lambda spec, value: spec.submitted_at < f"{value}T00:00:00Z",
    "latestVersions": lambda spec, value: not value or spec.version == _NEWEST[spec.arxiv_id],
    "categories": lambda spec, value: bool(_codes(spec) & set(value)),
    "excludeCategories": lambda spec, value: not _codes(spec) & set(value),
}


def _expected(where: dict[str, Any], text: str | None = None) -> list[tuple[str, int]]:
    """(sourceId, sourceVersion) of the specs the filter keeps, newest first."""
    kept = [
        spec
        for spec in SPECS
        if all(_MEETS[field](spec, value) for field, value in where.items())
        and (text is None or text in f"{spec.title} {spec.abstract_excerpt}".casefold())
    ]
    return [(s.arxiv_id, s.version) for s in sorted(kept, key=lambda s: s.submitted_at, reverse=True)]


def _years_and_codes(found: list[tuple[str, int]]) -> tuple[dict[str, int], dict[str, int]]:
    specs = {(s.arxiv_id, s.version): s for s in SPECS}
    years = Counter(specs[k].submitted_at[:4] for k in found)
    codes = Counter(code for k in found for code in _codes(specs[k]))
    return dict(years), dict(codes)


# -- over HTTP ---------------------------------------------------------------------------------

PAPER = "sourceId sourceVersion"
PAGE = (
    f"edges {{ cursor node {{ {PAPER} }} }} pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}"
)
PAPERS = (
    "query($f: PaperFilter, $n: Int, $a: String, $l: Int, $b: String, $o: PaperOrder) {"
    f" papers(filter: $f, first: $n, after: $a, last: $l, before: $b, orderBy: $o) {{ {PAGE} }} }}"
)
SEARCH = (
    "query($t: String!, $f: PaperFilter, $o: SearchOrder, $n: Int, $a: String) {"
    f" search(text: $t, filter: $f, orderBy: $o, first: $n, after: $a) {{ {PAGE} }} }}"
)
FACETS = "facets(first: 50) { years { value count } categories { value count } authors { value count } }"


#: Numbers the documents :func:`_new` makes: no two calls send the same text.
_CALLS = itertools.count()


def _new(query: str) -> str:
    """``query`` as a document the servers have not seen (its resolvers answer it first)."""
    return f"{query}\n# call {next(_CALLS)}"


def _alike(both: tuple[Api, Api], query: str, *, times: int = 2, **variables: Any) -> dict[str, Any]:
    """The data of ``query`` on each backend, ``times`` each (a new document's first answer is
    its resolvers', the next its plan's): all equal."""
    answers = [api.data(query, **variables) for api in both for _ in range(times)]
    assert all(answer == answers[0] for answer in answers), (query, variables, answers)
    return answers[0]


def _pairs(connection: dict[str, Any]) -> list[tuple[str, int]]:
    return [(edge["node"]["sourceId"], edge["node"]["sourceVersion"]) for edge in connection["edges"]]


def _walk(both: tuple[Api, Api], size: int, where: dict[str, Any], order: str = "NEWEST") -> list[Any]:
    """Every paper of the listing, ``size`` a page, following endCursor."""
    found: list[tuple[str, int]] = []
    after, query = None, _new(PAPERS)
    while True:
        page = _alike(both, query, times=2 if after is None else 1, f=where, n=size, a=after, o=order)
        found += _pairs(page["papers"])
        if not page["papers"]["pageInfo"]["hasNextPage"]:
            return found
        after = page["papers"]["pageInfo"]["endCursor"]


def _walk_back(both: tuple[Api, Api], size: int, where: dict[str, Any]) -> list[Any]:
    """Every paper of the listing, ``size`` a page from its end (last/before)."""
    found: list[tuple[str, int]] = []
    before, query = None, _new(PAPERS)
    while True:
        page = _alike(both, query, times=2 if before is None else 1, f=where, l=size, b=before)["papers"]
        found = _pairs(page) + found
        if not page["pageInfo"]["hasPreviousPage"]:
            return found
        before = page["pageInfo"]["startCursor"]


#: The lists of names asked for (as a user would type them).
GROUPS: list[list[str]] = [
    ["Ann Lee", "Cy Rare"],  # a prolific and a rare author
    ["ann  LEE", "Bo Chen"],  # two prolific ones, spelled loosely
    ["Ann Lee", "Bo Chen", "cy rare"],
    ["Ann Lee", "Nobody Here"],  # an unknown name: no paper
    ["Di Solo", "Bo Chen"],  # both known, never together
    ["Cy Rare", " cy rare "],  # one author, repeated: that author's papers
]
#: Each other filter alone, combined with the lists (and none, and a few together).
_ONE_EACH: dict[str, Any] = {
    "author": "Bo Chen",
    "category": "math.PR",
    "archive": "cs",
    "title": "solitons",
    "license": _LICENSES[0],
    "latestVersions": True,
}
BASES: list[dict[str, Any]] = [
    {},
    *({field: value} for field, value in _ONE_EACH.items()),
    {"submittedFrom": "2024-01-05", "submittedBefore": "2024-03-03"},
    {"categories": ["hep-th", "stat.ML"], "excludeCategories": ["math.PR"]},
]


def test_the_oracle_has_something_to_tell() -> None:
    """The corpus makes each group mean something: pairs are rarer than either author."""
    assert len(_expected({"allAuthors": ["Ann Lee", "Bo Chen"]})) > 8
    assert 0 < len(_expected({"allAuthors": GROUPS[0]})) < len(_expected({"author": "Cy Rare"}))
    assert _expected({"allAuthors": GROUPS[4]}) == []
    assert _expected({"allAuthors": GROUPS[1], "latestVersions": True}) != _expected(
        {"allAuthors": GROUPS[1]}
    )


@pytest.mark.neo4j
@pytest.mark.parametrize("where", BASES, ids=lambda where: ",".join(where) or "none")
@pytest.mark.parametrize("names", GROUPS, ids=lambda names: "+".join(n.strip() for n in names))
def test_papers_count_and_facets_are_the_papers_they_all_wrote(
    both: tuple[Api, Api], where: dict[str, Any], names: list[str]
) -> None:
    given = {**where, "allAuthors": names}
    expected = _expected(given)
    assert _walk(both, 2, given) == expected  # pages of 2: Neo4j scans from a prolific author
    assert _walk(both, 50, given) == expected  # of 50: it walks the rarest author's edges
    counted = f"query($f: PaperFilter) {{ papers(filter: $f, first: 0) {{ totalCount {FACETS} }} }}"
    found = _alike(both, _new(counted), f=given)["papers"]
    assert found["totalCount"] == len(expected)
    years, codes = _years_and_codes(expected)
    assert {v["value"]: v["count"] for v in found["facets"]["years"]} == years
    assert {v["value"]: v["count"] for v in found["facets"]["categories"]} == codes
    authors = {v["value"]: v["count"] for v in found["facets"]["authors"]}
    if expected:  # each required author wrote every paper of the listing
        required = {_DISPLAYED[_key(name)] for name in [*names, *filter(None, [where.get("author")])]}
        assert {name: authors[name] for name in required} == dict.fromkeys(required, len(expected))
    else:
        assert authors == {}


@pytest.mark.neo4j
@pytest.mark.parametrize("names", GROUPS[:3], ids=lambda names: "+".join(n.strip() for n in names))
def test_oldest_first_and_backwards(both: tuple[Api, Api], names: list[str]) -> None:
    given = {"allAuthors": names}
    expected = _expected(given)
    assert _walk(both, 2, given, "OLDEST") == expected[::-1]
    assert _walk(both, 50, given, "OLDEST") == expected[::-1]
    assert _walk_back(both, 2, given) == expected
    assert _walk_back(both, 3, {**given, "latestVersions": True}) == _expected(
        {**given, "latestVersions": True}
    )


@pytest.mark.neo4j
@pytest.mark.parametrize("order", ["RELEVANCE", "NEWEST"])
@pytest.mark.parametrize("names", GROUPS[:5], ids=lambda names: "+".join(n.strip() for n in names))
def test_search_keeps_the_papers_they_all_wrote(both: tuple[Api, Api], order: str, names: list[str]) -> None:
    given = {"allAuthors": names}
    expected = _expected(given, text="solitons")
    found, after, query = [], None, _new(SEARCH)
    while True:
        times = 2 if after is None else 1
        page = _alike(both, query, times=times, t="solitons", f=given, o=order, n=2, a=after)["search"]
        found += _pairs(page)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    if order == "NEWEST":
        assert found == expected
    else:
        assert sorted(found) == sorted(expected)
    counted = (
        "query($t: String!, $f: PaperFilter) { search(text: $t, filter: $f, first: 0) { totalCount @ } }"
    )
    answer = _alike(both, _new(counted.replace("@", FACETS)), t="solitons", f=given)["search"]
    assert answer["totalCount"] == len(expected)
    assert {v["value"]: v["count"] for v in answer["facets"]["years"]} == _years_and_codes(expected)[0]


@pytest.mark.neo4j
def test_a_search_cursor_pages_only_its_own_authors(both: tuple[Api, Api]) -> None:
    words = {"t": "solitons", "o": "NEWEST", "n": 1}
    for api in both:
        cursor = api.data(SEARCH, f={"allAuthors": GROUPS[1]}, a=None, **words)["search"]["pageInfo"][
            "endCursor"
        ]
        other = api.post(SEARCH, {**words, "f": {"allAuthors": GROUPS[0]}, "a": cursor})
        assert other["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", other
        same = {"allAuthors": ["Bo Chen", "ANN LEE", "bo chen"]}  # order, case and repeats ignored
        assert "errors" not in api.post(SEARCH, {**words, "f": same, "a": cursor})


def test_the_filter_has_one_form() -> None:
    """Keys sorted without repeats; ``author`` is one more; one author is ``author`` alone,
    so its listings, caches and search cursors are those of ``filter.author``."""
    given = PaperFilterInput(author="Bo  Chen", all_authors=["ann lee", "ANN LEE", "Cy Rare"])
    assert to_filter(given) == PaperFilter(all_authors=("ann lee", "bo chen", "cy rare"))
    assert to_filter(PaperFilterInput(all_authors=["Cy Rare", "cy  rare"])) == PaperFilter(author="cy rare")
    assert to_filter(PaperFilterInput(author="cy rare", all_authors=["Cy Rare"])) == PaperFilter(
        author="cy rare"
    )
    assert to_filter(PaperFilterInput(all_authors=None)) == PaperFilter()
    plain = fingerprint(Listing(PaperFilter(archive="cs"), text=("solitons",)), SearchOrder.RELEVANCE)
    assert plain == "b6125e9bf2bd0478"  # 0.8.9's: unchanged
    pair = PaperFilter(archive="cs", all_authors=("ann lee", "bo chen"))
    assert fingerprint(Listing(pair, text=("solitons",)), SearchOrder.RELEVANCE) != plain


LISTED = "query($f: PaperFilter) { papers(filter: $f, first: 100) { totalCount nodes { pithNumber } } }"


def _refused(both: tuple[Api, Api], where: dict[str, Any]) -> dict[str, Any]:
    """The one error ``papers(filter: where)`` answers, alike by resolvers and plan on both
    backends; its extensions."""
    errors = [api.post(LISTED, {"f": where})["errors"] for api in both for _ in range(2)]
    assert all(found == errors[0] for found in errors), errors
    assert len(errors[0]) == 1, errors
    extensions: dict[str, Any] = errors[0][0]["extensions"]
    return extensions


@pytest.mark.neo4j
def test_refusals_name_the_list_or_the_name(both: tuple[Api, Api]) -> None:
    def code_and_argument(where: dict[str, Any]) -> tuple[str, str]:
        found = _refused(both, where)
        return found["code"], found["argument"]

    many = [f"Person {index}" for index in range(MAX_FILTER_AUTHORS)]
    assert "errors" not in both[0].post(LISTED, {"f": {"allAuthors": many}})
    assert code_and_argument({"allAuthors": []}) == ("BAD_USER_INPUT", "filter.allAuthors")
    assert code_and_argument({"allAuthors": [*many, "Ann Lee"]}) == ("LIMIT_EXCEEDED", "filter.allAuthors")
    repeated = ["Ann Lee"] * (MAX_FILTER_AUTHORS + 1)  # repeats counted, as the lists of codes
    assert code_and_argument({"allAuthors": repeated}) == ("LIMIT_EXCEEDED", "filter.allAuthors")
    assert code_and_argument({"allAuthors": ["Ann Lee", "  "]}) == ("BAD_USER_INPUT", "filter.allAuthors[1]")
    too_long = ["Ann Lee", "Bo Chen", "x" * 4097]
    assert code_and_argument({"allAuthors": too_long}) == ("BAD_USER_INPUT", "filter.allAuthors[2]")
    nulled = _refused(both, {"allAuthors": ["Ann Lee", None]})  # a variable's: refused before execution
    assert nulled["code"] == "BAD_USER_INPUT"
    # an argument's, at execution: a variable whose default let it stand for a name, sent null
    defaulted = (
        'query($c: String = "Bo Chen") { papers(filter: {allAuthors: ["Ann Lee", $c]}) { totalCount } }'
    )
    for api in both:
        for _ in range(2):
            (error,) = api.post(defaulted, {"c": None})["errors"]
            assert (error["extensions"]["code"], error["extensions"]["argument"]) == (
                "BAD_USER_INPUT",
                "filter.allAuthors[1]",
            )
    fits = {"allAuthors": ["Ann Lee", "x" * 4096]}  # the longest key taken: an unknown name
    assert all(api.data(LISTED, f=fits)["papers"]["totalCount"] == 0 for api in both)
