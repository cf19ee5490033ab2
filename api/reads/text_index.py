"""An in-memory inverted index over papers' titles and abstract excerpts, ranked as Neo4j ranks.

It answers the query the Neo4j reader sends to the ``paper_text_fulltext`` index
(:func:`text_query`): every search word is required, in the title (boosted ×2) or in the
abstract excerpt; a paper's score is Lucene's BM25 (:mod:`~pith_graph.api.reads.bm25`)
summed over the fields and words it matches. Statistics are per field, over the documents
that have at least one word in it, exactly as Lucene keeps them.

An index can be saved with a graph (:meth:`TextIndex.pieces`, plain JSON in pieces of a
few postings, since 0.9.8, read back one at a time by :class:`TextIndexPieces`; before,
:meth:`TextIndex.state`, one value, still taken back by :meth:`TextIndex.from_state`: the
postings as little-endian arrays in base64) and taken back instead of
splitting every title and abstract again, which is most of the time a large graph takes to
become ready. A saved index records the :data:`ANALYSIS` it was made with; one made by
another word splitting is not taken back (:class:`ValueError`), nor one whose numbers do
not hold together.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib.resources import files
from typing import Any

from pith_graph.api.reads.bm25 import FieldScorer, avg_field_length, idf
from pith_graph.api.reads.text_postings import BuiltField, FieldCounts, postings_pieces
from pith_graph.api.reads.words import TOKEN_PATTERN, quoted

__all__ = ["ANALYSIS", "FIELDS", "PIECE_POSTINGS", "TextIndex", "TextIndexPieces", "text_query"]

#: The indexed fields (Paper properties) and their boosts.
FIELDS = (("title", 2.0), ("abstractExcerpt", 1.0))

#: What a saved index depends on besides its documents: the saved layout, the fields and
#: the word splitting (its grammar and its table of character classes).
ANALYSIS = hashlib.sha256(
    repr(("text-index/1", FIELDS, TOKEN_PATTERN)).encode()
    + (files("pith_graph.api.reads") / "word_classes.txt").read_bytes()
).hexdigest()[:16]


#: Postings (6 bytes each, 8 in base64) a piece of a saved index holds, about; and terms at most.
PIECE_POSTINGS = 1 << 15
PIECE_TERMS = 1 << 13


def _packed(values: array[int]) -> str:
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def _packed_postings(
    terms: list[str], counts: array[int], docs: array[int], freqs: array[int]
) -> dict[str, Any]:
    """Postings as a saved index holds them: ``terms``, each in ``counts`` documents, their
    ``docs`` and ``freqs`` one term after another (:meth:`_Field.take` reads them back)."""
    return {"terms": terms, "counts": _packed(counts), "docs": _packed(docs), "freqs": _packed(freqs)}


def _unpacked(typecode: str, text: object) -> array[int]:
    if not isinstance(text, str):
        raise ValueError("an array is not a base64 string")
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error as err:
        raise ValueError(f"an array is not base64: {err}") from err
    values = array(typecode)
    if len(raw) % values.itemsize:
        raise ValueError("an array's length is not a whole number of items")
    values.frombytes(raw)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def text_query(terms: Sequence[str]) -> str:
    """The Lucene query for ``terms``: each word required, in either field, title boosted.

    >>> text_query(["graph", "a:b"])
    '+(title:"graph"^2 abstractExcerpt:"graph") +(title:"a:b"^2 abstractExcerpt:"a:b")'
    """
    clauses = []
    for term in terms:
        parts = [f"{field}:{quoted(term)}" + (f"^{boost:g}" if boost != 1 else "") for field, boost in FIELDS]
        clauses.append("+(" + " ".join(parts) + ")")
    return " ".join(clauses)


class _Field(FieldCounts):
    """One field's postings (term -> documents, frequencies), norms and statistics."""

    def __init__(self, boost: float) -> None:
        super().__init__()
        self.boost = boost
        self.postings: dict[str, tuple[array[int], array[int]]] = {}

    def add(self, doc: int, text: str) -> None:
        counted = self.counted(text)
        if counted is None:
            return
        postings = self.postings
        for term, freq in counted.items():
            found = postings.get(term)
            if found is None:
                found = postings[term] = (array("i"), array("H"))
            found[0].append(doc)
            found[1].append(min(freq, 0xFFFF))

    def scores(self, term: str) -> dict[int, float]:
        """Document -> score, for every document holding ``term`` in this field."""
        found = self.postings.get(term)
        if found is None:
            return {}
        docs, freqs = found
        scorer = FieldScorer(
            self.boost, idf(len(docs), self.doc_count), avg_field_length(self.total_terms, self.doc_count)
        )
        norms = self.norms
        score = scorer.score
        return {doc: score(freq, norms[doc]) for doc, freq in zip(docs, freqs, strict=True)}

    def state(self) -> dict[str, Any]:
        terms = list(self.postings)
        docs, freqs = array("i"), array("H")
        for found_docs, found_freqs in self.postings.values():
            docs += found_docs
            freqs += found_freqs
        counts = array("I", (len(found[0]) for found in self.postings.values()))
        return {
            "docCount": self.doc_count,
            "totalTerms": self.total_terms,
            "norms": base64.b64encode(self.norms).decode("ascii"),
        } | _packed_postings(terms, counts, docs, freqs)

    def pieces(self, number: int) -> Iterator[dict[str, Any]]:
        """The field as :meth:`TextIndex.pieces` saves it: its head (statistics, norms, how
        many terms and postings follow), then its postings a few terms at a time."""
        postings = self.postings
        yield self.head(number, len(postings), sum(len(docs) for docs, _ in postings.values()))
        entries = ((term, docs, freqs) for term, (docs, freqs) in postings.items())
        yield from postings_pieces(entries, _packed_postings, (PIECE_POSTINGS, PIECE_TERMS))

    @classmethod
    def from_state(cls, boost: float, size: int, state: dict[str, Any]) -> _Field:
        field = cls.begun(boost, size, state)
        field.take(state["terms"], state["counts"], state["docs"], state["freqs"])
        return field

    @classmethod
    def begun(cls, boost: float, size: int, state: dict[str, Any]) -> _Field:
        """A field of ``size`` documents with the statistics and norms of ``state``, no
        postings yet (:meth:`take` adds them)."""
        field = cls(boost)
        field.doc_count, field.total_terms = state["docCount"], state["totalTerms"]
        field.norms = bytearray(_unpacked("B", state["norms"]).tobytes())
        if not (isinstance(field.doc_count, int) and isinstance(field.total_terms, int)):
            raise ValueError("a field's statistics are not numbers")
        if not (0 <= field.doc_count <= size and field.total_terms >= 0 and len(field.norms) == size):
            raise ValueError("a field's statistics do not fit its documents")
        if field.doc_count != size - field.norms.count(0) or not (
            field.doc_count <= field.total_terms and (field.total_terms == 0) == (field.doc_count == 0)
        ):
            # the documents with a word in the field are those of a norm past 0; each has a word
            raise ValueError("a field's statistics do not match its norms")
        return field

    def take(self, terms: object, packed_counts: object, packed_docs: object, packed_freqs: object) -> int:
        """Add the postings of ``terms`` (``counts`` documents each, their ``docs`` and
        ``freqs`` one after another, packed as :meth:`state` packs them); the number of
        postings added. ValueError if they do not hold together or repeat a term."""
        counts = _unpacked("I", packed_counts)
        docs, freqs = _unpacked("i", packed_docs), _unpacked("H", packed_freqs)
        if not isinstance(terms, list) or not all(isinstance(term, str) for term in terms):
            raise ValueError("a field's terms are not a list of strings")
        if len(counts) != len(terms) or sum(counts) != len(docs) or len(freqs) != len(docs):
            raise ValueError("a field's postings do not add up")
        if counts and max(counts) > self.doc_count:  # (no docCount 0 to divide by in a search)
            raise ValueError("a term is in more documents than have a word in the field")
        if docs and not (min(docs) >= 0 and max(docs) < len(self.norms)):
            raise ValueError("a posting names a document the index does not have")
        at = 0
        postings = self.postings
        before = len(postings)
        for term, count in zip(terms, counts, strict=True):
            postings[term] = (docs[at : at + count], freqs[at : at + count])
            at += count
        if len(postings) != before + len(terms):
            raise ValueError("a field holds a term twice")
        return len(docs)


def _rounded(sums: dict[int, float]) -> dict[int, float]:
    """Each double rounded to float32, in bulk (the cast Lucene's scorers end with)."""
    return dict(zip(sums, array("f", sums.values()).tolist(), strict=True))


class TextIndex:
    """Documents numbered 0, 1, ... in the order given, each a (title, abstract excerpt)."""

    def __init__(self, documents: Iterable[tuple[str, str]]) -> None:
        self.fields = [_Field(boost) for _, boost in FIELDS]
        count = 0
        for doc, texts in enumerate(documents):
            for field, text in zip(self.fields, texts, strict=True):
                field.add(doc, text)
            count += 1
        self.size = count

    def state(self) -> dict[str, Any]:
        """The index as plain JSON data, for :meth:`from_state`."""
        return {"analysis": ANALYSIS, "size": self.size, "fields": [field.state() for field in self.fields]}

    def pieces(self) -> Iterator[dict[str, Any]]:
        """The index as plain JSON data in pieces, for :class:`TextIndexPieces`: a head (the
        :data:`ANALYSIS`, the size), then each field's head and its postings, about
        :data:`PIECE_POSTINGS` a piece, so that neither writing nor reading holds them whole
        in JSON (since 0.9.8)."""
        yield {"analysis": ANALYSIS, "size": self.size}
        for number, field in enumerate(self.fields):
            yield from field.pieces(number)

    @staticmethod
    def built_pieces(size: int, texts: Callable[[int], Iterable[str]]) -> Iterator[dict[str, Any]]:
        """The :meth:`pieces` of the index of ``size`` documents whose texts in the field
        numbered ``n`` (of :data:`FIELDS`) are ``texts(n)``, built as they are written, a field
        at a time, each let go as it is written: saving never holds the whole index (since
        0.9.9), nor a field's postings as :class:`_Field` holds them
        (:class:`~pith_graph.api.reads.text_postings.BuiltField`, since 0.9.10)."""
        yield {"analysis": ANALYSIS, "size": size}
        for number in range(len(FIELDS)):
            field = BuiltField()  # (half the memory of a _Field's postings: since 0.9.10)
            for doc, text in enumerate(texts(number)):
                field.add(doc, text)
            yield from field.pieces(number, _packed_postings, (PIECE_POSTINGS, PIECE_TERMS))
            del field

    @classmethod
    def from_state(cls, state: object) -> TextIndex:
        """The index :meth:`state` described; :class:`ValueError` if it was made by another
        analysis or does not hold together."""
        if not isinstance(state, dict) or state.get("analysis") != ANALYSIS:
            raise ValueError("the text index was made by another word splitting")
        size, fields = state.get("size"), state.get("fields")
        if (
            not isinstance(size, int)
            or size < 0
            or not isinstance(fields, list)
            or len(fields) != len(FIELDS)
        ):
            raise ValueError("the text index has no size or not one entry per field")
        index = cls(())
        try:
            index.fields = [
                _Field.from_state(boost, size, found)
                for (_, boost), found in zip(FIELDS, fields, strict=True)
            ]
        except (KeyError, TypeError) as err:
            raise ValueError(f"a field of the text index lacks {err}") from err
        index.size = size
        return index

    def documents(self, field: int, term: str) -> Sequence[int]:
        """The documents holding ``term`` in the field numbered ``field``, ascending."""
        found = self.fields[field].postings.get(term)
        return () if found is None else found[0]

    def search(self, terms: Sequence[str]) -> dict[int, float]:
        """Every document holding each term in some field, with its score."""
        per_term: list[dict[int, float]] = []
        for term in terms:
            title, abstract = (field.scores(term) for field in self.fields)
            both = {doc: score + abstract[doc] for doc, score in title.items() if doc in abstract}
            matched = {**title, **abstract, **_rounded(both)}
            if not matched:
                return {}
            per_term.append(matched)
        if len(per_term) == 1:
            return per_term[0]
        per_term.sort(key=len)
        first, *others = per_term
        sums = {}
        for doc, score in first.items():
            total = score
            for other in others:
                found = other.get(doc)
                if found is None:
                    break
                total += found  # exact in double: a handful of float32 values of like size
            else:
                sums[doc] = total
        return _rounded(sums)


class TextIndexPieces:
    """A :class:`TextIndex` read back from its :meth:`~TextIndex.pieces` one at a time
    (:meth:`add`; :meth:`done` gives it), each piece's postings decoded as it comes and
    checked as :meth:`TextIndex.from_state` checks them whole: ValueError for a piece out of
    its place, a field whose postings do not add up to its head's counts, or one that does
    not hold together. One made by another :data:`ANALYSIS` is not read: :meth:`done` gives None."""

    def __init__(self) -> None:
        self._index: TextIndex | None = None
        self._other = False  # made by another word splitting: the pieces are passed over
        self._left = (0, 0)  # the field being read: its terms and postings still to come

    def add(self, piece: object) -> None:
        """Decode the next piece."""
        if not isinstance(piece, dict):
            raise ValueError("a piece of the text index is not a map")
        if self._other:
            return
        try:
            self._add(piece)
        except (KeyError, TypeError) as err:
            raise ValueError(f"a piece of the text index lacks {err}") from err

    def _add(self, piece: dict[str, Any]) -> None:
        index = self._index
        if index is None:
            if piece.get("analysis") != ANALYSIS:
                self._other = "analysis" in piece
                if self._other:
                    return
                raise ValueError("the text index does not start with its head")
            size = piece.get("size")
            if not isinstance(size, int) or size < 0:
                raise ValueError("the text index has no size")
            self._index = index = TextIndex(())
            index.fields, index.size = [], size
        elif "field" in piece:
            self._field_done()
            number = len(index.fields)
            if piece["field"] != number or number >= len(FIELDS):
                raise ValueError("a field of the text index out of its place")
            terms, postings = piece["terms"], piece["postings"]
            if not (isinstance(terms, int) and isinstance(postings, int) and terms >= 0 and postings >= 0):
                raise ValueError("a field's counts of terms and postings are not numbers")
            index.fields.append(_Field.begun(FIELDS[number][1], index.size, piece))
            self._left = (terms, postings)
        elif "docs" in piece and index.fields:
            terms = piece["terms"]
            added = index.fields[-1].take(terms, piece["counts"], piece["docs"], piece["freqs"])
            self._left = (self._left[0] - len(terms), self._left[1] - added)
            if min(self._left) < 0:
                raise ValueError("a field holds more terms or postings than its head counts")
        else:
            raise ValueError("a piece of the text index out of its place")

    def _field_done(self) -> None:
        if self._left != (0, 0):
            raise ValueError("a field lacks terms or postings its head counts")

    def done(self) -> TextIndex | None:
        """The index read (None: made by another analysis); ValueError if pieces are missing."""
        if self._other:
            return None
        if self._index is None:
            raise ValueError("the text index has no head")
        self._field_done()
        if len(self._index.fields) != len(FIELDS):
            raise ValueError("the text index has not one entry per field")
        return self._index
