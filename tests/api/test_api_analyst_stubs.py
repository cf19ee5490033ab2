"""An analyst's stubs beside the graph in Neo4j (README "What lands in Neo4j"): a ``(:Paper)``
without ``pithNumber`` and an ``(:Author)`` without ``nameKey`` are not the graph's, and the
API over Neo4j answers as the memory backend does over the same samples.

Before 0.8.5 a listing that reached such a stub (a scan of ``submittedAt``, or a title
matching in a full-text index) answered SERVICE_UNAVAILABLE (a paper it could not identify,
taken for a torn read), ``totalCount`` counted it and the corpus's facets took their values
from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from apitest import Api, loaded_neo4j, memory_reader_of, served

from pith_graph.api.app import create_app
from pith_graph.api.bridge import BridgeRunner
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.keyring import Keyring

pytestmark = pytest.mark.neo4j

#: Stubs of cited works, each with what the graph's indexes read: a submittedAt (the newest
#: first scan), titles and an abstract whose words the samples' also hold (both full-text
#: indexes), a license of its own or none, a year no sample has; and a prolific author
#: stub that typeahead's full-text index and the paperCount index both find.
STUBS = [
    "CREATE (:Paper {title: 'Training attention stub', abstractExcerpt: 'deep learning models',"
    " submittedAt: '2030-01-01T00:00:00Z', submittedYear: 2030, license: 'x'})",
    "CREATE (:Paper {title: 'Performance of DNN training: a stub', submittedAt: '2021-05-01T00:00:00Z',"
    " submittedYear: 2021})",
    "CREATE (:Paper {title: 'Model stub without a date'})",
    "CREATE (:Author {name: 'Amar Stub', nameFolded: 'amar stub', paperCount: 99})",
]

EDGES = "edges { cursor node { pithNumber title license } } pageInfo { hasNextPage endCursor }"
PAGE = f"totalCount {EDGES}"
#: A search's cursors and scores are left out: Lucene's statistics (how many documents hold
#: a word, their mean length) count the stubs too, so the scores of the graph's papers differ.
HITS = "totalCount edges { node { pithNumber title license } } pageInfo { hasNextPage }"
FACETS = (
    "facets(first: 50) { years { value count } categories { value count } archives { value count }"
    " licenses { value count } authors { value count } }"
)
#: The whole corpus's facets that take only the graph's papers (years and licenses: the last test).
OWN_FACETS = (
    "facets(first: 50) { categories { value count } archives { value count } authors { value count } }"
)
QUERIES = [
    f"{{ papers(first: 5) {{ {EDGES} {OWN_FACETS} }} }}",  # its count, years, licenses: the last test
    f"{{ papers(first: 1) {{ {EDGES} }} }}",
    f'{{ papers(first: 5, filter: {{title: "training"}}) {{ {PAGE} {FACETS} }} }}',
    f'{{ papers(first: 5, filter: {{title: "stub"}}) {{ {PAGE} {FACETS} }} }}',
    f'{{ papers(first: 5, filter: {{submittedFrom: "2020-01-01T00:00:00Z"}}) {{ {PAGE} {FACETS} }} }}',
    f'{{ papers(first: 5, filter: {{license: "x"}}) {{ {PAGE} }} }}',
    f'{{ papers(first: 5, filter: {{category: "cs.LG"}}) {{ {PAGE} {FACETS} }} }}',
    f'{{ search(text: "training") {{ {HITS} {FACETS} }} }}',
    f'{{ search(text: "training", orderBy: NEWEST) {{ {HITS} {FACETS} }} }}',
    f'{{ search(text: "training", first: 1) {{ {HITS} }} }}',
    f'{{ search(text: "attention") {{ {HITS} {FACETS} }} }}',
    f'{{ search(text: "deep learning", filter: {{title: "model"}}) {{ {HITS} }} }}',
    '{ authors(prefix: "amar") { nameKey name paperCount } }',
    '{ authors(prefix: "a", first: 3) { nameKey name paperCount } }',
]


@pytest.fixture(scope="module")
def samples() -> tuple[Path, Keyring]:
    return SAMPLES, resolve_keyring()


@pytest.fixture(scope="module")
def both(request: pytest.FixtureRequest, samples: tuple[Path, Keyring]) -> Iterator[tuple[Api, Api]]:
    """The samples served by the memory backend, and by Neo4j with the analyst's stubs."""
    memory = memory_reader_of(samples)
    with loaded_neo4j(request, samples, timeout=30) as neo4j:
        with neo4j.driver.session(database=neo4j.database) as session:
            for statement in STUBS:
                session.run(statement).consume()
        neo4j_app = create_app(neo4j, keyring=samples[1], run=BridgeRunner(), backend="neo4j")
        with (
            served(create_app(memory, keyring=samples[1]), "memory", memory) as on_memory,
            served(neo4j_app, "neo4j", neo4j) as on_neo4j,
        ):
            yield on_memory, on_neo4j


@pytest.mark.parametrize("query", QUERIES)
def test_neo4j_answers_as_memory_beside_an_analysts_stubs(both: tuple[Api, Api], query: str) -> None:
    on_memory, on_neo4j = both
    expected = on_memory.post(query)
    assert "errors" not in expected, expected
    assert on_neo4j.post(query) == expected


def test_the_samples_answer_something(both: tuple[Api, Api]) -> None:
    """The comparisons above are not between two empty answers."""
    on_memory, _ = both
    assert on_memory.data("{ papers { totalCount } }") == {"papers": {"totalCount": 3}}
    assert on_memory.data('{ search(text: "training") { totalCount } }')["search"]["totalCount"] >= 2
    assert on_memory.data('{ authors(prefix: "amar") { name } }') == {
        "authors": [{"name": "Amar Phanishayee"}]
    }


def test_the_count_and_the_years_and_licenses_of_all_papers_are_the_labels_stubs_included(
    both: tuple[Api, Api],
) -> None:
    """What takes a stub: every node labelled Paper, read from Neo4j's count store in one read,
    and the whole corpus's years and licenses, read from the label's indexes (checking each
    paper's key: 150–530 ms more at 2.5M papers, the years facet 3.5 times as long)."""
    on_memory, on_neo4j = both
    query = "{ papers { totalCount facets { years { value count } licenses { value count } } } }"
    memory, neo4j = on_memory.data(query)["papers"], on_neo4j.data(query)["papers"]
    assert neo4j["totalCount"] == memory["totalCount"] + 3  # the three stub papers
    years = {row["value"]: row["count"] for row in neo4j["facets"]["years"]}
    assert years == {row["value"]: row["count"] for row in memory["facets"]["years"]} | {"2030": 1, "2021": 1}
    assert {"value": "x", "count": 1} in neo4j["facets"]["licenses"]
