"""The query cost limit (checked before execution) and one heavy query not stalling others."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from apitest import Api, corpus, memory_api, memory_reader, served  # noqa: F401 (fixtures)
from graphql import GraphQLList, GraphQLNonNull, GraphQLObjectType, get_named_type, parse

from pith_graph.api.app import create_app
from pith_graph.api.cost import LIST_SIZES, PAGE_ITEMS, query_cost
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.schema import build_schema
from pith_graph.testing.corpus import write_corpus
from pith_graph.testing.serving import serving

SCHEMA = build_schema()._schema
README = Path(__file__).resolve().parents[2] / "README.md"


def _aliases(count: int, field: str) -> str:
    return "{ " + " ".join(f"a{i}: {field}" for i in range(count)) + " }"


IDS = "query($ids: [String!]!) { papersById(ids: $ids) { authors { name } } }"
#: The request of the issue: 30 aliases of a heavy field (3 KB, 6 MB of answer).
HEAVY = _aliases(30, "papers(first: 100) { nodes { authors { papers(first: 100) { nodes { title } } } } }")


@pytest.mark.parametrize(
    ("query", "variables", "cost"),
    [
        pytest.param('{ paper(id: "x") { title } }', None, 0, id="no-lists"),
        pytest.param("{ papers { totalCount } }", None, 0, id="no-page-read"),
        pytest.param("{ papers { nodes { title } } }", None, 20, id="default-page"),
        pytest.param(
            "{ papers(first: 50) { nodes { title authors(first: 10) { name } } } }",
            None,
            550,
            id="page-of-authors",
        ),
        pytest.param(
            "{ papers(first: 50) { nodes { title authors { name } } } }",
            None,
            50 + 50 * 100,  # a paper's authors: up to the page cap unless asked for fewer
            id="page-of-whole-author-lists",
        ),
        pytest.param(
            "{ papers(first: 50) { edges { node { title } } pageInfo { endCursor } } }", None, 50, id="edges"
        ),
        pytest.param(
            '{ search(text: "x", first: 5) { edges { node { title } } nodes { title } } }',
            None,
            5 + 5,
            id="edges-and-nodes",
        ),
        pytest.param(HEAVY, None, 30 * (100 + 100 * 100 + 100 * 100 * 100), id="the-issue"),
        pytest.param("query($n: Int) { papers(first: $n) { nodes { title } } }", {"n": 7}, 7, id="variable"),
        pytest.param(
            "query($n: Int = 9) { papers(first: $n) { nodes { title } } }", None, 9, id="variable-default"
        ),
        pytest.param(
            "query($n: Int = 9) { papers(first: $n) { nodes { title } } }", {"n": 3}, 3, id="variable-given"
        ),
        pytest.param(  # execution refuses the variable before any resolver runs
            "query($n: Int) { papers(first: $n) { nodes { title } } }", {"n": "x"}, 0, id="not-an-int"
        ),
        pytest.param("{ papers(first: 10000) { nodes { title } } }", None, 100, id="over-the-page-cap"),
        pytest.param(
            "{ categories { topAuthors(first: 5) { author { name } } } }", None, 200 + 1000, id="capped"
        ),
        pytest.param(
            '{ paper(id: "x") { versions { versions { title } } } }', None, 50 + 50 * 50, id="versions"
        ),
        pytest.param(
            '{ author(name: "x") { categories { count } c: categories(first: 3) { count } } }',
            None,
            20 + 3,
            id="author-categories",
        ),
        pytest.param('{ authors(prefix: "a") { name } }', None, 10, id="typeahead-default"),
        pytest.param(
            '{ collaborationPath(from: "a", to: "b", maxHops: 6) { paper { authors(first: 10) { name } } } }',
            None,
            6 + 60,
            id="path",
        ),
        pytest.param(
            "{ ...F  b: categories { code } } fragment F on Query { categories { code } }",
            None,
            400,
            id="fragment",
        ),
        pytest.param("{ papers(first: 0) { nodes { title authors { name } } } }", None, 0, id="first-zero"),
        pytest.param(
            "{ papers(first: 2) { nodes { categories { code } } } }", None, 2 + 2 * 20, id="categories"
        ),
        pytest.param(
            "{ papers { facets(first: 5) { years { value } categories { value } archives { value }"
            " licenses { value } authors { value } } } }",
            None,
            5 * 5,  # five facet lists of 5 values, of one listing
            id="facets",
        ),
        pytest.param(
            "{ papers(first: 3) { nodes { authors(first: 2) { papers { facets { years { value } } } } } } }",
            None,
            3 + 3 * 2 + 3 * 2 * 10,  # the facets of every author's papers: 10 values by default
            id="facets-of-each-author",
        ),
        pytest.param('{ papersById(ids: ["a", "b", "c"]) { authors { name } } }', None, 3 + 300, id="ids"),
        pytest.param('{ papersById(ids: "a") { authors { name } } }', None, 1 + 100, id="one-id"),
        pytest.param(IDS, {"ids": ["a", "b"]}, 2 + 200, id="ids-variable"),
        # each identifier is answered, repeats included: each costs
        pytest.param(IDS, {"ids": ["a", "a", "a"]}, 3 + 300, id="ids-repeated"),
        pytest.param(
            '{ papersById(ids: ["a", "a"]) { authors { name } } }', None, 2 + 200, id="ids-repeated-literal"
        ),
        pytest.param(IDS, {"ids": "a"}, 1 + 100, id="one-id-variable"),  # coerced to a list of one
        pytest.param(IDS, None, 0, id="ids-missing"),  # execution refuses it
        pytest.param(  # a byline is as long as a whole page of authors
            "{ papers(first: 2) { nodes { byline { name author { name } } } } }",
            None,
            2 + 2 * 100,
            id="byline",
        ),
        # a Node costs what its costliest type's selection may
        pytest.param(
            '{ node(id: "a") { ... on Paper { authors { name } } ... on Author { coauthors { sharedPapers } } } }',
            None,
            100,
            id="node",
        ),
        pytest.param(
            '{ nodes(ids: ["a", "b"]) { id ... on Author { papers { nodes { title } } } ...N } } '
            "fragment N on Node { ... on Category { topAuthors(first: 30) { count } } }",
            None,
            2 + 2 * 30,
            id="nodes",
        ),
        pytest.param(
            "{ papers(first: 3) { __typename nodes { authors { name } } } }", None, 3 + 300, id="typename"
        ),
        pytest.param(
            "{ papers(first: 2) { nodes { ... { authors { name } } } } }", None, 2 + 200, id="inline-fragment"
        ),
    ],
)
def test_query_cost(query: str, variables: dict[str, Any] | None, cost: int) -> None:
    assert query_cost(SCHEMA, parse(query), None, variables, RequestLimits()) == cost


def test_the_named_operation_is_the_one_counted() -> None:
    document = parse(
        "query Cheap { papers(first: 1) { nodes { title } } } query Dear { categories { code } }"
    )
    costs = [query_cost(SCHEMA, document, name, None, RequestLimits()) for name in ("Cheap", "Dear", None)]
    assert costs == [1, 200, 0]  # no name with two operations: execution reports it


def test_every_list_without_first_has_a_size() -> None:
    """A new list field needs a deliberate size, not the fallback (a list of strings that a
    signer's data makes long, too: its size is what the field answers at most)."""
    unsized = ["Paper.authorNames"]
    for type_ in SCHEMA.type_map.values():
        if not isinstance(type_, GraphQLObjectType) or type_.name.startswith("__"):
            continue
        for name, field in type_.fields.items():
            kind = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
            is_object_list = isinstance(kind, GraphQLList) and isinstance(
                get_named_type(kind), GraphQLObjectType
            )
            key = f"{type_.name}.{name}"
            if is_object_list and not {"first", "maxHops", "ids"} & set(field.args) and key not in PAGE_ITEMS:
                unsized.append(key)
    assert sorted(unsized) == sorted(LIST_SIZES)


def test_readme_examples_are_within_the_default_limit() -> None:
    blocks = re.findall(r"```graphql\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        given = dict.fromkeys(re.findall(r"\$(\w+): String!", block), "x")  # else refused: 0
        assert 0 < query_cost(SCHEMA, parse(block), None, given, RequestLimits()) <= RequestLimits().max_cost


def test_a_costly_query_is_refused_before_it_runs(memory_api: Api) -> None:
    started = time.monotonic()
    body = memory_api.post(HEAVY)
    assert time.monotonic() - started < 2
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert error["message"] == "The query costs 30303000, over the limit of 25000."
    assert "first" in error["extensions"]["suggestion"]


def test_the_cost_counts_variables_by_value(memory_api: Api) -> None:
    query = (
        "query($n: Int) { papers(first: $n) { nodes { authors { papers(first: $n) { nodes { title } } } } } }"
    )
    assert "errors" not in memory_api.post(query, {"n": 5})  # 5 + 50 + 250
    refused = memory_api.post(query, {"n": 100})  # 100 + 1000 + 100000
    assert refused["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"


def test_the_cost_limit_is_configurable(memory_reader: MemoryReader) -> None:
    with served(create_app(memory_reader, limits=RequestLimits(max_cost=10)), "memory", memory_reader) as api:
        assert api.data("{ papers(first: 10) { nodes { title } } }")["papers"]["nodes"]
        body = api.post("{ papers(first: 11) { nodes { title } } }")
        assert body["errors"][0]["message"] == "The query costs 11, over the limit of 10."


# -- one heavy request does not stall the others (memory backend) -----------------------------

#: Seconds of CPU on the memory backend (the cost limit is lifted for it: about 40,000).
STALLING = _aliases(
    4, "categories { papers(first: 100) { nodes { title authors { name } categories { code } } } }"
)


@pytest.fixture(scope="module")
def served_corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``pith-graph serve`` (memory backend, one worker) over a generated corpus, no cost limit."""
    info = write_corpus(tmp_path_factory.mktemp("stall"), 2000, seed=12, workers=2, layout="jsonl")
    env = {"PITH_API_MAX_COST": str(10**9), "PITH_API_TIMEOUT_SECONDS": "60"}
    args = [str(info.directory), "--trusted-keys", str(info.keyring_path), "--port", "0"]
    args += ["--workers", "1"]  # one process: the heavy query and the probes share its event loop
    with serving(args, env) as url:
        yield url


def test_a_heavy_query_does_not_stall_health_or_other_queries(served_corpus: str) -> None:
    latencies: list[float] = []
    done = threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=served_corpus, timeout=60) as client:
            while not done.is_set():
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                small = client.post("/graphql", json={"query": "{ papers(first: 1) { nodes { title } } }"})
                assert small.json()["data"]["papers"]["nodes"]
                latencies.append(time.monotonic() - started)
                time.sleep(0.05)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        started = time.monotonic()
        heavy = httpx.post(f"{served_corpus}/graphql", json={"query": STALLING}, timeout=120)
        seconds = time.monotonic() - started
    finally:
        done.set()
        prober.join()
    assert "errors" not in heavy.json()
    print(f"heavy query {seconds:.1f} s; health + small query during it: max {max(latencies):.2f} s")
    assert seconds > 1.0, "not heavy enough to show a stall on this machine"
    # A stall makes a probe wait about as long as the heavy query; a busy host, a second now
    # and then (1.01 s once, beside the other half of the suite).
    limit = max(1.0, seconds / 4)
    assert max(latencies) < limit, f"a probe waited {max(latencies):.1f} s behind a {seconds:.1f} s query"
