"""The in-memory reader's indexes as a snapshot saves them, and read back as they are read.

A snapshot (format version 5, since 0.9.8) saves each index as pieces, a JSON line each,
which its reader hands one at a time to the reader registered for the index's name
(:data:`INDEX_READERS`, given to :func:`~pith_graph.loader.stores.memory.open_saved`). The
text index is the pith numbers' SHA-256 (the papers it numbers, in order), then
:meth:`TextIndex.pieces <pith_graph.api.reads.text_index.TextIndex.pieces>`: each piece's
postings are decoded as they come, so opening never holds the index's JSON beside the index
(at 95k papers, the 51 MB line of version 4 and orjson's parse of it: 0.11 times the graph at
the peak; ``benchmarks/bench_snapshot_memory.py``).

:meth:`MemoryDiscoveryReads.adopt
<pith_graph.api.reads.memory_discovery.MemoryDiscoveryReads.adopt>` takes what was read
(:class:`SavedText`), the pieces themselves (a snapshot read with no reader for them), or a
version 4 snapshot's index, whole (:meth:`TextIndex.from_state
<pith_graph.api.reads.text_index.TextIndex.from_state>`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from pith_graph.api.reads.text_index import TextIndex, TextIndexPieces

__all__ = [
    "INDEX_READERS",
    "TEXT",
    "SavedText",
    "SavedTextReader",
    "papers_digest",
    "read_text",
    "text_pieces",
]

#: The text index's name among a snapshot's indexes.
TEXT = "text"


@dataclass(frozen=True, slots=True)
class SavedText:
    """A saved text index, read: the SHA-256 of the pith numbers it numbers its documents by
    (:func:`papers_digest`), and the index (None: made by another word splitting)."""

    papers: str
    index: TextIndex | None


def papers_digest(papers: Sequence[str]) -> str:
    """The SHA-256 of ``papers`` (pith numbers, in the order an index numbers them) as JSON."""
    return hashlib.sha256(orjson.dumps(list(papers))).hexdigest()


def text_pieces(index: TextIndex, papers: Sequence[str]) -> Iterator[dict[str, Any]]:
    """The pieces ``index`` over ``papers`` is saved as, made as they are written."""
    yield {"papers": papers_digest(papers)}
    yield from index.pieces()


class SavedTextReader:
    """Reads :func:`text_pieces` back a piece at a time (:meth:`add`, then :meth:`done`);
    ValueError for a piece out of its place or one that does not hold together."""

    def __init__(self) -> None:
        self._papers: str | None = None
        self._index = TextIndexPieces()

    def add(self, piece: object) -> None:
        if self._papers is None:
            if not isinstance(piece, dict) or not isinstance(papers := piece.get("papers"), str):
                raise ValueError("the saved text index does not start with its papers' SHA-256")
            self._papers = papers
            return
        self._index.add(piece)

    def done(self) -> SavedText:
        if self._papers is None:
            raise ValueError("the saved text index has no pieces")
        return SavedText(self._papers, self._index.done())


def read_text(pieces: Iterable[object]) -> SavedText:
    """The text index saved as ``pieces`` (as :class:`SavedTextReader` reads them)."""
    reader = SavedTextReader()
    for piece in pieces:
        reader.add(piece)
    return reader.done()


#: The readers of the indexes the memory reader saves, by name, for
#: :func:`~pith_graph.loader.stores.snapshot.read_snapshot`.
INDEX_READERS = {TEXT: SavedTextReader}
