"""What ``import --replace`` says and leaves when the marker cannot be written, when a second
interrupt comes while it moves the old database back, and a ``scripts/neo4j start`` during
an import (since 0.9.12; review K2). Stand-in importers (``tests/test_import_crash.py``'s
``importer``); the marker made unwritable by a folder in its place (a full disk raised the
same ``OSError``: exit 70, "a bug in pith-graph").
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import NEO4J_SCRIPT
from test_import_crash import MARKER, _java_started, _start, _with_a_database, corpus, importer
from test_import_kept import NOTE, _replace, _start_refused

from pith_graph.errors import StoreError
from pith_graph.loader.bulk.recovery import interrupted, write_marker

__all__ = ["corpus", "importer"]  # the fixtures, used here


#: The stand-in importer's step that makes the marker unwritable: a folder holding a file in
#: its place (``os.replace`` cannot replace it), as a full disk made it.
UNWRITABLE = 'rm -f "$NEO4J_HOME/import.incomplete"; mkdir -p "$NEO4J_HOME/import.incomplete/x"; '


def _replace_ending(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path], end: str
) -> tuple[Path, str]:
    """``--replace`` over an old database, the stand-in importer ending with ``end`` (exit 3
    expected); the Neo4j home and the last line of stderr."""
    env, folder = importer
    data = folder / "data"
    _with_a_database(data, "the old database")
    java = folder / "java"
    java.write_text(java.read_text().replace("exec sleep 120", end))
    done = _replace(corpus, data, env)
    assert done.returncode == 3, done.stderr
    return data, done.stderr.strip().splitlines()[-1]


def _old_database(data: Path) -> str:
    return (data / "data" / "databases" / "neo4j" / "neostore").read_text()


@pytest.mark.neo4j
@pytest.mark.own_server
@pytest.mark.slow
def test_a_marker_that_cannot_be_written_before_anything_moves_says_nothing_changed(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    (tmp_path / "data" / MARKER / "x").mkdir(parents=True)  # unwritable before the import
    data, said = _replace_ending(corpus, importer, "exec sleep 120")
    assert said.startswith("pith-graph: store error: write_failed: cannot write ")
    assert said.endswith(f"nothing was moved: the database of {data} is as it was"), said
    assert _old_database(data) == "the old database" and not (tmp_path / "args").exists()
    assert not (data / (MARKER + ".new")).exists() and not list(data.glob(".pith-graph-*"))


@pytest.mark.neo4j
@pytest.mark.own_server
@pytest.mark.slow
def test_a_marker_that_cannot_be_written_once_the_new_database_is_in_place_says_so(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path]
) -> None:
    data, said = _replace_ending(corpus, importer, f"{UNWRITABLE}exit 0")
    [discard] = data.glob(".pith-graph-discard-*")
    assert said == (
        f"pith-graph: store error: write_failed: cannot write {data / MARKER}: Is a directory: the new "
        f"database is in place, without its constraints and indexes, and {data / MARKER} still marks it "
        f"incomplete; the previous one, in {discard}, is removed by the next `pith-graph import` into the "
        "folder (`--replace` builds the new one again)"
    )
    assert _old_database(data) == "partial\n"  # the new one
    assert (discard / "databases" / "neostore").read_text() == "the old database"


@pytest.mark.neo4j
@pytest.mark.own_server
@pytest.mark.slow
def test_a_move_back_whose_marker_cannot_be_written_says_the_old_database_is_back(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path]
) -> None:
    """The parts were moved back, then the marker could not be written back: it said "it is
    kept in" the copy, by then empty."""
    data, said = _replace_ending(corpus, importer, f"{UNWRITABLE}echo out of memory; exit 3")
    [copy] = data.glob(".pith-graph-replaced-*")
    assert said.endswith(
        f"(cannot write {data / MARKER}: Is a directory): it is back in place ({copy} holds none of it): "
        "the next `pith-graph import` into the folder clears what is left"
    ), said
    assert _old_database(data) == "the old database"


def test_a_marker_whose_content_cannot_be_written_leaves_none(tmp_path: Path) -> None:
    """0.9.11 created an empty marker first (to refuse a link there): a failure (Ctrl-C, a
    full disk) before the content was renamed over it left it empty, read as ``replace``:
    ``start`` refused the untouched database and ``import`` asked for --replace, forever."""
    (tmp_path / (MARKER + ".new") / "x").mkdir(parents=True)
    with pytest.raises(StoreError, match="write_failed"):
        write_marker(tmp_path, "new")
    assert not (tmp_path / MARKER).exists()
    (tmp_path / MARKER).write_text("")  # as 0.9.11 could leave it: before anything was moved
    assert interrupted(tmp_path) is None
    (tmp_path / MARKER).write_text("served\n" + NOTE)
    assert interrupted(tmp_path) == "served"


@pytest.mark.neo4j
@pytest.mark.own_server
@pytest.mark.slow
def test_a_second_interrupt_while_moving_back_comes_once_the_old_database_is_back(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path]
) -> None:
    """Ctrl-C, then SIGTERM while the partial store (20000 files) is removed: it cut the move
    back midway, the old database split between its place and the copy, and said only
    ``pith-graph: interrupted``."""
    env, folder = importer
    data = folder / "data"
    _with_a_database(data, "the old database")
    java = folder / "java"
    many = 'mkdir -p "$NEO4J_HOME/data/databases/neo4j/many" && cd "$NEO4J_HOME/data/databases/neo4j/many" && seq 1 20000 | xargs touch; '
    java.write_text(java.read_text().replace("exec sleep 120", f"{many}exec sleep 120"))
    process = _start(corpus, data, "--replace", env=env)
    _java_started(folder)
    partial = data / "data" / "databases" / "neo4j" / "many"
    deadline = time.monotonic() + 30
    while not (partial.exists() and len(os.listdir(partial)) == 20000) and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    while partial.exists() and len(os.listdir(partial)) == 20000 and time.monotonic() < deadline:
        time.sleep(0.001)
    process.send_signal(signal.SIGTERM)  # removing the partial store began
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert f"the import did not finish: the previous database of {data} was kept (moved back in place)" in err
    assert (data / "data" / "databases" / "neo4j" / "neostore").read_text() == "the old database"
    assert not list(data.glob(".pith-graph-replaced-*")) and not (data / MARKER).exists()


def test_start_is_refused_while_an_import_holds_its_lock(tmp_path: Path) -> None:
    """An import stopped after its running-server check let ``start`` launch a server, then
    moved the store aside under it. Refused before any JVM (none is installed here)."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    with (data / "import.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        said = _start_refused(data)
    assert said == (
        f"neo4j: ERROR: a `pith-graph import` into {data} is running (it holds {data}/import.lock): "
        "let it end, then start"
    )
    env = {**os.environ, "NEO4J_DATA": str(data), "NEO4J_INCOMPLETE": "import", "NEO4J_JAVA": "/bin/false"}
    done = subprocess.run([str(NEO4J_SCRIPT), "start"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 1 and done.stderr.startswith(
        "neo4j: ERROR: NEO4J_INCOMPLETE=import is for the server of a running `pith-graph import`"
    ), done.stderr
