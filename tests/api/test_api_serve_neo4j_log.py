"""``pith-graph serve --backend neo4j`` logs what an operator needs, not Neo4j's hints.

The server attaches notifications to a query's result: INFORMATION ones are planner hints
(``collaborationPath``'s two author lookups are a "cartesian product" of one row each), and
the driver logs each at INFO, which ``serve`` prints: one line of about 2 KB per request.
The drivers ask the server for WARNING and above only (``notifications_min_severity``).
"""

from __future__ import annotations

import logging
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from pith_graph import load_graph
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.neo4j_connect import open_driver

pytestmark = pytest.mark.neo4j


@pytest.fixture
def samples_in_neo4j(neo4j_server: Any) -> Iterator[Any]:
    """The shipped samples in the session's Neo4j (cleared before and after)."""
    store = neo4j_server.connect()
    try:
        store.clear()
        store.ensure_schema()
        report = run([str(SAMPLES)], keyring=resolve_keyring(None), store=store, workers=1)
        assert report.accepted == 3, report
        yield neo4j_server
    finally:
        store.clear()
        store.close()


def _coauthors() -> tuple[str, str]:
    """Two authors of one sample paper (read from the memory graph)."""
    G, _ = load_graph([SAMPLES], workers=1)
    paper = next(n for n, d in G.nodes(data=True) if d["label"] == "Paper")
    names = sorted(G.nodes[a]["name"] for a in G.predecessors(paper) if G.nodes[a]["label"] == "Author")
    return names[0], names[1]


def test_serve_on_neo4j_does_not_log_the_servers_planner_hints(samples_in_neo4j: Any) -> None:
    server = samples_in_neo4j
    first, second = _coauthors()
    args = [sys.executable, "-m", "pith_graph", "serve", "--backend", "neo4j", "--port", "0"]
    args += ["--workers", "1", *server.cli_args()[:6]]
    if server.password:
        args += ["--password", server.password]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    output: list[str] = []
    try:
        deadline, url = time.monotonic() + 60, None
        while url is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            output.append(line)
            if found := re.search(r"Uvicorn running on (http://\S+)", line):
                url = found.group(1)
        assert url is not None, "".join(output)
        query = "query($a: String!, $b: String!) { collaborationPath(from: $a, to: $b) { paper { title } } }"
        for _ in range(3):  # the resolvers, then the plan
            answer = httpx.post(
                f"{url}/graphql", json={"query": query, "variables": {"a": first, "b": second}}, timeout=30
            ).json()
            assert "errors" not in answer, answer
            assert len(answer["data"]["collaborationPath"]) == 1, answer  # one paper links them
    finally:
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=30)
        output.append(rest)
    log = "".join(output)
    assert process.returncode == 0, log
    assert "Received notification" not in log, log[:3000]
    assert "cartesian product" not in log, log[:3000]


def test_drivers_hear_no_hints_nor_unknown_names(neo4j_server: Any, caplog: pytest.LogCaptureFixture) -> None:
    """A planner hint (INFORMATION) and a property key the database has never seen (a
    WARNING of classification UNRECOGNIZED, as every statement on an empty database gets)
    are not sent, so not logged; the same statements still answer."""
    unknown = f"never_{secrets.token_hex(8)}"  # a property key no statement has named before
    server = neo4j_server
    driver = open_driver(server.uri, server.user, server.password, server.database)
    try:
        with caplog.at_level(logging.DEBUG, logger="neo4j.notifications"):
            hint, _, _ = driver.execute_query(
                "MATCH (a:Paper {pithNumber: $x}), (b:Paper {pithNumber: $y}) RETURN count(*) AS n",
                x="a",
                y="b",
                database_=server.database,
            )
            unknown_key, _, _ = driver.execute_query(
                f"MATCH (p:Paper) WHERE p.{unknown} = 1 RETURN count(p) AS n", database_=server.database
            )
    finally:
        driver.close()
    assert hint[0]["n"] == 0 and unknown_key[0]["n"] == 0
    heard = [r.getMessage() for r in caplog.records if r.name == "neo4j.notifications"]
    assert heard == [], heard
