"""``/healthz`` answers within its bound however slow the store is, with one ping in flight."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from apitest import corpus, memory_reader, served  # noqa: F401 (fixtures)

from pith_graph.api.app import create_app
from pith_graph.api.lanes import ThreadRunner
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.errors import StoreError, StoreErrorCode


class HungStore(MemoryReader):
    """A store whose ping hangs until released (a server that stopped answering)."""

    def __init__(self, reader: MemoryReader) -> None:
        super().__init__(reader.G)
        self.released = threading.Event()
        self.pings = 0

    def ping(self) -> None:
        self.pings += 1
        self.released.wait(30)


def test_health_is_503_within_its_bound_and_probes_share_one_ping(memory_reader: MemoryReader) -> None:
    store = HungStore(memory_reader)
    runner, ping_runner = ThreadRunner(4), ThreadRunner(1)
    app = create_app(store, run=runner, ping_run=ping_runner)
    try:
        with (
            served(app, "memory", store) as api,
            ThreadPoolExecutor(8) as pool,
            httpx.Client(base_url=api.url, timeout=30) as client,
        ):

            def probe() -> tuple[int, Any, float]:
                started = time.monotonic()
                answer = client.get("/healthz")
                return answer.status_code, answer.json(), time.monotonic() - started

            answers = list(pool.map(lambda _: probe(), range(8)))
            assert {status for status, _, _ in answers} == {503}
            assert [body for _, body, _ in answers] == [{"status": "unavailable", "backend": "memory"}] * 8
            assert max(seconds for _, _, seconds in answers) < 2.0, answers
            assert store.pings == 1  # eight probes, one blocked thread
            # Queries still run: the pings have a thread of their own.
            assert api.data("{ categories { code } }")["categories"]
            store.released.set()
            deadline = time.monotonic() + 10
            while (answer := api.client.get("/healthz")).status_code != 200:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert answer.json() == {"status": "ok", "backend": "memory"}
    finally:
        store.released.set()
        runner.close()
        ping_runner.close()


class DownStore(MemoryReader):
    """A store that refuses every ping until it is up again."""

    up = False

    def ping(self) -> None:
        if not self.up:
            raise StoreError(StoreErrorCode.UNAVAILABLE, "cannot reach the store")


def test_a_store_that_stays_down_is_logged_once_not_per_probe(
    memory_reader: MemoryReader, caplog: pytest.LogCaptureFixture
) -> None:
    """With the store down a failed ping returns at once: probes at any rate wrote a line
    each (hundreds a second). Now: once when it fails, once when it answers again."""
    store = DownStore(memory_reader.G)
    ping_runner = ThreadRunner(1)
    app = create_app(store, ping_run=ping_runner)
    try:
        with (
            caplog.at_level(logging.INFO, logger="pith_graph.api.health"),
            served(app, "memory", store) as api,
        ):
            statuses = [api.client.get("/healthz").status_code for _ in range(200)]
            store.up = True
            statuses += [api.client.get("/healthz").status_code for _ in range(5)]
            store.up = False
            statuses.append(api.client.get("/healthz").status_code)
    finally:
        ping_runner.close()
    assert statuses == [503] * 200 + [200] * 5 + [503]
    said = [record.getMessage() for record in caplog.records if record.name == "pith_graph.api.health"]
    assert said == [
        "health check failed: unavailable: cannot reach the store",
        "health check: the store answers again",
        "health check failed: unavailable: cannot reach the store",
    ]
