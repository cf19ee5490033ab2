"""Shared fixtures: the sample bundles, a real Neo4j server, and a clean store per backend.

Neo4j: with ``NEO4J_URI`` set, tests use that server (``NEO4J_USER``, ``NEO4J_PASSWORD``,
``NEO4J_DATABASE`` apply). Otherwise the session starts its own with ``scripts/neo4j start``
on free ports (Bolt and HTTP) and a data folder under pytest's temporary directory (never a
developer's data), with authentication on as for everyone: the password is the one the
script generated into ``<data>/password``. It is stopped at the end. A server that cannot
start skips the Neo4j tests, except under ``CI=true``, where it fails them.

Fixtures: ``samples``, ``neo4j_server``, ``neo4j_uri``, ``start_neo4j`` (a private server,
e.g. one a test may restart), ``local_server`` (one started by ``scripts/neo4j``) and
``store`` (parametrized ``memory`` / ``neo4j``). Tests that use a Neo4j fixture are marked
``neo4j`` automatically.
"""

from __future__ import annotations

import os
import signal
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import neo4j
import pytest

from pith_graph.errors import PithGraphError
from pith_graph.loader.bulk.ports import start_on_free_ports
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore

PROJECT = Path(__file__).resolve().parents[1]
NEO4J_SCRIPT = PROJECT / "scripts" / "neo4j"
START_TIMEOUT = 600  # seconds; the first start may build the launcher with Maven
_NEO4J_FIXTURES = {"neo4j_server", "neo4j_uri", "start_neo4j", "local_server"}
#: What every server a test starts for itself is told unless the test says otherwise (since
#: 0.9.15): without APOC and GDS, a start in about a quarter less CPU. Only the session's
#: server and ``local_server`` (the analysts' tests) say ``NEO4J_PLUGINS="on"``.
OWN_SERVER: Mapping[str, str] = MappingProxyType({"NEO4J_PLUGINS": "off"})


@dataclass
class Neo4jServer:
    """A Neo4j to test against. ``env`` is set when this test run started it, so
    ``scripts/neo4j`` (``stop``, ``start``, ``restart``) can be pointed at it; ``data`` is
    then its data folder and ``http_uri`` its HTTP address (Neo4j Browser)."""

    uri: str
    user: str = "neo4j"
    password: str | None = None
    database: str = "neo4j"
    env: dict[str, str] | None = field(default=None, repr=False)
    data: Path | None = None
    http_uri: str | None = None

    @property
    def managed(self) -> bool:
        return self.env is not None

    @property
    def password_file(self) -> Path | None:
        """The password file ``scripts/neo4j`` keeps for a server this run started."""
        return None if self.data is None else self.data / "password"

    def connect(self) -> Neo4jStore:
        return Neo4jStore.connect(self.uri, self.user, self.password, self.database)

    def cli_args(self) -> list[str]:
        """``pith-graph load`` options that reach this server."""
        args = ["--uri", self.uri, "--user", self.user, "--database", self.database]
        return args + (["--password", self.password] if self.password else [])

    def script(self, command: str, timeout: float = START_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """Run ``scripts/neo4j COMMAND`` against this (managed) server."""
        assert self.env is not None, "not a server this test run started"
        return run_script(command, self.env, timeout)


#: The ``scripts/neo4j`` commands that leave a server running, detached from the script.
_STARTS = ("start", "restart")


def run_script(
    command: str, env: dict[str, str], timeout: float, using: Path = NEO4J_SCRIPT
) -> subprocess.CompletedProcess[str]:
    """``scripts/neo4j COMMAND`` (or that of a copy, ``using``) with environment ``env``. A
    start that runs out of ``timeout`` stops the server it began before the timeout is raised:
    the JVM runs detached (setsid), so killing the script left it running."""
    try:
        return subprocess.run(
            [str(using), command], env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        if command in _STARTS:
            subprocess.run([str(using), "stop"], env=env, capture_output=True, timeout=180, check=False)
        raise


def script(
    data: Path, command: str, timeout: float = 120, using: Path = NEO4J_SCRIPT, **env: str
) -> subprocess.CompletedProcess[str]:
    """``scripts/neo4j COMMAND`` (or that of a copy, ``using``) for ``data``, with none of the
    caller's NEO4J_* settings and :data:`OWN_SERVER`'s unless ``env`` says otherwise."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    return run_script(command, {**base, "NEO4J_DATA": str(data), **OWN_SERVER, **env}, timeout, using)


def plan_steps(
    plan: dict[str, Any], path: tuple[int, ...] = ()
) -> Iterator[tuple[tuple[int, ...], str, str]]:
    """(position: child indexes from the root, operator, details) of every step of an EXPLAIN
    or PROFILE plan (the driver's ``summary.plan`` or ``summary.profile``), root first."""
    yield path, plan["operatorType"].split("@")[0], plan.get("args", {}).get("Details", "")
    for index, child in enumerate(plan.get("children", [])):
        yield from plan_steps(child, (*path, index))


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as gone); reads /proc."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def stray() -> Iterator[list[int]]:
    """Pids to SIGKILL after the test, whatever it asserted (never leave processes behind)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def _unavailable(reason: str) -> None:
    """Skip, or fail under CI: Neo4j tests are never silently skipped there."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"Neo4j is required under CI: {reason}", pytrace=False)
    pytest.skip(reason)


def _start(data: Path, password: str | None, auth: bool, settings: dict[str, str]) -> Neo4jServer:
    env = {
        **os.environ,
        "NEO4J_DATA": str(data),
        "NEO4J_HEAP": os.environ.get("NEO4J_TEST_HEAP", "1g"),
        **OWN_SERVER,
        **settings,
    }
    for name in ("NEO4J_PASSWORD", "NEO4J_PASSWORD_FILE", "NEO4J_AUTH"):
        env.pop(name, None)  # a developer's own settings never reach a private server
    if password:
        env["NEO4J_PASSWORD"] = password
    if not auth:
        env["NEO4J_AUTH"] = "none"
    server = Neo4jServer(uri="", env=env, data=data)

    def start(bolt: int, http: int) -> subprocess.CompletedProcess[str]:
        # (a port taken before the JVM bound it failed the session's server, and so every
        # Neo4j test, under CI: started again on others)
        env.update(NEO4J_BOLT_PORT=str(bolt), NEO4J_HTTP_PORT=str(http))
        server.http_uri = f"http://127.0.0.1:{http}"
        return server.script("start")

    try:
        done = start_on_free_ports(start)
    except (OSError, subprocess.TimeoutExpired) as error:
        server.script("stop", timeout=120)
        _unavailable(f"scripts/neo4j start failed: {error}")
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].startswith("bolt://"):
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        _unavailable(f"scripts/neo4j start exited {done.returncode}:\n{tail}")
    server.uri = lines[-1]
    if auth:
        server.password = read_password(data / "password")
    return server


def pinned(name: str) -> str:
    """A version property of the launcher's pom, e.g. ``pinned("gds.version")``."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    found = (
        ET.parse(NEO4J_SCRIPT.parent / "neo4j-launcher" / "pom.xml")
        .getroot()
        .find(f"m:properties/m:{name}", ns)
    )
    assert found is not None and found.text, name
    return found.text


def read_password(path: Path) -> str:
    """The password ``scripts/neo4j`` wrote (one line)."""
    return path.read_text(encoding="utf-8").splitlines()[0]


#: ``scripts/test`` runs the JVMs the tests start with C1 alone (most live seconds); the
#: session's server answers the Java half's queries for all of it, so it keeps the full JIT.
_FULL_JIT = f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} -XX:TieredStopAtLevel=4".strip()


@pytest.fixture(scope="session")
def start_neo4j(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Neo4jServer]]:
    """Start a private Neo4j (``start_neo4j(password=None, auth=True, data=None, **settings)``:
    no password means the generated one; no ``data`` folder, a new one; ``settings``: more
    ``scripts/neo4j`` variables, e.g. ``NEO4J_TX_MEMORY="40m"``); all are stopped at session end.
    Without APOC and GDS (``NEO4J_PLUGINS=off``: a start takes about a quarter less CPU) unless
    ``settings`` say ``NEO4J_PLUGINS="on"``, as the session's server does."""
    started: list[Neo4jServer] = []

    def start(
        password: str | None = None, auth: bool = True, data: Path | None = None, **settings: str
    ) -> Neo4jServer:
        server = _start(data or tmp_path_factory.mktemp("neo4j"), password, auth, settings)
        started.append(server)
        return server

    yield start
    for server in started:
        server.script("stop", timeout=180)


@pytest.fixture(scope="session")
def neo4j_server(start_neo4j: Callable[..., Neo4jServer]) -> Neo4jServer:
    """The session's Neo4j: ``NEO4J_URI`` if set, else one started for this run."""
    uri = os.environ.get("NEO4J_URI")
    if uri:
        server = Neo4jServer(
            uri,
            os.environ.get("NEO4J_USER", "neo4j"),
            os.environ.get("NEO4J_PASSWORD") or None,
            os.environ.get("NEO4J_DATABASE", "neo4j"),
        )
    else:
        server = start_neo4j(JAVA_TOOL_OPTIONS=_FULL_JIT, NEO4J_PLUGINS="on")
    try:
        store = server.connect()
    except PithGraphError as error:
        _unavailable(f"cannot use Neo4j at {server.uri}: {error}")
    try:
        store.ensure_schema()
    finally:
        store.close()
    return server


@pytest.fixture(scope="session")
def local_server(neo4j_server: Neo4jServer, start_neo4j: Callable[..., Neo4jServer]) -> Neo4jServer:
    """A server ``scripts/neo4j`` started for this run with no NEO4J_PASSWORD: the session's,
    or a private one when NEO4J_URI points elsewhere."""
    return neo4j_server if neo4j_server.managed else start_neo4j(NEO4J_PLUGINS="on")


@pytest.fixture(scope="session")
def neo4j_uri(neo4j_server: Neo4jServer) -> str:
    """The Bolt URI of the session's Neo4j."""
    return neo4j_server.uri


@pytest.fixture
def db(neo4j_server: Neo4jServer) -> Iterator[Neo4jStore]:
    """A store on the session's Neo4j, emptied first (a module may define a ``db`` of its own)."""
    store = neo4j_server.connect()
    store.clear()
    yield store
    store.close()


@pytest.fixture
def driver(neo4j_server: Neo4jServer) -> Iterator[neo4j.Driver]:
    """A driver of the session's Neo4j, for transactions a test drives by hand."""
    with neo4j.GraphDatabase.driver(neo4j_server.uri, auth=("neo4j", neo4j_server.password)) as found:
        yield found


@pytest.fixture(scope="session")
def samples() -> Path:
    """The folder of real registry bundles shipped with the loader."""
    return PROJECT / "loader" / "samples"


@pytest.fixture(params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def store(request: pytest.FixtureRequest) -> Iterator[GraphStore]:
    """An empty store of each kind (Neo4j: the session's server, cleared first)."""
    if request.param == "memory":
        yield MemoryStore()
        return
    server: Neo4jServer = request.getfixturevalue("neo4j_server")
    neo4j_store = server.connect()
    try:
        neo4j_store.clear()
        yield neo4j_store
    finally:
        neo4j_store.close()


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C raises ``KeyboardInterrupt`` in the test process, and is the default in every
    process a test starts, as in a terminal. A run started in the background (``scripts/test &``,
    ``nohup``, a CI runner's shell without job control) inherits SIGINT ignored, which Python
    keeps and passes on to its children: the tests that interrupt a command (a load waiting on a
    frozen server, a corpus being generated, an import) then failed, the command deaf to it. A
    handler set from Python is reset to the default in a child at ``exec``; an ignored signal is
    not."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _NEO4J_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.neo4j)
