"""The pipeline: parallel equals serial, order does not matter, rejections never stop a run."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import shutil
from pathlib import Path

import orjson
import pytest

from pith_graph.errors import UsageError
from pith_graph.loader.bulk import bulk_import
from pith_graph.loader.facade import SAMPLES, load_graph, resolve_keyring
from pith_graph.loader.format import bundle_digest, state_digest
from pith_graph.loader.keyring import Keyring, PinnedKey, default_keyring
from pith_graph.loader.pipeline import PARALLEL_MIN_BYTES, LoadReport, run
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.trust import MAX_CLOCK_SKEW
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle
from pith_graph.testing.corpus import corpus_signers, generate_bundles

N = 400


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[bytes], Keyring]:
    signer, builder = corpus_signers(3)
    bundles = list(generate_bundles(N, signer=signer, seed=3, extra_signer=builder, extra_signer_every=7))
    keys = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(json.dumps([signer.keyring_entry(), builder.keyring_entry()]))
    return bundles, resolve_keyring(keys)


def _write(path: Path, bundles: list[bytes]) -> str:
    path.write_bytes(b"\n".join(bundles) + b"\n")
    return str(path)


def test_parallel_equals_serial_and_input_order_does_not_matter(
    tmp_path: Path, corpus: tuple[list[bytes], Keyring]
) -> None:
    bundles, keyring = corpus
    forward = _write(tmp_path / "forward.jsonl", bundles)
    backward = _write(tmp_path / "backward.jsonl", bundles[::-1])
    exports = []
    for path, workers in ((forward, 1), (forward, 2), (backward, 2)):
        store = MemoryStore()
        report = run([path], keyring=keyring, store=store, workers=workers, batch_size=64)
        assert report.rejected == 0
        assert report.seen == N
        assert report.accepted + report.stale + report.duplicate == N
        # Rebuilt bundles exist in the corpus: whichever order they come in, one bundle of
        # each rebuilt paper loses to the other (stale, or replaced by the newer one).
        assert report.stale + report.replaced > 0
        exports.append(store.export())
    assert exports[0] == exports[1] == exports[2]


def test_rejections_do_not_stop_the_batch_and_write_nothing(
    tmp_path: Path, corpus: tuple[list[bytes], Keyring]
) -> None:
    bundles, keyring = corpus
    good = bundles[:150]
    bad = bundles[150].replace(b'"title":"', b'"title":"X', 1)
    path = _write(tmp_path / "mixed.jsonl", [*good[:75], bad, b"{oops", *good[75:]])
    store = MemoryStore()
    report = run([path], keyring=keyring, store=store, workers=2, batch_size=32)
    assert report.rejected == 2
    assert [(r.code, r.source.line) for r in report.rejections] == [
        ("digest_mismatch", 76),
        ("malformed_json", 77),
    ]
    clean = MemoryStore()
    run([_write(tmp_path / "good.jsonl", good)], keyring=keyring, store=clean, workers=1)
    assert store.export() == clean.export()


def test_a_wrong_type_under_recomputed_digests_rejects_only_its_bundle(tmp_path: Path) -> None:
    """The reviewer's bundle: a registry sample with ``state.equivocations`` a number and both
    digests recomputed, signed by nobody. It once crashed ``verify`` and ``load``, losing the
    valid bundles beside it."""
    samples = sorted(Path(SAMPLES).glob("*.json"))
    evil = json.loads(samples[0].read_bytes())
    evil["state"]["equivocations"] = 5
    evil["state"]["state_sha256"] = state_digest(evil["state"])
    evil["bundle_signature"]["bundle_sha256"] = bundle_digest(evil)
    (tmp_path / "0-evil.json").write_bytes(orjson.dumps(evil))
    for sample in samples:
        shutil.copy(sample, tmp_path)
    store = MemoryStore()
    for report in (
        run([str(tmp_path)], keyring=default_keyring(), store=store),
        run([str(tmp_path)], keyring=default_keyring()),
    ):
        assert [(r.code, Path(r.source.path).name) for r in report.rejections] == [
            ("schema_error", "0-evil.json")
        ]
        assert "state.equivocations" in report.rejections[0].message
    assert store.counts().nodes["Paper"] == len(samples)


class RaisingVerifier:
    """The one test seam of these tests: an implementation of the ``Verifier`` protocol
    (``loader/signatures.py``) with a bug, raising where it should answer. Pinned for one
    signer's key, it makes checking that signer's bundles raise what verification never
    expects, as a bug anywhere in verification or rows would."""

    def verify(self, message: bytes, signature: bytes) -> bool:
        raise RuntimeError("a bug in a signature verifier")


BUGGY = SignerIdentity.from_seed(b"tests-buggy", key_id="buggy-key", signer_id="buggy.invalid")


def _with_a_buggy_key(keyring: Keyring) -> Keyring:
    key = PinnedKey(BUGGY.key_id, BUGGY.public_key, BUGGY.signer_id)
    object.__setattr__(key, "verifier", RaisingVerifier())  # as benchmarks/bench_loader.py swaps it
    return keyring.with_keys([key])


def _buggy_bundle() -> bytes:
    spec = PaperSpec(
        "2402.00001",
        1,
        "A paper whose check hits a bug",
        ["Ann Lee"],
        "An abstract.",
        "cs.LG",
        [],
        "http://creativecommons.org/licenses/by/4.0/",
        "2024-02-01T00:00:00Z",
        "2026-01-01T00:00:00Z",
        "2026-01-02T00:00:00Z",
    )
    return orjson.dumps(build_bundle(spec, BUGGY))


def _internal_errors_only(report: LoadReport, line: int) -> None:
    assert [(r.code, r.source.line) for r in report.rejections] == [("internal_error", line)]
    message = report.rejections[0].message
    assert "RuntimeError" in message and "bug in pith-graph" in message
    assert "Traceback" not in message and "signature verifier" not in message  # the type, not the text


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="workers inherit the seam")
@pytest.mark.parametrize("workers", [1, 2])
def test_an_unexpected_error_rejects_only_its_bundle(
    tmp_path: Path, corpus: tuple[list[bytes], Keyring], workers: int
) -> None:
    """``internal_error`` for that bundle, in this process and in worker processes, on
    ``load`` and ``verify``; everything else loads as if it were not there."""
    bundles, keyring = corpus
    good = bundles[:200]
    path = _write(tmp_path / "mixed.jsonl", [*good[:100], _buggy_bundle(), *good[100:]])
    assert os.path.getsize(path) >= PARALLEL_MIN_BYTES  # large enough for worker processes
    buggy = _with_a_buggy_key(keyring)
    store = MemoryStore()
    report = run([path], keyring=buggy, store=store, workers=workers, batch_size=32)
    _internal_errors_only(report, 101)
    assert report.accepted + report.stale + report.duplicate == len(good)
    _internal_errors_only(run([path], keyring=buggy, workers=workers), 101)
    clean = MemoryStore()
    run([_write(tmp_path / "good.jsonl", good)], keyring=keyring, store=clean, workers=1)
    assert store.export() == clean.export()


def test_bulk_import_rejects_an_unexpected_error_like_a_load(
    tmp_path: Path, corpus: tuple[list[bytes], Keyring]
) -> None:
    bundles, keyring = corpus
    path = _write(tmp_path / "mixed.jsonl", [*bundles[:200], _buggy_bundle()])
    report = bulk_import(
        [path], keyring=_with_a_buggy_key(keyring), data=None, csv_only=tmp_path / "csv", workers=2
    )
    _internal_errors_only(report, 201)
    assert report.inserted + report.stale + report.duplicate + report.outranked == 200


def test_known_bundles_skip_verification(tmp_path: Path, corpus: tuple[list[bytes], Keyring]) -> None:
    bundles, keyring = corpus
    store = MemoryStore()
    run([_write(tmp_path / "all.jsonl", bundles[:100])], keyring=keyring, store=store, workers=1)
    stored = store.known_bundle_digests()
    winners = [b for b in bundles[:100] if json.loads(b)["bundle_signature"]["bundle_sha256"] in stored]
    losers = [b for b in bundles[:100] if b not in winners]
    assert winners and losers  # the corpus has rebuilt bundles
    before = store.export()
    # With bundle signatures that do not verify (the digest does not cover them), only the
    # bundleSha256 skip avoids rejections: stored bundles are recognised without any signature check.
    again = run([_write(tmp_path / "w.jsonl", _unsigned(winners))], keyring=keyring, store=store)
    assert (again.rejected, again.duplicate, again.accepted) == (0, len(winners), 0)
    # Bundles that lost to a newer one are not stored, so they are verified again.
    stale = run([_write(tmp_path / "l.jsonl", _unsigned(losers))], keyring=keyring, store=store)
    assert {r.code for r in stale.rejections} == {"bad_signature"}
    assert store.export() == before
    # A keyring that no longer trusts their keys: verified, and rejected, like any bundle.
    untrusted = run([_write(tmp_path / "u.jsonl", winners)], keyring=default_keyring(), store=store)
    assert (untrusted.duplicate, {r.code for r in untrusted.rejections}) == (0, {"untrusted_key"})


def _unsigned(bundles: list[bytes]) -> list[bytes]:
    """``bundles`` with a bundle signature of zeros (64 bytes: the right size, never valid)."""
    out = []
    for data in bundles:
        bundle = json.loads(data)
        bundle["bundle_signature"]["signature_b64"] = "A" * 86 + "=="
        out.append(json.dumps(bundle).encode())
    return out


def test_load_graph_returns_graph_and_report() -> None:
    graph, report = load_graph([SAMPLES])
    assert (report.accepted, report.rejected) == (3, 0)
    assert report.counts is not None and report.counts.nodes["Paper"] == 3
    papers = [n for n, label in graph.nodes(data="label") if label == "Paper"]
    assert sorted(papers) == [
        "Paper:pith:2019:BR75OIUY7WDYHPO53K7WUNQ4NZ",
        "Paper:pith:2020:W3PCQTV6U43ZRLRXL3ULSAQ7HW",
        "Paper:pith:2022:3YN673EVFOVJAYQNLYBADBBI3I",
    ]


def test_folder_of_files_split_across_workers_equals_serial(
    tmp_path: Path, corpus: tuple[list[bytes], Keyring]
) -> None:
    """Many files: workers read whole groups of files themselves (the parent only collects)."""
    bundles, keyring = corpus
    folder = tmp_path / "folder"
    folder.mkdir()
    for index, data in enumerate(bundles):
        (folder / f"{index:04d}.json").write_bytes(data)
    (folder / "0200-bad.json").write_bytes(b'{"bundle_type": 1}')
    reports, exports = [], []
    for workers in (1, 2):
        store = MemoryStore()
        reports.append(run([str(folder)], keyring=keyring, store=store, workers=workers))
        exports.append(store.export())
    assert exports[0] == exports[1]
    assert [r.rejections for r in reports] == [reports[0].rejections] * 2
    assert [(r.code, r.source.path) for r in reports[0].rejections] == [
        ("schema_error", str(folder / "0200-bad.json"))
    ]


def _worker_niceness() -> dict[int, int]:
    """The CPU niceness of this process's children that run this Python (its workers), by pid."""
    me, exe = os.getpid(), os.readlink("/proc/self/exe")
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == me and os.readlink(entry / "exe") == exe:
                found[int(entry.name)] = os.getpriority(os.PRIO_PROCESS, int(entry.name))
        except (OSError, ValueError, IndexError):  # gone meanwhile
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_yield_the_cpu_to_a_store_that_writes_in_the_background(
    tmp_path: Path, corpus: tuple[list[bytes], Keyring], store: GraphStore
) -> None:
    """Neo4j's writes are what a load waits for: its workers run 10 below the loader's priority
    (the CPU left over is theirs), an in-memory load's at the loader's own; a caller decides.

    Each worker is judged by the last sample that saw it: a worker lowers its own priority
    once forked, so a sample taken while one was still starting saw the loader's (CI did).
    The last progress report comes after every part has arrived, while the workers still
    run, so it sees each one after it has done its work."""
    bundles, keyring = corpus
    path = _write(tmp_path / "all.jsonl", bundles)
    own = os.getpriority(os.PRIO_PROCESS, 0)
    expected = min(own + 10, 19) if getattr(store, "background_writes", False) else own
    last: dict[int, int] = {}

    def sample(_n: int) -> None:  # children there before the load (an earlier test's, CI saw one) are not its
        last.update((pid, nice) for pid, nice in _worker_niceness().items() if pid not in before)

    before = set(_worker_niceness())
    report = run([path], keyring=keyring, store=store, workers=2, on_progress=sample)
    assert report.rejected == 0
    assert len(last) == 2 and set(last.values()) == {expected}, last
    last.clear()
    before = set(_worker_niceness())
    run([path], keyring=keyring, workers=2, on_progress=sample, worker_niceness=3)
    assert len(last) == 2 and set(last.values()) == {min(own + 3, 19)}, last


@pytest.mark.parametrize("skew", [math.inf, math.nan, -1.0, 3e11, MAX_CLOCK_SKEW + 1])
def test_a_clock_skew_out_of_range_is_a_usage_error_for_library_callers(tmp_path: Path, skew: float) -> None:
    """``run`` and ``bulk_import`` refuse it before reading (the CLI bounds its option too):
    ``inf`` and ``nan`` made every bundle internal_error, a skew past year 9999 every one
    future_dated."""
    with pytest.raises(UsageError, match="clock skew"):
        run([SAMPLES], keyring=default_keyring(), store=MemoryStore(), clock_skew=skew)
    with pytest.raises(UsageError, match="clock skew"):
        bulk_import(
            [SAMPLES], keyring=default_keyring(), data=None, csv_only=tmp_path / "csv", clock_skew=skew
        )
    assert not (tmp_path / "csv").exists()


def test_the_largest_clock_skew_still_checks_dates() -> None:
    report = run([SAMPLES], keyring=default_keyring(), store=MemoryStore(), clock_skew=MAX_CLOCK_SKEW)
    assert report.rejected == 0 and report.inserted > 0
