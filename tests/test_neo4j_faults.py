"""Faults against a real Neo4j: a killed loader, a restarted server, concurrent loaders,
and connection errors. Each ends with the database equal, node for node and edge for edge,
to a clean load of the same input.

These tests run ``pith-graph load`` as a subprocess against a private, password-protected
server (started here, so it can be restarted without disturbing other tests).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from pith_graph.api.reads.neo4j_base import WARM_UP
from pith_graph.api.reads.neo4j_session import EachInItsOwn
from pith_graph.errors import StoreError
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.base import GraphExport
from pith_graph.loader.stores.cypher import PING
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_connect import READ_TIMEOUTS, open_driver
from pith_graph.schema.database import constraints, indexes
from pith_graph.testing.corpus import write_corpus
from pith_graph.testing.serving import serving

pytestmark = [pytest.mark.neo4j, pytest.mark.own_server]

PASSWORD = "pith-graph-faults"
SHARD = 500
LOAD_TIMEOUT = 300


@dataclass(frozen=True)
class Corpus:
    shards: tuple[Path, ...]
    keyring: Path

    def reference(self, *groups: Sequence[Path]) -> GraphExport:
        """The memory store after loading each group of shards in turn."""
        memory = MemoryStore()
        for group in groups:
            run([str(p) for p in group], keyring=resolve_keyring(self.keyring), store=memory, workers=1)
        return memory.export()


@pytest.fixture(scope="module")
def server(start_neo4j: Callable[..., Any]) -> Iterator[Any]:
    """A private server with a password, stopped when this module is done."""
    private = start_neo4j(password=PASSWORD)
    yield private
    private.script("stop", timeout=180)


def test_neo4j_password_is_the_password_and_is_kept_in_the_password_file(server: Any) -> None:
    assert server.password_file is not None
    assert server.password_file.read_text() == PASSWORD + "\n"
    server.connect().close()  # and the server agrees


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    info = write_corpus(
        tmp_path_factory.mktemp("faults"), 3 * SHARD, seed=5, workers=2, layout="jsonl", shard_size=SHARD
    )
    return Corpus(info.shards, info.keyring_path)


@pytest.fixture
def db(server: Any) -> Iterator[Neo4jStore]:
    store = server.connect()
    try:
        store.ensure_schema()
        store.clear()
        yield store
    finally:
        store.close()


def loader(server: Any, corpus: Corpus, shards: Sequence[Path], *extra: str) -> subprocess.Popen[str]:
    """Start ``pith-graph load`` on ``shards`` in its own process group."""
    env = {**os.environ, "NEO4J_PASSWORD": PASSWORD}
    args = [sys.executable, "-m", "pith_graph", "load", *map(str, shards), "--backend", "neo4j"]
    args += ["--uri", server.uri, "--trusted-keys", str(corpus.keyring), "--batch-size", "100", *extra]
    return subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, stderr = process.communicate(timeout=LOAD_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    return process.returncode, stderr


def wait_for_papers(db: Neo4jStore, at_least: int, process: subprocess.Popen[str]) -> int:
    """Poll until ``at_least`` papers are committed (the load is then mid-way)."""
    deadline = time.monotonic() + LOAD_TIMEOUT
    while time.monotonic() < deadline:
        papers = db.counts().nodes.get("Paper", 0)
        if papers >= at_least:
            return papers
        assert process.poll() is None, f"the loader ended before the fault: {finish(process)}"
        time.sleep(0.05)
    raise AssertionError("no batch was committed in time")


def assert_same_graph(actual: GraphExport, expected: GraphExport) -> None:
    assert actual.nodes.keys() == expected.nodes.keys()
    assert actual.nodes == expected.nodes
    assert actual.edges == expected.edges


def test_sigkill_mid_load_then_reload_equals_a_clean_load(
    server: Any, corpus: Corpus, db: Neo4jStore
) -> None:
    shards = corpus.shards[:2]
    process = loader(server, corpus, shards)
    wait_for_papers(db, 300, process)
    os.killpg(process.pid, signal.SIGKILL)  # the loader and its verification workers
    process.communicate()
    expected = corpus.reference(shards)
    half_done = db.export()
    assert (
        0
        < sum(1 for n in half_done.nodes.values() if n["label"] == "Paper")
        < sum(1 for n in expected.nodes.values() if n["label"] == "Paper")
    )

    code, stderr = finish(loader(server, corpus, shards))
    assert code == 0, stderr
    assert_same_graph(db.export(), expected)


def test_server_restart_mid_load_then_reload_equals_a_clean_load(
    server: Any, corpus: Corpus, db: Neo4jStore
) -> None:
    shards = corpus.shards[:2]
    process = loader(server, corpus, shards)
    wait_for_papers(db, 300, process)
    restarted = server.script("restart")
    assert restarted.returncode == 0, restarted.stderr
    code, stderr = finish(process)
    print(f"loader exit code across the restart: {code}; stderr: {stderr.strip()[:300]}")
    # Either the loader rode out the restart (the driver retries), or it stopped with one
    # clear line and exit code 3.
    assert "Traceback" not in stderr
    if code != 0:
        assert code == 3, stderr
        assert stderr.startswith("pith-graph: store error: unavailable:"), stderr
        assert len(stderr.strip().splitlines()) == 1, stderr

    code, stderr = finish(loader(server, corpus, shards))
    assert code == 0, stderr
    assert_same_graph(db.export(), corpus.reference(shards))


def test_concurrent_overlapping_loads_equal_a_sequential_load(
    server: Any, corpus: Corpus, db: Neo4jStore
) -> None:
    first, second = corpus.shards[:2], corpus.shards[1:]
    processes = [loader(server, corpus, first), loader(server, corpus, second)]
    results = [finish(process) for process in processes]
    for code, stderr in results:
        assert code == 0, stderr
        assert "Deadlock" not in stderr and "Traceback" not in stderr and "retried" not in stderr, stderr
    assert_same_graph(db.export(), corpus.reference(first, second))


def _drop_schema(store: Neo4jStore) -> None:
    """Back to a fresh database: no data, no constraints, no indexes (but the built-in lookups)."""
    store.clear()
    run_query = store.driver.execute_query
    for record in run_query("SHOW CONSTRAINTS YIELD name", database_=store.database).records:
        run_query(f"DROP CONSTRAINT `{record['name']}`", database_=store.database)
    shown = run_query("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP'", database_=store.database)
    for record in shown.records:
        run_query(f"DROP INDEX `{record['name']}`", database_=store.database)


def _schema_names(store: Neo4jStore) -> set[str]:
    """The constraints and the online indexes."""
    run_query = store.driver.execute_query
    found = run_query("SHOW CONSTRAINTS YIELD name", database_=store.database).records
    found += run_query(
        "SHOW INDEXES YIELD name, state WHERE state = 'ONLINE'", database_=store.database
    ).records
    return {record["name"] for record in found}


def test_concurrent_first_loads_into_a_fresh_database_both_succeed(server: Any, corpus: Corpus) -> None:
    """Two loaders creating the schema of a fresh database at once: both load, neither fails.

    Before each round the database is made fresh again (the module's server is fresh on the
    first); two loaders met on the schema lock in about half the rounds before the fix.
    """
    expected = {spec.name for spec in constraints()} | {spec.name for spec in indexes()}
    store = server.connect()
    try:
        for round_number in range(6):
            _drop_schema(store)
            assert not expected & _schema_names(store)
            processes = [loader(server, corpus, [Path(SAMPLES)]) for _ in range(2)]
            for code, stderr in (finish(process) for process in processes):
                assert code == 0, f"round {round_number}: {stderr}"
                assert "Traceback" not in stderr, stderr
            assert store.counts().nodes["Paper"] == 3
        assert expected <= _schema_names(store)
    finally:
        store.close()


# -- the API while the server is down -------------------------------------------------------

QUERY = {"query": '{ paper(id: "arXiv:1907.13257") { title authors { name } } }'}


def _timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def _until_healthy(client: httpx.Client) -> None:
    deadline = time.monotonic() + 120
    while client.get("/healthz").status_code != 200:
        assert time.monotonic() < deadline, "/healthz did not recover"
        time.sleep(0.5)


def test_api_answers_fast_while_the_server_is_down_and_recovers(server: Any, corpus: Corpus) -> None:
    """/healthz is a 503 within 2 s and queries are SERVICE_UNAVAILABLE at once while Neo4j
    is stopped; both recover once it is back."""
    code, stderr = finish(loader(server, corpus, [Path(SAMPLES)]))
    assert code == 0, stderr
    with (
        serving(
            ["--backend", "neo4j", "--uri", server.uri, "--port", "0"], {"NEO4J_PASSWORD": PASSWORD}
        ) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        _until_healthy(client)  # a worker's first check plans the reader's statements first
        assert client.post("/graphql", json=QUERY).json()["data"]["paper"]["title"]
        stopped = server.script("stop")
        assert stopped.returncode == 0, stopped.stderr
        try:
            for _ in range(3):
                health, seconds = _timed(lambda: client.get("/healthz"))
                assert (health.status_code, health.json()["status"]) == (503, "unavailable")
                assert seconds < 2.0, f"/healthz took {seconds:.1f} s with the server down"
                answer, seconds = _timed(lambda: client.post("/graphql", json=QUERY))
                errors = answer.json()["errors"]
                assert [e["extensions"]["code"] for e in errors] == ["SERVICE_UNAVAILABLE"], errors
                assert seconds < 2.5, f"a query took {seconds:.1f} s to fail with the server down"
        finally:
            started = server.script("start")
            assert started.returncode == 0, started.stderr
        _until_healthy(client)
        recovered = client.post("/graphql", json=QUERY).json()
        assert ((recovered.get("data") or {}).get("paper") or {}).get("title"), (
            recovered
        )  # errors shown if not


class SentStatements:
    """A driver that records the statements ``execute_query`` sends (the reader's own)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.sent: list[str] = []

    def execute_query(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(" ".join(getattr(query, "text", query).split()))
        return self.driver.execute_query(query, *args, **kwargs)

    def take(self) -> list[str]:
        sent, self.sent = self.sent, []
        return sent


def test_after_a_restart_the_reader_plans_its_statements_before_its_next_one(server: Any) -> None:
    """A restarted server plans every statement anew (seconds each on a cold JVM), so the
    reader outside requests (the health check's) plans ``WARM_UP`` ahead: before its first
    statement, after one that failed, and after ``idle`` seconds without one (a restart that
    no statement saw); not otherwise. Planning ahead that fails for another reason than an
    unreachable server does not stop the statement."""
    real = open_driver(server.uri, "neo4j", PASSWORD, "neo4j", READ_TIMEOUTS)  # no retries
    driver = SentStatements(real)
    warm = [f"EXPLAIN {' '.join(statement.split())}" for statement in WARM_UP]

    def reader(idle: float, warm_up: Sequence[str] = WARM_UP) -> EachInItsOwn:
        return EachInItsOwn(
            driver,  # type: ignore[arg-type]
            "neo4j",
            server.uri,
            10.0,
            warm_up,
            idle=idle,
            warm_seconds=600,  # every one is sent, however slow the machine
        )

    try:
        watching, idle = reader(idle=3600), reader(idle=5)
        for each in (watching, idle):
            assert each.rows(PING, {})[0]["ok"] == 1
            assert driver.take() == [*warm, PING]  # the first statement
            each.rows(PING, {})
            assert driver.take() == [PING]  # planned already
        broken = reader(3600, ["RETURN $x +"])
        broken.rows(PING, {})
        assert driver.take() == ["EXPLAIN RETURN $x +", PING]

        stopped = server.script("stop")
        assert stopped.returncode == 0, stopped.stderr
        try:
            with pytest.raises(StoreError) as caught:
                watching.rows(PING, {})  # sees the server down
            assert caught.value.code == "unavailable"
            driver.take()
        finally:
            started = server.script("start")
            assert started.returncode == 0, started.stderr
        for each in (watching, idle):  # after a failure; after a restart it did not see
            each.rows(PING, {})
            assert driver.take() == [*warm, PING]
            each.rows(PING, {})
            assert driver.take() == [PING]
    finally:
        real.close()


# -- connection errors: one clear line, a stable code ----------------------------------------


def test_wrong_password_is_an_auth_error(server: Any) -> None:
    with pytest.raises(StoreError) as caught:
        Neo4jStore.connect(server.uri, "neo4j", "not-the-password", "neo4j")
    assert caught.value.code == "auth"
    assert "NEO4J_PASSWORD" in caught.value.message


def test_missing_database_is_a_database_error(server: Any) -> None:
    with pytest.raises(StoreError) as caught:
        Neo4jStore.connect(server.uri, "neo4j", PASSWORD, "nosuchdb")
    assert caught.value.code == "database"
    assert "nosuchdb" in caught.value.message


def test_unreachable_server_is_unavailable_and_the_cli_prints_one_line(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as caught:
        Neo4jStore.connect("bolt://127.0.0.1:9", "neo4j", None, "neo4j")
    assert caught.value.code == "unavailable"

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pith_graph",
            "load",
            "loader/samples",
            "--backend",
            "neo4j",
            "--uri",
            "bolt://127.0.0.1:9",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
        check=False,
    )
    assert done.returncode == 3
    assert done.stderr.startswith(
        "pith-graph: store error: unavailable: cannot reach Neo4j at bolt://127.0.0.1:9"
    )
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
