"""``papers(filter:)`` on Neo4j runs a statement that checks only the filters it was given
(since 0.9.14), and answers as the in-memory reader does.

Until 0.9.13 each starting point had one statement holding every filter, each switched off
by a null parameter (``$from IS NULL OR …``). Neo4j plans a statement anew for each mix of
null and non-null parameters, so every new combination of filters cost a plan of the whole
statement (0.7–1.1 s on two cores), and the switched-off checks still cost their subqueries.
Here each listing (every filter alone, several together, all of them; a first page and the
next; newest and oldest first) and its count are run on the session's Neo4j, recording the
statements the reader sends: each is sent the parameters it names and no other, none null,
and the pages and counts equal the in-memory reader's. A search's next page (both orders) likewise names
its position only when it has one (since 0.9.14: the first page sent it as null), and so
does a page of an author's, a category's or a signer's papers. The statements built per
combination are kept in caches of bounded size: a client choosing combinations does not grow
them for as long as the server runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import networkx as nx
import pytest
from apitest import corpus, memory_reader, neo4j_corpus, neo4j_reader  # noqa: F401 (fixtures)

from pith_graph.api.reads import cypher, cypher_discovery
from pith_graph.api.reads.cypher_parts import EMBEDS, STATEMENTS_KEPT
from pith_graph.api.reads.discovery import Listing, SearchPosition
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.records import PaperFilter, paper_key
from pith_graph.api.reads.words import search_terms

#: The listing no paper is in.
NOTHING = "nothing"


def _labelled(G: nx.DiGraph, nodes: Iterator[str], label: str, key: str) -> list[str]:
    return sorted(G.nodes[n][key] for n in nodes if G.nodes[n]["label"] == label)


def _filters(G: nx.DiGraph) -> dict[str, PaperFilter]:
    """Each filter alone, chosen so that each admits one paper of the graph (the newest
    version of its source, with two authors and a cross-list), then a few together, then
    all of them together."""
    node, paper = next(
        (node, data)
        for node, data in G.nodes(data=True)
        if data["label"] == "Paper"
        and data["isLatest"]
        and len(_labelled(G, G.predecessors(node), "Author", "nameKey")) >= 2
        and len(_labelled(G, G.successors(node), "Category", "code")) >= 2
    )
    authors = _labelled(G, G.predecessors(node), "Author", "nameKey")
    codes = _labelled(G, G.successors(node), "Category", "code")
    categories = sorted(d["code"] for _, d in G.nodes(data=True) if d["label"] == "Category")
    unlisted = sorted(set(categories) - set(codes))
    word = max(re.findall(r"[A-Za-z]+", paper["title"]), key=len)
    alone = {
        "submitted_from": PaperFilter(submitted_from=paper["submittedAt"][:4] + "-01-01T00:00:00Z"),
        "submitted_before": PaperFilter(submitted_before="2030-01-01T00:00:00Z"),
        "license": PaperFilter(license=paper["license"]),
        "category": PaperFilter(category=codes[0]),
        "archive": PaperFilter(archive=G.nodes[f"Category:{codes[0]}"]["archive"]),
        "author": PaperFilter(author=authors[0]),
        "all_authors": PaperFilter(all_authors=tuple(authors[:2])),
        "categories": PaperFilter(categories=(codes[-1], unlisted[0])),
        "exclude_categories": PaperFilter(exclude_categories=(unlisted[0],)),
        "latest_versions": PaperFilter(latest_versions=True),
        "title_terms": PaperFilter(title_terms=search_terms(word)),
    }
    every = {name: getattr(where, name) for name, where in alone.items()}
    together = {
        "license, from": PaperFilter(license=paper["license"], submitted_from=every["submitted_from"]),
        "category, latest": PaperFilter(category=codes[0], latest_versions=True),
        "author, excluded": PaperFilter(author=authors[0], exclude_categories=(unlisted[0],)),
        "every filter": PaperFilter(**every),
        "one of all authors": PaperFilter(all_authors=(authors[0],)),
        "author, all authors": PaperFilter(author=authors[-1], all_authors=tuple(authors[:2])),
        # the category with most papers: its pages scan the submittedAt index (cypher_pages)
        "largest category": PaperFilter(category=max(categories, key=lambda c: G.in_degree(f"Category:{c}"))),
        "largest, excluded": PaperFilter(
            categories=(max(categories, key=lambda c: G.in_degree(f"Category:{c}")),),
            exclude_categories=(codes[0],),
        ),
        NOTHING: PaperFilter(category=codes[0], license="no such license"),
    }
    return {**alone, **together}


@pytest.fixture
def recorded(neo4j_reader: Neo4jReader, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """The statements (with their parameters) the reader sends its server, as it sends them."""
    sent: list[tuple[str, dict[str, Any]]] = []
    statements = neo4j_reader._statements
    rows = statements.rows

    def recording(statement: str, parameters: dict[str, Any]) -> Any:
        sent.append((statement, parameters))
        return rows(statement, parameters)

    monkeypatch.setattr(statements, "rows", recording)
    return sent


def _unset(statement: str, parameters: dict[str, Any]) -> list[str]:
    """What is wrong with the parameters sent with ``statement``: those it names sent as null
    or not at all, and those sent that it does not name (Neo4j keys a cached plan by the type
    of every parameter sent, used or not)."""
    named = set(re.findall(r"\$(\w+)", statement))
    return sorted(
        {f"${name} null" for name in named if parameters.get(name) is None} | set(parameters) - named
    )


@pytest.mark.neo4j
def test_a_listing_sends_only_the_filters_it_has_and_answers_as_memory_does(
    neo4j_reader: Neo4jReader,
    memory_reader: MemoryReader,
    recorded: list[tuple[str, dict[str, Any]]],
) -> None:
    filters = _filters(memory_reader.G)
    admitted = asked = 0
    for name, where in filters.items():
        for order in ("newest", "oldest"):
            first = memory_reader.list_papers(where, 2, None, order=order)
            assert neo4j_reader.list_papers(where, 2, None, order=order) == first, (name, order)
            admitted += len(first.items)
            asked += 1
            if first.items:  # the next page, after the cursor
                after = paper_key(first.items[-1])
                expected = memory_reader.list_papers(where, 3, after, order=order)
                assert neo4j_reader.list_papers(where, 3, after, order=order) == expected, (name, order)
                asked += 1
        assert neo4j_reader.count_papers(where) == memory_reader.count_papers(where), name
        asked += 1
        assert (memory_reader.count_papers(where) >= 1) == (name != NOTHING), name  # the chosen paper
    assert admitted >= 2 * (len(filters) - 1)
    listings = [(s, p) for s, p in recorded if "RETURN count(p)" in s or " AS paper" in s]
    assert len(listings) == asked >= 5 * (len(filters) - 1)
    for statement, parameters in listings:
        assert _unset(statement, parameters) == [], statement
    # one statement per start, filters, order and cursor: the next page is not the first's
    assert len({s for s, _ in listings}) >= 4 * (len(filters) - 1)


@pytest.mark.neo4j
def test_a_search_sends_its_position_only_after_a_first_page(
    neo4j_reader: Neo4jReader,
    memory_reader: MemoryReader,
    recorded: list[tuple[str, dict[str, Any]]],
) -> None:
    later = 0  # the next pages Neo4j was asked for
    for listing in (
        Listing(text=search_terms("graph")),
        Listing(PaperFilter(archive="cs"), search_terms("learning")),
    ):
        for order in ("relevance", "newest"):
            walked: dict[str, list[tuple[str, float]]] = {}
            for name, reader in (("memory", memory_reader), ("neo4j", neo4j_reader)):
                seen = walked[name] = []
                after: SearchPosition | None = None
                for _ in range(3):
                    later += name == "neo4j" and after is not None
                    page = reader.search_papers(listing, order, 2, after)
                    seen += [(item.paper.pith_number, item.score) for item in page.items]
                    if not page.has_next:
                        break
                    last = page.items[-1]
                    after = SearchPosition(
                        last.score, last.paper.submitted_at, last.paper.pith_number, len(seen)
                    )
            assert walked["neo4j"] == walked["memory"], (listing, order)
    assert later >= 4
    searches = [(s, p) for s, p in recorded if p.get("textIndex") == "paper_text_fulltext"]
    assert len(searches) >= 4 + later  # a relevance page may fetch again
    for statement, parameters in searches:
        assert _unset(statement, parameters) == [], statement
    assert sum("$afterPith" in s for s, _ in searches) >= later
    assert sum("$afterPith" not in s for s, _ in searches) >= 4


@pytest.mark.neo4j
def test_pages_of_authors_categories_and_signers_send_their_cursor_only_after_a_first_page(
    neo4j_reader: Neo4jReader,
    memory_reader: MemoryReader,
    recorded: list[tuple[str, dict[str, Any]]],
) -> None:
    G = memory_reader.G
    keys = {
        label: sorted(d[key] for _, d in G.nodes(data=True) if d["label"] == label)
        for label, key in (("Author", "nameKey"), ("Category", "code"), ("Signer", "signerId"))
    }
    asks = {
        "authors": lambda r, first, after, order: r.papers_of_authors(
            keys["Author"][:3], first, after, order=order
        ),
        "categories": lambda r, first, after, order: r.papers_of_categories(
            keys["Category"][:3], first, after, order=order
        ),
        "signers": lambda r, first, after, order: r.papers_of_signers(
            keys["Signer"], first, after, order=order
        ),
        "signers by bundle": lambda r, first, after, order: r.papers_of_signers(
            keys["Signer"], first, after, signed_bundle=True, order=order
        ),
    }
    later = 0
    for name, ask in asks.items():
        for order in ("newest", "oldest"):
            first = ask(memory_reader, 2, None, order)
            assert ask(neo4j_reader, 2, None, order) == first, (name, order)
            for key, page in first.items():
                if page.items:
                    after = paper_key(page.items[-1])
                    assert ask(neo4j_reader, 3, after, order) == ask(memory_reader, 3, after, order), (
                        name,
                        key,
                    )
                    later += 1
    assert later >= 16
    pages = [(s, p) for s, p in recorded if "UNWIND $keys AS key" in s and " AS papers" in s]
    assert len(pages) == 8 + later
    for statement, parameters in pages:
        assert _unset(statement, parameters) == [], statement
    assert sum("$afterPith" in s for s, _ in pages) == later


@pytest.mark.neo4j
def test_a_signers_listing_sends_its_signed_bundle_only_when_asked(
    neo4j_reader: Neo4jReader,
    memory_reader: MemoryReader,
    recorded: list[tuple[str, dict[str, Any]]],
) -> None:
    """``Signer.papers(signedBundle:)``'s count and facets (a ``Listing`` of the signer):
    since 0.9.14 without ``signedBundle`` the statement does not name it (it was sent null)."""
    G = memory_reader.G
    signers = sorted(d["signerId"] for _, d in G.nodes(data=True) if d["label"] == "Signer")
    counted = 0
    for signer in signers:
        for bundle in (None, True, False):
            listing = Listing(signer=signer, signed_bundle=bundle)
            assert neo4j_reader.count_listing(listing) == memory_reader.count_listing(listing), (
                signer,
                bundle,
            )
            counted += memory_reader.count_listing(listing)
            facets = ("years", "licenses")
            assert neo4j_reader.facet_counts(listing, facets, 5) == memory_reader.facet_counts(
                listing, facets, 5
            )
    assert counted > 0
    sent = [(s, p) for s, p in recorded if "$signer" in s]
    assert len(sent) == 2 * 3 * len(signers)
    for statement, parameters in sent:
        assert _unset(statement, parameters) == [], statement
    assert sum("$signedBundle" in s for s, _ in sent) == 2 * 2 * len(signers)


@pytest.mark.neo4j
def test_a_papers_authors_first_page_sends_no_position(
    neo4j_reader: Neo4jReader,
    memory_reader: MemoryReader,
    recorded: list[tuple[str, dict[str, Any]]],
) -> None:
    """A page of each paper's authors (``Paper.authors(first:, after:)``, when not embedded):
    the first page without ``$after`` (since 0.9.14: it was sent null), later ones with it."""
    G = memory_reader.G
    papers = sorted(d["pithNumber"] for _, d in G.nodes(data=True) if d["label"] == "Paper")[:40]
    later = 0
    for counts in (False, True):
        first = memory_reader.author_pages(papers, 2, None, counts)
        assert neo4j_reader.author_pages(papers, 2, None, counts) == first
        for pith, page in first.items():
            if page.total > 2:
                after = page.authors[-1].name_key
                expected = memory_reader.author_pages([pith], 2, after, counts)
                assert neo4j_reader.author_pages([pith], 2, after, counts) == expected, pith
                later += 1
    assert later >= 4
    sent = [(s, p) for s, p in recorded if " AS page, " in s]
    assert len(sent) == 2 + later
    for statement, parameters in sent:
        assert _unset(statement, parameters) == [], statement
    assert sum("$after" in s for s, _ in sent) == later


def test_the_statements_built_per_combination_of_filters_are_kept_in_bounded_caches() -> None:
    """Every combination a client can ask for (~37,000 listing statements) built once: each
    builder keeps at most ``STATEMENTS_KEPT`` (unbounded, the listings' took 76 MB)."""
    names = sorted(cypher.LISTING_CHECKS)
    combinations = [
        frozenset(n for i, n in enumerate(names) if mask >> i & 1) for mask in range(1 << len(names))
    ]
    for checks in combinations:
        start = next(
            (s for s in ("authors", "author", "category", "categories", "archive") if s in checks), "all"
        )
        for embed in EMBEDS:
            for order in ("newest", "oldest"):
                for after in (False, True):
                    cypher.list_papers_statement(start, embed, order, checks, after)
        cypher_discovery.count_statement(start, checks)
        cypher_discovery.facets_statement(start, checks, ("years", "licenses"))
        for order, after in (("relevance", False), ("newest", True)):
            cypher_discovery.search_statement(order, checks, after)
    builders = (
        cypher.list_papers_statement,
        cypher_discovery.count_statement,
        cypher_discovery.facets_statement,
        cypher_discovery.search_statement,
    )
    for builder in builders:
        assert 0 < builder.cache_info().currsize <= STATEMENTS_KEPT, builder
    assert len(combinations) * len(EMBEDS) * 4 > 10 * STATEMENTS_KEPT
