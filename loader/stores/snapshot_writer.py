"""A snapshot written (:mod:`~pith_graph.loader.stores.snapshot` reads it), its body streamed.

The body (format version 4, since 0.9.7) is lines of JSON, each a piece the reader parses
and builds into the graph on its own: a label's node rows, as many as make about 256 KiB a
line (``{"nodes":label,"properties":[...],"at":n,"rows":[...]}``), then the nodes that fit
no label's rows (``{"other_nodes":[[index,id,attributes],...]}``), then a type's edge rows
(``{"edges":type,...}``) and the edges that fit none (``{"other_edges":[[source,target,
attributes],...]}``), then each index's pieces (``{"index":name,"piece":...}``, version 5,
since 0.9.8: an index is given as an iterable of JSON values, encoded as it is iterated) and
last their counts (``{"indexes":{name:pieces,...}}``; version 4 ended with the indexes whole). It is encoded a few rows at a time
(:func:`~pith_graph.loader.stores.files.listed_json`) and never held whole: its pieces go to
an unnamed temporary file beside the snapshot, hashed as they go, and the file is then the
header line (which holds the body's SHA-256) followed by that file's bytes. Version 3 held
the same rows in one JSON document, which its reader parsed whole.
"""

from __future__ import annotations

import gc
import hashlib
import operator
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple

import networkx as nx
import orjson

from pith_graph.loader.stores.files import json_bytes, listed_json, through_links, write_beside
from pith_graph.loader.stores.memory_graph import EdgeData
from pith_graph.schema.graph import LABEL_ATTRIBUTE, NODES, TYPE_ATTRIBUTE, node_id

__all__ = ["FORMAT", "VERSION", "collector_paused", "encode_snapshot", "save_snapshot"]

FORMAT = "pith-graph-snapshot"
VERSION = 5  # 1: MultiDiGraph edges with keys (before the graph became a DiGraph); 2: no indexes;
# 3: one JSON document (read whole); 4: the indexes one line

#: Bytes of the spooled body read back per piece of the file (256 KiB).
_COPY_BYTES = 1 << 18
#: Bytes of rows a line of the body holds, about (a line is closed after the rows that pass it):
#: 256 KiB of edge rows parse into some 3 MB of lists, held while the line is built.
LINE_BYTES = 1 << 18


def save_snapshot(
    graph: nx.DiGraph, path: str | Path, indexes: Mapping[str, Iterable[Any]] | None = None
) -> None:
    """Write ``graph`` (as a MemoryStore holds it), and any ``indexes`` made from it, to
    ``path``: beside it first, then renamed over it, so a failed write never leaves a
    truncated file nor destroys the one there (:func:`write_beside`)."""
    write_beside(path, encode_snapshot(graph, indexes, beside=path))


def encode_snapshot(
    graph: nx.DiGraph, indexes: Mapping[str, Iterable[Any]] | None = None, *, beside: str | Path | None = None
) -> Iterator[bytes]:
    """The snapshot of ``graph`` (as a MemoryStore holds it) and any ``indexes`` made from
    it, in pieces (the header line, then the body's), which joined are the file; nothing is
    encoded until the first piece is asked for.

    The body is spooled to an unnamed temporary file (``O_TMPFILE``, or made and unlinked at
    once: never seen, gone when closed, whatever fails; its indexes, made first, to a second
    one) in the folder of the file ``beside``
    will be written to (the system's temporary folder without one), while its SHA-256 is
    computed, then read back 256 KiB at a time: saving holds, beside the graph, its nodes'
    places (4 bytes a node), a map of the nodes edges point to and a few rows, never the
    encoded body nor (since 0.9.9) a map of every node or the edges' ends, and leaves the
    graph's strings as they were (:func:`_row`). ``load --snapshot`` of 100k bundles (95k
    papers) peaked at 937–938 MB in 0.9.8, 818–819 MB in 0.9.9, 760–761 MB since 0.9.10
    (``benchmarks/bench_load_snapshot.py``; a plain load, 741–742 MB); the file the same bytes."""
    folder = None if beside is None else through_links(Path(beside)).parent
    with tempfile.TemporaryFile(dir=folder) as spool, tempfile.TemporaryFile(dir=folder) as last:
        digest = hashlib.sha256()
        with collector_paused():
            # the indexes first, to a spool of their own (the file has them last): what building
            # one holds is let go before the graph's rows are made (since 0.9.10)
            for piece in _index_lines(indexes):
                last.write(piece)
            for piece in _body(graph):
                digest.update(piece)
                spool.write(piece)
            last.seek(0)
            while piece := last.read(_COPY_BYTES):
                digest.update(piece)
                spool.write(piece)
        header = {
            "format": FORMAT,
            "version": VERSION,
            "nodes": graph.number_of_nodes(),
            "edges": graph.number_of_edges(),
            "sha256": digest.hexdigest(),
        }
        yield orjson.dumps(header) + b"\n"
        spool.seek(0)
        while piece := spool.read(_COPY_BYTES):
            yield piece


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside the block (as it was, after): opening or saving
    makes millions of objects, none in a cycle, and each collection would walk the graph again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _node_id(label: str, data: dict[str, Any]) -> str | None:
    spec = NODES.get(label)
    if spec is None or not all(isinstance(data.get(key), str) for key in spec.key):
        return None
    return node_id(label, *(data[key] for key in spec.key))


class _Group(NamedTuple):
    """The shape of a label's node rows (or a type's edge rows) in the body: the property
    names (but the label or type) of the first, and the label's place among them."""

    properties: list[str]
    at: int


def _body(graph: nx.DiGraph) -> Iterator[bytes]:
    """The body's JSON but its indexes (:func:`_index_lines`), a few rows at a time."""
    labels: dict[str, _Group] = {}  # label -> the shape of its nodes' rows
    numbers: dict[str, int] = {}  # label -> its group's number (its place in labels)
    sizes: list[int] = []  # a group's number -> how many nodes fit its rows
    irregular: list[str] = []  # nodes stored as they are, in their order
    places = array("i")  # a node's place among its group's (in the graph's order), then in the file
    groups = array("i")  # a node's group (-1: irregular), in the graph's order
    nodes: dict[str, dict[str, Any]] = graph._node  # (networkx's own: NodeView's lookups cost more)
    for node, data in nodes.items():
        label = data.get(LABEL_ATTRIBUTE)
        names = [key for key in data if key != LABEL_ATTRIBUTE]
        at = list(data).index(LABEL_ATTRIBUTE) if label is not None else -1
        if (group := labels.get(name := str(label))) is None:
            group = labels[name] = _Group(names, at)
            numbers[name] = len(numbers)
            sizes.append(0)
        if (
            label is not None
            and names == group.properties
            and at == group.at
            and _node_id(name, data) == node
        ):
            number = numbers[name]
            places.append(sizes[number])
            sizes[number] += 1
        else:
            number = -1
            places.append(len(irregular))
            irregular.append(node)
        groups.append(number)
    # Places in the order open_snapshot meets the nodes: every label's rows, then the rest.
    starts = list(accumulate(sizes, initial=0))
    for at, number in enumerate(groups):
        places[at] += starts[number]  # (-1: the irregular ones, after every label's rows)
    del numbers, sizes
    for number, (label, group) in enumerate(labels.items()):  # a pass over the nodes each (since
        # 0.9.10: no list of a label's nodes, 8 bytes a node)
        names, mine = group.properties, (node for node, of in zip(nodes, groups, strict=True) if of == number)
        rows = (_row(data, names) for data in map(nodes.__getitem__, mine))
        yield from _lines(_opening(b"nodes", label, group) + b',"rows":[', rows)
    del groups
    others = ([starts[-1] + at, node, nodes[node]] for at, node in enumerate(irregular))
    yield from _lines(b'{"other_nodes":[', others)
    del labels, irregular
    ends = _Ends(graph, places)
    shapes: dict[int, _EdgeShape] = {}  # id of a shared EdgeData -> its shape
    for wanted, first_data in ends.kinds().items():  # one kind's rows at a time, a pass each
        first = shapes.get(id(first_data)) or _shape(shapes, first_data)
        group = _Group(first.names, first.at)
        apart = array("q")  # the places (among the kind's edges) of those kept as they are
        fitting = _edge_rows(group, ends.edges(wanted), shapes, apart)
        yield from _lines(_opening(b"edges", wanted, group) + b',"rows":[', fitting)
        yield from _lines(b'{"other_edges":[', _apart(ends.edges(wanted), apart))
    del ends


def _index_lines(indexes: Mapping[str, Iterable[Any]] | None) -> Iterator[bytes]:
    """The body's last lines: each index's pieces, then how many each has."""
    counts: dict[str, int] = {}
    for name, pieces in (indexes or {}).items():
        if isinstance(pieces, Mapping | str | bytes):
            raise TypeError(f"the index {name!r} is not given as its pieces")
        counts[name] = 0
        opening = b'{"index":' + orjson.dumps(name) + b',"piece":'
        for piece in pieces:
            yield opening + json_bytes(piece) + b"}\n"
            counts[name] += 1
    yield b'{"indexes":' + orjson.dumps(counts) + b"}\n"


def _row(data: dict[str, Any], names: list[str]) -> list[Any]:
    """A node's row: its values of ``names``, each string beyond ASCII (and each in a list)
    a copy. orjson keeps a string's UTF-8 in the string (CPython's cache, as long as it
    lives): encoding the graph's own would grow it for good (at 30k bundles, 12 MB of
    abstracts); a copy's goes with the copy, once its line is written."""
    row = [data[name] for name in names]
    for at, value in enumerate(row):
        if value.__class__ is str:
            if not value.isascii():
                row[at] = "".join((value, ""))
        elif value.__class__ is list:
            row[at] = [
                "".join((item, "")) if item.__class__ is str and not item.isascii() else item
                for item in value
            ]
    return row


class _Ends:
    """The graph's edges with their ends' places in the file, a kind at a time, a pass over
    the graph's adjacency each: the nodes' places (4 bytes a node, in the graph's order, which
    networkx's adjacency dicts share) and a map of the nodes some edge points to, rather than
    a map of every node and the edges' ends gathered per kind (at 95k papers, some 100 MB)."""

    def __init__(self, graph: nx.DiGraph, places: array[int]) -> None:
        nodes, self._adj, pred = graph._node, graph._adj, graph._pred
        self._sources: Callable[[], Iterable[int]]
        if _aligned(nodes, self._adj) and _aligned(nodes, pred):
            ends = zip(pred, places, pred.values(), strict=True)
            self.targets = {node: place for node, place, sources in ends if sources}
            self._sources = lambda: places
        else:  # (a graph whose dicts were filled apart: every node's place by its id)
            self.targets = every = dict(zip(nodes, places, strict=True))
            self._sources = lambda: map(every.__getitem__, self._adj)

    def kinds(self) -> dict[str, Mapping[str, Any]]:
        """Each kind of edge (its type, as a string) with its first edge's attributes, in the
        order of their first edges."""
        kinds: dict[str, Mapping[str, Any]] = {}
        for out in self._adj.values():
            for data in out.values():
                if (kind := str(data.get(TYPE_ATTRIBUTE))) not in kinds:
                    kinds[kind] = data
        return kinds

    def edges(self, kind: str) -> Iterator[tuple[int, int, Mapping[str, Any]]]:
        """The edges of ``kind``, in the graph's order: their ends' places and attributes."""
        targets = self.targets
        for source, out in zip(self._sources(), self._adj.values(), strict=True):
            for target, data in out.items():
                if str(data.get(TYPE_ATTRIBUTE)) == kind:
                    yield source, targets[target], data


def _aligned(nodes: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Whether ``other`` holds the keys of ``nodes`` in the same order."""
    return len(nodes) == len(other) and all(map(operator.eq, nodes, other))


def _edge_rows(
    group: _Group,
    edges: Iterator[tuple[int, int, Mapping[str, Any]]],
    shapes: dict[int, _EdgeShape],
    apart: array[int],
) -> Iterator[list[Any]]:
    """The rows of a type's edges that fit ``group``'s shape; the places of the others
    appended to ``apart``."""
    for at, (source, target, data) in enumerate(edges):
        kind, names, place, values = shapes.get(id(data)) or _shape(shapes, data)
        if kind is not None and names == group.properties and place == group.at:
            yield [source, target, *values]
        else:
            apart.append(at)


def _apart(edges: Iterator[tuple[int, int, Mapping[str, Any]]], apart: array[int]) -> Iterator[list[Any]]:
    """The edges at the places ``apart`` holds (once the rows are spent), as they are."""
    if not apart:
        return
    wanted = iter(apart)
    next_at = next(wanted)
    for at, (source, target, data) in enumerate(edges):
        if at == next_at:
            yield [source, target, dict(data)]
            if (next_at := next(wanted, -1)) < 0:
                return


def _opening(key: bytes, name: str, group: _Group) -> bytes:
    """A rows line's opening, ``{"key":name,"properties":[...],"at":n``."""
    return (
        b'{"'
        + key
        + b'":'
        + orjson.dumps(name)
        + b',"properties":'
        + json_bytes(group.properties)
        + b',"at":'
        + orjson.dumps(group.at)
    )


def _lines(opening: bytes, items: Iterator[list[Any]]) -> Iterator[bytes]:
    """``items`` as lines ``opening item,item...]}``, each closed once its items pass
    :data:`LINE_BYTES`; no line without an item. Each item is encoded as deep in a list as
    it lies there (:func:`listed_json`)."""
    size = -1  # -1: no line open
    for piece in listed_json(items):
        if piece == b",":
            if size < LINE_BYTES:
                yield piece
                continue
            yield b"]}\n"
            size = -1
            continue
        if size < 0:
            yield opening
            size = 0
        yield piece
        size += len(piece)
    if size >= 0:
        yield b"]}\n"


class _EdgeShape(NamedTuple):
    kind: Any
    names: list[str]  # its properties but the type, in order
    at: int  # the type's place among them (-1: no type)
    values: tuple[Any, ...]


def _shape(shapes: dict[int, _EdgeShape], data: Mapping[str, Any]) -> _EdgeShape:
    """``data``'s shape, kept in ``shapes`` for a shared :class:`EdgeData` (one per equal set)."""
    kind = data.get(TYPE_ATTRIBUTE)
    names = [name for name in data if name != TYPE_ATTRIBUTE]
    at = list(data).index(TYPE_ATTRIBUTE) if kind is not None else -1
    shape = _EdgeShape(kind, names, at, tuple(data[name] for name in names))
    if isinstance(data, EdgeData):
        shapes[id(data)] = shape
    return shape
