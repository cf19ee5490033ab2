"""Bulk import without Neo4j: the CSV files say what a load would keep, and the checks of
the target folder. (``test_bulk_import.py`` runs Neo4j's importer on such files.)"""

from __future__ import annotations

import csv
import dataclasses
import io
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from pith_graph.errors import UsageError
from pith_graph.loader.bulk import bulk_import, partitions_for
from pith_graph.loader.bulk.csvfiles import TARGETS, alias_id, line
from pith_graph.loader.bulk.neo4j_admin import running_server
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import PinnedKey, default_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, resign
from pith_graph.testing.corpus import write_corpus


def test_csv_rows_round_trip_through_a_csv_reader() -> None:
    values = ['a "b", c', "line\nbreak", 7, True, ["k1", "k2"], ""]
    encoded, multiline = line(values)
    assert multiline
    (row,) = csv.reader(io.StringIO(encoded.decode()))
    assert row == ['a "b", c', "line\nbreak", "7", "true", "k1\x1fk2", ""]
    assert alias_id("a:b", "c") != alias_id("a", "b:c")
    headers = {target.label: target.header for target in TARGETS}
    assert headers["Alias"] == ":ID(Alias),kind,value"
    assert (
        headers["SIGNED"]
        == ":START_ID(Signer),:END_ID(Paper),keyIds:string[],eventTypes:string[],signedBundle:boolean"
    )
    assert headers["Paper"].startswith("pithNumber:ID(Paper),") and "submittedYear:long" in headers["Paper"]


@pytest.mark.parametrize(
    ("value", "multiline"), [("a\rb", True), ("a\nb", True), ("a\r\nb", True), ("a b\t", False)]
)
def test_a_row_holding_any_line_break_is_multi_line(value: str, multiline: bool) -> None:
    """A lone CR (no LF) is a line break to the importer too: the row goes to the multi-line part."""
    assert line([value, 7])[1] is multiline


@pytest.mark.parametrize(
    "items",
    [
        pytest.param([], id="empty: the importer would read no property"),
        pytest.param(["k1", "k\x1f2"], id="an item holding the array delimiter"),
        pytest.param(["\x1f"], id="the delimiter alone"),
    ],
)
def test_a_list_the_importer_cannot_read_back_is_refused(items: list[str]) -> None:
    """An empty list field reads back as no property, and U+001F would split an item in two:
    either is refused (``UsageError``), never written as a field that reads back otherwise."""
    with pytest.raises(UsageError, match="cannot write the list"):
        line(["pith:1", items])


def test_a_paper_whose_title_holds_a_lone_cr_is_written_to_the_multi_line_file(tmp_path: Path) -> None:
    signer = SignerIdentity.from_seed(b"bulk-cr", key_id="cr-key", signer_id="cr.invalid")
    folder = tmp_path / "in"
    folder.mkdir()
    for arxiv_id, title in (("2601.00001", "Carriage\rreturn"), ("2601.00002", "One line")):
        spec = PaperSpec.example(arxiv_id, title=title)
        (folder / f"{arxiv_id}.json").write_bytes(orjson.dumps(build_bundle(spec, signer)))
    keyring = resolve_keyring([PinnedKey(signer.key_id, signer.public_key, signer.signer_id)])
    report = bulk_import([str(folder)], keyring=keyring, data=None, csv_only=tmp_path / "csv", workers=1)
    assert (report.accepted, report.rejected) == (2, 0)

    def titles(pattern: str) -> list[str]:
        (path,) = (tmp_path / "csv").glob(pattern)
        return [row[2] for row in csv.reader(io.StringIO(path.read_bytes().decode(), newline=""))]

    assert titles("paper.multiline.d*.csv") == ["Carriage\rreturn"]
    assert titles("paper.d*.csv") == ["One line"]
    assert any(arg.startswith("--multiline-fields=") for arg in report_args(tmp_path / "csv"))


@pytest.mark.parametrize("workers", [1, 2])
def test_the_files_hold_what_a_load_keeps(
    tmp_path: Path, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pith_graph.loader.bulk as bulk

    info = write_corpus(
        tmp_path / "c", 600, seed=13, workers=1, layout="jsonl", shard_size=200, extra_signer_every=5
    )
    keyring = resolve_keyring(info.keyring_path)
    paths = [str(p) for p in info.shards]
    monkeypatch.setattr(bulk, "PARTITION_BUNDLES", 50)  # many partitions
    assert partitions_for(paths) > 5
    report = bulk_import(paths, keyring=keyring, data=None, csv_only=tmp_path / "csv", workers=workers)
    memory = MemoryStore()
    loaded = run(paths, keyring=keyring, store=memory, workers=1, batch_size=10_000)
    assert (report.inserted, report.stale, report.duplicate, report.outranked) == (
        loaded.inserted,
        loaded.stale,
        loaded.duplicate,
        loaded.outranked,
    )
    assert report.counts == memory.counts()
    paper_files = sorted((tmp_path / "csv").glob("paper.d*.csv"))  # one per process of pass two
    assert len(paper_files) == workers
    papers = [
        row for path in paper_files for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8")))
    ]
    stored = {data["bundleSha256"] for _, data in memory.graph.nodes(data=True) if data["label"] == "Paper"}
    assert len(papers) == len(stored)
    assert {row[12] for row in papers} == stored  # bundleSha256
    args = report_args(tmp_path / "csv")
    assert [a for a in args if a.startswith("--nodes=Paper=")] == [
        f"--nodes=Paper={tmp_path / 'csv' / 'paper.header.csv'},{','.join(map(str, paper_files))}"
    ]
    assert not any(tmp_path.glob(".pith-graph-import-*"))  # the spill is gone
    assert_nodes_as_loaded(tmp_path / "csv", memory)  # isLatest of the ~20% ids with versions too


def _csv_text(value: Any) -> str:
    """A property as the CSV files write it (``csvfiles.line``): the importer's text."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "\x1f".join(str(item) for item in value)
    return "" if value is None else str(value)


def assert_nodes_as_loaded(folder: Path, memory: MemoryStore) -> None:
    """Every node row of the CSV files (each label's files, single- and multi-line) is a node a
    load stored, with its properties, and each node has one row; a multi-line file holds only
    rows with a line break, the others none; no file is executable or writable but by its owner."""
    for target in TARGETS[:5]:
        fields = [field.split(":")[0] for field in target.header.split(",")]
        expected = []
        for _node, data in memory.graph.nodes(data=True):
            if data["label"] == target.label:
                values = [_csv_text(data.get(name)) for name in fields[1:]]
                key = (
                    alias_id(data["kind"], data["value"])
                    if target.label == "Alias"
                    else _csv_text(data.get(fields[0]))
                )
                expected.append([key, *values])
        files = sorted(folder.glob(f"{target.name}.*.csv"))
        rows = [
            row
            for path in files
            if not path.name.endswith(".header.csv")
            for row in csv.reader(io.StringIO(path.read_bytes().decode(), newline=""))
        ]
        assert sorted(rows) == sorted(expected), target.label
    for path in folder.glob("*.csv"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o133 == 0, path.name
        rows = list(csv.reader(io.StringIO(path.read_bytes().decode(), newline="")))
        broken = [any("\n" in value or "\r" in value for value in row) for row in rows]
        assert all(broken) if ".multiline." in path.name else not any(broken), path.name


def test_an_author_spelled_in_several_ways_is_one_row_as_a_load_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spellings of one name key spread over many partitions meet in one Author row (pass
    three partitions nodes by key), with the name, paper count and spelling counts a load
    stores; each source's newest version (v2 of some ids) is the one marked latest."""
    import pith_graph.loader.bulk as bulk

    signer = SignerIdentity.from_seed(b"bulk-spellings", key_id="sp-key", signer_id="sp.invalid")
    spellings = ["Ann Lee", "ANN LEE", "Ann  Lee", "ann lee"]
    lines = []
    for n in range(60):
        arxiv_id = f"2601.{n:05d}"
        authors = [spellings[n % 4], f"Bo Chen {n % 3}"]
        for version in (1, 2) if n % 5 == 0 else (1,):
            spec = PaperSpec.example(arxiv_id, authors=authors, version=version)
            lines.append(orjson.dumps(build_bundle(spec, signer)) + b"\n")
    bundles = tmp_path / "bundles.jsonl"
    bundles.write_bytes(b"".join(lines))
    keyring = resolve_keyring([PinnedKey(signer.key_id, signer.public_key, signer.signer_id)])
    monkeypatch.setattr(bulk, "PARTITION_BUNDLES", 2)
    assert partitions_for([str(bundles)]) > 5
    report = bulk_import([str(bundles)], keyring=keyring, data=None, csv_only=tmp_path / "csv", workers=2)
    memory = MemoryStore()
    run([str(bundles)], keyring=keyring, store=memory, workers=1)
    assert report.counts == memory.counts()
    (ann,) = [d for _n, d in memory.graph.nodes(data=True) if d.get("nameKey") == "ann lee"]
    assert ann["paperCount"] == 72 and len(ann["nameForms"]) == 3  # every version (the vectors as meant)
    assert_nodes_as_loaded(tmp_path / "csv", memory)


def test_signers_of_no_event_and_their_types_are_written_as_a_load_stores_them(tmp_path: Path) -> None:
    """A bundle whose bundle signer signed no event (it re-wraps another signer's events) and
    one whose receipt is another signer's (copied in): their SIGNED rows have no eventTypes
    (an empty field, which the importer stores as no property: it cannot store ``[]``), and
    every Signer row has the type the keyring pins, else "unknown" (the events' claim,
    ``pith_registry`` here, is not taken). The rows are what a load stores."""
    first = SignerIdentity.from_seed(b"bulk-first", key_id="first-key", signer_id="first.invalid")
    second = SignerIdentity.from_seed(b"bulk-second", key_id="second-key", signer_id="second.invalid")
    paper = PaperSpec.example("2403.00001")
    rewrapped = build_bundle(paper, first)
    resign(rewrapped, second, event_signers={0: first, 1: first}, sign_receipt=False, refresh_events=False)
    copied = dataclasses.replace(paper, arxiv_id="2403.00002")
    copy = build_bundle(copied, second)
    copy["events"][0]["payload"]["receipt"] = build_bundle(copied, first)["events"][0]["payload"]["receipt"]
    resign(copy, second, sign_receipt=False)
    folder = tmp_path / "in"
    folder.mkdir()
    for name, data in (
        ("a", rewrapped),
        ("b", copy),
        ("c", build_bundle(dataclasses.replace(paper, arxiv_id="2403.00003"), first)),
    ):
        (folder / f"{name}.json").write_bytes(orjson.dumps(data))
    keyring = resolve_keyring([PinnedKey(s.key_id, s.public_key, s.signer_id) for s in (first, second)])
    report = bulk_import([str(folder)], keyring=keyring, data=None, csv_only=tmp_path / "csv", workers=1)
    assert (report.accepted, report.rejected) == (3, 0)

    def rows(stem: str) -> list[list[str]]:
        files = sorted((tmp_path / "csv").glob(f"{stem}.*.csv"))
        text = "".join(f.read_text(encoding="utf-8") for f in files if not f.name.endswith(".header.csv"))
        return sorted(csv.reader(io.StringIO(text)))

    memory = MemoryStore()
    run([str(folder)], keyring=keyring, store=memory, workers=1)
    graph = memory.export()
    signed = sorted(
        [
            start.removeprefix("Signer:"),
            end.removeprefix("Paper:"),
            "\x1f".join(edge["keyIds"]),
            "\x1f".join(edge.get("eventTypes", [])),
            str(edge["signedBundle"]).lower(),
        ]
        for (start, kind, end), edge in graph.edges.items()
        if kind == "SIGNED"
    )
    assert rows("signed") == signed
    assert (
        sum(1 for row in signed if row[3] == "") == 2
    )  # second's on the re-wrapped paper, first's on the copy
    assert rows("signer") == [
        ["first.invalid", "unknown", "first-key"],
        ["second.invalid", "unknown", "second-key"],
    ]
    assert {node["signerType"] for node in graph.nodes.values() if node["label"] == "Signer"} == {"unknown"}


def report_args(folder: Path) -> list[str]:
    return (folder / "neo4j-admin.args").read_text().split()


def test_a_process_holding_the_store_lock_counts_as_running(tmp_path: Path) -> None:
    lock = tmp_path / "data" / "databases" / "store_lock"
    lock.parent.mkdir(parents=True)
    lock.write_bytes(b"")
    assert running_server(tmp_path) is None
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time; f = open(sys.argv[1], 'rb+'); fcntl.lockf(f, fcntl.LOCK_EX);"
            " print('held', flush=True); time.sleep(60)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert running_server(tmp_path) == f"a process holds {lock}"
    finally:
        holder.kill()
        holder.communicate()


def test_a_key_id_the_importer_cannot_write_is_refused_before_verifying(tmp_path: Path) -> None:
    """A pinned key id holding U+001F, the importer's list delimiter: refused at the start, as
    a usage error (exit 2), and nothing is written. It used to verify every bundle first, then
    stop writing the files (differential fuzz); a transactional load takes such a key."""
    signer = SignerIdentity.from_seed(b"bulk-us", key_id="us\x1fkey", signer_id="us.invalid")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_bytes(orjson.dumps(build_bundle(PaperSpec.example("2403.00001"), signer)))
    # built by hand: keys files and load_graph refuse such an id (since 0.8.7), but a Keyring
    # a script builds itself reaches the importer as it is
    keyring = default_keyring().with_keys([PinnedKey(signer.key_id, signer.public_key, signer.signer_id)])
    with pytest.raises(UsageError, match=r"'us\\x1fkey' holds U\+001F"):
        bulk_import([str(folder)], keyring=keyring, data=None, csv_only=tmp_path / "csv", workers=1)
    assert not (tmp_path / "csv").exists()
    store = MemoryStore()
    assert run([str(folder)], keyring=keyring, store=store, workers=1).accepted == 1


def test_a_server_started_during_the_import_is_refused_before_the_importer(tmp_path: Path) -> None:
    """The running-server check ran once, before verification: a server started meanwhile made
    neo4j-admin fail ("database is in use", exit 3) and left the folder marked as interrupted,
    which scripts/neo4j then refused to serve (review of concurrent runs). It is checked again
    just before the importer: a usage error, and the folder is not marked."""
    signer = SignerIdentity.from_seed(b"bulk-race", key_id="race-key", signer_id="race.invalid")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_bytes(orjson.dumps(build_bundle(PaperSpec.example("2403.00001"), signer)))
    keyring = resolve_keyring([PinnedKey(signer.key_id, signer.public_key, signer.signer_id)])
    data = tmp_path / "neo"
    lock = data / "data" / "databases" / "store_lock"
    holders: list[subprocess.Popen[str]] = []

    def start_server(seen: int) -> None:  # a process takes the store's lock, as a starting server does
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.touch()
        code = "import fcntl, sys, time; f = open(sys.argv[1], 'rb+'); fcntl.lockf(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"
        holder = subprocess.Popen([sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE, text=True)
        holders.append(holder)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"

    try:
        with pytest.raises(UsageError, match="started during the import"):
            bulk_import([str(folder)], keyring=keyring, data=data, workers=1, on_progress=start_server)
    finally:
        for holder in holders:
            holder.kill()
            holder.communicate()
    assert holders and not (data / "import.incomplete").exists()
