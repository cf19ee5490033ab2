"""``PaperFilter.latestVersions`` (since 0.9.0): only the newest version of each arXiv id,
the paper ``paper(id:)`` answers for the id without a version, on both backends alike.

A corpus where arXiv ids have several versions (one with a gap, one whose older version was
submitted later), served by the memory and the Neo4j backend over HTTP: ``papers`` (with
each other filter), ``search`` (both orders), their ``totalCount`` and ``facets``, and pages
walked by their cursors, must answer only the newest versions, and answer alike.
"""

from __future__ import annotations

from typing import Any

import pytest
from apitest import PAPERS_QUERY, SEARCH_QUERY, Api, alike, both_fixture, walk_alike

from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.search import SearchOrder, fingerprint
from pith_graph.testing.signer import PaperSpec

#: (arXiv id, versions, title, first author, primary category)
_SOURCES = [
    ("2401.00001", (1, 2, 3), "Solitons of the nonlinear Schrödinger equation", "Ann Lee", "math.AP"),
    ("2401.00002", (1, 2), "Schrödinger solitons in fibres", "Ann Lee", "physics.optics"),
    ("2401.00003", (1,), "Solitons and breathers", "Bo Chen", "math.AP"),
    ("2401.00004", (2, 4), "Graph limits", "Ann Lee", "cs.LG"),  # versions 1 and 3 not loaded
    ("2401.00005", (1, 2, 3, 4), "Sparse inference for solitons", "Bo Chen", "cs.LG"),
    ("2401.00006", (1,), "Random walks", "Cy Diaz", "math.PR"),
    ("2401.00007", (1, 2), "Schrödinger bridges", "Cy Diaz", "math.PR"),
]
#: The newest version of each id, by arXiv id.
NEWEST = {arxiv_id: max(versions) for arxiv_id, versions, *_ in _SOURCES}


def _spec(index: int, arxiv_id: str, version: int, title: str, author: str, primary: str) -> PaperSpec:
    """Version ``version`` of the ``index``-th id: revised versions change the title, add an
    author and (in math.AP) a cross-list; 2401.00001v1 is submitted last of all papers, so
    the newest version of an id is not always its newest paper."""
    revised = version > 1
    return PaperSpec.example(
        arxiv_id,
        version=version,
        title=f"{title} (revised)" if version % 2 == 0 else title,
        authors=[author, "Dee Park"] if revised else [author],
        abstract_excerpt=f"On solitons, version {version}.",
        primary_cat=primary,
        cross_cats=["math.PR"] if primary == "math.AP" and revised else [],
        submitted_at=f"2024-01-{28 if (index, version) == (0, 1) else 1 + 4 * index + version:02d}T00:00:00Z",
        built_at=f"2026-02-{1 + version:02d}T10:00:00Z",
    )


def _specs() -> list[PaperSpec]:
    return [
        _spec(index, arxiv_id, version, title, author, primary)
        for index, (arxiv_id, versions, title, author, primary) in enumerate(_SOURCES)
        for version in versions
    ]


#: The corpus, signed, served by the memory and the Neo4j backend.
both = both_fixture("versions", _specs, 23)

PAPER = "pithNumber sourceId sourceVersion"
FACETS = (
    "facets(first: 50) { years { value count } categories { value count } archives { value count }"
    " licenses { value count } authors { value count } }"
)
PAGE = f"edges {{ cursor node {{ {PAPER} }} }} pageInfo {{ hasNextPage endCursor }}"
PAPERS, SEARCH = PAPERS_QUERY, SEARCH_QUERY
#: The filters the flag is combined with (each also without it).
FILTERS: list[dict[str, Any]] = [
    {},
    {"author": "ann lee"},
    {"author": "Dee Park"},
    {"category": "math.AP"},
    {"category": "math.PR"},
    {"archive": "math"},
    {"title": "solitons"},
    {"license": "http://creativecommons.org/licenses/by/4.0/"},
    {"submittedFrom": "2024-01-05", "submittedBefore": "2024-01-20"},
]


_both = alike


def _walk(both: tuple[Api, Api], query: str, field: str, size: int, **variables: Any) -> list[dict[str, Any]]:
    return walk_alike(both, query, field, size, PAGE, **variables)


def _newest_only(nodes: list[dict[str, Any]]) -> None:
    for node in nodes:
        assert node["sourceVersion"] == NEWEST[node["sourceId"]], node
    assert len({node["sourceId"] for node in nodes}) == len(nodes)


@pytest.mark.neo4j
@pytest.mark.parametrize("where", FILTERS, ids=lambda where: ",".join(where) or "none")
def test_papers_list_and_count_only_the_newest_versions(both: tuple[Api, Api], where: dict[str, Any]) -> None:
    every = _walk(both, PAPERS, "papers", 50, f=where)
    newest = _walk(both, PAPERS, "papers", 2, f={**where, "latestVersions": True})
    _newest_only(newest)
    # The newest versions among the filter's papers; not the newest of those it keeps.
    assert newest == [node for node in every if node["sourceVersion"] == NEWEST[node["sourceId"]]]
    assert _walk(both, PAPERS, "papers", 3, f={**where, "latestVersions": False}) == every
    counted = "query($f: PaperFilter) { papers(filter: $f, first: 0) { totalCount @ } }"
    facets = _both(both, counted.replace("@", FACETS), f={**where, "latestVersions": True})["papers"]
    assert facets["totalCount"] == len(newest)
    assert sum(year["count"] for year in facets["facets"]["years"]) == len(newest)


@pytest.mark.neo4j
def test_the_newest_version_is_the_one_paper_id_answers(both: tuple[Api, Api]) -> None:
    newest = _walk(both, PAPERS, "papers", 4, f={"latestVersions": True})
    assert len(newest) == len(NEWEST)
    named = "query($id: String!) { paper(id: $id) { @ } }".replace("@", PAPER)
    by_id = [_both(both, named, id=arxiv_id)["paper"] for arxiv_id in NEWEST]
    assert sorted(newest, key=lambda node: node["sourceId"]) == by_id
    # 2401.00001v1 was submitted last, yet only v3 stands for its id.
    every = _walk(both, PAPERS, "papers", 50)
    assert (every[0]["sourceId"], every[0]["sourceVersion"]) == ("2401.00001", 1)
    assert newest[0]["sourceId"] == "2401.00007"


@pytest.mark.neo4j
@pytest.mark.parametrize("order", ["RELEVANCE", "NEWEST"])
@pytest.mark.parametrize(
    "where", [{}, {"author": "Ann Lee"}, {"category": "math.AP"}], ids=["none", "author", "category"]
)
def test_search_finds_only_the_newest_versions(
    both: tuple[Api, Api], order: str, where: dict[str, Any]
) -> None:
    words = {"t": "solitons Schrödinger", "o": order}
    every = _walk(both, SEARCH, "search", 50, f=where, **words)
    assert len({node["sourceId"] for node in every}) < len(every)  # versions of one id
    newest = _walk(both, SEARCH, "search", 2, f={**where, "latestVersions": True}, **words)
    _newest_only(newest)
    assert newest == [node for node in every if node["sourceVersion"] == NEWEST[node["sourceId"]]]
    counted = (
        "query($t: String!, $f: PaperFilter) { search(text: $t, filter: $f, first: 0) { totalCount @ } }"
    )
    facets = _both(both, counted.replace("@", FACETS), t=words["t"], f={**where, "latestVersions": True})[
        "search"
    ]
    assert facets["totalCount"] == len(newest)
    assert sum(year["count"] for year in facets["facets"]["years"]) == len(newest)


def test_a_search_without_the_flag_keeps_its_cursor_fingerprint() -> None:
    """Search cursors a server before 0.9.0 handed out stay valid: the digest is the same."""
    listing = Listing(PaperFilter(archive="cs"), text=("solitons",))
    assert fingerprint(listing, SearchOrder.RELEVANCE) == "b6125e9bf2bd0478"  # 0.8.9's
    latest = Listing(PaperFilter(archive="cs", latest_versions=True), text=("solitons",))
    assert fingerprint(latest, SearchOrder.RELEVANCE) != fingerprint(listing, SearchOrder.RELEVANCE)


@pytest.mark.neo4j
def test_a_cursor_pages_only_the_search_that_handed_it_out(both: tuple[Api, Api]) -> None:
    query = SEARCH.replace("@", PAGE)
    words = {"t": "solitons", "o": "RELEVANCE", "n": 1}
    for api in both:
        every = api.data(query, f={}, a=None, **words)["search"]["pageInfo"]["endCursor"]
        newest = api.data(query, f={"latestVersions": True}, a=None, **words)["search"]["pageInfo"][
            "endCursor"
        ]
        for cursor, other in ((every, {"latestVersions": True}), (newest, {})):
            errors = api.post(query, {**words, "f": other, "a": cursor})["errors"]
            assert errors[0]["extensions"]["code"] == "BAD_USER_INPUT", errors
