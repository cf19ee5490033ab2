"""Lucene 9's BM25 (``BM25Similarity``), float for float, as Neo4j's full-text index scores.

Java computes every step in 32-bit floats; :func:`f32` rounds each step the same way (a
float32 operation on float32 operands, done in double and rounded once, is exactly the
float32 result), so the in-memory reader's scores equal Neo4j's bit for bit:

* ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))`` in double, then rounded: ``N`` the documents
  with at least one word in the field, ``n`` those holding the term;
* ``avgdl = sumTotalTermFreq / N`` for the field, in double, then rounded;
* a field's length is stored lossily: :func:`encode_norm` is ``SmallFloat.intToByte4``
  (exact up to 40 words, then 4 significant bits), and the length used is the decoded one;
* ``score = w - w / (1 + freq * 1 / (k1 * (1 - b + b * dl / avgdl)))`` with ``w = boost *
  idf``, ``k1 = 1.2``, ``b = 0.75`` — Lucene's rewrite of ``w * freq / (freq + k1 * (...))``;
* clauses of a boolean query add up in double and are rounded once per boolean query
  (:func:`add`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable

__all__ = ["K1", "B", "FieldScorer", "add", "avg_field_length", "encode_norm", "f32", "idf"]

_FLOAT = struct.Struct("f")


def f32(value: float) -> float:
    """``value`` rounded to the nearest 32-bit float (as Java's ``(float)``)."""
    result: float = _FLOAT.unpack(_FLOAT.pack(value))[0]
    return result


K1 = f32(1.2)
B = f32(0.75)


def _long_to_int4(value: int) -> int:
    bits = value.bit_length()
    if bits < 4:
        return value
    shift = bits - 4
    return ((value >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(value: int) -> int:
    bits = value & 0x07
    shift = (value >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_NUM_FREE_VALUES = 255 - _long_to_int4(2**31 - 1)


def encode_norm(length: int) -> int:
    """``SmallFloat.intToByte4(length)`` as an unsigned byte: a field's length, lossily.

    >>> [encode_norm(n) for n in (0, 1, 39, 40, 41, 42, 1000)]
    [0, 1, 39, 40, 40, 41, 87]
    """
    if length < _NUM_FREE_VALUES:
        return length
    return _NUM_FREE_VALUES + _long_to_int4(length - _NUM_FREE_VALUES)


def _decode_norm(byte: int) -> int:
    if byte < _NUM_FREE_VALUES:
        return byte
    return _NUM_FREE_VALUES + _int4_to_long(byte - _NUM_FREE_VALUES)


#: The field length each norm byte stands for, as the float Lucene divides.
_LENGTHS = [f32(float(_decode_norm(byte))) for byte in range(256)]


def idf(doc_freq: int, doc_count: int) -> float:
    """Lucene's BM25 idf for a term in ``doc_freq`` of ``doc_count`` documents."""
    return f32(math.log(1 + (doc_count - doc_freq + 0.5) / (doc_freq + 0.5)))


def avg_field_length(sum_total_term_freq: int, doc_count: int) -> float:
    """The field's average length (words per document that has the field)."""
    return f32(sum_total_term_freq / doc_count)


class FieldScorer:
    """Scores one term in one field: ``score(freq, norm)`` for a document holding the term
    ``freq`` times in a field whose norm byte is ``norm``. Memoised: a field has few
    distinct (freq, norm) pairs."""

    def __init__(self, boost: float, term_idf: float, avgdl: float) -> None:
        self.weight = f32(boost * term_idf)
        one_minus_b = f32(1 - B)
        self._inverse = [
            f32(1 / f32(K1 * f32(one_minus_b + f32(f32(B * length) / avgdl)))) for length in _LENGTHS
        ]
        self._memo: dict[tuple[int, int], float] = {}

    def score(self, freq: int, norm: int) -> float:
        found = self._memo.get((freq, norm))
        if found is None:
            weight = self.weight
            found = f32(weight - f32(weight / f32(1 + f32(freq * self._inverse[norm]))))
            self._memo[(freq, norm)] = found
        return found


def add(scores: Iterable[float]) -> float:
    """The score of a boolean query from its matching clauses' scores: summed in double,
    rounded to float once (Lucene's ``DisjunctionSumScorer``, ``ConjunctionScorer``)."""
    return f32(math.fsum(scores))
