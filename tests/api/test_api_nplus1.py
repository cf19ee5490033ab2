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


class Counted:
    """A served Neo4j reader whose statements and transactions are counted per request."""

    def __init__(self, reader: Neo4jReader) -> None:
        self.driver = CountingDriver(reader.driver)
        self.reader = Neo4jReader(self.driver, reader.database, timeout=30)  # type: ignore[arg-type]

    def ask(self, api: Any, query: str) -> tuple[dict[str, Any], list[str], int]:
        """The data, and the statements and transactions this request ran."""
        self.driver.statements.clear()
        self.driver.transactions = 0
        data = api.data(query)
        return data, list(self.driver.statements), self.driver.transactions


def _serve(counted: Counted) -> Any:
    runner = ThreadRunner(4)
    app = create_app(counted.reader, run=runner, on_shutdown=runner.close)
    return served(app, "neo4j", counted.reader)


def test_nested_query_runs_a_fixed_number_of_statements_in_one_transaction(
    neo4j_reader: Neo4jReader,
) -> None:
    counted = Counted(neo4j_reader)
    with _serve(counted) as api:
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


def test_a_paper_with_authors_and_categories_is_one_statement(neo4j_reader: Neo4jReader) -> None:
    query = '{ paper(id: "arXiv:2605.90002") { pithNumber title authors { name } categories { code } } }'
    counted = Counted(neo4j_reader)
    with _serve(counted) as api:
        counted.ask(api, query)
        data, statements, transactions = counted.ask(api, query)
    assert data["paper"]["authors"] and data["paper"]["categories"]
    assert (len(statements), transactions) == (1, 1), statements
    assert "abstractExcerpt" not in str(statements)  # fetches only what is selected
    assert "COUNT" not in statements[0]  # no paper counts when none is shown


def test_aliases_of_the_same_field_share_a_statement(neo4j_reader: Neo4jReader) -> None:
    query = (
        "{ " + " ".join(f'p{i}: paper(id: "arXiv:2605.{90001 + i}") {{ title }}' for i in range(20)) + " }"
    )
    counted = Counted(neo4j_reader)
    with _serve(counted) as api:
        for _ in range(2):  # resolvers, then plan
            data, statements, transactions = counted.ask(api, query)
            assert sum(1 for paper in data.values() if paper is not None) == 5  # the hand-made papers
            assert len(statements) == 1  # the 20 identifiers' papers, in one statement
            assert transactions == 1
