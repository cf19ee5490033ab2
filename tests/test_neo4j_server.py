"""``scripts/neo4j``'s server: authentication on by default (a generated password in a file
only its owner can read, ``NEO4J_AUTH=none`` to turn it off), the APOC and GDS plugins in the
versions the launcher's pom pins, Neo4j Browser over HTTP, Bolt and HTTP on loopback only, and
the class-data sharing archive every start maps.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import neo4j
import orjson
import pytest
from conftest import NEO4J_SCRIPT, PROJECT, Neo4jServer, pinned, read_password, script
from neo4j.exceptions import AuthError

from pith_graph.loader.bulk.ports import free_port, held_port, start_on_free_ports
from pith_graph.testing import run_cli
from pith_graph.testing.corpus import corpus_signers
from pith_graph.testing.signer import PaperSpec, build_bundle

pytestmark = pytest.mark.neo4j  # every test here starts a server or reads one


def answer(server: Neo4jServer, query: str) -> object:
    with neo4j.GraphDatabase.driver(server.uri, auth=(server.user, server.password or "")) as driver:
        records, _, _ = driver.execute_query(query, database_=server.database)
        return records[0][0]


def script_start(data: Path, using: Path = NEO4J_SCRIPT, **env: str) -> subprocess.CompletedProcess[str]:
    """``scripts/neo4j start`` on free ports (others when one was taken before the server
    bound it), as :func:`conftest.script` runs it."""

    def start(bolt: int, http: int) -> subprocess.CompletedProcess[str]:
        ports = {"NEO4J_BOLT_PORT": str(bolt), "NEO4J_HTTP_PORT": str(http)}
        return script(data, "start", timeout=600, using=using, **{**ports, **env})

    return start_on_free_ports(start)


ARCHIVE = NEO4J_SCRIPT.parent / "neo4j-launcher" / "target" / "neo4j.jsa"


def maps_archive(data: Path, archive: Path = ARCHIVE) -> bool:
    """Whether the JVM of the server of ``data`` has class-data sharing archive ``archive`` (by
    default the project launcher's) mapped: the JVM maps it only when it accepts it for this JVM
    and these jars."""
    pid = int((data / "neo4j.pid").read_text().strip())
    return str(archive) in Path(f"/proc/{pid}/maps").read_text()


def refuses_unauthenticated(uri: str) -> bool:
    with neo4j.GraphDatabase.driver(uri, auth=None) as driver:
        try:
            driver.verify_connectivity()
        except AuthError:
            return True
        return False


#: Each other than its default.
SETTINGS = {
    "NEO4J_GC": "g1",
    "NEO4J_HEAP": "768m",
    "NEO4J_PAGECACHE": "96m",
    "NEO4J_TX_TIMEOUT": "90s",
    "NEO4J_TX_MEMORY": "48m",
}
SETTING_NAMES = ("server.memory.pagecache.size", "db.transaction.timeout", "db.memory.transaction.max")


@dataclass(frozen=True)
class FirstStart:
    """What a server showed right after its first start: its collector beans, heap usage,
    ``SETTING_NAMES``' values and whether it mapped the project's class-data sharing archive."""

    collectors: list[str]
    heap: dict[str, int]
    settings: dict[str, str]
    maps_archive: bool


@pytest.fixture(scope="module")
def restartable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Neo4jServer, FirstStart]]:
    """A server of its own, first started with ``NEO4J_AUTH=none`` and ``SETTINGS`` (and none
    of the caller's NEO4J_* settings), with what that start showed, read before any test
    restarts it: one start for the settings test and the authentication test."""
    data = tmp_path_factory.mktemp("restartable")
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    env = {**base, "NEO4J_DATA": str(data), "NEO4J_AUTH": "none", **SETTINGS}
    server = Neo4jServer(uri="", env=env, data=data)

    def start(bolt: int, http: int) -> subprocess.CompletedProcess[str]:
        env.update(NEO4J_BOLT_PORT=str(bolt), NEO4J_HTTP_PORT=str(http))  # a restart's too
        server.http_uri = f"http://127.0.0.1:{http}"
        return server.script("start")

    try:
        done = start_on_free_ports(start)
        assert done.returncode == 0, done.stderr
        server.uri = done.stdout.strip().splitlines()[-1]
        first = FirstStart(
            collectors(server), heap_usage(server), settings(server, *SETTING_NAMES), maps_archive(data)
        )
        yield server, first
    finally:
        server.script("stop", timeout=180)


# -- authentication --------------------------------------------------------------------------


def test_a_server_started_without_a_password_refuses_unauthenticated_connections(
    local_server: Neo4jServer,
) -> None:
    assert refuses_unauthenticated(local_server.uri)


def test_the_generated_password_is_private_strong_and_accepted(local_server: Neo4jServer) -> None:
    assert local_server.password_file is not None
    mode = stat.S_IMODE(local_server.password_file.stat().st_mode)
    assert mode == 0o600, oct(mode)
    password = read_password(local_server.password_file)
    assert re.fullmatch(r"[A-Za-z0-9]{24}", password)
    assert answer(local_server, "RETURN 1") == 1
    assert local_server.data is not None
    auth_ini = local_server.data / "data" / "dbms" / "auth.ini"  # the initial password's hash
    assert stat.S_IMODE(auth_ini.stat().st_mode) == 0o600


def named_script(folder: Path, calls: Path) -> Path:
    """A ``scripts/neo4j`` in ``folder`` for ``PITH_NEO4J_SCRIPT``: it appends each command and
    its ``NEO4J_DATA`` to ``calls``, then runs the project's script with the ``java`` on PATH and
    class-data sharing on (the import's environment names an importer's stand-in in
    ``NEO4J_JAVA``, and sets ``NEO4J_CDS=off`` so that the project's script, were it run
    instead, would not rewrite its archive for that stand-in). Beside it is the launcher's
    folder (a link to the project's), whose jars an import runs the importer from."""
    folder.mkdir(parents=True)
    (folder / "neo4j-launcher").symlink_to(NEO4J_SCRIPT.parent / "neo4j-launcher")
    wrapper = folder / "neo4j"
    wrapper.write_text(
        f'#!/bin/sh\nprintf "%s %s\\n" "$1" "$NEO4J_DATA" >> {calls}\nunset NEO4J_JAVA NEO4J_CDS\n'
        f'exec {NEO4J_SCRIPT} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def failing_java(path: Path, called: Path) -> Path:
    """A stand-in for the importer's ``java`` that records its arguments in ``called`` and fails."""
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {called}\necho "the importer says no"\nexit 7\n')
    path.chmod(0o755)
    return path


def test_auth_none_turns_authentication_off_a_restart_turns_it_on_and_an_edited_password_file_changes_it(
    restartable: tuple[Neo4jServer, FirstStart], tmp_path: Path
) -> None:
    """The restart that turns authentication on is the private server of ``pith-graph import``
    into the stopped folder (README, bulk import): the import finds the existing database (the
    empty one the first start created), starts it with the folder's password (the one that
    start generates) to count its nodes, finds none and has the importer overwrite it. The
    import runs the ``scripts/neo4j`` that ``PITH_NEO4J_SCRIPT`` names, and the importer from
    the jars beside it; the importer here is a stand-in that records its arguments and fails,
    so no server starts after it."""
    server, _ = restartable
    assert server.password_file is not None and not server.password_file.exists()
    assert not refuses_unauthenticated(server.uri)
    # The same store, started without NEO4J_AUTH by the import's check: its neo4j user (created
    # without auth, "password change required") gets a generated password.
    assert server.env is not None and server.data is not None
    stopped = server.script("stop")
    assert stopped.returncode == 0, stopped.stderr
    calls, called = tmp_path / "calls", tmp_path / "java-args"
    elsewhere = tmp_path / "elsewhere"
    wrapper = named_script(elsewhere, calls)
    signer, _ = corpus_signers(11)
    (tmp_path / "keys.json").write_bytes(orjson.dumps([signer.keyring_entry()]))
    (tmp_path / "one.json").write_bytes(orjson.dumps(build_bundle(PaperSpec.example("2604.00001"), signer)))
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    java = failing_java(tmp_path / "java", called)
    options = ["--trusted-keys", str(tmp_path / "keys.json"), "--neo4j-data", str(server.data)]
    imported = run_cli(
        "import",
        str(tmp_path / "one.json"),
        *options,
        env={**base, "PITH_NEO4J_SCRIPT": str(wrapper), "NEO4J_JAVA": str(java), "NEO4J_CDS": "off"},
        inherit_env=False,
        cwd=PROJECT,
        timeout=600,
    )
    # Its importer ran (and failed): the check connected with the generated password.
    assert imported.returncode == 3, imported.stderr
    assert imported.stderr.startswith(
        "pith-graph: store error: import_failed: neo4j-admin database import exited 7"
    )
    assert calls.read_text().splitlines() == [f"start {server.data}", f"stop {server.data}"]
    args = called.read_text().splitlines()
    # No nodes: the existing database is overwritten, after it was moved aside (since 0.9.12)
    assert "--overwrite-destination=false" in args  # (an empty destination) and back (it failed)
    assert imported.stderr.rstrip().endswith(
        f"the previous database of {server.data} was kept (moved back in place)"
    )
    assert args[args.index("-cp") + 1] == f"{elsewhere}/neo4j-launcher/target/lib/*"
    assert not list(server.data.glob(".pith-graph-import-*"))
    assert stat.S_IMODE(server.password_file.stat().st_mode) == 0o600
    generated = read_password(server.password_file)
    assert re.fullmatch(r"[A-Za-z0-9]{24}", generated)
    # An import interrupted after it marked the folder (killed once its importer had finished):
    # `start` refuses it (the database may be partial) unless told to serve it as it is, as here.
    assert not (server.data / "import.incomplete").exists()
    (server.data / "import.incomplete").write_text("new\nan import into this folder did not finish\n")
    refused = server.script("start")
    assert refused.returncode == 1 and "import.incomplete" in refused.stderr, refused.stderr
    server.env["NEO4J_INCOMPLETE"] = "serve"
    # To change the password: edit the file and restart (here with NEO4J_CDS=off as well).
    del server.env["NEO4J_AUTH"]
    server.password_file.write_text("an-edited-password\n")
    server.env["NEO4J_CDS"] = "off"
    restarted = server.script("restart")
    assert restarted.returncode == 0, restarted.stderr
    # Served as it is: the next import must be told --replace (it overwrote without asking
    # a database that loads had added to since).
    assert (server.data / "import.incomplete").read_text().split("\n")[0] == "served"
    assert refuses_unauthenticated(server.uri)
    server.password = "an-edited-password"
    assert answer(server, "RETURN 1") == 1
    with pytest.raises(AuthError):
        answer(Neo4jServer(uri=server.uri, password=generated), "RETURN 1")
    assert not maps_archive(server.data)


def test_stop_and_logs_of_a_folder_never_started_create_nothing(tmp_path: Path) -> None:
    """``stop`` created the folder (and its logs and lock) it had nothing to stop in; ``logs``
    printed tail's own error."""
    data = tmp_path / "never"
    stopped = script(data, "stop")
    assert (stopped.returncode, stopped.stderr.strip()) == (0, f"neo4j: not running (no {data})")
    logs = script(data, "logs")
    assert logs.returncode == 1
    assert logs.stderr.strip() == (
        f"neo4j: ERROR: no log yet: {data}/logs/launcher.log (the server of {data} has not been started)"
    )
    assert not data.exists()


def test_a_failed_start_does_not_mark_an_interrupted_import_served(tmp_path: Path) -> None:
    """``NEO4J_INCOMPLETE=serve`` marks the folder served once its server is up, not when the
    start fails (a port in use): nothing was served, so the next import needs no --replace."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "import.incomplete").write_text("new\nan import into this folder did not finish\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = script(
            data, "start", NEO4J_BOLT_PORT=port, NEO4J_HTTP_PORT=str(free_port()), NEO4J_INCOMPLETE="serve"
        )
    assert done.returncode == 1 and "already in use" in done.stderr, done.stderr
    assert (data / "import.incomplete").read_text().startswith("new\n")


@pytest.mark.own_server  # scripts/test runs it beside the Java tests
def test_a_database_that_fails_to_start_ends_the_start_at_once(tmp_path: Path) -> None:
    """A damaged store (a ``neostore`` of random bytes): the database fails to start, so Bolt
    never answers. The start says so, exit 1, as soon as Neo4j has given up on it: it used to
    wait out ``NEO4J_START_TIMEOUT`` (180 s by default; an import's own server too)."""
    data = tmp_path / "data"
    store = data / "data" / "databases" / "neo4j"
    store.mkdir(parents=True)
    data.chmod(0o700)
    (store / "neostore").write_bytes(os.urandom(8192))
    done = script_start(data, NEO4J_START_TIMEOUT="300")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "database 'neo4j' failed to start" in said and "the server exited during start-up" in said, said
    assert "did not answer" not in said, said


def test_a_short_neo4j_password_is_refused_before_anything_starts(tmp_path: Path) -> None:
    done = script_start(tmp_path, NEO4J_PASSWORD="short")
    assert done.returncode != 0
    assert "NEO4J_PASSWORD must have 8 or more characters" in done.stderr
    assert not (tmp_path / "password").exists()
    assert not (tmp_path / "neo4j.pid").exists()


def test_a_password_file_that_is_a_link_is_judged_by_its_file(tmp_path: Path) -> None:
    """A link (mode 777 itself) to a file only its owner may read: taken, as pith-graph takes
    it (the script refused it, with a chmod that could not help)."""
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "pw").write_text("a-good-long-password\n")
    (secret / "pw").chmod(0o600)
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "password").symlink_to(secret / "pw")
    java = failing_java(tmp_path / "java", tmp_path / "called")  # the password is judged first
    done = script_start(data, NEO4J_JAVA=str(java), NEO4J_CDS="off")
    assert "is accessible by group or others" not in done.stderr
    assert "the server exited during start-up" in done.stderr and (tmp_path / "called").exists()


def test_a_password_file_others_can_read_is_refused_by_the_script(tmp_path: Path) -> None:
    (tmp_path / "password").write_text("a-good-long-password\n")
    (tmp_path / "password").chmod(0o644)
    done = script_start(tmp_path)
    assert done.returncode != 0
    assert f"{tmp_path}/password is accessible by group or others (mode 644): chmod 600" in done.stderr
    assert not (tmp_path / "neo4j.pid").exists()


def test_an_unknown_garbage_collector_is_refused_before_anything_starts(tmp_path: Path) -> None:
    done = script_start(tmp_path, NEO4J_GC="zgc")
    assert done.returncode != 0
    assert "NEO4J_GC must be parallel or g1, not 'zgc'" in done.stderr
    assert not (tmp_path / "neo4j.pid").exists()


def collectors(server: Neo4jServer) -> list[str]:
    """The names of the running JVM's garbage collector beans, over JMX."""
    names = answer(
        server, "CALL dbms.queryJmx('java.lang:type=GarbageCollector,*') YIELD name RETURN collect(name)"
    )
    assert isinstance(names, list)
    return sorted(re.sub(r".*name=([^,]+).*", r"\1", name) for name in names)


def runs_collector(names: list[str], gc: str) -> bool:
    """Whether collector beans ``names`` are ``gc``'s. Parallel's are PS Scavenge and PS
    MarkSweep; G1's are named G1 (Java 20 and later add a third)."""
    if gc == "parallel":
        return names == ["PS MarkSweep", "PS Scavenge"]
    return "G1 Young Generation" in names and all(name.startswith("G1 ") for name in names)


def heap_usage(server: Neo4jServer) -> dict[str, int]:
    """The running JVM's heap: init, used, committed and max bytes, over JMX."""
    heap = answer(server, "CALL dbms.queryJmx('java.lang:type=Memory') YIELD attributes RETURN attributes")
    assert isinstance(heap, dict)
    usage: dict[str, int] = heap["HeapMemoryUsage"]["value"]["properties"]
    return usage


def test_the_server_runs_the_parallel_collector_by_default_with_its_heap_reserved(
    local_server: Neo4jServer,
) -> None:
    assert runs_collector(collectors(local_server), os.environ.get("NEO4J_GC", "parallel"))
    usage = heap_usage(local_server)
    assert usage["init"] >= usage["max"]  # -Xms = -Xmx: no growing the heap under a load


@pytest.mark.own_server
def test_without_neo4j_heap_the_server_reserves_2_gib_and_maps_the_archive(tmp_path: Path) -> None:
    """The default heap is 2 GiB (1 GiB before 0.9.7: a load's 5,000-bundle transaction
    filled the old generation every batch or two, and the collector took a fifth of the
    server's CPU). The archive, written by a throwaway server of 512 MiB with the plugins, is
    mapped by a JVM of that heap too, and by one without the plugins (``NEO4J_PLUGINS=off``,
    as here: their jars stay on the classpath, only their procedures are not registered)."""
    done = script_start(tmp_path, NEO4J_AUTH="none", NEO4J_PLUGINS="off")
    try:
        assert done.returncode == 0, done.stderr
        assert "plugins: off" in done.stderr
        server = Neo4jServer(uri=done.stdout.strip().splitlines()[-1], env={}, data=tmp_path)
        usage = heap_usage(server)
        assert usage["init"] == 2 * 2**30  # (the parallel collector's max leaves out a survivor space)
        assert usage["max"] > 1.5 * 2**30
        assert maps_archive(tmp_path)
        plugin_procedures = "SHOW PROCEDURES YIELD name WHERE name =~ '(apoc|gds)[.].*' RETURN count(*)"
        assert answer(server, plugin_procedures) == 0  # the session's server has them (the test below)
    finally:
        script(tmp_path, "stop", timeout=180)


def settings(server: Neo4jServer, *names: str) -> dict[str, str]:
    """The values of Neo4j settings ``names`` as the running server holds them."""
    values = answer(
        server,
        f"SHOW SETTINGS YIELD name, value WHERE name IN {list(names)!r} RETURN collect([name, value])",
    )
    assert isinstance(values, list)
    return dict(values)


def test_the_memory_gc_and_timeout_settings_reach_the_server(
    restartable: tuple[Neo4jServer, FirstStart],
) -> None:
    """NEO4J_GC=g1, NEO4J_HEAP, NEO4J_PAGECACHE, NEO4J_TX_TIMEOUT and NEO4J_TX_MEMORY, each
    other than its default."""
    _, first = restartable
    assert runs_collector(first.collectors, "g1")
    assert not runs_collector(first.collectors, "parallel")
    assert first.maps_archive  # written by a parallel-collector JVM, used by this one too
    assert first.heap["max"] == first.heap["init"] == 768 * 2**20
    assert first.settings == {
        "server.memory.pagecache.size": "96.00MiB",
        "db.transaction.timeout": "1m30s",
        "db.memory.transaction.max": "48.00MiB",
    }


# -- status and stop ---------------------------------------------------------------------------


def test_status_of_a_running_server_names_its_pid_and_address(local_server: Neo4jServer) -> None:
    assert local_server.data is not None
    done = local_server.script("status")
    pid = (local_server.data / "neo4j.pid").read_text().strip()
    assert (done.returncode, done.stdout) == (0, f"running (pid {pid}) {local_server.uri}\n")


def test_start_and_status_with_another_port_name_the_servers_own(local_server: Neo4jServer) -> None:
    """The server of a folder, asked for on a port it was not started on: start waited for
    Bolt there for NEO4J_START_TIMEOUT, then stopped the healthy server; status called it
    unresponsive. Now start refuses at once, naming its port, and status reports on it."""
    assert local_server.data is not None
    pid = (local_server.data / "neo4j.pid").read_text().strip()
    port = local_server.uri.rsplit(":", 1)[1]
    other = {"NEO4J_BOLT_PORT": str(free_port()), "NEO4J_HTTP_PORT": str(free_port())}
    done = script(local_server.data, "start", timeout=60, **other)
    assert done.returncode == 1, done.stderr
    assert (
        f"runs on bolt://127.0.0.1:{port} (pid {pid}), not on port {other['NEO4J_BOLT_PORT']}" in done.stderr
    )
    status = script(local_server.data, "status", **other)
    assert (status.returncode, status.stdout) == (0, f"running (pid {pid}) {local_server.uri}\n")
    assert answer(local_server, "RETURN 1") == 1  # still running


def test_status_and_stop_of_a_folder_with_no_server(tmp_path: Path) -> None:
    done = script(tmp_path, "status")
    assert (done.returncode, done.stdout) == (3, "not running\n")
    stopped = script(tmp_path, "stop")
    assert stopped.returncode == 0, stopped.stderr


def test_status_of_a_server_that_does_not_answer_bolt(tmp_path: Path) -> None:
    """A live process that is the launcher by its command line, on a port nothing answers."""
    fake = subprocess.Popen(["bash", "-c", "exec -a dev.pith.neo4j.Launcher sleep 60"], cwd=tmp_path)
    try:
        (tmp_path / "neo4j.pid").write_text(f"{fake.pid}\n")
        with held_port() as port:  # refused while the status looks (no other server there)
            done = script(tmp_path, "status", NEO4J_BOLT_PORT=str(port))
        assert done.returncode == 1, done.stdout
        assert done.stdout == f"unresponsive or starting (pid {fake.pid}) bolt://127.0.0.1:{port}\n"
        (tmp_path / "neo4j.pid").write_text("999999999\n")  # no such process: a stale pid file
        assert script(tmp_path, "status").returncode == 3
    finally:
        fake.kill()
        fake.wait()


LOOK_ALIKE = ["bash", "-c", "exec -a dev.pith.neo4j.Launcher sleep 60"]


@pytest.mark.parametrize(
    "whose",
    [
        pytest.param({"cwd": "elsewhere"}, id="in-another-folder"),
        pytest.param({"cwd": "data", "user": 65534}, id="of-another-user"),
    ],
)
def test_a_look_alike_launcher_is_neither_reported_nor_stopped(
    tmp_path: Path, whose: dict[str, object]
) -> None:
    """The pid file names a launcher by its command line (a stale file, its pid reused) that
    runs in another folder or as another user: the folder's server is not running."""
    if "user" in whose and os.geteuid() != 0:
        pytest.skip("starting a process as another user needs root")
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    data.mkdir(mode=0o700)
    elsewhere.mkdir()
    where = data if whose["cwd"] == "data" else elsewhere
    user = whose.get("user")
    fake = subprocess.Popen(LOOK_ALIKE, cwd=where, user=user if isinstance(user, int) else None)
    try:
        (data / "neo4j.pid").write_text(f"{fake.pid}\n")
        done = script(data, "status")
        assert (done.returncode, done.stdout) == (3, "not running\n")
        stopped = script(data, "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert fake.poll() is None  # not killed
    finally:
        fake.kill()
        fake.wait()


# -- the data folder ---------------------------------------------------------------------------


def test_a_data_folder_of_another_user_is_refused_before_anything_in_it_is_touched(tmp_path: Path) -> None:
    """A link planted as the lock file would have ``stop`` empty the file it points to."""
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    victim, data = tmp_path / "victim.txt", tmp_path / "theirs"
    victim.write_text("keep me\n")
    data.mkdir()
    (data / ".script.lock").symlink_to(victim)
    os.chown(data, 65534, 65534)
    for command in ("stop", "status", "start"):
        done = script(data, command, NEO4J_CDS="off")
        assert done.returncode == 1, (command, done.stdout)
        assert (
            done.stderr
            == f"neo4j: ERROR: NEO4J_DATA {data} is owned by another user (uid 65534), not by you (uid 0)\n"
        )
    assert victim.read_text() == "keep me\n"
    assert sorted(path.name for path in data.iterdir()) == [".script.lock"]


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777], ids=oct)
def test_a_data_folder_others_may_write_in_is_refused(tmp_path: Path, mode: int) -> None:
    data = tmp_path / "shared"
    data.mkdir()
    data.chmod(mode)
    for command in ("status", "stop"):
        done = script(data, command)
        assert (done.returncode, done.stdout) == (1, ""), command
        assert done.stderr == (
            f"neo4j: ERROR: NEO4J_DATA {data} is writable by group or others (mode {mode:o}): chmod go-w {data}\n"
        )
    assert list(data.iterdir()) == []


def recording_java(path: Path, record: Path) -> Path:
    """A stand-in for the server's ``java`` that writes its NEO4J_DATA, its working folder and
    its umask to ``record``, one a line, and exits 1: the start fails. (With ``NEO4J_CDS=off``:
    no archive is written for it.)"""
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "$NEO4J_DATA" "$(pwd -P)" "$(umask)" > {record}\nexit 1\n')
    path.chmod(0o755)
    return path


def test_a_new_relative_data_folder_is_private_and_the_server_runs_in_it_with_its_absolute_path(
    tmp_path: Path,
) -> None:
    """The JVM starts under umask 077: its store and logs (the password's hash) are the owner's."""
    record = tmp_path / "record"
    java = recording_java(tmp_path / "java", record)
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    ports = {"NEO4J_BOLT_PORT": str(free_port()), "NEO4J_HTTP_PORT": str(free_port())}
    env = {**base, "NEO4J_DATA": "rel/db", "NEO4J_JAVA": str(java), "NEO4J_CDS": "off", **ports}
    done = subprocess.run(
        [str(NEO4J_SCRIPT), "start"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert "the server exited during start-up" in done.stderr
    data = tmp_path / "rel" / "db"
    assert record.read_text().splitlines() == [str(data), str(data), "0077"]
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "logs" / "launcher.log").stat().st_mode) == 0o600


def test_the_logs_folder_is_private_in_a_data_folder_others_may_read(tmp_path: Path) -> None:
    """A data folder the user made readable by others (mode 755, which the script accepts)
    still gets a private ``logs/``: the launcher's log and the server's (paths, settings) are
    the owner's. It was created 755 (umask 022) before 0.8.8, by this script or an import, and
    one made so stays 755 unless the script makes it private."""
    record = tmp_path / "record"
    java = recording_java(tmp_path / "java", record)
    data = tmp_path / "shared"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    (data / "logs").mkdir()  # as an import before 0.8.8 made it
    (data / "logs").chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    ports = {"NEO4J_BOLT_PORT": str(free_port()), "NEO4J_HTTP_PORT": str(free_port())}
    env = {**base, "NEO4J_DATA": str(data), "NEO4J_JAVA": str(java), "NEO4J_CDS": "off", **ports}
    done = subprocess.run(
        [str(NEO4J_SCRIPT), "start"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert "the server exited during start-up" in done.stderr
    assert stat.S_IMODE((data / "logs").stat().st_mode) == 0o700


def test_a_link_planted_as_the_password_s_temporary_file_is_not_followed(tmp_path: Path) -> None:
    data, loot = tmp_path / "data", tmp_path / "loot.txt"
    data.mkdir(mode=0o700)
    loot.touch()
    (data / "password.tmp").symlink_to(loot)
    java = recording_java(tmp_path / "java", tmp_path / "record")
    done = script_start(data, NEO4J_JAVA=str(java), NEO4J_CDS="off", NEO4J_PASSWORD="a-secret-password")
    assert "the server exited during start-up" in done.stderr
    assert loot.read_text() == ""
    assert not (data / "password").is_symlink()
    assert read_password(data / "password") == "a-secret-password"


def listening(pid: int) -> set[tuple[str, int]]:
    """The TCP addresses (host, port) process ``pid`` listens on: its sockets (``/proc/PID/fd``)
    in the LISTEN state (``0A``) of ``/proc/PID/net/tcp`` and ``tcp6``."""
    sockets = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                sockets.add(target.removeprefix("socket:[").removesuffix("]"))
    found = set()
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            (host, port), state, inode = fields[1].split(":"), fields[3], fields[9]
            if state == "0A" and inode in sockets:
                raw = bytes.fromhex(host)  # 32-bit words in host (little-endian) order
                address = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                found.add((socket.inet_ntop(family, address), int(port, 16)))
    return found


def test_the_server_listens_on_loopback_only(local_server: Neo4jServer) -> None:
    """Bolt and HTTP on 127.0.0.1, and nothing else: no other address, no other port."""
    assert local_server.data is not None and local_server.http_uri is not None
    pid = int((local_server.data / "neo4j.pid").read_text().strip())
    bolt, http = (int(uri.rsplit(":", 1)[1]) for uri in (local_server.uri, local_server.http_uri))
    assert listening(pid) == {("127.0.0.1", bolt), ("127.0.0.1", http)}


# -- class-data sharing ----------------------------------------------------------------------


def test_the_server_maps_the_class_data_sharing_archive_the_build_wrote(local_server: Neo4jServer) -> None:
    assert local_server.data is not None
    assert ARCHIVE.stat().st_size > 10 * 2**20
    assert maps_archive(local_server.data)
    # beside it only the JVM it is for: no throwaway server's dump, no failed attempt's marker
    assert sorted(path.name for path in ARCHIVE.parent.glob("neo4j.jsa*")) == ["neo4j.jsa", "neo4j.jsa.jvm"]


def copy_of_the_launcher(into: Path) -> Path:
    """``scripts/neo4j`` and its built launcher, copied under ``into`` (the jar folders linked):
    the copy reads and writes a class-data sharing archive of its own, so a test may have it
    written again while other test runs start servers from the project's. Returns the script."""
    launcher, target = NEO4J_SCRIPT.parent / "neo4j-launcher", ARCHIVE.parent
    built = script(into, "build", timeout=900)  # the project's jars and archive, whichever test runs first
    assert built.returncode == 0, built.stderr
    copy = into / "scripts" / "neo4j-launcher"
    shutil.copytree(launcher / "src", copy / "src")
    shutil.copy2(launcher / "pom.xml", copy / "pom.xml")
    (copy / "target").mkdir()
    for name in ("neo4j-launcher.jar", "neo4j.jsa", "neo4j.jsa.jvm"):
        shutil.copy2(target / name, copy / "target" / name)
    for name in ("lib", "plugins"):
        (copy / "target" / name).symlink_to(target / name)
    (copy / "target" / ".built").touch()  # newer than the sources: no Maven build
    return Path(shutil.copy2(NEO4J_SCRIPT, into / "scripts" / "neo4j"))


@pytest.mark.own_server  # scripts/test runs it beside the Java tests
def test_an_archive_another_jvm_wrote_is_written_again_by_the_next_start(tmp_path: Path) -> None:
    neo4j_script = copy_of_the_launcher(tmp_path / "project")
    archive = neo4j_script.parent / "neo4j-launcher" / "target" / "neo4j.jsa"
    stamp = archive.with_name("neo4j.jsa.jvm")
    java, *libjvm, _project_jars = stamp.read_text().split()  # this JVM's, for the project's jars
    stamp.write_text("/usr/lib/jvm/an-older-build/bin/java 24112704 1700000000\n")  # e.g. before a JDK update
    data = tmp_path / "data"
    done = script_start(data, NEO4J_AUTH="none", using=neo4j_script)
    try:
        assert done.returncode == 0, done.stderr
        assert "writing the class-data sharing archive" in done.stderr
        assert stamp.read_text().split() == [java, *libjvm, str(archive.parent.resolve())]  # the copy's jars
        assert maps_archive(data, archive)
        assert not maps_archive(data)  # not the project's
    finally:
        script(data, "stop", using=neo4j_script)
    assert sorted(path.name for path in archive.parent.glob("neo4j.jsa*")) == ["neo4j.jsa", "neo4j.jsa.jvm"]


@pytest.mark.own_server  # scripts/test runs it beside the Java tests (since 0.9.13: that half was the longer)
def test_an_archive_of_a_checkout_moved_elsewhere_is_written_again(tmp_path: Path) -> None:
    """The archive's stamp names its jars' folder: a copied or moved checkout (same JVM) has
    its archive written again, where the JVM refused it without a word (``shared class paths
    mismatch``) and every start went without it until the next build."""
    neo4j_script = copy_of_the_launcher(tmp_path / "project")
    stamp = neo4j_script.parent / "neo4j-launcher" / "target" / "neo4j.jsa.jvm"
    assert stamp.read_text().split()[-1] != str(stamp.parent.resolve())  # the project's, copied
    done = script(tmp_path / "data", "build", using=neo4j_script)
    assert done.returncode == 0, done.stderr
    assert stamp.read_text().split()[-1] == str(stamp.parent.resolve())


@pytest.mark.parametrize("name", ["NEO4J_START_TIMEOUT", "NEO4J_STOP_TIMEOUT"])
def test_a_timeout_that_is_no_number_of_seconds_is_refused_before_anything_starts(
    tmp_path: Path, name: str
) -> None:
    """``30s`` was a bash error mid-way ("value too great for base"), which left the server it
    had launched running (a start) or running on (a stop)."""
    done = script_start(tmp_path, **{name: "30s"})
    assert done.returncode == 1
    assert done.stderr == f"neo4j: ERROR: {name} must be a whole number of seconds, not '30s'\n"
    assert not (tmp_path / "neo4j.pid").exists()


@pytest.mark.parametrize(
    ("name", "value"), [("NEO4J_CDS", "yes"), ("NEO4J_PLUGINS", "none")], ids=["cds", "plugins"]
)
def test_an_unknown_switch_is_refused_before_anything_starts(tmp_path: Path, name: str, value: str) -> None:
    """(A script that let one through started a server: stopped whatever the test found.)"""
    try:
        done = script_start(tmp_path, **{name: value})
        assert done.returncode == 1
        assert f"{name} must be on or off, not '{value}'" in done.stderr
        assert not (tmp_path / "neo4j.pid").exists()
    finally:
        script(tmp_path, "stop")


# -- plugins and HTTP ------------------------------------------------------------------------


def test_apoc_and_gds_answer_in_the_pinned_versions(local_server: Neo4jServer) -> None:
    """The session's server, as an analyst's (``NEO4J_PLUGINS`` on by default)."""
    assert answer(local_server, "RETURN apoc.version()") == pinned("apoc.version")
    assert answer(local_server, "RETURN gds.version()") == pinned("gds.version")
    kernel = answer(local_server, "CALL dbms.components() YIELD versions RETURN versions[0]")
    assert kernel == pinned("neo4j.version")


def test_http_serves_the_discovery_document_and_the_browser(local_server: Neo4jServer) -> None:
    assert local_server.http_uri is not None
    with urllib.request.urlopen(local_server.http_uri + "/", timeout=30) as reply:
        discovery = json.load(reply)
    assert discovery["bolt_direct"] == local_server.uri
    assert discovery["neo4j_edition"] == "community"
    with urllib.request.urlopen(local_server.http_uri + "/browser/", timeout=30) as reply:
        page = reply.read().decode()
    assert "<title>Neo4j Browser</title>" in page
