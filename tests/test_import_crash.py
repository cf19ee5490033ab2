"""``pith-graph import`` killed or interrupted: never a database served as if whole.

A run that dies after ``neo4j-admin`` started leaves ``import.incomplete`` in the folder (the
database may be partial, or still the old one); the next import overwrites it (without
``--replace`` only when the interrupted run needed none), and removes the work folders of
killed runs. The importer's JVM dies with the import; SIGINT and SIGTERM stop it, remove the
work folder, and say ``pith-graph: interrupted`` (exit 130).

Most cases run a stand-in ``java`` (``NEO4J_JAVA``) that writes a fake store and waits to be
killed; one kills a real import at a seeded moment after ``neo4j-admin`` began writing,
interrupts the next run while its schema step's server starts, and compares the database of
the run after that with a transactional load of the same bundles.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import NEO4J_SCRIPT, alive

from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing import run_cli
from pith_graph.testing.corpus import write_corpus

pytestmark = [pytest.mark.neo4j, pytest.mark.own_server, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[1]
MARKER = "import.incomplete"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    folder = tmp_path_factory.mktemp("crash")
    info = write_corpus(folder / "bundles", 40, seed=5, workers=1, layout="jsonl", extra_signer_every=7)
    return str(folder / "bundles"), info.keyring_path


def _wait_for(
    condition: Callable[[], object], seconds: float = 60, process: subprocess.Popen[str] | None = None
) -> None:
    """Until ``condition()``; failing at once, with what it said, if ``process`` ends first."""
    deadline = time.monotonic() + seconds
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"ended first, exit {process.returncode}: {process.communicate()}")
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _reap(process: subprocess.Popen[str]) -> None:
    """Kill ``process`` if it runs and close its pipes (left open, they would be a later
    test's ResourceWarning, an error there)."""
    process.kill()
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()
    process.wait(timeout=30)


#: Runs the rest of its arguments with Python, SIGINT back to its default first: a test
#: run as a background job of a script (``scripts/test``'s other half) inherits SIGINT
#: ignored, which Python keeps, so an import sent SIGINT would go on (and exit 0).
_SIGINT_DEFAULT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def _start(corpus: tuple[str, Path], data: Path, *more: str, env: dict[str, str]) -> subprocess.Popen[str]:
    folder, keys = corpus
    command = [sys.executable, "-c", _SIGINT_DEFAULT, "-m", "pith_graph", "import", folder]
    command += ["--trusted-keys", str(keys)]
    return subprocess.Popen(
        [*command, "--neo4j-data", str(data), "--workers", "1", *more],
        env={**os.environ, **env},
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def importer(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """A stand-in ``java``: writes a partial store and its arguments, then waits to be killed
    (its pid in ``pid``; killed at the end whatever the test asserted)."""
    java = tmp_path / "java"
    java.write_text(
        "#!/bin/sh\n"
        'mkdir -p "$NEO4J_HOME/data/databases/neo4j"\n'
        'echo partial > "$NEO4J_HOME/data/databases/neo4j/neostore"\n'
        f'printf "%s\\n" "$@" > {tmp_path}/args\n'
        f"echo $$ > {tmp_path}/pid.new && mv {tmp_path}/pid.new {tmp_path}/pid\n"
        "exec sleep 120\n"
    )
    java.chmod(0o755)
    yield {"NEO4J_JAVA": str(java), "NEO4J_CDS": "off"}, tmp_path
    pid = tmp_path / "pid"
    if pid.exists() and alive(int(pid.read_text())):
        os.kill(int(pid.read_text()), signal.SIGKILL)


def _java_started(folder: Path) -> int:
    pid = folder / "pid"
    _wait_for(pid.exists)
    return int(pid.read_text())


def test_a_killed_import_kills_its_importer_and_the_next_run_overwrites_what_it_left(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path]
) -> None:
    env, folder = importer
    data = folder / "data"
    process = _start(corpus, data, env=env)
    java = _java_started(folder)
    process.kill()
    process.communicate(timeout=30)
    _wait_for(lambda: not alive(java), 10)  # not left writing the store
    assert (data / MARKER).read_text().startswith("new\n")
    _assert_not_served(data)
    left = list(data.glob(".pith-graph-import-*"))
    assert len(left) == 1
    # The next run (no --replace: the killed one needed none) overwrites, without a server to
    # count the nodes of a partial store, and removes the killed run's work folder.
    (folder / "args").unlink()
    (folder / "pid").unlink()
    again = _start(corpus, data, env=env)
    _java_started(folder)
    assert "--overwrite-destination=true" in (folder / "args").read_text().split()
    assert not left[0].exists()
    again.send_signal(signal.SIGINT)
    again.communicate(timeout=30)
    assert again.returncode == 130


def _assert_not_served(data: Path, kept: Path | None = None) -> None:
    """``scripts/neo4j start`` refuses a folder whose import was interrupted (``kept``: one
    that moved the old database aside into that folder; then even ``NEO4J_INCOMPLETE=serve``)."""
    with socket.socket() as one, socket.socket() as two:
        one.bind(("127.0.0.1", 0))
        two.bind(("127.0.0.1", 0))
        ports = {"NEO4J_BOLT_PORT": str(one.getsockname()[1]), "NEO4J_HTTP_PORT": str(two.getsockname()[1])}
    env = {**os.environ, "NEO4J_DATA": str(data), **ports}
    if kept is not None:
        env["NEO4J_INCOMPLETE"] = "serve"
    try:
        done = subprocess.run(
            [str(NEO4J_SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        subprocess.run([str(NEO4J_SCRIPT), "stop"], env=env, capture_output=True, check=False, timeout=120)
    assert done.returncode == 1 and not done.stdout
    assert done.stderr.strip() == (
        f"neo4j: ERROR: an import into {data} was interrupted ({data / MARKER}): its database may be "
        "partial; run `pith-graph import` again (NEO4J_INCOMPLETE=serve starts it as it is)"
        if kept is None
        else f"neo4j: ERROR: an import into {data} was interrupted ({data / MARKER}) while replacing its "
        f"database, which is kept in {kept}: run `pith-graph import` into the folder to move it back "
        "(it does so first; NEO4J_INCOMPLETE=serve does not start the partial one)"
    )


def _with_a_database(data: Path, content: str) -> Path:
    """A stand-in store file under the Neo4j home ``data``: the folder holds a database."""
    store = data / "data" / "databases" / "neo4j"
    store.mkdir(parents=True)
    (store / "neostore").write_text(content)
    return store / "neostore"


def _import_without_replace(
    corpus: tuple[str, Path], data: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    folder, keys = corpus
    return run_cli(
        "import",
        folder,
        "--trusted-keys",
        str(keys),
        "--neo4j-data",
        str(data),
        env=env,
        cwd=PROJECT,
        timeout=60,
    )


def test_an_interrupted_replace_needs_replace_again(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path]
) -> None:
    """A run killed once its importer had finished (the old database no longer kept), during
    the schema step: the database may hold the new papers or, before 0.9.12, be partial."""
    env, folder = importer
    data = folder / "data"
    _with_a_database(data, "a database with papers")
    (data / MARKER).write_text("replace\nan import into this folder did not finish\n")
    done = _import_without_replace(corpus, data, env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"pith-graph: error: an import into {data} was interrupted ({data / MARKER}): its database "
        "may be partial or the one it replaced: pass --replace to import again"
    ]


def test_a_killed_replace_leaves_the_old_database_aside_and_unserved(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path]
) -> None:
    """SIGKILL while the importer writes, under --replace: the old store (and its logs) moved
    whole into a folder the marker names, which ``scripts/neo4j start`` will not serve past."""
    env, folder = importer
    data = folder / "data"
    _with_a_database(data, "a database with papers")
    logs = data / "data" / "transactions" / "neo4j"
    logs.mkdir(parents=True)
    (logs / "neostore.transaction.db.0").write_text("its logs")
    process = _start(corpus, data, "--replace", env=env)
    _java_started(folder)
    process.kill()
    process.communicate(timeout=30)
    [kept] = data.glob(".pith-graph-replaced-*")
    assert (data / MARKER).read_text().splitlines()[::2] == ["replace", f"kept: {kept.name}"]
    assert (kept / "databases" / "neostore").read_text() == "a database with papers"
    assert (kept / "transactions" / "neostore.transaction.db.0").read_text() == "its logs"
    assert (data / "data" / "databases" / "neo4j" / "neostore").read_text() == "partial\n"
    assert "--overwrite-destination=false" in (folder / "args").read_text().split()  # an empty destination
    _assert_not_served(data, kept)


@pytest.mark.parametrize("how", ["fails", "SIGINT"])
def test_a_failed_replace_moves_the_old_database_back(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path], how: str
) -> None:
    """The importer exits non-zero, or Ctrl-C stops it: its partial store removed, the old one
    back (no logs before it: none after), no marker, no copy; the error says so."""
    env, folder = importer
    data = folder / "data"
    store = _with_a_database(data, "a database with papers")
    if how == "fails":
        java = folder / "java"
        java.write_text(java.read_text().replace("exec sleep 120", "echo out of memory; exit 3"))
    process = _start(corpus, data, "--replace", env=env)
    if how == "SIGINT":
        _java_started(folder)
        process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    kept = f"the previous database of {data} was kept (moved back in place)"
    if how == "fails":
        assert process.returncode == 3
        assert err.strip().splitlines() == [
            "pith-graph: store error: import_failed: neo4j-admin database import exited 3: out of memory "
            f"(full output: {data}/logs/import.log); {kept}"
        ]
    else:
        assert process.returncode == 130
        assert err.strip().splitlines()[-2:] == [
            f"pith-graph: the import did not finish: {kept}",
            "pith-graph: interrupted",
        ]
    assert store.read_text() == "a database with papers"
    assert not (data / "data" / "transactions" / "neo4j").exists()
    assert not (data / MARKER).exists() and not list(data.glob(".pith-graph-*"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_stops_the_importer_and_removes_the_work_folder(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path], signum: signal.Signals
) -> None:
    env, folder = importer
    data = folder / "data"
    process = _start(corpus, data, env=env)
    java = _java_started(folder)
    process.send_signal(signum)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert err.strip().splitlines()[-1:] == ["pith-graph: interrupted"] and "Traceback" not in err
    assert not alive(java)
    assert not list(data.glob(".pith-graph-import-*"))
    assert (data / MARKER).exists()  # the importer had begun: the database may be partial


def test_a_real_import_killed_while_writing_is_rebuilt_by_the_next_run(
    corpus: tuple[str, Path], start_neo4j: Callable[..., Any], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    log = data / "logs" / "import.log"
    process = _start(corpus, data, env={})
    try:
        _wait_for(
            # its first stage begun (with --verbose, since 0.9.11, neo4j-admin prints no "Import starting")
            lambda: log.exists() and "Nodes, started" in log.read_text(errors="replace"),
            process=process,
        )
        time.sleep(random.Random(3).uniform(0, 0.3))  # a seeded moment while it writes
        process.kill()
        process.communicate(timeout=30)
    finally:
        _reap(process)
        subprocess.run([str(NEO4J_SCRIPT), "stop"], env={**os.environ, "NEO4J_DATA": str(data)}, check=False)
    assert (data / MARKER).exists()
    # Ctrl-C while the schema step's private server starts: stopped, though detached (setsid).
    pid_file = data / "neo4j.pid"
    interrupted = _start(corpus, data, env={})
    try:
        _wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 120, interrupted)
        server_pid = int(pid_file.read_text())
        interrupted.send_signal(signal.SIGINT)
        _, err = interrupted.communicate(timeout=120)
    finally:
        _reap(interrupted)
        subprocess.run([str(NEO4J_SCRIPT), "stop"], env={**os.environ, "NEO4J_DATA": str(data)}, check=False)
    assert interrupted.returncode == 130, err
    assert not alive(server_pid)
    assert (data / MARKER).exists()  # no constraints yet
    folder, keys = corpus
    again = _start(corpus, data, env={})
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert not (data / MARKER).exists() and not list(data.glob(".pith-graph-import-*"))
    server = start_neo4j(data=data)
    store = server.connect()
    try:
        memory = MemoryStore()
        run([folder], keyring=resolve_keyring(keys), store=memory, workers=1)
        assert store.export() == memory.export()
    finally:
        store.close()
        server.script("stop")


def _store(data: Path) -> dict[str, str]:
    """The SHA-256 of each file of the database of ``data`` (its store and transaction logs)."""
    found = {}
    for part in ("databases", "transactions"):
        for path in sorted((data / "data" / part / "neo4j").rglob("*")):
            if path.is_file():
                found[str(path.relative_to(data))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _importer_started(process: subprocess.Popen[str], data: Path) -> int:
    """The pid of ``process``'s neo4j-admin once it has begun writing the database."""
    log = data / "logs" / "import.log"
    _wait_for(lambda: log.exists() and "Nodes, started" in log.read_text(errors="replace"), process=process)
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
    [java] = [int(c) for c in children if b"AdminTool" in Path(f"/proc/{c}/cmdline").read_bytes()]
    return java


def test_a_replace_whose_importer_dies_leaves_the_old_database(
    corpus: tuple[str, Path], tmp_path: Path
) -> None:
    """Real imports under --replace (since 0.9.12): (1) its neo4j-admin killed: the old store
    back, byte for byte; (2) the import itself killed (SIGKILL): the next import moves the old
    database back first, then refuses it (it holds nodes) after serving it to count them. Before,
    both lost it. (A --replace that succeeds leaves no copy: tests/test_bulk_import.py.)"""
    data = tmp_path / "data"
    log = data / "logs" / "import.log"
    first = _start(corpus, data, "--json", env={})
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    nodes = sum(orjson.loads(out)["nodes"].values())
    before = _store(data)
    other = write_corpus(tmp_path / "other", 10, seed=6, workers=1, layout="jsonl")
    replacing = (str(tmp_path / "other"), other.keyring_path)
    log.unlink()
    killed = _start(replacing, data, "--replace", env={})
    try:
        os.kill(_importer_started(killed, data), signal.SIGKILL)
        _, err = killed.communicate(timeout=60)
    finally:
        _reap(killed)
    assert _store(data) == before  # the very files
    assert killed.returncode == 3, err
    assert err.strip().endswith(f"; the previous database of {data} was kept (moved back in place)"), err
    assert not (data / MARKER).exists() and not list(data.glob(".pith-graph-*"))
    log.unlink()
    killed = _start(replacing, data, "--replace", env={})
    try:
        java = _importer_started(killed, data)
        killed.kill()
        killed.communicate(timeout=60)
    finally:
        _reap(killed)
    _wait_for(lambda: not alive(java), 10)
    [kept] = data.glob(".pith-graph-replaced-*")
    again = _import_without_replace(replacing, data, {})
    assert again.returncode == 2, again.stderr
    assert again.stderr.strip().splitlines() == [
        f"pith-graph: an interrupted `import --replace` had set the previous database of {data} aside "
        f"({kept.name}): moved it back",
        f"pith-graph: error: the database in {data} holds {nodes} nodes: pass --replace to overwrite it, "
        "or load into it with `pith-graph load --backend neo4j`",
    ]
    assert not kept.exists() and not (data / MARKER).exists()


def test_an_interrupted_import_served_since_needs_replace(
    corpus: tuple[str, Path], importer: tuple[dict[str, str], Path]
) -> None:
    """``NEO4J_INCOMPLETE=serve`` marks the folder served (tests/test_neo4j_server.py): loads may
    have added to its database since, so a run that needed no --replace now does (it
    overwrote 2,924 papers loaded since without asking)."""
    env, folder = importer
    data = folder / "data"
    store = _with_a_database(data, "a database loads added to")
    (data / MARKER).write_text("served\nan import into this folder did not finish\n")
    done = _import_without_replace(corpus, data, env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"pith-graph: error: an import into {data} was interrupted ({data / MARKER}) and its database "
        "served since (NEO4J_INCOMPLETE=serve): it may hold what loads added: pass --replace to overwrite it"
    ]
    assert store.read_text() == "a database loads added to"
