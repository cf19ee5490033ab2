"""Bounds on what one trusted key, or a hostile file, can make the loader store or do.

* a source version outside 1..2**31 - 1 is a ``schema_error``, on both stores and in the
  bulk import (``vectors/source-versions.json``): past 2**63 Neo4j cannot store it, past
  2**31 GraphQL's ``Int`` cannot serve it;
* a gzip of blank lines (about 1000:1) is read in bulk, not one Python step per line, with
  the same line numbers, ranges and shares;
* a message quotes at most ``QUOTED_CHARACTERS`` characters of a value and its length,
  however large the value: one that quoted a bundle's key or version whole was as large as
  the bundle (a 60 MB key made a 60 MB ``--json`` report).
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

import pith_graph.loader.gunzip as gunzip
import pith_graph.loader.lines as lines
import pith_graph.loader.sources as sources
import pith_graph.loader.tasks as tasks
from pith_graph.errors import QUOTED_CHARACTERS, BundleError, KeyringError, quoted
from pith_graph.loader.bulk import bulk_import
from pith_graph.loader.format import BUNDLE_TYPE
from pith_graph.loader.keyfiles import parse_keyring
from pith_graph.loader.keyring import PinnedKey, default_keyring
from pith_graph.loader.lines import RawBundle, iter_lines
from pith_graph.loader.parse import InputLimits, parse_bundle
from pith_graph.loader.pipeline import run
from pith_graph.loader.sources import iter_inputs
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.tasks import Task, read_task
from pith_graph.loader.verify import verify_bundle
from pith_graph.testing import run_cli
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle

VERSIONS = json.loads((Path(__file__).parent / "vectors" / "source-versions.json").read_text())
SIGNER = SignerIdentity.from_seed(b"input-bounds", key_id="bounds-key", signer_id="bounds.invalid")
KEYRING = default_keyring().with_keys([PinnedKey(SIGNER.key_id, SIGNER.public_key, SIGNER.signer_id)])
LIMIT = 1 << 20


def _bundle(arxiv_id: str, version: int) -> dict[str, Any]:
    """A consistent, validly signed bundle: only the bound can reject it."""
    return build_bundle(PaperSpec.example(arxiv_id, version=version), SIGNER)


@pytest.mark.parametrize("version", VERSIONS["accepted"])
def test_source_versions_in_range_verify(version: int) -> None:
    bundle = _bundle("2601.00003", version)
    assert verify_bundle(bundle, KEYRING).pith_number == bundle["pith_number"]


@pytest.mark.parametrize("version", VERSIONS["rejected"])
def test_source_versions_out_of_range_are_schema_errors(version: int) -> None:
    with pytest.raises(BundleError) as caught:
        verify_bundle(_bundle("2601.00003", version), KEYRING)
    assert caught.value.code.value == "schema_error"
    assert caught.value.message == (
        f"bundle.canonical_record.source.version must be from 1 to 2147483647, not {version}"
    )


def test_record_createds_source_version_is_bounded_too() -> None:
    bundle = _bundle("2601.00003", 1)
    bundle["events"][0]["payload"]["source_version"] = 2**31
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, KEYRING)
    assert caught.value.code.value == "schema_error"
    assert "events[0].payload.source_version" in caught.value.message


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "bundles"
    folder.mkdir()
    (folder / "a-good.json").write_bytes(orjson.dumps(_bundle("2601.00003", 2**31 - 1)))
    (folder / "b-huge.json").write_bytes(orjson.dumps(_bundle("2601.00004", 2**63)))
    (folder / "c-int32.json").write_bytes(orjson.dumps(_bundle("2601.00005", 2**31)))
    return folder


def test_both_stores_reject_an_out_of_range_version_and_load_the_rest(
    store: GraphStore, tmp_path: Path
) -> None:
    """Neo4j used to fail the whole batch on 2**63 (an uncaught OverflowError)."""
    folder = _folder(tmp_path)
    report = run([str(folder)], keyring=KEYRING, store=store, workers=1)
    assert (report.inserted, report.rejected) == (1, 2)
    assert sorted((r.code, Path(r.source.path).name) for r in report.rejections) == [
        ("schema_error", "b-huge.json"),
        ("schema_error", "c-int32.json"),
    ]
    papers = [node for node in store.export().nodes.values() if node["label"] == "Paper"]
    assert [paper["sourceVersion"] for paper in papers] == [2**31 - 1]


def test_the_bulk_import_rejects_an_out_of_range_version(tmp_path: Path) -> None:
    """It used to write 2**63 to the CSV, which neo4j-admin stored as -2**63."""
    csv = tmp_path / "csv"
    report = bulk_import([str(_folder(tmp_path))], keyring=KEYRING, data=None, csv_only=csv, workers=1)
    assert (report.inserted, report.rejected) == (1, 2)
    assert {r.code for r in report.rejections} == {"schema_error"}
    written = "".join(path.read_text(encoding="utf-8") for path in csv.glob("*.csv"))
    assert "2147483647" in written
    assert str(2**63) not in written and str(2**31) not in written


# --- blank lines ---------------------------------------------------------------------------


class _Counting(io.BufferedReader):
    """A buffered stream that counts its ``readline`` calls (one Python step per line)."""

    readlines = 0

    def readline(self, size: int | None = -1) -> bytes:
        self.readlines += 1
        return super().readline(size)


BLANKS = 1 << 20
# Blank runs of every kind (``\n``, ``\r\n``, spaces), each far longer than BLANK_RUN.
SPARSE = (
    b"\n" * BLANKS + b'{"a":1}\n' + b"  \r\n" * 5000 + b'{"b":2}\n' + b" " * 3 + b"\n" * 4000 + b'{"c":3}'
)
SPARSE_LINES = [(BLANKS + 1, b'{"a":1}'), (BLANKS + 5002, b'{"b":2}'), (BLANKS + 9003, b'{"c":3}')]


def _located(items: list[Any]) -> list[tuple[int | None, bytes]]:
    assert all(isinstance(item, RawBundle) for item in items)
    return [(item.source.line, item.data) for item in items]


def test_blank_line_runs_cost_no_python_step_per_line() -> None:
    stream = _Counting(io.BytesIO(SPARSE))  # type: ignore[arg-type]
    counted: list[int] = []
    items = list(iter_lines(stream, "x.jsonl", LIMIT, counted=counted))
    assert _located(items) == SPARSE_LINES
    assert counted == [BLANKS + 9003]
    assert stream.readlines < 1000  # ~1M lines: one readline each before


def test_a_gzip_of_blank_lines_is_read_in_bulk_by_every_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same file through the serial reader, one worker, and shares (each inflates it all,
    through :func:`~pith_graph.loader.gunzip.inflated`)."""
    path = tmp_path / "blank.jsonl.gz"
    path.write_bytes(gzip.compress(SPARSE, 9))
    streams: list[_Counting] = []

    def counting_inflated(handle: Any) -> _Counting:
        streams.append(_Counting(gunzip.Inflater(handle), buffer_size=1 << 20))
        return streams[-1]

    monkeypatch.setattr(sources, "inflated", counting_inflated)
    monkeypatch.setattr(tasks, "inflated", counting_inflated)
    expected = SPARSE_LINES
    assert _located(list(iter_inputs([str(path)], max_bytes=LIMIT))) == expected
    assert _located(list(read_task(Task("files", (str(path),)), LIMIT))) == expected
    shares = [
        [i for i in read_task(Task("share", (str(path),), share=s, shares=2), LIMIT) if i] for s in (0, 1)
    ]
    assert _located(shares[0]) == expected and shares[1] == []  # one block of BLOCK_LINES: share 0's
    assert len(streams) == 4 and all(stream.readlines < 1000 for stream in streams)


def test_ranges_cut_inside_blank_runs_read_every_line_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every cut point of a file with blank runs: the two ranges together read each line once,
    numbered as the whole file is (a bulk skip never reads past its range's end)."""
    monkeypatch.setattr(lines, "BLANK_RUN", 2)
    data = b"\n" * 9 + b"{}\n" + b" \n\r\n\n" * 3 + b"{ }\n\n\n\n" + b"{  }" + b"\n" * 5
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    whole = [
        (i.source.line, i.data) for i in iter_inputs([str(path)], max_bytes=LIMIT) if isinstance(i, RawBundle)
    ]
    assert [line for line, _ in whole] == [10, 20, 24]
    for cut in range(len(data) + 1):
        first = list(read_task(Task("range", (str(path),), 0, cut), LIMIT))
        second = list(read_task(Task("range", (str(path),), cut, len(data)), LIMIT))
        assert isinstance(first[-1], int) and isinstance(second[-1], int)
        offset = first[-1]
        joined = [(i.source.line, i.data) for i in first[:-1] if isinstance(i, RawBundle)]
        joined += [
            (i.source.line + offset, i.data)
            for i in second[:-1]
            if isinstance(i, RawBundle) and i.source.line is not None
        ]
        assert joined == whole, cut
        assert first[-1] + second[-1] == data.count(b"\n"), cut


# --- a message quotes its input briefly ----------------------------------------------

HUGE = 3_000_000  # characters: far past anything a message should hold
SHORT = 300  # characters: a message quoting a value briefly stays under this


@pytest.mark.parametrize(
    ("value", "ascii_only"),
    [
        pytest.param("", False, id="empty"),
        pytest.param("2.0", False, id="short"),
        pytest.param("x" * QUOTED_CHARACTERS, False, id="at-the-limit"),
        pytest.param("it's \n", False, id="quote-and-newline"),
        pytest.param("2601.0000\u0661", True, id="ascii"),
        pytest.param(9007199254740993, False, id="integer"),
    ],
)
def test_a_short_value_is_quoted_as_repr_or_ascii_would(value: object, ascii_only: bool) -> None:
    assert quoted(value, ascii_only=ascii_only) == (ascii if ascii_only else repr)(value)


@pytest.mark.parametrize("ascii_only", [False, True])
def test_a_long_value_is_cut_and_its_length_given(ascii_only: bool) -> None:
    value = "\u00e9" + "a" * (HUGE - 1)
    shown = quoted(value, ascii_only=ascii_only)
    head = (ascii if ascii_only else repr)(value[:QUOTED_CHARACTERS])
    assert shown == f"{head[:-1]}…{head[-1]} ({HUGE} characters)"
    assert len(shown) < SHORT


def test_a_long_integer_is_cut_and_its_length_given() -> None:
    value = int("9" * 4000)
    assert quoted(value) == f"{'9' * QUOTED_CHARACTERS}… (4000 characters)"


WIDE_LIMITS = InputLimits(max_bytes=64 << 20)


@pytest.mark.parametrize(
    ("data", "code"),
    [
        pytest.param(b'{"%s": 1, "%s": 2}' % (b"k" * HUGE, b"k" * HUGE), "duplicate_key", id="duplicate-key"),
        pytest.param(b'{"%s": 9007199254740993 }' % (b"k" * HUGE), "schema_error", id="wide-integer-key"),
        pytest.param(b'{"a": %s }' % (b"9" * 300), "schema_error", id="wide-integer"),
    ],
)
def test_parse_rejections_quote_briefly(data: bytes, code: str) -> None:
    with pytest.raises(BundleError) as caught:
        parse_bundle(data, WIDE_LIMITS)
    assert caught.value.code.value == code
    assert len(caught.value.message) < SHORT


def _signed() -> dict[str, Any]:
    return build_bundle(PaperSpec.example("2601.00004"), SIGNER)


def _untrusted(bundle: dict[str, Any]) -> None:
    bundle["bundle_signature"]["key_id"] = "k" * HUGE


def _alias(bundle: dict[str, Any]) -> None:
    bundle["source_aliases"][0]["alias_value"] = "2" * HUGE


def _pith_number(bundle: dict[str, Any]) -> None:
    bundle["pith_number"] = "p" * HUGE


def _event_type(bundle: dict[str, Any]) -> None:
    bundle["events"][1]["event_type"] = "e" * HUGE


def _source_kind(bundle: dict[str, Any]) -> None:
    bundle["canonical_record"]["source"]["kind"] = "K" * HUGE


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        pytest.param(_untrusted, "untrusted_key", id="key-id"),
        pytest.param(_alias, "identifier_mismatch", id="alias-value"),
        pytest.param(_pith_number, "identifier_mismatch", id="pith-number"),
        pytest.param(_event_type, "schema_error", id="event-type"),
        pytest.param(_source_kind, "schema_error", id="source-kind"),
    ],
)
def test_verification_rejections_quote_briefly(edit: Any, code: str) -> None:
    bundle = _signed()
    edit(bundle)
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, KEYRING)
    assert caught.value.code.value == code
    assert f"({HUGE} characters)" in caught.value.message
    assert len(caught.value.message) < SHORT


def test_the_cli_reports_a_huge_key_or_version_in_a_short_line(tmp_path: Path) -> None:
    """The command as a user runs it: each rejection names its code, file and line in a few
    hundred characters, and the whole report stays small."""
    key = "k" * HUGE
    lines = [
        f'{{"{key}": 1, "{key}": 2}}',
        json.dumps({"bundle_type": BUNDLE_TYPE, "bundle_version": "v" * HUGE}),
    ]
    path = tmp_path / "huge.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = run_cli("verify", str(path), "--json", "--max-bytes", str(16 << 20))
    assert result.returncode == 1, result.stderr
    assert len(result.stdout) < 4000
    rejections = json.loads(result.stdout)["rejections"]
    assert [(r["file"], r["line"], r["code"]) for r in rejections] == [
        (str(path), 1, "duplicate_key"),
        (str(path), 2, "schema_error"),
    ]
    assert all(len(r["message"]) < SHORT and f"({HUGE} characters)" in r["message"] for r in rejections)
    text = run_cli("verify", str(path), "--max-bytes", str(16 << 20))
    assert [line for line in text.stdout.splitlines() if line.startswith("REJECTED")] == [
        f"REJECTED {path}:{number}: {r['code']}: {r['message']}" for number, r in enumerate(rejections, 1)
    ]
    assert all(len(line) < SHORT + len(str(path)) + 40 for line in text.stdout.splitlines())


def test_a_keyring_file_is_quoted_briefly_too() -> None:
    entry = {"key_id": "a-key", "public_key_hex": SIGNER.public_key.hex(), "f" * HUGE: True}
    with pytest.raises(KeyringError) as caught:
        parse_keyring([entry], "keys.json")
    assert str(caught.value).startswith("keys.json[0]: unknown field 'fff")
    assert f"({HUGE} characters)" in str(caught.value)
    assert len(str(caught.value)) < SHORT + 200  # the message lists the known fields too
