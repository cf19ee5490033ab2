"""Reading inputs: files, folders, JSON Lines, gzip, stdin — streamed, located, bounded."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

import pytest

from pith_graph.errors import BundleError, Source, UsageError
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.sources import RawBundle, expand_paths, iter_inputs

SAMPLE_FILES = sorted(Path(SAMPLES).glob("*.json"))
LIMIT = 1 << 20


def _compact(path: Path) -> bytes:
    return path.read_bytes().strip()


def _read(paths: list[str], stdin: bytes | None = None, limit: int = LIMIT) -> list[RawBundle | BundleError]:
    return list(
        iter_inputs(
            expand_paths(paths), max_bytes=limit, stdin=io.BytesIO(stdin) if stdin is not None else None
        )
    )


def test_folder_is_recursive_sorted_and_filtered(tmp_path: Path) -> None:
    (tmp_path / "b" / "c").mkdir(parents=True)
    (tmp_path / "b" / "c" / "x.json").write_bytes(b"{}")
    (tmp_path / "a.jsonl").write_bytes(b"{}\n")
    (tmp_path / "b" / "e.ndjson").write_bytes(b"{}\n")
    (tmp_path / "b" / "f.ndjson.gz").write_bytes(gzip.compress(b"{}\n"))
    (tmp_path / "notes.txt").write_bytes(b"ignored")
    (tmp_path / "d.json.gz").write_bytes(gzip.compress(b"{}"))
    found = expand_paths([str(tmp_path)])
    assert found == sorted(found)
    assert [Path(p).name for p in found] == ["a.jsonl", "x.json", "e.ndjson", "f.ndjson.gz", "d.json.gz"]
    assert not any(p.endswith(".txt") for p in found)


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        expand_paths([str(tmp_path / "nope.json")])


@pytest.mark.parametrize("suffix", [".jsonl", ".ndjson"])
def test_jsonl_lines_are_located(tmp_path: Path, suffix: str) -> None:
    lines = [_compact(p) for p in SAMPLE_FILES]
    path = tmp_path / f"all{suffix}"
    path.write_bytes(lines[0] + b"\n\n" + lines[1] + b"\n" + lines[2])
    items = _read([str(path)])
    assert [item.source for item in items] == [
        Source(str(path), 1),
        Source(str(path), 3),
        Source(str(path), 4),
    ]
    assert [item.data for item in items if isinstance(item, RawBundle)] == lines


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".ndjson.gz"])
def test_gzip_jsonl(tmp_path: Path, suffix: str) -> None:
    lines = [_compact(p) for p in SAMPLE_FILES]
    path = tmp_path / f"all{suffix}"
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    items = _read([str(path)])
    assert [i.data for i in items if isinstance(i, RawBundle)] == lines


def test_oversized_line_is_rejected_and_reading_continues(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b'{"a":"' + b"x" * 500 + b'"}\n{"b":1}\n')
    items = _read([str(path)], limit=100)
    assert isinstance(items[0], BundleError) and items[0].code.value == "too_large"
    assert items[0].source == Source(str(path), 1)
    assert isinstance(items[1], RawBundle) and items[1].data == b'{"b":1}'
    assert items[1].source == Source(str(path), 2)


def test_oversized_gzip_document_is_not_inflated_whole(tmp_path: Path) -> None:
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b"{" + b" " * (50 << 20) + b"}"))
    items = _read([str(path)])
    assert len(items) == 1 and isinstance(items[0], BundleError)
    assert items[0].code.value == "too_large"


def test_truncated_gzip_is_unreadable_and_next_file_still_reads(tmp_path: Path) -> None:
    bad = tmp_path / "a.json.gz"
    bad.write_bytes(gzip.compress(_compact(SAMPLE_FILES[0]))[:40])
    good = tmp_path / "b.json"
    good.write_bytes(_compact(SAMPLE_FILES[1]))
    items = _read([str(tmp_path)])
    assert isinstance(items[0], BundleError) and items[0].code.value == "unreadable"
    assert isinstance(items[1], RawBundle) and items[1].source == Source(str(good))


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
def test_stdin_jsonl(gzipped: bool) -> None:
    payload = b"\n".join(_compact(p) for p in SAMPLE_FILES) + b"\n"
    items = _read(["-"], stdin=gzip.compress(payload) if gzipped else payload)
    assert [i.source for i in items] == [Source("-", 1), Source("-", 2), Source("-", 3)]


def test_stdin_pretty_document_is_one_bundle() -> None:
    pretty = b'{\n  "a": 1,\n  "b": [2]\n}\n'
    items = _read(["-"], stdin=pretty)
    assert len(items) == 1 and isinstance(items[0], RawBundle)
    assert items[0].data == pretty and items[0].source == Source("-")


def test_excluded_files_are_left_out_by_any_path(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    keys = tmp_path / "sub" / "keyring.json"
    keys.write_bytes(b"[]")
    (tmp_path / "sub" / "a.json").write_bytes(b"{}")
    (tmp_path / "hard.json").hardlink_to(keys)
    (tmp_path / "soft.json").symlink_to(keys)
    assert expand_paths([str(tmp_path)], exclude=[keys]) == [str(tmp_path / "sub" / "a.json")]
    assert expand_paths([str(keys), str(tmp_path / "soft.json")], exclude=[str(tmp_path / "hard.json")]) == []
    assert len(expand_paths([str(tmp_path)], exclude=[tmp_path / "missing.json"])) == 4


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("name", ["b.json", "b.jsonl", "b.jsonl.gz", "b.json.gz"])
def test_a_fifo_in_a_folder_is_unreadable_and_does_not_block_the_run(
    tmp_path: Path, name: str, workers: int
) -> None:
    """A FIFO (say, from an untrusted archive) would block the run until someone wrote to it:
    it is refused as not a regular file, in one process and in the workers' tasks alike."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_bytes(_compact(SAMPLE_FILES[0]))
    os.mkfifo(folder / name)
    (folder / "c.jsonl").write_bytes(_compact(SAMPLE_FILES[0]) + b"\n")
    _, report = load_graph([str(folder)], workers=workers)
    assert [(r.code, Path(r.source.path).name) for r in report.rejections] == [("unreadable", name)]
    assert "not a regular file" in report.rejections[0].message
    assert report.accepted == 1 and report.duplicate == 1  # the same bundle, twice
