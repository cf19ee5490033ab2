"""The write retry window of the Neo4j store, against a port nothing listens on (the real
driver, no server): transient failures are retried for ``MAX_RETRY_SECONDS`` from the first,
and the last wait ends at that deadline instead of running a whole back-off past it (a load
whose server died gave up after about 91 s, saying 60)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import neo4j
import pytest

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.bulk.ports import held_port
from pith_graph.loader.stores import neo4j as store_module
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_retry import LostCommits

WINDOW = 2.0


@pytest.fixture
def closed_uri() -> Iterator[str]:
    """A Bolt URI that refuses connections for the whole test: its port held, not listened on
    (a port found free and let go could become another test's server meanwhile)."""
    with held_port() as port:
        yield f"bolt://127.0.0.1:{port}"


def _long_back_off() -> Iterator[float]:
    while True:
        yield 5.0  # each wait longer than the whole window


def test_retries_stop_at_the_window_not_a_back_off_later(
    monkeypatch: pytest.MonkeyPatch, closed_uri: str
) -> None:
    monkeypatch.setattr(store_module, "MAX_RETRY_SECONDS", WINDOW)
    monkeypatch.setattr(store_module, "_retry_delays", _long_back_off)
    uri = closed_uri
    with neo4j.GraphDatabase.driver(uri, auth=None, connection_timeout=1) as driver:
        store = Neo4jStore(driver, uri=uri)
        started = time.monotonic()
        with pytest.raises(StoreError) as raised:
            store._write_transaction(lambda tx: tx.run("RETURN 1").consume(), commits=LostCommits())
        elapsed = time.monotonic() - started
    assert raised.value.code is StoreErrorCode.UNAVAILABLE
    assert WINDOW <= elapsed < WINDOW + 1.5, elapsed  # the old loop slept 5 s past its window


class _OnRecord(logging.Handler):
    """Sets ``event`` at the first warning logged (the write's "trying again in")."""

    def __init__(self, event: threading.Event) -> None:
        super().__init__(logging.WARNING)
        self.event = event

    def emit(self, record: logging.LogRecord) -> None:
        self.event.set()


def test_an_interrupt_ends_the_wait_for_the_next_attempt_and_spares_later_writes(
    monkeypatch: pytest.MonkeyPatch, closed_uri: str
) -> None:
    """``interrupt()`` (a load's Ctrl-C) ends a write waiting to be tried again at once, as
    ``write_failed``; a write begun after it retries as usual, for its whole window."""
    monkeypatch.setattr(store_module, "MAX_RETRY_SECONDS", WINDOW)
    monkeypatch.setattr(store_module, "_retry_delays", _long_back_off)
    uri = closed_uri
    with neo4j.GraphDatabase.driver(uri, auth=None, connection_timeout=1) as driver:
        store = Neo4jStore(driver, uri=uri)
        failed: list[BaseException] = []

        def write() -> None:
            try:
                store._write_transaction(lambda tx: tx.run("RETURN 1").consume(), commits=LostCommits())
            except StoreError as error:
                failed.append(error)

        waiting = threading.Event()  # its first attempt failed (at once): it waits to try again
        handler = _OnRecord(waiting)
        logging.getLogger(store_module.__name__).addHandler(handler)
        writing = threading.Thread(target=write)
        try:
            writing.start()
            # (a fixed sleep here let a busy host interrupt before the write had begun: a later
            # write, which retried for its whole window)
            assert waiting.wait(30), "the write did not fail and wait to try again"
        finally:
            logging.getLogger(store_module.__name__).removeHandler(handler)
        started = time.monotonic()
        store.interrupt()
        writing.join(WINDOW)
        assert not writing.is_alive() and time.monotonic() - started < WINDOW / 2  # not at the deadline
        [error] = failed
        assert isinstance(error, StoreError) and error.code is StoreErrorCode.WRITE_FAILED
        assert "interrupted before it was tried again" in str(error), error
        started = time.monotonic()
        with pytest.raises(StoreError) as raised:  # a later write is not interrupted
            store._write_transaction(lambda tx: tx.run("RETURN 1").consume(), commits=LostCommits())
        assert raised.value.code is StoreErrorCode.UNAVAILABLE
        assert time.monotonic() - started >= WINDOW


def test_an_attempt_that_fails_once_interrupted_is_not_said_to_be_tried_again(
    caplog: pytest.LogCaptureFixture, closed_uri: str
) -> None:
    """Interrupted while an attempt is in flight (its connection then closed by the load's
    end): it fails, and the write ends there, without the warning that it will be tried again
    (printed after "pith-graph: interrupted", a review of the command line)."""
    uri = closed_uri
    with neo4j.GraphDatabase.driver(uri, auth=None, connection_timeout=1) as driver:
        store = Neo4jStore(driver, uri=uri)

        class InterruptedInFlight(LostCommits):
            def lost_by(self, error: Exception) -> bool:  # called as the attempt has failed
                store.interrupt()
                return super().lost_by(error)

        with caplog.at_level(logging.WARNING), pytest.raises(StoreError) as raised:
            store._write_transaction(lambda tx: tx.run("RETURN 1").consume(), commits=InterruptedInFlight())
    assert raised.value.code is StoreErrorCode.WRITE_FAILED and "interrupted" in str(raised.value)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
