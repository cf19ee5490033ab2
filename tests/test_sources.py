"""Reading inputs: files, folders, JSON Lines, gzip, stdin — streamed, located, bounded."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pith_graph.errors import BundleError, Source, UsageError
from pith_graph.loader.facade import SAMPLES, load_graph, resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.sources import RawBundle, expand_paths, iter_inputs
from pith_graph.loader.stores.memory import MemoryStore

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


def test_paths_may_be_path_objects_and_load_as_their_strings(tmp_path: Path) -> None:
    """``pathlib.Path`` paths, a file's and a folder's, list and load as their strings do: a
    file given as a ``Path`` was listed as one and failed when read (``AttributeError``)."""
    samples = Path(SAMPLES)
    bundle = next(samples.glob("*.json"))
    single = tmp_path / "one.json"
    single.write_bytes(bundle.read_bytes())
    assert expand_paths([single, samples]) == expand_paths([str(single), SAMPLES])
    assert all(isinstance(path, str) for path in expand_paths([single, samples]))
    keyring = resolve_keyring()
    as_paths, as_strings = (
        run(given, keyring=keyring, store=MemoryStore(), workers=1)
        for given in ([single, samples], [str(single), SAMPLES])
    )
    assert (as_paths.seen, as_paths.accepted, as_paths.rejected) == (as_strings.seen, as_strings.accepted, 0)
    assert as_paths.seen > as_paths.accepted > 0  # the file is also in the folder: a duplicate


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


@pytest.mark.parametrize("end", [b"\n", b"\r\n"])
def test_a_line_of_exactly_the_limit_is_read_whatever_its_end(tmp_path: Path, end: bytes) -> None:
    bundle = b'{"a":"' + b"x" * 92 + b'"}'  # 100 bytes
    path = tmp_path / "edge.jsonl"
    path.write_bytes(bundle + end + b'{"b":"' + b"y" * 93 + b'"}' + end + b'{"c":1}' + end)
    items = _read([str(path)], limit=100)
    assert isinstance(items[0], RawBundle) and items[0].data == bundle
    assert isinstance(items[1], BundleError) and items[1].code.value == "too_large"  # 101 bytes
    assert isinstance(items[2], RawBundle) and items[2].source == Source(str(path), 3)
    assert len(items) == 3


@pytest.mark.parametrize("kind", ["json", "json.gz", "stdin"])
def test_a_document_of_exactly_the_limit_is_read(tmp_path: Path, kind: str) -> None:
    """A whole-file bundle (of a ``.json.gz``, its inflated bytes count) or a document on
    stdin of exactly ``--max-bytes`` bytes is read; with a limit one byte less it is
    ``too_large``, as a line is."""
    document = b'{\n  "a": "' + b"x" * 86 + b'"\n}\n'  # 100 bytes
    path = tmp_path / f"edge.{kind}"
    path.write_bytes(gzip.compress(document) if kind == "json.gz" else document)
    for limit in (100, 99):
        items = (
            _read(["-"], stdin=document, limit=limit) if kind == "stdin" else _read([str(path)], limit=limit)
        )
        assert len(items) == 1, (limit, items)
        if limit == len(document):
            assert isinstance(items[0], RawBundle) and items[0].data == document, items
        else:
            assert isinstance(items[0], BundleError) and items[0].code.value == "too_large", items


@pytest.mark.parametrize("blank", [b" " * 500, b"\t \r" * 200, b" " * 101])
def test_a_blank_line_over_the_limit_is_a_blank_line(tmp_path: Path, blank: bytes) -> None:
    """Blank lines are passed over, however long; the lines after keep their numbers."""
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b'{"a":1}\n' + blank + b'\n{"b":1}\n')
    items = _read([str(path)], limit=100)
    assert [item.data for item in items if isinstance(item, RawBundle)] == [b'{"a":1}', b'{"b":1}']
    assert [item.source for item in items] == [Source(str(path), 1), Source(str(path), 3)]


def test_an_oversized_document_file_says_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b'{"a":"' + b"x" * 142 + b'"}')  # 150 bytes
    (item,) = _read([str(path)], limit=100)
    assert isinstance(item, BundleError) and item.code.value == "too_large"
    assert item.message == "bundle is 150 bytes, over the limit of 100"
    gzipped = tmp_path / "big.json.gz"  # inflated only as far as the limit: its size is not known
    gzipped.write_bytes(gzip.compress(path.read_bytes()))
    (item,) = _read([str(gzipped)], limit=100)
    assert (
        isinstance(item, BundleError)
        and item.message == "bundle is more than 100 bytes, over the limit of 100"
    )


def test_oversized_gzip_document_is_not_inflated_whole(tmp_path: Path) -> None:
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b"{" + b" " * (50 << 20) + b"}"))
    items = _read([str(path)])
    assert len(items) == 1 and isinstance(items[0], BundleError)
    assert items[0].code.value == "too_large"


def test_an_empty_gzip_file_is_unreadable(tmp_path: Path) -> None:
    """A ``.gz`` of no bytes (a download that failed) is no gzip stream: gzip(1) says
    "unexpected end of file"; it was read as no bundles at all, exit 0."""
    empty = tmp_path / "a.jsonl.gz"
    empty.write_bytes(b"")
    [item] = _read([str(tmp_path)])
    assert isinstance(item, BundleError) and item.code.value == "unreadable"
    assert "an empty file, not gzip" in str(item)


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


_OVER = b'{\n  "a": "' + b"x" * 200 + b'",\n  "b": 1\n}\n'


@pytest.mark.parametrize(
    ("pretty", "limit"),
    [
        pytest.param(b'{\n  "a": 1,\n  "b": [2]\n}\n', LIMIT, id="pretty"),
        pytest.param(b'\xef\xbb\xbf{\n  "a": 1\n}\n', LIMIT, id="bom"),
        pytest.param(b'{"a": 1,\n  "b": [\n    {}\n  ]\n}', LIMIT, id="first-line-with-a-member"),
        pytest.param(b'[\n  {"a": 1}\n]\n', LIMIT, id="array-with-a-whole-line"),
        pytest.param(b'{\n  "a": 1\n  "b": 2\n}\n', LIMIT, id="invalid-but-no-json-lines"),
        pytest.param(_OVER, 100, id="over-the-limit"),
    ],
)
def test_stdin_pretty_document_is_one_bundle(pretty: bytes, limit: int) -> None:
    """A document whose first line opens it stays one bundle (or one ``too_large``)."""
    items = _read(["-"], stdin=pretty, limit=limit)
    assert len(items) == 1 and items[0].source == Source("-")
    if len(pretty) > limit:
        assert isinstance(items[0], BundleError) and items[0].code.value == "too_large"
    else:
        assert isinstance(items[0], RawBundle) and items[0].data == pretty


def _first_lines(limit: int) -> list[object]:
    return [
        pytest.param(b'{"x":"' + b"a" * limit + b'"}', id="over-the-limit"),
        pytest.param(b"[]", id="array"),
        pytest.param(b'"text"', id="string"),
        pytest.param(b"5", id="number"),
        pytest.param(b"\xef\xbb\xbf" + _compact(SAMPLE_FILES[0]), id="bom"),
        pytest.param(b"hello", id="garbage"),
        pytest.param(b"{", id="an-opening-brace"),
        pytest.param(b'[{"a": 1},', id="an-opening-bracket"),
    ]


def _located(items: list[RawBundle | BundleError]) -> list[tuple[object, ...]]:
    return [
        (i.source.line, i.data) if isinstance(i, RawBundle) else (i.source and i.source.line, i.code.value)
        for i in items
    ]


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("count", [1, 3], ids=["within-the-limit", "over-the-limit"])
@pytest.mark.parametrize("first", _first_lines(1 << 15))
def test_stdin_is_json_lines_whatever_its_first_line(
    tmp_path: Path, first: bytes, count: int, gzipped: bool
) -> None:
    """Whoever writes the first line cannot turn the lines after it into one document: stdin
    reads them as a ``.jsonl`` file of the same bytes does, each located."""
    payload = first + b"\n" + b"\n".join(_compact(p) for p in SAMPLE_FILES[:count]) + b"\n"
    path = tmp_path / "same.jsonl"
    path.write_bytes(payload)
    from_file = _located(_read([str(path)], limit=1 << 15))
    from_stdin = _read(["-"], stdin=gzip.compress(payload) if gzipped else payload, limit=1 << 15)
    assert _located(from_stdin) == from_file
    assert {i.source.path for i in from_stdin if i.source} == {"-"}
    assert [line for line, _ in from_file[1:]] == list(range(2, count + 2))


def test_closed_stdin_is_an_unreadable_rejection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", None)  # what Python leaves when started with fd 0 closed
    items = list(iter_inputs(["-"], max_bytes=LIMIT))
    assert [(type(i), i.source) for i in items] == [(BundleError, Source("-"))]
    assert isinstance(items[0], BundleError) and items[0].code.value == "unreadable"
    assert "stdin is closed" in items[0].message


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


def _cli(
    *args: str, stdin: bytes | None = None, closed_stdin: bool = False
) -> tuple[int, dict[str, object], str]:
    """``pith-graph ARGS --json`` in a child process: exit code, report, stderr."""
    command = [sys.executable, "-m", "pith_graph", *args, "--json"]
    if closed_stdin:
        command = ["/bin/sh", "-c", 'exec "$@" <&-', "sh", *command]
    done = subprocess.run(command, input=stdin, capture_output=True, timeout=120, check=False)
    return done.returncode, json.loads(done.stdout or b"null"), done.stderr.decode()


def _rejections(report: dict[str, object]) -> list[tuple[object, ...]]:
    rejections = report["rejections"]
    assert isinstance(rejections, list)
    return [(r["file"], r["line"], r["code"]) for r in rejections]


def test_cli_stdin_lines_after_a_bad_first_line_are_read() -> None:
    payload = b"[]\n" + b"\n".join(_compact(p) for p in SAMPLE_FILES) + b"\n"
    code, report, _ = _cli("verify", "-", stdin=payload)
    assert (code, report["seen"], report["verified"]) == (1, 4, 3)
    assert _rejections(report) == [("-", 1, "not_object")]


def test_cli_closed_stdin_is_a_rejection_not_a_traceback() -> None:
    code, report, stderr = _cli("verify", "-", closed_stdin=True)
    assert "Traceback" not in stderr
    assert (code, report["seen"], _rejections(report)) == (1, 1, [("-", None, "unreadable")])


def _unsearchable_folder(base: Path) -> Path:
    """A folder under ``base`` holding a bundle, whose path is too long to open (PATH_MAX is
    4096 on Linux, 1024 on macOS): a folder no search can read, as root too. Made through
    folder descriptors, which have no such limit."""
    name, path = "d" * 200, base
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        while len(str(path)) < 4400:
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd, path = inner, path / name
        bundle = os.open("b.json", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(bundle, _compact(SAMPLE_FILES[1]))
        os.close(bundle)
    finally:
        os.close(fd)
    return path


def test_a_folder_that_cannot_be_searched_is_an_unreadable_rejection(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(_compact(SAMPLE_FILES[0]))
    deep = _unsearchable_folder(tmp_path)
    items = _read([str(tmp_path)])
    assert [type(i) for i in items] == [RawBundle, BundleError]
    error = items[1]
    assert isinstance(error, BundleError) and error.code.value == "unreadable" and error.source
    assert error.source.path.endswith(os.sep)
    assert str(deep).startswith(error.source.path) and len(error.source.path) > 1000


@pytest.mark.parametrize("workers", [1, 2])
def test_cli_a_folder_that_cannot_be_searched_fails_the_run_and_the_rest_loads(
    tmp_path: Path, workers: int
) -> None:
    (tmp_path / "a.json").write_bytes(_compact(SAMPLE_FILES[0]))
    _unsearchable_folder(tmp_path)
    code, report, _ = _cli("verify", str(tmp_path), "--workers", str(workers))
    assert (code, report["seen"], report["verified"]) == (1, 2, 1)
    [(path, line, reject)] = _rejections(report)
    assert isinstance(path, str) and path.startswith(str(tmp_path / ("d" * 200))) and path.endswith(os.sep)
    assert (line, reject) == (None, "unreadable")


def test_cli_a_path_that_cannot_be_looked_at_is_unreadable_and_the_rest_loads(tmp_path: Path) -> None:
    """A name too long to stat (ENAMETOOLONG; a file in a folder the user cannot search is
    EACCES, the same branch) may exist: it is a rejection, not a traceback nor a usage error."""
    (tmp_path / "a.json").write_bytes(_compact(SAMPLE_FILES[0]))
    too_long = str(tmp_path / ("x" * 300 + ".jsonl"))
    code, report, stderr = _cli("verify", str(tmp_path / "a.json"), too_long)
    assert "Traceback" not in stderr
    assert (code, report["seen"], report["verified"]) == (1, 2, 1)
    assert _rejections(report) == [(too_long, None, "unreadable")]
    assert _cli("verify", str(tmp_path / "nothing.json"))[0] == 2  # a path that names nothing


def test_cli_reads_a_non_blocking_stdin_pipe_to_its_end() -> None:
    """A pipe left non-blocking (a flag of the pipe, which any process sharing it can set)
    read as ended whenever its writer paused: here, half-way through the first line."""
    payload = b"\n".join(_compact(p) for p in SAMPLE_FILES) + b"\n"
    read, write = os.pipe()
    os.set_blocking(read, False)
    command = [sys.executable, "-m", "pith_graph", "verify", "-", "--json"]
    with subprocess.Popen(command, stdin=read, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        os.close(read)
        os.write(write, payload[:100])
        time.sleep(3)  # the loader reads the first part and finds nothing more, for now
        os.write(write, payload[100:])
        os.close(write)
        out, err = child.communicate(timeout=120)
    report = json.loads(out)
    assert (child.returncode, report["seen"], report["verified"]) == (0, 3, 3), err.decode()


def test_links_to_folders_are_followed_each_real_folder_once(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "a.json").write_bytes(b"{}")
    (real / "keyring.json").write_bytes(b"[]")
    (real / "sub" / "up").symlink_to("..")  # a link to an ancestor
    top = tmp_path / "top"
    (top / "p").mkdir(parents=True)
    (top / "q").mkdir()
    (top / "q" / "b.jsonl").write_bytes(b"{}\n")
    (top / "p" / "to_q").symlink_to("../q")  # two links to each other
    (top / "q" / "to_p").symlink_to("../p")
    (top / "linked").symlink_to(real)
    (top / "twice").symlink_to(real)
    (top / "file.json").symlink_to(real / "sub" / "a.json")
    found = expand_paths([str(top)], exclude=[real / "keyring.json"])
    assert found == [
        str(top / "file.json"),
        str(top / "linked" / "sub" / "a.json"),
        str(top / "q" / "b.jsonl"),
    ]
