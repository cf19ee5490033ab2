"""An in-memory inverted index over papers' titles and abstract excerpts, ranked as Neo4j ranks.

It answers the query the Neo4j reader sends to the ``paper_text_fulltext`` index
(:func:`text_query`): every search word is required, in the title (boosted ×2) or in the
abstract excerpt; a paper's score is Lucene's BM25 (:mod:`~pith_graph.api.reads.bm25`)
summed over the fields and words it matches. Statistics are per field, over the documents
that have at least one word in it, exactly as Lucene keeps them.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Sequence

from pith_graph.api.reads.bm25 import FieldScorer, avg_field_length, encode_norm, idf
from pith_graph.api.reads.words import quoted, tokens

__all__ = ["FIELDS", "TextIndex", "text_query"]

#: The indexed fields (Paper properties) and their boosts.
FIELDS = (("title", 2.0), ("abstractExcerpt", 1.0))


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


class _Field:
    """One field's postings (term -> documents, frequencies), norms and statistics."""

    def __init__(self, boost: float) -> None:
        self.boost = boost
        self.postings: dict[str, tuple[array[int], array[int]]] = {}
        self.norms = bytearray()
        self.doc_count = 0  # documents with at least one word in the field
        self.total_terms = 0

    def add(self, doc: int, text: str) -> None:
        words = tokens(text)
        self.norms.append(encode_norm(len(words)))
        if not words:
            return
        self.doc_count += 1
        self.total_terms += len(words)
        postings = self.postings
        for term, freq in Counter(words).items():
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
