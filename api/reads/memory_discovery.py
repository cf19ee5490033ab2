"""The in-memory answers to :class:`~pith_graph.api.reads.discovery.DiscoveryReads`.

A mixin of :class:`~pith_graph.api.reads.memory.MemoryReader`, over the same view and
indexes, plus three of its own built on first use: the BM25 text index
(:class:`~pith_graph.api.reads.text_index.TextIndex`, papers numbered in pith-number order;
its title postings also answer ``titleTerms`` filters, since 0.9.9), the typeahead's sorted
(folded word, author rank) pairs, and recent searches' ranked hits; facets are
:class:`~pith_graph.api.reads.memory_facets.MemoryFacets`'.

A listing's papers are filtered a slice at a time, the request's
deadline checked between slices (:mod:`~pith_graph.api.reads.deadline`); the rest is single
passes in C over an index, linear in the graph, or builds of an index, done once and kept.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from heapq import nsmallest
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from pith_graph.api.reads.deadline import Steps
from pith_graph.api.reads.discovery import (
    Listing,
    ScoredPaper,
    SearchOrder,
    SearchPage,
    SearchPosition,
)
from pith_graph.api.reads.folding import name_keys
from pith_graph.api.reads.memory_facets import MemoryFacets
from pith_graph.api.reads.memory_view import (
    LABEL,
    NAME_FOLDED,
    NAME_KEY,
    PITH_NUMBER,
    Key,
)
from pith_graph.api.reads.records import AuthorRecord, PaperFilter
from pith_graph.api.reads.saved_indexes import TEXT, SavedText, papers_digest, read_text, text_pieces
from pith_graph.api.reads.text_index import ANALYSIS, TextIndex
from pith_graph.schema.graph import AUTHOR, PAPER

__all__ = ["MemoryDiscoveryReads"]

#: Searches whose ranked hits are kept, so paging through one is cheap.
SEARCH_CACHE_SIZE = 64
_TITLE = PAPER.prop("title")
_ABSTRACT = PAPER.prop("abstractExcerpt")
_LICENSE = PAPER.prop("license")
#: Papers filtered (about a microsecond each) between two looks at the clock.
_KEYS_SLICE = 1024


class MemoryDiscoveryReads(MemoryFacets):
    """Batch lookups, ranked search, facets and typeahead over the networkx graph."""

    if TYPE_CHECKING:  # provided by MemoryListings

        def _candidates(self, where: PaperFilter) -> list[Key]: ...
        def _predicate(self, where: PaperFilter) -> Callable[[Key], bool] | None: ...
        def _in_categories(self, codes: tuple[str, ...], inside: bool = True) -> Callable[[Key], bool]: ...

    def refresh(self) -> None:
        super().refresh()
        self._searches: OrderedDict[Any, Any] = OrderedDict()

    def warm_steps(self) -> list[tuple[str, Callable[[], object]]]:
        """The search, typeahead and facet indexes, as named steps (seconds on a large graph:
        about 10 s at 100k papers), which :meth:`warm` builds now so that no request pays."""
        return [
            ("text index", self._text_index),
            ("typeahead", self._typeahead),
            ("paper keys", self._paper_keys),
            ("facet values", self._facet_values),
            ("corpus facets", self._corpus_facets),
        ]

    def warm(self) -> None:
        for _, step in self.warm_steps():
            step()

    # -- listings ------------------------------------------------------------------------

    def saved_indexes(self) -> dict[str, Iterator[dict[str, Any]]]:
        """The indexes worth saving with the graph, each as its pieces of plain JSON data
        (made as they are written; for :meth:`adopt`): the text index, which takes longest to
        build, with the SHA-256 of the papers it numbers (:mod:`~.saved_indexes`). One not
        built yet is built as it is written, a field at a time, and not kept (since 0.9.9:
        a snapshot's writer asks for it once the graph is written, which it then does not
        hold beside the graph's own index)."""
        built = self._indexes.get("text")
        if built is not None:
            return {TEXT: text_pieces(*built)}
        return {TEXT: self._text_pieces()}

    def _text_pieces(self) -> Iterator[dict[str, Any]]:
        """:func:`~.saved_indexes.text_pieces` of the text index :meth:`_text_index` would
        build, built when first asked for (:meth:`TextIndex.built_pieces`)."""
        papers = sorted((data for _, data in self._paper_nodes()), key=itemgetter(PITH_NUMBER))
        yield {"papers": papers_digest([data[PITH_NUMBER] for data in papers])}
        fields = (_TITLE, _ABSTRACT)
        yield from TextIndex.built_pieces(len(papers), lambda n: map(itemgetter(fields[n]), papers))

    def adopt(self, saved: Mapping[str, Any]) -> bool:
        """Take indexes :meth:`saved_indexes` made from *this* graph, instead of building
        them: read as a snapshot is read (:data:`~.saved_indexes.INDEX_READERS`), as their
        pieces, or as a version 4 snapshot held them. False, taking nothing, if they were made
        by another version's word splitting or for other papers; :class:`ValueError` if they
        do not hold together.

        The caller vouches that the graph has not changed since: a saved index is checked
        against the graph's papers, not against every title and abstract."""
        found = saved.get(TEXT)
        if isinstance(found, dict):  # a version 4 snapshot's
            return self._adopt_whole(found)
        if not isinstance(found, SavedText | Iterable) or isinstance(found, str | bytes):
            return False  # (a version 4 snapshot's of another shape: built again, as 0.9.7 did)
        read = found if isinstance(found, SavedText) else read_text(found)
        papers = self._text_papers()
        if read.index is None or read.papers != papers_digest(papers):
            return False
        if read.index.size != len(papers):
            raise ValueError("the saved text index does not number every paper")
        self._indexes["text"] = (read.index, papers)
        return True

    def _adopt_whole(self, found: dict[str, Any]) -> bool:
        """As :meth:`adopt`, a text index saved whole (format version 4)."""
        if found.get("papers") != self._text_papers():
            return False
        state = found.get("index")
        if not isinstance(state, dict) or state.get("analysis") != ANALYSIS:
            return False
        index = TextIndex.from_state(state)
        if index.size != len(found["papers"]):
            raise ValueError("the saved text index does not number every paper")
        self._indexes["text"] = (index, found["papers"])
        return True

    def _text_papers(self) -> list[str]:
        return sorted(data[PITH_NUMBER] for _, data in self._paper_nodes())

    def _text_index(self) -> tuple[TextIndex, list[str]]:
        def build() -> tuple[TextIndex, list[str]]:
            papers = sorted(self._paper_nodes(), key=lambda item: item[1][PITH_NUMBER])
            index = TextIndex((data[_TITLE], data[_ABSTRACT]) for _, data in papers)
            return index, [data[PITH_NUMBER] for _, data in papers]

        result: tuple[TextIndex, list[str]] = self._index("text", build)
        return result

    def _cached(self, key: Any, build: Callable[[], Any]) -> Any:
        cache = self._searches
        found = cache.get(key)
        if found is None:
            found = cache[key] = build()
            if len(cache) > SEARCH_CACHE_SIZE:
                cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        return found

    def _text_hits(self, terms: tuple[str, ...]) -> dict[str, float]:
        """Pith number -> score of every paper holding each term (title or abstract)."""

        def build() -> dict[str, float]:
            index, piths = self._text_index()
            return {piths[doc]: score for doc, score in index.search(terms).items()}

        found: dict[str, float] = self._cached(("hits", terms), build)
        return found

    def _admits(self, listing: Listing) -> Callable[[Key], bool] | None:
        """Every condition of the listing besides its search words (None: nothing)."""
        where = listing.where
        pools: list[list[Key]] = []
        if where.title_terms:
            pools.append(self._title_keys(where.title_terms))
        if where.author is not None:
            pools.append(self._author_keys(where.author))
        pools += [self._author_keys(key) for key in where.all_authors]
        if where.category is not None:
            pools.append(self._category_keys(where.category))
        if where.archive is not None:
            pools.append(self._archive_keys(where.archive))
        if listing.signer is not None:
            pools.append(self._signer_keys(listing.signer, listing.signed_bundle))
        sets: list[Collection[str]] = [{pith for _, pith in pool} for pool in sorted(pools, key=len)]
        if where.latest_versions:
            sets.append(self._latest())
        edges = [self._in_categories(where.categories)] if where.categories else []
        if where.exclude_categories:
            edges.append(self._in_categories(where.exclude_categories, inside=False))
        start, before, license = where.submitted_from, where.submitted_before, where.license
        if not sets and not edges and (start, before, license) == (None, None, None):
            return None
        nodes = self.G.nodes

        def admits(key: Key) -> bool:
            at, pith = key
            if (start is not None and at < start) or (before is not None and at >= before):
                return False
            if not all(pith in members for members in sets):
                return False
            if not all(edge(key) for edge in edges):
                return False
            return license is None or nodes[f"{PAPER.label}:{pith}"][_LICENSE] == license

        return admits

    def _members(self, listing: Listing) -> list[Key]:
        """The listing's papers as ascending (submittedAt, pithNumber) keys."""
        if listing.text:
            paper_keys = self._paper_keys()
            keys = sorted(paper_keys[pith] for pith in self._text_hits(listing.text))
            keep = self._admits(listing)
        elif listing.signer is not None:
            keys, keep = self._signer_keys(listing.signer, listing.signed_bundle), self._admits(listing)
        else:
            keys, keep = self._candidates(listing.where), self._predicate(listing.where)
        if keep is None:
            return keys
        steps = Steps()
        kept: list[Key] = []
        for start in range(0, len(keys), _KEYS_SLICE):
            steps.check()
            kept += filter(keep, keys[start : start + _KEYS_SLICE])
        return kept

    def count_listing(self, listing: Listing) -> int:
        return len(self._members(listing))

    # -- search --------------------------------------------------------------------------

    def _ranked(self, listing: Listing) -> list[tuple[float, str]]:
        """The listing's hits as ascending (-score, pithNumber): best first."""

        def build() -> list[tuple[float, str]]:
            hits = self._text_hits(listing.text)
            if listing == Listing(text=listing.text):  # nothing but the words: every hit
                return sorted((-score, pith) for pith, score in hits.items())
            return sorted((-hits[pith], pith) for _, pith in self._members(listing))

        found: list[tuple[float, str]] = self._cached(("ranked", listing), build)
        return found

    def search_papers(
        self, listing: Listing, order: SearchOrder, first: int, after: SearchPosition | None
    ) -> SearchPage:
        hits = self._text_hits(listing.text)
        if order == "relevance":
            ranked = self._ranked(listing)
            start = 0 if after is None else bisect_right(ranked, (-after.score, after.pith_number))
            piths = [pith for _, pith in ranked[start : start + first + 1]]
        else:
            keys: list[Key] = self._cached(("newest", listing), lambda: self._members(listing))
            end = len(keys) if after is None else bisect_left(keys, (after.submitted_at, after.pith_number))
            piths = [pith for _, pith in reversed(keys[max(0, end - first - 1) : end])]
        items = tuple(ScoredPaper(self._paper(pith), hits[pith]) for pith in piths[:first])  # type: ignore[arg-type]
        return SearchPage(items, len(piths) > first, after.offset if after is not None else 0)

    # -- typeahead -----------------------------------------------------------------------

    def _typeahead(self) -> tuple[list[str], array[int], list[str]]:
        """Sorted folded words, the rank of the author of each, authors by rank. Equal words
        are one string (since 0.9.9: a first name or a surname is many authors' word)."""

        def build() -> tuple[list[str], array[int], list[str]]:
            G = self.G
            authors = sorted(
                (node for node, data in G.nodes(data=True) if data.get(LABEL) == AUTHOR.label),
                key=lambda node: (-G.out_degree(node), G.nodes[node][NAME_KEY]),
            )
            shared: dict[str, str] = {}
            one = shared.setdefault
            words, ranks = [], array("i")
            for rank, node in enumerate(authors):
                for word in _folded_words(G.nodes[node]):
                    words.append(one(word, word))
                    ranks.append(rank)
            # a stable sort by word leaves the ranks of a word ascending: (word, rank) order
            order = sorted(range(len(words)), key=words.__getitem__)
            return [words[at] for at in order], array("i", map(ranks.__getitem__, order)), authors

        result: tuple[list[str], array[int], list[str]] = self._index("typeahead", build)
        return result

    def authors_by_prefix(self, keys: Sequence[str], first: int) -> list[AuthorRecord]:
        if not keys or first == 0:
            return []
        words, ranks, authors = self._typeahead()
        matches: list[set[int]] = []
        for key in dict.fromkeys(keys):
            start = bisect_left(words, key)
            end = bisect_right(words, key + "\U0010ffff", lo=start)
            matches.append(set(ranks[start:end]))
        matches.sort(key=len)
        found = matches[0].intersection(*matches[1:])
        return [self._author(authors[rank]) for rank in nsmallest(first, found)]


def _folded_words(author: dict[str, Any]) -> Iterable[str]:
    """An author's folded words: the stored ``nameFolded`` (the loader folded them), or folded
    here, from its key as the loader folds them, for a graph saved before it existed."""
    folded = author.get(NAME_FOLDED)
    if folded is None:
        return name_keys(author[NAME_KEY])
    return folded.split(" ") if folded else ()
