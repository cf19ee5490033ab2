"""Ranked lists page by page (since 0.9.2): ``Author.coauthors``, ``Paper.relatedPapers``,
``Category.topAuthors``, ``Author.categories`` and ``Category.coListed`` with ``after``,
over HTTP, on both backends and both executions (each query text is sent twice: the
resolvers answer it first, its plan after, and the two answers must be equal).

Every list is checked against an oracle computed here from the papers themselves (not from
either reader): walking it in pages of 1, 7 and 100 gives exactly the whole ranking, ties
and all. The corpus has a hub author with more coauthors than a page, many ties of counts,
papers submitted the same day (related papers tie on date and fall back to the pith
number), arXiv versions (never related to each other), and name keys that UTF-16 and code
points order apart.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from apitest import Api, loaded_neo4j, memory_reader_of, served, signed_jsonl
from graphql import parse
from test_api_author_pages import _app, _both
from test_api_nplus1 import Counted, _serve

from pith_graph.api.cost import query_cost
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads import cypher
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.schema import build_schema
from pith_graph.loader.identifiers import author_name_key
from pith_graph.loader.keyring import Keyring
from pith_graph.testing.signer import PaperSpec

HUB = "Hub Author"
_POOL = [f"Member {i:03d}" for i in range(140)] + ["Zoë Berg", "Åsa Kim"]
#: Always named together: tied everywhere, and UTF-16 orders them unlike code points.
PIAS = ["Pia \ue000", "Pia \U00020000"]
CODES = ["cs.LG", "cs.AI", "stat.ML", "math.OC", "cs.CL", "hep-th", "q-bio.NC", "cs.CV", "cs.IR", "cs.NE"]
CODES += ["econ.EM", "math.ST", "physics.data-an", "cs.DS", "cs.SI", "q-fin.ST"]


def _corpus() -> list[PaperSpec]:
    """90 papers (5 of them a second version of another), seeded."""
    pick = random.Random(7)
    specs = []
    for index in range(85):
        authors = pick.sample(_POOL, pick.randint(2, 7))
        if index % 5 < 3:
            authors.append(HUB)
        if index % 9 == 0:
            authors += PIAS
        cats = pick.sample(CODES, pick.randint(1, 3))
        specs.append(
            PaperSpec.example(
                f"2403.{10000 + index}",
                authors=sorted(set(authors)),
                primary_cat=cats[0],
                cross_cats=cats[1:],
                submitted_at=f"2024-03-{1 + index % 6:02d}T00:00:00Z",  # many on the same day
            )
        )
    for spec in specs[:5]:  # second versions, with one author more
        specs.append(
            PaperSpec.example(
                spec.arxiv_id,
                version=2,
                authors=sorted({*spec.authors, _POOL[-1]}),
                primary_cat=spec.primary_cat,
                cross_cats=spec.cross_cats,
                submitted_at="2024-04-01T00:00:00Z",
            )
        )
    return specs


SPECS = _corpus()


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    return signed_jsonl(tmp_path_factory.mktemp("ranks"), SPECS, seed=23)


@pytest.fixture(scope="module")
def ranks_memory(bundles: tuple[Path, Keyring]) -> MemoryReader:
    return memory_reader_of(bundles)


@pytest.fixture(scope="module")
def ranks_neo4j(request: pytest.FixtureRequest, bundles: tuple[Path, Keyring]) -> Iterator[Neo4jReader]:
    with loaded_neo4j(request, bundles, timeout=30) as reader:
        yield reader


@pytest.fixture(scope="module", params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def ranks(request: pytest.FixtureRequest, bundles: tuple[Path, Keyring]) -> Iterator[Api]:
    reader: GraphReader = request.getfixturevalue(f"ranks_{request.param}")
    with served(_app(reader, bundles[1]), request.param, reader) as api:
        yield api


# -- the oracle: from the specs, not from a reader ------------------------------------------


def _keys(spec: PaperSpec) -> set[str]:
    return {author_name_key(name) for name in spec.authors}


def _cats(spec: PaperSpec) -> set[str]:
    return {spec.primary_cat, *spec.cross_cats}


def _oracle(
    of: Callable[[PaperSpec], set[str]], items: Callable[[PaperSpec], set[str]], key: str
) -> list[tuple[str, int]]:
    """The ``items`` of the papers whose ``of`` holds ``key`` (not ``key`` itself), with how
    many papers each: most first, then by key (code point)."""
    found: Counter[str] = Counter()
    for spec in SPECS:
        if key in of(spec):
            found.update(items(spec) - {key})
    return sorted(found.items(), key=lambda item: (-item[1], item[0]))


def _coauthors(key: str) -> list[tuple[str, int]]:
    return _oracle(_keys, _keys, key)


def _author_categories(key: str) -> list[tuple[str, int]]:
    return _oracle(_keys, _cats, key)


def _top_authors(code: str) -> list[tuple[str, int]]:
    return _oracle(_cats, _keys, code)


def _co_listed(code: str) -> list[tuple[str, int]]:
    return _oracle(_cats, _cats, code)


@pytest.fixture(scope="module")
def piths(ranks: Api) -> dict[tuple[str, int], tuple[str, str]]:
    """(arXiv id, version) -> (pith number, submittedAt), as the API shows them."""
    query = "{ papers(first: 100) { nodes { pithNumber sourceId sourceVersion submittedAt } } }"
    nodes = ranks.data(query)["papers"]["nodes"]
    assert len(nodes) == len(SPECS)
    return {(n["sourceId"], n["sourceVersion"]): (n["pithNumber"], n["submittedAt"]) for n in nodes}


def _related(spec: PaperSpec, piths: dict[tuple[str, int], tuple[str, str]]) -> list[tuple[str, int]]:
    found = []
    for other in SPECS:
        shared = len(_keys(spec) & _keys(other))
        if other.arxiv_id != spec.arxiv_id and shared:
            pith, submitted = piths[(other.arxiv_id, other.version)]
            found.append((shared, submitted, pith))
    found.sort(reverse=True)
    return [(pith, shared) for shared, _, pith in found]


# -- the queries ------------------------------------------------------------------------------

#: field -> (query with $id/$key, $first, $after; path to the list; item -> (key, count))
_ITEM = Callable[[dict[str, Any]], tuple[str, int]]
LISTS: dict[str, tuple[str, list[str], _ITEM]] = {
    "coauthors": (
        "query($key: String!, $first: Int, $after: String) { author(name: $key) { "
        "coauthors(first: $first, after: $after) { author { nameKey } sharedPapers } } }",
        ["author", "coauthors"],
        lambda item: (item["author"]["nameKey"], item["sharedPapers"]),
    ),
    "relatedPapers": (
        "query($key: String!, $first: Int, $after: String) { paper(id: $key) { "
        "relatedPapers(first: $first, after: $after) { paper { pithNumber } sharedAuthors } } }",
        ["paper", "relatedPapers"],
        lambda item: (item["paper"]["pithNumber"], item["sharedAuthors"]),
    ),
    "topAuthors": (
        "query($key: String!, $first: Int, $after: String) { category(code: $key) { "
        "topAuthors(first: $first, after: $after) { author { nameKey } count } } }",
        ["category", "topAuthors"],
        lambda item: (item["author"]["nameKey"], item["count"]),
    ),
    "categories": (
        "query($key: String!, $first: Int, $after: String) { author(name: $key) { "
        "categories(first: $first, after: $after) { category { code } count } } }",
        ["author", "categories"],
        lambda item: (item["category"]["code"], item["count"]),
    ),
    "coListed": (
        "query($key: String!, $first: Int, $after: String) { category(code: $key) { "
        "coListed(first: $first, after: $after) { category { code } count } } }",
        ["category", "coListed"],
        lambda item: (item["category"]["code"], item["count"]),
    ),
}


def _page(api: Api, field: str, key: str, first: int | None, after: str | None) -> list[tuple[str, int]]:
    query, path, item = LISTS[field]
    body = _both(api, query, key=key, first=first, after=after)
    assert "errors" not in body, body["errors"]
    found: Any = body["data"]
    for name in path:
        found = found[name]
    return [item(i) for i in found]


def _walk(api: Api, field: str, key: str, size: int) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []
    after = None
    while True:
        page = _page(api, field, key, size, after)
        assert len(page) <= size
        seen += page
        if len(page) < size:
            return seen
        after = page[-1][0]


def _subjects(
    field: str, piths: dict[tuple[str, int], tuple[str, str]]
) -> list[tuple[str, list[tuple[str, int]]]]:
    """(key to ask with, oracle) of a few subjects of ``field``."""
    if field == "coauthors":
        return [(k, _coauthors(k)) for k in (author_name_key(HUB), "pia \ue000", "member 007")]
    if field == "categories":
        return [(k, _author_categories(k)) for k in (author_name_key(HUB), "member 011")]
    if field == "relatedPapers":
        chosen = [SPECS[0], SPECS[3], SPECS[-1]]
        return [(piths[(s.arxiv_id, s.version)][0], _related(s, piths)) for s in chosen]
    oracle = _top_authors if field == "topAuthors" else _co_listed
    return [(code, oracle(code)) for code in ("cs.LG", "hep-th")]


def _tied(ranking: list[tuple[str, int]]) -> bool:
    return len({count for _, count in ranking}) < len(ranking)


@pytest.mark.parametrize("field", list(LISTS))
@pytest.mark.parametrize("size", [1, 7, 100])
def test_walking_pages_gives_the_whole_ranking(
    ranks: Api, piths: dict[tuple[str, int], tuple[str, str]], field: str, size: int
) -> None:
    subjects = _subjects(field, piths)
    assert any(len(oracle) > size for _, oracle in subjects) or size == 100
    assert all(_tied(oracle) for _, oracle in subjects)  # ties decided by the key
    for key, oracle in subjects[: 1 if size == 1 else None]:
        assert _walk(ranks, field, key, size) == oracle, (field, key)
        if len(oracle) <= 100:
            assert _page(ranks, field, key, 100, None) == oracle  # one big page


def test_the_hub_has_more_coauthors_than_a_page(ranks: Api) -> None:
    oracle = _coauthors(author_name_key(HUB))
    assert len(oracle) > 100
    assert _page(ranks, "coauthors", author_name_key(HUB), None, None) == oracle[:20]
    assert _walk(ranks, "coauthors", author_name_key(HUB), 100) == oracle
    keys = [k for k, _ in oracle]  # tied: by code point, as everywhere
    assert keys.index("pia \ue000") + 1 == keys.index("pia \U00020000")


@pytest.mark.parametrize("field", list(LISTS))
def test_after_each_item_the_rest_of_the_ranking(
    ranks: Api, piths: dict[tuple[str, int], tuple[str, str]], field: str
) -> None:
    """From every position of one subject's list (a middle of a tie too)."""
    key, oracle = _subjects(field, piths)[-1]
    for index, (item, _) in enumerate(oracle):
        assert _page(ranks, field, key, 5, item) == oracle[index + 1 : index + 6], (field, item)


def _not_listed(field: str, piths: dict[tuple[str, int], tuple[str, str]]) -> list[tuple[str, str]]:
    """(subject, after) pairs whose after is not in the subject's list."""
    hub = author_name_key(HUB)
    if field == "coauthors":
        lonely = next(k for k in map(author_name_key, _POOL) if k not in dict(_coauthors("member 007")))
        return [(hub, hub), (hub, "nobody at all"), ("member 007", lonely), (hub, "0")]
    if field == "categories":
        return [
            (hub, "no.SUCH"),
            ("member 011", next(c for c in CODES if c not in dict(_author_categories("member 011")))),
        ]
    if field == "relatedPapers":
        first, second = piths[(SPECS[0].arxiv_id, 1)][0], piths[(SPECS[0].arxiv_id, 2)][0]
        unknown = "pith:2024:" + "A" * 26
        return [(first, first), (first, second), (first, unknown)]
    if field == "topAuthors":
        return [("cs.LG", "nobody at all"), ("cs.LG", "0")]
    return [("cs.LG", "cs.LG"), ("cs.LG", "no.SUCH"), ("cs.LG", "0")]


@pytest.mark.parametrize("field", list(LISTS))
def test_an_after_not_in_the_list_ranks_after_all(
    ranks: Api, piths: dict[tuple[str, int], tuple[str, str]], field: str
) -> None:
    """Not (or no longer) in the list: 0 shared, after every item, so an empty page, not an
    error; the item itself, a version of the paper, a key nothing has."""
    for subject, after in _not_listed(field, piths):
        assert _page(ranks, field, subject, 10, after) == [], (field, subject, after)


@pytest.mark.parametrize(
    ("field", "key", "after"),
    [
        ("coauthors", "hub author", "q" * 600),
        ("topAuthors", "cs.LG", "q" * 1000 + "é" * 1548),  # 4,096 bytes of UTF-8
        ("coListed", "cs.LG", "cs." + "x" * 598),
        ("categories", "hub author", "é" * 2048),
    ],
)
def test_an_after_as_long_as_a_key_the_graph_holds_is_a_position(
    ranks: Api, field: str, key: str, after: str
) -> None:
    """The loader takes a name key or code of up to 4,096 bytes of UTF-8 (what Neo4j
    indexes), and the lists show it; ``after`` took 500 characters at most, so a walk
    stopped at a 600-character key it had been given (a review of 0.9.2's ranked pages)."""
    assert _page(ranks, field, key, 10, after) == []


@pytest.mark.parametrize(
    ("field", "key", "after", "message"),
    [
        ("coauthors", "hub author", "Hub Author", "after is not a name key: 'Hub Author'."),
        ("topAuthors", "cs.LG", "", "after is empty."),
        ("relatedPapers", None, "2403.10001", "after is not a pith number: '2403.10001'."),
        ("relatedPapers", None, "pith:2024:aaaaaaaaaaaaaaaaaaaaaaaaaa", None),
        ("coListed", "cs.LG", " ", "after is empty."),
        (
            "categories",
            "hub author",
            "x" * 4097,
            "after is longer than any key the graph holds (4096 bytes of UTF-8).",
        ),
        (
            "coListed",
            "cs.LG",
            "é" * 2049,
            "after is longer than any key the graph holds (4096 bytes of UTF-8).",
        ),
        (
            "coauthors",
            "hub author",
            "q" * 4097,
            "after is longer than any key the graph holds (4096 bytes of UTF-8).",
        ),
    ],
)
def test_an_after_of_the_wrong_kind_is_bad_user_input(
    ranks: Api,
    piths: dict[tuple[str, int], tuple[str, str]],
    field: str,
    key: str | None,
    after: str,
    message: str | None,
) -> None:
    query, path, _ = LISTS[field]
    subject = key or piths[(SPECS[0].arxiv_id, 1)][0]
    body = _both(ranks, query, key=subject, first=3, after=after)
    assert body["data"] == {path[0]: None}
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert message is None or error["message"] == message
    assert error["path"] == path


@pytest.mark.parametrize(
    "query",
    [
        'author(name: "k") { coauthors(first: 30@) { sharedPapers } categories(first: 30@) { count } }',
        'paper(id: "k") { relatedPapers(first: 30@) { sharedAuthors } }',
        'category(code: "k") { topAuthors(first: 30@) { count } coListed(first: 30@) { count } }',
    ],
)
def test_after_costs_nothing_more(query: str) -> None:
    """first still sizes the list: the cost is the same with after."""
    schema = build_schema()._schema
    costs = [
        query_cost(schema, parse("{ " + query.replace("@", after) + " }"), None, None, RequestLimits())
        for after in ("", ', after: "x"')
    ]
    assert costs[0] == costs[1] >= 30


def test_first_over_the_cap_is_refused_with_after(ranks: Api) -> None:
    query, _, _ = LISTS["coauthors"]
    body = _both(ranks, query, key=author_name_key(HUB), first=101, after="member 001")
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"


#: Every statement of a later page (since 0.9.2).
_LATER = {
    statement
    for name in (
        "READ_COAUTHORS_AFTER",
        "READ_RELATED_PAPERS_AFTER",
        "READ_TOP_AUTHORS_AFTER",
        "READ_CO_LISTED_AFTER",
    )
    for statement in getattr(cypher, name).values()
}


@pytest.mark.neo4j
@pytest.mark.parametrize("runner_kind", ["bridged", "lanes"])
def test_a_level_of_later_pages_is_one_statement_and_a_first_page_the_old_one(
    ranks_neo4j: Neo4jReader, runner_kind: str
) -> None:
    """Each paper's related papers and each author's coauthors after a key: one statement a
    level however many papers (resolvers and plan alike); without after, the statements of
    before 0.9.2, byte for byte."""
    counted = Counted(ranks_neo4j)
    after = '"pith:2024:' + "A" * 26 + '"'
    with _serve(counted, runner_kind) as api:
        for first in (2, 30):
            query = (
                f"{{ papers(first: {first}) {{ nodes {{ relatedPapers(first: 3, after: {after}) "
                '{ sharedAuthors } authors(first: 2) { coauthors(first: 3, after: "member 001") '
                "{ sharedPapers } } } } }"
            )
            for _ in ("resolvers", "plan"):
                _data, statements, _ = counted.ask(api, query)
                assert sum(s in _LATER for s in statements) == 2, statements
        _data, statements, _ = counted.ask(
            api, '{ author(name: "hub author") { coauthors { sharedPapers } } }'
        )
        assert set(cypher.READ_COAUTHORS.values()) & set(statements)
        assert not any(s in _LATER for s in statements)


#: field -> (a level of many subjects, their key, what their list shows).
_LEVEL_OF = {
    "coauthors": (
        "papers(first: 100) { nodes { authors(first: 20)",
        "nameKey",
        "author { nameKey } sharedPapers",
    ),
    "relatedPapers": ("papers(first: 100) { nodes", "pithNumber", "paper { pithNumber } sharedAuthors"),
    "topAuthors": ("categories", "code", "author { nameKey } count"),
    "coListed": ("categories", "code", "category { code } count"),
}
#: field -> the level's query: each subject's ``key`` and its ``list`` after ``$a``.
_LEVELS = {
    field: f"query($a: String) {{ {level} {{ key: {key} list: {field}(first: 5, after: $a) {{ {shown} }} }}"
    + " }" * (level.count("{") + 1)
    for field, (level, key, shown) in _LEVEL_OF.items()
}


@pytest.mark.parametrize("field", list(_LEVELS))
def test_a_level_of_lists_after_one_item_is_each_list_after_it(
    ranks: Api, piths: dict[tuple[str, int], tuple[str, str]], field: str
) -> None:
    """Many subjects' later pages in one level (on Neo4j one statement, which since 0.9.3
    counts the after item once for all of them): each is its own list after the item."""
    query, item = _LEVELS[field], LISTS[field][2]
    specs = {piths[(s.arxiv_id, s.version)][0]: s for s in SPECS}
    oracles: dict[str, Callable[[str], list[tuple[str, int]]]] = {
        "coauthors": _coauthors,
        "relatedPapers": lambda pith: _related(specs[pith], piths),
        "topAuthors": _top_authors,
        "coListed": _co_listed,
    }
    oracle = oracles[field]
    subjects = [key for key, _ in _subjects(field, piths)]
    itself = "nobody at all" if field == "topAuthors" else subjects[0]  # in no list of its own
    afters = [oracle(subjects[0])[2][0], oracle(subjects[-1])[0][0], itself]
    listed = 0
    for after in afters:
        data: Any = _both(ranks, query, a=after)["data"]
        found = data["categories"] if field in ("topAuthors", "coListed") else data["papers"]["nodes"]
        if field == "coauthors":
            found = [author for node in found for author in node["authors"]]
        assert len({subject["key"] for subject in found}) > 5
        for subject in found:
            ranking = oracle(subject["key"])
            keys = [key for key, _ in ranking]
            expected = ranking[keys.index(after) + 1 :][:5] if after in keys else []
            assert [item(i) for i in subject["list"]] == expected, (field, subject["key"], after)
            listed += bool(expected)
    assert listed > 10
