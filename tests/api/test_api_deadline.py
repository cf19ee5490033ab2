"""The time limit inside one reader call on the memory backend (``api.reads.deadline``).

The reviewer's shape: many papers that all list the same authors, so that ``relatedPapers``
over a batch of them is ids × authors × their papers in one reader call. Before, nothing
checked the time inside that call: a request answered ``TIMEOUT`` kept its execution thread
for the whole call (300 such papers of 3,000 authors: four requests denied every threaded
query for 110–210 s), and the resolvers' answer came only at the hard deadline (limit + 5 s).
Memory backend only: Neo4j bounds each statement with its transaction timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from apitest import memory_reader_of, served, signed_jsonl

from pith_graph.api.app import create_app
from pith_graph.api.limits import RequestLimits, out_of_time
from pith_graph.api.loops import LoopThreads
from pith_graph.api.reads.deadline import CURRENT, Deadline
from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.errors import QueryTimeout
from pith_graph.loader.identifiers import author_name_key
from pith_graph.loader.keyring import Keyring
from pith_graph.testing.signer import PaperSpec

#: Papers, each listing the same authors: relatedPapers over all of them counts PAPERS² ×
#: AUTHORS (40 million) and makes PAPERS² related papers, seconds of CPU (15 s on a loaded
#: 2-core machine) for a corpus loaded in a few.
PAPERS = 1000
AUTHORS = 40
LIMIT = 1.0
#: Seconds an answer may come past the limit: a shared 2-core machine running the rest of the
#: suite beside it (2.0 failed 4 runs in 15 at a load of ~7: answers up to 4.0 s, the time-out
#: raised up to 0.7 s past the deadline, then unwound). Still short of what it guards against:
#: an answer at the hard deadline (the limit + ``HARD_DEADLINE_MARGIN``, 6 s), a thread busy 15 s.
SLACK = 4.0

#: The reviewer's request (papersById has no plan: the resolvers answer it), and the same
#: batch as a page of papers (planned).
BY_IDS = "query($ids:[String!]!){ papersById(ids:$ids){ relatedPapers(first:1){ sharedAuthors } } }"
PAGE = "{ papers(first: %d) { nodes { relatedPapers(first: %d) { sharedAuthors paper { title } } } } }"
PROBE = '{ search(text: "paper", first: 1) { totalCount } }'


def _spec(index: int) -> PaperSpec:
    return PaperSpec.example(
        f"2601.{10000 + index:05d}",
        title=f"Paper number {index}",
        authors=[f"Person {a:04d}" for a in range(AUTHORS)],
        submitted_at=f"2026-01-{1 + index // 40:02d}T10:{index % 40:02d}:00Z",  # the later, the newer
    )


IDS = [f"arXiv:{_spec(index).arxiv_id}" for index in range(PAPERS)]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[MemoryReader, Keyring]:
    bundles = signed_jsonl(tmp_path_factory.mktemp("shared"), [_spec(i) for i in range(PAPERS)], seed=21)
    reader = memory_reader_of(bundles)
    reader.warm()  # as serve does: no index is built inside a request
    return reader, bundles[1]


@pytest.fixture
def served_shared(shared: tuple[MemoryReader, Keyring]) -> Iterator[tuple[httpx.Client, LoopThreads]]:
    """The corpus served as ``serve`` serves the memory backend (one execution thread)."""
    reader, keyring = shared
    threads = LoopThreads(1)
    limits = RequestLimits(timeout_seconds=LIMIT, max_batch_ids=PAPERS, max_page_size=PAPERS)
    app = create_app(reader, keyring=keyring, limits=limits, threads=threads, on_shutdown=threads.close)
    with served(app, "memory", reader) as api:
        yield api.client, threads


def _post(client: httpx.Client, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    response = client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_long_read_stops_at_the_time_limit(served_shared: tuple[httpx.Client, LoopThreads]) -> None:
    """The reviewer's request, then the same batch as a page, sent twice (the resolvers
    answer it, then the plan compiled from it): each is answered TIMEOUT at the limit, and
    its execution thread is free soon after: a search sent after it answers. Before, the
    resolvers answered at the hard deadline (6 s) and the plan's thread stayed busy."""
    client, threads = served_shared
    expected = out_of_time(RequestLimits(timeout_seconds=LIMIT))
    requests = [
        ("papersById", BY_IDS, {"ids": IDS}),
        ("page, resolvers", PAGE % (PAPERS, 1), None),
        ("page, plan", PAGE % (PAPERS, 1), None),
    ]
    for execution, query, variables in requests:
        started = time.monotonic()
        body = _post(client, query, variables)
        answered = time.monotonic() - started
        assert body["data"] is None, execution
        assert [(e["message"], e["extensions"]["code"]) for e in body["errors"]] == [
            (expected.message, "TIMEOUT")
        ], execution
        assert answered < LIMIT + SLACK, f"{execution}: TIMEOUT after {answered:.1f} s"
        probe = _post(client, PROBE)
        free = time.monotonic() - started
        assert probe == {"data": {"search": {"totalCount": PAPERS}}}, execution
        assert free < LIMIT + SLACK, f"{execution}: the thread was busy for {free:.1f} s"
        assert threads.busy() == [0]


def test_answers_within_the_limit_are_unchanged(shared: tuple[MemoryReader, Keyring]) -> None:
    """A batch that fits in the time: the same answer from both executions as before (every
    related paper shares all the authors; the newest first)."""
    reader, keyring = shared
    threads = LoopThreads(1)
    limits = RequestLimits(timeout_seconds=60)
    app = create_app(reader, keyring=keyring, limits=limits, threads=threads, on_shutdown=threads.close)
    with served(app, "memory", reader) as api:
        answers = [api.data(PAGE % (3, 3))["papers"]["nodes"] for _ in range(2)]  # resolvers, plan
        wider = BY_IDS.replace("(first:1){ sharedAuthors }", "(first:3){ sharedAuthors paper { title } }")
        by_ids = api.data(wider, ids=IDS[:-4:-1])
    assert answers[0] == answers[1] == by_ids["papersById"]
    for index, related in enumerate(answers[0]):  # the newest three papers, newest first
        others = [PAPERS - 1 - other for other in range(4) if other != index][:3]
        assert related["relatedPapers"] == [
            {"sharedAuthors": AUTHORS, "paper": {"title": f"Paper number {other}"}} for other in others
        ]


def _reads(reader: MemoryReader) -> dict[str, Callable[[], object]]:
    """Each memory read whose work grows with the data, over the corpus (tens of thousands
    of steps each)."""
    piths = [
        row.pith_number
        for rows in reader.papers_by_identifiers([("arxiv", "2601.10000")]).values()
        for row in rows
    ]
    first, second = author_name_key("Person 0000"), author_name_key("Person 0001")
    everyone = [author_name_key(f"Person {a:04d}") for a in range(AUTHORS)]
    return {
        "related_papers": lambda: reader.related_papers(piths, 3),
        "coauthors": lambda: reader.coauthors([first], 3),
        "author_categories": lambda: reader.author_categories(everyone[:8]),
        "collaboration_path": lambda: reader.collaboration_path(first, second, 2),
        "facet_counts": lambda: reader.facet_counts(Listing(text=("paper",)), ["authors"], 3),
    }


@pytest.mark.parametrize(
    "name", ["related_papers", "coauthors", "author_categories", "collaboration_path", "facet_counts"]
)
def test_memory_reads_check_the_deadline(shared: tuple[MemoryReader, Keyring], name: str) -> None:
    """Past the deadline, the read stops with the request's error; before it, it answers as
    it does with no deadline (outside any request)."""
    reader, _ = shared
    read = _reads(reader)[name]
    unbounded = read()
    late = QueryTimeout("late")
    token = CURRENT.set(Deadline(time.monotonic() - 1, lambda: late))
    try:
        with pytest.raises(QueryTimeout) as raised:
            read()
        assert raised.value is late
    finally:
        CURRENT.reset(token)
    token = CURRENT.set(Deadline(time.monotonic() + 600, lambda: late))
    try:
        assert read() == unbounded
    finally:
        CURRENT.reset(token)
