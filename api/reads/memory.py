"""The :class:`~pith_graph.api.reads.reader.GraphReader` over the in-memory networkx graph.

Reads go straight to the graph where an adjacency answers them (a paper's authors, an
alias's papers); the rest uses small indexes built on first use and kept: the newest-first
key lists (all papers, per category, author, archive and signer), title words, short pith
numbers, each arXiv id's versions by version, the papers of each alias naming several
(newest version first), per-category rankings, and the sorted authors, categories, aliases
and signers of papers with many (kept sorted lists: the first ``first`` of a paper's list
is a slice, however long the list; nothing is sorted per read but the short lists of
papers with few).
A load or removal by pith-graph into the graph has its readers forget their indexes
(:mod:`~pith_graph.loader.stores.memory_watchers`); a script changing it with networkx's own
calls calls :meth:`MemoryReader.refresh` (:meth:`MemoryReader.warm` builds the indexes ahead
of the first request).

Selections are honoured for counts (an uncounted record's ``paper_count`` is ``None``);
papers always carry every property (the records are built once and kept, so leaving some
out would cost more than it saves), and relation hints are ignored: a later call is as cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from itertools import islice

from pith_graph.api.reads.author_page import author_order, author_page
from pith_graph.api.reads.memory_discovery import MemoryDiscoveryReads
from pith_graph.api.reads.memory_listings import MemoryListings
from pith_graph.api.reads.memory_rankings import MemoryRankings
from pith_graph.api.reads.memory_view import (
    EVENT_TYPES,
    KEPT_OVER,
    KEY_IDS,
    KIND,
    LABEL,
    PITH_NUMBER,
    PRIMARY,
    SIGNED_BUNDLE,
    VALUE,
    source_key,
)
from pith_graph.api.reads.records import (
    EVERYTHING,
    NO_RANKS,
    AliasRecord,
    AuthorPage,
    AuthorRecord,
    CategoryLink,
    CategoryRecord,
    IdentifierKey,
    ListingOrder,
    NameFormRecord,
    Page,
    PaperKey,
    PaperSelection,
    SignatureRecord,
    SignerRanks,
    SignerRecord,
    of_best_signer,
    version_key,
)
from pith_graph.errors import StoreError
from pith_graph.schema.graph import ALIAS, AUTHOR, CATEGORY, PAPER, SIGNER, node_id
from pith_graph.schema.rows import PaperRow

__all__ = ["MemoryReader"]

AUTHOR_NAMES = PAPER.prop("authorNames")
NAME_FORMS, NAME_FORM_COUNTS = AUTHOR.prop("nameForms"), AUTHOR.prop("nameFormCounts")


class MemoryReader(MemoryRankings, MemoryListings, MemoryDiscoveryReads):
    """Batched reads over a ``DiGraph`` written by :class:`~pith_graph.loader.stores.memory.MemoryStore`."""

    def ping(self) -> None:
        """Always ready."""

    def holds_transaction(self) -> bool:
        """Never: no transactions."""
        return False

    def close(self) -> None:
        """Nothing to release."""

    def for_request(self, *, bridged: bool = False, unreachable: StoreError | None = None) -> MemoryReader:
        """Itself: reads need no transaction, and every call is as cheap as a cached one."""
        return self

    def unreachable(self) -> StoreError | None:
        """Never: nothing to reach."""
        return None

    async def aclose(self) -> None:
        """Nothing was opened."""

    def sole_statement(self, method: str) -> AbstractContextManager[None]:
        """Nothing to save: no transactions."""
        return nullcontext()

    def warm_steps(self) -> list[tuple[str, Callable[[], object]]]:
        """The indexes the first requests would otherwise build, as named steps (all papers
        newest first, short pith numbers, versions, the papers of aliases naming several
        newest version first, title words, each category's papers, the sorted authors,
        categories, aliases and signers of papers with many (over :data:`KEPT_OVER` edges on a
        side: the authors at most every author edge twice), then the search, typeahead and
        facet indexes: about 10 s at 100k papers). :meth:`warm` runs them all;
        ``benchmarks/bench_serve_memory.py`` measures each."""

        def named() -> None:
            for alias, data in self._nodes.items():
                if data.get(LABEL) == ALIAS.label and len(self._succ[alias]) > 1:
                    self._named(data[KIND], data[VALUE])

        def categories() -> None:
            for category in self.all_categories(counts=False):
                self._category_keys(category.code)

        def kept() -> None:
            for paper, _ in self._paper_nodes():
                if len(self._pred[paper]) > KEPT_OVER:
                    self._sorted_authors(paper, True)
                    self._sorted_authors(paper, False)
                    self._links(paper, "aliases")
                    self._links(paper, "signatures")
                if len(self._succ[paper]) > KEPT_OVER:
                    self._links(paper, "categories")

        return [
            ("all keys", self._all_keys),
            ("short pith numbers", lambda: self._short("")),
            ("versions", self._versions),
            ("latest versions", self._latest),
            ("named (aliases of several)", named),
            ("category keys", categories),
            ("kept sorted links", kept),
            *super().warm_steps(),  # search, typeahead and facet indexes (MemoryDiscoveryReads)
        ]

    def warm(self) -> None:
        """Run every :meth:`warm_steps` step."""
        for _, step in self.warm_steps():
            step()

    # -- identifiers ---------------------------------------------------------------------

    def papers_by_ids(
        self, pith_numbers: Sequence[str], want: PaperSelection = EVERYTHING
    ) -> dict[str, PaperRow]:
        found = {}
        for pith in pith_numbers:
            record = self._paper(pith)
            if record is not None:
                found[pith] = record
        return found

    def resolve_identifiers(self, keys: Sequence[IdentifierKey]) -> dict[IdentifierKey, list[str]]:
        result: dict[IdentifierKey, list[str]] = {}
        nodes = self._nodes
        for kind, value in keys:
            if kind == "pithNumber":
                names = [value] if self._paper(value) is not None else []
            elif kind == "shortPithNumber":
                names = list(self._short(value))
            else:
                alias = node_id(ALIAS.label, kind, value)
                data = nodes.get(alias)
                names = []
                if data is not None and data.get(LABEL) == ALIAS.label:
                    names = sorted(nodes[paper][PITH_NUMBER] for paper in self._succ[alias])
            result[(kind, value)] = names
        return result

    def papers_by_identifiers(
        self, keys: Sequence[IdentifierKey], want: PaperSelection = EVERYTHING, ranks: SignerRanks = NO_RANKS
    ) -> dict[IdentifierKey, list[PaperRow]]:
        return {key: of_best_signer(self._named(*key), ranks.rank_of) for key in keys}

    def _named(self, kind: str, value: str) -> tuple[PaperRow, ...]:
        """The papers ``(kind, value)`` names, newest version first (``version_key``); an
        alias naming several (an arXiv id's versions, a shared DOI) keeps them sorted, from
        :meth:`warm` or the first read on: a lookup copies them, it sorts nothing."""
        if kind == "pithNumber":
            paper = self._paper(value)
            return (paper,) if paper is not None else ()
        if kind == "shortPithNumber":
            return self._newest(self._short(value))
        alias = node_id(ALIAS.label, kind, value)
        kept: dict[str, tuple[PaperRow, ...]] = self._index("named", dict)
        found = kept.get(alias)
        if found is None:
            data = self._nodes.get(alias)
            if data is None or data.get(LABEL) != ALIAS.label:
                return ()
            papers = self._succ[alias]
            found = self._newest(self._nodes[paper][PITH_NUMBER] for paper in papers)
            if len(papers) > 1:
                kept[alias] = found
        return found

    def _newest(self, piths: Iterable[str]) -> tuple[PaperRow, ...]:
        found = (paper for paper in map(self._paper, piths) if paper is not None)
        return tuple(sorted(found, key=version_key, reverse=True))

    # -- papers' relations ---------------------------------------------------------------

    def author_pages(
        self, pith_numbers: Sequence[str], first: int, after: str | None = None, counts: bool = True
    ) -> dict[str, AuthorPage]:
        """Slices of each paper's sorted authors (:meth:`_sorted_authors`; a paper with many
        keeps its list, so a page is a bisection and a slice however many there are)."""
        known = None if after is None else self.authors_by_keys([after], counts=False).get(after)
        result = {}
        pred = self._pred
        for pith in pith_numbers:
            paper = node_id(PAPER.label, pith)
            authors = self._sorted_authors(paper, counts) if paper in pred else []
            result[pith] = author_page(authors, first, after, known)
        return result

    def _sorted_authors(self, paper: str, counts: bool) -> list[AuthorRecord]:
        """The authors of ``paper`` by name, then name key; kept (counted or not) for a
        paper with over :data:`KEPT_OVER` incoming edges, so that a page of its
        authors is a slice and their count a length however many there are."""
        kept: dict[tuple[str, bool], list[AuthorRecord]] = self._index("sorted authors", dict)
        found = kept.get((paper, counts))
        if found is None:
            found = [self._author(node, counts) for node in self._author_nodes_of(paper)]
            found.sort(key=author_order)
            if len(self._pred[paper]) > KEPT_OVER:
                kept[(paper, counts)] = found
        return found

    def categories_of_papers(
        self, pith_numbers: Sequence[str], first: int, counts: bool = True
    ) -> dict[str, list[CategoryLink]]:
        """The first ``first`` of each paper's sorted categories (``_links``), as are its
        aliases and signatures."""
        result = {}
        for pith in pith_numbers:
            links = self._links(node_id(PAPER.label, pith), "categories")[:first]
            result[pith] = [
                CategoryLink(self._category(node, counts), bool(edge[PRIMARY])) for node, edge in links
            ]
        return result

    def aliases_of_papers(self, pith_numbers: Sequence[str], first: int) -> dict[str, list[AliasRecord]]:
        result = {}
        nodes = self._nodes
        for pith in pith_numbers:
            links = self._links(node_id(PAPER.label, pith), "aliases")[:first]
            result[pith] = [AliasRecord(nodes[node][KIND], nodes[node][VALUE]) for node, _ in links]
        return result

    def author_names_of_papers(self, pith_numbers: Sequence[str], first: int) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {}
        for pith in pith_numbers:
            paper = node_id(PAPER.label, pith)
            data = self._nodes.get(paper)
            names = None if data is None else data.get(AUTHOR_NAMES)
            if names is None and data is not None:  # saved before 0.8: as Neo4j answers it
                names = [author.name for author in self._sorted_authors(paper, False)[:first]]
            result[pith] = list(names[:first]) if names is not None else []
        return result

    def signatures_of_papers(
        self, pith_numbers: Sequence[str], first: int, counts: bool = True
    ) -> dict[str, list[SignatureRecord]]:
        result = {}
        for pith in pith_numbers:
            result[pith] = [
                SignatureRecord(
                    self._signer(node, counts),
                    tuple(edge[KEY_IDS]),
                    tuple(edge.get(EVENT_TYPES, ())),  # absent: it signed no event
                    bool(edge[SIGNED_BUNDLE]),
                )
                for node, edge in self._links(node_id(PAPER.label, pith), "signatures")[:first]
            ]
        return result

    def versions_of_papers(
        self, pith_numbers: Sequence[str], first: int, want: PaperSelection = EVERYTHING
    ) -> dict[str, list[PaperRow]]:
        """The first ``first`` of the others of each paper's source (``_versions``: sorted once)."""
        versions = self._versions()
        result: dict[str, list[PaperRow]] = {}
        for pith in pith_numbers:
            record = self._paper(pith)
            others = (
                () if record is None else versions.get(source_key(record.source_kind, record.source_id), ())
            )
            picked = islice((other for other in others if other != pith), first)
            result[pith] = [paper for paper in map(self._paper, picked) if paper is not None]
        return result

    # -- lookups by key ------------------------------------------------------------------

    def authors_by_keys(self, name_keys: Sequence[str], counts: bool = True) -> dict[str, AuthorRecord]:
        return self._records(AUTHOR.label, name_keys, lambda node: self._author(node, counts))

    def name_forms_of_authors(self, name_keys: Sequence[str], first: int) -> dict[str, list[NameFormRecord]]:
        def forms(node: str) -> list[NameFormRecord]:
            data = self._nodes[node]
            if NAME_FORMS not in data:
                return [NameFormRecord(data[AUTHOR.prop("name")], len(self._succ[node]))]
            pairs = zip(data[NAME_FORMS], data[NAME_FORM_COUNTS], strict=False)
            return [NameFormRecord(name, count) for name, count in islice(pairs, first)]

        return self._records(AUTHOR.label, name_keys, forms)

    def papers_of_authors(
        self,
        name_keys: Sequence[str],
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        order: ListingOrder = "newest",
    ) -> dict[str, Page]:
        return {key: self._page(self._author_keys(key), first, after, None, order) for key in name_keys}

    def categories_by_codes(self, codes: Sequence[str], counts: bool = True) -> dict[str, CategoryRecord]:
        return self._records(CATEGORY.label, codes, lambda node: self._category(node, counts))

    def all_categories(self, counts: bool = True) -> list[CategoryRecord]:
        categories = [self._category(node, counts) for node in self._category_nodes()]
        return sorted(categories, key=lambda c: c.code)

    def papers_of_categories(
        self,
        codes: Sequence[str],
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        order: ListingOrder = "newest",
    ) -> dict[str, Page]:
        return {code: self._page(self._category_keys(code), first, after, None, order) for code in codes}

    def signers_by_ids(self, signer_ids: Sequence[str], counts: bool = True) -> dict[str, SignerRecord]:
        return self._records(SIGNER.label, signer_ids, lambda node: self._signer(node, counts))

    def papers_of_signers(
        self,
        signer_ids: Sequence[str],
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        signed_bundle: bool | None = None,
        order: ListingOrder = "newest",
    ) -> dict[str, Page]:
        pages = self._page
        return {
            sid: pages(self._signer_keys(sid, signed_bundle), first, after, None, order) for sid in signer_ids
        }
