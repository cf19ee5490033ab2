"""A paper's authors page by page (``Paper.authors(first:, after:)``), over HTTP, on both
backends and both executions (each query text is sent twice: the resolvers answer it first,
its plan after, and the two answers must be equal).

The corpus is one paper with more authors than a page, named so that the order by display
name differs from the order by name key (lower-case names, accents, ligatures, CJK, an
astral letter after a full-width one and in a name key: Python's code-point order, which is
Neo4j's between stored strings, not UTF-16's), one paper with an author found on no other
paper, and a dozen small papers drawing on the same names.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apitest import Api, loaded_neo4j, memory_reader_of, served, signed_jsonl
from graphql import parse
from test_api_nplus1 import Counted, _serve

from pith_graph.api.app import create_app
from pith_graph.api.bridge import BridgeRunner
from pith_graph.api.cost import query_cost
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.schema import build_schema
from pith_graph.loader.identifiers import author_display_name, author_name_key
from pith_graph.loader.keyring import Keyring
from pith_graph.testing.signer import PaperSpec

_GIVEN = [
    "Ann",
    "bell",
    "Zoë",
    "Åsa",
    "Émile",
    "danah",
    "𝒜lice",
    "Ｊohn",
    "李",
    "Σοφία",
    "Bo",
    "ﬀion",
    "İlker",
]
_FAMILY = [
    "Lee",
    "hooks",
    "Smith",
    "de Vries",
    "Berg",
    "Kim",
    "Łukasz",
    "O'Brien",
    "Straße",
    "王",
    "van der Berg",
]
_WHOLE = [f"{given} {family}" for family, given in itertools.product(_FAMILY, _GIVEN)]
#: Name keys that UTF-16 and code points order apart (NFKC keeps both characters).
_WHOLE += ["Pia \ue000", "Pia \U00020000"]
_WHOLE += [f"Author {i:03d}" for i in range(250 - len(_WHOLE))]

CROWDED = "2402.10000"  # more authors than a page
LONER = "2402.10001"  # has an author no other paper has
OUTSIDER = "Mm Middle"  # that author
SMALL = [f"2402.1{i:04d}" for i in range(2, 14)]
PAPERS: dict[str, list[str]] = {
    CROWDED: _WHOLE,
    LONER: [OUTSIDER, "Ann Lee", "bell hooks"],
    **{arxiv_id: _WHOLE[i::19][: 3 + i % 6] for i, arxiv_id in enumerate(SMALL)},
}
#: Every author's display name by name key.
NAMES = {author_name_key(name): author_display_name(name) for names in PAPERS.values() for name in names}


def _order(names: list[str]) -> list[str]:
    """The name keys of ``names`` in the order the API lists a paper's authors: by display
    name, then name key, by code point."""
    keys = {author_name_key(name) for name in names}
    return sorted(keys, key=lambda key: (NAMES[key], key))


def _after(names: list[str], name: str, key: str) -> list[str]:
    """The name keys of ``names`` that come after the position (``name``, ``key``)."""
    return [k for k in _order(names) if (NAMES[k], k) > (name, key)]


def _spec(arxiv_id: str, authors: list[str], day: int) -> PaperSpec:
    return PaperSpec.example(
        arxiv_id,
        authors=sorted(authors),
        submitted_at=f"2024-02-{1 + day:02d}T00:00:00Z",
        created_at="2026-01-01T00:00:00Z",
        built_at="2026-01-02T00:00:00Z",
    )


@pytest.fixture(scope="module")
def crowd(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    """The bundles (one JSON Lines file) and their keyring."""
    assert len(_order(_WHOLE)) == len(_WHOLE) == 250  # no two names of a paper share a key
    specs = [_spec(arxiv_id, names, day) for day, (arxiv_id, names) in enumerate(PAPERS.items())]
    return signed_jsonl(tmp_path_factory.mktemp("crowd"), specs, seed=11)


@pytest.fixture(scope="module")
def crowd_memory(crowd: tuple[Path, Keyring]) -> MemoryReader:
    return memory_reader_of(crowd)


@pytest.fixture(scope="module")
def crowd_neo4j(request: pytest.FixtureRequest, crowd: tuple[Path, Keyring]) -> Iterator[Neo4jReader]:
    """The bundles in the session's Neo4j for this module, then removed."""
    with loaded_neo4j(request, crowd, timeout=30) as reader:
        yield reader


def _app(reader: GraphReader, keyring: Keyring) -> Any:
    if isinstance(reader, Neo4jReader):
        return create_app(reader, keyring=keyring, run=BridgeRunner(), backend="neo4j")
    return create_app(reader, keyring=keyring)


@pytest.fixture(scope="module", params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def pages(request: pytest.FixtureRequest, crowd: tuple[Path, Keyring]) -> Iterator[Api]:
    """The corpus served from each backend in turn."""
    reader: GraphReader = request.getfixturevalue(f"crowd_{request.param}")
    with served(_app(reader, crowd[1]), request.param, reader) as api:
        yield api


_SENT = itertools.count()


def _both(api: Api, query: str, **variables: Any) -> dict[str, Any]:
    """The answer to ``query`` from the resolvers (its text is new to the server) and from its
    plan (the same text again), which must be equal."""
    text = f"{query} # {next(_SENT)}"
    first = api.post(text, variables)
    assert api.post(text, variables) == first
    return first


PAGE = (
    "query($id: String!, $first: Int, $after: String) "
    "{ paper(id: $id) { authorCount authors(first: $first, after: $after) { nameKey name } } }"
)


def _page(api: Api, after: str | None, first: int | None = None, arxiv_id: str = CROWDED) -> list[str]:
    body = _both(api, PAGE, id=arxiv_id, first=first, after=after)
    assert "errors" not in body, body["errors"]
    paper = body["data"]["paper"]
    assert paper["authorCount"] == len(PAPERS[arxiv_id])
    assert all(NAMES[a["nameKey"]] == a["name"] for a in paper["authors"])
    return [a["nameKey"] for a in paper["authors"]]


@pytest.mark.parametrize("first", [None, 37])
def test_paging_visits_every_author_once_in_order(pages: Api, first: int | None) -> None:
    expected = _order(PAPERS[CROWDED])
    assert expected != sorted(expected)  # by name, not by name key
    utf16 = sorted(expected, key=lambda k: (NAMES[k].encode("utf-16-be"), k.encode("utf-16-be")))
    assert expected != utf16  # by code point, not UTF-16
    size = first or 100  # the page cap by default
    seen: list[str] = []
    after = None
    while True:
        page = _page(pages, after, first)
        assert len(page) == min(size, len(expected) - len(seen))  # full pages, then the rest
        if not page:
            break
        seen += page
        after = page[-1]
    assert seen == expected  # each once, in order; as many as authorCount says


def test_after_the_last_author_there_is_none(pages: Api) -> None:
    last = _order(PAPERS[CROWDED])[-1]
    assert _page(pages, last) == []
    assert _page(pages, last, 5, arxiv_id=LONER) == _after(PAPERS[LONER], NAMES[last], last)


@pytest.mark.parametrize(
    ("after", "name"),
    [
        pytest.param(author_name_key(OUTSIDER), OUTSIDER, id="author-of-another-paper"),
        pytest.param("nobody", "nobody", id="no-author-mid-list"),  # stands as a name would
        pytest.param("!", "!", id="no-author-before-all"),
        pytest.param("\ud7ff", "\ud7ff", id="no-author-after-the-latin-names"),
        # A key no author has stands cut before its first character above U+D7FF.
        pytest.param("\U0010fffd", "", id="no-author-astral"),
        pytest.param("\ue000 lee", "", id="no-author-private-use"),
        pytest.param("mm middle \U00020000", "mm middle ", id="no-author-astral-mid-list"),
    ],
)
def test_an_after_naming_no_author_of_the_paper_is_a_position(pages: Api, after: str, name: str) -> None:
    expected = _after(PAPERS[CROWDED], name, after)
    assert _page(pages, after) == expected[:100]
    if after in NAMES:  # by the author's name in the graph, not by its name key
        assert expected != _after(PAPERS[CROWDED], after, after)


def test_every_paper_of_a_listing_pages_from_the_same_after(pages: Api) -> None:
    """One ``after`` for a level of papers: on some an author, on the others a position."""
    after = author_name_key("Bo Kim")
    query = (
        "query($after: String!) { papers(first: 50) { nodes { sourceId authorCount "
        "authors(first: 4, after: $after) { nameKey } } } }"
    )
    body = _both(pages, query, after=after)
    assert "errors" not in body, body["errors"]
    nodes = body["data"]["papers"]["nodes"]
    assert {node["sourceId"] for node in nodes} == set(PAPERS)
    for node in nodes:
        names = PAPERS[node["sourceId"]]
        assert node["authorCount"] == len(names)
        assert [a["nameKey"] for a in node["authors"]] == _after(names, NAMES[after], after)[:4]


@pytest.mark.parametrize(
    ("after", "message"),
    [
        pytest.param(
            "x" * 4097, "after is longer than any key the graph holds (4096 bytes of UTF-8).", id="too-long"
        ),
        pytest.param(
            "é" * 2049,
            "after is longer than any key the graph holds (4096 bytes of UTF-8).",
            id="too-many-bytes",
        ),
        pytest.param("Ann Lee", "after is not a name key: 'Ann Lee'.", id="a-name"),
        pytest.param("ann  lee", "after is not a name key: 'ann  lee'.", id="doubled-space"),
        pytest.param(" ann lee", "after is not a name key: ' ann lee'.", id="leading-space"),
        pytest.param("", "after is empty.", id="empty"),
        pytest.param("  ", "after is empty.", id="blank"),
    ],
)
def test_an_after_that_is_no_name_key_is_bad_user_input(pages: Api, after: str, message: str) -> None:
    body = _both(pages, PAGE, id=CROWDED, after=after)
    assert body["data"] == {"paper": None}
    (error,) = body["errors"]
    assert (error["extensions"]["code"], error["message"]) == ("BAD_USER_INPUT", message)
    assert error["extensions"]["suggestion"] == "Pass the nameKey of the last author you have (not its name)."
    assert error["path"] == ["paper", "authors"]


def test_an_after_as_long_as_a_name_key_the_graph_holds_is_a_position(pages: Api) -> None:
    """A 600-character name key loads and is listed; after refused it past 500 characters."""
    body = _both(pages, PAGE, id=CROWDED, after="z" * 600)
    assert "errors" not in body, body["errors"]
    names = [author["name"] for author in body["data"]["paper"]["authors"]]
    assert names and all(name > "z" for name in names)  # those after that position, by name


def test_after_costs_nothing_more() -> None:
    schema = build_schema()._schema
    for after in ("", ', after: "ann lee"'):
        query = f"{{ papers(first: 50) {{ nodes {{ title authors(first: 10{after}) {{ name }} }} }} }}"
        assert query_cost(schema, parse(query), None, None, RequestLimits()) == 50 + 50 * 10


@pytest.mark.neo4j
@pytest.mark.parametrize("runner_kind", ["bridged", "lanes"])
def test_pages_of_many_papers_take_a_fixed_number_of_statements(
    crowd_neo4j: Neo4jReader, runner_kind: str
) -> None:
    """The authors of a level's papers are one read, and the author ``after`` names one more,
    however many papers the level has."""
    counted = Counted(crowd_neo4j)
    counts = []
    with _serve(counted, runner_kind) as api:
        for first in (2, 14):
            query = f'{{ papers(first: {first}) {{ nodes {{ authors(first: 3, after: "bo kim") {{ name }} }} }} }}'
            _data, resolved, _ = counted.ask(api, query)  # the resolvers
            _data, planned, _ = counted.ask(api, query)  # its plan, which fetches authors with the papers
            counts.append((len(resolved), len(planned)))
    assert counts == [(2, 2), (2, 2)]  # the author `after` names is found in the same statement


@pytest.mark.neo4j
def test_only_the_page_leaves_the_server(crowd_neo4j: Neo4jReader) -> None:
    """Neo4j sorts and cuts a paper's authors itself: a page of 3 of 252 brings 3 rows."""
    crowded = _pith(crowd_neo4j, CROWDED)
    request = crowd_neo4j.for_request()
    statements = request._statements
    returned: list[Any] = []
    rows = statements.rows

    def counted(statement: str, parameters: dict[str, Any]) -> Any:
        found = rows(statement, parameters)
        returned.extend(found)
        return found

    statements.rows = counted  # type: ignore[method-assign]
    try:
        for after in (None, author_name_key("Bo Kim")):
            returned.clear()
            page = request.author_pages([crowded], 3, after)[crowded]
            expected = _order(PAPERS[CROWDED]) if after is None else _after(PAPERS[CROWDED], "Bo Kim", after)
            assert ([a.name_key for a in page.authors], page.total) == (expected[:3], len(PAPERS[CROWDED]))
            ((total, authors),) = [row["page"] for row in returned]
            assert (total, len(authors)) == (len(PAPERS[CROWDED]), 3)
    finally:
        request.close()


def _pith(reader: GraphReader, arxiv_id: str) -> str:
    (paper,) = reader.papers_by_identifiers([("arxiv", arxiv_id)])[("arxiv", arxiv_id)]
    return paper.pith_number


@pytest.mark.neo4j
def test_rankings_break_ties_by_code_point_on_both_readers(
    crowd_memory: MemoryReader, crowd_neo4j: Neo4jReader
) -> None:
    """Coauthors, top authors, pages and paths order tied name keys alike (two authors of the
    crowded paper have keys that UTF-16 and code points order apart)."""
    keys = sorted(NAMES)
    calls: list[tuple[str, tuple[Any, ...]]] = [
        ("coauthors", (keys, 300)),
        ("top_authors", (["cs.LG"], 300)),
        ("author_pages", ([_pith(crowd_memory, a) for a in PAPERS], 300)),
        ("collaboration_path", (author_name_key(OUTSIDER), author_name_key("Pia \ue000"), 3)),
    ]
    for name, args in calls:
        assert getattr(crowd_neo4j, name)(*args) == getattr(crowd_memory, name)(*args), name
    pias = [c.author.name_key for c in crowd_memory.coauthors([author_name_key("Ann Lee")], 300)["ann lee"]]
    assert pias.index("pia \ue000") < pias.index("pia \U00020000")
