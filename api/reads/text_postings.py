"""A field of the text index built only to be written (:meth:`TextIndex.built_pieces
<pith_graph.api.reads.text_index.TextIndex.built_pieces>`), its postings held in half the
memory of the index a reader searches, and let go as they are written (since 0.9.10).

The documents are taken in blocks of :data:`BLOCK` (65,536): within one, a posting's document
is its offset from the block's first, two bytes (``array('H')``), and its frequency one byte
(``array('B')``, widened to two bytes for a term once a frequency passes 255); each block
keeps its own map of terms. Three bytes a posting where the reader's index holds six
(``array('i')`` documents, ``array('H')`` frequencies): at 100k generated bundles
(95k papers), the abstracts' 5.3 million postings took 32 MB and take 16. Writing
(:meth:`BuiltField.pieces`) yields the very pieces :meth:`_Field.pieces
<pith_graph.api.reads.text_index._Field.pieces>` yields for the same documents, terms in the
order of their first document, each term's blocks joined and dropped as it goes.
"""

from __future__ import annotations

from array import array
from base64 import b64encode
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pith_graph.api.reads.bm25 import encode_norm
from pith_graph.api.reads.words import tokens

__all__ = ["BLOCK", "BuiltField", "FieldCounts", "postings_pieces"]

#: Documents a block numbers from its first (two-byte offsets hold 65,536).
BLOCK = 1 << 16
_BYTE = 0xFF
_FREQ_MOST = 0xFFFF  # (as the reader's index clamps a frequency)

#: A block's postings of a term: documents (offsets in the block) and their frequencies.
_Postings = tuple["array[int]", "array[int]"]


class FieldCounts:
    """A field's norms and statistics, over its documents added in order (0, 1, ...): what
    the reader's field and a field built to be written both keep."""

    def __init__(self) -> None:
        self.norms = bytearray()
        self.doc_count = 0  # documents with at least one word in the field
        self.total_terms = 0

    def counted(self, text: str) -> Counter[str] | None:
        """The words of the next document's ``text``, counted, its norm and the statistics
        taken; None if it has none."""
        words = tokens(text)
        self.norms.append(encode_norm(len(words)))
        if not words:
            return None
        self.doc_count += 1
        self.total_terms += len(words)
        return Counter(words)

    def head(self, number: int, terms: int, postings: int) -> dict[str, Any]:
        """The saved field's head: its statistics, norms, and how many terms and postings follow."""
        return {
            "field": number,
            "docCount": self.doc_count,
            "totalTerms": self.total_terms,
            "norms": b64encode(self.norms).decode("ascii"),
            "terms": terms,
            "postings": postings,
        }


def postings_pieces(
    postings: Iterable[tuple[str, array[int], array[int]]],
    packed: Callable[[list[str], array[int], array[int], array[int]], dict[str, Any]],
    most: tuple[int, int],
) -> Iterator[dict[str, Any]]:
    """Each term's documents and frequencies, in the order given, ``packed`` a piece once
    one holds ``most`` (postings, terms)."""
    most_postings, most_terms = most
    terms: list[str] = []
    counts, docs, freqs = array("I"), array("i"), array("H")
    for term, found_docs, found_freqs in postings:
        terms.append(term)
        counts.append(len(found_docs))
        docs += found_docs
        freqs += found_freqs
        if len(docs) >= most_postings or len(terms) >= most_terms:
            yield packed(terms, counts, docs, freqs)
            terms, counts, docs, freqs = [], array("I"), array("i"), array("H")
    if terms:
        yield packed(terms, counts, docs, freqs)


class BuiltField(FieldCounts):
    """One field's statistics, norms and postings, documents added in order (0, 1, ...)."""

    def __init__(self, block: int = BLOCK) -> None:
        if not 0 < block <= BLOCK:
            raise ValueError(f"a block holds 1 to {BLOCK} documents")
        super().__init__()
        self.block = block
        self.order: dict[str, None] = {}  # every term, in the order of its first document
        self.blocks: list[dict[str, _Postings]] = []
        self.postings = 0

    def add(self, doc: int, text: str) -> None:
        """Add document ``doc`` (the next one) with the field's ``text``."""
        counted = self.counted(text)
        if counted is None:
            return
        number, offset = divmod(doc, self.block)
        while len(self.blocks) <= number:
            self.blocks.append({})
        postings, order = self.blocks[number], self.order
        self.postings += len(counted)
        for term, freq in counted.items():
            found = postings.get(term)
            if found is None:
                found = postings[term] = (array("H"), array("B"))
                order.setdefault(term)
            found[0].append(offset)
            if freq > _BYTE:
                found = self._widened(postings, term, found)
                freq = min(freq, _FREQ_MOST)
            found[1].append(freq)

    @staticmethod
    def _widened(postings: dict[str, _Postings], term: str, found: _Postings) -> _Postings:
        if found[1].typecode == "H":
            return found
        found = postings[term] = (found[0], array("H", found[1]))
        return found

    def _joined(self, term: str) -> tuple[array[int], array[int]]:
        """``term``'s documents and frequencies over every block, taken out of the blocks."""
        docs, freqs = array("i"), array("H")
        for number, postings in enumerate(self.blocks):
            found = postings.pop(term, None)
            if found is None:
                continue
            offsets, counts = found
            start = number * self.block
            docs += array("i", offsets) if not start else array("i", [start + at for at in offsets])
            freqs += counts if counts.typecode == "H" else array("H", counts)
        return docs, freqs

    def pieces(
        self,
        number: int,
        packed: Callable[[list[str], array[int], array[int], array[int]], dict[str, Any]],
        most: tuple[int, int],
    ) -> Iterator[dict[str, Any]]:
        """The field's head, then its postings, ``packed`` about ``most`` (postings, terms) a
        piece, as :meth:`_Field.pieces <pith_graph.api.reads.text_index._Field.pieces>`
        gives them; each term's postings let go once taken."""
        yield self.head(number, len(self.order), self.postings)
        order, self.order = self.order, {}
        yield from postings_pieces(((term, *self._joined(term)) for term in order), packed, most)
        self.blocks.clear()
