"""Gephi opens pith-graph's GraphML as the README says (since 0.9.10): Gephi's own importer
(gephi-toolkit 0.10.1, headless, ``tests/gephi/GephiRead.java``) reads a saved corpus with no
import issue, directed, every node and edge, every attribute networkx reads from the same file
(same values, typed as the keys declare, its columns titled by the schema's names), and takes
each node's ``label`` attribute as its label; characters XML cannot hold arrive as the README
says. Needs Java and Maven: the test resolves the toolkit's class path once into
``build/gephi/`` (``.ci/run`` does so beside the Neo4j launcher's build)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import networkx as nx
import orjson
import pytest

import pith_graph
from pith_graph.loader.facade import load_graph
from pith_graph.schema.graph import NODES, RELATIONSHIPS
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, write_corpus

pytestmark = pytest.mark.gephi

PROJECT = Path(__file__).resolve().parents[1]
POM = PROJECT / "tests" / "gephi" / "pom.xml"
TOOL = PROJECT / "tests" / "gephi" / "GephiRead.java"
CLASSPATH = PROJECT / "build" / "gephi" / "classpath.txt"
_SIGNER = SignerIdentity.from_seed(b"gephi", key_id="gephi-key", signer_id="gephi.invalid")
_HOSTILE_AUTHORS = ["Zoë \x01Smith", "Zoë \x02Smith", "Bob \ufffeX", "Bob \ufffdX", "Bob \\X", "ZOË  smith"]


def _under_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def gephi_classpath() -> str:
    """The toolkit's class path, resolved by Maven into ``build/gephi/`` when the pom changed."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None or mvn is None:
        if _under_ci():
            pytest.fail("Java and Maven are required under CI (Gephi's GraphML importer)")
        pytest.skip("needs java and mvn (gephi-toolkit from Maven Central)")
    if not CLASSPATH.is_file() or CLASSPATH.stat().st_mtime < POM.stat().st_mtime:
        CLASSPATH.parent.mkdir(parents=True, exist_ok=True)
        partial = CLASSPATH.with_suffix(".partial")
        done = subprocess.run(
            [mvn, "-q", "-B", "-f", str(POM), "dependency:build-classpath", f"-Dmdep.outputFile={partial}"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0 or not partial.is_file():
            message = f"mvn could not resolve gephi-toolkit:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
            if _under_ci():
                pytest.fail(message)
            pytest.skip(message)
        partial.replace(CLASSPATH)
    return CLASSPATH.read_text("utf-8").strip()


def _hostile_bundles() -> bytes:
    """One paper per author of ``_HOSTILE_AUTHORS``, the first titled with a control character."""
    first = PaperSpec(
        "2401.00020", 1, "A \x0btitle\r\nin two lines", _HOSTILE_AUTHORS[:1], "An abstract.", "cs.LG", [],
        "http://creativecommons.org/licenses/by/4.0/", "2024-01-01T00:00:00Z",
        "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z",
    )  # fmt: skip
    specs = [first] + [
        replace(first, arxiv_id=f"2401.0002{i}", title=f"Paper {i}", authors=[name])
        for i, name in enumerate(_HOSTILE_AUTHORS[1:], 1)
    ]
    return b"".join(orjson.dumps(build_bundle(spec, _SIGNER)) + b"\n" for spec in specs)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[nx.DiGraph, Path, list[dict[str, Any]]]:
    """A load's graph (a generated corpus with versions and two signers, and authors whose names
    hold characters XML cannot), its GraphML file, and Gephi's reading of that file."""
    classpath = gephi_classpath()
    folder = tmp_path_factory.mktemp("gephi")
    info = write_corpus(folder / "corpus", 120, seed=11, workers=1, layout="jsonl")
    hostile = folder / "hostile.jsonl"
    hostile.write_bytes(_hostile_bundles())
    keys = folder / "keys.json"
    keys.write_bytes(orjson.dumps([*orjson.loads(info.keyring_path.read_bytes()), _SIGNER.keyring_entry()]))
    G, report = load_graph([*info.shards, hostile], trusted_keys=keys, workers=1)
    assert report.rejected == 0
    path = folder / "g.graphml"
    pith_graph.save_graphml(G, path)
    done = subprocess.run(
        [shutil.which("java") or "java", "-Djava.awt.headless=true", "-cp", classpath, str(TOOL), str(path)],
        capture_output=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-3000:]
    return G, path, [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]


def test_gephi_imports_every_node_and_edge_directed_with_no_issue(
    saved: tuple[nx.DiGraph, Path, list[dict[str, Any]]],
) -> None:
    G, _, lines = saved
    head = lines[0]
    assert head["issues"] == []
    assert head["directed"] is True
    assert (head["nodes"], head["edges"]) == (G.number_of_nodes(), G.number_of_edges())
    assert len(lines) == 1 + G.number_of_nodes() + G.number_of_edges()
    assert all(line["directed"] is True for line in lines if "source" in line)


def test_gephi_reads_what_networkx_reads_and_labels_nodes_by_their_label(
    saved: tuple[nx.DiGraph, Path, list[dict[str, Any]]],
) -> None:
    """Two readers of the same file agree: ids, attributes and their types (a Long, a Boolean
    and JSON text for a list), and ``label`` is Gephi's node label, not a column of its own."""
    G, path, lines = saved
    read = nx.read_graphml(path)
    nodes = {line["node"]: line for line in lines if "node" in line}
    assert set(nodes) == set(read.nodes)
    for node, data in read.nodes(data=True):
        assert nodes[node]["label"] == data["label"]
        assert nodes[node]["attributes"] == {name: value for name, value in data.items() if name != "label"}
    edges = {(line["source"], line["target"]): line["attributes"] for line in lines if "source" in line}
    assert edges == {(u, v): data for u, v, data in read.edges(data=True)}
    assert {data["label"] for _, data in read.nodes(data=True)} == set(NODES)
    labels_read = {line["label"] for line in nodes.values()}
    assert labels_read == {data["label"] for _, data in G.nodes(data=True)}
    authors = {line["attributes"]["name"] for line in nodes.values() if line["label"] == "Author"}
    assert {"Zoë \ufffdSmith", "Bob \ufffdX", "Bob \\X"} <= authors  # XML 1.0 cannot hold U+0001, U+FFFE
    assert "Author:bob \ufffdFFFEx" in nodes and "Author:zoë \ufffd0002smith" in nodes  # ids kept apart
    first = next(line for line in nodes.values() if line["attributes"].get("sourceId") == "2401.00020")
    assert first["attributes"]["title"] == "A \ufffdtitle\r\nin two lines"  # a carriage return kept


def test_gephi_columns_are_the_schemas_names_and_types(
    saved: tuple[nx.DiGraph, Path, list[dict[str, Any]]],
) -> None:
    head = saved[2][0]
    java = {"string": "String", "integer": "Long", "boolean": "Boolean"}
    expected_nodes = {
        (f"n_{prop.name.lower()}", prop.name, java.get(prop.type, "String"))
        for spec in NODES.values()
        for prop in spec.properties
    }
    expected_edges = {("e_type", "type", "String")} | {
        (f"e_{prop.name.lower()}", prop.name, java.get(prop.type, "String"))
        for spec in RELATIONSHIPS.values()
        for prop in spec.properties
    }
    assert {tuple(column) for column in head["nodeColumns"]} == expected_nodes
    assert {tuple(column) for column in head["edgeColumns"]} == expected_edges
