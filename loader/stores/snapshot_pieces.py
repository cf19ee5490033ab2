"""A snapshot's body read a line at a time (format version 4, since 0.9.7): each line a piece
of rows parsed and built into the graph on its own, the whole body hashed as it is read, and
nothing handed back before its SHA-256 matched the header's.

Version 3's body was one JSON document: its reader held the file's bytes and every group's
parsed rows beside the graph it built (at 95k papers, opening peaked at 1.49 times the graph;
``benchmarks/bench_snapshot_memory.py``). Here it holds, beside the graph, a block of the
file, a line (about 256 KiB of rows, :data:`~.snapshot_writer.LINE_BYTES`) and its parsed rows,
and the index of the nodes' ids, let go before the indexes' line: the largest (the search
index, 51 MB at 95k papers), which orjson parses whole (1.13 times the graph at its peak).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import networkx as nx
import orjson

from pith_graph.errors import quoted
from pith_graph.loader.stores.memory_graph import EdgeInterner, put
from pith_graph.loader.stores.node_link import first_repeated
from pith_graph.loader.stores.snapshot_rows import Spellings, edge_rows, node_rows, other_edges, other_nodes
from pith_graph.loader.stores.snapshot_writer import collector_paused

__all__ = ["MALFORMED", "Body", "read_pieces"]

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


def read_pieces(header: dict[str, Any], body: Body) -> tuple[nx.DiGraph, dict[str, Any]]:
    """The graph and indexes of a version 4 ``body``; ValueError if its SHA-256 is not
    ``header``'s (then whatever the reading raised is left unsaid: the file was altered) or
    its counts are not, or if it holds rows that do not fit their columns."""
    built = _Built()
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


class _Built:
    """The graph, as its pieces are added."""

    def __init__(self) -> None:
        self.graph = nx.DiGraph()
        self.ids: list[str] = []  # the nodes' ids, by their index in the body
        self.edges = 0
        self.indexes: dict[str, Any] = {}
        self._spellings = Spellings()
        self._shared = EdgeInterner()
        self._released = False  # whether the ids and spellings were let go (the rows are in)

    def add(self, piece: Any) -> None:
        """Add a piece's nodes or edges to the graph (or keep its indexes)."""
        graph, ids = self.graph, self.ids
        if self._released:  # ids let go: a node read now could take a read one's id unseen
            raise ValueError("a line of its body after its indexes (the last line)")
        if not isinstance(piece, dict):
            raise ValueError("a line of its body is not a map")
        if "nodes" in piece:
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
        elif "indexes" in piece:  # the last line: what only the rows needed goes first
            self._rows_done()
            if not isinstance(indexes := piece["indexes"], dict):
                raise ValueError("its indexes are not a map")
            self.indexes = indexes
        else:
            raise ValueError("a line of its body holds neither nodes, edges nor indexes")

    def _rows_done(self) -> None:
        """Share the papers' spellings, check the nodes' ids, and let them go: the indexes'
        line is the largest (51 MB at 95k papers), read once the rows are in."""
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
        if self.edges != graph.number_of_edges():
            raise ValueError("two edges join the same two nodes")
        if (graph.number_of_nodes(), graph.number_of_edges()) != (header.get("nodes"), header.get("edges")):
            raise ValueError("its counts do not match its header")
        return graph, self.indexes
