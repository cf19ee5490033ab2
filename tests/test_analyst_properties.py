"""An analyst's properties, labels and relationships on the graph's own nodes survive a load
that writes the paper again (``replaced``: same version, newer bundle), while the graph's own
properties the newer bundle no longer has go (README "What lands in Neo4j": pith-graph owns the
properties the schema declares, and nothing else). Before 0.8.7 ``SET p = row.props`` erased
an analyst's properties on a rewritten Paper."""

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
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.schema.graph import NODES, RELATIONSHIPS
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle

pytestmark = pytest.mark.neo4j

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


def _load(store: Neo4jStore, folder: Path, spec: PaperSpec) -> None:
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
