"""The write retry window of the Neo4j store, against a port nothing listens on (the real
driver, no server): transient failures are retried for ``MAX_RETRY_SECONDS`` from the first,
and the last wait ends at that deadline instead of running a whole back-off past it (a load
whose server died gave up after about 91 s, saying 60)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import neo4j
import pytest
from conftest import free_port

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.stores import neo4j as store_module
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_retry import LostCommits

WINDOW = 2.0


def _long_back_off() -> Iterator[float]:
    while True:
        yield 5.0  # each wait longer than the whole window


def test_retries_stop_at_the_window_not_a_back_off_later(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "MAX_RETRY_SECONDS", WINDOW)
    monkeypatch.setattr(store_module, "_retry_delays", _long_back_off)
    uri = f"bolt://127.0.0.1:{free_port()}"
    with neo4j.GraphDatabase.driver(uri, auth=None, connection_timeout=1) as driver:
        store = Neo4jStore(driver, uri=uri)
        started = time.monotonic()
        with pytest.raises(StoreError) as raised:
            store._write_transaction(lambda tx: tx.run("RETURN 1").consume(), commits=LostCommits())
        elapsed = time.monotonic() - started
    assert raised.value.code is StoreErrorCode.UNAVAILABLE
    assert WINDOW <= elapsed < WINDOW + 1.5, elapsed  # the old loop slept 5 s past its window
