"""What ``pith-graph load`` reports and asks for, through the real command: the text report's
``displaced`` row (only when a paper was displaced: by a higher-ranked signer taking its
source id over, or by a corrected record), and the batch size each backend defaults to."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from pith_graph.cli import commands, main
from pith_graph.cli.commands import DEFAULT_BATCH_SIZES
from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, run_cli

HIGH = SignerIdentity.from_seed(b"report-high", key_id="report-high-key", signer_id="high.invalid")
LOW = SignerIdentity.from_seed(b"report-low", key_id="report-low-key", signer_id="low.invalid")


def _rows(stdout: str) -> dict[str, str]:
    """The report's rows: a label, two spaces or more, a value."""
    rows = {}
    for line in stdout.splitlines():
        parts = re.split(r"\s{2,}", line.strip())
        if len(parts) == 2:
            rows[parts[0]] = parts[1]
    return rows


@pytest.mark.parametrize("first_signer", [LOW, HIGH], ids=["higher-ranked-signer", "corrected-record"])
def test_the_text_report_counts_displaced_papers(tmp_path: Path, first_signer: SignerIdentity) -> None:
    """A record, then (a batch later) a newer record of the same source id signed by the
    higher-ranked key: the first paper is displaced, in ``--json`` and in the text report."""
    first = PaperSpec.example("2401.00001", authors=["Ann Lee"])
    later = dataclasses.replace(first, title="Another record", built_at="2026-03-01T00:00:00Z")
    folder = tmp_path / "bundles"
    folder.mkdir()
    (folder / "1-first.json").write_bytes(orjson.dumps(build_bundle(first, first_signer)))
    (folder / "2-later.json").write_bytes(orjson.dumps(build_bundle(later, HIGH)))
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps([HIGH.keyring_entry(), LOW.keyring_entry()]))
    load = ("load", str(folder), "--trusted-keys", str(keys), "--workers", "1", "--batch-size", "1")

    as_json = run_cli(*load, "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["displaced"] == 1

    text = run_cli(*load)
    assert text.returncode == 0, text.stderr
    rows = _rows(text.stdout)
    assert rows.get("displaced (removed)") == "1", text.stdout
    assert rows["nodes :Paper"] == "1"


def test_the_text_report_has_no_displaced_row_when_none_was() -> None:
    text = run_cli("load", SAMPLES, "--workers", "1")
    assert text.returncode == 0, text.stderr
    assert "displaced" not in text.stdout
    assert _rows(text.stdout)["accepted"] == "3 (3 new, 0 replaced)"


@pytest.mark.parametrize("backend", ["memory", "neo4j"])
def test_the_batch_size_defaults_by_backend(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    """``--batch-size`` defaults to 1000 in memory, 5000 for Neo4j (what ``load`` hands the
    pipeline; the store is a memory one either way: no database is needed to see it)."""
    asked: list[int] = []
    real = commands.run

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs["batch_size"])
        return real(*args, **kwargs)

    monkeypatch.setattr(commands, "run", spy)
    monkeypatch.setattr(commands, "open_store", lambda args: MemoryStore())
    assert main(["load", SAMPLES, "--backend", backend, "--workers", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inserted"] == 3
    assert main(["load", SAMPLES, "--backend", backend, "--workers", "1", "--batch-size", "7", "--json"]) == 0
    assert asked == [DEFAULT_BATCH_SIZES[backend], 7]
