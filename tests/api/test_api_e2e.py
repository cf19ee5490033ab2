"""End to end: real HTTP requests to real uvicorns, memory and Neo4j answering alike."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Any

import networkx as nx
import pytest
from apitest import (  # noqa: F401 (fixtures)
    Api,
    _neo4j_api,
    api,
    corpus,
    memory_api,
    memory_reader,
    neo4j_api,
    neo4j_corpus,
)

from pith_graph.api.reads.memory import MemoryReader
from pith_graph.loader.identifiers import author_name_key


@dataclass(frozen=True)
class Examples:
    """Things of the corpus worth asking about, found with plain networkx (not a reader)."""

    versioned_id: str  # an arXiv id with several versions
    versions: tuple[str, ...]  # their pith numbers, newest version first
    doi: str
    hub_author: str  # the author with the most papers
    plain_author: str  # an author with one paper
    non_ascii_author: str
    big_category: str
    small_category: str
    far_authors: tuple[str, str]  # two authors a few hops apart


def _papers(G: nx.DiGraph) -> list[dict[str, Any]]:
    return [data for _, data in G.nodes(data=True) if data["label"] == "Paper"]


@pytest.fixture(scope="session")
def examples(memory_reader: MemoryReader) -> Examples:
    G = memory_reader.G
    by_id: dict[str, list[dict[str, Any]]] = {}
    for paper in _papers(G):
        by_id.setdefault(paper["sourceId"], []).append(paper)
    versioned = max(sorted(by_id), key=lambda i: len(by_id[i]))
    versions = sorted(by_id[versioned], key=lambda p: p["sourceVersion"], reverse=True)
    authors = sorted(
        ((G.out_degree(n), d["name"]) for n, d in G.nodes(data=True) if d["label"] == "Author"),
        key=lambda item: (-item[0], item[1]),
    )
    categories = sorted(
        ((G.in_degree(n), d["code"]) for n, d in G.nodes(data=True) if d["label"] == "Category"),
        key=lambda item: (-item[0], item[1]),
    )
    non_ascii = next(name for _, name in authors if not name.isascii())
    # Authors three hops apart in the coauthor graph, found with networkx.
    coauthors = nx.Graph()
    for node, data in G.nodes(data=True):
        if data["label"] == "Paper":
            names = [G.nodes[a]["nameKey"] for a in G.pred[node] if G.nodes[a]["label"] == "Author"]
            coauthors.add_edges_from((a, b) for a in names for b in names if a < b)
    start = authors[0][1]
    lengths = nx.single_source_shortest_path_length(coauthors, author_name_key(start))
    far = sorted(key for key, length in lengths.items() if length == 3)[0]
    return Examples(
        versioned_id=versioned,
        versions=tuple(p["pithNumber"] for p in versions),
        doi=next(
            G.nodes[a]["value"]
            for a in G.pred[f"Paper:{versions[0]['pithNumber']}"]
            if G.nodes[a]["label"] == "Alias" and G.nodes[a]["kind"] == "doi"
        ),
        hub_author=start,
        plain_author=next(name for count, name in authors if count == 1),
        non_ascii_author=non_ascii,
        big_category=categories[0][1],
        small_category=categories[-1][1],
        far_authors=(start, far),
    )


PAPER_FIELDS = """
  id pithNumber shortPithNumber title abstractExcerpt license submittedAt sourceKind sourceId sourceVersion isLatest
  primaryCategory { id code archive paperCount }
  categories { code }
  authors { id name nameKey paperCount }
  aliases { kind value }
  byline { position name author { id nameKey paperCount } }
  signers { id signerId signerType keyIds paperCount }
  versions { pithNumber sourceVersion isLatest }
  relatedPapers(first: 5) { sharedAuthors paper { pithNumber } }
  verification {
    bundleSha256 stateSha256 canonicalSha256 builtAt keyIds fingerprints
    keys { keyId fingerprint signerId }
    signatures { signer { signerId } keyIds eventTypes signedBundle }
  }
"""

# (id, query, variables built from the examples)
QUERIES: list[Any] = [
    pytest.param(
        f"query($id: String!) {{ paper(id: $id) {{ {PAPER_FIELDS} }} }}",
        lambda e: {"id": e.doi},
        id="paper-by-doi",
    ),
    pytest.param(
        "query($id: String!) { resolve(id: $id) { pithNumber sourceVersion versions { pithNumber } } }",
        lambda e: {"id": f"arXiv:{e.versioned_id}"},
        id="resolve-all-versions",
    ),
    pytest.param(
        "{ papers(first: 30) { totalCount edges { cursor node { pithNumber submittedAt } } "
        "pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }",
        lambda e: {},
        id="papers-first-page",
    ),
    pytest.param(
        'query($c: String!) { papers(first: 20, filter: {category: $c, submittedFrom: "2015-01-01"}) '
        "{ totalCount nodes { pithNumber authors { name } categories { code } } } }",
        lambda e: {"c": e.big_category},
        id="papers-category-and-date",
    ),
    pytest.param(
        '{ papers(first: 25, filter: {archive: "math", license: "http://creativecommons.org/licenses/by/4.0/"}) '
        "{ totalCount nodes { pithNumber } } }",
        lambda e: {},
        id="papers-archive-and-license",
    ),
    pytest.param(
        'query($a: String!) { papers(first: 10, filter: {author: $a, submittedBefore: "2024-06-01T00:00:00Z"}) '
        "{ totalCount nodes { pithNumber } pageInfo { hasNextPage } } }",
        lambda e: {"a": e.hub_author.upper()},
        id="papers-author-and-date",
    ),
    pytest.param(
        '{ papers(first: 50, filter: {title: "graph networks"}) { totalCount nodes { title } } }',
        lambda e: {},
        id="papers-title",
    ),
    pytest.param(
        '{ a: search(text: "Schrödinger", first: 50) { ...hits } '
        'b: search(text: "LÉVY processes") { ...hits } '
        'c: search(text: "3.5") { ...hits } d: search(text: "李") { ...hits } '
        'e: search(text: "o\'brien\'s multi-GPU") { ...hits } f: search(text: "İstanbul σίσυφος") { ...hits } '
        'g: search(text: "self_supervised 🚀") { ...hits } h: search(text: "erdős-rényi") { ...hits } '
        'i: search(text: "rocket 🚀") { ...hits } } '
        "fragment hits on SearchConnection { totalCount edges { score cursor node { title } } }",
        lambda e: {},
        id="search-words",
    ),
    pytest.param(
        "query($n: String!) { author(name: $n) { name nameKey paperCount "
        "papers(first: 7) { totalCount edges { cursor node { pithNumber } } pageInfo { hasNextPage endCursor } } "
        "coauthors(first: 15) { sharedPapers author { name paperCount } } "
        "categories { count category { code } } } }",
        lambda e: {"n": e.hub_author},
        id="author-hub",
    ),
    pytest.param(
        "query($n: String!, $m: String!) { x: author(name: $n) { name coauthors { author { nameKey } sharedPapers } } "
        "y: author(name: $m) { name papers { nodes { title } } } }",
        lambda e: {"n": e.non_ascii_author, "m": e.plain_author},
        id="author-non-ascii",
    ),
    pytest.param(
        "query($c: String!) { category(code: $c) { code archive paperCount "
        "papers(first: 50) { totalCount nodes { pithNumber authors { name } } } "
        "topAuthors(first: 10) { count author { nameKey } } coListed(first: 10) { count category { code } } } }",
        lambda e: {"c": e.big_category},
        id="category-page",
    ),
    pytest.param(
        "query($c: String!) { category(code: $c) { code paperCount topAuthors { count author { nameKey } } "
        "coListed { count category { code } } } categories { code archive paperCount } }",
        lambda e: {"c": e.small_category},
        id="categories",
    ),
    pytest.param(
        '{ registry: signer(id: "corpus.pith-graph.invalid") { signerId signerType keyIds paperCount '
        "papers(first: 3) { edges { node { pithNumber } } } } "
        'builder: signer(id: "builder.pith-graph.invalid") { signerType paperCount papers { nodes { pithNumber } } } '
        'pith: signer(id: "pith.science") { paperCount } }',
        lambda e: {},
        id="signers",
    ),
    pytest.param(
        '{ registry: signer(id: "corpus.pith-graph.invalid") { '
        "own: papers(first: 3, signedBundle: true) { totalCount pageInfo { hasNextPage endCursor } "
        "nodes { pithNumber } } copied: papers(signedBundle: false) { totalCount nodes { pithNumber } } } "
        'builder: signer(id: "builder.pith-graph.invalid") { own: papers(signedBundle: true) { totalCount } '
        "copied: papers(first: 4, signedBundle: false) { totalCount edges { cursor node { pithNumber } } } } }",
        lambda e: {},
        id="signers-by-bundle",
    ),
    pytest.param(
        "query($a: String!, $b: String!) { "
        "near: collaborationPath(from: $a, to: $b) { from { nameKey } paper { pithNumber } to { nameKey } } "
        "short: collaborationPath(from: $a, to: $b, maxHops: 2) { paper { pithNumber } } "
        "same: collaborationPath(from: $a, to: $a) { paper { pithNumber } } }",
        lambda e: {"a": e.far_authors[0], "b": e.far_authors[1]},
        id="collaboration-path",
    ),
    pytest.param(
        '{ a: node(id: "UGFwZXI6bm9wZQ") { id } b: nodes(ids: ["", "Q2F0ZWdvcnk6Y3MuTEc", "bm9wZTp4"]) { '
        "__typename id ... on Category { code paperCount papers(first: 2) { nodes { id title } } } } }",
        lambda e: {},
        id="nodes",
    ),
    pytest.param(
        '{ a: paper(id: "nope") { title } b: resolve(id: "10.1/none") { title } '
        'c: author(name: "No Such Person") { name } d: category(code: "xx.YY") { code } '
        'e: signer(id: "nobody") { signerId } }',
        lambda e: {},
        id="unknown-things",
    ),
]


@pytest.mark.neo4j
@pytest.mark.parametrize(("query", "variables"), QUERIES)
def test_memory_and_neo4j_answer_alike(
    query: str, variables: Any, examples: Examples, memory_api: Api, neo4j_api: Api
) -> None:
    values = variables(examples)
    expected = memory_api.post(query, values)
    assert "errors" not in expected, expected
    assert neo4j_api.post(query, values) == expected


def test_paper_by_any_identifier_names_the_newest_version(api: Api, examples: Examples) -> None:
    newest, *older = examples.versions
    oldest = examples.versions[-1]
    forms = {
        f"arXiv:{examples.versioned_id}": newest,
        f"https://arxiv.org/abs/{examples.versioned_id}": newest,
        f"{examples.versioned_id}v1": oldest,
        f"doi:{examples.doi.upper()}": newest,
        f"https://doi.org/{examples.doi}": newest,
        newest.lower(): newest,
        newest.split(":", 1)[1]: newest,
    }
    for identifier, expected in forms.items():
        found = api.data("query($id: String!) { paper(id: $id) { pithNumber } }", id=identifier)
        assert found["paper"] == {"pithNumber": expected}, identifier
    resolved = api.data("query($id: String!) { resolve(id: $id) { pithNumber } }", id=examples.doi)
    assert [p["pithNumber"] for p in resolved["resolve"]] == list(examples.versions)
    short = api.data(
        "query($id: String!) { paper(id: $id) { shortPithNumber versions { pithNumber } } }", id=newest
    )["paper"]
    assert {v["pithNumber"] for v in short["versions"]} == set(older)
    again = api.data("query($id: String!) { paper(id: $id) { pithNumber } }", id=short["shortPithNumber"])
    assert again["paper"] == {"pithNumber": newest}


def test_paging_with_cursors_visits_every_paper_once_newest_first(
    api: Api, memory_reader: MemoryReader
) -> None:
    expected = sorted(
        (
            (d["submittedAt"], d["pithNumber"])
            for _, d in memory_reader.G.nodes(data=True)
            if d["label"] == "Paper"
        ),
        reverse=True,
    )
    seen: list[tuple[str, str]] = []
    after = None
    pages = 0
    while True:
        page = api.data(
            "query($after: String) { papers(first: 100, after: $after) { totalCount "
            "edges { node { submittedAt pithNumber } } pageInfo { hasNextPage endCursor } } }",
            after=after,
        )["papers"]
        assert page["totalCount"] == len(expected)
        seen += [(e["node"]["submittedAt"], e["node"]["pithNumber"]) for e in page["edges"]]
        pages += 1
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == expected
    assert pages == -(-len(expected) // 100)


def test_filters_match_an_independent_count(
    api: Api, memory_reader: MemoryReader, examples: Examples
) -> None:
    G = memory_reader.G
    code = examples.big_category
    oracle = [
        d["pithNumber"]
        for n, d in G.nodes(data=True)
        if d["label"] == "Paper"
        and f"Category:{code}" in G.succ[n]
        and "2016-01-01T00:00:00Z" <= d["submittedAt"] < "2022-01-01T00:00:00Z"
    ]
    found = api.data(
        'query($c: String!) { papers(first: 100, filter: {category: $c, submittedFrom: "2016-01-01", '
        'submittedBefore: "2022-01-01T00:00:00+00:00"}) { totalCount nodes { pithNumber } } }',
        c=code,
    )["papers"]
    assert found["totalCount"] == len(oracle)
    assert {p["pithNumber"] for p in found["nodes"]} <= set(oracle)
    assert len(found["nodes"]) == min(100, len(oracle))


def test_author_is_matched_by_name_key_and_counts_coauthors(
    api: Api, memory_reader: MemoryReader, examples: Examples
) -> None:
    G = memory_reader.G
    key = author_name_key(examples.hub_author)
    shared: Counter[str] = Counter()
    for paper in G.succ[f"Author:{key}"]:
        shared.update(G.nodes[a]["nameKey"] for a in G.pred[paper] if G.nodes[a]["label"] == "Author")
    del shared[key]
    spaced = "  " + examples.hub_author.upper().replace(" ", "   ") + " "
    author = api.data(
        "query($n: String!) { author(name: $n) { nameKey paperCount coauthors(first: 100) "
        "{ sharedPapers author { nameKey } } } }",
        n=spaced,
    )["author"]
    assert author["nameKey"] == key
    assert author["paperCount"] == G.out_degree(f"Author:{key}")
    ranked = sorted(shared.items(), key=lambda item: (-item[1], item[0]))[:100]
    assert [(c["author"]["nameKey"], c["sharedPapers"]) for c in author["coauthors"]] == ranked


def test_collaboration_path_is_a_shortest_chain(
    api: Api, examples: Examples, memory_reader: MemoryReader
) -> None:
    source, target = examples.far_authors
    steps = api.data(
        "query($a: String!, $b: String!) { collaborationPath(from: $a, to: $b, maxHops: 6) "
        "{ from { nameKey } paper { pithNumber authors { nameKey } } to { nameKey } } }",
        a=source,
        b=target,
    )["collaborationPath"]
    assert len(steps) == 3
    assert steps[0]["from"]["nameKey"] == author_name_key(source)
    assert steps[-1]["to"]["nameKey"] == target
    for step, following in itertools.pairwise(steps):
        assert step["to"] == following["from"]
    for step in steps:
        names = {a["nameKey"] for a in step["paper"]["authors"]}
        assert {step["from"]["nameKey"], step["to"]["nameKey"]} <= names
    too_short = api.data(
        "query($a: String!, $b: String!) { collaborationPath(from: $a, to: $b, maxHops: 2) { paper { title } } }",
        a=source,
        b=target,
    )
    assert too_short["collaborationPath"] is None


def test_the_reader_answers_unknown_papers_and_authors_with_nothing(
    memory_reader: MemoryReader, examples: Examples
) -> None:
    """Every pith number asked gets a list (an unknown one: empty); no chain reaches an unknown author."""
    known, unknown = examples.versions[0], "pith:2099:AAAAAAAAAAAAAAAAAAAAAAAAAA"
    related = memory_reader.related_papers([unknown, known], 5)
    assert related[unknown] == [] and related[known]
    source = author_name_key(examples.hub_author)
    assert memory_reader.collaboration_path(source, "no such person", 6) is None
    assert memory_reader.collaboration_path("no such person", source, 6) is None


def test_verification_names_the_keys_that_signed(api: Api, examples: Examples) -> None:
    paper = api.data(
        "query($id: String!) { paper(id: $id) { verification { bundleSha256 keyIds fingerprints "
        "keys { keyId fingerprint signerId } signatures { signedBundle signer { signerId } } } } }",
        id="arXiv:1907.13257",
    )["paper"]["verification"]
    assert paper["keyIds"] == ["pith-v1-2026-05"]
    assert paper["fingerprints"] == ["8d4b5ee74e4693bcd1df2446408b0d54"]
    assert paper["keys"] == [
        {
            "keyId": "pith-v1-2026-05",
            "fingerprint": "8d4b5ee74e4693bcd1df2446408b0d54",
            "signerId": "pith.science",
        }
    ]
    assert paper["signatures"] == [{"signedBundle": True, "signer": {"signerId": "pith.science"}}]
    assert len(paper["bundleSha256"]) == 64
