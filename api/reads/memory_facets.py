"""The in-memory reader's facets: each paper's facet values, kept, and their counts over a
listing or over every paper.

A mixin of :class:`~pith_graph.api.reads.memory_discovery.MemoryDiscoveryReads`. Each paper's
values are built once (:class:`FacetValues`): its years, licenses, categories and archives
as one tuple of tuples shared by every paper alike (a year, a license, a set of categories
repeat across thousands of papers), its authors' names as a tuple of its own. A listing's
facets are counted a slice of papers at a time, the request's deadline checked between
slices (:mod:`~pith_graph.api.reads.deadline`); the whole corpus's are counted once and kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING

from pith_graph.api.reads.deadline import Steps
from pith_graph.api.reads.discovery import EVERY_PAPER, FACETS, Facet, FacetCount, Listing, top_counts
from pith_graph.api.reads.memory_view import (
    ARCHIVE,
    CODE,
    LABEL,
    NAME,
    PITH_NUMBER,
    TYPE,
    Key,
    MemoryGraphView,
)
from pith_graph.schema.graph import AUTHOR, IN_CATEGORY, PAPER

__all__ = ["CORPUS_KEPT", "SHARED_FACETS", "FacetValues", "MemoryFacets"]

_YEAR = PAPER.prop("submittedYear")
_LICENSE = PAPER.prop("license")
#: Papers whose facet values are counted (a paper holds at most some 20,000: a bundle's size
#: bounds them) between two looks at the clock.
_FACETS_SLICE = 128
#: The facets of every paper are counted once (:meth:`MemoryFacets._corpus_facets`), keeping
#: this many values of each: every author's would cost 10 MB at 238k papers (173k authors, 56
#: bytes each), and ``first`` is at most 100 unless the limits say otherwise.
CORPUS_KEPT = 1000
#: The facets whose values :attr:`FacetValues.shared` holds, in the order of its tuples.
SHARED_FACETS: tuple[Facet, ...] = ("years", "licenses", "categories", "archives")

#: A paper's values of one facet.
Values = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FacetValues:
    """Every paper's facet values, by pith number: ``shared`` its values of
    :data:`SHARED_FACETS`, one tuple (of one tuple a facet) for all papers of equal values;
    ``authors`` its authors' names (since 0.9.9: before, a map a facet, 13 MB more at 95k papers)."""

    shared: dict[str, tuple[Values, ...]]
    authors: dict[str, Values]

    def of(self, facet: Facet) -> Callable[[Iterable[str]], Iterable[Values]]:
        """The values of ``facet`` of each of some papers (pith numbers), in their order."""
        if facet == "authors":
            authors = self.authors.__getitem__
            return lambda piths: map(authors, piths)
        at, shared = itemgetter(SHARED_FACETS.index(facet)), self.shared.__getitem__
        return lambda piths: map(at, map(shared, piths))

    def every(self, facet: Facet) -> Iterable[Values]:
        """The values of ``facet`` of every paper."""
        if facet == "authors":
            return self.authors.values()
        return map(itemgetter(SHARED_FACETS.index(facet)), self.shared.values())


class MemoryFacets(MemoryGraphView):
    """Facet counts over the networkx graph."""

    if TYPE_CHECKING:  # provided by MemoryDiscoveryReads

        def _members(self, listing: Listing) -> list[Key]: ...

    def _facet_values(self) -> FacetValues:
        """Every paper's facet values (built once)."""

        def build() -> FacetValues:
            G = self.G
            nodes = G.nodes
            # Equal value tuples are one object, and so are equal tuples of them.
            shared: dict[tuple[str, ...], tuple[str, ...]] = {}
            rows: dict[tuple[Values, ...], tuple[Values, ...]] = {}
            one, row = shared.setdefault, rows.setdefault
            found = FacetValues({}, {})
            for node, data in self._paper_nodes():
                pith = data[PITH_NUMBER]
                categories = [nodes[c] for c, edge in G.succ[node].items() if edge[TYPE] == IN_CATEGORY.type]
                year, license = (str(data[_YEAR]),), (data[_LICENSE],)
                codes = tuple(c[CODE] for c in categories)
                archives = tuple(dict.fromkeys(c[ARCHIVE] for c in categories))
                values = tuple(one(value, value) for value in (year, license, codes, archives))
                found.shared[pith] = row(values, values)
                found.authors[pith] = tuple(
                    nodes[a][NAME] for a in G.pred[node] if nodes[a][LABEL] == AUTHOR.label
                )
            return found

        result: FacetValues = self._index("facets", build)
        return result

    def _corpus_facets(self) -> dict[Facet, tuple[list[FacetCount], bool]]:
        """facet -> its :data:`CORPUS_KEPT` values with the most papers of all, most first,
        then by value, and whether those are all its values (built once, from
        :meth:`_facet_values`: 0.7 s at 238k papers, where counting the whole corpus's
        facets took 0.8 s every time; the facets of the whole corpus are then a slice)."""

        def build() -> dict[Facet, tuple[list[FacetCount], bool]]:
            values = self._facet_values()
            found = {}
            for facet in FACETS:
                counts = Counter(chain.from_iterable(values.every(facet)))
                found[facet] = (top_counts(counts, CORPUS_KEPT, facet == "years"), len(counts) <= CORPUS_KEPT)
            return found

        result: dict[Facet, tuple[list[FacetCount], bool]] = self._index("corpus facets", build)
        return result

    def facet_counts(
        self, listing: Listing, facets: Sequence[Facet], first: int
    ) -> dict[Facet, list[FacetCount]]:
        if listing != EVERY_PAPER:
            return self._listing_facets(listing, facets, first)
        first = max(first, 0)
        kept = self._corpus_facets()
        wanted = list(dict.fromkeys(facets))
        # Asked for more values than are kept: counted paper by paper.
        beyond = [facet for facet in wanted if not kept[facet][1] and first > len(kept[facet][0])]
        counted = self._listing_facets(listing, beyond, first) if beyond else {}
        return {facet: counted[facet] if facet in counted else kept[facet][0][:first] for facet in wanted}

    def _listing_facets(
        self, listing: Listing, facets: Sequence[Facet], first: int
    ) -> dict[Facet, list[FacetCount]]:
        """The facets of ``listing`` counted paper by paper (any listing)."""
        piths = [pith for _, pith in self._members(listing)]
        values = self._facet_values()
        steps = Steps()
        result = {}
        for facet in dict.fromkeys(facets):
            found: Counter[str] = Counter()
            of = values.of(facet)
            for start in range(0, len(piths), _FACETS_SLICE):
                steps.check()
                found.update(chain.from_iterable(of(piths[start : start + _FACETS_SLICE])))
            result[facet] = top_counts(found, first, facet == "years")
        return result
