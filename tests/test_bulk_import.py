"""``pith-graph import``: Neo4j's offline importer builds the same database a transactional
load builds, refuses a running server or a database with data, and leaves a database that
``scripts/neo4j start`` serves and ``pith-graph load`` updates (stale and duplicate bundles
decided against the imported papers).

A data folder no server has used is imported into, then served by a private server; the
session's server gets a transactional load of the same corpus, and both are compared node for
node, edge for edge, property for property. (An import into the empty database a first start
created, checked and overwritten without ``--replace``: the authentication test of
``test_neo4j_server.py``, which has such a folder.)
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import re
import socket
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest

from pith_graph.loader.bulk import bulk_import
from pith_graph.loader.doi_upgrade import fold_doi_aliases
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.cypher_schema import SHOW_INDEXES
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j_latest import upgrade_latest
from pith_graph.loader.stores.neo4j_names import upgrade_authors
from pith_graph.schema.database import constraints, indexes
from pith_graph.testing import run_cli
from pith_graph.testing.corpus import corpus_signers, write_corpus
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle, resign

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[1]
DEFAULT_HTTP_PORT = 7474  # scripts/neo4j's


def _odd_paper(index: int, title: str, abstract: str) -> PaperSpec:
    return PaperSpec(
        arxiv_id=f"2409.{index:05d}",
        version=1,
        title=title,
        authors=['Ann "the" Lee', "Bo, Jr", "Zoë  Smith"],
        abstract_excerpt=abstract,
        primary_cat="cs.LG",
        cross_cats=["stat.ML"],
        license="http://creativecommons.org/licenses/by/4.0/",
        submitted_at="2024-09-05T10:00:00Z",
        created_at="2026-07-01T00:00:00Z",
        built_at="2026-07-02T00:00:00Z",
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], Keyring, Path]:
    """A generated corpus (rebuilt bundles, two signers, several versions of some ids) plus
    papers whose text the CSV files must carry exactly: quotes, commas, line breaks; and
    signers that signed no event of a paper (:func:`_event_less`)."""
    folder = tmp_path_factory.mktemp("bulk")
    info = write_corpus(folder, 400, seed=11, workers=1, layout="jsonl", shard_size=150, extra_signer_every=9)
    signer, _ = corpus_signers(11)
    odd = [
        _odd_paper(1, 'Quotes "q", commas, and\na new line', "Line one\r\nline two \\ back; semi"),
        _odd_paper(2, "Tab\tand unit\x1fseparator and emoji 🧪", "plain"),
    ]
    extra = folder / "odd.jsonl"
    extra.write_bytes(b"".join(orjson.dumps(build_bundle(p, signer)) + b"\n" for p in odd))
    signers = folder / "signers.jsonl"
    signers.write_bytes(b"".join(orjson.dumps(b) + b"\n" for b in _event_less()))
    paths = [str(p) for p in info.shards] + [str(signers), str(extra)]  # the odd papers last
    return paths, resolve_keyring(info.keyring_path), info.keyring_path


def _event_less() -> list[dict[str, Any]]:
    """The builder re-wraps the registry signer's bundle, signing only the bundle; and
    republishes another of its papers under its own key, with its receipt copied in. Each
    paper has a SIGNED edge without eventTypes (the importer cannot write ``[]``), and the
    registry signer's type must not depend on which bundle comes first."""
    registry, builder = corpus_signers(11)
    rewrapped = build_bundle(_odd_paper(99003, "Re-wrapped by the builder", "plain"), registry)
    resign(
        rewrapped, builder, event_signers={0: registry, 1: registry}, sign_receipt=False, refresh_events=False
    )
    paper = _odd_paper(99004, "Republished with a copied receipt", "plain")
    copy = build_bundle(paper, builder)
    copy["events"][0]["payload"]["receipt"] = build_bundle(paper, registry)["events"][0]["payload"]["receipt"]
    resign(copy, builder, sign_receipt=False)
    return [copy, rewrapped]


@contextlib.contextmanager
def _held(port: int) -> Iterator[None]:
    """``port`` on 127.0.0.1 taken while the block runs (if something else holds it
    already, it stays taken all the same)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:
            pass
        yield


@pytest.fixture(scope="module")
def imported(
    start_neo4j: Callable[..., Any],
    corpus: tuple[list[str], Keyring, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Any]:
    """A private server started on a data folder no server had used before the bulk import
    (whose schema step's server generated the folder's password)."""
    paths, keyring, _ = corpus
    data = tmp_path_factory.mktemp("imported")
    with (
        _held(DEFAULT_HTTP_PORT),  # the importer's own server must not need it
        mock.patch.dict(os.environ, {"NEO4J_PLUGINS": "on"}),  # nor take the caller's plugins
    ):
        report = bulk_import(paths, keyring=keyring, data=data, workers=2)
    assert report.rejected == 0 and report.stale > 0
    assert set(report.steps) == {"verify", "csv", "neo4j-admin", "schema"}
    store = data / "data"
    shared = [p for p in (store, *store.rglob("*")) if p.stat().st_mode & 0o077]
    assert shared == [], f"readable by others: {shared[:5]}"  # as scripts/neo4j keeps a store
    assert stat.S_IMODE((data / "logs").stat().st_mode) == 0o700  # was 755 (umask 022) before 0.8.8
    # The schema step's server registered no plugin's procedures (since 0.9.15; Neo4j's settings dump)
    plugin_dirs = re.findall(r"server\.directories\.plugins=(\S+)", (data / "logs" / "debug.log").read_text())
    assert plugin_dirs and {Path(folder).name for folder in plugin_dirs} == {"no-plugins"}, plugin_dirs
    server = start_neo4j(data=data)
    yield server, report
    server.script("stop")


def test_import_equals_a_transactional_load(
    imported: tuple[Any, Any], neo4j_server: Any, corpus: tuple[list[str], Keyring, Path]
) -> None:
    server, report = imported
    paths, keyring, _ = corpus
    loaded = neo4j_server.connect()
    bulk = server.connect()
    try:
        loaded.clear()
        load_report = run(paths, keyring=keyring, store=loaded, workers=2, batch_size=5000)
        assert (report.inserted, report.stale, report.duplicate, report.outranked) == (
            load_report.inserted,
            load_report.stale,
            load_report.duplicate,
            load_report.outranked,
        )
        expected, actual = loaded.export(), bulk.export()
        assert actual.nodes.keys() == expected.nodes.keys()
        assert actual.nodes == expected.nodes
        assert actual.edges == expected.edges
        assert bulk.counts() == loaded.counts() == report.counts
        odd = [n for n in actual.nodes.values() if n["label"] == "Paper" and "\n" in n["title"]]
        assert [n["abstractExcerpt"] for n in odd] == ["Line one\r\nline two \\ back; semi"]
        event_less = [
            e for (_, kind, _), e in expected.edges.items() if kind == "SIGNED" and "eventTypes" not in e
        ]
        assert len(event_less) == 2
        assert {n["signerType"] for n in actual.nodes.values() if n["label"] == "Signer"} == {"unknown"}
        with bulk.driver.session(database="neo4j") as session:
            names = {r["name"] for r in session.run("SHOW CONSTRAINTS YIELD name")}
            states = {r["state"] for r in session.run("SHOW INDEXES YIELD state")}
        assert "paper_pithnumber_unique" in names and states == {"ONLINE"}
    finally:
        loaded.close()
        bulk.close()


def _schema(store: Any) -> dict[str, Any]:
    """The graph's own constraints and indexes as ``SHOW INDEXES`` shows them, by name."""
    declared = {c.name for c in constraints()} | {i.name for i in indexes()}
    with store.driver.session(database="neo4j") as session:
        rows = session.run(f"{SHOW_INDEXES}, state").data()
    return {row.pop("name"): row for row in rows if row["name"] in declared}


def test_the_import_needs_no_upgrade_pass_and_has_the_schema_a_load_makes(
    imported: tuple[Any, Any], neo4j_server: Any
) -> None:
    """The import's schema step leaves out ``ensure_schema``'s passes over data an earlier
    version wrote (since 0.9.13): its rows must hold what they would bring about (each finds
    nothing to do), and its constraints and indexes be those a load's ``ensure_schema`` makes."""
    server, _ = imported
    bulk, loaded = server.connect(), neo4j_server.connect()
    try:
        with bulk.driver.session(database="neo4j") as session:
            assert (upgrade_authors(session), fold_doi_aliases(session), upgrade_latest(session)) == (0, 0, 0)
        loaded.ensure_schema()
        made = _schema(bulk)
        assert len(made) == len(constraints()) + len(indexes())
        assert {row["state"] for row in made.values()} == {"ONLINE"}
        assert made == _schema(loaded)
    finally:
        loaded.close()
        bulk.close()


def test_a_later_load_updates_the_imported_database(
    imported: tuple[Any, Any], corpus: tuple[list[str], Keyring, Path], tmp_path: Path
) -> None:
    server, _ = imported
    paths, keyring, _ = corpus
    store = server.connect()
    try:
        again = run(paths, keyring=keyring, store=store, workers=1, skip_known=False)
        assert again.accepted == 0 and again.duplicate > 0 and again.stale > 0  # decided against the import
        signer, _ = corpus_signers(11)
        newer = _odd_paper(1, "A rebuilt title", "newer")
        older = PaperSpec(**{**newer.__dict__, "built_at": "2026-06-01T00:00:00Z"})
        folder = tmp_path / "more"
        folder.mkdir()
        (folder / "more.jsonl").write_bytes(
            b"".join(orjson.dumps(build_bundle(p, signer)) + b"\n" for p in (newer, older))
        )
        more = run([str(folder)], keyring=keyring, store=store, workers=1)
        assert (more.inserted, more.replaced, more.stale) == (
            1,
            0,
            1,
        )  # a new pith number, and its older twin
        memory = MemoryStore()
        run([*paths, str(folder)], keyring=keyring, store=memory, workers=1)
        assert store.export() == memory.export()
    finally:
        store.close()


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("import", *args, env=env, cwd=PROJECT, timeout=600)


def test_a_failed_schema_step_says_the_papers_are_in_and_how_to_add_the_schema(
    corpus: tuple[list[str], Keyring, Path], tmp_path: Path
) -> None:
    """The importer ran, then the server that creates the constraints could not start."""
    paths, _, keys = corpus
    data = tmp_path / "data"
    zgc = {"NEO4J_GC": "zgc"}  # scripts/neo4j refuses it before starting anything
    failed = _cli(paths[0], "--trusted-keys", str(keys), "--neo4j-data", str(data), env=zgc)
    assert failed.returncode == 3, failed.stderr
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in failed.stderr
    assert lines[0].startswith("pith-graph: store error: unavailable: ")
    assert "NEO4J_GC must be parallel or g1, not 'zgc'" in lines[0]
    assert f"The papers are imported into {data}, but without constraints and indexes" in lines[0]
    assert lines[0].endswith("`pith-graph schema` creates them")
    # The imported papers are there: a second import refuses the database unless told to replace it.
    again = _cli(paths[0], "--trusted-keys", str(keys), "--neo4j-data", str(data))
    assert again.returncode == 2, again.stderr
    assert "holds" in again.stderr and "--replace" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    # With --replace the importer runs over them (and the schema step fails as before).
    replaced = _cli(paths[1], "--trusted-keys", str(keys), "--neo4j-data", str(data), "--replace", env=zgc)
    assert replaced.returncode == 3, replaced.stderr
    assert f"The papers are imported into {data}, but without constraints" in replaced.stderr
    # The database it replaced was kept aside only until the importer had finished (since 0.9.12).
    assert not (data / "import.incomplete").exists() and not list(data.glob(".pith-graph-*"))


def test_a_database_holding_only_an_analysts_own_nodes_is_refused(
    start_neo4j: Callable[..., Any], corpus: tuple[list[str], Keyring, Path], tmp_path: Path
) -> None:
    """The emptiness check counted pith-graph's labels alone: a database holding an analyst's
    ``:Note`` nodes and nothing else was overwritten without ``--replace`` (exit 0)."""
    data = tmp_path / "data"
    server = start_neo4j(data=data)
    store = server.connect()
    try:
        store.driver.execute_query("UNWIND range(1, 5) AS i CREATE (:Note {i: i})", database_=server.database)
    finally:
        store.close()
    assert server.script("stop").returncode == 0
    paths, _, keys = corpus
    refused = _cli(paths[0], "--trusted-keys", str(keys), "--neo4j-data", str(data))
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip() == (
        f"pith-graph: error: the database in {data} holds 5 nodes: pass --replace to overwrite it, "
        "or load into it with `pith-graph load --backend neo4j`"
    )


def test_the_cli_refuses_a_running_server(
    imported: tuple[Any, Any], corpus: tuple[list[str], Keyring, Path]
) -> None:
    """(A stopped database with data: the failed schema step's test.)"""
    server, _ = imported
    paths, _, keys = corpus
    running = _cli(paths[0], "--trusted-keys", str(keys), "--neo4j-data", server.env["NEO4J_DATA"])
    assert running.returncode == 2, running.stderr
    assert running.stderr.startswith("pith-graph: error: the Neo4j of") and "stop it first" in running.stderr
    assert len(running.stderr.strip().splitlines()) == 1


def test_csv_only_writes_the_files_and_the_importer_options(
    corpus: tuple[list[str], Keyring, Path], tmp_path: Path
) -> None:
    paths, _, keys = corpus
    done = _cli(*paths, "--trusted-keys", str(keys), "--csv-only", str(tmp_path / "csv"), "--json")
    assert done.returncode == 0, done.stderr
    args = (tmp_path / "csv" / "neo4j-admin.args").read_text().split()
    assert any(a.startswith("--nodes=Paper=") for a in args)
    assert any(a.startswith("--relationships=SIGNED=") for a in args)
    assert any(a.startswith("--multiline-fields=") for a in args)
    report = orjson.loads(done.stdout)
    assert report["nodes"]["Paper"] == report["accepted"]
    # A second run into the same folder is refused: it appended its rows to the first's
    # (twice the papers, which neo4j-admin then refused), the report counting one run's.
    header = tmp_path / "csv" / "paper.header.csv"
    before = header.read_bytes()
    again = _cli(*paths, "--trusted-keys", str(keys), "--csv-only", str(tmp_path / "csv"))
    assert again.returncode == 2
    assert (
        again.stderr.strip()
        == f"pith-graph: error: --csv-only {tmp_path / 'csv'} is not empty: name a new or empty folder"
    )
    assert header.read_bytes() == before


def test_csv_only_refuses_a_folder_others_may_plant_links_in(
    corpus: tuple[list[str], Keyring, Path], tmp_path: Path
) -> None:
    paths, _, keys = corpus
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    victim = tmp_path / "victim.txt"
    victim.write_text("someone's file\n")
    (shared / "paper.header.csv").symlink_to(victim)  # truncated and overwritten, before
    done = _cli(*paths, "--trusted-keys", str(keys), "--csv-only", str(shared))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"pith-graph: error: --csv-only {shared} is writable by group or others (mode 777): chmod go-w {shared}"
    )
    assert victim.read_text() == "someone's file\n"


def test_the_import_keeps_the_newest_record_of_each_version_by_instant(tmp_path: Path) -> None:
    """The import decides as the stores do: a corrected record (a new pith number for one arXiv
    version) supersedes the older record's bundle, and ``…:00.9Z`` is later than ``…:00Z``."""
    signer, _ = corpus_signers(11)
    keys = tmp_path / "keys.json"
    keys.write_bytes(orjson.dumps([signer.keyring_entry()]))
    wrong = _odd_paper(7, "Wrong title (retracted record)", "plain")
    corrected = _odd_paper(7, "Corrected title", "plain")
    corrected = dataclasses.replace(corrected, built_at="2026-07-02T00:00:00.9Z")
    whole = dataclasses.replace(_odd_paper(8, "Built on the second", "plain"), authors=["Ann Lee"])
    fraction = dataclasses.replace(whole, authors=["Bo Chen"], built_at="2026-07-02T00:00:00.5Z")
    bundles = [build_bundle(p, signer) for p in (corrected, wrong, fraction, whole)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b"".join(orjson.dumps(b) + b"\n" for b in bundles))
    csv = tmp_path / "csv"
    report = bulk_import([str(corpus)], keyring=resolve_keyring(keys), data=None, csv_only=csv, workers=1)
    assert (report.inserted, report.stale, report.rejected) == (2, 2, 0)
    written = "".join(path.read_text(encoding="utf-8") for path in csv.glob("*.csv"))
    assert "Corrected title" in written and "Wrong title" not in written
    assert "Bo Chen" in written and "Ann Lee" not in written


def test_the_import_decides_copies_signed_by_other_keys_as_the_stores_do(tmp_path: Path) -> None:
    """One body signed by the registry signer, by a second key of that signer and by the
    builder (ranked below): whatever the order, the greater key id of the top-ranked signer
    holds the paper, its other key's copy is a duplicate and the builder's is outranked."""
    registry, builder = corpus_signers(11)
    rotated = SignerIdentity.from_seed(
        b"bulk-rotated", key_id=f"{registry.key_id}-2", signer_id=registry.signer_id
    )
    keys = tmp_path / "keys.json"
    keys.write_bytes(orjson.dumps([s.keyring_entry() for s in (registry, builder, rotated)]))
    genuine = build_bundle(_odd_paper(9, "Signed by three keys", "plain"), registry)
    unchanged = {"refresh_canonical": False, "sign_receipt": False, "refresh_events": False}
    copies = [
        resign(copy.deepcopy(genuine), by, **unchanged, refresh_public_keys=False, refresh_state=False)
        for by in (builder, rotated)
    ]
    digest = genuine["bundle_signature"]["bundle_sha256"]
    assert [c["bundle_signature"]["bundle_sha256"] for c in copies] == [digest, digest]
    written = []
    for index, ordered in enumerate(([genuine, *copies], [*reversed(copies), genuine])):
        corpus = tmp_path / f"corpus-{index}.jsonl"
        corpus.write_bytes(b"".join(orjson.dumps(b) + b"\n" for b in ordered))
        csv = tmp_path / f"csv-{index}"
        report = bulk_import([str(corpus)], keyring=resolve_keyring(keys), data=None, csv_only=csv, workers=1)
        assert (report.inserted, report.duplicate, report.outranked, report.rejected) == (1, 1, 1, 0)
        written.append({path.name: path.read_text(encoding="utf-8") for path in csv.glob("*.csv")})
    assert written[0] == written[1]
    assert rotated.key_id in "".join(written[0].values())


def test_a_rejected_bundle_exits_1_and_the_rest_is_imported(
    corpus: tuple[list[str], Keyring, Path], tmp_path: Path
) -> None:
    paths, _, keys = corpus
    bundle = orjson.loads(Path(paths[-1]).read_bytes().splitlines()[0])  # an odd paper
    bundle["events"][1]["payload"]["graph_snapshot"]["paper"]["title"] = "Something else"
    tampered = tmp_path / "tampered.json"
    tampered.write_bytes(orjson.dumps(bundle))
    done = _cli(
        paths[-1], str(tampered), "--trusted-keys", str(keys), "--csv-only", str(tmp_path / "csv"), "--json"
    )
    assert done.returncode == 1, done.stderr
    report = orjson.loads(done.stdout)
    assert (report["rejected"], report["accepted"], report["nodes"]["Paper"]) == (1, 2, 2)
    assert [(r["code"], r["file"]) for r in report["rejections"]] == [("digest_mismatch", str(tampered))]
    assert "Traceback" not in done.stderr


def test_a_failing_importer_exits_3_with_its_output_in_import_log(
    corpus: tuple[list[str], Keyring, Path], tmp_path: Path
) -> None:
    """The importer's JVM (``NEO4J_JAVA``: here a stand-in that records its arguments, prints
    and fails) gets ``NEO4J_IMPORT_HEAP`` and ``--importer-memory``; the hidden folder of the
    spill and the CSV files under ``--neo4j-data`` is removed all the same."""
    paths, _, keys = corpus
    called = tmp_path / "java-args"
    java = tmp_path / "java"
    java.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {called}\necho "the importer says no"\nexit 7\n')
    java.chmod(0o755)
    data = tmp_path / "data"
    # NEO4J_CDS=off: were scripts/neo4j run with the stand-in, it would not rewrite its archive for it.
    env = {"NEO4J_JAVA": str(java), "NEO4J_IMPORT_HEAP": "700m", "NEO4J_CDS": "off"}
    done = _cli(
        paths[0], "--trusted-keys", str(keys), "--neo4j-data", str(data), "--importer-memory", "3G", env=env
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().splitlines() == [
        "pith-graph: store error: import_failed: neo4j-admin database import exited 7: "
        f"the importer says no (full output: {data}/logs/import.log)"
    ]
    assert (data / "logs" / "import.log").read_text() == "the importer says no\n"
    assert not list(data.glob(".pith-graph-import-*"))  # the spill and CSV files' hidden folder
    args = called.read_text().splitlines()
    assert args[0] == "-Xmx700m" and "--max-off-heap-memory=3G" in args
    assert "org.neo4j.cli.AdminTool" in args and args[-1] == "neo4j"


@pytest.mark.parametrize(
    ("content", "code"), [(b"", 0), (b'{"not": "a bundle"}\n', 1)], ids=["empty", "rejected"]
)
def test_nothing_accepted_builds_no_database_and_leaves_the_folder_as_it_was(
    corpus: tuple[list[str], Keyring, Path], tmp_path: Path, content: bytes, code: int
) -> None:
    """An empty input, or one whose every bundle is rejected: no importer run (the stand-in
    java would fail), no database, no hidden folder; said in one line. (Before: the importer
    ran without ``--nodes`` and failed with its usage text, exit 3.)"""
    _, _, keys = corpus
    bundles = tmp_path / "bundles.jsonl"
    bundles.write_bytes(content)
    java = tmp_path / "java"
    java.write_text('#!/bin/sh\necho called > "$(dirname "$0")/called"\nexit 7\n')
    java.chmod(0o755)
    data = tmp_path / "data"
    env = {"NEO4J_JAVA": str(java), "NEO4J_CDS": "off"}
    done = _cli(str(bundles), "--trusted-keys", str(keys), "--neo4j-data", str(data), env=env)
    assert done.returncode == code, done.stderr
    assert f"nothing to import (no bundle was accepted): {data} is left as it was" in done.stdout
    assert not (tmp_path / "called").exists()
    assert not data.exists()  # not even created: the import made it for its work and removed it
    report = orjson.loads(
        _cli(str(bundles), "--trusted-keys", str(keys), "--neo4j-data", str(data), "--json", env=env).stdout
    )
    assert (report["built"], report["accepted"], report["rejected"]) == (False, 0, code)
    nested = tmp_path / "new" / "deeper" / "data"
    assert (
        _cli(str(bundles), "--trusted-keys", str(keys), "--neo4j-data", str(nested), env=env).returncode
        == code
    )
    assert not (tmp_path / "new").exists()  # every folder it made, removed
    data.mkdir()
    assert (
        _cli(str(bundles), "--trusted-keys", str(keys), "--neo4j-data", str(data), env=env).returncode == code
    )
    assert data.is_dir() and not any(data.iterdir())  # a folder that was there stays, empty


def test_the_keyring_in_the_corpus_folder_is_not_read_as_a_bundle(
    corpus: tuple[list[str], Keyring, Path], tmp_path: Path
) -> None:
    """A folder holding its own trusted-keys file (as a generated corpus does) imports
    without rejecting the keyring, as ``pith-graph load`` does."""
    _, _, keys = corpus
    assert keys.parent.is_dir() and any(keys.parent.glob("bundles-*"))
    done = _cli(str(keys.parent), "--trusted-keys", str(keys), "--csv-only", str(tmp_path / "csv"), "--json")
    report = orjson.loads(done.stdout)
    assert [r["file"] for r in report["rejections"]] == [], report["rejections"]
    assert done.returncode == 0, done.stderr


@pytest.mark.own_server  # scripts/test runs it beside the Java tests (since 0.9.13: that half was the longer)
def test_a_value_larger_than_the_importers_default_buffer_is_imported(tmp_path: Path) -> None:
    """A 5 MB title, which ``load`` takes under ``--max-bytes 12000000``: neo4j-admin read each
    file through a 4 MiB buffer and failed (exit 70, no database, no line naming a bundle)."""
    signer, _ = corpus_signers(11)
    keys = tmp_path / "keys.json"
    keys.write_bytes(orjson.dumps([signer.keyring_entry()]))
    big = _odd_paper(9, "big " + "y" * 5_000_000, "plain")
    corpus = tmp_path / "big.jsonl"
    corpus.write_bytes(orjson.dumps(build_bundle(big, signer)) + b"\n")
    data = tmp_path / "data"
    done = _cli(
        str(corpus),
        "--trusted-keys",
        str(keys),
        "--max-bytes",
        "12000000",
        "--neo4j-data",
        str(data),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["nodes"]["Paper"] == 1


def test_replace_overwrites_transaction_logs_left_without_a_store(
    corpus: tuple[list[str], Keyring, Path], tmp_path: Path
) -> None:
    """Logs of a database whose store is gone: neo4j-admin counts them as a database, and
    ``--replace`` passed ``--overwrite-destination=false`` (it looked for the store only), so
    every run failed with "Database already exist"."""
    paths, _, keys = corpus
    data = tmp_path / "data"
    logs = data / "data" / "transactions" / "neo4j"
    logs.mkdir(parents=True)
    (logs / "neostore.transaction.db.0").write_bytes(b"\0" * 128)
    done = _cli(paths[0], "--trusted-keys", str(keys), "--neo4j-data", str(data), "--replace", "--json")
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["nodes"]["Paper"] > 0
    assert not list(data.glob(".pith-graph-*"))  # the logs it replaced, kept aside until then (since 0.9.12)
