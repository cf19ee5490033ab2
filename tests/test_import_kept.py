"""The database ``import --replace`` keeps aside is never lost (since 0.9.12; review K).

A ``.pith-graph-replaced-*`` folder the marker does not name that holds anything is refused,
not removed, by the import and by ``scripts/neo4j start``; both read the marker's ``kept:``
line by one rule; a marker naming a copy that is gone, and a served database, are kept aside
too; a link among the store folders is refused before anything moves; a move back that fails
says where the old database is, with the importer's own error. Stand-in importers
(``tests/test_import_crash.py``'s ``importer``), made to fail.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from conftest import NEO4J_SCRIPT
from test_import_crash import (
    MARKER,
    PROJECT,
    _import_without_replace,
    _java_started,
    _start,
    _with_a_database,
    corpus,
    importer,
)

from pith_graph.testing import run_cli

pytestmark = [pytest.mark.neo4j, pytest.mark.own_server, pytest.mark.slow]
__all__ = ["corpus", "importer"]  # the fixtures, used here

NOTE = "an import into this folder did not finish: its database may be partial; run `pith-graph import` again (it overwrites the database)\n"


def _fail(folder: Path, first: str = "") -> None:
    """The stand-in importer writes its partial store, runs ``first``, then fails (exit 3)."""
    java = folder / "java"
    java.write_text(java.read_text().replace("exec sleep 120", f"{first}echo out of memory; exit 3"))


def _replace(corpus: tuple[str, Path], data: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    bundles, keys = corpus
    return run_cli(
        "import", bundles, "--trusted-keys", str(keys), "--neo4j-data", str(data), "--replace",
        env=env, cwd=PROJECT, timeout=60,
    )  # fmt: skip


def _copy(data: Path, name: str, content: str = "the old database") -> Path:
    """A kept copy as ``--replace`` leaves it: the old store, and an empty logs folder."""
    copy = data / f".pith-graph-replaced-{name}"
    (copy / "databases").mkdir(parents=True)
    (copy / "databases" / "neostore").write_text(content)
    (copy / "transactions").mkdir()
    return copy


def _start_refused(data: Path) -> str:
    """What ``scripts/neo4j start`` says refusing ``data`` (even with NEO4J_INCOMPLETE=serve)."""
    with socket.socket() as one, socket.socket() as two:
        one.bind(("127.0.0.1", 0))
        two.bind(("127.0.0.1", 0))
        ports = {"NEO4J_BOLT_PORT": str(one.getsockname()[1]), "NEO4J_HTTP_PORT": str(two.getsockname()[1])}
    env = {**os.environ, "NEO4J_DATA": str(data), "NEO4J_INCOMPLETE": "serve", **ports}
    try:
        done = subprocess.run(
            [str(NEO4J_SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        subprocess.run([str(NEO4J_SCRIPT), "stop"], env=env, capture_output=True, check=False, timeout=120)
    assert done.returncode == 1 and not done.stdout, done
    return done.stderr.strip()


def _unnamed(data: Path, copy: Path) -> str:
    return (
        f"{copy} holds a database an interrupted `import --replace` set aside, which {data / MARKER} "
        "does not name (removed or edited): it may be the only copy of the previous database"
    )


def test_a_copy_the_marker_does_not_name_is_refused_not_removed(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path]
) -> None:
    """Review K's repro: a --replace SIGKILLed during its importer, then its marker deleted by
    hand (to get `start` to serve again). The next --replace deleted the copy, "moved back"
    the partial store, and said the previous database was kept."""
    env, folder = importer
    data = folder / "data"
    store = _with_a_database(data, "partial\n")
    copy = _copy(data, "killed")
    _fail(folder)
    done = _replace(corpus, data, env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"pith-graph: error: {_unnamed(data, copy)}, so nothing is moved"), (
        done.stderr
    )
    assert f"back by hand to {data}/data/databases/neo4j and {data}/data/transactions/neo4j" in done.stderr
    assert (copy / "databases" / "neostore").read_text() == "the old database"
    assert store.read_text() == "partial\n" and not (folder / "args").exists()  # the importer never ran
    which = (
        ". Which one to keep is yours to choose: the one in place may be a completed import or a "
        f"partial one (the first line of {data / MARKER}, if any, says which kind of run wrote it). "
        "To keep the set-aside one, move"
    )  # not "in place of what is there" alone: that one may be a completed import (review K2)
    assert which in done.stderr
    assert _start_refused(data).startswith(f"neo4j: ERROR: {_unnamed(data, copy)}{which}")


MARKERS = {  # the marker's lines after the first two, the copy it names, the one it does not
    "two kept lines": (["kept: .pith-graph-replaced-a", "kept: .pith-graph-replaced-b"], "a", "b"),
    "a carriage return": (["kept: .pith-graph-replaced-a\r"], None, "a"),
    "a path out": (["kept: ../x"], None, "a"),
    "not the third line": (["", "kept: .pith-graph-replaced-a"], None, "a"),
}


@pytest.mark.parametrize("case", MARKERS)
def test_the_import_and_start_read_a_hand_edited_marker_alike(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path], case: str
) -> None:
    """Exactly the third line, ``kept: .pith-graph-replaced-`` and [A-Za-z0-9_]: Python took the
    first ``kept:`` line of any (``splitlines``: ``\\r`` too), scripts/neo4j's sed the first valid
    one, and the import removed every copy it did not name."""
    env, folder = importer
    data = folder / "data"
    lines, named, unnamed = MARKERS[case]
    _with_a_database(data, "partial\n")
    copies = {name: _copy(data, name, f"copy {name}") for name in ("a", "b") if name in (named, unnamed)}
    (data / MARKER).write_text("\n".join(["replace", NOTE.strip(), *lines]) + "\n")
    _fail(folder)
    done = _replace(corpus, data, env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"pith-graph: error: {_unnamed(data, copies[unnamed])}"), done.stderr
    refused = _start_refused(data)
    if named is None:
        assert refused.startswith(f"neo4j: ERROR: {_unnamed(data, copies[unnamed])}"), refused
    else:
        assert f"while replacing its database, which is kept in {copies[named]}:" in refused, refused
    assert all((copy / "databases" / "neostore").read_text() == f"copy {n}" for n, copy in copies.items())


BEFORE = {  # the marker there before the failed --replace, and the folders beside it
    "served": ("served\n" + NOTE, []),
    "naming a copy moved back": ("replace\n" + NOTE + "kept: .pith-graph-replaced-gone\n", []),
    "naming a copy discarded": (
        "replace\n" + NOTE + "kept: .pith-graph-replaced-done\n",
        [".pith-graph-discard-done/databases/neostore", ".pith-graph-replaced-empty/databases/"],
    ),
}


@pytest.mark.parametrize("case", BEFORE)
def test_a_database_whole_enough_to_serve_is_kept_too(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path], case: str
) -> None:
    """A database served since an interrupted import (``NEO4J_INCOMPLETE=serve``: the operator's
    data, loads may have added to it), and one a marker names a copy for that is gone (killed
    after moving it back, the marker not yet removed; or after the copy was renamed for
    removal: the new database whole) are kept and moved back, the marker as it was (naming
    nothing); they were overwritten. Discarded and empty copies are removed."""
    env, folder = importer
    data = folder / "data"
    marker, beside = BEFORE[case]
    store = _with_a_database(data, "the operator's database")
    (data / MARKER).write_text(marker)
    for path in beside:
        (data / path).parent.mkdir(parents=True, exist_ok=True)
        if not path.endswith("/"):
            (data / path).write_text("the database it replaced")
    _fail(folder)
    done = _replace(corpus, data, env)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().endswith(f"; the previous database of {data} was kept (moved back in place)")
    assert store.read_text() == "the operator's database"
    assert (data / MARKER).read_text() == marker.split("\n")[0] + "\n" + NOTE
    assert not list(data.glob(".pith-graph-*"))


@pytest.mark.parametrize("link", ["data/data", "data/data/databases/neo4j"])
def test_a_linked_store_folder_is_refused_before_anything_moves(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path], link: str
) -> None:
    """A link as the store folder (to an empty one: moving back rmdir()ed the link, exit 70 on
    every later run) or as ``DIR/data`` (a rename there may cross file systems: EXDEV, exit 70)."""
    env, folder = importer
    data = folder / "data"
    target = folder / "elsewhere"
    (data / "data" / "transactions" / "neo4j").mkdir(parents=True)
    (data / "data" / "transactions" / "neo4j" / "neostore.transaction.db.0").write_text("its logs")
    if link == "data/data":
        (data / "data").rename(target)
    else:
        target.mkdir()
        (data / "data" / "databases").mkdir()
    (folder / link).symlink_to(target)
    _fail(folder)
    done = _replace(corpus, data, env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"pith-graph: error: {folder / link} is a link: `import --replace` keeps the old database by "
        f"renaming its folders within {data}, never through a link nor across file systems: put the "
        "folder itself there (or use a Neo4j home on that file system)"
    )
    assert (folder / link).is_symlink() and not (folder / "args").exists()
    assert not list(data.glob(".pith-graph-replaced-*")) and not (data / MARKER).exists()


def test_a_move_back_that_fails_keeps_the_importer_error_and_says_where_the_old_database_is(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path]
) -> None:
    """The importer fails and leaves a file where the store's folder was: moving back cannot
    remove the new store (ENOTDIR); it was exit 70, "a bug in pith-graph", the cause lost."""
    env, folder = importer
    data = folder / "data"
    _with_a_database(data, "the old database")
    _fail(folder, 'rm -rf "$NEO4J_HOME/data/databases"; echo x > "$NEO4J_HOME/data/databases"; ')
    done = _replace(corpus, data, env)
    assert done.returncode == 3, done.stderr
    [copy] = data.glob(".pith-graph-replaced-*")
    assert done.stderr.strip() == (
        "pith-graph: store error: move_failed: neo4j-admin database import exited 3: out of memory "
        f"(full output: {data}/logs/import.log); moving the previous database of {data} back failed "
        f"(cannot remove {data}/data/databases/neo4j: Not a directory): its databases folder is still "
        f"kept in {copy}: run "
        "`pith-graph import` into the folder to move it back"
    )
    assert (copy / "databases" / "neostore").read_text() == "the old database"
    assert (data / MARKER).read_text().split("\n")[2] == f"kept: {copy.name}"


def test_a_served_database_set_aside_by_a_killed_replace_comes_back_served(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path]
) -> None:
    """SIGKILL while the importer replaces a served database: the next import moves it back
    with its marker as it was (``served``: it still needs --replace), not as a whole one."""
    env, folder = importer
    data = folder / "data"
    store = _with_a_database(data, "a database loads added to")
    (data / MARKER).write_text("served\n" + NOTE)
    process = _start(corpus, data, "--replace", env=env)
    _java_started(folder)
    process.kill()
    process.communicate(timeout=30)
    [kept] = data.glob(".pith-graph-replaced-*")
    assert (data / MARKER).read_text().split("\n")[2:] == [f"kept: {kept.name}", "before: served", ""]
    done = _import_without_replace(corpus, data, env)
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[1]
        .startswith(
            f"pith-graph: error: an import into {data} was interrupted ({data / MARKER}) and its database served since"
        )
    )
    assert store.read_text() == "a database loads added to"
    assert (data / MARKER).read_text() == "served\n" + NOTE and not kept.exists()
