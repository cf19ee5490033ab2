"""Node-link JSON written a few nodes at a time (``--save``, ``MemoryStore.save``, ``export``):
byte for byte what the whole-document encoder wrote (kept here as the oracle: networkx's
``node_link_data`` dict of the whole graph, then one ``orjson.dumps``), with the same refusals
of a value orjson cannot write (mid-file now: no file is left), and in memory that does not
grow with the graph (it built the whole dict and the whole file's bytes: +126 MB at 14k papers)."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path
from typing import Any

import networkx as nx
import orjson
import pytest

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader import SAMPLES, load_graph
from pith_graph.loader.graphml import graph_file_chunks
from pith_graph.loader.stores.files import json_bytes, write_beside
from pith_graph.loader.stores.memory import MemoryStore, open_graph
from pith_graph.testing import run_cli, write_corpus


def oracle(graph: nx.DiGraph) -> bytes:
    """The encoder of 0.9.4 and before: the whole ``node_link_data`` dict, then its JSON."""
    return orjson.dumps(nx.node_link_data(graph, edges="edges"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path, nx.DiGraph]:
    """A generated corpus (versions, two signers), its keyring, and the graph a load builds of it."""
    folder = tmp_path_factory.mktemp("nlstream")
    info = write_corpus(folder / "corpus", 800, seed=7, workers=1, layout="jsonl")
    G, report = load_graph(info.shards, trusted_keys=info.keyring_path, workers=1)
    assert report.rejected == 0
    return list(info.shards), info.keyring_path, G


def test_samples_save_the_bytes_the_whole_document_encoder_wrote(tmp_path: Path) -> None:
    G, _ = load_graph([SAMPLES])
    store = MemoryStore(G)
    store.save(tmp_path / "g.json")
    store.save(tmp_path / "g.json.gz")
    assert (tmp_path / "g.json").read_bytes() == oracle(G)
    assert gzip.decompress((tmp_path / "g.json.gz").read_bytes()) == oracle(G)
    assert store.node_link_json() == oracle(G)


def test_a_generated_corpus_saves_the_same_bytes_in_many_pieces(
    corpus: tuple[list[Path], Path, nx.DiGraph], tmp_path: Path
) -> None:
    from pith_graph.loader.stores.files import node_link_chunks

    _, _, G = corpus
    expected = oracle(G)
    pieces = list(node_link_chunks(G))
    assert len(pieces) > 10 and max(map(len, pieces)) < 4 * 65536  # nodes and edges both split
    assert b"".join(pieces) == expected
    MemoryStore(G).save(tmp_path / "g.json")
    write_beside(tmp_path / "x.json.gz", graph_file_chunks(G, tmp_path / "x.json.gz"))  # load's, export's
    assert (tmp_path / "g.json").read_bytes() == expected
    assert gzip.decompress((tmp_path / "x.json.gz").read_bytes()) == expected


def test_load_save_on_the_command_line_writes_the_same_bytes(
    corpus: tuple[list[Path], Path, nx.DiGraph], tmp_path: Path
) -> None:
    shards, keys, _ = corpus
    out = tmp_path / "g.json"
    done = run_cli("load", *map(str, shards), "--trusted-keys", str(keys), "--save", str(out), timeout=300)
    assert done.returncode == 0, done.stderr
    written = out.read_bytes()
    assert written == oracle(MemoryStore.open(out).graph)  # as read back: its order, its attributes


def _odd() -> nx.DiGraph:
    """Graph attributes and values a hand-made graph may hold: non-ASCII, the integers at
    orjson's bounds, floats, nested lists and maps, ``None``, an attribute named ``id`` (node)
    or ``source`` (edge), which ``node_link_data`` overwrites in its place."""
    H = nx.DiGraph()
    H.graph.update({"name": "Zoë's 図", "bounds": [2**64 - 1, -(2**63)], "nested": [[1, [2.5, {"k": None}]]]})
    H.add_node("Author:zoë", id="shadowed", name="Zoë \u2028 \x01", big=2**63 - 1, none=None)
    H.add_node(7, flag=True, ratio=1e-300, deep={"a": [{"b": [[]]}]})
    H.add_node(("tuple", 1))
    for n in range(200):
        H.add_node(f"Paper:{n}", title="é" * n, keys=[str(n)] * (n % 5))
    H.add_edge("Author:zoë", 7, source="shadowed", type="AUTHORED", weight=-0.0)
    H.add_edge(7, ("tuple", 1))
    H.add_edges_from((f"Paper:{n}", f"Paper:{n + 1}", {"type": "CITES", "n": n}) for n in range(199))
    return H


def test_graph_attributes_and_odd_values_encode_as_before(tmp_path: Path) -> None:
    H = _odd()
    for name in ("h.json", "h.json.gz", "H.JSON.GZ"):
        write_beside(tmp_path / name, graph_file_chunks(H, tmp_path / name))
    assert (tmp_path / "h.json").read_bytes() == oracle(H)
    for name in ("h.json.gz", "H.JSON.GZ"):
        assert gzip.decompress((tmp_path / name).read_bytes()) == oracle(H)
    for graph in (nx.DiGraph(), nx.MultiDiGraph([(1, 2), (1, 2)]), nx.Graph([(1, 2)])):
        assert b"".join(graph_file_chunks(graph, tmp_path / "e.json")) == oracle(graph)


def test_nodes_each_larger_than_a_piece_are_written_one_a_piece_and_all_of_them() -> None:
    """A node whose attributes alone outgrow a piece (a script's 20 KB text on each) is a piece
    of its own, never none: every node is written, the bytes those of the whole document."""
    from pith_graph.loader.stores.files import node_link_chunks

    H = nx.DiGraph()
    H.add_nodes_from((f"n{i}", {"text": f"{i}" * 20_000}) for i in range(40))
    H.add_edges_from((f"n{i}", f"n{i + 1}", {"note": "x" * 30_000}) for i in range(39))
    pieces = list(node_link_chunks(H))
    assert b"".join(pieces) == oracle(H)
    assert len(pieces) > 40


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _old_failure(graph: nx.DiGraph) -> StoreError:
    with pytest.raises(StoreError) as raised:
        json_bytes(nx.node_link_data(graph, edges="edges"))  # what the save raised before
    return raised.value


@pytest.mark.parametrize(
    ("where", "value"),
    [
        pytest.param("node", {1, 2}, id="set"),
        pytest.param("node", 2**64, id="int-over-64-bits"),
        pytest.param("node", _deep(252), id="too-deep"),  # 251 writes (below)
        pytest.param("node", {1: "a"}, id="non-str-key"),
        pytest.param("node", "\ud800", id="surrogate"),
        pytest.param("edge", object(), id="edge-object"),
        pytest.param("edge", _deep(252), id="edge-too-deep"),
        pytest.param("graph", _deep(253), id="graph-too-deep"),
    ],
)
def test_a_value_orjson_refuses_mid_graph_fails_as_before_named_and_leaves_no_file(
    tmp_path: Path, where: str, value: object
) -> None:
    H = _odd()
    if where == "node":
        H.nodes["Paper:150"]["bad"] = value  # after many nodes: the file is begun
    elif where == "edge":
        H.edges["Paper:150", "Paper:151"]["bad"] = value
    else:
        H.graph["bad"] = value
    expected = _old_failure(H)  # and since 0.9.10 where it lies:
    named = {
        "node": " (node 'Paper:150', attribute 'bad')",
        "edge": " (edge 'Paper:150' -> 'Paper:151', attribute 'bad')",
    }.get(where, "")
    (tmp_path / "kept.json").write_bytes(b"the file there")
    for name in ("kept.json", "new.json", "new.json.gz"):
        with pytest.raises(StoreError) as raised:
            write_beside(tmp_path / name, graph_file_chunks(H, tmp_path / name))
        assert (raised.value.code, str(raised.value)) == (StoreErrorCode.WRITE_FAILED, str(expected) + named)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kept.json"]
    assert (tmp_path / "kept.json").read_bytes() == b"the file there"


def test_a_value_as_deep_as_orjson_writes_in_place_is_written() -> None:
    """Each value is encoded as deep as it lies in the document: one level less than the
    refused ones above writes (wrapped less, a node's 252 levels would have written)."""
    H = _odd()
    H.nodes["Paper:150"]["deep"] = _deep(251)
    H.graph["deep"] = _deep(252)
    assert b"".join(graph_file_chunks(H, "h.json")) == oracle(H)


def test_the_refusal_comes_after_pieces_were_written(tmp_path: Path) -> None:
    from pith_graph.loader.stores.files import node_link_chunks

    H = _odd()
    H.edges["Paper:150", "Paper:151"]["bad"] = {1, 2}
    pieces = node_link_chunks(H)
    got = [next(pieces), next(pieces)]  # the header, then nodes: streamed before the edge is met
    assert got[0].startswith(b'{"directed":true,"multigraph":false,"graph":{"name":"Zo')
    with pytest.raises(
        StoreError,
        match=r"Type is not JSON serializable: set \(edge 'Paper:150' -> 'Paper:151', attribute 'bad'\)",
    ):
        list(pieces)


def test_numpy_numbers_a_script_set_are_saved_as_json_numbers(tmp_path: Path) -> None:
    """A score from numpy (``nx.set_node_attributes(G, dict(zip(papers, array)))``) is saved in
    both formats and reads back as a number (before 0.9.10 both refused it: write_failed,
    ``Type is not JSON serializable: numpy.float64``, naming no node); what JSON cannot hold
    names its node and attribute in a node-link save."""
    np = pytest.importorskip("numpy")
    G, _ = load_graph([SAMPLES])
    papers = sorted(node for node, label in G.nodes(data="label") if label == "Paper")
    nx.set_node_attributes(G, dict(zip(papers, np.linspace(0.0, 1.0, len(papers)), strict=True)), "score")
    G.nodes[papers[0]]["rank"] = np.int64(7)
    for name, save in (("g.json", MemoryStore(G).save), ("g.snapshot", MemoryStore(G).save_snapshot)):
        save(tmp_path / name)
        H = open_graph(tmp_path / name)
        assert [H.nodes[p]["score"] for p in papers] == [float(x) for x in np.linspace(0.0, 1.0, len(papers))]
        assert H.nodes[papers[0]]["rank"] == 7 and type(H.nodes[papers[0]]["rank"]) is int
    G.nodes[papers[1]]["tags"] = {"a"}
    with pytest.raises(StoreError, match=rf"set \(node 'Paper:{papers[1][6:]}', attribute 'tags'\)"):
        MemoryStore(G).save(tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


def _peak(write: Any) -> int:
    tracemalloc.start()
    try:
        write()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_saving_needs_memory_well_below_the_file_size(
    corpus: tuple[list[Path], Path, nx.DiGraph], tmp_path: Path
) -> None:
    """The whole dict and the whole file's bytes were in memory at once (peak > the file's
    size); now a few nodes' or edges' (about 130 KB whatever the graph). ``MemoryStore.save``
    also checks the graph first (``check_built``: its sets grow with the graph, about a sixth
    of the file here, and are let go before writing)."""
    _, _, G = corpus
    path = tmp_path / "g.json"
    writer = _peak(lambda: write_beside(path, graph_file_chunks(G, path)))  # load --save's, export's
    size = path.stat().st_size
    assert size > 2_500_000
    assert writer < size / 10, (writer, size)
    saved = _peak(lambda: MemoryStore(G).save(tmp_path / "s.json"))
    assert saved < size / 3, (saved, size)
