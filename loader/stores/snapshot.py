"""A loaded graph saved as a snapshot, and read back several times faster than node-link JSON.

A snapshot is JSON (read with orjson: no code runs, whatever the file holds), laid out for
speed: one header line, then a body holding, per label, the property names once and one row
of values per node (its id follows from its key), and per relationship type, rows of
``[source index, target index, values...]``. Nodes or edges that do not fit that shape are
kept as they are, so any graph a :class:`~pith_graph.loader.stores.memory.MemoryStore` holds
round-trips: its nodes, edges and attributes, not their order (grouped by label and type)
nor the graph's own attributes (``graph.graph``, which a load leaves empty). The header names the format, its version, the counts and the SHA-256 of
the body: a truncated or altered file is refused (:class:`~pith_graph.errors.UsageError`),
never half-read. Edges read back share their attributes, as the store's own do
(:class:`~pith_graph.loader.stores.memory_graph.EdgeData`: equal attribute sets are one
read-only dict).

A snapshot can also carry indexes derived from the graph (``indexes``: plain JSON data
under names its writer chooses, such as the in-memory reader's text index), so that a
restart need not build them again. This module only stores them; whoever reads them checks
they still fit the graph.

A snapshot is *trusted*: reading it verifies no signature (that is its point: a restart
without verifying every bundle again). Keep it where only the loader writes.

>>> import networkx as nx, tempfile, pathlib
>>> G = nx.DiGraph()
>>> G.add_node("Author:ann", label="Author", nameKey="ann", name="Ann")
>>> G.add_node("Paper:p", label="Paper", pithNumber="p")
>>> G.add_edge("Author:ann", "Paper:p", type="AUTHORED")
>>> path = pathlib.Path(tempfile.mkdtemp()) / "graph.snapshot"
>>> save_snapshot(G, path)
>>> H = open_snapshot(path)
>>> nx.utils.graphs_equal(G, H)
True
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import networkx as nx
import orjson

from pith_graph.errors import QUOTED_CHARACTERS, UsageError, printable, quoted, with_article
from pith_graph.loader.stores.files import read_graph_file
from pith_graph.loader.stores.memory_graph import INTERNED, EdgeData, EdgeInterner, put
from pith_graph.loader.stores.node_link import first_repeated
from pith_graph.loader.stores.snapshot_writer import (
    FORMAT,
    VERSION,
    collector_paused,
    encode_snapshot,
    save_snapshot,
)
from pith_graph.schema.graph import AUTHOR, LABEL_ATTRIBUTE, NODES, PAPER, TYPE_ATTRIBUTE

__all__ = [
    "FORMAT",
    "VERSION",
    "Snapshot",
    "encode_snapshot",
    "is_snapshot",
    "open_snapshot",
    "read_snapshot",
    "save_snapshot",
]

#: The versions read (:data:`~.snapshot_writer.VERSION` writes 3; 1 held MultiDiGraph edges with keys,
#: before the graph became a DiGraph; 2 no indexes).
_READS = (2, 3)


class Snapshot(NamedTuple):
    """What a snapshot holds: the graph, and the indexes saved with it (maybe none)."""

    graph: nx.DiGraph
    indexes: dict[str, Any]


_MAGIC = b'{"format":"' + FORMAT.encode()
_FOLDED, _NAME_KEY = AUTHOR.prop("nameFolded"), AUTHOR.prop("nameKey")
_NAME, _AUTHOR_NAMES = AUTHOR.prop("name"), PAPER.prop("authorNames")


def is_snapshot(path: str | Path) -> bool:
    """Whether ``path`` starts like a snapshot (else: node-link JSON, or something else)."""
    return read_graph_file(path, len(_MAGIC)) == _MAGIC


def open_snapshot(path: str | Path) -> nx.DiGraph:
    """The graph saved at ``path``; :class:`UsageError` if it is not an intact snapshot."""
    return read_snapshot(path).graph


def read_snapshot(path: str | Path) -> Snapshot:
    """The graph and indexes saved at ``path``; :class:`UsageError` if it is not an intact
    snapshot (of this version or the one before, which held no indexes).

    The file's bytes are parsed in place (no copy of the body) and dropped before the graph
    is built, and each group's rows once its nodes or edges are in; values that repeat are
    one object each (:data:`~.memory_graph.INTERNED`). At 238k papers, opening peaked at
    3,835 MB for a graph of 2,250, now 2,905 MB for 2,046 (``benchmarks/bench_snapshot_memory.py``)."""
    try:
        snapshot = _build(_parse(Path(path)))
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot open saved graph {path}: {err}") from err
    except (TypeError, KeyError, IndexError, AttributeError) as err:
        raise UsageError(
            f"cannot open saved graph {path}: a malformed body ({type(err).__name__}: {_said(err)})"
        ) from err
    return snapshot


def _said(err: Exception) -> str:
    """What ``err`` says, on one line and quoting at most :data:`QUOTED_CHARACTERS` of a value
    from the file: a KeyError's key is one (a label of 100 KB made an error line of 100 KB)."""
    if isinstance(err, KeyError) and len(err.args) == 1:
        return quoted(err.args[0])
    said = str(err)
    return printable(said) if len(said) <= QUOTED_CHARACTERS else quoted(said)


class _Parsed(NamedTuple):
    header: dict[str, Any]
    data: dict[str, Any]


def _parse(path: Path) -> _Parsed:
    """The header and the parsed body of the snapshot at ``path``, checked against each other."""
    raw = read_graph_file(path)
    end = raw.find(b"\n")
    header = orjson.loads(raw[: end if end >= 0 else len(raw)])
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError("not a pith-graph snapshot")
    if header.get("version") not in _READS:
        raise ValueError(f"snapshot version {quoted(header.get('version'))}, this reads {list(_READS)}")
    body = memoryview(raw)[end + 1 :] if end >= 0 else memoryview(b"")
    if hashlib.sha256(body).hexdigest() != header.get("sha256"):
        raise ValueError("the body does not match its SHA-256 (truncated or altered)")
    with collector_paused():
        data = orjson.loads(body)
    if not isinstance(data, dict):
        raise ValueError("its body is not a map")
    return _Parsed(header, data)


def _build(parsed: _Parsed) -> Snapshot:
    """The graph of a parsed body, written into networkx's own dicts (as MemoryStore does:
    ``add_node``/``add_edge`` check and copy more than a trusted, regular file needs), and
    its indexes; the body's rows are emptied as they are used."""
    header, data = parsed
    with collector_paused():
        indexes = data.get("indexes", {})
        if not isinstance(indexes, dict):
            raise ValueError("its indexes are not a map")
        graph = _fill(nx.DiGraph(), data)
    if (graph.number_of_nodes(), graph.number_of_edges()) != (header.get("nodes"), header.get("edges")):
        raise ValueError("its counts do not match its header")
    return Snapshot(graph, indexes)


def _fill(graph: nx.DiGraph, data: dict[str, Any]) -> nx.DiGraph:
    """``graph`` with the snapshot's nodes and edges, through :func:`memory_graph.put` (the one
    writer of networkx's structures): each node its own attribute dict, equal edge attribute
    sets shared. Raises ValueError for rows that do not fit their columns."""
    ids: list[str] = []
    put(graph, _nodes(data, ids), ())
    if len(ids) != graph.number_of_nodes():
        raise ValueError(f"two nodes share an id: {quoted(first_repeated(ids))}")
    edges = sum(len(group["rows"]) + len(group["other"]) for group in data["edges"].values())
    put(graph, (), _edges(data, ids))
    if edges != graph.number_of_edges():
        raise ValueError("two edges join the same two nodes")
    return graph


def _nodes(data: dict[str, Any], ids: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The snapshot's nodes in their order, each id appended to ``ids`` (which edges name
    their ends by index in), the rows given up as they are made into nodes."""
    _share_spellings(data["nodes"])
    for label, group in data["nodes"].items():
        names: list[str] = group["properties"] or []
        rows = group["rows"]
        if not rows:
            continue
        keys = [names.index(key) for key in NODES[label].key]
        width = len(names)
        if any(len(row) != width for row in rows):
            raise ValueError(f"{with_article(quoted(label))} row does not have {width} values")
        if len(keys) == 1:  # most labels: the id is the label and one key
            prefix, at = label + ":", keys[0]
            made = [prefix + row[at] for row in rows]
        else:
            made = [":".join((label, *(row[at] for at in keys))) for row in rows]
        _intern(rows, names, INTERNED.get(label, ()))
        if label == AUTHOR.label and {_FOLDED, _NAME_KEY} <= set(names):  # as a load shares them
            folded, key = names.index(_FOLDED), names.index(_NAME_KEY)
            for row in rows:
                if row[folded] == row[key]:
                    row[folded] = row[key]
        place = _placer(LABEL_ATTRIBUTE, label, names, group["at"])
        ids += made
        yield from zip(made, map(place, rows), strict=True)
        group["rows"] = rows = []  # their values are the nodes' now
    others = [entry for group in data["nodes"].values() for entry in group["other"]]
    for at, node, attributes in sorted(others, key=lambda entry: int(entry[0])):
        if at != len(ids) or not isinstance(node, str) or not isinstance(attributes, dict):
            raise ValueError("a node out of order, or not an id and a map")
        ids.append(node)
        yield node, attributes


def _edges(data: dict[str, Any], ids: list[str]) -> Iterator[tuple[str, str, EdgeData]]:
    """The snapshot's edges, their ends named by index in ``ids``, equal attribute sets
    shared, the rows given up as they are made into edges."""
    shared = EdgeInterner()
    for kind, group in data["edges"].items():
        names = group["properties"] or []
        rows = group["rows"]
        width = len(names) + 2
        if any(len(row) != width for row in rows):
            raise ValueError(f"{with_article(quoted(kind))} row does not have {width} values")
        place = _placer(TYPE_ATTRIBUTE, kind, names, group["at"])
        plain = shared({TYPE_ATTRIBUTE: kind})
        for row in rows:
            yield ids[row[0]], ids[row[1]], shared(place(row[2:])) if names else plain
        for source, target, attributes in group["other"]:
            if not isinstance(attributes, dict):
                raise ValueError("an edge's attributes are not a map")
            yield ids[source], ids[target], shared(attributes)
        group["rows"] = rows = []


def _share_spellings(groups: dict[str, Any]) -> None:
    """Each paper's ``authorNames`` share their strings with the authors' names, as a load
    makes them (most papers spell an author as it is named), and equal spellings are one
    string: a string per spelling, not per paper naming it. Only a saving: a body of another
    shape is left as it is, to be refused as the reading finds it."""
    try:
        papers, authors = groups.get(PAPER.label), groups.get(AUTHOR.label)
        if not papers or _AUTHOR_NAMES not in (papers["properties"] or []):
            return
        shared: dict[Any, Any] = {}
        if authors and _NAME in (authors["properties"] or []):
            at = authors["properties"].index(_NAME)
            shared = {row[at]: row[at] for row in authors["rows"] if type(row[at]) is str}
        at = papers["properties"].index(_AUTHOR_NAMES)
        for row in papers["rows"]:
            if type(row[at]) is list:
                row[at] = [shared.setdefault(name, name) if type(name) is str else name for name in row[at]]
    except (AttributeError, TypeError, KeyError, IndexError, ValueError):
        return


def _intern(rows: list[list[Any]], names: list[str], interned: Sequence[str]) -> None:
    """One string object per value in the ``interned`` columns of ``rows`` (as MemoryStore
    writes them); a value of another type is left to the type checks."""
    for name in interned:
        if name not in names:
            continue
        at = names.index(name)
        for row in rows:
            value = row[at]
            if type(value) is str:
                row[at] = sys.intern(value)
            elif type(value) is list:
                row[at] = [sys.intern(item) if type(item) is str else item for item in value]


def _placer(name: str, value: str, names: list[str], at: int) -> Any:
    """Attributes from a row of values, with ``name: value`` at its place among them."""
    if at == 0:

        def first(row: list[Any]) -> dict[str, Any]:
            attributes = {name: value}
            attributes.update(zip(names, row, strict=False))
            return attributes

        return first

    def placed(row: list[Any]) -> dict[str, Any]:
        pairs = list(zip(names, row, strict=False))
        pairs.insert(at, (name, value))
        return dict(pairs)

    return placed
