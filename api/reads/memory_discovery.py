"""The in-memory answers to :class:`~pith_graph.api.reads.discovery.DiscoveryReads`.

A mixin of :class:`~pith_graph.api.reads.memory.MemoryReader`, over the same view and
indexes, plus three of its own built on first use: the BM25 text index
(:class:`~pith_graph.api.reads.text_index.TextIndex`, papers numbered in pith-number order),
the typeahead's sorted (folded word, author rank) pairs, and recent searches' ranked hits.

A listing's papers are filtered, and its facets counted, a slice at a time, the request's
deadline checked between slices (:mod:`~pith_graph.api.reads.deadline`); the rest is single
passes in C over an index, linear in the graph, or builds of an index, done once and kept.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from heapq import nsmallest
from itertools import chain
from typing import TYPE_CHECKING, Any

from pith_graph.api.reads.deadline import Steps
from pith_graph.api.reads.discovery import (
    EVERY_PAPER,
    FACETS,
    Facet,
    FacetCount,
    Listing,
    ScoredPaper,
    SearchOrder,
    SearchPage,
    SearchPosition,
    top_counts,
)
from pith_graph.api.reads.folding import name_keys
from pith_graph.api.reads.memory_view import (
    ARCHIVE,
    CODE,
    LABEL,
    NAME,
    NAME_FOLDED,
    NAME_KEY,
    PITH_NUMBER,
    TYPE,
    Key,
    MemoryGraphView,
)
from pith_graph.api.reads.records import AuthorRecord, PaperFilter
from pith_graph.api.reads.saved_indexes import TEXT, SavedText, papers_digest, read_text, text_pieces
from pith_graph.api.reads.text_index import ANALYSIS, TextIndex
from pith_graph.schema.graph import AUTHOR, IN_CATEGORY, PAPER

__all__ = ["MemoryDiscoveryReads"]

#: Searches whose ranked hits are kept, so paging through one is cheap.
SEARCH_CACHE_SIZE = 64
_TITLE = PAPER.prop("title")
_ABSTRACT = PAPER.prop("abstractExcerpt")
_YEAR = PAPER.prop("submittedYear")
_LICENSE = PAPER.prop("license")
#: Papers filtered (about a microsecond each), or whose facet values are counted (a paper
#: holds at most some 20,000: a bundle's size bounds them), between two looks at the clock.
_KEYS_SLICE = 1024
_FACETS_SLICE = 128
#: The facets of every paper are counted once (:meth:`_corpus_facets`), keeping this many
#: values of each: every author's would cost 10 MB at 238k papers (173k authors, 56 bytes
#: each), and ``first`` is at most 100 unless the limits say otherwise.
CORPUS_KEPT = 1000


class MemoryDiscoveryReads(MemoryGraphView):
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
            ("submitted", self._submitted),
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
        build, with the SHA-256 of the papers it numbers (:mod:`~.saved_indexes`)."""
        index, papers = self._text_index()
        return {TEXT: text_pieces(index, papers)}

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
            submitted = self._submitted()
            keys = sorted((submitted[pith], pith) for pith in self._text_hits(listing.text))
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

    def _submitted(self) -> dict[str, str]:
        """pithNumber -> submittedAt."""
        found: dict[str, str] = self._index("submitted", lambda: {pith: at for at, pith in self._all_keys()})
        return found

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

    # -- facets --------------------------------------------------------------------------

    def _facet_values(self) -> dict[Facet, dict[str, tuple[str, ...]]]:
        """facet -> pithNumber -> the paper's values, for every paper (built once)."""

        def build() -> dict[Facet, dict[str, tuple[str, ...]]]:
            G = self.G
            nodes = G.nodes
            found: dict[Facet, dict[str, tuple[str, ...]]] = {facet: {} for facet in FACETS}
            # Equal value tuples are one object: a year, a license, a category set repeat
            # across thousands of papers (about 60 MB less at 238k papers).
            shared: dict[tuple[str, ...], tuple[str, ...]] = {}
            one = shared.setdefault
            for node, data in self._paper_nodes():
                pith = data[PITH_NUMBER]
                categories = [nodes[c] for c, edge in G.succ[node].items() if edge[TYPE] == IN_CATEGORY.type]
                year = (str(data[_YEAR]),)
                found["years"][pith] = one(year, year)
                license = (data[_LICENSE],)
                found["licenses"][pith] = one(license, license)
                codes = tuple(c[CODE] for c in categories)
                found["categories"][pith] = one(codes, codes)
                archives = tuple(dict.fromkeys(c[ARCHIVE] for c in categories))
                found["archives"][pith] = one(archives, archives)
                found["authors"][pith] = tuple(
                    nodes[a][NAME] for a in G.pred[node] if nodes[a][LABEL] == AUTHOR.label
                )
            return found

        result: dict[Facet, dict[str, tuple[str, ...]]] = self._index("facets", build)
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
                counts = Counter(chain.from_iterable(values[facet].values()))
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
            of = values[facet].__getitem__
            for start in range(0, len(piths), _FACETS_SLICE):
                steps.check()
                found.update(chain.from_iterable(map(of, piths[start : start + _FACETS_SLICE])))
            result[facet] = top_counts(found, first, facet == "years")
        return result

    # -- typeahead -----------------------------------------------------------------------

    def _typeahead(self) -> tuple[list[str], array[int], list[str]]:
        """Sorted folded words, the rank of the author of each, authors by rank."""

        def build() -> tuple[list[str], array[int], list[str]]:
            G = self.G
            authors = sorted(
                (node for node, data in G.nodes(data=True) if data.get(LABEL) == AUTHOR.label),
                key=lambda node: (-G.out_degree(node), G.nodes[node][NAME_KEY]),
            )
            pairs = sorted(
                (key, rank) for rank, node in enumerate(authors) for key in _folded_words(G.nodes[node])
            )
            return [key for key, _ in pairs], array("i", (rank for _, rank in pairs)), authors

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
