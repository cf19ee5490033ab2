"""The read seam: what the GraphQL API asks of a graph, answered the same by every store.

A :class:`GraphReader` answers *batches*: every method takes many keys and returns a dict
keyed by them, so one call (one Cypher statement on Neo4j) serves a whole level of a nested
query. Results are plain frozen dataclasses, never driver or networkx objects.

Callers say what they will read, so a store fetches no more: calls returning papers take a
:class:`~pith_graph.api.reads.records.PaperSelection` (the properties read, and whether the
papers' authors or categories will be asked for next, which Neo4j then fetches in the same
statement), calls returning authors, categories or signers take ``counts`` (their paper
counts are computed only when true; ``None`` otherwise). The defaults fetch everything.

Per request, :meth:`GraphReader.for_request` gives a reader whose reads share one read
transaction (Neo4j; the in-memory reader returns itself); close it when the request ends.
A request whose only read of the store is one call says so (:meth:`GraphReader.sole_statement`),
and Neo4j runs it without an explicit transaction.

Every ordering is total and spelled out here, so the in-memory and the Neo4j reader return
identical answers. Text compares by code point (Python's order, and Neo4j's between stored
strings: both sort by stored properties):

* papers, newest first: ``submittedAt`` descending, then ``pithNumber`` descending; pages
  are keyset pages after a :class:`PaperKey` (a cursor stays valid while papers are added);
* versions: ``sourceVersion`` ascending, then ``pithNumber``;
* rankings (coauthors, top authors, related papers, co-listed categories): the count
  descending, then the key ascending (``nameKey``, ``code``; related papers: newest first);
* lists without a rank: authors by ``name`` then ``nameKey``; categories primary first, then
  by ``code``; aliases by ``(kind, value)``; signatures by ``signerId``.

A paper's lists (authors, categories, aliases, signatures, versions) are read a first part at
a time: the calls take ``first``, the most of each paper's wanted, and a store reads no more
than that (Neo4j sorts and cuts them in the statement: one trusted signer can give a paper
tens of thousands of categories or aliases, or an arXiv id as many versions).

Title search (:func:`~pith_graph.api.reads.words.search_terms`) splits text into words the way Lucene's standard
analyzer (the Neo4j full-text index) does for the scripts the corpus uses, and matches a
paper when its title holds every word; results are newest first, not scored, so both stores
agree.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from pith_graph.api.reads.discovery import DiscoveryReads
from pith_graph.api.reads.records import (
    EVERYTHING,
    NO_RANKS,
    AliasRecord,
    AuthorCount,
    AuthorPage,
    AuthorRecord,
    CategoryCount,
    CategoryLink,
    CategoryRecord,
    Coauthor,
    IdentifierKey,
    ListingOrder,
    NameFormRecord,
    Page,
    PaperFilter,
    PaperKey,
    PaperSelection,
    PathStep,
    RelatedPaper,
    SignatureRecord,
    SignerRanks,
    SignerRecord,
)
from pith_graph.errors import StoreError
from pith_graph.schema.rows import PaperRow

__all__ = ["GraphReader"]


@runtime_checkable
class GraphReader(DiscoveryReads, Protocol):
    """Batched reads over a loaded graph. Implemented by ``MemoryReader`` and ``Neo4jReader``.

    Missing keys are absent from the returned dicts (lookups) or map to empty lists
    (relations). ``first`` is already validated by the caller (0 ≤ first ≤ the page cap).
    """

    def papers_by_ids(
        self, pith_numbers: Sequence[str], want: PaperSelection = EVERYTHING
    ) -> dict[str, PaperRow]:
        """Papers by full pith number."""

    def resolve_identifiers(self, keys: Sequence[IdentifierKey]) -> dict[IdentifierKey, list[str]]:
        """The pith numbers each ``(kind, value)`` names, sorted; kinds: ``pithNumber``,
        ``shortPithNumber`` or an alias kind. Values match exactly."""

    def papers_by_identifiers(
        self, keys: Sequence[IdentifierKey], want: PaperSelection = EVERYTHING, ranks: SignerRanks = NO_RANKS
    ) -> dict[IdentifierKey, list[PaperRow]]:
        """The papers each key names (as :meth:`resolve_identifiers`), newest version first
        (:func:`~pith_graph.api.reads.records.version_key`, descending): only those of its
        highest-ranked signer by ``ranks`` (:func:`~pith_graph.api.reads.records.of_best_signer`;
        with none given, all). Only those are read whole."""

    def list_papers(
        self,
        where: PaperFilter,
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        order: ListingOrder = "newest",
    ) -> Page:
        """A page of the papers ``where`` admits, newest first (or ``oldest`` first), after ``after``."""

    def count_papers(self, where: PaperFilter) -> int:
        """How many papers ``where`` admits."""

    def authors_by_keys(self, name_keys: Sequence[str], counts: bool = True) -> dict[str, AuthorRecord]:
        """Authors by name key."""

    def name_forms_of_authors(self, name_keys: Sequence[str], first: int) -> dict[str, list[NameFormRecord]]:
        """The first ``first`` of each author's spellings (``nameForms``, smallest first, with
        their counts); one, its name and paper count, when its papers all spell it alike."""

    def author_pages(
        self, pith_numbers: Sequence[str], first: int, after: str | None = None, counts: bool = True
    ) -> dict[str, AuthorPage]:
        """A page of each paper's authors, by name then name key: the first ``first`` after
        the author whose name key is ``after`` (see :mod:`pith_graph.api.author_pages`), and
        how many the paper has. Reads no more of a paper's authors than the page."""

    def categories_of_papers(
        self, pith_numbers: Sequence[str], first: int, counts: bool = True
    ) -> dict[str, list[CategoryLink]]:
        """The first ``first`` of each paper's categories, primary first, then by code."""

    def aliases_of_papers(self, pith_numbers: Sequence[str], first: int) -> dict[str, list[AliasRecord]]:
        """The first ``first`` of each paper's aliases by (kind, value)."""

    def author_names_of_papers(self, pith_numbers: Sequence[str], first: int) -> dict[str, list[str]]:
        """The first ``first`` of each paper's ``authorNames`` (its spellings, in its order); a
        paper written before 0.8, which has none: its authors' names, by name then name key."""

    def signatures_of_papers(
        self, pith_numbers: Sequence[str], first: int, counts: bool = True
    ) -> dict[str, list[SignatureRecord]]:
        """The first ``first`` of each paper's SIGNED edges with their signers, by signer id."""

    def versions_of_papers(
        self, pith_numbers: Sequence[str], first: int, want: PaperSelection = EVERYTHING
    ) -> dict[str, list[PaperRow]]:
        """The first ``first`` of the other papers with the same source kind and id, by
        version then pith number."""

    def related_papers(
        self,
        pith_numbers: Sequence[str],
        first: int,
        want: PaperSelection = EVERYTHING,
        after: str | None = None,
    ) -> dict[str, list[RelatedPaper]]:
        """Papers sharing authors with each paper (not its own versions): most shared
        authors first, then newest first; at most ``first`` each, those ranked after the
        paper whose pith number is ``after`` (see :mod:`pith_graph.api.rank_pages`)."""

    def papers_of_authors(
        self,
        name_keys: Sequence[str],
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        order: ListingOrder = "newest",
    ) -> dict[str, Page]:
        """A newest-first (or ``oldest``-first) page of each author's papers."""

    def coauthors(
        self, name_keys: Sequence[str], first: int, counts: bool = True, after: str | None = None
    ) -> dict[str, list[Coauthor]]:
        """Each author's coauthors: most shared papers first, then by name key; at most
        ``first``, those ranked after the author whose name key is ``after``."""

    def author_categories(
        self, name_keys: Sequence[str], counts: bool = True
    ) -> dict[str, list[CategoryCount]]:
        """The categories of each author's papers with how many: most first, then by code."""

    def categories_by_codes(self, codes: Sequence[str], counts: bool = True) -> dict[str, CategoryRecord]:
        """Categories by code."""

    def all_categories(self, counts: bool = True) -> list[CategoryRecord]:
        """Every category by code."""

    def papers_of_categories(
        self,
        codes: Sequence[str],
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        order: ListingOrder = "newest",
    ) -> dict[str, Page]:
        """A newest-first (or ``oldest``-first) page of the papers listed in each category."""

    def top_authors(
        self, codes: Sequence[str], first: int, counts: bool = True, after: str | None = None
    ) -> dict[str, list[AuthorCount]]:
        """Authors with the most papers in each category, then by name key; at most
        ``first``, those ranked after the author whose name key is ``after``."""

    def co_listed(
        self, codes: Sequence[str], first: int, counts: bool = True, after: str | None = None
    ) -> dict[str, list[CategoryCount]]:
        """Other categories the papers of each category are listed in, with how many papers:
        most first, then by code; at most ``first``, those ranked after the code ``after``."""

    def signers_by_ids(self, signer_ids: Sequence[str], counts: bool = True) -> dict[str, SignerRecord]:
        """Signers by id."""

    def unpinned_key_ids(self, pinned: Collection[str], most: int) -> list[str]:
        """Up to ``most`` key ids, sorted, that the graph's signers used and ``pinned`` lacks:
        their papers are served unranked (``serve`` warns at start)."""

    def used_key_ids(self, keys: Collection[str]) -> list[str]:
        """Which of ``keys`` the graph's signers used, sorted (``serve`` warns at start of
        revoked ones: their papers are served until ``prune`` removes them)."""

    def papers_of_signers(
        self,
        signer_ids: Sequence[str],
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        signed_bundle: bool | None = None,
        order: ListingOrder = "newest",
    ) -> dict[str, Page]:
        """A newest-first (or ``oldest``-first) page of the papers each signer signed (with ``signed_bundle``: those
        whose SIGNED edge from it has that ``signedBundle``; true: the bundles it signed)."""

    def collaboration_path(
        self,
        source: str,
        target: str,
        max_hops: int,
        want: PaperSelection = EVERYTHING,
        counts: bool = True,
    ) -> list[PathStep] | None:
        """The shortest author → paper → author chain from ``source`` to ``target`` (name
        keys) with at most ``max_hops`` papers, or ``None``. Of several shortest chains, the
        one whose sequence of node keys (name keys and pith numbers) is smallest."""

    def for_request(self, *, bridged: bool = False, unreachable: StoreError | None = None) -> GraphReader:
        """A reader for one request: its reads share one read transaction, opened on the
        first read (Neo4j), and it may keep what a hint fetched for later calls. Use it from
        one thread at a time and close it when the request ends. A reader with nothing to
        share returns itself. ``bridged``: it is used only inside
        :func:`~pith_graph.api.bridge.run_bridged`, on the event loop, and may wait there
        (Neo4j: with the asyncio driver). ``unreachable``: the store could not be reached by
        an earlier reader of the same request (:meth:`unreachable`): every read raises it."""

    def unreachable(self) -> StoreError | None:
        """A request reader's: the error a read raised when the store could not be reached
        (``unavailable``), after which its reads raise it at once; else ``None``."""

    def sole_statement(self, method: str) -> AbstractContextManager[None]:
        """A block around the first call of a request reader, ``method``, when the caller
        knows no later call of the request runs a statement (it asks only for what this one
        fetched ahead). A reader that would open a transaction for it may run its statement
        as the request's one transaction, without one (Neo4j: an auto-commit read, one round
        trip where BEGIN, RUN and COMMIT take two; only for methods that run one statement),
        and then refuse any further statement. Others do nothing."""

    def ping(self) -> None:
        """Return when the store can answer; raise :class:`~pith_graph.errors.StoreError` if not."""

    def holds_transaction(self) -> bool:
        """Whether the reader has a transaction open, which :meth:`close` ends on the store;
        when not, ``close`` does no I/O and any thread may call it."""

    def close(self) -> None:
        """Release what the reader holds (a request reader: its transaction)."""

    async def aclose(self) -> None:
        """Release what bridged request readers opened on the running event loop (called
        when the server stops)."""
