"""``pith-graph import`` of CSV rows longer than neo4j-admin's default read buffer.

An Author row holds every winner's spelling of the name (``nameForms``), so it grows with the
number of bundles, not with ``--max-bytes``: one trusted key signing 1,100 papers, each with
its own spelling of one 4,000-letter name, made a 4.4 MB row, past the 4 MiB buffer the
import asked for, and neo4j-admin failed (exit 70, ``Error importing csv file.``) where
``pith-graph load`` took the same bundles; with ``--replace`` after the old database was gone.
The import now sizes the buffer from the longest row it wrote, refuses one neo4j-admin
cannot use before anything is replaced, and shows the importer's cause when it fails.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.bulk.neo4j_admin import run_importer
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.testing import run_cli
from pith_graph.testing.corpus import corpus_signers
from pith_graph.testing.signer import PaperSpec, build_bundle

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[1]
BUNDLES, NAME_LENGTH = 1_100, 4_000  # the review's reproduction: an Author row of 4.4 MB
DEFAULT_BUFFER = 4 << 20


@pytest.fixture(scope="module")
def spellings(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One signer's papers, each naming one long author its own way: the first 16 letters of
    each spelling cased as the bits of its index, so all fold to one ``nameKey``."""
    folder = tmp_path_factory.mktemp("spellings")
    _, builder = corpus_signers(11)
    keys = folder / "keys.json"
    keys.write_bytes(orjson.dumps([builder.keyring_entry()]))
    base = "a" * NAME_LENGTH
    with (folder / "a.jsonl").open("wb") as out:
        for i in range(BUNDLES):
            name = "".join(c.upper() if (i >> k) & 1 else c for k, c in enumerate(base[:16])) + base[16:]
            spec = PaperSpec.example(f"2410.{i:05d}", title=f"spelling {i}", authors=[name, "Other Person"])
            out.write(orjson.dumps(build_bundle(spec, builder)) + b"\n")
    return folder / "a.jsonl", keys


def _import(*args: str, env: dict[str, str] | None = None) -> Any:
    return run_cli("import", *args, env=env, cwd=PROJECT, timeout=900)


def _store_digest(data: Path) -> str:
    """A digest of the database's files (names and bytes): equal when it was left as it was."""
    digest = hashlib.sha256()
    for path in sorted((data / "data" / "databases" / "neo4j").rglob("*")):
        if path.is_file() and path.name != "database_lock":
            digest.update(str(path.relative_to(data)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_the_args_file_asks_for_a_buffer_that_holds_the_longest_row(
    spellings: tuple[Path, Path], tmp_path: Path
) -> None:
    """``--csv-only`` (Docker's importer) gets the same size: the longest row of any file."""
    corpus, keys = spellings
    folder = tmp_path / "csv"
    done = _import(str(corpus), "--trusted-keys", str(keys), "--csv-only", str(folder))
    assert done.returncode == 0, done.stderr
    longest = max(len(row) for path in folder.glob("*.csv") for row in path.read_bytes().splitlines(True))
    assert longest > DEFAULT_BUFFER  # the Author row
    args = (folder / "neo4j-admin.args").read_text().splitlines()
    sizes = [int(arg.split("=", 1)[1]) for arg in args if arg.startswith("--read-buffer-size=")]
    assert len(sizes) == 1 and sizes[0] >= longest
    assert "--verbose" in args


def test_an_author_row_past_the_default_buffer_imports_as_a_load_stores_it(
    spellings: tuple[Path, Path],
    tmp_path: Path,
    start_neo4j: Callable[..., Any],
    neo4j_server: Any,
) -> None:
    """The review's case: ``import`` exited 3 (``import_failed``) where ``load`` took it. Then
    an import with ``--replace`` that neo4j-admin could not run (a heap smaller than one
    buffer) is refused before the database is touched: it is left as it was, unmarked."""
    corpus, keys = spellings
    data = tmp_path / "data"
    done = _import(str(corpus), "--trusted-keys", str(keys), "--neo4j-data", str(data), "--json")
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["nodes"]["Author"] == 2

    before = _store_digest(data)
    refused = _import(
        str(corpus),
        "--trusted-keys",
        str(keys),
        "--neo4j-data",
        str(data),
        "--replace",
        env={"NEO4J_IMPORT_HEAP": "8m"},
    )
    assert refused.returncode == 3, refused.stderr
    assert refused.stderr.startswith("pith-graph: store error: row_too_long: "), refused.stderr
    assert "NEO4J_IMPORT_HEAP=8m" in refused.stderr and "Nothing was imported or replaced" in refused.stderr
    assert not (data / "import.incomplete").exists()
    assert _store_digest(data) == before

    server = start_neo4j(data=data)
    bulk, loaded = server.connect(), neo4j_server.connect()
    try:
        loaded.clear()
        run([str(corpus)], keyring=resolve_keyring(keys), store=loaded, workers=1)
        expected, actual = loaded.export(), bulk.export()
        assert actual.nodes == expected.nodes
        assert actual.edges == expected.edges
        forms = [n["nameForms"] for n in actual.nodes.values() if n["label"] == "Author" and "nameForms" in n]
        assert [len(f) for f in forms] == [BUNDLES]
    finally:
        bulk.close()
        loaded.close()
        server.script("stop")


def test_a_failing_importer_names_its_cause(tmp_path: Path) -> None:
    """neo4j-admin prints why it failed only with ``--verbose``; without it the error said
    ``Error importing csv file.`` (README promises the importer's last line that gives a cause)."""
    folder = tmp_path / "csv"
    folder.mkdir()
    (folder / "a.header.csv").write_text("name:ID(A)\n")
    (folder / "a.csv").write_text('"' + "x" * (2 << 20) + '"\n')
    data = tmp_path / "data"
    with pytest.raises(StoreError) as raised:
        run_importer(
            data,
            [f"--nodes=A={folder / 'a.header.csv'},{folder / 'a.csv'}", "--read-buffer-size=1048576"],
            overwrite=False,
            threads=1,
            heap="512m",
            memory="256m",
            report_file=tmp_path / "import.report",
            log=data / "logs" / "import.log",
        )
    assert raised.value.code is StoreErrorCode.IMPORT_FAILED
    assert "no newline character in the whole buffer 1048576" in raised.value.message, raised.value.message
