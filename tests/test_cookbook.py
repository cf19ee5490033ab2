"""The README's Neo4j section is true: its Cypher cookbook returns, on a real server, what
the in-memory graph says it should; its schema table and ``schema/neo4j-schema.cypher`` match
``schema/``; the constraints it promises exist on the server.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from pith_graph.cli import main
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.cypher import render_schema
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.schema.database import constraints, indexes
from pith_graph.schema.graph import NODES, RELATIONSHIPS
from pith_graph.testing.corpus import corpus_signers, write_corpus

PROJECT = Path(__file__).resolve().parents[1]
README = (PROJECT / "README.md").read_text(encoding="utf-8")
NEO4J_SECTION = README.split("<!-- section: neo4j -->")[1].split("<!-- /section: neo4j -->")[0]
QUERIES = {
    match.group(1): match.group(0)
    for match in re.finditer(r"^// name: (\w+)\n.*?(?=^```)", NEO4J_SECTION, flags=re.S | re.M)
}
SEED = 21


def schema_tables() -> str:
    """The README's tables of labels and relationships, rendered from schema/graph.py."""
    lines = ["| label | key (unique) | other properties |", "| --- | --- | --- |"]
    for spec in NODES.values():
        key = ", ".join(f"`{name}`" for name in spec.key)
        rest = ", ".join(f"`{p.name}` ({p.type})" for p in spec.properties if p.name not in spec.key)
        lines.append(f"| `{spec.label}` | {key} | {rest or '—'} |")
    lines += ["", "| relationship | properties |", "| --- | --- |"]
    for rel in RELATIONSHIPS.values():
        props = ", ".join(f"`{p.name}` ({p.type})" for p in rel.properties) or "—"
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


def test_the_readme_has_the_five_cookbook_queries() -> None:
    assert set(QUERIES) == {
        "coauthors",
        "category_over_time",
        "cross_listed_together",
        "versions_of_arxiv_id",
        "papers_signed_by_key",
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


def query(server: Any, name: str, **params: Any) -> list[dict[str, Any]]:
    store = server.connect()
    try:
        records, _, _ = store.driver.execute_query(QUERIES[name], params, database_=store.database)
        return [record.data() for record in records]
    finally:
        store.close()


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
                "eventTypes": list(data["eventTypes"]),  # a tuple in memory (shared, read-only)
                "signedBundle": data["signedBundle"],
            }
            for signer, paper, data in edges(G, "SIGNED")
            if builder.key_id in data["keyIds"]
        ),
        key=lambda row: row["pithNumber"],
    )
    assert 0 < len(expected) < len(nodes(G, "Paper"))
    assert query(server, "papers_signed_by_key", keyId=builder.key_id) == expected


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
