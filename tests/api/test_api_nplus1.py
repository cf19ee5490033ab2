"""No N+1: a nested query costs a small, fixed number of Cypher statements, however many
papers it touches. Statements are counted on the real driver the reader uses."""

from __future__ import annotations

from typing import Any

import pytest
from apitest import (  # noqa: F401 (fixtures)
    corpus,
    memory_reader,
    neo4j_corpus,
    neo4j_reader,
    served,
)

from pith_graph.api.app import create_app
from pith_graph.api.context import ThreadRunner
from pith_graph.api.reads.neo4j import Neo4jReader

pytestmark = pytest.mark.neo4j


class CountingDriver:
    """The reader's real driver, counting the statements it is asked to run and the
    transactions they run in (one per ``execute_query``, one per ``begin_transaction``)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.statements: list[str] = []
        self.transactions = 0

    def execute_query(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        self.statements.append(getattr(query, "text", query))
        self.transactions += 1
        return self.driver.execute_query(query, *args, **kwargs)

    def session(self, **kwargs: Any) -> Any:
        return _Counting(self, self.driver.session(**kwargs))

    def close(self) -> None:
        self.driver.close()


class _Counting:
    """A session or transaction of the real driver that counts what goes through it."""

    def __init__(self, counter: CountingDriver, inner: Any) -> None:
        self._counter = counter
        self._inner = inner

    def begin_transaction(self, **kwargs: Any) -> Any:
        self._counter.transactions += 1
        return _Counting(self._counter, self._inner.begin_transaction(**kwargs))

    def run(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        self._counter.statements.append(getattr(query, "text", query))
        return self._inner.run(query, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


NESTED = """
{
  papers(first: 50) {
    totalCount
    nodes {
      title
      authors { name coauthors(first: 5) { sharedPapers author { name } } }
      categories { code paperCount }
      primaryCategory { code }
      aliases { kind value }
      verification { signatures { signer { signerId } } }
    }
  }
}
"""


def test_nested_query_runs_a_fixed_number_of_statements(neo4j_reader: Neo4jReader) -> None:
    counting = CountingDriver(neo4j_reader.driver)
    reader = Neo4jReader(counting, neo4j_reader.database, timeout=30)  # type: ignore[arg-type]
    runner = ThreadRunner(4)
    with served(create_app(reader, run=runner, on_shutdown=runner.close), "neo4j", reader) as api:
        data = api.data(NESTED)
    papers = data["papers"]["nodes"]
    assert len(papers) == 50
    authors = {a["name"] for p in papers for a in p["authors"]}
    assert len(authors) > 50  # the query really touched many authors
    # list, count, authors, coauthors, categories, aliases, signatures: one statement each.
    assert len(counting.statements) == 7, counting.statements
    assert len(set(counting.statements)) == 7
    assert counting.transactions == 1  # the request's reads share one read transaction


def test_aliases_of_the_same_field_share_a_statement(neo4j_reader: Neo4jReader) -> None:
    counting = CountingDriver(neo4j_reader.driver)
    reader = Neo4jReader(counting, neo4j_reader.database, timeout=30)  # type: ignore[arg-type]
    query = (
        "{ " + " ".join(f'p{i}: paper(id: "arXiv:2605.{90001 + i}") {{ title }}' for i in range(20)) + " }"
    )
    runner = ThreadRunner(4)
    with served(create_app(reader, run=runner, on_shutdown=runner.close), "neo4j", reader) as api:
        data = api.data(query)
    assert sum(1 for paper in data.values() if paper is not None) == 5  # the hand-made papers
    assert len(counting.statements) == 1  # the 20 identifiers' papers, in one statement
    assert counting.transactions == 1
