"""No N+1: a nested query costs a small, fixed number of Cypher statements, however many
papers it touches, all in one read transaction; a request of one statement runs it as an
auto-commit transaction. Statements and transactions are counted on the real driver the
reader uses."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TypeVar

import neo4j
import pytest
from apitest import (  # noqa: F401 (fixtures)
    corpus,
    memory_reader,
    neo4j_corpus,
    neo4j_reader,
    served,
)

from pith_graph.api.app import create_app
from pith_graph.api.bridge import BridgeRunner, run_bridged
from pith_graph.api.lanes import ThreadRunner
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.neo4j_session import SecondStatement
from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.reads.words import search_terms
from pith_graph.errors import StoreError, StoreErrorCode

pytestmark = pytest.mark.neo4j

T = TypeVar("T")


class CountingDriver:
    """The reader's real driver, counting the statements it is asked to run and the
    transactions they run in: one per ``execute_query``, one per ``begin_transaction``
    (explicit), one per ``run`` on a session (an auto-commit transaction of its own).
    ``fault``: the statement sent instead of each one asked (with its parameters and timeout)."""

    def __init__(self, driver: Any, fault: str | None = None) -> None:
        self.driver = driver
        self.fault = fault
        self.statements: list[str] = []
        self.transactions = 0
        self.autocommits = 0
        self.sessions = self.closed = 0  # asyncio sessions opened and closed

    def sent(self, query: Any) -> Any:
        """What goes to the server for ``query`` (counted)."""
        self.statements.append(getattr(query, "text", query))
        if self.fault is None or not isinstance(query, neo4j.Query):
            return query if self.fault is None else self.fault
        return neo4j.Query(self.fault, timeout=query.timeout)  # type: ignore[arg-type]

    def execute_query(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        self.transactions += 1
        return self.driver.execute_query(self.sent(query), *args, **kwargs)

    def session(self, **kwargs: Any) -> Any:
        return _Counting(self, self.driver.session(**kwargs), session=True)

    def close(self) -> None:
        self.driver.close()


class AsyncCountingDriver:
    """The same counting over the asyncio driver of bridged request readers (counted into
    ``counter``), also counting the sessions it opens and closes."""

    def __init__(self, counter: CountingDriver, driver: Any) -> None:
        self.counter = counter
        self.driver = driver

    def session(self, **kwargs: Any) -> Any:
        self.counter.sessions += 1
        return _AsyncCounting(self.counter, self.driver.session(**kwargs), session=True)

    async def close(self) -> None:
        await self.driver.close()


class _AsyncCounting:
    """An asyncio session or transaction that counts what goes through it."""

    def __init__(self, counter: CountingDriver, inner: Any, *, session: bool) -> None:
        self._counter = counter
        self._inner = inner
        self._session = session

    async def begin_transaction(self, **kwargs: Any) -> Any:
        self._counter.transactions += 1
        return _AsyncCounting(self._counter, await self._inner.begin_transaction(**kwargs), session=False)

    async def run(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        if self._session:
            self._counter.transactions += 1
            self._counter.autocommits += 1
        return await self._inner.run(self._counter.sent(query), *args, **kwargs)

    async def close(self) -> None:
        self._counter.closed += 1
        await self._inner.close()

    async def __aenter__(self) -> _AsyncCounting:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._counter.closed += 1
        await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Counting:
    """A session or transaction of the real driver that counts what goes through it."""

    def __init__(self, counter: CountingDriver, inner: Any, *, session: bool) -> None:
        self._counter = counter
        self._inner = inner
        self._session = session

    def begin_transaction(self, **kwargs: Any) -> Any:
        self._counter.transactions += 1
        return _Counting(self._counter, self._inner.begin_transaction(**kwargs), session=False)

    def run(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        if self._session:  # outside a transaction: an auto-commit one
            self._counter.transactions += 1
            self._counter.autocommits += 1
        return self._inner.run(self._counter.sent(query), *args, **kwargs)

    def __enter__(self) -> _Counting:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


NESTED = """
{
  papers(first: 50) {
    totalCount
    nodes {
      title
      authors(first: 10) { name coauthors(first: 5) { sharedPapers author { name } } }
      categories { code paperCount }
      primaryCategory { code }
      aliases { kind value }
      verification { signatures { signer { signerId } } }
    }
  }
}
"""


class Counted:
    """A served Neo4j reader whose statements and transactions are counted per request
    (``driver.autocommits``: how many of them were auto-commit, for the last request)."""

    def __init__(
        self,
        reader: Neo4jReader,
        *,
        fault: str | None = None,
        database: str | None = None,
        timeout: float = 30,
    ) -> None:
        self.driver = CountingDriver(reader.driver, fault)
        open_async = reader.open_async
        assert open_async is not None
        self.reader = Neo4jReader(
            self.driver,  # type: ignore[arg-type]
            database or reader.database,
            timeout=timeout,
            open_async=lambda: AsyncCountingDriver(self.driver, open_async()),  # type: ignore[arg-type,return-value]
        )

    def ask(self, api: Any, query: str) -> tuple[dict[str, Any], list[str], int]:
        """The data, and the statements and transactions this request ran."""
        body = self.post(api, query)
        assert "errors" not in body, body["errors"]
        return body["data"], list(self.driver.statements), self.driver.transactions

    def post(self, api: Any, query: str) -> dict[str, Any]:
        """The response body, counting this request's statements and transactions alone."""
        self.reset()
        body: dict[str, Any] = api.post(query)
        return body

    def reset(self) -> None:
        self.driver.statements.clear()
        self.driver.transactions = self.driver.autocommits = 0
        self.driver.sessions = self.driver.closed = 0

    @contextmanager
    def request(self, bridged: bool = False) -> Iterator[Neo4jReader]:
        """A request's reader (closed after the block), counting from zero. ``bridged``: use
        it inside :meth:`run`."""
        self.reset()
        request = self.reader.for_request(bridged=bridged)
        try:
            yield request
        finally:
            request.close()

    def run(self, fn: Callable[[], T], bridged: bool) -> T:
        """``fn()``: as it is, or bridged onto an event loop of its own (then the asyncio
        driver it opened is closed on that loop)."""
        if not bridged:
            return fn()

        async def bridge() -> T:
            try:
                return await run_bridged(fn)
            finally:
                await self.reader.aclose()

        return asyncio.run(bridge())

    def counts(self) -> tuple[int, int, int]:
        """Statements, transactions and auto-commit ones since the last reset."""
        driver = self.driver
        return len(driver.statements), driver.transactions, driver.autocommits


@pytest.fixture(params=["bridged", "lanes"])
def runner_kind(request: pytest.FixtureRequest) -> str:
    """How requests read: bridged onto the event loop (what serve does) or on lanes."""
    kind: str = request.param
    return kind


def _serve(counted: Counted, kind: str, limits: RequestLimits | None = None) -> Any:
    if kind == "bridged":
        ping = ThreadRunner(1)
        app = create_app(
            counted.reader, limits=limits, run=BridgeRunner(), ping_run=ping, on_shutdown=ping.close
        )
    else:
        runner = ThreadRunner(4)
        app = create_app(counted.reader, limits=limits, run=runner, on_shutdown=runner.close)
    return served(app, "neo4j", counted.reader)


def test_nested_query_runs_a_fixed_number_of_statements_in_one_transaction(
    neo4j_reader: Neo4jReader,
    runner_kind: str,
) -> None:
    counted = Counted(neo4j_reader)
    with _serve(counted, runner_kind) as api:
        data, resolved, transactions = counted.ask(api, NESTED)  # the first time: the resolvers
        again, planned, planned_transactions = counted.ask(api, NESTED)  # then: its plan
    assert again == data
    papers = data["papers"]["nodes"]
    assert len(papers) == 50
    authors = {a["name"] for p in papers for a in p["authors"]}
    assert len(authors) > 50  # the query really touched many authors
    # Resolvers: list, count, authors, coauthors, categories, aliases, signatures: one each.
    assert len(resolved) == 7, resolved
    assert len(set(resolved)) == 7
    # The plan fetches the authors and categories with the list: list, count, coauthors,
    # aliases, signatures.
    assert len(planned) == 5, planned
    assert transactions == planned_transactions == 1  # a request's reads share one transaction
    assert counted.driver.autocommits == 0  # an explicit one: several statements


#: A paper with its authors and categories: one statement, which fetches all three.
PAPER = '{ paper(id: "arXiv:2605.90002") { pithNumber title authors { name } categories { code } } }'


def test_a_paper_with_authors_and_categories_is_one_statement(
    neo4j_reader: Neo4jReader, runner_kind: str
) -> None:
    counted = Counted(neo4j_reader)
    with _serve(counted, runner_kind) as api:
        counted.ask(api, PAPER)  # the resolvers: in an explicit transaction, as before
        assert counted.driver.autocommits == 0
        data, statements, transactions = counted.ask(api, PAPER)  # the plan
    assert data["paper"]["authors"] and data["paper"]["categories"]
    assert (len(statements), transactions) == (1, 1), statements
    assert counted.driver.autocommits == 1  # no BEGIN, no COMMIT: one round trip
    assert "abstractExcerpt" not in str(statements)  # fetches only what is selected
    assert "() }" not in statements[0]  # no paper counts (COUNT { (x)-[:R]->() }) when none is shown


class CountingRunner(ThreadRunner):
    """The API's lanes, counting what is sent to their threads (each a thread hop)."""

    def __init__(self, threads: int) -> None:
        super().__init__(threads)
        self.sent: list[str] = []

    async def acquire(self) -> Any:
        lane = await super().acquire()
        if not hasattr(lane, "counted"):
            submit = lane.submit

            def counting(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
                self.sent.append(getattr(fn, "__qualname__", repr(fn)))
                return submit(fn, *args, **kwargs)

            lane.submit = counting  # type: ignore[method-assign]
            lane.counted = True  # type: ignore[attr-defined]
        return lane


@pytest.mark.parametrize("query", [PAPER, NESTED], ids=["auto-commit", "explicit"])
def test_a_planned_request_goes_to_its_lane_once(neo4j_reader: Neo4jReader, query: str) -> None:
    """The plan runs on the request's lane and ends its transaction there: freeing the lane
    needs no second trip (the resolvers close theirs with one)."""
    counted = Counted(neo4j_reader)
    runner = CountingRunner(2)
    app = create_app(counted.reader, run=runner, on_shutdown=runner.close)
    with served(app, "neo4j", counted.reader) as api:
        # A request that reads nothing, from its plan (the second time): one trip. Once it
        # is answered, the event loop has run what the request before it queued.
        settle = "{ __typename }"
        api.data(settle)
        counted.ask(api, query)  # the resolvers
        api.data(settle)
        assert runner.sent[-2:] == ["Neo4jReader.close", "_execute"], runner.sent
        runner.sent.clear()
        counted.ask(api, query)  # the plan
        assert counted.counts()[1] == 1  # one transaction
        api.data(settle)
        assert runner.sent == ["_execute", "_execute"]  # the plan's one trip, then the next request's


def test_aliases_of_the_same_field_share_a_statement(neo4j_reader: Neo4jReader, runner_kind: str) -> None:
    query = (
        "{ " + " ".join(f'p{i}: paper(id: "arXiv:2605.{90001 + i}") {{ title }}' for i in range(20)) + " }"
    )
    counted = Counted(neo4j_reader)
    with _serve(counted, runner_kind) as api:
        for _ in range(2):  # resolvers, then plan
            data, statements, transactions = counted.ask(api, query)
            assert sum(1 for paper in data.values() if paper is not None) == 5  # the hand-made papers
            assert len(statements) == 1  # the 20 identifiers' papers, in one statement
            assert transactions == 1
    assert counted.driver.autocommits == 1  # the plan's: the statement alone


# -- a request's one transaction, whatever its reads ------------------------------------------

#: A word many titles share, with equal scores: the first statement of a relevance search
#: fetches too few hits to rank the page, and the reader runs it again with a bigger fetch.
SEARCH_AGAIN = '{ search(text: "via", first: 2) { nodes { title } } }'


def test_a_call_of_several_statements_runs_them_in_one_transaction(
    neo4j_reader: Neo4jReader, runner_kind: str
) -> None:
    counted = Counted(neo4j_reader)
    with _serve(counted, runner_kind) as api:
        for _ in range(2):  # search has no plan: the resolvers, both times
            counted.ask(api, SEARCH_AGAIN)
            assert counted.counts() == (2, 1, 0), "one call, two statements, one explicit transaction"


#: Two letters no author's name starts a word with: typeahead walks the most prolific
#: authors, finds too few, and asks the full-text index.
TYPED_RARELY = '{ authors(prefix: "zz", first: 5) { name } }'


def test_typeahead_that_walks_then_asks_the_index_runs_in_one_transaction(
    neo4j_reader: Neo4jReader,
    runner_kind: str,
) -> None:
    counted = Counted(neo4j_reader)
    with _serve(counted, runner_kind) as api:
        for _ in range(2):  # the resolvers, then the plan
            data, statements, _transactions = counted.ask(api, TYPED_RARELY)
            assert data == {"authors": []}
            assert "paperCount DESC" in statements[0] and "fulltext" in statements[1], statements
            assert counted.counts() == (2, 1, 0), "one call, two statements, one explicit transaction"


def test_bridged_requests_close_every_session(neo4j_reader: Neo4jReader) -> None:
    """Whatever a bridged request read (resolvers or plan, one statement or several, a
    failure), its session is closed once it is answered: none is left holding a connection."""
    counted = Counted(neo4j_reader)
    opened = 0
    with _serve(counted, "bridged") as api:
        for query in (
            NESTED,
            NESTED,
            PAPER,
            PAPER,
            SEARCH_AGAIN,
            TYPED_RARELY,
            '{ paper(id: "arXiv:2605.99999") { title } }',
        ):
            counted.post(api, query)
            # The resolvers' transaction is committed after the answer: give it a moment.
            deadline = time.monotonic() + 10
            while counted.driver.closed < counted.driver.sessions and time.monotonic() < deadline:
                time.sleep(0.01)
            assert counted.driver.closed == counted.driver.sessions > 0, query
            opened += counted.driver.sessions
    assert opened >= 6


def test_a_sole_call_never_opens_a_second_transaction(neo4j_reader: Neo4jReader, runner_kind: str) -> None:
    counted = Counted(neo4j_reader)
    bridged = runner_kind == "bridged"
    listing = Listing(text=search_terms("via"))

    def scenario() -> list[tuple[int, int, int]]:
        found = []
        # A read that may run several statements is not run alone: one explicit transaction.
        with counted.request(bridged) as request, request.sole_statement("search_papers"):
            request.search_papers(listing, "relevance", 2, None)
        found.append(counted.counts())
        # After a statement run alone, another one is refused rather than run in a second one.
        with counted.request(bridged) as request:
            with request.sole_statement("all_categories"):
                assert request.all_categories()
            with pytest.raises(SecondStatement):
                request.count_papers(PaperFilter())
        found.append(counted.counts())
        # After earlier statements, a sole call joins their transaction.
        with counted.request(bridged) as request:
            request.count_papers(PaperFilter())
            with request.sole_statement("all_categories"):
                request.all_categories()
            request.count_papers(PaperFilter())
        found.append(counted.counts())
        return found

    assert counted.run(scenario, bridged) == [(2, 1, 0), (1, 1, 1), (3, 1, 0)]
    if bridged:  # the last request's session (each request counts from zero) was closed
        assert counted.driver.sessions == counted.driver.closed == 1


FAULTS = [
    pytest.param(
        # (the MATCH after the sleep fails the statement itself once the server stops it)
        {"fault": "CALL apoc.util.sleep(20000) MATCH (p:Paper) RETURN count(p) AS n", "timeout": 0.5},
        StoreErrorCode.TIMEOUT,
        "TIMEOUT",
        id="statement-timeout",
    ),
    pytest.param(
        {"fault": "RETURN 1 / 0 AS n"},
        StoreErrorCode.WRITE_FAILED,
        "INTERNAL_SERVER_ERROR",
        id="server-error",
    ),
    pytest.param(
        {"database": "nosuchdatabase"}, StoreErrorCode.DATABASE, "SERVICE_UNAVAILABLE", id="no-database"
    ),
]


@pytest.mark.parametrize(("fault", "store_code", "code"), FAULTS)
def test_a_failing_statement_alone_fails_as_in_a_transaction(
    neo4j_reader: Neo4jReader, runner_kind: str, fault: dict[str, Any], store_code: StoreErrorCode, code: str
) -> None:
    counted = Counted(neo4j_reader, **fault)
    bridged = runner_kind == "bridged"

    def scenario() -> list[tuple[StoreErrorCode, str]]:
        found = []
        for alone in (False, True):
            with (
                counted.request(bridged) as request,
                request.sole_statement("all_categories") if alone else nullcontext(),
                pytest.raises(StoreError) as raised,
            ):
                request.all_categories()
            found.append((raised.value.code, raised.value.message))
        return found

    found = counted.run(scenario, bridged)
    assert found[0] == found[1]
    if bridged:  # the failed request's session was closed too
        assert counted.driver.sessions == counted.driver.closed == 1
    assert found[0][0] is store_code
    # The plan's statement fails alone and it gives way; the resolvers' error is the answer.
    with _serve(counted, runner_kind, RequestLimits(timeout_seconds=60)) as api:
        resolved = counted.post(api, PAPER)  # compiles the plan
        assert counted.driver.autocommits == 0
        planned = counted.post(api, PAPER)
        assert counted.driver.autocommits == 1
    assert planned == resolved
    assert [error["extensions"]["code"] for error in planned["errors"]] == [code]
