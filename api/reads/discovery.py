"""What a frontend asks besides lookups: batch lookups, ranked search, facets, author typeahead.

The :class:`DiscoveryReads` methods are part of every
:class:`~pith_graph.api.reads.reader.GraphReader`, answered identically by both readers:

* a :class:`Listing` is a set of papers: a :class:`PaperFilter`, optionally the search words
  every paper holds (each in its title or abstract excerpt), optionally a signer;
* search orders: ``relevance`` is the BM25 score (``api/reads/bm25.py``) descending, then
  ``pithNumber`` ascending; ``newest`` is the papers' usual order (``submittedAt`` then
  ``pithNumber``, descending). Pages start after a :class:`SearchPosition`;
* facets count the papers of a whole listing per value, most first, then by value;
* typeahead: an author matches when each typed key (``api/reads/folding.py``) is a prefix
  of the folded form of some word of their name; most papers first, then by name key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from heapq import nsmallest
from typing import Any, Literal, Protocol

from pith_graph.api.reads.records import AuthorRecord, IdentifierKey, PaperFilter
from pith_graph.schema.rows import PaperRow

__all__ = [
    "EVERY_PAPER",
    "FACETS",
    "DiscoveryReads",
    "Facet",
    "FacetCount",
    "Listing",
    "ScoredPaper",
    "SearchOrder",
    "SearchPage",
    "SearchPosition",
    "top_counts",
]

SearchOrder = Literal["relevance", "newest"]
Facet = Literal["years", "categories", "archives", "licenses", "authors"]
#: Every facet: submission year, category code (primary or cross-list), archive, license
#: URL, author display name.
FACETS: tuple[Facet, ...] = ("years", "categories", "archives", "licenses", "authors")


@dataclass(frozen=True, slots=True)
class Listing:
    """A set of papers: those ``where`` admits that hold every word of ``text`` (in the title
    or the abstract excerpt; words as ``search_terms`` gives them) and that ``signer`` signed
    (with ``signed_bundle``: those whose SIGNED edge from it has that ``signedBundle``)."""

    where: PaperFilter = field(default_factory=PaperFilter)
    text: tuple[str, ...] = ()
    signer: str | None = None
    signed_bundle: bool | None = None


#: The listing of every paper (no filter, no words, no signer): both readers count its facets
#: without reading each paper.
EVERY_PAPER = Listing()


@dataclass(frozen=True, slots=True)
class SearchPosition:
    """A paper's place in a search: its score and key. ``offset`` is how many hits came up to
    and including it when it was handed out; a hint only (pages start strictly after the
    position, wherever it now falls)."""

    score: float
    submitted_at: str
    pith_number: str
    offset: int = 0


@dataclass(frozen=True, slots=True)
class ScoredPaper:
    paper: PaperRow
    score: float


@dataclass(frozen=True, slots=True)
class SearchPage:
    """One page of a search; ``offset`` is the ``after`` position's offset (0 for a first
    page): how many hits came before the page, as far as the cursor knew."""

    items: tuple[ScoredPaper, ...]
    has_next: bool
    offset: int = 0


@dataclass(frozen=True, slots=True)
class FacetCount:
    value: str
    count: int


def top_counts(counts: Mapping[str, int], first: int, numbers: bool = False) -> list[FacetCount]:
    """The ``first`` values with the most papers, then by value: as numbers when ``numbers``
    (years: 999 before 2023, as Neo4j orders its integers), else as strings."""
    order: Callable[[str], Any] = int if numbers else str
    ranked = nsmallest(first, counts.items(), key=lambda item: (-item[1], order(item[0])))
    return [FacetCount(value, count) for value, count in ranked]


class DiscoveryReads(Protocol):
    """The reader methods behind ``papersById``, ``search``, ``facets`` and ``authors``."""

    def papers_by_identifiers(self, keys: Sequence[IdentifierKey]) -> dict[IdentifierKey, list[PaperRow]]:
        """The papers each ``(kind, value)`` names (as ``resolve_identifiers``), newest
        version first, in one read."""

    def search_papers(
        self, listing: Listing, order: SearchOrder, first: int, after: SearchPosition | None
    ) -> SearchPage:
        """A page of ``listing`` (which has search words) in ``order``, each paper with its score."""

    def count_listing(self, listing: Listing) -> int:
        """How many papers ``listing`` holds."""

    def facet_counts(
        self, listing: Listing, facets: Sequence[Facet], first: int
    ) -> dict[Facet, list[FacetCount]]:
        """The ``first`` most frequent values of each facet over the whole listing."""

    def authors_by_prefix(self, keys: Sequence[str], first: int) -> list[AuthorRecord]:
        """Authors whose name has, for every typed key, a word that (folded) starts with it."""
