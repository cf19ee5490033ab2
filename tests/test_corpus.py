"""The synthetic corpus: deterministic, validly signed, and shaped like the hard cases."""

from __future__ import annotations

import base64
import gzip
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from nacl.signing import VerifyKey

from pith_graph.loader.canon import canon, sha256_hex
from pith_graph.loader.identifiers import pith_number_for, split_authors
from pith_graph.testing import run_cli
from pith_graph.testing.corpus import corpus_signers, generate_bundles, generate_papers, write_corpus
from pith_graph.testing.signer import PaperSpec

Json = dict[str, Any]
UNSIGNED_EVENT_FIELDS = ("signature", "content_sha256", "event_id")
N = 1500
SEED = 7


def _h(value: Any) -> str:
    return sha256_hex(canon(value))


def _verify(keys: dict[str, VerifyKey], key_id: str, hex_digest: str, signature_b64: str) -> None:
    keys[key_id].verify(bytes.fromhex(hex_digest), base64.b64decode(signature_b64))


def check_bundle(bundle: Json, keys: dict[str, VerifyKey]) -> None:
    """Every digest recomputed with canon, every signature verified with nacl."""
    assert _h(bundle["canonical_record"]) == bundle["canonical_sha256"]
    submitted = bundle["canonical_record"]["metadata"]["submitted_at"]
    assert bundle["pith_number"] == pith_number_for(bundle["canonical_sha256"], submitted)
    for event in bundle["events"]:
        unsigned = {k: v for k, v in event.items() if k not in UNSIGNED_EVENT_FIELDS}
        assert _h(unsigned) == event["content_sha256"]
        assert event["event_id"] == "sha256:" + event["content_sha256"]
        signature = event["signature"]
        _verify(keys, signature["key_id"], event["content_sha256"], signature["signature_b64"])
        if event["event_type"] == "record_created":
            receipt = event["payload"]["receipt"]
            assert receipt["canonical_sha256"] == bundle["canonical_sha256"]
            _verify(keys, receipt["key_id"], receipt["canonical_sha256"], receipt["signature_b64"])
    state = bundle["state"]
    assert _h({k: v for k, v in state.items() if k != "state_sha256"}) == state["state_sha256"]
    assert state["applied_event_ids"] == [e["event_id"] for e in bundle["events"]]
    sealed = bundle["bundle_signature"]
    body = {k: v for k, v in bundle.items() if k != "bundle_signature"}
    assert _h(body) == sealed["bundle_sha256"]
    _verify(keys, sealed["key_id"], sealed["bundle_sha256"], sealed["signature_b64"])


def _keyring(path: Path) -> dict[str, VerifyKey]:
    entries = orjson.loads(path.read_bytes())
    return {e["key_id"]: VerifyKey(bytes.fromhex(e["public_key_hex"])) for e in entries}


def _read_jsonl_gz(path: Path) -> list[bytes]:
    with gzip.open(path, "rb") as handle:
        return [line.rstrip(b"\n") for line in handle]


@pytest.fixture(scope="module")
def specs() -> list[PaperSpec]:
    return list(generate_papers(N, seed=SEED))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("corpus")
    info = write_corpus(directory, N, seed=SEED, workers=2, shard_size=1000)
    assert info.bundle_count == N
    assert [p.name for p in info.shards] == ["bundles-00000.jsonl.gz", "bundles-00001.jsonl.gz"]
    return directory


@pytest.fixture(scope="module")
def bundles(corpus: Path) -> list[Json]:
    shards = sorted(corpus.glob("bundles-*.jsonl.gz"))
    return [orjson.loads(line) for shard in shards for line in _read_jsonl_gz(shard)]


def test_generate_papers_is_deterministic(specs: list[PaperSpec]) -> None:
    assert list(generate_papers(N, seed=SEED)) == specs
    assert list(generate_papers(50, seed=SEED + 1)) != specs[:50]
    assert len(specs) == N


def test_generate_bundles_deterministic_across_workers() -> None:
    signer, _ = corpus_signers(SEED)
    one = list(generate_bundles(300, signer=signer, seed=SEED, workers=1))
    two = list(generate_bundles(300, signer=signer, seed=SEED, workers=2))
    assert one == two
    assert len(one) == 300


def test_write_corpus_is_reproducible(corpus: Path, tmp_path: Path) -> None:
    again = write_corpus(tmp_path, N, seed=SEED, workers=1, shard_size=1000)
    for shard in again.shards:
        assert shard.read_bytes() == (corpus / shard.name).read_bytes()
    assert again.keyring_path.read_bytes() == (corpus / "keyring.json").read_bytes()


def test_every_bundle_valid_with_generated_keyring(corpus: Path, bundles: list[Json]) -> None:
    keys = _keyring(corpus / "keyring.json")
    assert len(bundles) == N
    for bundle in bundles:
        check_bundle(bundle, keys)
        assert {k["key_id"] for k in bundle["public_keys"]} <= set(keys)


def test_two_signers_present(bundles: list[Json]) -> None:
    snapshot_signers = Counter(b["events"][1]["signer"]["signer_type"] for b in bundles)
    assert snapshot_signers["pith_builder"] == N // 50
    assert snapshot_signers["pith_registry"] == N - N // 50


def test_bundles_match_specs(specs: list[PaperSpec], bundles: list[Json]) -> None:
    for spec, bundle in zip(specs, bundles, strict=True):
        paper = bundle["events"][1]["payload"]["graph_snapshot"]["paper"]
        assert (paper["title"], paper["authors_text"]) == (spec.title, spec.authors_text)
        assert bundle["built_at"] == spec.built_at


def test_heavy_tailed_authors(specs: list[PaperSpec]) -> None:
    papers_per_author = Counter(key for s in specs for key, _ in split_authors(s.authors_text))
    counts = sorted(papers_per_author.values())
    assert statistics.median(counts) <= 3
    assert counts[-1] >= 20 * statistics.median(counts)
    assert counts[-1] >= 50
    assert all(1 <= len(s.authors) <= 12 for s in specs)


def test_non_ascii_nfd_and_spacing_variants(specs: list[PaperSpec]) -> None:
    names = [name for s in specs for name in s.authors]
    non_ascii = [name for name in names if not name.isascii()]
    assert len(non_ascii) > 0.1 * len(names)
    nfd = [name for name in names if unicodedata.normalize("NFC", name) != name]
    assert nfd
    nfc_forms = {unicodedata.normalize("NFC", name) for name in names if name not in nfd}
    # the same author written both ways
    assert any(unicodedata.normalize("NFC", name) in nfc_forms for name in nfd)
    assert any("  " in name for name in names)
    assert any("\u4e00" <= ch <= "\u9fff" for name in names for ch in name)


def test_multi_version_ids_share_aliases(bundles: list[Json]) -> None:
    by_id: dict[str, dict[int, Json]] = defaultdict(dict)
    for bundle in bundles:
        by_id[bundle["source"]["id"]][bundle["source"]["version"]] = bundle
    multi = {arxiv_id: versions for arxiv_id, versions in by_id.items() if len(versions) > 1}
    assert 0.1 < len(multi) / len(by_id) < 0.3
    for arxiv_id, versions in multi.items():
        assert 1 in versions
        aliases = [
            {a["alias_kind"]: a["alias_value"] for a in b["source_aliases"]} for b in versions.values()
        ]
        assert {a["arxiv"] for a in aliases} == {arxiv_id}
        assert {a["doi"] for a in aliases} == {f"10.48550/arxiv.{arxiv_id}"}
        assert len({a["arxiv_version"] for a in aliases}) == len(versions)
        assert len({b["pith_number"] for b in versions.values()}) == len(versions)


def test_versions_appear_in_order(specs: list[PaperSpec]) -> None:
    seen: dict[str, int] = {}
    for spec in specs:
        assert spec.version <= seen.get(spec.arxiv_id, 0) + 1
        seen[spec.arxiv_id] = max(seen.get(spec.arxiv_id, 0), spec.version)


def test_rebuilt_bundles_are_later_and_changed(bundles: list[Json]) -> None:
    first: dict[str, Json] = {}
    rebuilt = 0
    for bundle in bundles:
        key = bundle["pith_number"]
        if key not in first:
            first[key] = bundle
            continue
        rebuilt += 1
        original = first[key]
        assert bundle["built_at"] > original["built_at"]
        assert bundle["source"] == original["source"]
        assert bundle["events"][0]["event_id"] == original["events"][0]["event_id"]
        assert bundle["events"][1]["event_id"] != original["events"][1]["event_id"]
        new_paper = bundle["events"][1]["payload"]["graph_snapshot"]["paper"]
        old_paper = original["events"][1]["payload"]["graph_snapshot"]["paper"]
        assert (new_paper["title"], new_paper["authors_text"]) != (
            old_paper["title"],
            old_paper["authors_text"],
        )
    assert 0.02 * N < rebuilt < 0.08 * N


def test_ids_categories_and_dates(specs: list[PaperSpec]) -> None:
    years = Counter(int(s.submitted_at[:4]) for s in specs)
    assert min(years) == 2007 and max(years) == 2026
    assert any("/" in s.arxiv_id for s in specs)  # old-style ids (before April 2007)
    assert any(len(s.arxiv_id.split(".")[-1]) == 5 for s in specs)
    assert any(s.cross_cats for s in specs)
    assert len({s.primary_cat for s in specs}) > 10
    for s in specs:
        assert s.created_at > s.submitted_at
        assert s.built_at >= s.created_at


@pytest.mark.parametrize("layout", ["jsonl", "files"])
def test_other_layouts(tmp_path: Path, layout: str) -> None:
    info = write_corpus(
        tmp_path,
        120,
        seed=1,
        workers=1,
        layout=layout,
        shard_size=50,  # type: ignore[arg-type]
    )
    assert len(info.shards) == 3
    if layout == "jsonl":
        lines = [line for shard in info.shards for line in shard.read_bytes().splitlines()]
    else:
        lines = [f.read_bytes() for shard in info.shards for f in sorted(shard.iterdir())]
    assert len(lines) == 120
    signer, builder = corpus_signers(1)
    expected = generate_bundles(120, signer=signer, seed=1, extra_signer=builder, extra_signer_every=50)
    assert lines == list(expected)


def test_unknown_layout_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="layout"):
        write_corpus(tmp_path, 1, layout="zip")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "args",
    [pytest.param(["--help"], id="help"), pytest.param(["{tmp}/c", "-n", "3", "--workers", "1"], id="run")],
)
def test_python_m_corpus_runs_with_no_warning(tmp_path: Path, args: list[str]) -> None:
    """The documented command: ``pith_graph.testing`` does not import the module that ``-m``
    is about to run (runpy's "found in sys.modules" RuntimeWarning, an error under -W error)."""
    strict = [sys.executable, "-W", "error", "-m", "pith_graph.testing.corpus"]
    result = subprocess.run(
        [*strict, *(arg.format(tmp=tmp_path) for arg in args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout.startswith("usage:" if args == ["--help"] else "wrote 3 bundles")


def test_cli(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pith_graph.testing.corpus",
            str(tmp_path / "c"),
            "-n",
            "40",
            "--workers",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert "wrote 40 bundles" in result.stdout
    assert (tmp_path / "c" / "keyring.json").exists()
    assert len(_read_jsonl_gz(tmp_path / "c" / "bundles-00000.jsonl.gz")) == 40


@pytest.mark.parametrize("layout", ["jsonl.gz", "files"])
def test_a_generated_corpus_loads_clean_with_its_keyring_inside(tmp_path: Path, layout: str) -> None:
    """The corpus keeps keyring.json beside its shards; given as --trusted-keys, it is never
    read as a bundle, whichever way its path is spelled."""
    folder = tmp_path / "corpus"
    subprocess.run(
        [sys.executable, "-m", "pith_graph.testing.corpus", str(folder), "-n", "30", "--layout", layout],
        capture_output=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    (tmp_path / "keys.json").symlink_to(folder / "keyring.json")
    for keys in (folder / "keyring.json", tmp_path / "keys.json", folder / "." / "keyring.json"):
        result = run_cli("load", str(folder), "--trusted-keys", str(keys), "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        report = orjson.loads(result.stdout)
        assert (report["seen"], report["rejected"]) == (30, 0), report


def test_a_generation_stopped_early_closes_its_pool_without_killing_a_worker() -> None:
    """A consumer that stops reading (or Ctrl-C) stops the pool by closing it: its workers end
    their tasks in flight and exit (code 0). Terminated (killed with SIGTERM, code -15), a
    worker could be killed while the pool's task thread was still writing it a task larger than
    a pipe holds, and that thread then waited for ever: 1 interrupted generation in 80 hung."""
    signer, _ = corpus_signers(0)
    before = set(multiprocessing.active_children())
    bundles = generate_bundles(3000, signer=signer, workers=2)
    next(bundles)
    workers = [child for child in multiprocessing.active_children() if child not in before]
    assert len(workers) == 2, workers
    bundles.close()
    assert [worker.exitcode for worker in workers] == [0, 0]


def test_ctrl_c_stops_a_generation_on_several_processes_at_once(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the whole process group) while workers sign: the parent stops the
    pool and exits at once; no worker dies of it (one that did, mid-result, could leave the
    pool's result thread waiting on a half-written pipe for ever: a hang seen once), and the
    pool is not terminated (its task thread could wait for ever on a task half-written to
    the workers it killed: 1 interruption in 80 hung under load; at most once here)."""
    folder = tmp_path / "c"
    command = [sys.executable, "-m", "pith_graph.testing.corpus", str(folder), "-n", "3000", "--workers", "2"]
    # (closed by `with` whatever happens: pipes left open on a failure were reported later as
    # an unclosed file, failing whichever test the garbage collector then ran in)
    with subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            deadline = time.monotonic() + 60
            while (
                not list(folder.glob("bundles-*")) and process.poll() is None and time.monotonic() < deadline
            ):
                time.sleep(0.02)  # the first chunk written: the workers are signing the next ones
            assert process.poll() is None, "the generation ended before it could be interrupted"
            os.killpg(process.pid, signal.SIGINT)
            _, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    assert process.returncode in (-signal.SIGINT, 1, 130), err[-2000:]
    assert "KeyboardInterrupt" in err and "ForkPoolWorker" not in err, err[-3000:]
