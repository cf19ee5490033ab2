"""The read seam: every GraphReader method answers identically from networkx and Neo4j.

The same behaviour suite runs against both readers over the whole corpus; the in-memory
reader is also checked on its own where Neo4j is not needed (cursors across loads)."""

from __future__ import annotations

from itertools import islice
from typing import Any

import networkx as nx
import pytest
from apitest import (  # noqa: F401 (fixtures)
    Corpus,
    corpus,
    memory_reader,
    neo4j_corpus,
    neo4j_reader,
)
from test_api_nplus1 import Counted

from pith_graph.api.reads.discovery import FACETS, Listing, SearchPosition
from pith_graph.api.reads.folding import typed_keys
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import ONE_STATEMENT, Neo4jReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.reads.records import (
    CORE_PAPER_PROPERTIES,
    EVERYTHING,
    PaperFilter,
    PaperKey,
    PaperSelection,
    paper_key,
)
from pith_graph.api.reads.words import search_terms
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.schema.rows import snake_case


def _keys(G: nx.DiGraph, label: str, attribute: str, limit: int = 120) -> list[str]:
    found = sorted(d[attribute] for _, d in G.nodes(data=True) if d["label"] == label)
    step = max(1, len(found) // limit)
    return [*found[::step], "no such key"]


def _key_ids(G: nx.DiGraph) -> list[str]:
    """The key ids the graph's signers used, sorted."""
    return sorted({key for _, d in G.nodes(data=True) if d["label"] == "Signer" for key in d["keyIds"]})


def test_unpinned_and_used_key_ids_are_of_the_signers_keys(memory_reader: MemoryReader) -> None:
    """What ``serve`` warns of (tests/api/test_api_serve.py); the Neo4j reader answers alike
    (test_every_read_answers_alike)."""
    used = _key_ids(memory_reader.G)
    assert len(used) >= 2
    assert memory_reader.unpinned_key_ids(frozenset(), 10) == used
    assert memory_reader.unpinned_key_ids(frozenset(), 1) == used[:1]
    assert memory_reader.unpinned_key_ids(frozenset(used[1:]), 10) == used[:1]
    assert memory_reader.unpinned_key_ids(frozenset(used), 10) == []
    assert memory_reader.used_key_ids(frozenset([*used[1:], "no such key"])) == used[1:]
    assert memory_reader.used_key_ids(frozenset()) == []


def _calls(G: nx.DiGraph) -> list[Any]:
    papers = _keys(G, "Paper", "pithNumber")
    authors = _keys(G, "Author", "nameKey")
    categories = _keys(G, "Category", "code", 100)
    signers = _keys(G, "Signer", "signerId")
    middle = PaperKey("2016-06-01T00:00:00Z", "pith:2016:M")
    aliases = [
        (d["kind"], d["value"]) for _, d in islice(G.nodes(data=True), 0, None) if d["label"] == "Alias"
    ][:200]
    filters = [
        PaperFilter(),
        PaperFilter(archive="cs", license="http://creativecommons.org/licenses/by/4.0/"),
        PaperFilter(category="stat.ML", submitted_from="2018-01-01T00:00:00Z"),
        PaperFilter(author=authors[0], submitted_before="2025-01-01T00:00:00Z"),
        PaperFilter(title_terms=search_terms("graphs")),
        PaperFilter(title_terms=search_terms("sparse inference"), archive="cs"),
        PaperFilter(title_terms=search_terms("3.5 Schrödinger")),
        # Listings starting at a category or archive with many papers read the submittedAt
        # index newest first; small ones their edges (cypher_pages): both, every category.
        *(PaperFilter(category=code) for code in categories[:-1]),
        PaperFilter(archive="math"),
        PaperFilter(archive="physics", submitted_before="2024-01-01T00:00:00Z"),
    ]
    calls: list[Any] = [
        ("papers_by_ids", (papers,)),
        (
            "resolve_identifiers",
            ([*aliases, ("pithNumber", papers[0]), ("shortPithNumber", "pith:NOPE0000")],),
        ),
        ("author_pages", (papers, 100)),
        ("author_pages", (papers, 2, authors[len(authors) // 2])),
        ("author_pages", (papers, 0, "no such key")),
        ("categories_of_papers", (papers, 20)),
        ("categories_of_papers", (papers, 1)),
        ("aliases_of_papers", (papers, 20)),
        ("aliases_of_papers", (papers, 2)),
        ("signatures_of_papers", (papers, 10)),
        ("signatures_of_papers", (papers, 0)),
        ("versions_of_papers", (papers, 50)),
        ("versions_of_papers", (papers, 1)),
        ("related_papers", (papers, 7)),
        ("authors_by_keys", (authors,)),
        ("papers_of_authors", (authors, 3, None)),
        ("papers_of_authors", (authors, 2, middle)),
        ("coauthors", (authors, 6)),
        ("author_categories", (authors,)),
        ("categories_by_codes", (categories,)),
        ("all_categories", ()),
        ("papers_of_categories", (categories, 4, middle)),
        # Pages of nodes holding a large share of the papers are read from the submittedAt
        # index (see cypher._page_of), the others by their edges: both, several sizes.
        ("papers_of_categories", (categories, 1, None)),
        ("papers_of_categories", (categories, 60, None)),
        ("papers_of_signers", (signers, 2, middle)),
        ("papers_of_authors", (authors, 1, None)),
        ("top_authors", (categories, 8)),
        ("co_listed", (categories, 5)),
        ("signers_by_ids", (signers,)),
        ("unpinned_key_ids", (frozenset(), 10)),
        ("unpinned_key_ids", (frozenset(), 1)),
        ("unpinned_key_ids", ([_key_ids(G)[0]], 10)),
        ("used_key_ids", ([*_key_ids(G)[1:], "no such key"],)),
        ("used_key_ids", ([],)),
        ("papers_of_signers", (signers, 5, None)),
        # By signedBundle: the registry's own (most papers: read from the submittedAt index),
        # the builder's events in its bundles (few: by its edges), both after a position.
        *[
            ("papers_of_signers", (signers, n, at, EVERYTHING, b))
            for b in (True, False)
            for n, at in ((4, None), (3, middle))
        ],
    ]
    for where in filters:
        calls.append(("list_papers", (where, 25, None)))
        calls.append(("list_papers", (where, 10, middle)))
        calls.append(("count_papers", (where,)))
    calls += _discovery_calls(G, papers, aliases, signers)
    hub = max(authors[:-1], key=lambda key: G.out_degree(f"Author:{key}"))
    for other in authors[::10]:
        calls.append(("collaboration_path", (hub, other, 4)))
    return calls


def _discovery_calls(
    G: nx.DiGraph, papers: list[str], aliases: list[tuple[str, str]], signers: list[str]
) -> list[Any]:
    """Batch lookups, search (both orders, pages after a position), counts, facets, typeahead."""
    listings = [
        Listing(text=search_terms("graphs")),
        Listing(text=search_terms("learning sparse")),
        Listing(PaperFilter(archive="cs", submitted_from="2015-01-01T00:00:00Z"), search_terms("inference")),
        Listing(PaperFilter(title_terms=search_terms("networks")), search_terms("graph")),
        Listing(text=search_terms("Schrödinger 3.5")),
        Listing(PaperFilter(category="cs.LG")),
        Listing(PaperFilter(license="http://creativecommons.org/licenses/by/4.0/", archive="math")),
        Listing(signer=signers[0]),
        *[Listing(signer=signer, signed_bundle=b) for signer in signers for b in (True, False)],
        Listing(PaperFilter(category="cs.LG"), signer=signers[0], signed_bundle=True),
        Listing(PaperFilter(title_terms=search_terms("sparse")), signer=signers[0]),
        Listing(),
    ]
    middle = SearchPosition(2.0, "2016-06-01T00:00:00Z", "pith:2016:M", 7)
    calls: list[Any] = [
        ("papers_by_identifiers", ([*aliases, ("pithNumber", papers[0]), ("shortPithNumber", "pith:NOPE")],)),
    ]
    for listing in listings:
        calls.append(("count_listing", (listing,)))
        calls.append(("facet_counts", (listing, FACETS, 7)))
        if listing.text:
            for order in ("relevance", "newest"):
                calls.append(("search_papers", (listing, order, 15, None)))
                calls.append(("search_papers", (listing, order, 5, middle)))
    for typed in ("zo", "ZOË", "sm", "zoe sm", "li", "李", "o'b", "an", "will", "s", "ångst", "xyzzy"):
        calls.append(("authors_by_prefix", (typed_keys(typed), 8)))
    return calls


@pytest.mark.neo4j
def test_every_read_answers_alike(memory_reader: MemoryReader, neo4j_reader: Neo4jReader) -> None:
    differences = []
    for name, args in _calls(memory_reader.G):
        expected = getattr(memory_reader, name)(*args)
        found = getattr(neo4j_reader, name)(*args)
        if found != expected:
            differences.append((name, args, expected, found))
    assert not differences, differences[:3]


def test_every_read_but_search_and_typeahead_runs_one_statement_at_most() -> None:
    reads = {name for name in dir(GraphReader) if not name.startswith("_")}
    reads -= {"for_request", "sole_statement", "holds_transaction", "unreachable", "ping", "close", "aclose"}
    # Search may run its statement again; typeahead may walk, then ask the full-text index.
    assert reads - ONE_STATEMENT == {"search_papers", "authors_by_prefix"}
    assert reads >= ONE_STATEMENT


@pytest.mark.neo4j
def test_reads_of_one_statement_answer_alike_alone(
    memory_reader: MemoryReader, neo4j_reader: Neo4jReader
) -> None:
    """As a request's sole call, each read of ONE_STATEMENT runs its statement (if any) as an
    auto-commit transaction, and answers as ever."""
    counted = Counted(neo4j_reader)
    differences = []
    for name, args in _calls(memory_reader.G):
        if name not in ONE_STATEMENT:
            continue
        with counted.request() as request, request.sole_statement(name):
            found = getattr(request, name)(*args)
        statements, transactions, autocommits = counted.counts()
        assert statements <= 1 and transactions == autocommits == statements, (name, args)
        expected = getattr(memory_reader, name)(*args)
        if found != expected:
            differences.append((name, args, expected, found))
    assert not differences, differences[:3]


_UNCOUNTED = {
    "authors_by_keys",
    "author_pages",
    "categories_of_papers",
    "signatures_of_papers",
    "coauthors",
    "author_categories",
    "categories_by_codes",
    "all_categories",
    "top_authors",
    "co_listed",
    "signers_by_ids",
    "collaboration_path",
}


@pytest.mark.neo4j
def test_uncounted_reads_answer_alike(memory_reader: MemoryReader, neo4j_reader: Neo4jReader) -> None:
    differences = []
    for name, args in _calls(memory_reader.G):
        if name not in _UNCOUNTED:
            continue
        expected = getattr(memory_reader, name)(*args, counts=False)
        found = getattr(neo4j_reader, name)(*args, counts=False)
        if found != expected:
            differences.append((name, args, expected, found))
    assert not differences, differences[:3]
    authors = neo4j_reader.authors_by_keys(_keys(memory_reader.G, "Author", "nameKey"), counts=False)
    assert authors and all(author.paper_count is None for author in authors.values())


@pytest.mark.neo4j
def test_a_selection_fetches_what_it_names_and_embeds_relations(
    memory_reader: MemoryReader, neo4j_reader: Neo4jReader
) -> None:
    want = PaperSelection(frozenset({"title"}), authors=False, categories=True)
    expected = memory_reader.list_papers(PaperFilter(), 30, None)
    request = neo4j_reader.for_request()
    try:
        page = request.list_papers(PaperFilter(), 30, None, want)
        assert page.has_next == expected.has_next
        for found, full in zip(page.items, expected.items, strict=True):
            for name in [*CORE_PAPER_PROPERTIES, "title"]:
                assert getattr(found, snake_case(name)) == getattr(full, snake_case(name))
            assert (found.abstract_excerpt, found.license, found.key_ids) == ("", "", ())
        piths = [paper.pith_number for paper in page.items]
        statements = request._statements  # the request's one transaction
        ran = _counting(statements)
        for first in (0, 3, 100):
            assert request.author_pages(piths, first, counts=False) == memory_reader.author_pages(
                piths, first, counts=False
            )
        for first in (1, 20):  # embedded: the first 20 (Paper.categories' size)
            assert request.categories_of_papers(piths, first) == memory_reader.categories_of_papers(
                piths, first
            )
        assert ran == [], "the embedded relations answer without a statement"
        request.author_pages(piths, 3)  # with counts: not embedded, so one statement
        assert len(ran) == 1
        request.author_pages(piths, 3, "ann lee", counts=False)  # after an author: one more
        assert len(ran) == 2
    finally:
        request.close()


def _counting(statements: Any) -> list[str]:
    """Record the statements ``statements`` runs from now on."""
    ran: list[str] = []
    rows = statements.rows

    def counted(statement: str, parameters: dict[str, Any]) -> Any:
        ran.append(statement)
        return rows(statement, parameters)

    statements.rows = counted
    return ran


def test_cursors_stay_valid_while_papers_are_added(corpus: Corpus) -> None:
    G, _ = load_graph([SAMPLES])
    reader = MemoryReader(G)
    first = reader.list_papers(PaperFilter(), 1, None)
    cursor = paper_key(first.items[0])
    before = [p.pith_number for p in reader.list_papers(PaperFilter(), 100, cursor).items]
    load_graph([corpus.paths[1]], trusted_keys=corpus.keyring, graph=G, workers=1)
    reader.refresh()
    after = reader.list_papers(PaperFilter(), 1000, cursor).items
    older = [p for p in after if paper_key(p) < cursor]
    assert [p.pith_number for p in after] == [p.pith_number for p in older]
    assert set(before) <= {p.pith_number for p in after}
    assert len(after) > len(before)
