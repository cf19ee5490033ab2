"""Snapshots: a graph saved and read back is the same graph, and a damaged file is refused."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import networkx as nx
import orjson
import pytest
from snapshot_bodies import rewritten

from pith_graph.errors import UsageError
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.identifiers import author_name_key
from pith_graph.loader.stores.memory import MemoryStore, open_graph
from pith_graph.loader.stores.memory_graph import EdgeData
from pith_graph.loader.stores.snapshot import is_snapshot, open_snapshot, read_snapshot, save_snapshot
from pith_graph.testing.corpus import write_corpus


def _same(G: nx.DiGraph, H: nx.DiGraph) -> None:
    assert dict(G.nodes(data=True)) == dict(H.nodes(data=True))
    assert sorted(map(repr, G.edges(data=True))) == sorted(map(repr, H.edges(data=True)))


def _shared(G: nx.DiGraph) -> bool:
    """Whether equal edge attributes are one read-only mapping, as in a loaded graph."""
    seen: dict[str, EdgeData] = {}
    for _, _, data in G.edges(data=True):
        if not isinstance(data, EdgeData) or seen.setdefault(repr(data), data) is not data:
            return False
    return True


def test_a_loaded_graph_round_trips(tmp_path: Path) -> None:
    G, _ = load_graph([SAMPLES])
    path = tmp_path / "graph.snapshot"
    save_snapshot(G, path)
    assert is_snapshot(path)
    assert _shared(G)
    _same(G, open_snapshot(path))
    assert _shared(open_snapshot(path))
    nodelink = tmp_path / "graph.json"
    MemoryStore(G).save(nodelink)
    assert not is_snapshot(nodelink)
    _same(G, open_graph(nodelink))
    assert _shared(open_graph(nodelink))
    _same(G, MemoryStore.open(path).graph)


def test_irregular_nodes_and_edges_round_trip(tmp_path: Path) -> None:
    G = nx.DiGraph()
    G.add_node("Author:ann", label="Author", nameKey="ann", name="Ann")
    G.add_node("Author:bob", label="Author", nameKey="bob", name="Bob", note=["extra"])  # more properties
    G.add_node("Author:wrong-id", label="Author", nameKey="carl", name="Carl")  # id not derived
    G.add_node("loose", weight=1.5)  # no label
    G.add_edge("Author:ann", "loose", type="AUTHORED")
    G.add_edge("Author:bob", "loose", type="AUTHORED", why=None)  # more properties than the first
    G.add_edge("loose", "Author:bob", note="no type")
    path = tmp_path / "odd.snapshot"
    save_snapshot(G, path)
    _same(G, open_snapshot(path))


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda raw: raw[:-10], id="truncated"),
        pytest.param(lambda raw: raw.replace(b"Performance", b"Perfurmance", 1), id="altered"),
        pytest.param(lambda raw: raw.replace(b'"version":5', b'"version":9', 1), id="future-version"),
        pytest.param(lambda raw: raw.replace(b'"version":5', b'"version":1', 1), id="multigraph-version"),
        pytest.param(lambda raw: b"[1, 2, 3]\n{}", id="not-a-snapshot"),
        pytest.param(
            lambda raw: raw.replace(b'"version":5', b'"version":"' + b"9" * 1_000_000 + b'"', 1),
            id="huge-version",
        ),
    ],
)
def test_a_damaged_snapshot_is_refused(tmp_path: Path, damage: object) -> None:
    G, _ = load_graph([SAMPLES])
    path = tmp_path / "graph.snapshot"
    save_snapshot(G, path)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(UsageError, match="cannot open saved graph") as caught:
        open_snapshot(path)
    assert len(str(caught.value)) < 400 + len(str(path))  # what it quotes of the file is cut


def test_indexes_saved_with_the_graph_come_back(tmp_path: Path) -> None:
    G, _ = load_graph([SAMPLES])
    path = tmp_path / "graph.snapshot"
    indexes = {"text": [{"papers": ["a", "b"]}, {"size": 2}], "other": [[1], "two"], "none": []}
    save_snapshot(G, path, indexes)
    graph, found = read_snapshot(path)  # no reader given: each index as its pieces
    _same(G, graph)
    assert found == indexes
    save_snapshot(G, path)
    assert read_snapshot(path).indexes == {}


def _rewritten(path: Path, edit: object, version: int) -> None:
    """``path`` with its body (as version 3's map) changed by ``edit``, written as ``version``,
    and its header made to match."""
    path.write_bytes(rewritten(path.read_bytes(), edit, version))


def test_a_version_2_snapshot_still_opens_without_indexes(tmp_path: Path) -> None:
    G, _ = load_graph([SAMPLES])
    path = tmp_path / "graph.snapshot"
    save_snapshot(G, path, {"text": [{}]})
    _rewritten(path, lambda data: data.pop("indexes"), version=2)
    graph, indexes = read_snapshot(path)
    _same(G, graph)
    assert indexes == {}


@pytest.mark.parametrize("version", [3, 4, 5])
def test_indexes_that_are_not_a_map_are_refused(tmp_path: Path, version: int) -> None:
    G, _ = load_graph([SAMPLES])
    path = tmp_path / "graph.snapshot"
    save_snapshot(G, path)
    _rewritten(path, lambda data: data.update(indexes=[1, 2]), version=version)
    with pytest.raises(UsageError, match="its indexes are not a map"):
        read_snapshot(path)


#: A name of 100 KB that would also drive a terminal and break the line.
_LONG = "\x1b[2J\x1b[31mEVIL\n" + "A" * 100_000


def _long_label(data: dict[str, Any]) -> None:
    data["nodes"][_LONG] = data["nodes"].pop("Signer")


def _long_type_of_short_rows(data: dict[str, Any]) -> None:
    group = data["edges"][_LONG] = data["edges"].pop("SIGNED")
    group["rows"][0].pop()


@pytest.mark.parametrize("version", [3, 4, 5])
@pytest.mark.parametrize(
    ("edit", "said"),
    [
        pytest.param(_long_label, "a malformed body (KeyError: '\\x1b[2J", id="label"),
        pytest.param(_long_type_of_short_rows, "a '\\x1b[2J", id="type"),
    ],
)
def test_a_long_name_in_a_snapshot_is_quoted_cut_in_its_error(
    tmp_path: Path, edit: Any, said: str, version: int
) -> None:
    """An error quotes at most 100 characters of a value from the file, escaped (a 100 KB
    label made a line of 100,121 bytes, its control characters as they were)."""
    G, _ = load_graph([SAMPLES])
    path = tmp_path / "graph.snapshot"
    save_snapshot(G, path)
    _rewritten(path, edit, version=version)
    with pytest.raises(UsageError) as refused:
        open_graph(path)
    message = str(refused.value)
    assert said in message and "(100014 characters)" in message
    assert len(message) < 300 + len(str(path)) and message.isprintable()


def _strings(G: nx.DiGraph, label: str, name: str) -> list[str]:
    """Every string ``name`` holds on ``label`` nodes (a list's items: each)."""
    found = []
    for _, data in G.nodes(data=True):
        if data.get("label") == label:
            value = data[name]
            found += value if isinstance(value, list) else [value]
    return found


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("Alias", "kind"),
        ("Paper", "license"),
        ("Paper", "sourceKind"),
        ("Paper", "bundleKeyId"),
        ("Paper", "keyIds"),
    ],
)
def test_an_opened_snapshot_holds_one_object_per_repeated_value_as_a_load_does(
    tmp_path: Path, label: str, name: str
) -> None:
    """Values that repeat across thousands of nodes (an alias's kind, a paper's license, ...)
    are one string object each, in a graph opened from a snapshot as in the loaded one (at
    238k papers, 200 MB of the opened graph's 2.25 GB were copies)."""
    corpus = write_corpus(tmp_path / "corpus", 40, seed=3, workers=1, layout="jsonl")
    G, _ = load_graph(corpus.shards, trusted_keys=corpus.keyring_path, workers=1)
    path = tmp_path / "graph.snapshot"
    save_snapshot(G, path)
    for graph in (G, open_snapshot(path)):
        values = _strings(graph, label, name)
        assert len(values) > len(set(values)) >= 1, values  # the corpus repeats each of them
        assert len({id(value) for value in values}) == len(set(values)), (label, name)


def test_an_opened_snapshots_author_holds_its_folded_name_once_when_it_is_the_key(tmp_path: Path) -> None:
    """An author whose folded name needs no folding (``ann lee``) holds one string for both,
    in the loaded graph and the opened one alike."""
    corpus = write_corpus(tmp_path / "corpus", 20, seed=4, workers=1, layout="jsonl")
    G, _ = load_graph(corpus.shards, trusted_keys=corpus.keyring_path, workers=1)
    path = tmp_path / "graph.snapshot"
    save_snapshot(G, path)
    for graph in (G, open_snapshot(path)):
        authors = [data for _, data in graph.nodes(data=True) if data["label"] == "Author"]
        plain = [data for data in authors if data["nameFolded"] == data["nameKey"]]
        assert 0 < len(plain) < len(authors)  # the corpus has both kinds of names
        assert all(data["nameFolded"] is data["nameKey"] for data in plain)


def test_a_papers_spelling_of_an_author_is_the_authors_name_string_as_a_load_makes_it(tmp_path: Path) -> None:
    """``Paper.authorNames`` spelling an author as it is named hold the author's ``name``
    string itself, in the loaded graph and the opened one alike (not a copy per paper)."""
    corpus = write_corpus(tmp_path / "corpus", 30, seed=5, workers=1, layout="jsonl")
    G, _ = load_graph(corpus.shards, trusted_keys=corpus.keyring_path, workers=1)
    path = tmp_path / "graph.snapshot"
    save_snapshot(G, path)
    for graph in (G, open_snapshot(path)):
        names = {
            data["nameKey"]: data["name"] for _, data in graph.nodes(data=True) if data["label"] == "Author"
        }
        spelt = [
            (spelling, names[author_name_key(spelling)])
            for _, data in graph.nodes(data=True)
            if data["label"] == "Paper"
            for spelling in data.get("authorNames", ())
        ]
        same = [(spelling, name) for spelling, name in spelt if spelling == name]
        assert len(same) > len(names) > 0  # authors with several papers: shared or copied
        assert all(spelling is name for spelling, name in same)


def test_a_snapshot_is_the_same_bytes_however_it_is_encoded(tmp_path: Path) -> None:
    """Saved in pieces, one group's rows at a time, a snapshot's body is lines of compact
    JSON (version 5: a map each, each index's pieces and then their counts last), the digest
    its header names, and saving the opened graph again gives the same bytes."""
    G, _ = load_graph([SAMPLES])
    first, second = tmp_path / "first.snapshot", tmp_path / "second.snapshot"
    save_snapshot(G, first, {"text": [{"words": ["a", "b"]}, {"more": 1}]})
    raw = first.read_bytes()
    head, _, body = raw.partition(b"\n")
    assert orjson.loads(head)["version"] == 5
    assert orjson.loads(head)["sha256"] == hashlib.sha256(body).hexdigest()
    lines = body.split(b"\n")
    assert lines.pop() == b""  # each line ends with one
    assert all(orjson.dumps(orjson.loads(line)) == line for line in lines)
    assert [next(iter(orjson.loads(line))) for line in lines] == ["nodes"] * 5 + ["edges"] * 4 + [
        "index",
        "index",
        "indexes",
    ]
    assert orjson.loads(lines[-1]) == {"indexes": {"text": 2}}
    snapshot = read_snapshot(first)
    save_snapshot(snapshot.graph, second, snapshot.indexes)
    assert second.read_bytes() == raw


@pytest.mark.parametrize("name", ["graph.snapshot", "graph.json"])
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_saved_graph_that_is_no_regular_file_is_refused(tmp_path: Path, name: str, kind: str) -> None:
    """A FIFO would block the reader for ever, a device (``/dev/zero``, through a link) grow it
    until memory runs out: both are refused at once, as bundle inputs are."""
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    with pytest.raises(
        UsageError, match=r"^cannot open saved graph .*: not a regular file \(a FIFO, device or socket\)$"
    ):
        open_graph(path)


@pytest.mark.parametrize("version", [3, 4, 5])
def test_a_short_row_is_named_with_the_article_its_type_takes(tmp_path: Path, version: int) -> None:
    """ "an 'IN_CATEGORY' row", not "a 'IN_CATEGORY' row" (before 0.9.0 always "a")."""
    G, _ = load_graph([SAMPLES])
    path = tmp_path / "graph.snapshot"
    save_snapshot(G, path)
    _rewritten(path, lambda data: data["edges"]["IN_CATEGORY"]["rows"][0].pop(), version=version)
    with pytest.raises(UsageError, match=r"an 'IN_CATEGORY' row does not have \d+ values"):
        open_graph(path)
