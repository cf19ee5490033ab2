"""The in-memory reader's listings: ``papers(filter:)`` and its count, pages of ascending
key lists walked back (newest first) or forwards (``oldest``). A filter's candidates are the key list of its most selective condition (title
words, then author (of several required, the one with fewest papers), category, categories,
archive; else every paper); the other conditions
are checked on each key as the page is walked back from its cursor.

``categories`` of several codes start from the union of their key lists, merged (each is
kept, if a category of the graph) and kept for the last :data:`RECENT_KEPT` sets of codes asked; as a check, and for
``excludeCategories``, a paper is looked up in a set of the codes' papers, made per request
from their kept lists (as a check of ``category`` or ``author`` is)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from heapq import merge
from itertools import groupby

from pith_graph.api.reads.memory_view import Key, MemoryGraphView
from pith_graph.api.reads.recent import RECENT_KEPT, Recent
from pith_graph.api.reads.records import (
    EVERYTHING,
    ListingOrder,
    Page,
    PaperFilter,
    PaperKey,
    PaperSelection,
)

__all__ = ["MemoryListings"]


def _member(keys: Iterable[Key], inside: bool = True) -> Callable[[Key], bool]:
    """Whether a paper is one of ``keys`` (``inside``) or none of them, by a set of their
    pith numbers."""
    pool = {pith for _, pith in keys}
    if inside:
        return lambda key: key[1] in pool
    return lambda key: key[1] not in pool


class MemoryListings(MemoryGraphView):
    """Pages and counts of ``papers(filter:)`` over the networkx graph."""

    def refresh(self) -> None:
        super().refresh()
        self._unions: Recent[list[Key]] = Recent(RECENT_KEPT)

    def _any_category_keys(self, codes: tuple[str, ...]) -> list[Key]:
        """The ascending keys of the papers listed in any of ``codes``."""
        if len(codes) == 1:
            return self._category_keys(codes[0])

        def union() -> list[Key]:
            merged = merge(*(self._category_keys(code) for code in codes))
            return [key for key, _ in groupby(merged)]

        return self._unions.get_or_make("\x00".join(codes), union)

    def _in_categories(self, codes: tuple[str, ...], inside: bool = True) -> Callable[[Key], bool]:
        """Whether a paper is listed in any of ``codes`` (``inside``) or in none of them: a set
        of their papers, made from their kept lists (a paper's category edges, looked up per
        paper, took 4–5 µs a paper: 88 ms to count 19k papers against 2 codes)."""
        return _member((key for code in codes for key in self._category_keys(code)), inside)

    def _rarest_first(self, name_keys: tuple[str, ...]) -> list[list[Key]]:
        """The key lists of the authors ``name_keys`` (``allAuthors``), fewest papers first."""
        return sorted((self._author_keys(key) for key in name_keys), key=len)

    def _candidates(self, where: PaperFilter) -> list[Key]:
        if where.title_terms:
            return self._title_keys(where.title_terms)
        if where.all_authors:
            return self._rarest_first(where.all_authors)[0]
        if where.author is not None:
            return self._author_keys(where.author)
        if where.category is not None:
            return self._category_keys(where.category)
        if where.categories:
            return self._any_category_keys(where.categories)
        if where.archive is not None:
            return self._archive_keys(where.archive)
        return self._all_keys()

    def _predicate(self, where: PaperFilter) -> Callable[[Key], bool] | None:
        """The checks the candidate list does not already guarantee (None: nothing)."""
        checks: list[Callable[[Key], bool]] = []
        anchored = False

        if where.title_terms:
            anchored = True
        if where.all_authors:
            lists = self._rarest_first(where.all_authors)
            checks += [_member(keys) for keys in (lists if anchored else lists[1:])]
            anchored = True
        if where.author is not None:
            if anchored:
                checks.append(_member(self._author_keys(where.author)))
            anchored = True
        if where.category is not None:
            if anchored:
                checks.append(_member(self._category_keys(where.category)))
            anchored = True
        if where.categories:
            if anchored:
                checks.append(self._in_categories(where.categories))
            anchored = True
        if where.exclude_categories:
            checks.append(self._in_categories(where.exclude_categories, inside=False))
        if where.archive is not None and anchored:
            checks.append(_member(self._archive_keys(where.archive)))
        if where.latest_versions:
            latest = self._latest()
            checks.append(lambda key: key[1] in latest)
        if (where.submitted_from, where.submitted_before, where.license) != (None, None, None):
            checks.append(lambda key: where.admits(self._paper(key[1])))  # type: ignore[arg-type]
        if not checks:
            return None
        return lambda key: all(check(key) for check in checks)

    def _page(
        self,
        keys: list[Key],
        first: int,
        after: PaperKey | None,
        keep: Callable[[Key], bool] | None,
        order: ListingOrder = "newest",
    ) -> Page:
        if order == "oldest":
            return self._oldest_page(keys, first, after, keep)
        start = len(keys) if after is None else bisect_left(keys, (after.submitted_at, after.pith_number))
        if keep is None:  # the page is a slice
            low = max(0, start - first - 1)
            picked = keys[low:start]
            picked.reverse()
            return Page(tuple(self._papers_of(picked[:first])), len(picked) > first)
        found: list[Key] = []
        index = start - 1
        while index >= 0 and len(found) <= first:
            key = keys[index]
            if keep(key):
                found.append(key)
            index -= 1
        return Page(tuple(self._papers_of(found[:first])), len(found) > first)

    def _oldest_page(
        self, keys: list[Key], first: int, after: PaperKey | None, keep: Callable[[Key], bool] | None
    ) -> Page:
        """:meth:`_page` oldest first: the ascending keys walked forwards, from past ``after``."""
        start = 0 if after is None else bisect_right(keys, (after.submitted_at, after.pith_number))
        if keep is None:
            picked = keys[start : start + first + 1]
        else:
            picked = []
            for index in range(start, len(keys)):
                if len(picked) > first:
                    break
                if keep(keys[index]):
                    picked.append(keys[index])
        return Page(tuple(self._papers_of(picked[:first])), len(picked) > first)

    def list_papers(
        self,
        where: PaperFilter,
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        order: ListingOrder = "newest",
    ) -> Page:
        return self._page(self._candidates(where), first, after, self._predicate(where), order)

    def count_papers(self, where: PaperFilter) -> int:
        keys = self._candidates(where)
        keep = self._predicate(where)
        return len(keys) if keep is None else sum(1 for key in keys if keep(key))
