"""Workers read their own input: byte ranges of JSON Lines files, gzipped files whole or in
shares, groups of single-document files. Whatever the split, a run yields the same results
in the same order, with the same line numbers, as reading everything in one process."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import pith_graph.loader.pipeline as pipeline
import pith_graph.loader.pool as pool
import pith_graph.loader.tasks as tasks
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.parse import InputLimits
from pith_graph.loader.pipeline import BundleHandler, Rejection, WorkerConfig, parts
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.tasks import Task, plan_tasks
from pith_graph.testing.corpus import corpus_signers, generate_bundles

N = 300


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[bytes], Keyring]:
    signer, builder = corpus_signers(4)
    bundles = list(generate_bundles(N, signer=signer, seed=4, extra_signer=builder, extra_signer_every=7))
    keys = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(json.dumps([signer.keyring_entry(), builder.keyring_entry()]))
    return bundles, resolve_keyring(keys)


def _lines(bundles: list[bytes]) -> bytes:
    """Bundles as JSON Lines with blank lines, a tampered bundle and garbage mixed in."""
    out = []
    for index, data in enumerate(bundles):
        if index % 41 == 5:
            out.append(b"")
        if index % 97 == 13:
            out.append(b"{not json")
        if index % 89 == 7:
            data = data.replace(b'"title":"', b'"title":"X', 1)
        out.append(data)
    return b"\n".join(out) + b"\n"


def _run(paths: list[str], keyring: Keyring, workers: int, rows: bool = True) -> list[object]:
    handler = BundleHandler(WorkerConfig(keyring), rows=rows)
    results: list[object] = []
    seen = 0
    for count, found in parts(paths, handler, InputLimits(), workers):
        seen += count
        results.extend(found)
    results.append(seen)
    return results


def _summary(results: list[object]) -> list[object]:
    return [
        r.pith_number
        if isinstance(r, PaperRows)
        else (r.code, r.source.path, r.source.line)
        if isinstance(r, Rejection)
        else r
        for r in results
    ]


@pytest.mark.parametrize("layout", ["plain", "gzip-one", "gzip-many", "mixed"])
def test_parallel_reading_equals_serial_in_order(
    tmp_path: Path, corpus: tuple[list[bytes], Keyring], monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    bundles, keyring = corpus
    monkeypatch.setattr(tasks, "MIN_RANGE_BYTES", 64 << 10)  # several ranges per file
    monkeypatch.setattr(tasks, "BLOCK_LINES", 16)  # several blocks per share
    paths: list[str] = []
    thirds = [bundles[:100], bundles[100:200], bundles[200:]]
    for index, part in enumerate(thirds):
        data = _lines(part)
        gz = layout.startswith("gzip") or (layout == "mixed" and index == 1)
        if layout == "gzip-one" and index:
            continue
        lines = "ndjson" if layout == "mixed" and index else "jsonl"  # the other name of JSON Lines
        if gz:
            path = tmp_path / f"{index}.{lines}.gz"
            path.write_bytes(gzip.compress(data))
        else:
            path = tmp_path / f"{index}.{lines}"
            path.write_bytes(data)
        paths.append(str(path))
    if layout == "mixed":
        (tmp_path / "single.json").write_bytes(bundles[5])
        paths.append(str(tmp_path / "single.json"))
    serial = _summary(_run(paths, keyring, workers=1))
    parallel = _summary(_run(paths, keyring, workers=2))
    assert parallel == serial
    rejected = [r for r in serial if isinstance(r, tuple)]
    assert {code for code, _, _ in rejected} == {"malformed_json", "digest_mismatch"}
    assert all(line is not None and line > 0 for _, _, line in rejected)


def test_ranges_cut_at_line_boundaries(tmp_path: Path, corpus: tuple[list[bytes], Keyring]) -> None:
    bundles, keyring = corpus
    path = tmp_path / "all.jsonl"
    path.write_bytes(_lines(bundles))
    planned = plan_tasks([str(path)], 2)
    assert len(planned) > 2 and all(isinstance(t, Task) and t.kind == "range" for t in planned)
    verified = _run([str(path)], keyring, workers=2, rows=False)
    assert verified[-1] == N + sum(1 for i in range(N) if i % 97 == 13)  # every line read once


def test_gzip_files_are_read_whole_or_in_shares(tmp_path: Path) -> None:
    names = [tmp_path / f"{i}.jsonl.gz" for i in range(5)]
    for name in names:
        name.write_bytes(gzip.compress(b"{}\n"))
    few = plan_tasks([str(n) for n in names[:3]], 2)
    assert all(isinstance(item, list) and len(item) == 2 for item in few)  # too few: all shared
    many = plan_tasks([str(n) for n in names], 2)
    assert [isinstance(item, list) for item in many] == [False, False, False, False, True]


def test_a_truncated_gzip_file_is_reported_once(tmp_path: Path, corpus: tuple[list[bytes], Keyring]) -> None:
    bundles, keyring = corpus
    data = gzip.compress(b"\n".join(bundles[:60]) + b"\n")
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    for workers in (1, 2):
        results = _run([str(path)], keyring, workers=workers, rows=False)
        assert [r.code for r in results if isinstance(r, Rejection)] == ["unreadable"]


def test_results_stream_back_in_bounded_parts(
    tmp_path: Path, corpus: tuple[list[bytes], Keyring], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory stays bounded: a whole file's rows come back in parts, not in one list."""
    bundles, keyring = corpus
    monkeypatch.setattr(pool, "PART_RESULTS", 10)
    names = []
    for index in range(4):
        name = tmp_path / f"{index}.jsonl.gz"
        name.write_bytes(gzip.compress(b"\n".join(bundles[index * 50 : index * 50 + 50]) + b"\n"))
        names.append(str(name))
    handler = BundleHandler(WorkerConfig(keyring))
    sizes = [len(found) for _, found in parts(names, handler, InputLimits(), 2)]
    assert max(sizes) <= 10 and sum(sizes) == 200


def test_gzip_members_of_any_size_are_all_read(tmp_path: Path) -> None:
    """A .jsonl.gz written member by member (as the corpus generator and bgzip do)."""
    lines = [b'{"n": %d}' % i for i in range(5000)]
    members = b"".join(gzip.compress(b"\n".join(lines[i : i + 7]) + b"\n") for i in range(0, 5000, 7))
    path = tmp_path / "members.jsonl.gz"
    path.write_bytes(members + b"\x00" * 16)
    read = [item for item in tasks.read_task(Task("files", (str(path),)), 1 << 20) if item is not None]
    assert [getattr(item, "data", None) for item in read] == lines


def test_a_file_gone_after_planning_is_reported_once(
    tmp_path: Path, corpus: tuple[list[bytes], Keyring], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON Lines file removed (or made unreadable) after its byte ranges were planned:
    every range fails to open it, and the file is one rejection, not one per range."""
    bundles, keyring = corpus
    monkeypatch.setattr(tasks, "MIN_RANGE_BYTES", 64 << 10)
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_BYTES", 0)
    path = tmp_path / "gone.jsonl"
    path.write_bytes(b"\n".join(bundles) + b"\n")
    kept = tmp_path / "kept.jsonl"
    kept.write_bytes(b"\n".join(bundles[:20]) + b"\n")

    def plan_then_remove(files: list[str], workers: int) -> list[Task | list[Task]]:
        planned = plan_tasks(files, workers)
        assert sum(isinstance(t, Task) and t.path == str(path) for t in planned) > 2
        path.unlink()
        return planned

    monkeypatch.setattr(pipeline, "plan_tasks", plan_then_remove)
    results = _run([str(path), str(kept)], keyring, workers=2, rows=False)
    rejected = [(r.code, r.source.path) for r in results if isinstance(r, Rejection)]
    assert rejected == [("unreadable", str(path))]
    assert _summary(results) == _summary(_run([str(path), str(kept)], keyring, workers=1, rows=False))
    assert results[-1] == 1 + 20  # as read in one process: the missing file, the other file's bundles
