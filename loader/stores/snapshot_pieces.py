"""A snapshot's body read a line at a time (format versions 4 and 5, since 0.9.7): each line a
piece of rows parsed and built into the graph on its own, the whole body hashed as it is read,
and nothing handed back before its SHA-256 matched the header's.

Version 3's body was one JSON document: its reader held the file's bytes and every group's
parsed rows beside the graph it built (at 95k papers, opening peaked at 1.49 times the graph;
``benchmarks/bench_snapshot_memory.py``). Here it holds, beside the graph, a block of the
file, a line (about 256 KiB of rows, :data:`~.snapshot_writer.LINE_BYTES`) and its parsed rows,
and the index of the nodes' ids, let go before the indexes. Version 4 ends with the indexes in
one line, parsed whole (the search index: 51 MB at 95k papers, 1.13 times the graph at the
peak); version 5 (since 0.9.8) saves each index as pieces, a line each, which are handed as
they are read to the :class:`IndexReader` its saver registered for its name (or kept as a list
of JSON values), and ends with their counts: this module knows nothing of what an index holds.
The checks only a whole body allows (ids and edges given twice, the header's counts) are
:meth:`Built.done`'s, for every version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import networkx as nx
import orjson

from pith_graph.errors import quoted
from pith_graph.loader.stores.memory_graph import EdgeInterner, put
from pith_graph.loader.stores.node_link import first_repeated
from pith_graph.loader.stores.snapshot_rows import Spellings, edge_rows, node_rows, other_edges, other_nodes
from pith_graph.loader.stores.snapshot_writer import collector_paused

__all__ = ["MALFORMED", "SKIP_INDEXES", "Body", "Built", "IndexReader", "IndexReaders", "read_pieces"]

#: What a body of another shape than its version's raises, as it is read (an index past what a
#: list holds, 2**63: OverflowError; a value nested some 500 lists deep: RecursionError).
MALFORMED = (TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError)

_ALTERED = "the body does not match its SHA-256 (truncated or altered)"


class Body:
    """A snapshot's bytes, from blocks of its file: its header line, then its body (whole, or
    a line at a time), hashed as it is read."""

    def __init__(self, blocks: Iterator[bytes]) -> None:
        self._blocks = blocks
        self._rest = b""  # the body's bytes read with the header
        self._digest = hashlib.sha256()

    def header(self) -> bytes:
        """The first line, without its newline."""
        pending: list[bytes] = []
        for block in self._blocks:
            end = block.find(b"\n")
            if end >= 0:
                pending.append(block[:end])
                self._rest = block[end + 1 :]
                break
            pending.append(block)
        return b"".join(pending)

    def lines(self) -> Iterator[bytes | bytearray]:
        """The body's lines, without their newlines (the last one, if the body ends without).
        A line longer than a block is gathered in place (the indexes: 51 MB at 95k papers;
        a list of blocks joined held it twice)."""
        pending = bytearray()
        for block in self._body():
            start = 0
            while (end := block.find(b"\n", start)) >= 0:
                if pending:
                    pending += memoryview(block)[start:end]
                    yield pending
                    pending = bytearray()
                else:
                    yield block[start:end]
                start = end + 1
            if start < len(block):
                pending += memoryview(block)[start:]
        if pending:
            yield pending

    def intact(self, sha256: object) -> bool:
        """Whether the body, read to its end (what is left is read now), has the SHA-256 ``sha256``."""
        for _ in self._body():
            pass
        return self._digest.hexdigest() == sha256

    def _body(self) -> Iterator[bytes]:
        if self._rest:
            rest, self._rest = self._rest, b""
            self._digest.update(rest)
            yield rest
        for block in self._blocks:
            self._digest.update(block)
            yield block


class IndexReader(Protocol):
    """Reads a saved index back from its pieces, one at a time, as the body is read (format
    version 5): whoever saved the index registers one for its name
    (:func:`~pith_graph.loader.stores.snapshot.read_snapshot`'s ``readers``). Both methods
    raise ValueError for pieces that do not hold together."""

    def add(self, piece: Any, /) -> None:
        """Take the next piece (a JSON value, parsed)."""

    def done(self) -> object:
        """The index, once its last piece was added."""


#: Makers of :class:`IndexReader`, by the name of the index they read.
IndexReaders = Mapping[str, Callable[[], IndexReader]]


class _Kept:
    """The pieces of an index no reader was registered for, kept as a list of JSON values."""

    def __init__(self) -> None:
        self.pieces: list[Any] = []

    def add(self, piece: Any, /) -> None:
        self.pieces.append(piece)

    def done(self) -> list[Any]:
        return self.pieces


class _Skipped:
    """The pieces of an index that whoever opens the snapshot has no use for, let go as read."""

    def add(self, piece: Any, /) -> None:
        pass

    def done(self) -> None:
        return None


class _SkipEvery(Mapping[str, Callable[[], IndexReader]]):
    def __getitem__(self, name: str) -> Callable[[], IndexReader]:
        return _Skipped

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


#: Readers that let every index's pieces go (each name maps to None): for opening the graph
#: alone, to write to or prune, without holding the saved indexes (56 MB at 95k papers) beside it.
SKIP_INDEXES: IndexReaders = _SkipEvery()


def read_pieces(
    header: dict[str, Any], body: Body, readers: IndexReaders
) -> tuple[nx.DiGraph, dict[str, Any]]:
    """The graph and indexes of a version 4 or 5 ``body`` (each index read by ``readers``' for
    its name, or kept as the list of its pieces); ValueError if its SHA-256 is not
    ``header``'s (then whatever the reading raised is left unsaid: the file was altered) or
    its counts are not, or if it holds rows that do not fit their columns or indexes whose
    pieces do not hold together."""
    built = Built(header["version"], readers)
    number = 1  # the file's line (the header is its first)
    try:
        with collector_paused():
            for line in body.lines():
                number += 1
                built.add(orjson.loads(line))
    except (ValueError, *MALFORMED) as err:
        if not body.intact(header.get("sha256")):
            raise ValueError(_ALTERED) from None
        if isinstance(err, ValueError):  # orjson's place is within the line
            raise ValueError(f"line {number}: {err}") from err
        raise
    if not body.intact(header.get("sha256")):
        raise ValueError(_ALTERED)
    return built.done(header)


class Built:
    """The graph, as its pieces are added (any version's: a version 2 or 3 body's groups
    are given as version 4's pieces), and its indexes; :meth:`done` checks what only the
    whole body tells (every version alike)."""

    def __init__(self, version: int, readers: IndexReaders | None = None) -> None:
        self.graph = nx.DiGraph()
        self.ids: list[str] = []  # the nodes' ids, by their index in the body
        self.edges = 0
        self.indexes: dict[str, Any] = {}
        self._version = version
        self._readers = {} if readers is None else readers
        self._reading: dict[str, IndexReader] = {}  # an index's reader, once its first piece came
        self._pieces: dict[str, int] = {}  # how many pieces each index had
        self._spellings = Spellings()
        self._shared = EdgeInterner()
        self._released = False  # whether the ids and spellings were let go (the rows are in)
        self._ended = False  # whether the indexes' line (the last) was read

    def add(self, piece: Any) -> None:
        """Add a piece's nodes or edges to the graph (or an index's piece to its reader, or
        keep the indexes)."""
        graph, ids = self.graph, self.ids
        if not isinstance(piece, dict):
            raise ValueError("a line of its body is not a map")
        indexes = "indexes" in piece or ("index" in piece and self._version >= 5)
        if self._ended or (self._released and not indexes):
            # ids let go with the rows in: a node read now could take a read one's id unseen
            raise ValueError("a line of its body after its indexes (the last line)")
        if indexes:  # (first: a line of rows naming an index too is not read as rows)
            self._rows_done()
            if "index" in piece and self._version >= 5:  # an index's piece, after the rows
                if "piece" not in piece:
                    raise ValueError("an index's line holds no piece")
                self._index_piece(piece["index"], piece["piece"])
            else:  # the last line: what only the rows needed goes first
                self._ended = True
                self.indexes = self._indexes(piece["indexes"])
        elif "nodes" in piece:
            nodes = node_rows(
                piece["nodes"], piece["properties"], piece["at"], piece["rows"], ids, self._spellings
            )
            put(graph, nodes, ())
        elif "other_nodes" in piece:
            put(graph, other_nodes(piece["other_nodes"], ids), ())
        elif "edges" in piece:
            self.edges += len(rows := piece["rows"])
            put(
                graph,
                (),
                edge_rows(piece["edges"], piece["properties"], piece["at"], rows, ids, self._shared),
            )
        elif "other_edges" in piece:
            self.edges += len(entries := piece["other_edges"])
            put(graph, (), other_edges(entries, ids, self._shared))
        else:
            raise ValueError("a line of its body holds neither nodes, edges nor indexes")

    def _index_piece(self, name: object, value: Any) -> None:
        if not isinstance(name, str):
            raise ValueError("an index's piece names no index")
        if (reader := self._reading.get(name)) is None:
            reader = self._reading[name] = self._readers.get(name, _Kept)()
            self._pieces[name] = 0
        reader.add(value)
        self._pieces[name] += 1

    def _indexes(self, indexes: Any) -> dict[str, Any]:
        """The indexes the last line ends (version 5: counts their pieces) or holds (4)."""
        if not isinstance(indexes, dict):
            raise ValueError("its indexes are not a map")
        if self._version < 5:
            return indexes
        for name in indexes.keys() - self._reading.keys():  # (an index of no pieces)
            self._reading[name], self._pieces[name] = self._readers.get(name, _Kept)(), 0
        if indexes != self._pieces:
            raise ValueError("its indexes' pieces do not match their counts (the last line)")
        return {name: self._reading[name].done() for name in indexes}

    def _rows_done(self) -> None:
        """Share the papers' spellings, check the nodes' ids, and let them go: the indexes
        come once the rows are in."""
        if self._released:
            return
        self._released = True
        self._spellings.done()
        if len(self.ids) != self.graph.number_of_nodes():
            raise ValueError(f"two nodes share an id: {quoted(first_repeated(self.ids))}")
        self.ids = []

    def done(self, header: dict[str, Any]) -> tuple[nx.DiGraph, dict[str, Any]]:
        """The graph and indexes, checked against ``header``'s counts."""
        graph = self.graph
        self._rows_done()
        if self._version >= 5 and not self._ended:
            raise ValueError("its body does not end with its indexes' line")
        if self.edges != graph.number_of_edges():
            raise ValueError("two edges join the same two nodes")
        if (graph.number_of_nodes(), graph.number_of_edges()) != (header.get("nodes"), header.get("edges")):
            raise ValueError("its counts do not match its header")
        return graph, self.indexes
