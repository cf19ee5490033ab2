"""The README's Neo4j section is true: its Cypher cookbook returns, on a real server, what
the in-memory graph says it should (the GDS answers checked against networkx's algorithms,
APOC's export against the graph, and no GDS projection left behind); its schema table and
``schema/neo4j-schema.cypher`` match ``schema/``; the constraints it promises exist on the
server.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from pith_graph.cli import main
from pith_graph.loader.analysis import coauthorship_graph
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.cypher_schema import render_schema
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.schema.database import constraints, indexes
from pith_graph.schema.graph import NODES, RELATIONSHIPS, PropertySpec
from pith_graph.testing.corpus import corpus_signers, write_corpus

PROJECT = Path(__file__).resolve().parents[1]
README = (PROJECT / "README.md").read_text(encoding="utf-8")
NEO4J_SECTION = README.split("<!-- section: neo4j -->")[1].split("<!-- /section: neo4j -->")[0]
QUERIES = {
    match.group(1): match.group(0)
    for match in re.finditer(r"^// name: (\w+)\n.*?(?=^```)", NEO4J_SECTION, flags=re.S | re.M)
}
SEED = 21


def _property(spec: PropertySpec) -> str:
    return f"`{spec.name}` ({spec.type}{'' if spec.required else ', optional'})"


def schema_tables() -> str:
    """The README's tables of labels and relationships, rendered from schema/graph.py."""
    lines = ["| label | key (unique) | other properties |", "| --- | --- | --- |"]
    for spec in NODES.values():
        key = ", ".join(f"`{name}`" for name in spec.key)
        rest = ", ".join(_property(p) for p in spec.properties if p.name not in spec.key)
        lines.append(f"| `{spec.label}` | {key} | {rest or '—'} |")
    lines += ["", "| relationship | properties |", "| --- | --- |"]
    for rel in RELATIONSHIPS.values():
        props = ", ".join(_property(p) for p in rel.properties) or "—"
        lines.append(f"| `(:{rel.start})-[:{rel.type}]->(:{rel.end})` | {props} |")
    return "\n".join(lines) + "\n"


def test_readme_schema_tables_match_schema() -> None:
    assert schema_tables() in NEO4J_SECTION


def test_checked_in_schema_file_is_the_rendering(capsys: pytest.CaptureFixture[str]) -> None:
    checked_in = (PROJECT / "schema" / "neo4j-schema.cypher").read_text(encoding="utf-8")
    assert checked_in == render_schema(), "regenerate: pith-graph schema --print > schema/neo4j-schema.cypher"
    assert main(["schema", "--print"]) == 0
    assert capsys.readouterr().out == checked_in
    assert "REQUIRE (n.kind, n.value) IS UNIQUE" in checked_in  # the Alias key decision


def test_the_readme_has_the_cookbook_queries() -> None:
    assert set(QUERIES) == {
        "coauthors",
        "category_over_time",
        "cross_listed_together",
        "versions_of_arxiv_id",
        "newest_versions_by_year",
        "papers_signed_by_key",
        # with GDS and APOC
        "central_authors_of_category",
        "coauthor_communities",
        "papers_similar_by_authors",
        "yearly_category_export",
    }


# -- against the real server -----------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded(neo4j_server: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, nx.DiGraph]:
    """The generated corpus in the session's Neo4j and in a memory graph."""
    info = write_corpus(
        tmp_path_factory.mktemp("cookbook"), 500, seed=SEED, workers=1, layout="jsonl", extra_signer_every=7
    )
    paths, keyring = [str(p) for p in info.shards], resolve_keyring(info.keyring_path)
    memory = MemoryStore()
    run(paths, keyring=keyring, store=memory, workers=1)
    store = neo4j_server.connect()
    try:
        store.clear()
        report = run(paths, keyring=keyring, store=store, workers=1)
        assert report.rejected == 0
    finally:
        store.close()
    return neo4j_server, memory.graph


def cypher(server: Any, text: str, **params: Any) -> list[dict[str, Any]]:
    store = server.connect()
    try:
        records, _, _ = store.driver.execute_query(text, params, database_=store.database)
        return [record.data() for record in records]
    finally:
        store.close()


def query(server: Any, name: str, **params: Any) -> list[dict[str, Any]]:
    return cypher(server, QUERIES[name], **params)


def nodes(G: nx.DiGraph, label: str) -> dict[str, dict[str, Any]]:
    return {node: data for node, data in G.nodes(data=True) if data["label"] == label}


def edges(G: nx.DiGraph, kind: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [(u, v, data) for u, v, data in G.edges(data=True) if data["type"] == kind]


def test_coauthors(loaded: tuple[Any, nx.DiGraph]) -> None:
    server, G = loaded
    papers_of: defaultdict[str, set[str]] = defaultdict(set)
    for author, paper, _ in edges(G, "AUTHORED"):
        papers_of[author].add(paper)
    authors_of: defaultdict[str, set[str]] = defaultdict(set)
    for author, papers in papers_of.items():
        for paper in papers:
            authors_of[paper].add(author)

    def coauthors(author: str) -> Counter[str]:
        return Counter(co for paper in papers_of[author] for co in authors_of[paper] - {author})

    author = max(sorted(papers_of), key=lambda a: (len(coauthors(a)), len(papers_of[a])))
    expected = sorted(
        ({"coauthor": G.nodes[co]["name"], "papers": n} for co, n in coauthors(author).items()),
        key=lambda row: (-row["papers"], row["coauthor"]),
    )
    assert len(expected) >= 5
    assert query(server, "coauthors", nameKey=G.nodes[author]["nameKey"]) == expected


def test_category_over_time(loaded: tuple[Any, nx.DiGraph]) -> None:
    server, G = loaded
    in_category = Counter(category for _, category, _ in edges(G, "IN_CATEGORY"))
    category = in_category.most_common(1)[0][0]
    years = Counter(
        G.nodes[paper]["submittedYear"] for paper, c, _ in edges(G, "IN_CATEGORY") if c == category
    )
    expected = [{"year": year, "papers": n} for year, n in sorted(years.items())]
    assert len(expected) > 3
    assert query(server, "category_over_time", category=G.nodes[category]["code"]) == expected


def test_cross_listed_together(loaded: tuple[Any, nx.DiGraph]) -> None:
    server, G = loaded
    categories: defaultdict[str, list[str]] = defaultdict(list)
    for paper, category, _ in edges(G, "IN_CATEGORY"):
        categories[paper].append(G.nodes[category]["code"])
    pairs = Counter(pair for codes in categories.values() for pair in combinations(sorted(codes), 2))
    ranked = sorted(pairs.items(), key=lambda item: (-item[1], item[0]))[:10]
    expected = [{"category": a, "other": b, "papers": n} for (a, b), n in ranked]
    assert len(expected) == 10
    assert query(server, "cross_listed_together") == expected


def test_newest_versions_by_year(loaded: tuple[Any, nx.DiGraph]) -> None:
    """Each id once, by its newest version (``isLatest``): the memory graph's newest per source."""
    server, G = loaded
    sources: defaultdict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for data in nodes(G, "Paper").values():
        sources[data["sourceKind"], data["sourceId"]].append(data)
    newest = {
        source: max(papers, key=lambda p: (p["sourceVersion"], p["builtAt"], p["pithNumber"]))
        for source, papers in sources.items()
    }
    assert len(newest) < len(nodes(G, "Paper"))  # some ids have several versions
    years = Counter(data["submittedYear"] for data in newest.values())
    assert query(server, "newest_versions_by_year") == [
        {"year": year, "papers": n} for year, n in sorted(years.items())
    ]


def test_versions_of_arxiv_id(loaded: tuple[Any, nx.DiGraph]) -> None:
    server, G = loaded
    versions = {
        alias: list(G.successors(alias))
        for alias, data in nodes(G, "Alias").items()
        if data["kind"] == "arxiv"
    }
    alias = max(sorted(versions), key=lambda a: len(versions[a]))
    assert len(versions[alias]) >= 2
    expected = sorted(
        (
            {
                key: G.nodes[paper][prop]
                for key, prop in (
                    ("version", "sourceVersion"),
                    ("pithNumber", "pithNumber"),
                    ("title", "title"),
                    ("builtAt", "builtAt"),
                )
            }
            for paper in versions[alias]
        ),
        key=lambda row: row["version"],
    )
    assert query(server, "versions_of_arxiv_id", arxivId=G.nodes[alias]["value"]) == expected


def test_papers_signed_by_key(loaded: tuple[Any, nx.DiGraph]) -> None:
    server, G = loaded
    _, builder = corpus_signers(SEED)
    expected = sorted(
        (
            {
                "pithNumber": G.nodes[paper]["pithNumber"],
                "title": G.nodes[paper]["title"],
                "signer": G.nodes[signer]["signerId"],
                "eventTypes": list(data.get("eventTypes", ())),  # a tuple in memory; absent: no event
                "signedBundle": data["signedBundle"],
            }
            for signer, paper, data in edges(G, "SIGNED")
            if builder.key_id in data["keyIds"]
        ),
        key=lambda row: row["pithNumber"],
    )
    assert 0 < len(expected) < len(nodes(G, "Paper"))
    assert query(server, "papers_signed_by_key", keyId=builder.key_id) == expected


# -- with GDS and APOC ------------------------------------------------------------------------


def projections_left(server: Any) -> list[str]:
    store = server.connect()
    try:
        records, _, _ = store.driver.execute_query("CALL gds.graph.list() YIELD graphName RETURN graphName")
        return [record["graphName"] for record in records]
    finally:
        store.close()


def authors_by_paper(G: nx.DiGraph) -> dict[str, set[str]]:
    authors: defaultdict[str, set[str]] = defaultdict(set)
    for author, paper, _ in edges(G, "AUTHORED"):
        authors[paper].add(author)
    return dict(authors)


def coauthors_among(G: nx.DiGraph, papers: set[str]) -> nx.Graph:
    """Authors linked when they share a paper of ``papers``; weight = papers shared."""
    C = nx.Graph()
    for paper, authors in authors_by_paper(G).items():
        if paper in papers:
            for a, b in combinations(sorted(authors), 2):
                C.add_edge(a, b, weight=C.get_edge_data(a, b, {"weight": 0})["weight"] + 1)
    return C


def busiest_category(G: nx.DiGraph) -> str:
    return Counter(category for _, category, _ in edges(G, "IN_CATEGORY")).most_common(1)[0][0]


def test_central_authors_of_category_is_pagerank(loaded: tuple[Any, nx.DiGraph]) -> None:
    server, G = loaded
    category = busiest_category(G)
    C = coauthors_among(G, {paper for paper, c, _ in edges(G, "IN_CATEGORY") if c == category})
    assert C.number_of_nodes() > 50
    expected = nx.pagerank(C, weight="weight", tol=1e-12, max_iter=1000)
    node_of = {G.nodes[node]["name"]: node for node in C}
    rows = query(server, "central_authors_of_category", category=G.nodes[category]["code"])
    assert len(rows) == 10
    for row in rows:
        assert row["pageRank"] == pytest.approx(expected[node_of[row["author"]]], rel=1e-4)
    top = sorted(expected.values(), reverse=True)[:10]
    assert [row["pageRank"] for row in rows] == pytest.approx(top, rel=1e-4)
    assert projections_left(server) == []


def test_coauthorship_weights_are_the_papers_two_authors_share(tmp_path: Path) -> None:
    """README: ``coauthorship_graph(G)``, Author–Author, weight = shared papers: every pair of
    authors of a paper is an edge, weighted by how many papers name both, and every author is
    a node (a mutation weighing each edge 1 was caught by no test that runs without Neo4j)."""
    info = write_corpus(tmp_path, 300, seed=SEED, workers=1, layout="jsonl", extra_signer_every=7)
    store = MemoryStore()
    report = run(
        [str(p) for p in info.shards], keyring=resolve_keyring(info.keyring_path), store=store, workers=1
    )
    assert report.rejected == 0
    G = store.graph
    shared: Counter[frozenset[str]] = Counter()
    for paper in nodes(G, "Paper"):
        authors = sorted(a for a in G.predecessors(paper) if G.nodes[a]["label"] == "Author")
        shared.update(frozenset(pair) for pair in combinations(authors, 2))
    C = coauthorship_graph(G)
    assert not C.is_directed() and set(C) == set(nodes(G, "Author"))
    assert {frozenset((a, b)): w for a, b, w in C.edges(data="weight")} == dict(shared)
    assert max(shared.values()) >= 2  # some pair shares more than one paper


def test_coauthor_communities_are_as_good_as_networkx_louvain(loaded: tuple[Any, nx.DiGraph]) -> None:
    server, G = loaded
    C = coauthorship_graph(G)
    C.remove_nodes_from(list(nx.isolates(C)))  # authors without a coauthor are not projected
    node_of = {G.nodes[node]["name"]: node for node in C}
    rows = query(server, "coauthor_communities", minSize=1)
    communities = [{node_of[name] for name in row["members"]} for row in rows]
    # A partition of the coauthor graph, largest first, members sorted, never across components.
    assert sum(map(len, communities)) == C.number_of_nodes() == len(set().union(*communities))
    assert [row["size"] for row in rows] == sorted((len(c) for c in communities), reverse=True)
    assert all(row["members"] == sorted(row["members"]) for row in rows)
    component = {node: i for i, nodes in enumerate(nx.connected_components(C)) for node in nodes}
    assert all(len({component[node] for node in community}) == 1 for community in communities)
    # As good as networkx's Louvain (both are heuristics: compare the modularity reached).
    ours = nx.community.modularity(C, communities, weight="weight")
    theirs = max(
        nx.community.modularity(
            C, nx.community.louvain_communities(C, weight="weight", seed=seed), weight="weight"
        )
        for seed in range(3)
    )
    assert ours > 0.5
    assert ours >= theirs - 0.02, (ours, theirs)
    # Communities of one size come by their first member.
    assert len(rows) > len({row["size"] for row in rows}), "ties to order"
    assert rows == sorted(rows, key=lambda row: (-row["size"], row["members"][0]))
    assert projections_left(server) == []


def test_coauthor_communities_keep_those_of_min_size(neo4j_server: Any) -> None:
    """``$minSize`` and the order, as the README writes them (from ``UNWIND`` on), over
    communities chosen to test them: a second Louvain run would cost seconds, and may draw
    other communities."""
    _, tail = QUERIES["coauthor_communities"].split("\nUNWIND communities AS members\n")
    communities = [
        ["Bo", "Cy"],
        ["Ann"],
        ["Dee", "Ed", "Fay"],
        ["Xu", "Yi"],
        ["Al", "Mo", "No"],
        ["Gus", "Hal"],
    ]

    def kept(min_size: int) -> list[dict[str, Any]]:
        text = "WITH $communities AS communities\nUNWIND communities AS members\n" + tail
        return cypher(neo4j_server, text, communities=communities, minSize=min_size)

    assert kept(2) == [
        {"size": 3, "members": ["Al", "Mo", "No"]},
        {"size": 3, "members": ["Dee", "Ed", "Fay"]},
        {"size": 2, "members": ["Bo", "Cy"]},
        {"size": 2, "members": ["Gus", "Hal"]},
        {"size": 2, "members": ["Xu", "Yi"]},
    ]
    assert [row["members"][0] for row in kept(3)] == ["Al", "Dee"]


def test_papers_similar_by_authors_is_jaccard(loaded: tuple[Any, nx.DiGraph]) -> None:
    server, G = loaded
    authors = authors_by_paper(G)
    papers_of: defaultdict[str, set[str]] = defaultdict(set)
    for paper, names in authors.items():
        for author in names:
            papers_of[author].add(paper)

    def neighbours(paper: str) -> set[str]:
        return set().union(*(papers_of[a] for a in authors[paper])) - {paper}

    source = max(sorted(authors), key=lambda paper: len(neighbours(paper)))
    jaccard = {
        other: len(authors[source] & authors[other]) / len(authors[source] | authors[other])
        for other in neighbours(source)
    }
    assert len(jaccard) > 10
    rows = query(server, "papers_similar_by_authors", pithNumber=G.nodes[source]["pithNumber"])
    assert len(rows) == 10
    paper_of = {G.nodes[paper]["pithNumber"]: paper for paper in authors}
    for row in rows:
        other = paper_of[row["pithNumber"]]
        assert row["similarity"] == pytest.approx(jaccard[other])
        assert row["sharedAuthors"] == len(authors[source] & authors[other])
        assert row["title"] == G.nodes[other]["title"]
    assert [row["similarity"] for row in rows] == pytest.approx(sorted(jaccard.values(), reverse=True)[:10])
    assert projections_left(server) == []


def test_yearly_category_export_streams_the_papers_as_json_lines(loaded: tuple[Any, nx.DiGraph]) -> None:
    server, G = loaded
    category = busiest_category(G)
    in_category = [paper for paper, c, _ in edges(G, "IN_CATEGORY") if c == category]
    year = Counter(G.nodes[paper]["submittedYear"] for paper in in_category).most_common(1)[0][0]
    authors = authors_by_paper(G)
    expected = sorted(
        (
            {
                "pithNumber": G.nodes[paper]["pithNumber"],
                "title": G.nodes[paper]["title"],
                "submittedAt": G.nodes[paper]["submittedAt"],
                "authors": sorted(G.nodes[a]["name"] for a in authors.get(paper, ())),
            }
            for paper in in_category
            if G.nodes[paper]["submittedYear"] == year
        ),
        key=lambda row: row["pithNumber"],
    )
    assert len(expected) > 5
    [row] = query(server, "yearly_category_export", category=G.nodes[category]["code"], year=year)
    assert row["rows"] == len(expected)
    assert [json.loads(line) for line in row["data"].splitlines()] == expected


def test_the_promised_constraints_and_indexes_exist(neo4j_server: Any) -> None:
    assert (
        main(
            [
                "schema",
                "--backend",
                "neo4j",
                "--uri",
                neo4j_server.uri,
                "--user",
                neo4j_server.user,
                "--database",
                neo4j_server.database,
                *(["--password", neo4j_server.password] if neo4j_server.password else []),
            ]
        )
        == 0
    )
    store = neo4j_server.connect()
    try:
        found, _, _ = store.driver.execute_query(
            "SHOW CONSTRAINTS YIELD name, labelsOrTypes, properties", database_=store.database
        )
        shown = {r["name"]: (r["labelsOrTypes"], r["properties"]) for r in found}
        for spec in constraints():
            assert shown[spec.name] == ([spec.label], list(spec.properties))
        found, _, _ = store.driver.execute_query(
            "SHOW INDEXES YIELD name, type, state", database_=store.database
        )
        state = {r["name"]: (r["type"], r["state"]) for r in found}
        for index in indexes():
            assert state[index.name] == ("FULLTEXT" if index.kind == "fulltext" else "RANGE", "ONLINE")
    finally:
        store.close()
