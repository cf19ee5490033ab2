"""A memory reader over a graph pith-graph then loads into or prunes answers for the graph as it
now is (since 0.9.10): the store tells the graph's readers, which forget their indexes
(``loader/stores/memory_watchers.py``). In 0.9.9 a read after such a load failed with
"Internal server error." (a ``KeyError`` in the shared paper keys built before it) where 0.9.8
answered from stale indexes; a review found it. Watching keeps neither graph nor reader alive."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from pith_graph import load_graph
from pith_graph.api.context import Context
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.schema import build_schema
from pith_graph.loader.stores import memory_watchers
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing import write_corpus

_SCHEMA = build_schema()
_QUERIES = [
    "{ papers(first: 5) { totalCount nodes { pithNumber title } } }",
    '{ papers(first: 5, filter: {category: "cs.LG"}) { totalCount nodes { pithNumber } } }',
    '{ papers(first: 5, filter: {title: "learning"}) { totalCount nodes { pithNumber } } }',
    '{ search(text: "learning graph", first: 5) { totalCount nodes { pithNumber } } }',
    '{ authors(prefix: "a", first: 5) { name paperCount } }',
    "{ categories { code paperCount } }",
    "{ papers(first: 3, filter: {latestVersions: true}) { totalCount facets { authors { value count } } } }",
]


def _answers(reader: MemoryReader) -> list[Any]:
    answers = []
    for query in _QUERIES:
        result = asyncio.run(_SCHEMA.execute(query, context_value=Context(reader, RequestLimits(), {})))
        assert result.errors is None, (query, result.errors)
        answers.append(result.data)
    for author in ("Author:" + key for key in _author_keys(reader.G)[:3]):
        query = '{ author(name: "%s") { papers(first: 50) { totalCount nodes { pithNumber } } } }'
        result = asyncio.run(
            _SCHEMA.execute(
                query % reader.G.nodes[author]["name"], context_value=Context(reader, RequestLimits(), {})
            )
        )
        assert result.errors is None, result.errors
        answers.append(result.data)
    return answers


def _author_keys(G: nx.DiGraph) -> list[str]:
    return sorted(data["nameKey"] for _, data in G.nodes(data=True) if data["label"] == "Author")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    info = write_corpus(
        tmp_path_factory.mktemp("changes"), 300, seed=13, workers=1, layout="jsonl", shard_size=100
    )
    assert len(info.shards) > 1
    return [Path(shard) for shard in info.shards], info.keyring_path


def test_a_load_into_the_graph_is_what_its_reader_answers_next(shards: tuple[list[Path], Path]) -> None:
    paths, keys = shards
    G, _ = load_graph(paths[:1], trusted_keys=keys, workers=1)
    reader = MemoryReader(G)
    before = _answers(reader)  # every index built
    load_graph(paths[1:], trusted_keys=keys, workers=1, graph=G)
    after = _answers(reader)
    assert after == _answers(MemoryReader(G))
    assert after != before


def test_a_removal_is_what_its_reader_answers_next(shards: tuple[list[Path], Path]) -> None:
    paths, keys = shards
    G, _ = load_graph(paths, trusted_keys=keys, workers=1)
    reader = MemoryReader(G)
    before = _answers(reader)
    papers = sorted(data["pithNumber"] for _, data in G.nodes(data=True) if data["label"] == "Paper")
    assert MemoryStore(G).remove_papers(papers[::3])
    after = _answers(reader)
    assert after == _answers(MemoryReader(G))
    assert after != before


def test_watching_keeps_neither_the_reader_nor_the_graph_alive(shards: tuple[list[Path], Path]) -> None:
    paths, keys = shards
    G, _ = load_graph(paths[:1], trusted_keys=keys, workers=1)
    reader = MemoryReader(G)
    gone_reader, gone_graph = weakref.ref(reader), weakref.ref(G)
    assert list(memory_watchers._WATCHERS[G]) == [reader]
    del reader
    gc.collect()
    assert gone_reader() is None
    assert list(memory_watchers._WATCHERS[G]) == []
    del G
    gc.collect()
    assert gone_graph() is None
