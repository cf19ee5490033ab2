"""A stopping server ends the transactions of the requests it answered before it closes its
driver (api/closing.py).

A bridged request (Neo4j over the asyncio driver, as ``pith-graph serve`` runs it) that runs
out of time is answered while its read still waits on the server; its transaction is ended
after that read, in a task of its own. The server, stopping, closed the driver under such
reads (the driver's ``close`` must not be called while its sessions are in use), and the
loop's end cancelled their ending tasks: a session could be collected unclosed
(``ResourceWarning: unclosed AsyncSession``, an intermittent failure of
test_api_aborted_loads.py on a cold server). Here a proxy holds the server's answers, so the
read is still in flight when the server is told to stop, and releases them while it stops.
"""

from __future__ import annotations

import gc
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import httpx
import neo4j
import pytest
from apitest import (  # noqa: F401 (fixtures)
    Corpus,
    ThreadServer,
    corpus,
    memory_reader,
    neo4j_corpus,
)

from pith_graph.api.app import create_app
from pith_graph.api.bridge import BridgeRunner
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.neo4j import Neo4jReader

pytestmark = pytest.mark.neo4j

LIMIT = 1.0  # the API's time limit
HELD = 0.5  # how long after the server is told to stop its answers are released
QUERY = '{ categories { code } search(text: "graph", first: 5) { totalCount } }'  # two reads


class HoldingProxy:
    """A TCP proxy to a Bolt server whose answers wait while :attr:`released` is clear (as a
    server slow to answer)."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("bolt://").removeprefix("neo4j://").rsplit(":", 1)
        self.target = (host, int(port))
        self.released = threading.Event()
        self.released.set()
        self.ends: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.uri = f"bolt://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.released.set()
        for end in [self.listener, *self.ends]:
            with suppress(OSError):
                end.close()

    def _accept(self) -> None:
        with suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                upstream = socket.create_connection(self.target)
                self.ends += [client, upstream]
                threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
                threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, answers: bool) -> None:
        with suppress(OSError):
            while data := source.recv(1 << 16):
                if answers:
                    self.released.wait()
                sink.sendall(data)
        for end in (source, sink):
            with suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def proxy(neo4j_corpus: Any) -> Iterator[HoldingProxy]:
    held = HoldingProxy(neo4j_corpus.server.uri)
    try:
        yield held
    finally:
        held.close()


def test_a_stopping_server_ends_answered_requests_transactions_before_closing_its_driver(
    neo4j_corpus: Any, proxy: HoldingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions: list[Any] = []
    open_at_close: list[int] = []
    made, close = neo4j.AsyncSession.__init__, neo4j.AsyncDriver.close

    def noted(session: Any, *args: Any, **kwargs: Any) -> None:
        made(session, *args, **kwargs)
        sessions.append(session)

    async def closing(driver: Any) -> None:
        open_at_close.append(sum(not session.closed() for session in sessions))
        await close(driver)

    monkeypatch.setattr(neo4j.AsyncSession, "__init__", noted)
    monkeypatch.setattr(neo4j.AsyncDriver, "close", closing)
    server_info = neo4j_corpus.server
    reader = Neo4jReader.connect(
        proxy.uri, server_info.user, server_info.password, server_info.database, timeout=30
    )
    app = create_app(reader, limits=RequestLimits(timeout_seconds=LIMIT), run=BridgeRunner(), backend="neo4j")
    api = ThreadServer(app)
    try:
        with api, httpx.Client(base_url=api.url, timeout=60) as client:
            for _ in range(3):  # the pool holds a connection once one answers in time (a cold
                warm = client.post("/graphql", json={"query": QUERY}).json()  # server's
                if "errors" not in warm:  # first plans took the 1 s limit once, under load)
                    break
            assert "errors" not in warm, warm
            until = time.monotonic() + 10
            while any(not session.closed() for session in sessions):  # its commit follows the answer
                assert time.monotonic() < until, "the first request's transaction did not end"
                time.sleep(0.01)
            proxy.released.clear()
            late = client.post("/graphql", json={"query": QUERY + " # late"}).json()
            assert [e["extensions"]["code"] for e in late["errors"]] == ["TIMEOUT"], late
            assert sum(not session.closed() for session in sessions) == 1  # its read waits
            api.server.should_exit = True  # while that read still waits for the server
            time.sleep(HELD)
            stopping = time.monotonic()
            proxy.released.set()
        stopped = time.monotonic() - stopping
    finally:
        reader.close()
    assert open_at_close == [0], f"the driver was closed under {open_at_close} open session(s)"
    gc.collect()
    assert not any(not session.closed() for session in sessions)
    assert stopped < LIMIT + 5, f"the server took {stopped:.1f} s to stop once the database answered"
