"""``pith-graph serve PATH…`` verifies its bundles as ``pith-graph load`` does, under the same
``--max-bytes`` and ``--clock-skew``; what it rejects it counts at start-up, and serves the rest."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import orjson

from pith_graph.testing import PaperSpec, build_bundle
from pith_graph.testing.corpus import corpus_signers
from pith_graph.testing.serving import serving

BIG_TITLE = "big " + "y" * 600_000  # held twice: a bundle of 1.2 MB, over the default --max-bytes (1 MiB)
AHEAD = 3600  # seconds: beyond the default --clock-skew (300)
IDS = ["arXiv:2601.00001", "arXiv:2601.00002", "arXiv:2601.00003"]
QUERY = "query($ids: [String!]!) { papersById(ids: $ids) { title } }"


def _spec(arxiv_id: str, title: str, built: str) -> PaperSpec:
    return PaperSpec.example(arxiv_id, title=title, created_at=built, built_at=built)


def _corpus(folder: Path) -> list[str]:
    """A big bundle, a bundle built an hour ahead of this clock and a plain one, signed by a
    key the returned options trust."""
    signer, _ = corpus_signers(12)
    keys = folder / "keys.json"
    keys.write_bytes(orjson.dumps([signer.keyring_entry()]))
    ahead = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + AHEAD))
    papers = [
        _spec("2601.00001", BIG_TITLE, "2026-02-02T10:00:00Z"),
        _spec("2601.00002", "Ahead", ahead),
        _spec("2601.00003", "Plain", "2026-02-02T10:00:00Z"),
    ]
    bundles = folder / "bundles.jsonl"
    bundles.write_bytes(b"".join(orjson.dumps(build_bundle(p, signer)) + b"\n" for p in papers))
    assert 1 << 20 < len(bundles.read_bytes().splitlines()[0]) < 2_000_000
    return [str(bundles), "--trusted-keys", str(keys)]


def _titles(url: str) -> list[str | None]:
    answer = httpx.post(f"{url}/graphql", json={"query": QUERY, "variables": {"ids": IDS}})
    return [paper and paper["title"] for paper in answer.json()["data"]["papersById"]]


def _loaded(output: list[str]) -> str:
    return next(line for line in output if line.startswith("loaded "))


def test_serve_takes_max_bytes_and_clock_skew_as_load_does(tmp_path: Path) -> None:
    """``serve --max-bytes 2000000`` was "unrecognized arguments" (exit 2): a bundle that
    ``load --max-bytes 2000000`` took was rejected ``too_large`` by ``serve``, which served
    the rest; nor could a bundle within a ``--clock-skew`` be served. At the defaults both are
    still rejected, and the start-up line counts them."""
    common = ["--port", "0", "--workers", "1", "--load-workers", "1", *_corpus(tmp_path)]
    output: list[str] = []
    with serving(common, output=output) as url:
        rejected = sorted(line.split(": ")[1] for line in output if line.startswith("REJECTED "))
        assert rejected == ["future_dated", "too_large"], output
        assert "(2 rejected; " in _loaded(output), output
        assert _titles(url) == [None, None, "Plain"]
    output.clear()
    with serving([*common, "--max-bytes", "2000000", "--clock-skew", str(2 * AHEAD)], output=output) as url:
        assert not any(line.startswith("REJECTED ") for line in output), output
        assert "(0 rejected; " in _loaded(output), output
        assert _titles(url) == [BIG_TITLE, "Ahead", "Plain"]
