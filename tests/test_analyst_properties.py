"""An analyst's properties, labels and relationships on the graph's own nodes survive a load
that writes the paper again (``replaced``: same version, newer bundle), while the graph's own
properties the newer bundle no longer has go (README "What lands in Neo4j": pith-graph owns the
properties the schema declares, and nothing else). Before 0.8.7 ``SET p = row.props`` erased
an analyst's properties on a rewritten Paper; before 0.8.8 the in-memory store erased a script's
properties on a rewritten Paper and on its edges (the parity test at the end runs on both)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_analyst_extras import _cypher, neo4j  # noqa: F401 (a fixture: a clean database, analysts' indexes dropped)

from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import PinnedKey
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.base import GraphExport, GraphStore
from pith_graph.loader.stores.cypher_export import own_properties
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.memory_guard import check_built
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.schema.graph import LABEL_ATTRIBUTE, NODES, RELATIONSHIPS, TYPE_ATTRIBUTE, node_id
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle

SIGNER = SignerIdentity.from_seed(b"analyst-props", key_id="p-key", signer_id="p.example")
KEYRING = resolve_keyring([PinnedKey(SIGNER.key_id, SIGNER.public_key, SIGNER.signer_id)])
V1 = PaperSpec.example("2403.00011", authors=["Kim Q"], cross_cats=["stat.ML"])
NEWER = replace(V1, built_at="2026-08-01T00:00:00Z")  # the same pith number

#: Each kind of node a replaced load writes again: how to find the one V1 has.
NODES_OF_V1: list[tuple[str, str, dict[str, Any]]] = [
    ("Paper", "MATCH (n:Paper {sourceId: $id})", {"id": V1.arxiv_id}),
    ("Author", "MATCH (n:Author {nameKey: $key})", {"key": "kim q"}),
    ("Category", "MATCH (n:Category {code: $code})", {"code": "stat.ML"}),
    ("Alias", "MATCH (n:Alias {kind: 'arxiv', value: $id})", {"id": V1.arxiv_id}),
    ("Signer", "MATCH (n:Signer {signerId: $id})", {"id": SIGNER.signer_id}),
]


def _load(store: GraphStore, folder: Path, spec: PaperSpec) -> None:
    path = folder / f"{len(list(folder.iterdir()))}.jsonl"
    path.write_bytes(orjson.dumps(build_bundle(spec, SIGNER)) + b"\n")
    report = run([str(path)], keyring=KEYRING, store=store, workers=1)
    assert report.rejected == 0


@pytest.mark.parametrize(("label", "match", "params"), NODES_OF_V1, ids=[n[0] for n in NODES_OF_V1])
def test_a_replaced_load_keeps_an_analysts_property_label_and_relationship(
    neo4j: Neo4jStore, tmp_path: Path, label: str, match: str, params: dict[str, Any]
) -> None:
    _load(neo4j, tmp_path, V1)
    _cypher(neo4j, f"{match} SET n.note = 'mine', n:Reviewed CREATE (:CitedWork)-[:CITES]->(n)", **params)
    _load(neo4j, tmp_path, NEWER)
    written = _cypher(neo4j, "MATCH (p:Paper) RETURN p.builtAt AS builtAt")
    assert written == [{"builtAt": NEWER.built_at}]  # the same node, written again
    found = _cypher(
        neo4j,
        f"{match} RETURN n.note AS note, labels(n) AS labels, COUNT {{ (n)<-[:CITES]-(:CitedWork) }} AS cites",
        **params,
    )
    assert found == [{"note": "mine", "labels": [label, "Reviewed"], "cites": 1}]
    stored = _cypher(neo4j, f"{match} RETURN keys(n) AS keys", **params)[0]["keys"]
    assert set(stored) - set(NODES[label].property_names) == {"note"}


def test_a_replaced_load_removes_an_own_property_the_newer_bundle_lacks(
    neo4j: Neo4jStore, tmp_path: Path
) -> None:
    """``authorNames`` is Paper's one optional property (absent when the paper names no author)."""
    _load(neo4j, tmp_path, V1)
    _cypher(neo4j, "MATCH (p:Paper) SET p.note = 'mine'")
    assert _cypher(neo4j, "MATCH (p:Paper) RETURN p.authorNames AS names") == [{"names": ["Kim Q"]}]
    _load(neo4j, tmp_path, replace(NEWER, authors=[]))
    assert _cypher(
        neo4j, "MATCH (p:Paper) RETURN p.builtAt AS built, p.authorNames AS names, p.note AS note"
    ) == [{"built": NEWER.built_at, "names": None, "note": "mine"}]


#: Each of the graph's relationship types a replaced load writes anew: V1's edge of it.
EDGES_OF_V1: list[tuple[str, str]] = [
    ("AUTHORED", "MATCH (:Author {nameKey: 'kim q'})-[r:AUTHORED]->(p:Paper)"),
    ("IN_CATEGORY", "MATCH (p:Paper)-[r:IN_CATEGORY]->(:Category {code: 'stat.ML'})"),
    ("IDENTIFIES", "MATCH (:Alias {kind: 'arxiv'})-[r:IDENTIFIES]->(p:Paper)"),
    ("SIGNED", "MATCH (:Signer)-[r:SIGNED]->(p:Paper)"),
]


@pytest.mark.parametrize(("kind", "match"), EDGES_OF_V1, ids=[e[0] for e in EDGES_OF_V1])
def test_a_replaced_load_keeps_an_analysts_property_on_the_graphs_edge(
    neo4j: Neo4jStore, tmp_path: Path, kind: str, match: str
) -> None:
    _load(neo4j, tmp_path, V1)
    _cypher(neo4j, f"{match} SET r.note = 'mine'")
    _load(neo4j, tmp_path, NEWER)
    found = _cypher(neo4j, f"{match} RETURN r.note AS note, p.builtAt AS built, keys(r) AS keys")
    assert [(row["note"], row["built"]) for row in found] == [("mine", NEWER.built_at)]
    assert set(found[0]["keys"]) - {p.name for p in RELATIONSHIPS[kind].properties} == {"note"}


# -- both stores: a script's properties on the in-memory graph, an analyst's in Neo4j --------

V1_PAPER = node_id("Paper", build_bundle(V1, SIGNER)["pith_number"])
#: The paper written again: as it was (all its edges again), or naming another author (its
#: AUTHORED edge from Kim Q not written again) or none (no ``authorNames`` either).
NEWER_BUNDLES = {
    "same edges": NEWER,
    "another author": replace(NEWER, authors=["Ann B"]),
    "no author": replace(NEWER, authors=[]),
}
MINE = {"note": "mine"}


def _annotate(store: GraphStore) -> GraphStore:
    """Set ``note`` (and ``score`` on the Paper) on V1's Paper, its Author and every edge of
    the Paper: in memory on a copy of the graph, as README advises, then loaded into."""
    if isinstance(store, Neo4jStore):
        _cypher(
            store,
            "MATCH (p:Paper) SET p.note = 'mine', p.score = 3 WITH p MATCH (p)-[r]-() SET r.note = 'mine'",
        )
        _cypher(store, "MATCH (a:Author) SET a.note = 'mine'")
        return store
    assert isinstance(store, MemoryStore)
    copy = store.graph.copy()
    copy.nodes[V1_PAPER].update(note="mine", score=3)
    copy.nodes["Author:kim q"].update(MINE)
    for start, end in [*copy.in_edges(V1_PAPER), *copy.out_edges(V1_PAPER)]:
        copy.edges[start, end].update(MINE)
    return MemoryStore(copy)


def _id(label: str, props: dict[str, Any]) -> str:
    return node_id(label, *(str(props[key]) for key in NODES[label].key))


def _everything(store: GraphStore) -> dict[Any, tuple[str, dict[str, Any]]]:
    """Node id or ``(start, type, end)`` -> its label or type, and all its properties."""
    if isinstance(store, Neo4jStore):
        nodes = _cypher(store, "MATCH (n) RETURN labels(n)[0] AS label, properties(n) AS props")
        edges = _cypher(
            store,
            "MATCH (s)-[r]->(e) RETURN labels(s)[0] AS sl, properties(s) AS s, type(r) AS type,"
            " properties(r) AS props, labels(e)[0] AS el, properties(e) AS e",
        )
        found = {_id(row["label"], row["props"]): (row["label"], row["props"]) for row in nodes}
        for row in edges:
            found[_id(row["sl"], row["s"]), row["type"], _id(row["el"], row["e"])] = (
                row["type"],
                row["props"],
            )
        return found
    assert isinstance(store, MemoryStore)
    graph = store.graph
    found = {name: (data[LABEL_ATTRIBUTE], dict(data)) for name, data in graph.nodes(data=True)}
    for start, end, data in graph.edges(data=True):
        found[start, data[TYPE_ATTRIBUTE], end] = (data[TYPE_ATTRIBUTE], dict(data))
    return found


def _extras(store: GraphStore) -> dict[Any, dict[str, Any]]:
    """Each node's and edge's properties its schema does not name (where it has any)."""
    extras = {}
    for name, (kind, data) in _everything(store).items():
        own = {LABEL_ATTRIBUTE, TYPE_ATTRIBUTE, *own_properties(kind, data)}
        if mine := {key: value for key, value in data.items() if key not in own}:
            extras[name] = mine
    return extras


def _own(export: GraphExport) -> GraphExport:
    """``export`` without a script's properties (Neo4j's export leaves them out already)."""
    nodes = {
        name: {LABEL_ATTRIBUTE: data[LABEL_ATTRIBUTE], **own_properties(data[LABEL_ATTRIBUTE], data)}
        for name, data in export.nodes.items()
    }
    return GraphExport(nodes, {edge: own_properties(edge[1], data) for edge, data in export.edges.items()})


def _memory_export(folder: Path, *specs: PaperSpec) -> GraphExport:
    folder.mkdir()
    memory = MemoryStore()
    for spec in specs:
        _load(memory, folder, spec)
    return memory.export()


@pytest.mark.parametrize("newer", NEWER_BUNDLES.values(), ids=NEWER_BUNDLES.keys())
def test_a_replaced_load_keeps_a_scripts_properties_on_the_paper_and_the_edges_it_writes_again(
    store: GraphStore, tmp_path: Path, newer: PaperSpec
) -> None:
    """The same on both stores: the Paper keeps them, each edge written again (same ends and
    type) keeps them, an edge not written again goes with them; the graph's own properties
    are the newer bundle's (``authorNames`` gone with the authors)."""
    _load(store, tmp_path, V1)
    store = _annotate(store)
    _load(store, tmp_path, newer)
    fresh = _memory_export(tmp_path / "fresh", newer)  # the newer bundle loaded alone
    again = set(_memory_export(tmp_path / "v1", V1).edges) & set(fresh.edges)
    expected = {V1_PAPER: {**MINE, "score": 3}, **dict.fromkeys(again, MINE)}
    if "Author:kim q" in fresh.nodes:
        expected["Author:kim q"] = MINE
    assert _extras(store) == expected
    assert _own(store.export()) == _own(fresh)
    if isinstance(store, MemoryStore):
        check_built(store.graph)  # saved and loaded into as any graph a load built


def test_an_edge_of_a_type_the_schema_does_not_know_goes_with_the_paper_it_touches(tmp_path: Path) -> None:
    """``MemoryStore(G)`` takes a script's graph as given: an edge of its own type (or of none)
    on a paper written again stopped the load with a bare ``KeyError: 'REVIEWED_BY'`` (the
    look for a script's properties assumed the schema's types); it goes with the paper's
    edges, as it did before 0.8.8."""
    memory = MemoryStore()
    _load(memory, tmp_path, V1)
    paper = next(n for n, label in memory.graph.nodes(data=LABEL_ATTRIBUTE) if label == "Paper")
    author = node_id("Author", "kim q")
    memory.graph.add_edge(paper, author, type="REVIEWED_BY", note="x")
    alias = node_id("Alias", "arxiv", V1.arxiv_id)
    memory.graph.add_edge(paper, alias, note="no type")
    store = MemoryStore(memory.graph)
    _load(store, tmp_path, NEWER)
    assert store.graph.nodes[paper]["builtAt"] == NEWER.built_at
    assert not store.graph.has_edge(paper, author) and not store.graph.has_edge(paper, alias)
    assert store.graph[author][paper][TYPE_ATTRIBUTE] == "AUTHORED"
