"""Independent oracles for every API field that ranks, filters or aggregates.

Parity between the two backends says nothing when both share a mistake, so each answer here is
recomputed with plain Python over the networkx graph of the same bundles (never the reader
code: no MemoryReader index, no shared word splitting), then asked of both backends over HTTP.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

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

FIRST = 100


def _label(G: nx.MultiDiGraph, label: str) -> list[str]:
    return [n for n, d in G.nodes(data=True) if d["label"] == label]


def _authors_of(G: nx.MultiDiGraph, paper: str) -> list[str]:
    return [a for a in G.pred[paper] if G.nodes[a]["label"] == "Author"]


def _categories_of(G: nx.MultiDiGraph, paper: str) -> list[str]:
    return [c for c in G.succ[paper] if G.nodes[c]["label"] == "Category"]


def _newest(G: nx.MultiDiGraph, papers: list[str]) -> list[str]:
    return sorted(papers, key=lambda p: (G.nodes[p]["submittedAt"], G.nodes[p]["pithNumber"]), reverse=True)


@pytest.fixture(scope="module")
def G(memory_reader: MemoryReader) -> nx.MultiDiGraph:
    return memory_reader.G


@pytest.fixture(scope="module")
def big_categories(G: nx.MultiDiGraph) -> list[str]:
    ranked = sorted(_label(G, "Category"), key=lambda c: (-G.in_degree(c), c))
    return [G.nodes[c]["code"] for c in ranked[:3]] + [G.nodes[ranked[-1]]["code"]]


def test_top_authors_of_a_category(api: Api, G: nx.MultiDiGraph, big_categories: list[str]) -> None:
    for code in big_categories:
        counts: Counter[str] = Counter()
        for paper in G.pred[f"Category:{code}"]:
            counts.update(G.nodes[a]["nameKey"] for a in _authors_of(G, paper))
        expected = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:FIRST]
        found = api.data(
            "query($c: String!) { category(code: $c) { topAuthors(first: 100) { count author { nameKey } } } }",
            c=code,
        )["category"]["topAuthors"]
        assert [(f["author"]["nameKey"], f["count"]) for f in found] == expected, code


def test_categories_listed_together(api: Api, G: nx.MultiDiGraph, big_categories: list[str]) -> None:
    for code in big_categories:
        counts: Counter[str] = Counter()
        for paper in G.pred[f"Category:{code}"]:
            counts.update(G.nodes[c]["code"] for c in _categories_of(G, paper) if G.nodes[c]["code"] != code)
        expected = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:FIRST]
        found = api.data(
            "query($c: String!) { category(code: $c) { coListed(first: 100) { count category { code } } } }",
            c=code,
        )["category"]["coListed"]
        assert [(f["category"]["code"], f["count"]) for f in found] == expected, code


def test_related_papers_share_authors_and_skip_own_versions(api: Api, G: nx.MultiDiGraph) -> None:
    papers = sorted(_label(G, "Paper"), key=lambda p: (-len(_authors_of(G, p)), p))[:5]
    for paper in papers:
        source = (G.nodes[paper]["sourceKind"], G.nodes[paper]["sourceId"])
        shared: Counter[str] = Counter()
        for author in _authors_of(G, paper):
            for other in G.succ[author]:
                if (G.nodes[other]["sourceKind"], G.nodes[other]["sourceId"]) != source:
                    shared[other] += 1
        expected = sorted(
            shared.items(),
            key=lambda item: (item[1], G.nodes[item[0]]["submittedAt"], G.nodes[item[0]]["pithNumber"]),
            reverse=True,
        )[:20]
        found = api.data(
            "query($id: String!) { paper(id: $id) { relatedPapers(first: 20) { sharedAuthors paper { pithNumber } } } }",
            id=G.nodes[paper]["pithNumber"],
        )["paper"]["relatedPapers"]
        assert [(f"Paper:{r['paper']['pithNumber']}", r["sharedAuthors"]) for r in found] == expected


def test_an_authors_categories(api: Api, G: nx.MultiDiGraph) -> None:
    authors = sorted(_label(G, "Author"), key=lambda a: (-G.out_degree(a), a))[:5]
    for author in authors:
        counts: Counter[str] = Counter()
        for paper in G.succ[author]:
            counts.update(G.nodes[c]["code"] for c in _categories_of(G, paper))
        expected = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        found = api.data(
            "query($n: String!) { author(name: $n) { categories { count category { code } } } }",
            n=G.nodes[author]["name"],
        )["author"]["categories"]
        assert [(f["category"]["code"], f["count"]) for f in found] == expected


def _words(title: str) -> set[str]:
    """A deliberately plain tokenizer: ASCII letters and digits, lower-cased."""
    return set(re.findall(r"[a-z0-9]+", title.lower()))


def test_title_filter_holds_every_word(api: Api, G: nx.MultiDiGraph) -> None:
    titles = {G.nodes[p]["pithNumber"]: G.nodes[p]["title"] for p in _label(G, "Paper")}
    plain = {pith: title for pith, title in titles.items() if re.fullmatch(r"[A-Za-z0-9 ,:-]+", title)}
    vocabulary: Counter[str] = Counter(word for title in plain.values() for word in _words(title))
    common = [word for word, count in vocabulary.most_common() if len(word) > 3][:40]
    queries = [
        common[0],
        f"{common[1]} {common[2]}",
        f"{common[3].upper()}  {common[7]}",
        f"{common[5]} {common[9]} {common[11]}",
    ]
    for text in queries:
        wanted = set(text.lower().split())
        expected = {pith for pith, title in plain.items() if wanted <= _words(title)}
        found = api.data(
            "query($t: String!) { papers(first: 100, filter: {title: $t}) { totalCount nodes { pithNumber } } }",
            t=text,
        )["papers"]
        # non-plain titles may also match: the oracle's set must be found, and nothing without the words
        got = {n["pithNumber"] for n in found["nodes"]}
        assert found["totalCount"] >= len(expected)
        if found["totalCount"] <= 100:
            assert expected <= got, text
        for pith in got:
            assert wanted <= {w.lower() for w in re.findall(r"\w+", titles[pith])} | _words(titles[pith]), (
                text,
                titles[pith],
            )


def test_a_listing_is_the_filtered_papers_newest_first(api: Api, G: nx.MultiDiGraph) -> None:
    by_license: defaultdict[str, list[str]] = defaultdict(list)
    for paper in _label(G, "Paper"):
        by_license[G.nodes[paper]["license"]].append(paper)
    license_, papers = max(by_license.items(), key=lambda item: len(item[1]))
    expected = [G.nodes[p]["pithNumber"] for p in _newest(G, papers)][:50]
    found = api.data(
        "query($l: String!) { papers(first: 50, filter: {license: $l}) { totalCount nodes { pithNumber } } }",
        l=license_,
    )["papers"]
    assert found["totalCount"] == len(papers)
    assert [n["pithNumber"] for n in found["nodes"]] == expected
