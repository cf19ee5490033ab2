"""A loaded graph saved as a snapshot, and read back several times faster than node-link JSON.

A snapshot is JSON (read with orjson: no code runs, whatever the file holds), laid out for
speed: one header line, then a body holding, per label, the property names once and one row
of values per node (its id follows from its key), and per relationship type, rows of
``[source index, target index, values...]``: since 0.9.7 (versions 4 and 5) a line per piece of
about 256 KiB, read and built one at a time (:mod:`~pith_graph.loader.stores.snapshot_pieces`),
before as one JSON document (version 3, still read). Nodes or edges that do not fit that shape are
kept as they are, so any graph a :class:`~pith_graph.loader.stores.memory.MemoryStore` holds
round-trips: its nodes, edges and attributes, not their order (grouped by label and type)
nor the graph's own attributes (``graph.graph``, which a load leaves empty). The header names the format, its version, the counts and the SHA-256 of
the body: a truncated or altered file is refused (:class:`~pith_graph.errors.UsageError`),
nothing of it handed back. Edges read back share their attributes, as the store's own do
(:class:`~pith_graph.loader.stores.memory_graph.EdgeData`: equal attribute sets are one
read-only dict).

A snapshot can also carry indexes derived from the graph (``indexes``: under names its writer
chooses, such as the in-memory reader's text index), so that a restart need not build them
again. Since 0.9.8 (version 5) each is saved as its pieces, JSON values a line each, and read
back a piece at a time by the reader registered for its name (:class:`~.snapshot_pieces.IndexReader`),
or kept as the list of its pieces; before, as one JSON value. This module only stores them;
whoever reads them checks they hold together and still fit the graph.

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
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, NamedTuple

import networkx as nx
import orjson

from pith_graph.errors import QUOTED_CHARACTERS, UsageError, printable, quoted
from pith_graph.loader.stores.files import read_graph_blocks, read_graph_file
from pith_graph.loader.stores.snapshot_pieces import (
    MALFORMED,
    SKIP_INDEXES,
    Body,
    Built,
    IndexReaders,
    read_pieces,
)
from pith_graph.loader.stores.snapshot_writer import (
    FORMAT,
    VERSION,
    collector_paused,
    encode_snapshot,
    save_snapshot,
)

__all__ = [
    "FORMAT",
    "VERSION",
    "IndexReaders",
    "Snapshot",
    "encode_snapshot",
    "is_snapshot",
    "open_snapshot",
    "read_snapshot",
    "save_snapshot",
]

#: The versions read (:data:`~.snapshot_writer.VERSION` writes 5; 1 held MultiDiGraph edges with keys,
#: before the graph became a DiGraph; 2 no indexes; 3 one JSON document; 4 the indexes one line).
_READS = (2, 3, 4, 5)


class Snapshot(NamedTuple):
    """What a snapshot holds: the graph, and the indexes saved with it (maybe none)."""

    graph: nx.DiGraph
    indexes: dict[str, Any]


_MAGIC = b'{"format":"' + FORMAT.encode()


def is_snapshot(path: str | Path) -> bool:
    """Whether ``path`` starts like a snapshot (else: node-link JSON, or something else)."""
    return read_graph_file(path, len(_MAGIC)) == _MAGIC


def open_snapshot(path: str | Path) -> nx.DiGraph:
    """The graph saved at ``path``; :class:`UsageError` if it is not an intact snapshot."""
    return read_snapshot(path, SKIP_INDEXES).graph


def read_snapshot(path: str | Path, readers: IndexReaders | None = None) -> Snapshot:
    """The graph and indexes saved at ``path``, each index read by ``readers``' reader of its
    name (version 5; an index without one: the list of its pieces; versions 2 to 4: as saved,
    whole); :class:`UsageError` if it is not an intact snapshot of a version this reads.

    Versions 4 and 5 are read a block and a line at a time, each line's rows built into the
    graph (or an index's piece given to its reader) as it is parsed, the body hashed as it
    goes; nothing is handed back before its SHA-256 matched (:mod:`~.snapshot_pieces`). Values
    that repeat are one object each (:data:`~.memory_graph.INTERNED`). At 95k papers (a graph
    of 816 MB), opening peaked at 1,257 MB reading version 3 whole (1.49 times the graph), 915
    MB reading version 4 (1.13 times; ``benchmarks/bench_snapshot_memory.py``); ``serve``
    opening version 5 with its text index peaks at what it then holds (about 1.01 times)."""
    try:
        snapshot = _read(Path(path), {} if readers is None else readers)
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot open saved graph {path}: {err}") from err
    except MALFORMED as err:
        raise UsageError(
            f"cannot open saved graph {path}: a malformed body ({type(err).__name__}: {_said(err)})"
        ) from err
    return snapshot


def _read(path: Path, readers: IndexReaders) -> Snapshot:
    """The snapshot at ``path``: versions 4 and 5 a line at a time, the others whole."""
    with closing(read_graph_blocks(path)) as blocks:
        body = Body(blocks)
        header = _header(body.header())
        if header["version"] >= 4:
            return Snapshot(*read_pieces(header, body, readers))
        del body  # (a block of the file)
    return _build(_parse(path))


def _header(line: bytes | bytearray) -> dict[str, Any]:
    """A snapshot's header line, of a version this reads; ValueError if it is none."""
    header = orjson.loads(line)
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError("not a pith-graph snapshot")
    if header.get("version") not in _READS:
        raise ValueError(f"snapshot version {quoted(header.get('version'))}, this reads {list(_READS)}")
    return header


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
    """The header and the parsed body of the snapshot (version 2 or 3: one JSON document) at
    ``path``, checked against each other. The file's bytes are parsed in place (no copy of
    the body) and dropped before the graph is built."""
    raw = read_graph_file(path)
    end = raw.find(b"\n")
    header = _header(raw[: end if end >= 0 else len(raw)])
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
    ``add_node``/``add_edge`` check and copy more than a trusted, regular file needs), its
    groups given as version 4's pieces (:class:`~.snapshot_pieces.Built`: one reader, one
    set of checks), and its indexes."""
    header, data = parsed
    built = Built(header["version"])
    with collector_paused():
        for piece in _pieces(data):
            built.add(piece)
    return Snapshot(*built.done(header))


def _pieces(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A version 2 or 3 body's groups as version 4's pieces, in the order version 4 holds
    them; each group's rows given up once its nodes or edges are in."""
    for label, group in data["nodes"].items():
        yield {"nodes": label, "properties": group["properties"], "at": group["at"], "rows": group["rows"]}
        group["rows"] = []  # their values are the nodes' now
    others = [entry for group in data["nodes"].values() for entry in group["other"]]
    yield {"other_nodes": sorted(others, key=lambda entry: int(entry[0]))}
    for kind, group in data["edges"].items():
        yield {"edges": kind, "properties": group["properties"], "at": group["at"], "rows": group["rows"]}
        yield {"other_edges": group["other"]}
        group["rows"] = []
    yield {"indexes": data.get("indexes", {})}
