"""A frozen Neo4j: the process alive, its sockets open, no answers (``SIGSTOP``), which is
what a long GC pause, a swapped-out host or a network black hole look like from the client.
Unlike a server that is down (tests/test_neo4j_faults.py), nothing refuses a connection:
every wait must be bounded by a timeout of ours.

* the API answers every query within its time limit (``TIMEOUT``, or ``SERVICE_UNAVAILABLE``)
  and ``/healthz`` a 503 within 2 s, however many queries come, and recovers after ``SIGCONT``
  without a restart;
* a driver opened on a frozen server gives up when its acquisition timeout runs out (the
  loader's: 60 s, README "Loading into Neo4j").

A load frozen under for 3 s finished with a clean graph in 17 of 18 runs by hand; the one
failure (exit 3 after 69 s, on a machine at load 6.6) was not explained, so it is not a test
here yet.

Each test resumes the server (``SIGCONT``) whatever it asserted. A private server, started
here: about 20 s to start it, then about 15 s for the tests.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from test_neo4j_faults import _timed, db  # noqa: F401 (db: a fixture, the module's own server's)

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_connect import DriverTimeouts, open_driver
from pith_graph.testing.serving import serving

pytestmark = [pytest.mark.neo4j, pytest.mark.own_server]

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


@contextmanager
def frozen(server: Any) -> Iterator[None]:
    """The server's JVM stopped (``SIGSTOP``) in the block, resumed after whatever happens."""
    pid = int((server.data / "neo4j.pid").read_text().split()[0])
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


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
