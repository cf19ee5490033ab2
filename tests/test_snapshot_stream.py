"""Snapshots written a few rows at a time (``--snapshot``, ``MemoryStore.save_snapshot``,
``prune``) and, since 0.9.7 (version 4: a line per piece of rows), read a line at a time:
loaded graphs and odd ones (labels missing or unknown, ids not derived from keys, attributes
in other orders, edges without a type) read back the same from version 4 as from version 3
(0.9.5's whole-group encoder, :func:`snapshot_bodies.oracle`), with the same objects shared;
neither saving nor opening holds the whole body (saving held all of it until its SHA-256 was
known; opening, the file's bytes and every group's parsed rows); a body altered or cut in a
later line is refused, nothing of it handed back; no temporary file is left, whether the
save succeeds or fails."""

from __future__ import annotations

import hashlib
import tempfile
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import networkx as nx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from snapshot_bodies import oracle

from pith_graph.errors import StoreError, UsageError
from pith_graph.loader import SAMPLES, load_graph
from pith_graph.loader.stores import snapshot_writer
from pith_graph.loader.stores.memory import MemoryStore, open_graph
from pith_graph.loader.stores.memory_graph import EdgeData
from pith_graph.loader.stores.snapshot import open_snapshot, read_snapshot
from pith_graph.loader.stores.snapshot_writer import encode_snapshot, save_snapshot
from pith_graph.schema.graph import LABEL_ATTRIBUTE, NODES, TYPE_ATTRIBUTE, node_id
from pith_graph.testing import write_corpus


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> nx.DiGraph:
    folder = tmp_path_factory.mktemp("snapstream")
    info = write_corpus(folder / "corpus", 800, seed=11, workers=1, layout="jsonl")
    G, report = load_graph(info.shards, trusted_keys=info.keyring_path, workers=1)
    assert report.rejected == 0
    return G


@contextmanager
def lines_of_at_most(size: int) -> Iterator[None]:
    """Snapshots written inside the block close a line of rows once it holds ``size`` bytes."""
    before = snapshot_writer.LINE_BYTES
    snapshot_writer.LINE_BYTES = size
    try:
        yield
    finally:
        snapshot_writer.LINE_BYTES = before


def pieces(raw: bytes) -> list[dict[str, Any]]:
    """The pieces of a version 5 snapshot's body, each line parsed on its own."""
    head, _, body = raw.partition(b"\n")
    assert orjson.loads(head)["version"] == snapshot_writer.VERSION and body.endswith(b"\n")
    parsed = [orjson.loads(line) for line in body.splitlines()]
    assert all(isinstance(piece, dict) for piece in parsed)
    return parsed


def objects(G: nx.DiGraph) -> tuple[int, int, int]:
    """How many string objects the nodes' values hold (a list's items too), how many strings
    (equal ones once), and how many edge attribute objects: what is shared and what is not."""
    strings = [
        item
        for _, data in G.nodes(data=True)
        for value in data.values()
        for item in (value if isinstance(value, list) else [value])
        if isinstance(item, str)
    ]
    return (
        len({id(item) for item in strings}),
        len(set(strings)),
        len({id(d) for _, _, d in G.edges(data=True)}),
    )


@pytest.mark.parametrize("line_bytes", [snapshot_writer.LINE_BYTES, 4096])
def test_loaded_graphs_read_back_alike_from_version_4_and_version_3(
    loaded: nx.DiGraph, tmp_path: Path, line_bytes: int
) -> None:
    samples, _ = load_graph([SAMPLES])
    for G, indexes in ((samples, {"text": [{"words": ["a", "b"]}]}), (loaded, None)):
        (tmp_path / "v3.snapshot").write_bytes(oracle(G, indexes))
        with lines_of_at_most(line_bytes):
            MemoryStore(G).save_snapshot(tmp_path / "v4.snapshot", indexes)
        written = pieces((tmp_path / "v4.snapshot").read_bytes())
        assert written[-1] == {"indexes": {name: len(found) for name, found in (indexes or {}).items()}}
        three, four = read_snapshot(tmp_path / "v3.snapshot"), read_snapshot(tmp_path / "v4.snapshot")
        assert nx.utils.graphs_equal(four.graph, G) and four.indexes == dict(indexes or {})
        assert nx.utils.graphs_equal(three.graph, G) and three.indexes == four.indexes
        assert objects(four.graph) == objects(three.graph)
    papers = [piece for piece in written if piece.get("nodes") == "Paper"]
    assert (len(papers) > 10) == (line_bytes == 4096)  # the loaded graph's papers: a line, or many
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "v3.snapshot",
        "v4.snapshot",
    ]  # nothing beside


def test_opening_holds_no_whole_body(loaded: nx.DiGraph, tmp_path: Path) -> None:
    """Opening version 3 held the file's bytes, then every group's parsed rows, beside the
    graph it built: 15 MB over the graph here (6 MB; tracemalloc), more the larger the graph.
    Version 4 holds a block of the file (1 MiB), a line (256 KiB) and its parsed rows: 2.6 MB,
    whatever the graph's size."""
    path = tmp_path / "g.snapshot"
    save_snapshot(loaded, path)
    tracemalloc.start()
    opened = read_snapshot(path)
    graph, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert nx.utils.graphs_equal(opened.graph, loaded)
    assert peak - graph < 4_000_000, (peak, graph)


@pytest.mark.parametrize("opening", ["open_snapshot", "open_graph", "MemoryStore.open"])
def test_opening_the_graph_alone_lets_the_indexes_go_as_read(
    loaded: nx.DiGraph, tmp_path: Path, opening: str
) -> None:
    """Opening for the graph alone (to write to, prune, or analyse) keeps no saved index: each
    piece is let go as it is read, where 0.9.8's first format 5 reader kept every piece's parsed
    JSON until the end (56 MB at 95k papers). The pieces are still counted and hashed."""
    path = tmp_path / "g.snapshot"
    index = [{"words": [f"w{n}-{k}" for k in range(200)]} for n in range(400)]  # 400 pieces, ~3 MB
    save_snapshot(loaded, path, {"text": index})
    assert read_snapshot(path).indexes == {"text": index}  # kept when asked for: the test can tell
    open_one = {
        "open_snapshot": open_snapshot,
        "open_graph": open_graph,
        "MemoryStore.open": MemoryStore.open,
    }
    tracemalloc.start()
    opened = open_one[opening](path)
    graph, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert nx.utils.graphs_equal(opened if isinstance(opened, nx.DiGraph) else opened.graph, loaded)
    assert graph - _graph_bytes(loaded, path) < 1_000_000, graph
    assert peak - graph < 4_000_000, (peak, graph)


def _graph_bytes(loaded: nx.DiGraph, path: Path) -> int:
    """What the graph alone holds, opened from a snapshot of no indexes."""
    bare = path.with_name("bare.snapshot")
    save_snapshot(loaded, bare)
    tracemalloc.start()
    opened = read_snapshot(bare)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert opened.indexes == {}
    return held


def _late_rows(raw: bytes) -> int:
    """Where in ``raw`` the last line of rows' first row begins (a digit: its source's index)."""
    return raw.rindex(b'"rows":[[') + len(b'"rows":[[')


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda raw, at: raw[:at] + bytes([raw[at] ^ 1]) + raw[at + 1 :], id="still-json"),
        pytest.param(lambda raw, at: raw[:at] + b"}" + raw[at + 1 :], id="no-longer-json"),
    ],
)
def test_a_body_altered_in_a_later_line_is_refused_nothing_handed_back(
    loaded: nx.DiGraph, tmp_path: Path, damage: Any
) -> None:
    """The lines before it built a graph (and, a digit changed, the altered line too): it is
    not handed back, and what is said is that the body was altered, not what it broke."""
    path = tmp_path / "g.snapshot"
    with lines_of_at_most(4096):
        save_snapshot(loaded, path, {"text": [{"words": ["a"]}]})
    raw = path.read_bytes()
    assert len(pieces(raw)) > 20
    path.write_bytes(damage(raw, _late_rows(raw)))
    for opening in (read_snapshot, MemoryStore.open):
        with pytest.raises(
            UsageError, match=r"the body does not match its SHA-256 \(truncated or altered\)$"
        ):
            opening(path)


@pytest.mark.parametrize("kept", [0, 1, "half", "all but the indexes"])
def test_a_body_cut_between_lines_is_refused(loaded: nx.DiGraph, tmp_path: Path, kept: int | str) -> None:
    """Every line left is whole, and parses: only the body's SHA-256 says the rest is missing."""
    path = tmp_path / "g.snapshot"
    with lines_of_at_most(4096):
        save_snapshot(loaded, path, {"text": [{"words": ["a"]}]})
    head, _, body = path.read_bytes().partition(b"\n")
    lines = body.splitlines(keepends=True)
    count = {"half": len(lines) // 2, "all but the indexes": len(lines) - 1}.get(str(kept), kept)
    path.write_bytes(head + b"\n" + b"".join(lines[: int(count)]))
    with pytest.raises(UsageError, match=r"the body does not match its SHA-256 \(truncated or altered\)$"):
        read_snapshot(path)


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.text(max_size=3),
    st.lists(st.text(max_size=2), max_size=2),
)
#: An edge's values: booleans beside the integers (equal by ``==``: reading back, before 0.9.6,
#: shared an edge's ``False`` with another's ``0``, whichever came first), in lists too.
_EDGE_VALUES = st.one_of(_VALUES, st.lists(st.one_of(st.booleans(), st.integers(0, 1)), max_size=2))
_NAMES = st.sampled_from(["label", "nameKey", "name", "pithNumber", "x", "y"])
_LABELS = st.sampled_from([None, "Author", "Paper", "None", "Thing"])


@st.composite
def odd_graphs(draw: st.DrawFn) -> nx.DiGraph:
    """Graphs whose nodes mostly fit their label's rows and sometimes do not, and whose edges
    (attribute sets shared as a load shares them, or not) mostly fit their type's."""
    G = nx.DiGraph()
    for number in range(draw(st.integers(0, 12))):
        label = draw(_LABELS)
        attributes = {name: draw(_VALUES) for name in draw(st.lists(_NAMES, unique=True, max_size=4))}
        if label is not None:
            attributes[LABEL_ATTRIBUTE] = label
            if label in NODES and draw(st.booleans()):  # the loader's keys and id
                attributes.update(dict.fromkeys(NODES[label].key, f"k{number}"))
                attributes = dict(sorted(attributes.items(), key=lambda item: item[0] != LABEL_ATTRIBUTE))
        name = node_id(label, *(f"k{number}" for key in NODES[label].key)) if label in NODES else f"n{number}"
        G.add_node(name if draw(st.booleans()) else f"odd{number}", **attributes)
    nodes = list(G)
    shared: dict[str, EdgeData] = {}
    for _ in range(draw(st.integers(0, 20)) if nodes else 0):
        source, target = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
        attributes = {
            name: draw(_EDGE_VALUES) for name in draw(st.lists(st.sampled_from(["w", "why"]), unique=True))
        }
        kind = draw(st.sampled_from([None, "AUTHORED", "CITES"]))
        if kind is not None:
            attributes = (
                {TYPE_ATTRIBUTE: kind, **attributes}
                if draw(st.booleans())
                else {**attributes, TYPE_ATTRIBUTE: kind}
            )
        data = EdgeData(attributes) if draw(st.booleans()) else attributes
        if isinstance(data, EdgeData):
            data = shared.setdefault(repr(data), data)
        if not G.has_edge(source, target):
            G.add_edge(source, target)
        G._adj[source][target] = G._pred[target][source] = data  # (as MemoryStore writes an edge)
    return G


@settings(max_examples=300, deadline=None)
@given(odd_graphs(), st.sampled_from([1, 64, snapshot_writer.LINE_BYTES]))
def test_odd_graphs_round_trip_through_version_4_as_through_version_3(G: nx.DiGraph, line_bytes: int) -> None:
    with lines_of_at_most(line_bytes):
        written = b"".join(encode_snapshot(G, {"i": [1]}))
    assert pieces(written)[-1] == {"indexes": {"i": 1}}
    for raw in (written, oracle(G, {"i": [1]})):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "g.snapshot"
            path.write_bytes(raw)
            H = read_snapshot(path).graph
        assert dict(H.nodes(data=True)) == dict(G.nodes(data=True))
        edges = [{(u, v): orjson.dumps(d) for u, v, d in graph.edges(data=True)} for graph in (G, H)]
        assert edges[0] == edges[1]  # (a list in a shared edge's attributes is read back a tuple)


def test_edges_with_equal_values_of_other_types_read_back_each_its_own(tmp_path: Path) -> None:
    """``True`` and ``1`` (and ``[False]``, ``[0]``; ``0.0`` and ``-0.0``) are equal by ``==``: the
    reader shared one edge's attributes with the other's, so the second read the first's values."""
    G = nx.DiGraph()
    values: list[Any] = [True, 1, 1.0, [False], [0], ["x"], 0.0, -0.0, [-0.0]]
    for number, value in enumerate(values):
        G.add_edge(f"a{number}", f"b{number}", type="CITES", w=value)
    save_snapshot(G, tmp_path / "g.snapshot")
    H = open_snapshot(tmp_path / "g.snapshot")
    read = [H.edges[f"a{number}", f"b{number}"]["w"] for number in range(len(values))]
    assert [(type(v), v) for v in read[:6]] == [
        (bool, True),
        (int, 1),
        (float, 1.0),
        (tuple, (False,)),
        (tuple, (0,)),
        (tuple, ("x",)),
    ]
    assert [type(v[0]) for v in read[3:5]] == [bool, int]
    assert [repr(v) for v in read[6:]] == ["0.0", "-0.0", "(-0.0,)"]


def test_saving_holds_no_encoded_body(loaded: nx.DiGraph, tmp_path: Path) -> None:
    """Saving held the whole encoded body and a group's rows: a peak of 2.7 times the file's
    size here (3.4 MB for 1.3). Now the index of the nodes (about 80 bytes a node), the edges'
    ends (24 bytes an edge) and a few rows: 0.58 times."""
    path = tmp_path / "g.snapshot"
    tracemalloc.start()
    save_snapshot(loaded, path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    size = path.stat().st_size
    assert size > 1_000_000
    assert peak < size * 0.75, (peak, size)
    _same = open_snapshot(path)
    assert nx.utils.graphs_equal(_same, loaded)


def test_a_save_that_fails_mid_body_leaves_no_file_and_no_temporary_file(tmp_path: Path) -> None:
    G, _ = load_graph([SAMPLES])
    G.nodes[next(reversed(list(G)))]["bad"] = {1, 2}  # (orjson writes no set): met after rows were spooled
    (tmp_path / "g.snapshot").write_bytes(b"before")
    with pytest.raises(StoreError, match="Type is not JSON serializable: set"):
        save_snapshot(G, tmp_path / "g.snapshot")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["g.snapshot"]
    assert (tmp_path / "g.snapshot").read_bytes() == b"before"


def _rehashed(raw: bytes, edit: Any, *, rehash: bool = True) -> bytes:
    """The version 4 snapshot ``raw`` with its lines (parsed) changed by ``edit``, its header's
    SHA-256 made to match (unless not ``rehash``); a value ``"DEEP"`` becomes 1,000 nested lists."""
    head, _, body = raw.partition(b"\n")
    lines = pieces(raw)
    edit(lines)
    deep = b"[" * 1000 + b'"x"' + b"]" * 1000
    body = b"".join(orjson.dumps(line).replace(b'"DEEP"', deep) + b"\n" for line in lines)
    header = orjson.loads(head)
    if rehash:
        header["sha256"] = hashlib.sha256(body).hexdigest()
    return orjson.dumps(header) + b"\n" + body


def _first(lines: list[dict[str, Any]], key: str) -> dict[str, Any]:
    return next(line for line in lines if key in line and line.get("rows") and line.get("properties"))


def _label_far(lines: list[dict[str, Any]]) -> None:
    _first(lines, "nodes")["at"] = 2**63  # list.insert: OverflowError, before 0.9.7 a crash


def _deep_value(lines: list[dict[str, Any]]) -> None:
    _first(lines, "edges")["rows"][0][2] = "DEEP"  # RecursionError keying the edge's values


def _indexes_first(lines: list[dict[str, Any]]) -> None:
    """A Paper's row again, after the indexes (an index's piece and their counts): it took the
    paper's id unseen, its title too."""
    lines[:0] = [lines.pop(), lines.pop()][::-1]
    papers = next(line for line in lines if line.get("nodes") == "Paper")
    lines.insert(lines.index(papers) + 1, papers | {"rows": papers["rows"][:1]})


def _negative_end(lines: list[dict[str, Any]]) -> None:
    _first(lines, "edges")["rows"][0][1] = -1  # the last node, counted from the end


def _blank_line(lines: list[dict[str, Any]]) -> None:
    lines.insert(1, None)  # "null": not a map


def _piece_after_the_end(lines: list[dict[str, Any]]) -> None:
    lines.append({"index": "text", "piece": {"words": ["b"]}})


def _piece_lost(lines: list[dict[str, Any]]) -> None:
    del lines[-2]  # the index's only piece (its count, 1, kept)


def _pieces_recounted(lines: list[dict[str, Any]]) -> None:
    lines[-1]["indexes"]["text"] = 2


def _no_end(lines: list[dict[str, Any]]) -> None:
    del lines[-1]  # the pieces' counts


def _piece_of_no_name(lines: list[dict[str, Any]]) -> None:
    lines[-2]["index"] = ["text"]


def _rows_naming_an_index(lines: list[dict[str, Any]]) -> None:
    """An Author's row again after the index's piece, its line naming an index too: before 0.9.8
    read as rows after the ids were let go (a review: refused only by the edges' count)."""
    authors = next(line for line in lines if line.get("nodes") == "Author")
    lines.insert(len(lines) - 1, authors | {"rows": authors["rows"][:1], "index": "text"})


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        pytest.param(_label_far, r"line 2: the place of 'label' is not one of 0 to \d+$", id="label-far"),
        pytest.param(_deep_value, r"a malformed body \(RecursionError: ", id="deep-value"),
        pytest.param(_indexes_first, r"line 4: a line of its body after its indexes", id="indexes-first"),
        pytest.param(_negative_end, r"an edge names a node by a negative index", id="negative-end"),
        pytest.param(_blank_line, r"line 3: a line of its body is not a map$", id="not-a-map"),
        pytest.param(
            _piece_after_the_end,
            r"line \d+: a line of its body after its indexes \(the last line\)$",
            id="index-piece-after-the-end",
        ),
        pytest.param(_piece_lost, r"its indexes' pieces do not match their counts", id="index-piece-lost"),
        pytest.param(
            _pieces_recounted, r"its indexes' pieces do not match their counts", id="index-recounted"
        ),
        pytest.param(_no_end, r"its body does not end with its indexes' line$", id="no-indexes-line"),
        pytest.param(_piece_of_no_name, r"line \d+: an index's piece names no index$", id="index-unnamed"),
        pytest.param(
            _rows_naming_an_index, r"line \d+: an index's line holds no piece$", id="rows-naming-an-index"
        ),
    ],
)
def test_a_rehashed_body_of_another_shape_is_refused_with_its_line(
    tmp_path: Path, edit: Any, said: str
) -> None:
    """Each was read before 0.9.7 as a crash (exit 70: OverflowError, RecursionError), a graph
    with a paper's title replaced (a node after the indexes, its id no longer checked) or an
    edge moved to another node (a negative index); now a usage error, said with the file's line
    where it is one line's; altered without its hash made to match, the body was altered."""
    G, _ = load_graph([SAMPLES], workers=1)
    path = tmp_path / "g.snapshot"
    save_snapshot(G, path, {"text": [{"words": ["a"]}]})
    raw = path.read_bytes()
    path.write_bytes(_rehashed(raw, edit))
    for opening in (read_snapshot, MemoryStore.open):
        with pytest.raises(UsageError, match=said):
            opening(path)
    path.write_bytes(_rehashed(raw, edit, rehash=False))
    with pytest.raises(UsageError, match=r"the body does not match its SHA-256 \(truncated or altered\)$"):
        read_snapshot(path)


def test_a_node_link_file_with_a_value_nested_too_deep_is_a_usage_error(tmp_path: Path) -> None:
    """It raised RecursionError out of MemoryStore.open (the CLI's exit 70) before 0.9.7."""
    G, _ = load_graph([SAMPLES], workers=1)
    path = tmp_path / "g.json"
    MemoryStore(G).save(path)
    data = orjson.loads(path.read_bytes())
    data["edges"][0]["w"] = "DEEP"
    path.write_bytes(orjson.dumps(data).replace(b'"DEEP"', b"[" * 1000 + b'"x"' + b"]" * 1000))
    with pytest.raises(UsageError, match="RecursionError"):
        MemoryStore.open(path)
