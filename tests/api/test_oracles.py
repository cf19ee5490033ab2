"""Independent oracles for every API field that ranks, filters or aggregates.

Parity between the two backends says nothing when both share a mistake, so each answer here is
recomputed with plain Python over the networkx graph of the same bundles (never the reader
code: no MemoryReader index, no shared word splitting), then asked of both backends over HTTP.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable
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
    widest = 0
    for author in authors:
        counts: Counter[str] = Counter()
        for paper in G.succ[author]:
            counts.update(G.nodes[c]["code"] for c in _categories_of(G, paper))
        expected = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        found = api.data(
            "query($n: String!) { author(name: $n) { all: categories(first: 100) { count category { code } }"
            " top: categories { count category { code } } } }",
            n=G.nodes[author]["name"],
        )["author"]
        assert [(f["category"]["code"], f["count"]) for f in found["all"]] == expected
        assert [(f["category"]["code"], f["count"]) for f in found["top"]] == expected[:20]  # by default
        widest = max(widest, len(expected))
    assert widest > 20, "some author's categories are more than a default page"


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


def test_coauthors_rank_by_shared_papers_then_name_key(api: Api, G: nx.MultiDiGraph) -> None:
    query = (
        "query($n: String!, $first: Int) { author(name: $n) "
        "{ coauthors(first: $first) { sharedPapers author { nameKey } } } }"
    )
    cuts_in_a_tie = 0
    for author in sorted(_label(G, "Author"), key=lambda a: (-G.out_degree(a), a))[:6]:
        shared: Counter[str] = Counter()
        for paper in G.succ[author]:
            shared.update(G.nodes[a]["nameKey"] for a in _authors_of(G, paper) if a != author)
        ranked = sorted(shared.items(), key=lambda item: (-item[1], item[0]))
        # a page that ends inside a run of equal counts: only the tie order decides who is on it
        tie = next((k for k in range(1, len(ranked)) if ranked[k - 1][1] == ranked[k][1]), None)
        cuts_in_a_tie += tie is not None
        for first in {0, 1, tie or 1, FIRST}:
            found = api.data(query, n=G.nodes[author]["name"], first=first)["author"]["coauthors"]
            assert [(c["author"]["nameKey"], c["sharedPapers"]) for c in found] == ranked[:first], first
    assert cuts_in_a_tie


# -- facets: counts over the whole filtered listing -------------------------------------------------


def _name_key(name: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def _is_newest_version(G: nx.MultiDiGraph, paper: str) -> bool:
    """No paper of its arXiv id has a greater version, then build, then pith number."""
    data = G.nodes[paper]
    rank = [
        (d["sourceVersion"], d["builtAt"], d["pithNumber"])
        for d in (G.nodes[p] for p in _label(G, "Paper"))
        if (d["sourceKind"], d["sourceId"]) == (data["sourceKind"], data["sourceId"])
    ]
    return max(rank) == (data["sourceVersion"], data["builtAt"], data["pithNumber"])


def _passes(G: nx.MultiDiGraph, paper: str, filter_: dict[str, Any]) -> bool:
    """``PaperFilter`` as the schema documents it (title aside)."""
    data = G.nodes[paper]
    categories = [G.nodes[c] for c in _categories_of(G, paper)]
    checks: dict[str, Callable[[Any], bool]] = {
        "category": lambda code: code in {c["code"] for c in categories},
        "archive": lambda archive: archive in {c["archive"] for c in categories},
        "author": lambda name: _name_key(name) in {G.nodes[a]["nameKey"] for a in _authors_of(G, paper)},
        "license": lambda url: data["license"] == url,
        "submittedFrom": lambda day: data["submittedAt"] >= day,
        "submittedBefore": lambda day: data["submittedAt"] < day,
        "latestVersions": lambda latest: not latest or _is_newest_version(G, paper),
        "categories": lambda codes: bool(set(codes) & {c["code"] for c in categories}),  # since 0.9.1
        "excludeCategories": lambda codes: not set(codes) & {c["code"] for c in categories},
    }
    return all(checks[key](value) for key, value in filter_.items())


def _facet_values(G: nx.MultiDiGraph, paper: str) -> dict[str, set[str]]:
    categories = [G.nodes[c] for c in _categories_of(G, paper)]
    return {
        "years": {G.nodes[paper]["submittedAt"][:4]},
        "categories": {c["code"] for c in categories},
        "archives": {c["archive"] for c in categories},  # once per archive
        "licenses": {G.nodes[paper]["license"]},
        "authors": {G.nodes[a]["name"] for a in _authors_of(G, paper)},
    }


FACETS = """query($f: PaperFilter, $k: Int) { papers(filter: $f, first: 0) { totalCount facets(first: $k) {
  years { value count } categories { value count } archives { value count }
  licenses { value count } authors { value count } } } }"""


def test_facets_count_every_filtered_paper(api: Api, G: nx.MultiDiGraph) -> None:
    papers = _label(G, "Paper")
    hub = max(_label(G, "Author"), key=lambda a: (G.out_degree(a), a))
    licenses = Counter(G.nodes[p]["license"] for p in papers)
    middle = sorted(G.nodes[p]["submittedAt"] for p in papers)[len(papers) // 2]  # a paper's own time
    cases: list[tuple[dict[str, Any], int]] = [
        ({}, 3),
        ({"archive": "math"}, 4),
        ({"author": "  " + G.nodes[hub]["name"].upper().replace(" ", "   ")}, 5),
        ({"license": licenses.most_common()[1][0], "submittedBefore": middle[:10]}, 10),
        ({"archive": "cs", "category": "stat.ML", "submittedFrom": "2012-01-01"}, FIRST),
        ({"submittedFrom": middle, "submittedBefore": "2026-06-01"}, 1),
        ({"latestVersions": True}, 5),  # since 0.9.0
        ({"latestVersions": True, "archive": "cs", "submittedFrom": "2012-01-01"}, FIRST),
        ({"categories": ["math.PR", "stat.ML", "hep-th"]}, 6),  # since 0.9.1
        ({"excludeCategories": ["cs.LG", "math.CO"], "archive": "cs"}, FIRST),
        (
            {
                "categories": ["cs.AI", "stat.ML"],
                "excludeCategories": ["cs.LG"],
                "submittedFrom": "2012-01-01",
            },
            7,
        ),
    ]
    cuts_in_a_tie = 0
    for filter_, first in cases:
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        listed = [p for p in papers if _passes(G, p, filter_)]
        for paper in listed:
            for facet, values in _facet_values(G, paper).items():
                counts[facet].update(values)
        assert listed, filter_
        found = api.data(FACETS, f=filter_, k=first)["papers"]
        assert found["totalCount"] == len(listed), filter_
        for facet in ("years", "categories", "archives", "licenses", "authors"):
            ranked = sorted(counts[facet].items(), key=lambda item: (-item[1], item[0]))
            cuts_in_a_tie += len(ranked) > first and ranked[first - 1][1] == ranked[first][1]
            got = [(v["value"], v["count"]) for v in found["facets"][facet]]
            assert got == ranked[:first], (filter_, facet)
    assert cuts_in_a_tie


# -- authors(prefix:): the typeahead ---------------------------------------------------------------

#: Letters NFKD leaves whole, written as the ASCII a person types for them.
_LETTERS = str.maketrans({"ø": "o", "ł": "l", "đ": "d", "æ": "ae", "œ": "oe", "ı": "i", "’": "'"})


def _folded_words(text: str) -> list[str]:
    """Words of a name or of what was typed: case folded, accents dropped (NFKD), Latin only."""
    decomposed = unicodedata.normalize("NFKD", text.casefold().translate(_LETTERS))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return re.findall(r"[a-z0-9]+(?:'[a-z0-9]+)*", plain)


def test_typeahead_matches_word_prefixes_most_papers_first(api: Api, G: nx.MultiDiGraph) -> None:
    authors = [(G.nodes[a], G.out_degree(a)) for a in _label(G, "Author")]
    typed = ["a", "ka", "BER", "zo", "jo", "lukasz", "so", "or", "duc", "jurg", "nguy", "o'b"]
    typed += ["ma s", "s ma", "Zoë", "ÅS", "velstr", "smith zo", "qqq"]
    for data, _ in sorted(authors, key=lambda item: (-item[1], item[0]["nameKey"]))[:5]:
        typed.append("  " + "   ".join(word[:2].upper() for word in reversed(data["name"].split())))
    hits = 0
    for text in typed:
        keys = _folded_words(text)
        matching = [
            (-papers, data["nameKey"])
            for data, papers in authors
            if all(any(word.startswith(key) for word in _folded_words(data["nameKey"])) for key in keys)
        ]
        expected = sorted(matching)[:FIRST]
        hits += len(expected)
        found = api.data(
            "query($p: String!) { authors(prefix: $p, first: 100) { nameKey paperCount } }", p=text
        )["authors"]
        assert [(-a["paperCount"], a["nameKey"]) for a in found] == expected, text
    assert hits > 200


# -- search(text:): every word, in the title or the abstract excerpt --------------------------------


def _search_words(text: str) -> set[str]:
    """Plain word splitting for ASCII text: letters, digits and ``_``, joined by ``.`` or ``'``."""
    return set(re.findall(r"[a-z0-9_]+(?:[.'][a-z0-9_]+)*", text.lower()))


SEARCH = """query($t: String!, $f: PaperFilter, $o: SearchOrder, $after: String) {
  search(text: $t, filter: $f, orderBy: $o, first: 100, after: $after) {
    totalCount edges { node { pithNumber } } pageInfo { hasNextPage endCursor } } }"""


def _search(api: Api, text: str, order: str, filter_: dict[str, str]) -> tuple[list[str], int]:
    found: list[str] = []
    after = None
    while True:
        page = api.data(SEARCH, t=text, f=filter_, o=order, after=after)["search"]
        found += [edge["node"]["pithNumber"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return found, page["totalCount"]
        after = page["pageInfo"]["endCursor"]


def test_search_finds_every_paper_holding_every_word(api: Api, G: nx.MultiDiGraph) -> None:
    papers = _newest(G, _label(G, "Paper"))
    texts = [(G.nodes[p]["title"] + "\n" + G.nodes[p]["abstractExcerpt"]).lower() for p in papers]
    words = [_search_words(text) for text in texts]
    # a word that ever touches a non-ASCII letter might be split otherwise: not asked for
    glued = [_search_words(re.sub(r"[^\x00-\x7f]", "a", text)) for text in texts]
    frequency = Counter(w for found in words for w in found)
    unsure = {w for found, joined in zip(words, glued, strict=True) for w in found - joined}
    usable = [w for w, _ in frequency.most_common() if w.isalpha() and len(w) > 5 and w not in unsure]
    title_only = next(w for w in usable if all(w not in t.split("\n")[1] for t in texts))
    queries: list[tuple[str, dict[str, str]]] = [
        (usable[0], {}),
        (f"{usable[1]} {usable[6]}", {}),
        (f"{usable[2].upper()},  {usable[9]}!", {}),
        (" ".join(usable[3:6]), {}),
        (title_only, {}),
        (usable[-1], {}),
        (usable[4], {"archive": "math"}),
    ]
    hits = [p for p, found in zip(papers, words, strict=True) if usable[0] in found]
    licenses = Counter(G.nodes[p]["license"] for p in hits)
    days = sorted({G.nodes[p]["submittedAt"] for p in hits})  # bounds falling on hits: inclusive, exclusive
    queries += [
        (usable[0], {"license": min(licenses, key=lambda url: (licenses[url], url))}),
        (usable[0], {"submittedFrom": days[len(days) // 3], "submittedBefore": days[2 * len(days) // 3]}),
    ]
    for text, filter_ in queries:
        wanted = _search_words(text)
        expected = [
            G.nodes[p]["pithNumber"]
            for p, found in zip(papers, words, strict=True)
            if wanted <= found and _passes(G, p, filter_)
        ]
        assert expected, text
        newest, total = _search(api, text, "NEWEST", filter_)
        assert total == len(expected), text
        assert newest == expected, text
        ranked, total = _search(api, text, "RELEVANCE", filter_)
        assert total == len(expected) == len(ranked) and set(ranked) == set(expected), text


PATH_QUERY = (
    "query($a: String!, $b: String!) { collaborationPath(from: $a, to: $b, maxHops: 2) "
    "{ from { nameKey } paper { pithNumber } to { nameKey } } }"
)


def _tied_chains(H: nx.Graph, key: dict[str, str], wanted: int) -> list[list[list[str]]]:
    """The keys of every shortest chain, for the first ``wanted`` author pairs two papers apart
    joined by several."""
    found = []
    for source in sorted(n for n in H if n.startswith("Author:")):
        for target, hops in sorted(nx.single_source_shortest_path_length(H, source, cutoff=4).items()):
            chains = [[key[n] for n in path] for path in nx.all_shortest_paths(H, source, target)]
            if hops == 4 and len(chains) > 1:
                found.append(chains)
                if len(found) == wanted:
                    return found
    return found


def test_a_collaboration_path_is_the_smallest_of_the_shortest_chains(api: Api, G: nx.MultiDiGraph) -> None:
    """Of several shortest author–paper chains, the one whose sequence of keys (name keys and
    pith numbers) is smallest; ``[]`` from an author to the same author."""
    H = nx.Graph((a, p) for a, p, d in G.edges(data=True) if d["type"] == "AUTHORED")
    key = {n: G.nodes[n]["nameKey" if G.nodes[n]["label"] == "Author" else "pithNumber"] for n in H}
    tied = _tied_chains(H, key, 3)
    assert len(tied) == 3
    for chains in tied:
        steps = api.data(PATH_QUERY, a=chains[0][0], b=chains[0][-1])["collaborationPath"]
        answer = [steps[0]["from"]["nameKey"]]
        answer += [k for step in steps for k in (step["paper"]["pithNumber"], step["to"]["nameKey"])]
        assert answer == min(chains)
    assert api.data(PATH_QUERY, a=tied[0][0][0], b=tied[0][0][0])["collaborationPath"] == []
