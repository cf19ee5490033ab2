"""Which executions run on the event loop (memory backend), and ``/healthz`` staying fast
while clients loop cheap queries over papers with many authors.

A query's static cost bounds what its answer holds, not what its reads take in: ``{ papers(first:
10) { nodes { authors(first: 1) { name } } } }`` costs 20, and once read each paper's whole
author list. Such a query ran on the server's event loop (its cost is under
``INLINE_COST``), so two clients looping it kept ``/healthz`` waiting for seconds, then 503.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from graphql import parse

from pith_graph.api.cost import query_cost
from pith_graph.api.limits import RequestLimits
from pith_graph.api.loops import INLINE_COST, LoopThreads, run_execution
from pith_graph.api.schema import build_schema
from pith_graph.api.unbounded import UNBOUNDED_READS, UNBOUNDED_WITH, unbounded_reads
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle
from pith_graph.testing.serving import serving

SCHEMA = build_schema()._schema

# -- the decision ------------------------------------------------------------------------------

INLINE = [
    '{ paper(id: "x") { title } }',
    "query($id: String!) { paper(id: $id) { pithNumber title submittedAt sourceVersion authors { name } } }",
    "{ papers(first: 10) { nodes { title authors(first: 1) { name } authorCount } } }",
    '{ papers(first: 10) { nodes { authors(first: 1, after: "a") { name } } } }',  # a bisection
    '{ author(name: "x") { name paperCount papers(first: 10) { nodes { title } } } }',
    '{ category(code: "cs.LG") { paperCount papers(first: 5) { totalCount nodes { title } } } }',
    '{ signer(id: "x") { paperCount papers(first: 5) { totalCount nodes { title } } } }',
    '{ paper(id: "x") { verification { keyIds rank keys { keyId } } } }',
    # a paper's lists: their first ones, slices of lists kept sorted (see test_api_wide_lists)
    "{ papers(first: 5) { nodes { categories { code } primaryCategory { code } } } }",
    '{ paper(id: "x") { aliases { value } } }',
    '{ paper(id: "x") { versions { title } signers { signerId } verification { signatures { keyIds } } } }',
    '{ nodes(ids: ["x", "y"]) { id ... on Paper { title authors(first: 2) { name } } } }',
]
TWO_OPERATIONS = 'query A { paper(id: "x") { title } } query B { categories { code } }'
#: Cheap documents whose reads their cost does not bound, with the fields that say so.
REFUSED = [
    ('{ paper(id: "x") { categories { code } relatedPapers(first: 1) { title } } }', {"Paper.relatedPapers"}),
    ('{ papers(first: 5, filter: {license: "x"}) { totalCount } }', {"Query.papers"}),
    ('{ signer(id: "x") { papers(first: 1, signedBundle: true) { totalCount } } }', {"Signer.papers"}),
    ('{ author(name: "x") { coauthors(first: 1) { sharedPapers } } }', {"Author.coauthors"}),
    ('{ paper(id: "x") { relatedPapers(first: 1) { sharedAuthors } } }', {"Paper.relatedPapers"}),
    ('{ category(code: "x") { topAuthors(first: 1) { count } } }', {"Category.topAuthors"}),
    ('{ search(text: "x", first: 1) { totalCount } }', {"Query.search"}),
    ("{ papers(first: 1) { facets(first: 1) { years { value } } } }", {"PaperConnection.facets"}),
    (  # in a fragment, spread under an inline fragment
        '{ paper(id: "x") { ... on Paper { ...V } } } '
        "fragment V on Paper { versions { relatedPapers(first: 1) { sharedAuthors } } }",
        {"Paper.relatedPapers"},
    ),
    (TWO_OPERATIONS, {"Query.categories"}),  # operation B
    ('{ node(id: "x") { ... on Author { coauthors(first: 1) { sharedPapers } } } }', {"Author.coauthors"}),
    (  # a fragment on the interface, its inline fragment on one of the types
        '{ nodes(ids: ["x"]) { ...N } } fragment N on Node { ... on Category { coListed(first: 1) { count } } }',
        {"Category.coListed"},
    ),
]


def _on_loop(query: str, operation_name: str | None = None) -> bool:
    """Whether :func:`run_execution` runs the document's execution on the caller's loop, asked
    as the planned path asks (:mod:`pith_graph.api.planned`)."""
    document = parse(query)
    threads = LoopThreads(1)
    try:

        async def main() -> bool:
            caller = threading.current_thread()

            async def execution() -> bool:
                return threading.current_thread() is caller

            return await run_execution(
                threads,
                execution,
                lambda: query_cost(SCHEMA, document, operation_name, {}, RequestLimits()),
                lambda: not unbounded_reads(SCHEMA, document, operation_name),  # Plan.reads_bounded
            )

        return asyncio.run(main())
    finally:
        threads.close()


@pytest.mark.parametrize("query", INLINE)
def test_cheap_bounded_executions_run_on_the_event_loop(query: str) -> None:
    assert query_cost(SCHEMA, parse(query), None, {}, RequestLimits()) <= INLINE_COST
    assert unbounded_reads(SCHEMA, parse(query), None) == set()
    assert _on_loop(query)


@pytest.mark.parametrize(("query", "fields"), REFUSED)
def test_cheap_executions_with_unbounded_reads_go_to_the_threads(query: str, fields: set[str]) -> None:
    name = "B" if query == TWO_OPERATIONS else None
    assert query_cost(SCHEMA, parse(query), name, {}, RequestLimits()) <= INLINE_COST
    assert unbounded_reads(SCHEMA, parse(query), name) == fields
    assert not _on_loop(query, name)


def test_only_the_operation_asked_for_counts() -> None:
    assert unbounded_reads(SCHEMA, parse(TWO_OPERATIONS), "A") == set()
    assert unbounded_reads(SCHEMA, parse(TWO_OPERATIONS), None) == set()  # not one operation
    assert _on_loop(TWO_OPERATIONS, "A")


def test_an_unknown_answer_is_not_inline() -> None:
    async def main() -> tuple[bool, bool]:
        threads = LoopThreads(1)
        caller = threading.current_thread()

        async def execution() -> bool:
            return threading.current_thread() is caller

        try:
            return (
                await run_execution(threads, execution, lambda: 0),  # bounded not known
                await run_execution(threads, execution, None, lambda: True),  # cost not known
            )
        finally:
            threads.close()

    assert asyncio.run(main()) == (False, False)


def test_the_marked_fields_exist() -> None:
    for key in [*UNBOUNDED_READS, *UNBOUNDED_WITH]:
        owner, name = key.split(".")
        assert name in SCHEMA.get_type(owner).fields, key  # type: ignore[union-attr]
    for key, argument in UNBOUNDED_WITH.items():
        owner, name = key.split(".")
        assert argument in SCHEMA.get_type(owner).fields[name].args, key  # type: ignore[union-attr]


# -- over HTTP: papers with many authors, /healthz stays fast ---------------------------------

PAPERS, AUTHORS = 10, 20_000  # one bundle of 20,000 authors: 570 KB (the limit is 1 MiB)
#: Cost 20 each; before: every paper's whole author list read, counted and sorted per request.
AUTHOR_PAGE = "{ papers(first: 10) { nodes { authors(first: 1) { name } authorCount } } }"
#: Cost 20; every author's papers counted: never inline, health fast with the threads busy.
RELATED = "{ papers(first: 10) { nodes { relatedPapers(first: 1) { sharedAuthors } } } }"


@pytest.fixture(scope="module")
def many_authors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``pith-graph serve`` (memory, one worker) over 10 papers that share 20,000 authors,
    signed by one low-ranked pinned key."""
    root = tmp_path_factory.mktemp("many-authors")
    signer = SignerIdentity.from_seed(
        b"many-authors", key_id="m-key", signer_id="m.example", signer_type="mirror"
    )
    (root / "keys.json").write_text(json.dumps([{**signer.keyring_entry(), "signer_type": "mirror"}]))
    bundles = root / "bundles"
    bundles.mkdir()
    names = [f"Q{i} R{i}" for i in range(AUTHORS)]
    for index in range(PAPERS):
        spec = PaperSpec.example(
            f"2402.{index:05d}",
            title=f"Many {index}",
            authors=names,
            abstract_excerpt="x",
            primary_cat="cs.DS",
            submitted_at="2024-02-01T10:00:00Z",
            created_at="2026-07-01T00:00:00Z",
            built_at="2026-07-02T00:00:00Z",
        )
        (bundles / f"{index}.json").write_bytes(orjson.dumps(build_bundle(spec, signer)))
    args = [str(bundles), "--trusted-keys", str(root / "keys.json"), "--port", "0", "--workers", "1"]
    with serving(args) as url:  # one process: the queries and /healthz share its event loop
        yield url


def _check(query: str, data: dict[str, Any]) -> None:
    nodes = data["papers"]["nodes"]
    assert len(nodes) == PAPERS
    for node in nodes:
        if query == AUTHOR_PAGE:
            assert node == {"authors": [{"name": "Q0 R0"}], "authorCount": AUTHORS}
        else:
            assert node == {"relatedPapers": [{"sharedAuthors": AUTHORS}]}


@pytest.mark.parametrize("query", [AUTHOR_PAGE, RELATED], ids=["author-page", "related-papers"])
def test_health_stays_fast_while_clients_loop_cheap_queries_over_many_authors(
    many_authors: str, query: str
) -> None:
    done = threading.Event()
    answered: list[float] = []
    failures: list[str] = []

    def client() -> None:
        with httpx.Client(base_url=many_authors, timeout=120) as http:
            while not done.is_set():
                started = time.monotonic()
                body = http.post("/graphql", json={"query": query}).json()
                try:
                    _check(query, body["data"])
                except (AssertionError, KeyError, TypeError) as err:
                    failures.append(f"{err!r}: {str(body)[:200]}")
                    return
                answered.append(time.monotonic() - started)

    with httpx.Client(base_url=many_authors, timeout=120) as http:
        _check(query, http.post("/graphql", json={"query": query}).json()["data"])  # resolvers; plan next
        clients = [threading.Thread(target=client) for _ in range(2)]
        for thread in clients:
            thread.start()
        probes: list[tuple[float, int]] = []
        try:
            time.sleep(0.3)
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:
                started = time.monotonic()
                status = http.get("/healthz").status_code
                probes.append((time.monotonic() - started, status))
                time.sleep(0.1)
        finally:
            done.set()
            for thread in clients:
                thread.join()
    assert not failures, failures
    assert len(answered) >= 2, "the clients were not looping the query"
    slowest = max(seconds for seconds, _ in probes)
    print(f"{len(answered)} queries (slowest {max(answered):.2f} s); /healthz slowest {slowest:.3f} s")
    assert {status for _, status in probes} == {200}, probes
    assert slowest < 1.0, f"/healthz took {slowest:.2f} s while clients looped {query}"
