"""The :class:`~pith_graph.api.reads.reader.GraphReader` over Neo4j: one Cypher statement per call.

Every method runs one parameterised statement from :mod:`pith_graph.loader.stores.cypher` (its reads
section) for the whole batch of keys, in a read transaction bounded by ``timeout`` seconds
on the server. Unordered lists come back in the order :mod:`pith_graph.api.reads.records` defines,
sorted here in Python, so they match the in-memory reader exactly; ranked, limited lists
are ordered by the statement itself (tie-breaks on keys). Driver errors become
:class:`~pith_graph.errors.StoreError` (``unavailable``, ``auth``, ``database``; ``timeout`` when
the server stopped a statement that ran past ``timeout``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import neo4j
from neo4j.exceptions import DriverError, Neo4jError

from pith_graph.api.reads import cypher
from pith_graph.api.reads.neo4j_discovery import Neo4jDiscoveryReads
from pith_graph.api.reads.records import (
    AliasRecord,
    AuthorCount,
    AuthorRecord,
    CategoryCount,
    CategoryLink,
    CategoryRecord,
    Coauthor,
    IdentifierKey,
    Page,
    PaperFilter,
    PaperKey,
    PathStep,
    RelatedPaper,
    SignatureRecord,
    SignerRecord,
)
from pith_graph.api.reads.words import lucene_query
from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.stores.cypher import PING
from pith_graph.loader.stores.neo4j_connect import open_driver, translate
from pith_graph.schema.database import indexes
from pith_graph.schema.rows import PaperRow

__all__ = ["Neo4jReader"]

TITLE_INDEX = next(spec.name for spec in indexes() if spec.kind == "fulltext")


def _author(row: Mapping[str, Any]) -> AuthorRecord:
    return AuthorRecord(row["nameKey"], row["name"], int(row["paperCount"]))


def _category(row: Mapping[str, Any]) -> CategoryRecord:
    return CategoryRecord(row["code"], row["archive"], int(row["paperCount"]))


def _signer(row: Mapping[str, Any]) -> SignerRecord:
    return SignerRecord(row["signerId"], row["signerType"], tuple(row["keyIds"]), int(row["paperCount"]))


def _after(after: PaperKey | None) -> dict[str, str | None]:
    if after is None:
        return {"afterAt": None, "afterPith": None}
    return {"afterAt": after.submitted_at, "afterPith": after.pith_number}


def _page(rows: Sequence[Mapping[str, Any]], first: int) -> Page:
    papers = tuple(PaperRow.from_properties(row) for row in rows[:first])
    return Page(papers, len(rows) > first)


class Neo4jReader(Neo4jDiscoveryReads):
    """Batched reads from one Neo4j database."""

    def __init__(
        self,
        driver: neo4j.Driver,
        database: str = "neo4j",
        *,
        uri: str = "neo4j",
        timeout: float | None = None,
    ) -> None:
        self.driver = driver
        self.database = database
        self.uri = uri
        self.timeout = timeout

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
        """A reader over a driver that has reached ``database`` (else a StoreError)."""
        return cls(open_driver(uri, user, password, database), database, uri=uri, timeout=timeout)

    def close(self) -> None:
        self.driver.close()

    def ping(self) -> None:
        self._rows(PING)

    # -- running statements --------------------------------------------------------------

    def _rows(self, statement: str, **parameters: Any) -> list[neo4j.Record]:
        query = neo4j.Query(statement, timeout=self.timeout)
        try:
            result = self.driver.execute_query(
                query,
                parameters,
                routing_=neo4j.RoutingControl.READ,
                database_=self.database,
                bookmark_manager_=None,
            )
        except (Neo4jError, DriverError) as error:
            if isinstance(error, Neo4jError) and "TransactionTimedOut" in (error.code or ""):
                raise StoreError(StoreErrorCode.TIMEOUT, f"a read ran past {self.timeout} s") from error
            raise translate(error, self.uri, self.database, "reading") from error
        return list(result.records)

    def _by_key(self, statement: str, keys: Sequence[Any], column: str, **parameters: Any) -> dict[Any, Any]:
        if not keys:
            return {}
        rows = self._rows(statement, keys=list(dict.fromkeys(keys)), **parameters)
        return {row["key"]: row[column] for row in rows}

    # -- identifiers ---------------------------------------------------------------------

    def papers_by_ids(self, pith_numbers: Sequence[str]) -> dict[str, PaperRow]:
        found = self._by_key(cypher.READ_PAPERS, pith_numbers, "paper")
        return {key: PaperRow.from_properties(props) for key, props in found.items()}

    def resolve_identifiers(self, keys: Sequence[IdentifierKey]) -> dict[IdentifierKey, list[str]]:
        if not keys:
            return {}
        unique = list(dict.fromkeys(keys))
        rows = self._rows(cypher.READ_RESOLVE_IDENTIFIERS, keys=[{"kind": k, "value": v} for k, v in unique])
        found = {(row["kind"], row["value"]): sorted(set(row["piths"])) for row in rows}
        return {key: found.get(key, []) for key in unique}

    # -- listings ------------------------------------------------------------------------

    def _listing(self, where: PaperFilter) -> tuple[str, dict[str, Any]]:
        if where.title_terms:
            start = "title"
        elif where.author is not None:
            start = "author"
        elif where.category is not None:
            start = "category"
        elif where.archive is not None:
            start = "archive"
        else:
            start = "all"
        parameters = {
            "index": TITLE_INDEX,
            "lucene": lucene_query(where.title_terms),
            "author": where.author,
            "category": where.category,
            "archive": where.archive,
            "from": where.submitted_from,
            "before": where.submitted_before,
            "license": where.license,
        }
        return start, parameters

    def list_papers(self, where: PaperFilter, first: int, after: PaperKey | None) -> Page:
        start, parameters = self._listing(where)
        rows = self._rows(cypher.READ_LIST_PAPERS[start], limit=first + 1, **_after(after), **parameters)
        return _page([row["paper"] for row in rows], first)

    def count_papers(self, where: PaperFilter) -> int:
        if where == PaperFilter():
            return int(self._rows(cypher.READ_COUNT_ALL_PAPERS)[0]["n"])
        start, parameters = self._listing(where)
        return int(self._rows(cypher.READ_COUNT_PAPERS[start], **parameters)[0]["n"])

    # -- papers' relations ---------------------------------------------------------------

    def authors_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[AuthorRecord]]:
        found = self._by_key(cypher.READ_AUTHORS_OF_PAPERS, pith_numbers, "authors")
        return {
            key: sorted(map(_author, found.get(key, [])), key=lambda a: (a.name, a.name_key))
            for key in pith_numbers
        }

    def categories_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[CategoryLink]]:
        found = self._by_key(cypher.READ_CATEGORIES_OF_PAPERS, pith_numbers, "links")
        return {
            key: sorted(
                (
                    CategoryLink(_category(row["category"]), bool(row["primary"]))
                    for row in found.get(key, [])
                ),
                key=lambda link: (not link.primary, link.category.code),
            )
            for key in pith_numbers
        }

    def aliases_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[AliasRecord]]:
        found = self._by_key(cypher.READ_ALIASES_OF_PAPERS, pith_numbers, "aliases")
        return {
            key: sorted(
                (AliasRecord(kind, value) for kind, value in found.get(key, [])),
                key=lambda a: (a.kind, a.value),
            )
            for key in pith_numbers
        }

    def signatures_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[SignatureRecord]]:
        found = self._by_key(cypher.READ_SIGNATURES_OF_PAPERS, pith_numbers, "signatures")
        return {
            key: sorted(
                (
                    SignatureRecord(
                        _signer(row["signer"]),
                        tuple(row["keyIds"]),
                        tuple(row["eventTypes"]),
                        bool(row["signedBundle"]),
                    )
                    for row in found.get(key, [])
                ),
                key=lambda s: s.signer.signer_id,
            )
            for key in pith_numbers
        }

    def versions_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[PaperRow]]:
        found = self._by_key(cypher.READ_VERSIONS_OF_PAPERS, pith_numbers, "versions")
        return {
            key: sorted(
                map(PaperRow.from_properties, found.get(key, [])),
                key=lambda p: (p.source_version, p.pith_number),
            )
            for key in pith_numbers
        }

    def related_papers(self, pith_numbers: Sequence[str], first: int) -> dict[str, list[RelatedPaper]]:
        found = self._by_key(cypher.READ_RELATED_PAPERS, pith_numbers, "related", first=first)
        return {
            key: [
                RelatedPaper(PaperRow.from_properties(row["paper"]), int(row["shared"]))
                for row in found.get(key, [])
            ]
            for key in pith_numbers
        }

    # -- authors -------------------------------------------------------------------------

    def authors_by_keys(self, name_keys: Sequence[str]) -> dict[str, AuthorRecord]:
        found = self._by_key(cypher.READ_AUTHORS, name_keys, "author")
        return {key: _author(row) for key, row in found.items()}

    def papers_of_authors(
        self, name_keys: Sequence[str], first: int, after: PaperKey | None
    ) -> dict[str, Page]:
        found = self._by_key(
            cypher.READ_PAPERS_OF_AUTHORS, name_keys, "papers", limit=first + 1, **_after(after)
        )
        return {key: _page(found.get(key, []), first) for key in name_keys}

    def coauthors(self, name_keys: Sequence[str], first: int) -> dict[str, list[Coauthor]]:
        found = self._by_key(cypher.READ_COAUTHORS, name_keys, "coauthors", first=first)
        return {
            key: [Coauthor(_author(row["author"]), int(row["count"])) for row in found.get(key, [])]
            for key in name_keys
        }

    def author_categories(self, name_keys: Sequence[str]) -> dict[str, list[CategoryCount]]:
        found = self._by_key(cypher.READ_AUTHOR_CATEGORIES, name_keys, "categories")
        return {
            key: sorted(
                (CategoryCount(_category(row["category"]), int(row["count"])) for row in found.get(key, [])),
                key=lambda c: (-c.count, c.category.code),
            )
            for key in name_keys
        }

    # -- categories ----------------------------------------------------------------------

    def categories_by_codes(self, codes: Sequence[str]) -> dict[str, CategoryRecord]:
        found = self._by_key(cypher.READ_CATEGORIES, codes, "category")
        return {key: _category(row) for key, row in found.items()}

    def all_categories(self) -> list[CategoryRecord]:
        categories = [_category(row["category"]) for row in self._rows(cypher.READ_ALL_CATEGORIES)]
        return sorted(categories, key=lambda c: c.code)

    def papers_of_categories(
        self, codes: Sequence[str], first: int, after: PaperKey | None
    ) -> dict[str, Page]:
        found = self._by_key(
            cypher.READ_PAPERS_OF_CATEGORIES, codes, "papers", limit=first + 1, **_after(after)
        )
        return {key: _page(found.get(key, []), first) for key in codes}

    def top_authors(self, codes: Sequence[str], first: int) -> dict[str, list[AuthorCount]]:
        found = self._by_key(cypher.READ_TOP_AUTHORS, codes, "authors", first=first)
        return {
            key: [AuthorCount(_author(row["author"]), int(row["count"])) for row in found.get(key, [])]
            for key in codes
        }

    def co_listed(self, codes: Sequence[str], first: int) -> dict[str, list[CategoryCount]]:
        found = self._by_key(cypher.READ_CO_LISTED, codes, "categories", first=first)
        return {
            key: [CategoryCount(_category(row["category"]), int(row["count"])) for row in found.get(key, [])]
            for key in codes
        }

    # -- signers -------------------------------------------------------------------------

    def signers_by_ids(self, signer_ids: Sequence[str]) -> dict[str, SignerRecord]:
        found = self._by_key(cypher.READ_SIGNERS, signer_ids, "signer")
        return {key: _signer(row) for key, row in found.items()}

    def papers_of_signers(
        self, signer_ids: Sequence[str], first: int, after: PaperKey | None
    ) -> dict[str, Page]:
        found = self._by_key(
            cypher.READ_PAPERS_OF_SIGNERS, signer_ids, "papers", limit=first + 1, **_after(after)
        )
        return {key: _page(found.get(key, []), first) for key in signer_ids}

    # -- paths ---------------------------------------------------------------------------

    def collaboration_path(self, source: str, target: str, max_hops: int) -> list[PathStep] | None:
        if source == target:
            return [] if self.authors_by_keys([source]) else None
        statement = cypher.READ_COLLABORATION_PATH[max_hops]
        rows = self._rows(statement, source=source, target=target)
        if not rows:
            return None
        authors = [_author(row) for row in rows[0]["authors"]]
        papers = [PaperRow.from_properties(row) for row in rows[0]["papers"]]
        return [PathStep(authors[index], paper, authors[index + 1]) for index, paper in enumerate(papers)]
