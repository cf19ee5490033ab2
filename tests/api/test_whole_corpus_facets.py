"""The facets of the whole corpus come from counts kept aside, not from every paper, and say
what counting every paper says.

Both readers answer ``Listing()`` (no filter, words or signer) from their own path: Neo4j
from degrees and index entries (``CORPUS_FACETS`` in ``api/reads/cypher_discovery.py``),
memory from counts made once. A filter that admits every paper (``submittedFrom: ""``) still
takes the general path, which counts paper by paper: the two must agree value for value and
in order, on a corpus with ties in every facet (at the cut of ``first`` too), papers
cross-listed in two categories of one archive, a year before 1000 and authors with equal
counts; and memory must agree with Neo4j.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apitest import loaded_neo4j, memory_reader_of, signed_jsonl
from conftest import plan_steps

from pith_graph.api.reads import cypher_discovery as cypher
from pith_graph.api.reads import memory_facets
from pith_graph.api.reads.discovery import FACETS, Facet, FacetCount, Listing
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.reads.records import PaperFilter
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing.signer import PaperSpec

WHOLE = Listing()
#: Every paper, through the general path (a filter the fast path does not take).
EVERY = Listing(PaperFilter(submitted_from=""))

# value -> papers; expanded in order, so paper i has the i-th value of each list.
#: 0999 ties 2023: years are ordered as numbers (999 first), on both backends alike.
_YEARS = {"2021": 9, "2022": 9, "2019": 6, "2020": 6, "2023": 3, "0999": 3}
_LICENSES = {"http://l/b": 11, "http://l/a": 11, "http://l/c": 7, "http://l/d": 7}
#: (primary, cross-lists): cs.LG with cs.AI and math.PR with math.CO are one archive twice.
_CATEGORIES = [
    ("cs.LG", ["cs.AI"]),
    ("math.PR", []),
    ("cs.AI", ["cs.LG", "cs.CV", "math.CO"]),
    ("hep-th", []),
    ("math.CO", ["math.PR"]),
    ("hep-th", ["cs.LG"]),
    ("q-bio.NC", ["math.PR", "stat.ML"]),
    ("stat.ML", ["cs.LG", "cs.AI"]),
]
_AUTHORS = ["Ann Lee", "bo Chen", "Zoë Smith", "Åsa Berg", "Carl Ng", "ann Leek", "Émile Roux", "Dai Wu"]


def _expanded(counts: dict[str, int]) -> list[str]:
    return [value for value, n in counts.items() for _ in range(n)]


def _specs() -> list[PaperSpec]:
    years, licenses = _expanded(_YEARS), _expanded(_LICENSES)
    assert len(years) == len(licenses)
    specs = []
    for i, year in enumerate(years):
        primary, cross = _CATEGORIES[i % len(_CATEGORIES)]
        authors = sorted({_AUTHORS[i % 4], _AUTHORS[4 + (i * 3) % 4], _AUTHORS[(i // 3) % 8]})
        specs.append(
            PaperSpec.example(
                f"2401.{30000 + i}",
                authors=authors,
                primary_cat=primary,
                cross_cats=cross,
                license=licenses[(i * 7) % len(licenses)],
                submitted_at=f"{year}-0{1 + i % 9}-15T12:00:00Z",
            )
        )
    return specs


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    return signed_jsonl(tmp_path_factory.mktemp("whole-corpus"), _specs(), seed=11)


@pytest.fixture(scope="module")
def memory(bundles: tuple[Path, Keyring]) -> MemoryReader:
    return memory_reader_of(bundles)


@pytest.fixture(scope="module")
def neo4j(request: pytest.FixtureRequest, bundles: tuple[Path, Keyring]) -> Iterator[Neo4jReader]:
    with loaded_neo4j(request, bundles, timeout=30) as reader:
        yield reader


def _firsts(reader: GraphReader) -> dict[Facet, list[int]]:
    """Per facet: 0, 1, 2, every cut that splits a tie, all the values and more."""
    ranked = reader.facet_counts(EVERY, FACETS, 100)
    found = {}
    for facet, counts in ranked.items():
        ties = [k for k in range(1, len(counts)) if counts[k - 1].count == counts[k].count]
        assert ties, f"the corpus has no tie in {facet}"
        found[facet] = sorted({0, 1, 2, *ties, len(counts), len(counts) + 3, 100})
    return found


def _check_fast_equals_general(reader: GraphReader) -> dict[tuple[Facet, int], list[FacetCount]]:
    assert reader.count_listing(EVERY) == reader.count_listing(WHOLE) == len(_specs())
    answers = {}
    for facet, firsts in _firsts(reader).items():
        for first in firsts:
            fast = reader.facet_counts(WHOLE, [facet], first)
            assert fast == reader.facet_counts(EVERY, [facet], first), (facet, first)
            answers[(facet, first)] = fast[facet]
    for first in (1, 3, 100):  # all five at once, as a frontend asks
        assert reader.facet_counts(WHOLE, FACETS, first) == reader.facet_counts(EVERY, FACETS, first)
    return answers


def test_the_corpus_has_what_the_fast_path_must_get_right(memory: MemoryReader) -> None:
    every = memory.facet_counts(EVERY, FACETS, 100)
    archives = {count.value: count.count for count in every["archives"]}
    categories = {count.value: count.count for count in every["categories"]}
    # Cross-listed in two cs categories, a paper counts once for cs: less than the degrees.
    assert archives["cs"] < sum(n for code, n in categories.items() if code.startswith("cs."))
    assert archives["math"] < categories["math.PR"] + categories["math.CO"]
    assert every["years"][-2:] == [FacetCount("999", 3), FacetCount("2023", 3)]
    assert len(every["authors"]) == len(_AUTHORS)


def test_memory_whole_corpus_facets_equal_the_general_path(memory: MemoryReader) -> None:
    _check_fast_equals_general(memory)


def test_memory_whole_corpus_facets_read_no_paper(
    memory: MemoryReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.facet_counts(WHOLE, FACETS, 10)  # the counts are made once

    def refused(listing: Listing) -> Any:
        raise AssertionError("the whole corpus's facets listed its papers")

    monkeypatch.setattr(memory, "_members", refused)
    assert [count.count for count in memory.facet_counts(WHOLE, ["years"], 2)["years"]] == [9, 9]
    assert memory.facet_counts(WHOLE, ["licenses"], -1) == {"licenses": []}


def test_memory_counts_values_beyond_those_kept_paper_by_paper(
    memory: MemoryReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_facets, "CORPUS_KEPT", 3)
    reader = MemoryReader(memory.G)
    kept = reader._corpus_facets()
    assert [len(ranked) for ranked, _ in kept.values()] == [3] * len(FACETS)
    assert not any(complete for _, complete in kept.values())
    _check_fast_equals_general(reader)


@pytest.mark.neo4j
def test_neo4j_whole_corpus_facets_equal_the_general_path_and_memory(
    neo4j: Neo4jReader, memory: MemoryReader
) -> None:
    assert _check_fast_equals_general(neo4j) == _check_fast_equals_general(memory)


@pytest.mark.neo4j
def test_neo4j_whole_corpus_facets_are_one_statement_that_scans_no_paper(
    neo4j: Neo4jReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    rows = neo4j._rows

    def counted(statement: str, **parameters: Any) -> Any:
        sent.append(statement)
        return rows(statement, **parameters)

    monkeypatch.setattr(neo4j, "_rows", counted)
    neo4j.facet_counts(WHOLE, ["authors", "years", "licenses", "archives", "categories"], 5)
    assert sent == [cypher.corpus_facets_statement(FACETS)]
    profile = neo4j.driver.execute_query("PROFILE " + sent[0], {"first": 5}).summary.profile
    operators = [(operator, details) for _, operator, details in plan_steps(profile)]
    scans = {details for operator, details in operators if "LabelScan" in operator or "AllNodes" in operator}
    assert scans == {"c:Category"}  # categories and archives; papers only through indexes
    assert {
        details.split(" WHERE")[0] for operator, details in operators if operator.startswith("NodeIndex")
    } >= {
        "RANGE INDEX p:Paper(submittedAt)",
        "RANGE INDEX p:Paper(license)",
        "RANGE INDEX a:Author(paperCount)",
    }


@pytest.mark.neo4j
def test_neo4j_counts_a_paper_without_a_license_as_the_general_path_does(
    neo4j: Neo4jReader, memory: MemoryReader
) -> None:
    """The schema requires a license, so no loader writes a paper without one; should a
    database hold some, both paths count them under ``None``, last among their ties."""
    licenses = [
        {"pith": data["pithNumber"], "license": data["license"]}
        for _, data in memory.G.nodes(data=True)
        if data["label"] == "Paper"
    ]
    gone = sorted(licenses, key=lambda row: row["pith"])[:7]
    unset = "UNWIND $rows AS row MATCH (p:Paper {pithNumber: row.pith}) SET p.license = row.license"
    neo4j.driver.execute_query(unset, {"rows": [{**row, "license": None} for row in gone]})
    try:
        for first in (1, 2, 3, 4, 5, 100):
            fast = neo4j.facet_counts(WHOLE, ["licenses"], first)
            assert fast == neo4j.facet_counts(EVERY, ["licenses"], first), first
        assert FacetCount("None", 7) in fast["licenses"]
    finally:
        neo4j.driver.execute_query(unset, {"rows": licenses})
    assert neo4j.facet_counts(WHOLE, ["licenses"], 100) == memory.facet_counts(WHOLE, ["licenses"], 100)


def test_memory_facets_of_an_empty_graph_are_empty() -> None:
    reader = MemoryReader(MemoryStore().graph)
    empty = {facet: [] for facet in FACETS}
    assert reader.facet_counts(WHOLE, FACETS, 10) == empty == reader.facet_counts(EVERY, FACETS, 10)


@pytest.mark.neo4j
def test_neo4j_facets_of_an_empty_database_are_empty(neo4j: Neo4jReader) -> None:
    """A database before its first load (``serve --backend neo4j`` answers it): each statement
    in a transaction that has deleted every node first, then rolled back."""
    general = cypher.facets_statement("all", frozenset({"from"}), FACETS)
    with neo4j.driver.session() as session, session.begin_transaction() as tx:
        tx.run("MATCH (n) DETACH DELETE n").consume()
        (whole,) = tx.run(cypher.corpus_facets_statement(FACETS), first=10).data()
        (every,) = tx.run(general, {"first": 10, "from": ""}).data()
        tx.rollback()
    assert whole == {facet: [] for facet in FACETS}
    assert every == {"years": [], "licenses": [], "authors": [], "combinations": []}
    assert neo4j.count_listing(WHOLE) == len(_specs())  # rolled back
