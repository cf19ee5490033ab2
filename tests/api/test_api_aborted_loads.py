"""A request that runs out of time leaves no field waiting on a load (api/request_loader.py).

graphql-core answers an aborted execution at once; the fields still waiting on a DataLoader
stayed pending for ever, and asyncio logged each, when collected, as "Task was destroyed but
it is pending!": on Neo4j thousands of lines per request that ran out of time (a hostile
audit filled 114 MB of log in 20 minutes with searches and their facets). Now the request's
loads still waiting are cancelled when it ends, facets' among them.
"""

from __future__ import annotations

import gc
import logging
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import neo4j
import pytest
from apitest import (  # noqa: F401 (fixtures)
    Corpus,
    corpus,
    memory_reader,
    neo4j_corpus,
    neo4j_reader,
    served,
)

from pith_graph.api.app import create_app
from pith_graph.api.bridge import BridgeRunner
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.reader import GraphReader

#: Ten searches, each with its facets and its papers' authors: many loads in flight at once.
QUERY = (
    "{ "
    + " ".join(
        f's{i}: search(text: "{word}", first: 50) {{ totalCount nodes {{ title authors(first: 5) {{ name }} }} '
        "facets(first: 20) { authors { value count } years { value count } categories { value count } } }"
        for i, word in enumerate(["learning", "graph", "data", "model", "network"] * 2)
    )
    + " }"
)


@pytest.fixture(params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def reader(request: pytest.FixtureRequest) -> GraphReader:
    found: GraphReader = request.getfixturevalue(f"{request.param}_reader")
    return found


@contextmanager
def unclosed_sessions_traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The driver's ``ResourceWarning: unclosed AsyncSession`` raised in the block (and the
    collection at its end), each with its story: the stack that made it, then its closes and
    the driver's clean-ups after a cancellation. This test failed so once, on a loaded CI host,
    and not in 55 runs here under load: should it again, the story says which path left the
    session open (tracemalloc cannot name where such an object was made on Python 3.11)."""
    session_class: Any = neo4j.AsyncSession
    made, close, cancelled = session_class.__init__, session_class.close, session_class._handle_cancellation

    def noted(session: Any, *args: Any, **kwargs: Any) -> None:
        made(session, *args, **kwargs)
        session._story = ["made at:\n" + "".join(traceback.format_stack(limit=25))]

    async def closing(session: Any) -> None:
        session._story.append("close")
        try:
            await close(session)
        except BaseException as error:
            session._story.append(f"close raised {error!r}")
            raise
        session._story.append("closed")

    def cancelling(session: Any, message: str = "General") -> None:
        session._story.append(f"cancellation clean-up: {message}")
        cancelled(session, message)

    for name, wrapper in (("__init__", noted), ("close", closing), ("_handle_cancellation", cancelling)):
        monkeypatch.setattr(session_class, name, wrapper)
    found: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield found
        gc.collect()
    for warning in caught:
        if not issubclass(warning.category, ResourceWarning):
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
            continue
        found.append(f"{warning.message}\n" + "\n".join(getattr(warning.source, "_story", [])))


def test_no_field_is_left_waiting_after_a_request_runs_out_of_time(
    reader: GraphReader, corpus: Corpus, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    bridged = not hasattr(reader, "G")
    codes = []
    with caplog.at_level(logging.ERROR, logger="asyncio"), unclosed_sessions_traced(monkeypatch) as unclosed:
        for limit in (0.03, 0.06, 0.12, 0.25):  # one of them in the middle of the reads
            limits = RequestLimits(timeout_seconds=limit)
            app = create_app(
                reader, keyring=corpus.keyring, limits=limits, **({"run": BridgeRunner()} if bridged else {})
            )
            with served(app, "neo4j" if bridged else "memory", reader) as api:
                for index in range(4):
                    body = api.post(QUERY + f" # {limit} {index}")  # a new document each time: no plan
                    codes += [error["extensions"]["code"] for error in body.get("errors", [])]
                gc.collect()  # pending tasks are reported as they are collected
                api.post("{ categories { code } }")  # the loop runs what the collection queued
                gc.collect()
    assert "TIMEOUT" in codes, "no request ran out of time: nothing was tested"
    destroyed = [record for record in caplog.records if "destroyed but it is pending" in record.getMessage()]
    assert destroyed == []
    assert unclosed == [], "\n\n".join(unclosed)
