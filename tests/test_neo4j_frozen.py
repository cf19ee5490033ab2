"""A frozen Neo4j: the process alive, its sockets open, no answers (``SIGSTOP``), which is
what a long GC pause, a swapped-out host or a network black hole look like from the client.
Unlike a server that is down (tests/test_neo4j_faults.py), nothing refuses a connection:
every wait must be bounded by a timeout of ours.

* the API answers every query within its time limit (``TIMEOUT``, or ``SERVICE_UNAVAILABLE``)
  and ``/healthz`` a 503 within 2 s, however many queries come, and recovers after ``SIGCONT``
  without a restart; a request waits for an unreachable server once, not once per read;
* a driver opened on a frozen server gives up when its acquisition timeout runs out (the
  loader's: 60 s, README "Loading into Neo4j"), and a batch that cannot get a connection
  says how many attempts it had, over how long, and when the first failed;
* ``pith-graph load`` frozen under twice, for 0.5 to 3 s at moments chosen by seed, ends 0
  with the graph of a memory load (one seed in the suite; more by hand, see README);
* a batch whose COMMIT was sent but whose connection was then lost (a proxy cuts it) is
  tried again: the load ends 0 with the graph and the report of a clean load, whether the
  lost commit landed or not; so is a prune's removal, which reports every paper removed.

Each test resumes the server (``SIGCONT``) whatever it asserted. A private server, started
here: about 20 s to start it, then about 100 s for the tests.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import neo4j
import pytest
from test_neo4j_faults import Corpus, _timed, assert_same_graph

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.prune import prune_revoked
from pith_graph.loader.stores import cypher, cypher_locks
from pith_graph.loader.stores import neo4j as store_module
from pith_graph.loader.stores.base import GraphExport
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_connect import READ_TIMEOUTS, DriverTimeouts, driver_config, open_driver
from pith_graph.loader.stores.neo4j_retry import LostCommits
from pith_graph.testing.corpus import corpus_signers, write_corpus
from pith_graph.testing.serving import serving

pytestmark = [pytest.mark.neo4j, pytest.mark.own_server, pytest.mark.java_half]

PASSWORD = "pith-graph-frozen"
LIMIT = 2.0  # PITH_API_TIMEOUT_SECONDS of the API under test
MARGIN = 1.5  # what a query may take past it (the hard deadline is 5 s past)
QUERY = {"query": '{ paper(id: "arXiv:1907.13257") { title authors { name } } }'}


@pytest.fixture(scope="module")
def server(start_neo4j: Callable[..., Any]) -> Iterator[Any]:
    """A private server with a password, stopped when this module is done."""
    private = start_neo4j(password=PASSWORD)
    yield private
    private.script("stop", timeout=180)


@pytest.fixture(scope="module")
def schema(server: Any) -> None:
    """The graph's constraints and indexes on the private server, made once: no test here
    drops any (test_neo4j_faults' ``db`` made sure of them before each test, ~0.6 s a time)."""
    store = server.connect()
    try:
        store.ensure_schema()
    finally:
        store.close()


@pytest.fixture
def db(server: Any, schema: None) -> Iterator[Neo4jStore]:
    """A store on the private server, emptied first."""
    store = server.connect()
    try:
        store.clear()
        yield store
    finally:
        store.close()


@contextmanager
def frozen(server: Any) -> Iterator[None]:
    """The server's JVM stopped (``SIGSTOP``) in the block, resumed after whatever happens."""
    pid = int((server.data / "neo4j.pid").read_text().split()[0])
    os.kill(pid, signal.SIGSTOP)
    try:
        _until_stopped(pid)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _until_stopped(pid: int, seconds: float = 10.0) -> None:
    """Wait until every thread of ``pid`` is stopped. ``kill`` returns before they are: one
    thread takes the SIGSTOP and then tells the others, so on a loaded host the JVM's Bolt
    threads went on for a moment, long enough to answer a handshake and a HELLO (CI saw a
    batch's first attempt wait 120 s, the server's read-timeout hint, not 2 s)."""
    deadline = time.monotonic() + seconds
    while True:
        states = []
        for task in Path(f"/proc/{pid}/task").iterdir():
            with suppress(OSError):  # a thread that ended meanwhile
                states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        if states and all(state in "tT" for state in states):
            return
        assert time.monotonic() < deadline, f"the server's threads did not stop: {states}"
        time.sleep(0.005)


def _until_healthy(client: httpx.Client, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while client.get("/healthz").status_code != 200:
        assert time.monotonic() < deadline, "/healthz did not turn 200"
        time.sleep(0.2)


def test_api_answers_in_time_while_the_server_is_frozen_and_recovers(server: Any, db: Neo4jStore) -> None:
    """While the server is frozen, /healthz is a 503 within 2 s and each of 24 concurrent
    queries is TIMEOUT or SERVICE_UNAVAILABLE within the time limit (never a hang, never a
    5xx); after SIGCONT both recover, the same server process serving."""
    run([SAMPLES], keyring=resolve_keyring(), store=db, workers=1)
    with (
        serving(
            ["--backend", "neo4j", "--uri", server.uri, "--port", "0"],
            {"NEO4J_PASSWORD": PASSWORD, "PITH_API_WORKERS": "1", "PITH_API_TIMEOUT_SECONDS": str(LIMIT)},
        ) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        _until_healthy(client)
        before = client.post("/graphql", json=QUERY).json()
        assert before["data"]["paper"]["title"], before
        with ThreadPoolExecutor(24) as pool, frozen(server):
            for _ in range(2):
                health, seconds = _timed(lambda: client.get("/healthz"))
                assert (health.status_code, health.json()["status"]) == (503, "unavailable")
                assert seconds < 2.0, f"/healthz took {seconds:.1f} s with the server frozen"
            answers = list(pool.map(lambda _: _timed(lambda: client.post("/graphql", json=QUERY)), range(24)))
            for answer, seconds in answers:
                assert answer.status_code == 200, answer.text
                errors = answer.json()["errors"]
                codes = [e["extensions"]["code"] for e in errors]
                assert codes in (["TIMEOUT"], ["SERVICE_UNAVAILABLE"]), errors
                assert seconds < LIMIT + MARGIN, f"a query took {seconds:.1f} s with the server frozen"
            health, seconds = _timed(lambda: client.get("/healthz"))
            assert health.status_code == 503 and seconds < 2.0, (health.status_code, seconds)
        _until_healthy(client, 30)
        assert client.post("/graphql", json=QUERY).json() == before


def test_a_request_waits_for_an_unreachable_server_once(server: Any, db: Neo4jStore) -> None:
    """A request that finds the server unreachable (no connection within the acquisition
    timeout) answers SERVICE_UNAVAILABLE for each of its fields after that one wait, planned
    or not: its later reads, and the resolvers after a plan that gave way, fail at once. Each
    waited again: three root fields took 9 s without a plan, and 12 s with one (TIMEOUT at
    the default limit of 10 s, whose suggestion is to ask for less)."""
    run([SAMPLES], keyring=resolve_keyring(), store=db, workers=1)
    query = """{ a: paper(id: "arXiv:1907.13257") { title } b: paper(id: "arXiv:2101.00001") { title }
                 c: papers(first: 2) { edges { node { title } } } }"""
    with (
        serving(
            ["--backend", "neo4j", "--uri", server.uri, "--port", "0"],
            {"NEO4J_PASSWORD": PASSWORD, "PITH_API_WORKERS": "1", "PITH_API_TIMEOUT_SECONDS": "10"},
        ) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        _until_healthy(client)  # the health check's driver; requests have no connection yet
        with frozen(server):
            for body in ({"query": query}, {"query": query, "extensions": {}}):  # planned; resolvers only
                answer, seconds = _timed(lambda: client.post("/graphql", json=body))  # noqa: B023
                errors = answer.json()["errors"]
                assert [(e["path"], e["extensions"]["code"]) for e in errors] == [
                    ([name], "SERVICE_UNAVAILABLE") for name in "abc"
                ], errors
                assert seconds < READ_TIMEOUTS.acquire + MARGIN, f"{body.keys()}: {seconds:.1f} s"
        _until_healthy(client, 30)
        assert client.post("/graphql", json={"query": query}).json()["data"]["a"]["title"]


def test_connecting_to_a_frozen_server_gives_up_at_the_acquisition_timeout(server: Any) -> None:
    """TCP connects (the kernel accepts for the stopped process) but the Bolt handshake never
    answers: opening a driver fails ``unavailable`` once ``acquire`` has passed, not later."""
    timeouts = DriverTimeouts(connect=1.0, acquire=2.0, retry=0.0)
    with frozen(server):
        started = time.monotonic()
        with pytest.raises(StoreError) as raised:
            open_driver(server.uri, "neo4j", PASSWORD, "neo4j", timeouts).close()
        seconds = time.monotonic() - started
    assert raised.value.code is StoreErrorCode.UNAVAILABLE
    assert "\n" not in str(raised.value)
    assert seconds < timeouts.acquire + 1.5, f"gave up after {seconds:.1f} s"


def test_a_batch_given_up_on_a_frozen_server_says_what_it_waited_for(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch with no connection yet: each attempt waits out the driver's acquisition
    timeout (2 s here) on the Bolt handshake, and attempts go on for the retry window (2 s
    here) after the first failure. The error says how many attempts, over how long, and when
    the first failed (it used to say "gave up after retrying for 60s" whatever happened)."""
    monkeypatch.setattr(store_module, "MAX_RETRY_SECONDS", 2.0)
    config = driver_config("neo4j", PASSWORD, DriverTimeouts(connect=1.0, acquire=2.0, retry=0.0))
    with neo4j.GraphDatabase.driver(server.uri, **config) as driver, frozen(server):
        store = Neo4jStore(driver, uri=server.uri)
        started = time.monotonic()
        with pytest.raises(StoreError) as raised:
            store._write_transaction(lambda tx: tx.run("RETURN 1").consume(), commits=LostCommits())
        seconds = time.monotonic() - started
    message = str(raised.value)
    assert raised.value.code is StoreErrorCode.UNAVAILABLE and "retrying for" not in message, message
    said = re.search(r"gave up after (\d+) attempts over (\d+) s: the first failed after (\d+) s", message)
    assert said, message
    attempts, total, first = map(int, said.groups())
    assert attempts >= 2 and abs(total - seconds) <= 1, (message, seconds)
    assert 2 <= first <= 3 and total < 2 + 2 + 2 + 1.5, message  # acquire, window, last acquire


# -- loads -----------------------------------------------------------------------------------

LOAD_TIMEOUT = 120


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Corpus, GraphExport]:
    """600 generated bundles in one shard, and the graph a memory load of them gives."""
    info = write_corpus(tmp_path_factory.mktemp("frozen"), 600, seed=11, workers=1, layout="jsonl")
    found = Corpus(info.shards, info.keyring_path)
    return found, found.reference(found.shards)


def _load(uri: str, corpus: Corpus, batch_size: int, *extra: str) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "pith_graph", "load", *map(str, corpus.shards), "--backend", "neo4j"]
    args += ["--uri", uri, "--trusted-keys", str(corpus.keyring), "--batch-size", str(batch_size), *extra]
    env = {**os.environ, "NEO4J_PASSWORD": PASSWORD}
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _papers_reach(db: Neo4jStore, count: int, process: subprocess.Popen[str]) -> bool:
    """Wait until ``count`` papers are committed (True) or the load has ended (False)."""
    deadline = time.monotonic() + LOAD_TIMEOUT
    while db.counts().nodes.get("Paper", 0) < count:
        if process.poll() is not None:
            return False
        assert time.monotonic() < deadline, f"fewer than {count} papers after {LOAD_TIMEOUT} s"
        time.sleep(0.02)
    return True


@pytest.mark.parametrize("seed", [2])  # 1 and 3 also pass: ~11 s each, kept out of CI time
def test_a_load_frozen_under_for_seconds_finishes_with_the_whole_graph(
    server: Any, db: Neo4jStore, corpus: tuple[Corpus, GraphExport], seed: int
) -> None:
    """Twice, once the papers committed reach a count chosen by ``seed``, the server is frozen
    for 0.5 to 3 s (also chosen by seed): the load waits it out, ends 0, and its graph is
    the memory load's. (By hand, 42 loads of 3,000 bundles frozen under 238 times for 0.5 to
    10 s, batches of 50 to 500, load averages up to 7.8: all ended so.)"""
    bundles, expected = corpus
    rng = random.Random(seed)
    papers = sum(1 for node in expected.nodes.values() if node["label"] == "Paper")
    process = _load(server.uri, bundles, rng.choice([25, 50, 100]))
    frozen_mid_load = 0
    try:
        for at in sorted(rng.sample(range(1, papers * 3 // 4), 2)):
            if not _papers_reach(db, at, process):
                break
            with frozen(server):
                frozen_mid_load += process.poll() is None
                _ended(process, rng.uniform(0.5, 3.0))
        _, stderr = process.communicate(timeout=LOAD_TIMEOUT)
    finally:
        process.kill()
        process.communicate()
    assert frozen_mid_load, "the load ended before the first freeze"
    assert process.returncode == 0, stderr
    assert_same_graph(db.export(), expected)


def _ended(process: subprocess.Popen[str], seconds: float) -> None:
    """Wait ``seconds`` (how long the server stays frozen), or less if the load ends."""
    with suppress(subprocess.TimeoutExpired):
        process.wait(seconds)


class Switch:
    """A TCP proxy to ``target`` that :meth:`cut` turns off: its links shut, and the next
    connection refused (its port closed), as a server that went away."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.links: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.uri = f"bolt://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        self.listener.close()
        _close(*self.links)

    def _accept(self) -> None:
        with suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                upstream = socket.create_connection(self.target)
                self.links += [client, upstream]
                for ends in ((client, upstream), (upstream, client)):
                    threading.Thread(target=_pipe, args=ends, daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with suppress(OSError):
        while data := source.recv(1 << 16):
            sink.sendall(data)
    _close(source, sink)


@pytest.mark.parametrize(("fault", "signum"), [("frozen", signal.SIGINT), ("gone", signal.SIGTERM)])
def test_a_load_waiting_on_its_server_ends_at_once_when_interrupted(
    server: Any, db: Neo4jStore, corpus: tuple[Corpus, GraphExport], fault: str, signum: int
) -> None:
    """Ctrl-C or SIGTERM while a batch waits for a server that froze (its transaction blocked
    on an answer) or went away (its retries backing off): the load ends within seconds,
    ``pith-graph: interrupted``, exit 130. It used to wait for the batch to give up first,
    the retry window or the server's read timeout: a minute or more, deaf to the signal."""
    bundles, _ = corpus
    host, port = server.uri.removeprefix("bolt://").split(":")
    switch = Switch((host, int(port)))
    process = _load(switch.uri, bundles, 25)
    try:
        assert _papers_reach(db, 50, process), process.communicate()
        with frozen(server) if fault == "frozen" else contextlib.nullcontext():
            if fault == "gone":
                switch.cut()
            _ended(process, 2.0)  # the batch in flight meets the fault
            assert process.poll() is None, process.communicate()
            process.send_signal(signum)
            started = time.monotonic()
            _, stderr = process.communicate(timeout=LOAD_TIMEOUT)
            waited = time.monotonic() - started
    finally:
        process.kill()
        process.communicate()
        switch.cut()
    assert process.returncode == 130 and stderr.endswith("pith-graph: interrupted\n"), stderr
    assert "Traceback" not in stderr and waited < 5.0, (waited, stderr)


COMMIT = b"\x00\x02\xb0\x12\x00\x00"  # a Bolt chunk holding COMMIT, and the end of the message
SUCCESS = b"\xb1\x70"  # the start of a SUCCESS message (after its chunk's 2-byte length)


class CommitCutter:
    """A TCP proxy to ``target`` that, once its clients have sent ``marker`` ``nth`` times,
    cuts the connection of the next COMMIT, which the client then cannot know the outcome of:

    * ``"sent"``: after forwarding it (the server may commit);
    * ``"landed"``: after the server's answer to it, which is withheld (kept in ``withheld``);
    * ``"dropped"``: instead of forwarding it (the server rolls back).
    """

    def __init__(self, target: tuple[str, int], marker: bytes, nth: int, cut_at: str = "sent") -> None:
        assert cut_at in ("sent", "landed", "dropped"), cut_at
        self.target, self.marker, self.nth, self.cut_at = target, marker, nth, cut_at
        self.seen = 0
        self.withheld = b""
        self.cut = threading.Event()
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.uri = f"bolt://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            answer_withheld = threading.Event()  # this link's COMMIT is cut once answered
            threading.Thread(
                target=self._from_client, args=(client, upstream, answer_withheld), daemon=True
            ).start()
            threading.Thread(
                target=self._from_server, args=(upstream, client, answer_withheld), daemon=True
            ).start()

    def _from_client(
        self, source: socket.socket, sink: socket.socket, answer_withheld: threading.Event
    ) -> None:
        tail = b""
        try:
            while data := source.recv(1 << 16):
                if not self.cut.is_set():
                    with self.lock:
                        self.seen += (tail + data).count(self.marker)
                        cutting = self.seen >= self.nth and data == COMMIT
                        if cutting:
                            self.cut.set()
                    tail = (tail + data)[-len(self.marker) + 1 :]
                    if cutting and self.cut_at == "dropped":
                        break
                    if cutting and self.cut_at == "landed":
                        answer_withheld.set()  # before the server can answer
                    sink.sendall(data)
                    if cutting and self.cut_at == "sent":
                        break
                    continue
                sink.sendall(data)
        except OSError:
            pass
        _close(source, sink)

    def _from_server(
        self, source: socket.socket, sink: socket.socket, answer_withheld: threading.Event
    ) -> None:
        try:
            while data := source.recv(1 << 16):
                if answer_withheld.is_set():
                    self.withheld = data
                    break
                sink.sendall(data)
        except OSError:
            pass
        _close(source, sink)


def _close(*ends: socket.socket) -> None:
    """Close both ends of a link for real: ``close`` alone does not end a connection another
    thread is blocked receiving on (the server would keep the transaction, and its locks)."""
    for end in ends:
        with suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)
        end.close()


OUTCOMES = ("seen", "verified", "inserted", "replaced", "duplicate", "stale", "outranked", "displaced")


def _outcomes(report: dict[str, Any]) -> dict[str, Any]:
    return {key: report[key] for key in (*OUTCOMES, "nodes", "edges")}


@pytest.fixture(scope="module")
def clean_report(corpus: tuple[Corpus, GraphExport]) -> dict[str, Any]:
    """What a load of the corpus in batches of 100 reports (the memory store decides batches
    under the same rules; 4 of its bundles replace, 20 are stale, as batch boundaries fall)."""
    bundles, _ = corpus
    keyring = resolve_keyring(bundles.keyring)
    report = run(
        [str(p) for p in bundles.shards], keyring=keyring, store=MemoryStore(), workers=1, batch_size=100
    )
    return _outcomes(report.as_dict())


def test_a_commit_of_unknown_outcome_is_retried_and_the_load_reports_as_a_clean_one(
    server: Any, db: Neo4jStore, corpus: tuple[Corpus, GraphExport], clean_report: dict[str, Any]
) -> None:
    """The connection is lost right after the third batch's COMMIT was sent: whether it was
    written is unknown, and the batch is tried again (it used to end the load, exit 3, "not
    retried"). The load ends 0, its report counts what a clean load counts (the bundles the
    lost commit wrote, found stored by the retry, are inserted, not duplicates) and the graph
    is the memory load's."""
    bundles, expected = corpus
    host, port = server.uri.removeprefix("bolt://").split(":")
    cutter = CommitCutter((host, int(port)), cypher.LOCK_SOURCES.encode(), 3)
    try:
        process = _load(cutter.uri, bundles, 100, "--json")
        stdout, stderr = process.communicate(timeout=LOAD_TIMEOUT)
    finally:
        cutter.close()
    assert cutter.cut.is_set()
    assert process.returncode == 0, stderr
    assert _outcomes(json.loads(stdout)) == clean_report, stdout
    assert_same_graph(db.export(), expected)


@pytest.mark.parametrize("cut_at", ["landed", "dropped"])
def test_a_batch_whose_commit_was_lost_is_counted_as_what_it_did(
    server: Any, db: Neo4jStore, corpus: tuple[Corpus, GraphExport], clean_report: dict[str, Any], cut_at: str
) -> None:
    """The second batch's COMMIT is cut after the server committed it (``landed``: its answer
    withheld) or before it reached the server (``dropped``): either way the batch is tried
    again and its 100 bundles count as inserted, none as duplicates, as in a clean load."""
    bundles, expected = corpus
    host, port = server.uri.removeprefix("bolt://").split(":")
    cutter = CommitCutter((host, int(port)), cypher.LOCK_SOURCES.encode(), 2, cut_at)
    try:
        with Neo4jStore.connect(cutter.uri, password=PASSWORD) as store:
            keyring = resolve_keyring(bundles.keyring)
            report = run(
                [str(p) for p in bundles.shards], keyring=keyring, store=store, workers=1, batch_size=100
            )
    finally:
        cutter.close()
    assert cutter.cut.is_set()
    if cut_at == "landed":  # the server answered the COMMIT: committed
        assert cutter.withheld[2:4] == SUCCESS, cutter.withheld
    assert _outcomes(report.as_dict()) == clean_report
    assert_same_graph(db.export(), expected)


@pytest.fixture(scope="module")
def revocable(tmp_path_factory: pytest.TempPathFactory) -> tuple[Corpus, Path]:
    """60 generated bundles, every 6th with an event signed by the corpus's builder key, and
    a trusted-keys file that revokes that key (a prune removes those 10 papers)."""
    folder = tmp_path_factory.mktemp("prune")
    info = write_corpus(folder, 60, seed=12, workers=1, layout="jsonl", extra_signer_every=6)
    builder = corpus_signers(12)[1].key_id
    entries = json.loads(info.keyring_path.read_bytes())
    revoked = folder / "revoked-keyring.json"
    revoked.write_text(json.dumps([{**e, "revoked": True} if e["key_id"] == builder else e for e in entries]))
    return Corpus(info.shards, info.keyring_path), revoked


@pytest.mark.parametrize("cut_at", ["landed", "dropped"])
def test_a_prune_whose_commit_was_lost_reports_every_paper_removed(
    server: Any, db: Neo4jStore, revocable: tuple[Corpus, Path], cut_at: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The removal's COMMIT is cut after the server committed it (``landed``) or before it
    got it (``dropped``): the removal is tried again (it used to end the prune, "not
    retried"), and the prune reports the papers an uncut prune on the memory store does (the
    retry finds those the lost commit removed gone, and counts them), leaving its graph."""
    bundles, revoked = revocable
    shards = [str(p) for p in bundles.shards]
    memory = MemoryStore()
    run(shards, keyring=resolve_keyring(bundles.keyring), store=memory, workers=1)
    expected = prune_revoked(memory, resolve_keyring(revoked))
    assert len(expected.removed) == 10, expected
    run(shards, keyring=resolve_keyring(bundles.keyring), store=db, workers=1)
    monkeypatch.setattr(store_module, "_retry_delays", lambda: itertools.repeat(0.1))
    host, port = server.uri.removeprefix("bolt://").split(":")
    cutter = CommitCutter((host, int(port)), cypher_locks.LOCK_PAPERS_TO_REMOVE.encode(), 1, cut_at)
    try:
        with Neo4jStore.connect(cutter.uri, password=PASSWORD) as store:
            report = prune_revoked(store, resolve_keyring(revoked))
    finally:
        cutter.close()
    assert cutter.cut.is_set()  # the marker is in the removal's RUN message, and its COMMIT was cut
    if cut_at == "landed":
        assert cutter.withheld[2:4] == SUCCESS, cutter.withheld
    assert report == expected
    assert_same_graph(db.export(), memory.export())
