"""What a frontend needs next, over real HTTP on both backends: batch lookups, ranked search
with cursors, facets, author typeahead. Expected answers come from plain networkx (the
memory reader's graph), not from a reader."""

from __future__ import annotations

from collections import Counter
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
    neo4j_reader,
    served,
)
from conftest import plan_steps
from test_api_e2e import Examples, examples  # noqa: F401 (fixture)

from pith_graph.api.app import create_app
from pith_graph.api.lanes import ThreadRunner
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.words import search_terms


def _papers(G: nx.DiGraph) -> dict[str, dict[str, Any]]:
    return {d["pithNumber"]: d for _, d in G.nodes(data=True) if d["label"] == "Paper"}


def _errors(api: Api, query: str, **variables: Any) -> list[dict[str, Any]]:
    body = api.post(query, variables)
    assert body.get("errors"), body
    errors: list[dict[str, Any]] = body["errors"]
    return errors


# -- papersById ----------------------------------------------------------------------------------

BATCH = "query($ids: [String!]!) { papersById(ids: $ids) { pithNumber } }"


def test_papers_by_id_answers_each_identifier_in_place(api: Api, examples: Examples) -> None:
    newest, *_ = examples.versions
    ids = [
        f"arXiv:{examples.versioned_id}",
        "no such thing",
        f"doi:{examples.doi.upper()}",
        "",
        newest.lower(),
        f"arXiv:{examples.versioned_id}",
        "10.1234/none",
        f"{examples.versioned_id}v1",
    ]
    found = api.data(BATCH, ids=ids)["papersById"]
    single = "query($id: String!) { paper(id: $id) { pithNumber } }"
    one_by_one = [api.data(single, id=i)["paper"] if i else None for i in ids]  # paper(id: "") is an error
    assert found == one_by_one
    assert found[0] == found[5] == found[2] == {"pithNumber": newest}
    assert found[7] == {"pithNumber": examples.versions[-1]}
    assert api.data(BATCH, ids=[])["papersById"] == []


def test_papers_by_id_takes_500_and_refuses_more(api: Api, memory_reader: MemoryReader) -> None:
    piths = sorted(_papers(memory_reader.G))
    ids = [piths[i % len(piths)] for i in range(500)]
    found = api.data(BATCH, ids=ids)["papersById"]
    assert [p["pithNumber"] for p in found] == ids
    error = _errors(api, BATCH, ids=[*ids, piths[0]])[0]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert "501" in error["message"]


@pytest.mark.neo4j
def test_papers_by_id_is_one_statement_for_the_whole_list(
    neo4j_reader: Neo4jReader, examples: Examples
) -> None:
    from test_api_nplus1 import CountingDriver

    counting = CountingDriver(neo4j_reader.driver)
    reader = Neo4jReader(counting, neo4j_reader.database, timeout=30)  # type: ignore[arg-type]
    runner = ThreadRunner(2)
    ids = [f"arXiv:{examples.versioned_id}", f"doi:{examples.doi}", *examples.versions, "nope"] * 40
    with served(create_app(reader, run=runner, on_shutdown=runner.close), "neo4j", reader) as api:
        found = api.data(BATCH, ids=ids)["papersById"]
    assert len(found) == len(ids) and found[-1] is None and found[0] is not None
    assert len(counting.statements) == 1, counting.statements


def test_the_batch_limit_is_a_setting(memory_reader: MemoryReader) -> None:
    app = create_app(memory_reader, limits=RequestLimits(max_batch_ids=3))
    with served(app, "memory", memory_reader) as api:
        assert len(api.data(BATCH, ids=["a", "b", "c"])["papersById"]) == 3
        assert _errors(api, BATCH, ids=["a", "b", "c", "d"])[0]["extensions"]["code"] == "LIMIT_EXCEEDED"


# -- search ----------------------------------------------------------------------------------------

SEARCH = """query($text: String!, $filter: PaperFilter, $after: String, $order: SearchOrder, $first: Int) {
  search(text: $text, filter: $filter, after: $after, orderBy: $order, first: $first) {
    totalCount
    edges { score cursor node { pithNumber submittedAt title abstractExcerpt } }
    pageInfo { hasNextPage hasPreviousPage endCursor }
  }
}"""


def _all_pages(api: Api, order: str, text: str, **extra: Any) -> tuple[list[dict[str, Any]], int]:
    seen: list[dict[str, Any]] = []
    after = None
    while True:
        page = api.data(SEARCH, text=text, order=order, after=after, first=7, **extra)["search"]
        seen += page["edges"]
        assert page["pageInfo"]["hasPreviousPage"] is (after is not None)
        if not page["pageInfo"]["hasNextPage"]:
            return seen, page["totalCount"]
        after = page["pageInfo"]["endCursor"]


@pytest.mark.parametrize("text", ["graphs", "sparse inference", "learning Schrödinger"])
def test_search_pages_visit_every_match_once_best_first(
    api: Api, memory_reader: MemoryReader, text: str
) -> None:
    terms = search_terms(text)
    papers = _papers(memory_reader.G)
    matching = {
        pith
        for pith, paper in papers.items()
        if all(
            term in search_terms(paper["title"] + " " + paper["abstractExcerpt"]) or _holds(paper, term)
            for term in terms
        )
    }
    seen, total = _all_pages(api, "RELEVANCE", text)
    assert total == len(seen) == len(matching) > 0
    assert {edge["node"]["pithNumber"] for edge in seen} == matching
    keys = [(-edge["score"], edge["node"]["pithNumber"]) for edge in seen]
    assert keys == sorted(keys)
    newest, _ = _all_pages(api, "NEWEST", text)
    order = [(edge["node"]["submittedAt"], edge["node"]["pithNumber"]) for edge in newest]
    assert order == sorted(order, reverse=True)
    assert {edge["node"]["pithNumber"] for edge in newest} == matching


@pytest.mark.parametrize("order", ["RELEVANCE", "NEWEST"])
def test_the_page_holding_the_last_match_has_no_next_page(api: Api, order: str) -> None:
    text = "sparse inference"
    total = api.data(SEARCH, text=text, order=order, first=1)["search"]["totalCount"]
    assert 1 < total <= 100
    for first, more in ((total - 1, True), (total, False)):
        page = api.data(SEARCH, text=text, order=order, first=first)["search"]
        assert (len(page["edges"]), page["pageInfo"]["hasNextPage"]) == (first, more)


def _holds(paper: dict[str, Any], term: str) -> bool:
    from pith_graph.api.reads.words import tokens

    return term in tokens(paper["title"]) or term in tokens(paper["abstractExcerpt"])


def test_title_matches_rank_above_abstract_matches(api: Api) -> None:
    edges = api.data(SEARCH, text="attention", first=100)["search"]["edges"]
    in_title = [e["score"] for e in edges if "attention" in e["node"]["title"].lower()]
    elsewhere = [e["score"] for e in edges if "attention" not in e["node"]["title"].lower()]
    assert in_title and elsewhere
    assert min(in_title) > max(elsewhere)


def test_search_takes_a_filter(api: Api, memory_reader: MemoryReader, examples: Examples) -> None:
    G = memory_reader.G
    code = examples.big_category
    seen, total = _all_pages(
        api, "RELEVANCE", "learning", filter={"category": code, "submittedFrom": "2016-01-01"}
    )
    for edge in seen:
        pith = edge["node"]["pithNumber"]
        assert f"Category:{code}" in G.succ[f"Paper:{pith}"]
        assert edge["node"]["submittedAt"] >= "2016-01-01"
    everything, _ = _all_pages(api, "RELEVANCE", "learning")
    assert (
        total
        == len(seen)
        == sum(
            1
            for e in everything
            if f"Category:{code}" in G.succ[f"Paper:{e['node']['pithNumber']}"]
            and e["node"]["submittedAt"] >= "2016-01-01"
        )
    )


def test_lucene_syntax_in_the_text_is_just_words(api: Api) -> None:
    hostile = 'title:graphs OR "sparse AND (inference^9 ~2 \\ */?'
    found = api.data(SEARCH, text=hostile)["search"]
    words = api.data(SEARCH, text="title graphs OR sparse AND inference 9 2")["search"]
    assert found == words


@pytest.mark.parametrize(
    ("after", "message"),
    [
        pytest.param("bm90IGEgY3Vyc29y", "not a search cursor", id="forged"),
        pytest.param(None, "another search", id="other-search"),
    ],
)
def test_a_cursor_pages_only_its_own_search(api: Api, after: str | None, message: str) -> None:
    if after is None:
        after = api.data(SEARCH, text="graphs", first=2)["search"]["pageInfo"]["endCursor"]
    for text, order in (("networks", "RELEVANCE"), ("graphs", "NEWEST")):
        error = _errors(api, SEARCH, text=text, order=order, after=after)[0]
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert message in error["message"]


def test_search_needs_words(api: Api) -> None:
    assert _errors(api, SEARCH, text=" -- ")[0]["extensions"]["code"] == "BAD_USER_INPUT"


# -- facets ----------------------------------------------------------------------------------------

FACETS = """query($filter: PaperFilter, $first: Int) {
  papers(filter: $filter, first: 1) {
    totalCount
    facets(first: $first) {
      years { value count } categories { value count } archives { value count }
      licenses { value count } authors { value count }
    }
  }
}"""


def _facets_oracle(G: nx.DiGraph, piths: set[str], first: int) -> dict[str, list[dict[str, Any]]]:
    counts: dict[str, Counter[str]] = {
        name: Counter() for name in ("years", "categories", "archives", "licenses", "authors")
    }
    for pith in piths:
        node = f"Paper:{pith}"
        data = G.nodes[node]
        counts["years"][str(data["submittedYear"])] += 1
        counts["licenses"][data["license"]] += 1
        categories = [G.nodes[c] for c, edge in G.succ[node].items() if edge["type"] == "IN_CATEGORY"]
        counts["categories"].update(c["code"] for c in categories)
        counts["archives"].update({c["archive"] for c in categories})
        counts["authors"].update(G.nodes[a]["name"] for a in G.pred[node] if G.nodes[a]["label"] == "Author")
    return {
        name: [
            {"value": v, "count": n}
            for v, n in sorted(found.items(), key=lambda item: (-item[1], item[0]))[:first]
        ]
        for name, found in counts.items()
    }


def test_facets_count_the_whole_listing(api: Api, memory_reader: MemoryReader, examples: Examples) -> None:
    G = memory_reader.G
    code = examples.big_category
    piths = {
        pith
        for pith, data in _papers(G).items()
        if f"Category:{code}" in G.succ[f"Paper:{pith}"] and data["submittedAt"] >= "2015-01-01T00:00:00Z"
    }
    found = api.data(FACETS, filter={"category": code, "submittedFrom": "2015-01-01"}, first=25)["papers"]
    assert found["totalCount"] == len(piths)
    assert found["facets"] == _facets_oracle(G, piths, 25)
    everything = api.data(FACETS, first=None)["papers"]
    assert everything["facets"] == _facets_oracle(G, set(_papers(G)), 10)


def test_facets_of_a_search_and_of_an_authors_papers(
    api: Api, memory_reader: MemoryReader, examples: Examples
) -> None:
    G = memory_reader.G
    query = """query($name: String!) {
      search(text: "learning") { totalCount facets(first: 5) { years { value count } archives { value count } } }
      author(name: $name) { papers { facets(first: 3) { categories { value count } licenses { value count } } } }
    }"""
    data = api.data(query, name=examples.hub_author)
    hits, _ = _all_pages(api, "RELEVANCE", "learning")
    expected = _facets_oracle(G, {e["node"]["pithNumber"] for e in hits}, 5)
    assert data["search"]["facets"] == {"years": expected["years"], "archives": expected["archives"]}
    author_node = next(
        n for n, d in G.nodes(data=True) if d["label"] == "Author" and d["name"] == examples.hub_author
    )
    mine = _facets_oracle(G, {G.nodes[p]["pithNumber"] for p in G.succ[author_node]}, 3)
    assert data["author"]["papers"]["facets"] == {
        "categories": mine["categories"],
        "licenses": mine["licenses"],
    }


@pytest.mark.neo4j
def test_facets_cost_one_statement_and_only_when_asked(neo4j_reader: Neo4jReader) -> None:
    from test_api_nplus1 import CountingDriver

    counting = CountingDriver(neo4j_reader.driver)
    reader = Neo4jReader(counting, neo4j_reader.database, timeout=30)  # type: ignore[arg-type]
    runner = ThreadRunner(2)
    with served(create_app(reader, run=runner, on_shutdown=runner.close), "neo4j", reader) as api:
        api.data('{ papers(filter: {archive: "cs"}) { nodes { title } } }')
        assert len(counting.statements) == 1  # the page: no facet, no count
        counting.statements.clear()
        api.data('{ papers(filter: {archive: "cs"}) { facets { years { count } authors { value } } } }')
        assert len(counting.statements) == 1  # one statement for both facets, no page asked for
        assert "submittedYear" in counting.statements[0] and "combinations" not in counting.statements[0]
        counting.statements.clear()
        api.data(
            '{ papers(filter: {archive: "cs"}) { pageInfo { hasNextPage } facets { licenses { count } } } }'
        )
        assert len(counting.statements) == 2  # the page, and the facet


def test_facets_first_is_bounded(api: Api) -> None:
    error = _errors(api, FACETS, first=101)[0]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"


# -- typeahead -------------------------------------------------------------------------------------

TYPEAHEAD = "query($prefix: String!, $first: Int) { authors(prefix: $prefix, first: $first) { name nameKey paperCount } }"


#: ``ZOE\u0308``: the accent typed as a combining mark (macOS, some input methods).
@pytest.mark.parametrize(
    "typed", ["zoe sm", "ZOË", "sm", "  Zoë   SMITH ", "smi zo", "ZOE\u0308", "zoe\u0308 sm", "sm zoe\u0308"]
)
def test_typeahead_finds_zoe_smith(api: Api, typed: str) -> None:
    found = api.data(TYPEAHEAD, prefix=typed, first=100)["authors"]
    assert "zoë smith" in [a["nameKey"] for a in found], found


def test_typeahead_ranks_by_papers_then_name_key(api: Api, memory_reader: MemoryReader) -> None:
    from pith_graph.api.reads.folding import name_keys

    G = memory_reader.G
    for typed in ("a", "li", "ka", "o'b", "李", "zz"):
        keys = typed.lower()
        expected = sorted(
            (
                (-G.out_degree(node), data["nameKey"])
                for node, data in G.nodes(data=True)
                if data["label"] == "Author" and any(k.startswith(keys) for k in name_keys(data["name"]))
            )
        )[:12]
        found = api.data(TYPEAHEAD, prefix=typed, first=12)["authors"]
        assert [(-a["paperCount"], a["nameKey"]) for a in found] == expected, typed
    assert api.data(TYPEAHEAD, prefix=" - ", first=5)["authors"] == []


@pytest.mark.neo4j
@pytest.mark.parametrize(("scan", "cap"), [(1, 1), (7, 2), (40, 3000), (300, 5), (10**6, 10**6)])
def test_typeahead_on_neo4j_answers_the_same_however_far_it_scans(
    neo4j_reader: Neo4jReader, memory_reader: MemoryReader, scan: int, cap: int
) -> None:
    """The most-prolific-authors walk (cut after ``scan`` authors, tied counts at its end)
    and the full-text index (ranking at most ``cap`` matches, else walking all the way) give
    the memory reader's answer."""
    from pith_graph.api.reads.folding import typed_keys

    neo4j_reader.typeahead_scan = scan
    neo4j_reader.typeahead_cap = cap
    for typed in ("a", "e", "li", "ka", "o'b", "李", "zz", "zoe sm", "a b", "m", "s"):
        keys = list(typed_keys(typed))
        for first in (1, 3, 10, 50):
            assert neo4j_reader.authors_by_prefix(keys, first) == memory_reader.authors_by_prefix(
                keys, first
            ), (typed, first)


def test_typeahead_of_a_graph_saved_before_folded_names_folds_them_itself(
    memory_reader: MemoryReader,
) -> None:
    """The memory reader matches the stored ``nameFolded``; a graph without it (saved before
    0.3) gets the same answers from the names."""
    from pith_graph.api.reads.folding import typed_keys
    from pith_graph.api.reads.memory import MemoryReader as Reader

    old = memory_reader.G.copy()
    for _node, data in old.nodes(data=True):
        data.pop("nameFolded", None)
    before = Reader(old)
    for typed in ("a", "zoe sm", "ZOË", "o'b", "李", "strass", "zz"):
        keys = list(typed_keys(typed))
        assert before.authors_by_prefix(keys, 20) == memory_reader.authors_by_prefix(keys, 20), typed


def test_typeahead_answers_first_authors_from_zero(api: Api, memory_reader: MemoryReader) -> None:
    assert [len(api.data(TYPEAHEAD, prefix="a", first=n)["authors"]) for n in (0, 1, 2)] == [0, 1, 2]
    assert memory_reader.authors_by_prefix(["a"], 0) == memory_reader.authors_by_prefix([], 5) == []


@pytest.mark.neo4j
def test_typeahead_and_search_use_indexes_not_label_scans(neo4j_reader: Neo4jReader) -> None:
    from pith_graph.api.reads import cypher_discovery as cypher
    from pith_graph.api.reads.folding import prefix_query, typed_keys
    from pith_graph.api.reads.text_index import text_query

    def operators(statement: str, **parameters: Any) -> set[str]:
        summary = neo4j_reader.driver.execute_query("PROFILE " + statement, parameters).summary
        return {operator for _, operator, _ in plan_steps(summary.profile)}

    typeahead = operators(
        cypher.READ_AUTHORS_BY_PREFIX,
        index="author_namefolded_fulltext",
        query=prefix_query(typed_keys("zoe sm")),
        first=10,
        cap=3000,
    )
    assert "ProcedureCall" in typeahead and not {o for o in typeahead if "LabelScan" in o or "AllNodes" in o}
    walk = operators(cypher.READ_AUTHORS_BY_PREFIX_SCAN, keys=["a"], first=10, scan=4000, everyone=False)
    assert {o for o in walk if "NodeIndex" in o} and not {
        o for o in walk if "LabelScan" in o or "AllNodes" in o
    }
    search = operators(
        cypher.search_statement("relevance", frozenset()),
        textIndex="paper_text_fulltext",
        lucene=text_query(("graphs",)),
        fetch=50,
        limit=21,
        afterScore=None,
        afterPith=None,
    )
    assert "ProcedureCall" in search and not {o for o in search if "LabelScan" in o or "AllNodes" in o}
