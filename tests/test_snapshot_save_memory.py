"""What saving a snapshot (``load --snapshot``) holds beside the graph, since 0.9.9: the nodes'
places (4 bytes a node) and a map of the nodes edges point to, the edges read a kind at a time
(not a map of every node and every edge's ends gathered); the graph's strings as they were
(orjson keeps the UTF-8 of a string beyond ASCII in the string: the rows encode copies); the
text index built once the graph is written, a field at a time, and not kept. The file is the
same bytes either way."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import networkx as nx
from test_snapshot_stream import loaded  # noqa: F401  (the loaded graph: its module's fixture)

from pith_graph.api.reads.memory import MemoryReader
from pith_graph.loader.stores import snapshot_writer
from pith_graph.loader.stores.snapshot import open_snapshot, read_snapshot
from pith_graph.loader.stores.snapshot_writer import save_snapshot


def _beyond_ascii(G: nx.DiGraph) -> list[str]:
    return [
        item
        for _, data in G.nodes(data=True)
        for value in data.values()
        for item in (value if isinstance(value, list) else [value])
        if isinstance(item, str) and not item.isascii()
    ]


def test_saving_leaves_the_graphs_strings_as_they_were(loaded: nx.DiGraph, tmp_path: Path) -> None:
    """Encoding the graph's own strings kept their UTF-8 in them for good: the graph grew by
    about the size of its text beyond ASCII (its abstracts) with every save."""
    strings = _beyond_ascii(loaded)
    assert len(strings) > 100
    before = sum(map(sys.getsizeof, strings))
    save_snapshot(loaded, tmp_path / "g.snapshot")
    assert sum(map(sys.getsizeof, strings)) == before
    assert nx.utils.graphs_equal(open_snapshot(tmp_path / "g.snapshot"), loaded)


def test_saving_holds_a_few_bytes_a_node_and_nothing_an_edge(loaded: nx.DiGraph) -> None:
    """Between two pieces of the body, saving held a map of every node's place (about 80
    bytes a node here, tracemalloc) and every edge's ends and attributes gathered by kind (24
    bytes an edge): now the places (4 bytes a node), a map of the nodes edges point to (the
    papers and categories) and the rows in hand, some 35 bytes a node here."""
    nodes = loaded.number_of_nodes()
    tracemalloc.start()
    held, size = 0, 0
    for piece in snapshot_writer._body(loaded):
        held = max(held, tracemalloc.get_traced_memory()[0])
        size += len(piece)
    tracemalloc.stop()
    assert size > 1_000_000
    assert held < 55 * nodes, (held, nodes)


def test_an_index_not_built_is_saved_as_a_built_one_and_not_kept(loaded: nx.DiGraph, tmp_path: Path) -> None:
    built = MemoryReader(loaded)
    built.warm()
    fresh = MemoryReader(loaded)
    pieces = fresh.saved_indexes()
    assert "text" not in fresh._indexes  # nothing built until the writer asks for the pieces
    assert list(pieces["text"]) == list(built.saved_indexes()["text"])
    assert "text" not in fresh._indexes  # nor kept after
    for name, reader in (("fresh", MemoryReader(loaded)), ("built", built)):
        save_snapshot(loaded, tmp_path / f"{name}.snapshot", reader.saved_indexes())
    assert (tmp_path / "fresh.snapshot").read_bytes() == (tmp_path / "built.snapshot").read_bytes()
    again = MemoryReader(loaded)
    assert again.adopt(read_snapshot(tmp_path / "fresh.snapshot").indexes)


def test_a_graph_whose_adjacency_is_in_another_order_round_trips(tmp_path: Path) -> None:
    """The places of edges' ends follow the graph's order when its adjacency dicts share it
    (networkx keeps them so); one filled apart is read by each node's id instead."""
    G = nx.DiGraph()
    for number in range(6):
        G.add_node(f"Category:c{number}", label="Category", code=f"c{number}")
    for number in range(5):
        G.add_edge(f"Category:c{number}", f"Category:c{number + 1}", type="SUB")
    G.add_edge("Category:c0", "Category:c5", type="SUB", w=1)  # kept apart: another shape
    G._adj = G._succ = dict(reversed(G._adj.items()))
    G._pred = dict(reversed(G._pred.items()))
    save_snapshot(G, tmp_path / "g.snapshot")
    assert nx.utils.graphs_equal(open_snapshot(tmp_path / "g.snapshot"), G)
