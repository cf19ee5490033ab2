"""The ``--json`` reports as a contract for scripts (since 0.8.9): each command's keys, in
camelCase; ``nodes`` and ``edges`` always a map with every label and type of the schema, 0
included; ``verify`` without what only a load decides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from pith_graph.loader.bulk import bulk_import
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.keyring import REGISTRY_KEY
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.schema.graph import NODES, RELATIONSHIPS
from pith_graph.testing import run_cli
from pith_graph.testing.corpus import write_corpus

SAMPLE_FILES = sorted(Path(SAMPLES).glob("*.json"))

_RUN = ["seen", "verified", "rejected", "rejections", "rejectionsOmitted"]
_LOAD = ["accepted", "inserted", "replaced", "duplicate", "stale", "outranked", "displaced", "nodes", "edges"]

#: Each command's ``--json`` keys (import: a load's, with its steps and whether it built).
EXPECTED_KEYS: dict[str, set[str]] = {
    "verify": {*_RUN, "seconds"},
    "load": {*_RUN, *_LOAD, "seconds"},
    "import": {*_RUN, *_LOAD, "seconds", "steps", "built"},
    "prune": {"revokedKeys", "removed", "dryRun", "seconds"},
    "export": {"nodes", "edges", "totalNodes", "totalEdges", "seconds"},
}

ZERO_NODES = dict.fromkeys(sorted(NODES), 0)
ZERO_EDGES = dict.fromkeys(sorted(RELATIONSHIPS), 0)
SAMPLE_NODES = {"Alias": 18, "Author": 19, "Category": 5, "Paper": 3, "Signer": 1}
SAMPLE_EDGES = {"AUTHORED": 19, "IDENTIFIES": 18, "IN_CATEGORY": 10, "SIGNED": 3}


def _tampered(tmp_path: Path) -> Path:
    bundle = json.loads(SAMPLE_FILES[0].read_bytes())
    bundle["events"][1]["payload"]["graph_snapshot"]["paper"]["title"] = "Something else"
    folder = tmp_path / "tampered"
    folder.mkdir()
    (folder / "tampered.json").write_text(json.dumps(bundle))
    return folder


def _json(*args: str, code: int = 0) -> dict[str, Any]:
    done = run_cli(*args, "--json")
    assert done.returncode == code, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _camel_case(key: str) -> bool:
    return "_" not in key and key[:1].islower()


def test_verify_reports_no_load_counts() -> None:
    report = _json("verify", SAMPLES)
    assert set(report) == EXPECTED_KEYS["verify"]
    assert (report["seen"], report["verified"], report["rejected"]) == (3, 3, 0)


@pytest.mark.parametrize(
    ("inputs", "code", "nodes", "edges"),
    [("samples", 0, SAMPLE_NODES, SAMPLE_EDGES), ("none accepted", 1, ZERO_NODES, ZERO_EDGES)],
)
def test_load_counts_every_label_and_type(
    tmp_path: Path, inputs: str, code: int, nodes: dict[str, int], edges: dict[str, int]
) -> None:
    path = SAMPLES if inputs == "samples" else str(_tampered(tmp_path))
    report = _json("load", path, "--backend", "memory", code=code)
    assert set(report) == EXPECTED_KEYS["load"]
    assert (report["nodes"], report["edges"]) == (nodes, edges)


def test_an_empty_memory_store_counts_zeros() -> None:
    counts = MemoryStore().counts()
    assert (counts.nodes, counts.edges) == (ZERO_NODES, ZERO_EDGES)


def test_import_counts_every_label_and_type(tmp_path: Path) -> None:
    report = bulk_import(
        [str(_tampered(tmp_path))],
        keyring=resolve_keyring(None),
        data=None,
        csv_only=tmp_path / "csv",
        workers=1,
    ).as_dict()
    assert set(report) == EXPECTED_KEYS["import"]
    assert (report["nodes"], report["edges"], report["accepted"]) == (ZERO_NODES, ZERO_EDGES, 0)


@pytest.mark.parametrize("dry_run", [True, False])
def test_prune_reports_in_camel_case_with_seconds(tmp_path: Path, dry_run: bool) -> None:
    saved = tmp_path / "g.json"
    assert run_cli("load", SAMPLES, "--save", str(saved)).returncode == 0
    revoked = tmp_path / "revoked.json"
    registry = {"key_id": REGISTRY_KEY.key_id, "public_key_hex": REGISTRY_KEY.public_key_hex}
    revoked.write_text(json.dumps([{**registry, "revoked": True}]))
    args = ["prune", "--revoked-keys", str(revoked), "--backend", "memory", "--graph", str(saved)]
    report = _json(*args, *(["--dry-run"] if dry_run else []))
    assert set(report) == EXPECTED_KEYS["prune"]
    assert (report["revokedKeys"], report["dryRun"], len(report["removed"])) == (
        [REGISTRY_KEY.key_id],
        dry_run,
        3,
    )
    assert isinstance(report["seconds"], float)


def test_an_empty_export_counts_every_label_and_type_as_0() -> None:
    from pith_graph.cli.export import export_summary

    report = export_summary(nx.DiGraph(), 0.0)
    assert (report["nodes"], report["edges"], report["totalNodes"]) == (ZERO_NODES, ZERO_EDGES, 0)


def test_what_does_not_depend_on_the_batch_size(tmp_path: Path) -> None:
    """README ("What depends on --batch-size"): the graph, seen/verified/rejected, nodes and
    edges, accepted + duplicate + stale + outranked = verified, and inserted - displaced
    (papers added) are the same for any --batch-size; how accepted, replaced and stale split
    is not (a source's later version in a later batch replaces, in the same batch it wins)."""
    info = write_corpus(tmp_path / "corpus", 300, layout="jsonl", shard_size=300)
    keyring = resolve_keyring(str(info.keyring_path))
    fixed = ("seen", "verified", "rejected", "nodes", "edges")
    found = []
    for batch_size in (7, 5000):
        store = MemoryStore()
        report = run(
            [str(info.directory)],
            keyring=keyring,
            store=store,
            workers=1,
            batch_size=batch_size,
            exclude=[str(info.keyring_path)],
        )
        summary = report.as_dict()
        assert report.accepted + report.duplicate + report.stale + report.outranked == report.verified
        nodes = summary["nodes"]
        assert isinstance(nodes, dict) and report.inserted - report.displaced == nodes["Paper"] > 0
        found.append(({key: summary[key] for key in fixed}, store.export()))
    assert found[0] == found[1]


def test_every_key_is_camel_case() -> None:
    assert all(_camel_case(key) for keys in EXPECTED_KEYS.values() for key in keys)
