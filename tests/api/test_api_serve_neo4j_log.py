"""``pith-graph serve --backend neo4j`` logs what an operator needs, not Neo4j's hints.

The server attaches notifications to a query's result: INFORMATION ones are planner hints
(``collaborationPath``'s two author lookups are a "cartesian product" of one row each), and
the driver logs each at INFO, which ``serve`` prints: one line of about 2 KB per request.
The drivers ask the server for WARNING and above only (``notifications_min_severity``).
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from pith_graph import load_graph
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.keyring import REGISTRY_KEY, PinnedKey
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.neo4j_connect import open_driver
from pith_graph.testing import run_cli
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle

pytestmark = pytest.mark.neo4j

LICENSE = "http://creativecommons.org/licenses/by/4.0/"


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


@contextmanager
def _serving(server: Any, *options: str) -> Iterator[tuple[str, list[str]]]:
    """``serve --backend neo4j`` on ``server``: its URL and its log so far (all of it once
    the block ends: stopped by SIGTERM, exit 0 checked)."""
    args = [sys.executable, "-m", "pith_graph", "serve", "--backend", "neo4j", "--port", "0"]
    args += ["--workers", "1", *server.cli_args()[:6], *options]
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
        yield url, output
    finally:
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=30)
        output.append(rest)
    assert process.returncode == 0, "".join(output)


def test_serve_on_neo4j_does_not_log_the_servers_planner_hints(samples_in_neo4j: Any) -> None:
    first, second = _coauthors()
    with _serving(samples_in_neo4j) as (url, output):
        query = "query($a: String!, $b: String!) { collaborationPath(from: $a, to: $b) { paper { title } } }"
        for _ in range(3):  # the resolvers, then the plan
            answer = httpx.post(
                f"{url}/graphql", json={"query": query, "variables": {"a": first, "b": second}}, timeout=30
            ).json()
            assert "errors" not in answer, answer
            assert len(answer["data"]["collaborationPath"]) == 1, answer  # one paper links them
    log = "".join(output)
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


def test_serve_on_neo4j_warns_of_papers_of_revoked_keys_only_when_there_are(
    samples_in_neo4j: Any, tmp_path: Path
) -> None:
    """The samples are the registry's: no warning (0.8.8 warned that they were served
    unranked, whenever serve was given no --trusted-keys); with the registry's key revoked,
    serve names it (tests/api/test_api_serve.py runs the memory backend's cases)."""
    revoked = tmp_path / "revoked.json"
    entry = {"key_id": REGISTRY_KEY.key_id, "public_key_hex": REGISTRY_KEY.public_key_hex}
    revoked.write_text(json.dumps([{**entry, "signer_id": "pith.science", "revoked": True}]))
    warnings = []
    for options in ((), ("--revoked-keys", str(revoked))):
        with _serving(samples_in_neo4j, *options) as (url, output):
            assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200  # serving: stops cleanly
        warnings.append([line for line in "".join(output).splitlines() if line.startswith("WARNING")])
    assert warnings == [
        [],
        [
            "WARNING pith_graph.api.serve: the graph holds papers signed by a key ('pith-v1-2026-05') "
            "revoked in --revoked-keys: they are served as before until pith-graph prune, given the same "
            "--revoked-keys, removes them"
        ],
    ]


def test_serve_on_neo4j_warns_of_papers_written_before_is_latest(samples_in_neo4j: Any) -> None:
    """A database written before 0.9.4 has papers without ``Paper.isLatest``, which
    ``latestVersions`` leaves out: serve says so, and says nothing once ``pith-graph schema``
    (here ``ensure_schema``, what it runs) gave them theirs."""
    store = samples_in_neo4j.connect()
    warnings = []
    try:
        with store.driver.session(database=store.database) as session:
            session.run("MATCH (p:Paper) REMOVE p.isLatest").consume()
        for upgrade in (False, True):
            if upgrade:
                store.ensure_schema()
            with _serving(samples_in_neo4j) as (url, output):
                assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200
            warnings.append([line for line in "".join(output).splitlines() if line.startswith("WARNING")])
    finally:
        store.close()
    assert warnings == [
        [
            "WARNING pith_graph.api.serve: the database holds papers written before 0.9.4, without "
            "Paper.isLatest: latestVersions leaves them out until pith-graph schema (or a load) gives "
            "them theirs"
        ],
        [],
    ]


def test_serve_on_neo4j_warns_of_authors_folded_before_0_9_8(samples_in_neo4j: Any, tmp_path: Path) -> None:
    """A 0.9.7 load folded ``nameFolded`` from the display name (``Σοφος``: its final sigma
    kept, where typed words are case-folded, so ``σοφος`` found nobody): serve names the first
    such author, and says nothing after a fresh 0.9.8 load nor once ``pith-graph schema``
    folded them again (since 0.9.8)."""
    signer = SignerIdentity.from_seed(b"unfolded", key_id="unfolded-key", signer_id="unfolded.invalid")
    names = ["Σοφος Bo", "Kri\ufb05ina Lee", "Ann Lee"]
    dates = ("2024-01-05T10:00:00Z", "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z")
    paper = PaperSpec("2406.00001", 1, "Folded names", names, "Names.", "cs.LG", [], LICENSE, *dates)
    (tmp_path / "b.json").write_text(json.dumps(build_bundle(paper, signer)))
    keyring = resolve_keyring([PinnedKey(signer.key_id, signer.public_key, signer.signer_id)])
    store = samples_in_neo4j.connect()
    server = samples_in_neo4j
    reader = Neo4jReader.connect(server.uri, server.user, server.password, server.database)
    found, warnings = [], []
    try:
        assert run([str(tmp_path)], keyring=keyring, store=store, workers=1).accepted == 1
        for step in ("fresh", "0.9.7", "schema"):
            if step == "0.9.7":  # what 0.9.7 wrote: the display names' folded words
                with store.driver.session(database=store.database) as session:
                    session.run(
                        "UNWIND $rows AS row MATCH (a:Author {nameKey: row[0]}) SET a.nameFolded = row[1]",
                        rows=[["σοφοσ bo", "σοφος bo"], ["kristina lee", "kri\ufb05ina lee"]],
                    ).consume()
            if step == "schema":
                done = run_cli("schema", *samples_in_neo4j.cli_args(), timeout=60)
                assert done.returncode == 0, done.stderr
            found.append([reader.unfolded_author(), reader.unfolded_author(scan=1)])
            with _serving(samples_in_neo4j) as (url, output):
                assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200
            warnings.append([line for line in "".join(output).splitlines() if "nameFolded" in line])
    finally:
        reader.close()
        store.close()
    assert found == [[None, None], ["kristina lee", "kristina lee"], [None, None]]
    assert warnings == [
        [],
        [
            "WARNING pith_graph.api.serve: the database holds authors whose nameFolded was written before "
            "0.9.8, from their display name (the first: 'kristina lee'): typeahead does not find such a name "
            "by its own spelling (a Greek final sigma, a ligature, full-width or bold letters) until "
            "pith-graph schema folds them again"
        ],
        [],
    ]
