"""``pith-graph load --backend neo4j`` run by run: a copy of a bundle re-signed by another key
(``bundleSha256`` does not cover ``bundle_signature``) is a bundle of that key's signer, so
the graph is the same whichever run brought which bundle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, resign, run_cli

pytestmark = pytest.mark.neo4j

A = SignerIdentity.from_seed(b"cli-resigned-a", key_id="a-key", signer_id="a.example")
M = SignerIdentity.from_seed(b"cli-resigned-m", key_id="m-key", signer_id="m.example")
B = SignerIdentity.from_seed(b"cli-resigned-b", key_id="b-key", signer_id="b.example")
PAPER = PaperSpec.example("2601.00001", title="Genuine title", authors=["Alice Real"])


def _load(server: Any, path: Path, keys: Path) -> dict[str, Any]:
    env = {"NEO4J_PASSWORD": server.password} if server.password else {}
    args = ["load", str(path), "--backend", "neo4j", "--trusted-keys", str(keys), "--json"]
    done = run_cli(*args, *server.cli_args(), env=env)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return {k: v for k, v in report.items() if k in ("inserted", "replaced", "duplicate", "outranked") and v}


def test_a_re_signed_copy_loaded_first_does_not_hand_the_paper_to_a_lower_rank(
    neo4j_server: Any, tmp_path: Path
) -> None:
    """A (first), M and B are pinned in that order. B's copy of A's bundle, loaded in a run
    before A's, once made A's bundle a skipped "duplicate" and let M's bundle take the paper."""
    (tmp_path / "keys.json").write_text(json.dumps([s.keyring_entry() for s in (A, M, B)]))
    genuine = build_bundle(PAPER, A)
    unchanged = {"refresh_canonical": False, "sign_receipt": False, "refresh_events": False}
    copy = resign(
        orjson.loads(orjson.dumps(genuine)), B, **unchanged, refresh_public_keys=False, refresh_state=False
    )
    assert copy["bundle_signature"]["bundle_sha256"] == genuine["bundle_signature"]["bundle_sha256"]
    rival = build_bundle(
        PaperSpec.example("2601.00001", title="Hijacked", built_at="2026-01-01T00:00:00Z"), M
    )
    files = {}
    for name, data in (("genuine", genuine), ("copy", copy), ("rival", rival)):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_bytes(orjson.dumps(data))

    store = neo4j_server.connect()
    try:
        graphs, reports = [], []
        for order in (("genuine", "copy", "rival"), ("copy", "genuine", "rival")):
            store.clear()
            reports.append([_load(neo4j_server, files[name], tmp_path / "keys.json") for name in order])
            graphs.append(store.export())
    finally:
        store.close()
    assert reports == [
        [{"inserted": 1}, {"outranked": 1}, {"outranked": 1}],
        [{"inserted": 1}, {"replaced": 1}, {"outranked": 1}],
    ]
    assert graphs[0] == graphs[1]
    (paper,) = [node for node in graphs[0].nodes.values() if node["label"] == "Paper"]
    assert (paper["title"], paper["bundleKeyId"]) == ("Genuine title", A.key_id)
