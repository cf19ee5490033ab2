"""What one query may make the server do is bounded, whatever the data: every list has a
size the server holds it to, the cost charged for it; the objects an answer holds are counted
as they are made; the time limit holds inside a level. On both backends and both executions
(resolvers, then the plan of the same document).

The corpus is a signer's worst case: one arXiv id with more versions than a list of versions
answers, a paper with more authors than a page (real collaboration papers have thousands).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apitest import Api, loaded_neo4j, memory_reader_of, served, signed_jsonl
from graphql import parse
from hypothesis import given, settings
from hypothesis import strategies as st

from pith_graph.api.app import create_app, key_infos
from pith_graph.api.bridge import BridgeRunner
from pith_graph.api.context import Context
from pith_graph.api.cost import LIST_SIZES, query_cost
from pith_graph.api.lanes import ThreadRunner, run_inline
from pith_graph.api.limits import DEFAULT_LIMITS, RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.reads.records import EVERYTHING, PaperSelection, RelatedPaper
from pith_graph.api.schema import build_schema
from pith_graph.loader.keyring import Keyring
from pith_graph.testing.signer import PaperSpec

VERSIONED = "2401.77777"
VERSIONS = LIST_SIZES["Paper.versions"] + 10  # more than a list of versions answers
CROWDED = "2401.88888"
AUTHORS = 150  # more than a page
SCHEMA = build_schema()._schema


def _spec(arxiv_id: str, version: int, authors: list[str], day: int) -> PaperSpec:
    return PaperSpec(
        arxiv_id=arxiv_id,
        version=version,
        title=f"Paper {arxiv_id} version {version}",
        authors=authors,
        abstract_excerpt="An abstract.",
        primary_cat="cs.LG",
        cross_cats=["stat.ML"],
        license="http://creativecommons.org/licenses/by/4.0/",
        submitted_at=f"2024-{1 + day // 28:02d}-{1 + day % 28:02d}T00:00:00Z",
        created_at="2026-01-01T00:00:00Z",
        built_at="2026-01-02T00:00:00Z",
    )


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    """The bundles (one JSON Lines file) and their keyring."""
    specs = [_spec(VERSIONED, v, ["Ann Lee", "Author 000"], v) for v in range(1, VERSIONS + 1)]
    specs.append(_spec(CROWDED, 1, [f"Author {i:03d}" for i in range(AUTHORS)], 0))
    return signed_jsonl(tmp_path_factory.mktemp("wide"), specs, seed=7)


@pytest.fixture(scope="module")
def wide_memory(wide: tuple[Path, Keyring]) -> MemoryReader:
    return memory_reader_of(wide)


@pytest.fixture(scope="module")
def wide_neo4j(request: pytest.FixtureRequest, wide: tuple[Path, Keyring]) -> Iterator[Neo4jReader]:
    """The bundles in the session's Neo4j for this module, then removed."""
    with loaded_neo4j(request, wide, timeout=30) as reader:
        yield reader


@pytest.fixture(params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def backend(request: pytest.FixtureRequest) -> GraphReader:
    found: GraphReader = request.getfixturevalue(f"wide_{request.param}")
    return found


def _app(reader: GraphReader, keyring: Keyring, limits: RequestLimits) -> Any:
    if isinstance(reader, Neo4jReader):
        return create_app(reader, keyring=keyring, limits=limits, run=BridgeRunner(), backend="neo4j")
    return create_app(reader, keyring=keyring, limits=limits)


def _twice(api: Api, query: str) -> list[tuple[dict[str, Any], float]]:
    """The answers and times of a query sent twice: the resolvers answer the first, the plan
    compiled from it the second."""
    answers = []
    for _ in range(2):
        started = time.monotonic()
        body = api.post(query)
        answers.append((body, time.monotonic() - started))
    return answers


def _nested(depth: int) -> str:
    selection = "title"
    for _ in range(depth):
        selection = f"versions {{ {selection} }}"
    return f'{{ paper(id: "{VERSIONED}") {{ {selection} }} }}'


def _list_objects(value: Any) -> int:
    """How many objects the lists of an answer hold (what the cost counts)."""
    if isinstance(value, dict):
        return sum(_list_objects(v) for v in value.values())
    if isinstance(value, list):
        objects = any(isinstance(v, dict) for v in value)
        return (len(value) if objects else 0) + sum(_list_objects(v) for v in value)
    return 0


# -- lists answer at most their size ------------------------------------------------------------


@pytest.mark.parametrize("depth", [3, 4, 5])
def test_nested_versions_are_refused_before_they_run(
    backend: GraphReader, wide: tuple[Path, Keyring], depth: int
) -> None:
    """The reviewer's query: 60 versions nested 5 deep were 177,157 objects (4 MB, 5 s) for a
    cost of 3,905; each level is now charged the 50 a list of versions may hold."""
    with served(_app(backend, wide[1], RequestLimits()), "x", backend) as api:
        for body, seconds in _twice(api, _nested(depth)):
            assert body["data"] is None
            (error,) = body["errors"]
            assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
            assert error["message"].startswith("The query costs ")
            assert seconds < 1


def test_lists_answer_at_most_their_size(backend: GraphReader, wide: tuple[Path, Keyring]) -> None:
    query = (
        f'{{ paper(id: "{VERSIONED}") {{ sourceVersion versions {{ sourceVersion }} }} '
        f'resolve(id: "arXiv:{VERSIONED}") {{ sourceVersion }} '
        f'crowded: paper(id: "{CROWDED}") {{ authorCount authors {{ name }} few: authors(first: 3) {{ name }} '
        "versions { title } } }"
    )
    with served(_app(backend, wide[1], RequestLimits()), "x", backend) as api:
        (first, _), (second, _) = _twice(api, query)
        assert first == second
        data = first["data"]
        assert data["paper"]["sourceVersion"] == VERSIONS  # the newest names the id
        # The others, oldest first: the first 50 of them.
        assert [v["sourceVersion"] for v in data["paper"]["versions"]] == list(range(1, 51))
        assert [v["sourceVersion"] for v in data["resolve"]] == list(range(VERSIONS, VERSIONS - 50, -1))
        crowded = data["crowded"]
        assert crowded["authorCount"] == AUTHORS
        assert [a["name"] for a in crowded["authors"]] == [f"Author {i:03d}" for i in range(100)]
        assert [a["name"] for a in crowded["few"]] == ["Author 000", "Author 001", "Author 002"]
        assert crowded["versions"] == []
        over = api.post(f'{{ paper(id: "{CROWDED}") {{ authors(first: 101) {{ name }} }} }}')
        assert over["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"


#: Queries whose answers must hold no more objects than their cost (and are not empty).
QUERIES = [
    _nested(1),
    _nested(2),
    f'{{ resolve(id: "arXiv:{VERSIONED}") {{ versions {{ authors(first: 5) {{ name }} }} }} }}',
    f'{{ paper(id: "{CROWDED}") {{ authors {{ name papers {{ nodes {{ title }} }} }} }} }}',
    f'{{ paper(id: "{CROWDED}") {{ authors(first: 30) {{ categories {{ count }} coauthors(first: 5) '
    "{ author { name } } } relatedPapers(first: 40) { paper { categories { code } } } } }",
    f'{{ paper(id: "{VERSIONED}") {{ aliases {{ kind }} signers {{ signerId }} categories {{ code }} '
    "primaryCategory { topAuthors { author { name } } coListed { count } } "
    "verification { keys { keyId } signatures { signer { signerId } } } } }",
    "{ papers(first: 70) { edges { node { title } } nodes { authors(first: 1) { name } } "
    "facets(first: 3) { years { value } authors { value } } } }",
    '{ search(text: "paper version", first: 7) { edges { node { title } } nodes { versions { title } } } '
    'authors(prefix: "author") { name } categories { papers(first: 3) { nodes { title } } } }',
    '{ papersById(ids: ["arXiv:2401.77777v3", "nothing", "arXiv:2401.88888"]) { authors(first: 4) { name } } '
    'collaborationPath(from: "Ann Lee", to: "Author 149") { paper { authors(first: 2) { name } } } }',
]


def _answers(
    reader: GraphReader, keyring: Keyring, query: str, limits: RequestLimits = DEFAULT_LIMITS
) -> tuple[list[Any], bool]:
    """The results (data, error codes) of ``query`` answered in-process by the resolvers, then
    by its plan (when it has one: the discovery fields have none), and whether it had one."""
    schema = build_schema(limits)

    async def once() -> Any:
        runner = ThreadRunner(1) if isinstance(reader, Neo4jReader) else run_inline
        context = Context(reader, limits, key_infos(keyring), runner)
        try:
            result = await schema.execute(query, context_value=context)
        finally:
            closing = context.close()
            if closing is not None:
                await closing
            if isinstance(runner, ThreadRunner):
                runner.close()
        return result.data, [error.extensions["code"] for error in result.errors or []]

    answers = [asyncio.run(once()), asyncio.run(once())]
    assert schema.plans is not None
    return answers, schema.plans.get(query, None) is not None


@pytest.mark.parametrize("query", QUERIES)
def test_an_answer_holds_no_more_objects_than_its_cost(
    backend: GraphReader, wide: tuple[Path, Keyring], query: str
) -> None:
    cost = query_cost(SCHEMA, parse(query), None, None, RequestLimits())
    (resolvers, planned), _ = _answers(backend, wide[1], query)
    assert resolvers == planned
    data, errors = resolvers
    assert not errors
    assert 0 < _list_objects(data) <= cost


_PAPER_LISTS = [
    "versions",
    "authors",
    "authors(first: 2)",
    "categories",
    "aliases",
    "signers",
    "relatedPapers(first: 3)",
]


@st.composite
def _selections(draw: st.DrawFn, depth: int) -> str:
    """A selection of a paper: a title and up to three of its lists, nested."""
    fields = ["title"]
    for name in draw(st.lists(st.sampled_from(_PAPER_LISTS), max_size=3, unique=True)):
        alias = name.split("(")[0] + str(len(fields))
        if name.startswith("authors"):
            inner = "name categories { count }"
        elif name == "categories":
            inner = "code"
        elif name == "aliases":
            inner = "kind"
        elif name == "signers":
            inner = "signerId"
        elif name.startswith("relatedPapers"):
            inner = f"paper {{ {draw(_selections(depth - 1)) if depth else 'title'} }}"
        else:
            inner = draw(_selections(depth - 1)) if depth else "title"
        fields.append(f"{alias}: {name} {{ {inner} }}")
    return " ".join(fields)


@settings(max_examples=60, deadline=None)
@given(selection=_selections(2), identifier=st.sampled_from([VERSIONED, CROWDED]))
def test_any_paper_query_holds_no_more_objects_than_its_cost(
    wide_memory: MemoryReader, wide: tuple[Path, Keyring], selection: str, identifier: str
) -> None:
    query = f'{{ paper(id: "{identifier}") {{ {selection} }} }}'
    cost = query_cost(SCHEMA, parse(query), None, None, RequestLimits())
    (resolvers, planned), has_plan = _answers(wide_memory, wide[1], query)
    assert has_plan and resolvers == planned
    data, errors = resolvers
    if cost > RequestLimits().max_cost:
        assert (data, errors) == (None, ["LIMIT_EXCEEDED"])
    else:
        assert not errors
        assert _list_objects(data) <= cost


# -- the objects an answer holds are counted as they are made ------------------------------------


class Overanswering(MemoryReader):
    """A reader that answers more related papers than it is asked for: the static cost
    believes the reader, the count made while answering does not need to."""

    def related_papers(
        self, pith_numbers: Any, first: int, want: PaperSelection = EVERYTHING, after: str | None = None
    ) -> dict[str, list[RelatedPaper]]:
        return super().related_papers(pith_numbers, 100, want, after)


def test_an_answer_outgrowing_the_cost_limit_is_stopped(
    wide_memory: MemoryReader, wide: tuple[Path, Keyring]
) -> None:
    reader = Overanswering(wide_memory.G)
    query = f'{{ paper(id: "{CROWDED}") {{ relatedPapers(first: 2) {{ paper {{ title }} }} }} }}'
    limits = RequestLimits(max_cost=30)
    assert query_cost(SCHEMA, parse(query), None, None, limits) == 2
    with served(create_app(reader, keyring=wide[1], limits=limits), "memory", reader) as api:
        for body, _ in _twice(api, query):  # the plan gives way; the resolvers refuse
            assert body["data"] is None
            (error,) = body["errors"]
            assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
            assert error["message"] == "The answer holds more than 30 objects, the limit of the query cost."
        assert api.post(f'{{ paper(id: "{VERSIONED}") {{ title }} }}')["data"]["paper"]


# -- the time limit holds inside a level -----------------------------------------------------------

#: Seconds a request may run past its limit here: the check's own granularity, and a shared
#: 2-core machine running the rest of the suite beside it (1.0 was exceeded once, at 1.51 s;
#: 2.0 failed 6 runs in 18 at a load of 5-7, answers up to 3.1 s). Before the checks inside a
#: level, the reviewer's smaller query answered after 8.6 s with a 1 s limit; before the checks
#: among bylines, 240 of them answered after 4.4 s with a 1 s limit (500 here: twice the work).
SLACK = 3.5


def _paper_node(api: Any) -> str:
    """The crowded paper's node id. The first request of a cold app can itself take the short
    limit these tests set (once in 18 runs under load): asked again then."""
    for _ in range(3):
        body = api.post(f'{{ paper(id: "{CROWDED}") {{ id }} }}')
        if "errors" not in body:
            break
    assert "errors" not in body, body
    node: str = body["data"]["paper"]["id"]
    return node


def test_the_time_limit_holds_inside_a_level(backend: GraphReader, wide: tuple[Path, Keyring]) -> None:
    """The reviewer's query with the cost limit lifted: 60 versions nested 5 deep are several
    seconds of work (millions of objects); a request stops at its time limit, whichever
    execution answers it (the plan used to check the time between levels only, and the
    resolvers ran every resolver of a level before noticing)."""
    limit = 0.5
    limits = RequestLimits(timeout_seconds=limit, max_cost=10**12)
    with served(_app(backend, wide[1], limits), "x", backend) as api:
        for body, seconds in _twice(api, _nested(5)):
            assert body["data"] is None
            assert [error["extensions"]["code"] for error in body["errors"]] == ["TIMEOUT"]
            assert seconds < limit + SLACK


def test_the_time_limit_holds_in_process(backend: GraphReader, wide: tuple[Path, Keyring]) -> None:
    """As above, through ``schema.execute`` (no HTTP view, no timer): the executions check."""
    limit = 0.5
    limits = RequestLimits(timeout_seconds=limit, max_cost=10**12)
    started = time.monotonic()
    (resolvers, planned), has_plan = _answers(backend, wide[1], _nested(5), limits)
    assert has_plan
    assert resolvers == planned == (None, ["TIMEOUT"])
    assert time.monotonic() - started < 2 * (limit + SLACK)


def test_the_time_limit_holds_inside_bylines(backend: GraphReader, wide: tuple[Path, Keyring]) -> None:
    """500 ids of the crowded paper, each byline's 100 names with their authors: 50,000
    authors, seconds of work. The authors used to be resolved one field each after every
    byline of the level was made, with no check of the time among them (the attacker's 240
    ids, with a 1 s limit, answered TIMEOUT after 4.4 s); they are now made with their
    byline, the time checked for each paper. Both executions (papersById has a plan)."""
    limit = 0.5
    limits = RequestLimits(timeout_seconds=limit, max_cost=10**12)
    authors = "byline { author { name paperCount } }"
    with served(_app(backend, wide[1], limits), "x", backend) as api:
        node = _paper_node(api)
        nodes = f"{{ nodes(ids: {[node] * 500!r}) {{ ... on Paper {{ {authors} }} }} }}".replace("'", '"')
        by_ids = f"{{ papersById(ids: {[CROWDED] * 500!r}) {{ {authors} }} }}".replace("'", '"')
        for body, seconds in [*_twice(api, nodes), *_twice(api, by_ids)]:
            assert [error["extensions"]["code"] for error in body["errors"]] == ["TIMEOUT"], body
            assert seconds < limit + SLACK, f"TIMEOUT after {seconds:.1f} s"
