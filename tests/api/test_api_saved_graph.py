"""Restart without verifying again: a graph saved by ``pith-graph load --snapshot`` (or
``--save``) answers every query as the graph loaded from the bundles does."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
from array import array
from pathlib import Path
from typing import Any

import httpx
import networkx as nx
import orjson
import pytest
from apitest import Corpus, corpus, memory_reader  # noqa: F401 (fixtures)
from snapshot_bodies import rewritten
from test_api_e2e import QUERIES, Examples, examples  # noqa: F401 (fixture)
from test_api_serve import _answers, _start, _stop

from pith_graph.api.app import key_infos
from pith_graph.api.context import Context
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads import text_index
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.saved_indexes import INDEX_READERS, SavedText
from pith_graph.api.schema import build_schema
from pith_graph.cli.options import save_snapshot_with_index
from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.stores.memory import MemoryStore, open_saved
from pith_graph.loader.stores.snapshot import save_snapshot
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, run_cli

#: How a graph is saved and its index read back: read as ``serve`` reads it (each piece
#: decoded as it is read, a few postings a piece), kept as pieces and then read, or (a version
#: 4 snapshot) whole.
_WITH_INDEX = ("snapshot-with-index", "snapshot-with-index-read", "version-4-with-index")


@pytest.fixture(scope="module", params=["snapshot", *_WITH_INDEX, "node-link"])
def reopened(
    request: pytest.FixtureRequest, memory_reader: MemoryReader, tmp_path_factory: Any
) -> MemoryReader:
    path = tmp_path_factory.mktemp("saved") / f"graph.{request.param}"
    store = MemoryStore(memory_reader.G)
    readers = None
    if request.param == "snapshot":
        store.save_snapshot(path)
    elif request.param == "snapshot-with-index-read":
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(text_index, "PIECE_POSTINGS", 3)
            save_snapshot_with_index(store.graph, str(path))
        assert len(path.read_bytes().split(b'{"index":"text"')) > 20  # split in many pieces
        readers = INDEX_READERS
    elif request.param == "version-4-with-index":
        index, papers = memory_reader._text_index()
        whole = {"text": {"papers": papers, "index": index.state()}}
        store.save_snapshot(path)
        path.write_bytes(rewritten(path.read_bytes(), lambda data: data.update(indexes=whole), version=4))
    elif request.param == "snapshot-with-index":
        save_snapshot_with_index(store.graph, str(path))
    else:
        store.save(path)
    graph, indexes = open_saved(path, readers=readers)
    if readers is not None:
        assert isinstance(indexes["text"], SavedText)
    reader = MemoryReader(graph)
    assert reader.adopt(indexes) is (request.param in _WITH_INDEX)
    return reader


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
    loaded = run_cli("load", SAMPLES, "--snapshot", str(snapshot))
    assert loaded.returncode == 0, loaded.stderr
    process, url, output = _start("--graph", str(snapshot), "--workers", "1")
    try:
        assert any(f"opened {snapshot}: 3 papers" in line for line in output), output
        assert not any("loaded" in line for line in output), output  # nothing verified again
        warmed = [line for line in output if line.startswith("built the ")]
        assert warmed and warmed[0].endswith(" s (the search index came saved)\n"), output
        assert "search" not in warmed[0].split(" in ")[0], warmed  # not built again
        _answers(url)
    finally:
        log = _stop(process, output)
    assert process.returncode == 0, log


def test_a_damaged_saved_graph_stops_serve_with_a_usage_error(tmp_path: Path) -> None:
    broken = tmp_path / "graph.snapshot"
    broken.write_bytes(b'{"format":"pith-graph-snapshot","version":1}\n{"nodes":')
    _refused(broken)


def test_a_saved_graph_no_load_builds_stops_serve_with_a_usage_error(tmp_path: Path) -> None:
    """A snapshot's structure is trusted as it opens (checking it all would cost about as
    much as opening it), but not its edges' ends: one no load builds (a paper listed in its
    own category: a self-loop, intact checksum) stops serve with one line, exit 2, naming
    the edge. It was a KeyError traceback; then, until 0.8.3, a usage error saying KeyError,
    when the indexes were built."""
    store = MemoryStore.open(_loaded([SAMPLES], tmp_path, "good.snapshot"))
    graph = nx.DiGraph(store.graph)
    paper = next(node for node, label in graph.nodes(data="label") if label == "Paper")
    graph.add_edge(paper, paper, type="IN_CATEGORY", primary=True)
    save_snapshot(graph, tmp_path / "looped.snapshot")
    message = _refused(tmp_path / "looped.snapshot")
    assert f"edge {paper!r} -> {paper!r}: IN_CATEGORY goes from a Paper to a Category" in message, message


def _refused(snapshot: Path) -> str:
    """What ``serve --graph snapshot`` says as it stops with a usage error."""
    done = run_cli("serve", "--graph", str(snapshot), "--port", "0", timeout=60)
    assert done.returncode == 2, done.stderr
    assert "cannot open saved graph" in done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


def _loaded(paths: list[str], tmp_path: Path, name: str) -> Path:
    """A snapshot (with its text index) of ``paths``, written by ``pith-graph load``."""
    snapshot = tmp_path / name
    loaded = run_cli("load", *paths, "--snapshot", str(snapshot))
    assert loaded.returncode == 0, loaded.stderr
    return snapshot


def _search(url: str, text: str) -> list[str]:
    query = "query($t: String!) { search(text: $t) { edges { node { pithNumber } } } }"
    body = httpx.post(f"{url}/graphql", json={"query": query, "variables": {"t": text}}).json()
    return [edge["node"]["pithNumber"] for edge in body["data"]["search"]["edges"]]


def test_serve_searches_bundles_loaded_over_a_saved_graph(tmp_path: Path) -> None:
    """The saved text index numbers the saved papers only: bundles loaded on top of the
    graph are searched too (the index is built again, not taken)."""
    samples = sorted(str(path) for path in Path(SAMPLES).glob("*.json"))
    snapshot = _loaded(samples[:2], tmp_path, "two.snapshot")
    process, url, output = _start("--graph", str(snapshot), "--workers", "1", SAMPLES)
    try:
        assert any(line.startswith("built the search, ranking and facet indexes in ") for line in output), (
            output
        )
        _answers(url)
        listing = "{ papers(first: 10) { edges { node { pithNumber title } } } }"
        papers = httpx.post(f"{url}/graphql", json={"query": listing}).json()["data"]["papers"]["edges"]
        assert len(papers) == 3
        for edge in papers:
            assert edge["node"]["pithNumber"] in _search(url, edge["node"]["title"])
    finally:
        log = _stop(process, output)
    assert process.returncode == 0, log


def test_serve_does_not_take_the_saved_index_when_bundles_are_loaded_on_top(tmp_path: Path) -> None:
    """A newer bundle of a saved paper, loaded over the saved graph, keeps its pith number
    (same canonical record) but changes its abstract: the saved text index numbers the same
    papers, yet it is built again, not taken, so the new words are searched, not the old."""
    signer = SignerIdentity.from_seed(b"saved-index", key_id="si-key", signer_id="si.invalid")
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps([signer.keyring_entry()]))
    old = PaperSpec.example("2601.00007", abstract_excerpt="Marmosets", abstract_canon_sha256="ab" * 32)
    new = dataclasses.replace(old, abstract_excerpt="Quokkas", built_at="2026-03-02T10:00:00Z")
    paths = []
    for name, spec in (("old", old), ("new", new)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_bytes(orjson.dumps(build_bundle(spec, signer)))
    snapshot = tmp_path / "old.snapshot"
    loaded = run_cli("load", str(paths[0]), "--snapshot", str(snapshot), "--trusted-keys", str(keys))
    assert loaded.returncode == 0, loaded.stderr
    options = ("--graph", str(snapshot), str(paths[1]), "--trusted-keys", str(keys), "--workers", "1")
    process, url, output = _start(*options)
    try:
        warmed = [line for line in output if line.startswith("built the ")]
        assert warmed and warmed[0].startswith("built the search, ranking and facet indexes in "), output
        assert "came saved" not in warmed[0], output
        (number,) = _search(url, "quokkas")
        assert _search(url, "marmosets") == []
        query = "query($p: String!) { paper(id: $p) { abstractExcerpt } }"
        answer = httpx.post(f"{url}/graphql", json={"query": query, "variables": {"p": number}}).json()
        assert answer["data"]["paper"] == {"abstractExcerpt": "Quokkas"}, answer
    finally:
        log = _stop(process, output)
    assert process.returncode == 0, log


def _first_doc_past_the_end(pieces: list[dict[str, Any]]) -> None:
    piece = next(piece for piece in pieces if "docs" in piece)
    docs = array("i", base64.b64decode(piece["docs"]))
    docs[0] = 99
    piece["docs"] = base64.b64encode(docs.tobytes()).decode()


def _counts_short(pieces: list[dict[str, Any]]) -> None:
    next(piece for piece in pieces if "counts" in piece)["counts"] = ""


def _fields_swapped(pieces: list[dict[str, Any]]) -> None:
    first, second = (at for at, piece in enumerate(pieces) if "field" in piece)
    pieces[first:] = pieces[second:] + pieces[first:second]


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        pytest.param(_first_doc_past_the_end, "names a document", id="doc-past-the-end"),
        pytest.param(_counts_short, "do not add up", id="wrong-sizes"),
        pytest.param(_fields_swapped, "out of its place", id="wrong-order"),
        pytest.param(lambda pieces: pieces.pop(), "lacks terms or postings", id="truncated"),
        pytest.param(lambda pieces: pieces.clear(), "has no pieces", id="no-pieces"),
    ],
)
def test_a_saved_text_index_that_does_not_hold_together_stops_serve(
    tmp_path: Path, damage: Any, said: str
) -> None:
    """A snapshot whose text index's pieces do not hold together (its checksum made to match,
    as only someone writing it on purpose could) is refused with a usage error naming the file
    and the line, exit 2."""
    snapshot = _loaded([SAMPLES], tmp_path, "graph.snapshot")
    snapshot.write_bytes(rewritten(snapshot.read_bytes(), lambda data: damage(data["indexes"]["text"]), 5))
    message = _refused(snapshot)
    assert f"cannot open saved graph {snapshot}: line " in message and said in message, message


def test_an_index_saved_for_other_papers_is_not_taken(memory_reader: MemoryReader) -> None:
    saved = {"text": list(memory_reader.saved_indexes()["text"])}
    graph = memory_reader.G.copy()
    graph.remove_node(next(node for node, label in graph.nodes(data="label") if label == "Paper"))
    assert MemoryReader(graph).adopt(saved) is False
    papers, head, *rest = saved["text"]
    assert (
        MemoryReader(memory_reader.G).adopt({"text": [papers, {**head, "analysis": "older"}, *rest]}) is False
    )
    assert MemoryReader(memory_reader.G).adopt(saved) is True
    index, numbered = memory_reader._text_index()
    whole = {"papers": numbered, "index": index.state()}  # as version 4 saved it
    assert MemoryReader(graph).adopt({"text": whole}) is False
    other_analysis = {"text": {**whole, "index": {**whole["index"], "analysis": "older"}}}
    assert MemoryReader(memory_reader.G).adopt(other_analysis) is False
    assert MemoryReader(memory_reader.G).adopt({"text": whole}) is True
    for odd in (
        "rebuild me",
        b"rebuild me",
        7,
        None,
    ):  # a hand-made version 4 index: built again, as in 0.9.7
        assert MemoryReader(memory_reader.G).adopt({"text": odd}) is False
