"""The ``--json`` reports as a contract for scripts (since 0.8.9): each command's keys, in
camelCase."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.keyring import REGISTRY_KEY
from pith_graph.testing import run_cli

#: Each command's ``--json`` keys.
EXPECTED_KEYS: dict[str, set[str]] = {
    "prune": {"revokedKeys", "removed", "dryRun", "seconds"},
}


def _json(*args: str, code: int = 0) -> dict[str, Any]:
    done = run_cli(*args, "--json")
    assert done.returncode == code, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _camel_case(key: str) -> bool:
    return "_" not in key and key[:1].islower()


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


def test_every_key_is_camel_case() -> None:
    assert all(_camel_case(key) for keys in EXPECTED_KEYS.values() for key in keys)
