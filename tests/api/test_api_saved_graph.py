"""Restart without verifying again: a graph saved by ``pith-graph load --snapshot`` (or
``--save``) answers every query as the graph loaded from the bundles does."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from apitest import Corpus, corpus, memory_reader  # noqa: F401 (fixtures)
from test_api_e2e import QUERIES, Examples, examples  # noqa: F401 (fixture)
from test_api_serve import _answers, _start, _stop

from pith_graph.api.app import key_infos
from pith_graph.api.context import Context
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.schema import build_schema
from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.stores.memory import MemoryStore, open_graph


@pytest.fixture(scope="module", params=["snapshot", "node-link"])
def reopened(
    request: pytest.FixtureRequest, memory_reader: MemoryReader, tmp_path_factory: Any
) -> MemoryReader:
    path = tmp_path_factory.mktemp("saved") / f"graph.{request.param}"
    store = MemoryStore(memory_reader.G)
    if request.param == "snapshot":
        store.save_snapshot(path)
    else:
        store.save(path)
    return MemoryReader(open_graph(path))


@pytest.mark.parametrize(("query", "variables"), QUERIES)
def test_a_saved_graph_answers_as_the_loaded_one(
    memory_reader: MemoryReader,
    reopened: MemoryReader,
    corpus: Corpus,
    examples: Examples,
    query: str,
    variables: Any,
) -> None:
    schema = build_schema()
    keys = key_infos(corpus.keyring)

    async def answer(reader: MemoryReader) -> Any:
        found = []
        for _ in range(2):  # the resolvers, then the plan
            result = await schema.execute(
                query, variables(examples), context_value=Context(reader, RequestLimits(), keys)
            )
            found.append((result.data, result.errors))
        return found

    assert asyncio.run(answer(reopened)) == asyncio.run(answer(memory_reader))


def test_serve_starts_from_a_saved_graph(tmp_path: Path) -> None:
    snapshot = tmp_path / "graph.snapshot"
    loaded = subprocess.run(
        [sys.executable, "-m", "pith_graph", "load", SAMPLES, "--snapshot", str(snapshot)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert loaded.returncode == 0, loaded.stderr
    process, url, output = _start("--graph", str(snapshot), "--workers", "1")
    try:
        assert any(f"opened {snapshot}: 3 papers" in line for line in output), output
        assert not any("loaded" in line for line in output), output  # nothing verified again
        _answers(url)
    finally:
        log = _stop(process, output)
    assert process.returncode == 0, log


def test_a_damaged_saved_graph_stops_serve_with_a_usage_error(tmp_path: Path) -> None:
    broken = tmp_path / "graph.snapshot"
    broken.write_bytes(b'{"format":"pith-graph-snapshot","version":1}\n{"nodes":')
    done = subprocess.run(
        [sys.executable, "-m", "pith_graph", "serve", "--graph", str(broken), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "cannot open saved graph" in done.stderr
    assert "Traceback" not in done.stderr
