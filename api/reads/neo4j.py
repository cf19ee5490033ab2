"""The :class:`~pith_graph.api.reads.reader.GraphReader` over Neo4j: one Cypher statement per call.

Every method runs one parameterised statement from :mod:`pith_graph.api.reads.cypher` for the
whole batch of keys, in the variant that fetches what the call was asked for (properties,
embedded relations, counts). A paper's lists (authors, categories, aliases, signatures,
versions) and ranked, limited lists are ordered and cut by the statement itself, on stored
properties (tie-breaks on keys), so only the items asked for leave the server, in the order
:mod:`pith_graph.api.reads.reader` defines; other unordered lists are sorted here in Python,
so they match the in-memory reader exactly.

:meth:`Neo4jReader.for_request` gives a reader whose statements share one read transaction
(:mod:`pith_graph.api.reads.neo4j_session`) and which keeps the authors and categories a
selection hint embedded in a papers statement, so the call that asks for them next costs no
statement. A request whose only statement is a call of one of :data:`ONE_STATEMENT` runs it
as an auto-commit transaction (:meth:`Neo4jReader.sole_statement`). A request reader also
checks that its statements read one state of every paper (Neo4j runs them at READ COMMITTED:
:meth:`~pith_graph.api.reads.neo4j_base.Neo4jBase.check_stamp`), raising
:class:`~pith_graph.api.reads.torn.TornRead` when a load replaced one in between.
Driver errors become :class:`~pith_graph.errors.StoreError`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import neo4j

from pith_graph.api.reads import cypher
from pith_graph.api.reads.author_page import unknown_position
from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.neo4j_base import after_parameters
from pith_graph.api.reads.neo4j_bridged import BridgedTransaction
from pith_graph.api.reads.neo4j_discovery import (
    Neo4jDiscoveryReads,
    listing_checks,
    listing_parameters,
    listing_start,
)
from pith_graph.api.reads.neo4j_rankings import Neo4jRankings
from pith_graph.api.reads.neo4j_rows import author, author_list, category, category_links, signer
from pith_graph.api.reads.neo4j_session import OneTransaction, RequestStatements
from pith_graph.api.reads.neo4j_upkeep import Neo4jUpkeep
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
    PaperFilter,
    PaperKey,
    PaperSelection,
    SignatureRecord,
    SignerRanks,
    SignerRecord,
    version_key,
)
from pith_graph.errors import StoreError
from pith_graph.loader.keyring import UNRANKED
from pith_graph.loader.stores.cypher import PING
from pith_graph.loader.stores.neo4j_connect import READ_TIMEOUTS, driver_config, open_driver
from pith_graph.schema.rows import PaperRow

__all__ = ["ONE_STATEMENT", "Neo4jReader"]

#: The reads that run one statement at most, whatever they are asked (``search_papers``
#: may run its statement again with a bigger fetch, ``authors_by_prefix`` may ask the
#: full-text index after walking the most prolific authors); tests/api/test_api_readers.py
#: runs each of them alone.
ONE_STATEMENT = frozenset(
    {
        "papers_by_ids",
        "resolve_identifiers",
        "papers_by_identifiers",
        "list_papers",
        "count_papers",
        "author_pages",
        "categories_of_papers",
        "aliases_of_papers",
        "author_names_of_papers",
        "name_forms_of_authors",
        "signatures_of_papers",
        "versions_of_papers",
        "related_papers",
        "authors_by_keys",
        "papers_of_authors",
        "coauthors",
        "author_categories",
        "categories_by_codes",
        "all_categories",
        "papers_of_categories",
        "top_authors",
        "co_listed",
        "signers_by_ids",
        "unpinned_key_ids",
        "used_key_ids",
        "papers_of_signers",
        "collaboration_path",
        "count_listing",
        "facet_counts",
    }
)


class Neo4jReader(Neo4jRankings, Neo4jUpkeep, Neo4jDiscoveryReads):
    """Batched reads from one Neo4j database."""

    @classmethod
    def connect(
        cls,
        uri: str,
        user: str = "neo4j",
        password: str | None = None,
        database: str = "neo4j",
        *,
        timeout: float | None = None,
    ) -> Neo4jReader:
        """A reader over a driver that has reached ``database`` (else a StoreError), with
        :data:`~pith_graph.loader.stores.neo4j_connect.READ_TIMEOUTS`: reads fail fast.
        Bridged request readers (:meth:`for_request`) get an asyncio driver with the same
        settings, opened on first use."""
        driver = open_driver(uri, user, password, database, READ_TIMEOUTS)

        def open_async() -> neo4j.AsyncDriver:
            return neo4j.AsyncGraphDatabase.driver(uri, **driver_config(user, password, READ_TIMEOUTS))

        return cls(driver, database, uri=uri, timeout=timeout, open_async=open_async)

    _async_driver: neo4j.AsyncDriver | None = None  # bridged request readers' (one per reader)

    def for_request(self, *, bridged: bool = False, unreachable: StoreError | None = None) -> Neo4jReader:
        """A reader whose statements share one read transaction (see the module docstring).
        ``bridged``: its statements go through the asyncio driver, and it must be used inside
        :func:`~pith_graph.api.bridge.run_bridged` (:mod:`pith_graph.api.reads.neo4j_bridged`).
        ``unreachable``: what an earlier reader of the request met; its statements raise it."""
        statements: RequestStatements
        if bridged:
            if self._async_driver is None:
                if self.open_async is None:
                    raise ValueError("bridged request readers need open_async (Neo4jReader.connect sets it)")
                self._async_driver = self.open_async()
            statements = BridgedTransaction(self._async_driver, self.database, self.uri, self.timeout)
        else:
            statements = OneTransaction(self.driver, self.database, self.uri, self.timeout)
        statements.unreachable = unreachable
        return Neo4jReader(
            self.driver, self.database, uri=self.uri, timeout=self.timeout, statements=statements
        )

    def sole_statement(self, method: str) -> AbstractContextManager[None]:
        """For a method of :data:`ONE_STATEMENT`, the request's first statement runs as an
        auto-commit transaction and a later one raises
        (:meth:`~pith_graph.api.reads.neo4j_session.OneTransaction.sole`); any other method
        runs as it would without (in the request's transaction)."""
        return self._statements.sole() if method in ONE_STATEMENT else nullcontext()

    def unreachable(self) -> StoreError | None:
        return getattr(self._statements, "unreachable", None)

    def holds_transaction(self) -> bool:
        return self._request and self._statements.open

    def close(self) -> None:
        """A request reader ends its transaction (and forgets what it read: a request that
        reads again, after a :class:`~pith_graph.api.reads.torn.TornRead`, starts
        afresh); the reader itself closes the driver."""
        if self._request:
            self.forget()
            self._statements.close()
        else:
            self.driver.close()

    async def aclose(self) -> None:
        """Close the asyncio driver of bridged request readers, if one was opened (on the
        event loop that used it)."""
        driver, self._async_driver = self._async_driver, None
        if driver is not None:
            await driver.close()

    def ping(self) -> None:
        self._rows(PING)

    # -- identifiers ---------------------------------------------------------------------

    def papers_by_ids(
        self, pith_numbers: Sequence[str], want: PaperSelection = EVERYTHING
    ) -> dict[str, PaperRow]:
        embed, params, decode = self._papers(want)
        found = self._by_key(cypher.READ_PAPERS[embed], pith_numbers, "paper", **params)
        for key in pith_numbers:
            if key not in found:
                self.check_stamp(key, None)
        return {key: decode(row) for key, row in found.items()}

    def resolve_identifiers(self, keys: Sequence[IdentifierKey]) -> dict[IdentifierKey, list[str]]:
        if not keys:
            return {}
        unique = list(dict.fromkeys(keys))
        rows = self._rows(cypher.READ_RESOLVE_IDENTIFIERS, keys=[{"kind": k, "value": v} for k, v in unique])
        found = {(row["kind"], row["value"]): sorted(set(row["piths"])) for row in rows}
        return {key: found.get(key, []) for key in unique}

    def papers_by_identifiers(
        self, keys: Sequence[IdentifierKey], want: PaperSelection = EVERYTHING, ranks: SignerRanks = NO_RANKS
    ) -> dict[IdentifierKey, list[PaperRow]]:
        if not keys:
            return {}
        unique = list(dict.fromkeys(keys))
        embed, params, decode = self._papers(want)
        rows = self._rows(
            cypher.READ_PAPERS_BY_IDENTIFIERS[embed],
            keys=[{"kind": k, "value": v} for k, v in unique],
            ranks=ranks.rank,
            unranked=UNRANKED,
            **params,
        )
        found: dict[IdentifierKey, list[PaperRow]] = {}
        for row in rows:
            papers = {p.pith_number: p for p in (decode(item) for item in row["papers"])}
            found[(row["kind"], row["value"])] = sorted(papers.values(), key=version_key, reverse=True)
        return {key: found.get(key, []) for key in unique}

    # -- listings ------------------------------------------------------------------------

    def list_papers(
        self,
        where: PaperFilter,
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        order: ListingOrder = "newest",
    ) -> Page:
        listing = Listing(where)
        embed, params, decode = self._papers(want)
        statement = cypher.list_papers_statement(
            listing_start(listing), embed, order, listing_checks(listing), after is not None
        )
        parameters = {**listing_parameters(listing), **after_parameters(after), **params}
        rows = self._rows(statement, limit=first + 1, **parameters)
        return self._page([row["paper"] for row in rows], first, decode, order == "oldest")

    def count_papers(self, where: PaperFilter) -> int:
        if where == PaperFilter():
            return int(self._rows(cypher.READ_COUNT_ALL_PAPERS)[0]["n"])
        return self.count_listing(Listing(where))

    # -- papers' relations ---------------------------------------------------------------

    def author_pages(
        self, pith_numbers: Sequence[str], first: int, after: str | None = None, counts: bool = True
    ) -> dict[str, AuthorPage]:
        kept = None if after is not None else self._kept_authors(counts, pith_numbers, first)
        if kept is not None:
            return kept
        if after is None:
            found = self._of_papers(cypher.READ_AUTHOR_FIRST_PAGES[counts], pith_numbers, "page", first=first)
        else:
            found = self._of_papers(
                cypher.READ_AUTHOR_PAGES[counts],
                pith_numbers,
                "page",
                first=first,
                after=after,
                anchor=unknown_position(after),
            )
        seen: dict[tuple[Any, ...], AuthorRecord] = {}
        empty = AuthorPage((), 0)
        return {
            key: AuthorPage(tuple(author_list(found[key][1], seen)), int(found[key][0]))
            if key in found
            else empty
            for key in pith_numbers
        }

    def categories_of_papers(
        self, pith_numbers: Sequence[str], first: int, counts: bool = True
    ) -> dict[str, list[CategoryLink]]:
        kept = self._kept_categories(counts, pith_numbers, first)
        if kept is not None:
            return kept
        found = self._of_papers(cypher.READ_CATEGORIES_OF_PAPERS[counts], pith_numbers, "links", first=first)
        return {key: category_links(found.get(key, [])) for key in pith_numbers}

    def aliases_of_papers(self, pith_numbers: Sequence[str], first: int) -> dict[str, list[AliasRecord]]:
        found = self._of_papers(cypher.READ_ALIASES_OF_PAPERS, pith_numbers, "aliases", first=first)
        return {key: [AliasRecord(kind, value) for kind, value in found.get(key, [])] for key in pith_numbers}

    def author_names_of_papers(self, pith_numbers: Sequence[str], first: int) -> dict[str, list[str]]:
        found = self._of_papers(cypher.READ_AUTHOR_NAMES_OF_PAPERS, pith_numbers, "names", first=first)
        return {key: list(found.get(key) or ()) for key in pith_numbers}

    def signatures_of_papers(
        self, pith_numbers: Sequence[str], first: int, counts: bool = True
    ) -> dict[str, list[SignatureRecord]]:
        found = self._of_papers(
            cypher.READ_SIGNATURES_OF_PAPERS[counts], pith_numbers, "signatures", first=first
        )
        return {
            key: [
                SignatureRecord(signer(row[0]), tuple(row[1]), tuple(row[2]), bool(row[3]))
                for row in found.get(key, [])
            ]
            for key in pith_numbers
        }

    def versions_of_papers(
        self, pith_numbers: Sequence[str], first: int, want: PaperSelection = EVERYTHING
    ) -> dict[str, list[PaperRow]]:
        embed, params, decode = self._papers(want)
        found = self._of_papers(
            cypher.READ_VERSIONS_OF_PAPERS[embed], pith_numbers, "versions", first=first, **params
        )
        return {key: [decode(row) for row in found.get(key, [])] for key in pith_numbers}

    # -- authors -------------------------------------------------------------------------

    def authors_by_keys(self, name_keys: Sequence[str], counts: bool = True) -> dict[str, AuthorRecord]:
        found = self._by_key(cypher.READ_AUTHORS[counts], name_keys, "author")
        return {key: author(row) for key, row in found.items()}

    def name_forms_of_authors(self, name_keys: Sequence[str], first: int) -> dict[str, list[NameFormRecord]]:
        found = self._by_key(cypher.READ_NAME_FORMS, name_keys, "forms", first=first)
        return {key: [NameFormRecord(name, int(count)) for name, count in found[key]] for key in found}

    def papers_of_authors(
        self,
        name_keys: Sequence[str],
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        order: ListingOrder = "newest",
    ) -> dict[str, Page]:
        return self._pages("authors", name_keys, first, after, want, order)

    # -- categories ----------------------------------------------------------------------

    def categories_by_codes(self, codes: Sequence[str], counts: bool = True) -> dict[str, CategoryRecord]:
        found = self._by_key(cypher.READ_CATEGORIES[counts], codes, "category")
        return {key: category(row) for key, row in found.items()}

    def all_categories(self, counts: bool = True) -> list[CategoryRecord]:
        categories = [category(row["category"]) for row in self._rows(cypher.READ_ALL_CATEGORIES[counts])]
        return sorted(categories, key=lambda c: c.code)

    def papers_of_categories(
        self,
        codes: Sequence[str],
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        order: ListingOrder = "newest",
    ) -> dict[str, Page]:
        return self._pages("categories", codes, first, after, want, order)

    # -- signers -------------------------------------------------------------------------

    def signers_by_ids(self, signer_ids: Sequence[str], counts: bool = True) -> dict[str, SignerRecord]:
        found = self._by_key(cypher.READ_SIGNERS[counts], signer_ids, "signer")
        return {key: signer(row) for key, row in found.items()}

    def unpinned_key_ids(self, pinned: Collection[str], most: int) -> list[str]:
        rows = self._rows(cypher.READ_UNPINNED_KEY_IDS, pinned=list(pinned), most=most)
        return [str(row[0]) for row in rows]

    def used_key_ids(self, keys: Collection[str]) -> list[str]:
        return [str(row[0]) for row in self._rows(cypher.READ_USED_KEY_IDS, keys=list(keys))]

    def papers_of_signers(
        self,
        signer_ids: Sequence[str],
        first: int,
        after: PaperKey | None,
        want: PaperSelection = EVERYTHING,
        signed_bundle: bool | None = None,
        order: ListingOrder = "newest",
    ) -> dict[str, Page]:
        if signed_bundle is None:
            return self._pages("signers", signer_ids, first, after, want, order)
        return self._pages(
            "signers_by_bundle", signer_ids, first, after, want, order, signedBundle=signed_bundle
        )
