"""The Neo4j reader's rankings and traversals: related papers, coauthors, an author's
categories, top authors, co-listed categories, collaboration paths."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pith_graph.api.reads import cypher
from pith_graph.api.reads.neo4j_base import Neo4jBase
from pith_graph.api.reads.neo4j_rows import author, category
from pith_graph.api.reads.records import (
    EVERYTHING,
    AuthorCount,
    CategoryCount,
    Coauthor,
    PaperSelection,
    PathStep,
    RelatedPaper,
)

__all__ = ["Neo4jRankings"]


class Neo4jRankings(Neo4jBase):
    """Rankings and paths (the ``GraphReader`` methods that count)."""

    def related_papers(
        self,
        pith_numbers: Sequence[str],
        first: int,
        want: PaperSelection = EVERYTHING,
        after: str | None = None,
    ) -> dict[str, list[RelatedPaper]]:
        embed, params, decode = self._papers(want)
        if after is not None:  # a later page (see pith_graph.api.rank_pages)
            params["after"] = after
        statements = cypher.READ_RELATED_PAPERS if after is None else cypher.READ_RELATED_PAPERS_AFTER
        found = self._of_papers(statements[embed], pith_numbers, "related", first=first, **params)
        return {
            key: [RelatedPaper(decode(row[0]), int(row[1])) for row in found.get(key, [])]
            for key in pith_numbers
        }

    def _ranked(
        self,
        statements: tuple[dict[bool, str], dict[bool, str]],
        counts: bool,
        after: str | None,
        keys: Sequence[str],
        column: str,
        first: int,
    ) -> dict[Any, Any]:
        """A first page (``statements[0]``) or a later one, after ``after`` (``statements[1]``,
        see :mod:`pith_graph.api.rank_pages`)."""
        if after is None:
            return self._by_key(statements[0][counts], keys, column, first=first)
        return self._by_key(statements[1][counts], keys, "ranked", first=first, after=after)

    def coauthors(
        self, name_keys: Sequence[str], first: int, counts: bool = True, after: str | None = None
    ) -> dict[str, list[Coauthor]]:
        statements = (cypher.READ_COAUTHORS, cypher.READ_COAUTHORS_AFTER)
        found = self._ranked(statements, counts, after, name_keys, "coauthors", first=first)
        return {
            key: [Coauthor(author(row[0]), int(row[1])) for row in found.get(key, [])] for key in name_keys
        }

    def author_categories(
        self, name_keys: Sequence[str], counts: bool = True
    ) -> dict[str, list[CategoryCount]]:
        found = self._by_key(cypher.READ_AUTHOR_CATEGORIES[counts], name_keys, "categories")
        return {
            key: sorted(
                (CategoryCount(category(row[0]), int(row[1])) for row in found.get(key, [])),
                key=lambda c: (-c.count, c.category.code),
            )
            for key in name_keys
        }

    def top_authors(
        self, codes: Sequence[str], first: int, counts: bool = True, after: str | None = None
    ) -> dict[str, list[AuthorCount]]:
        statements = (cypher.READ_TOP_AUTHORS, cypher.READ_TOP_AUTHORS_AFTER)
        found = self._ranked(statements, counts, after, codes, "authors", first=first)
        return {
            key: [AuthorCount(author(row[0]), int(row[1])) for row in found.get(key, [])] for key in codes
        }

    def co_listed(
        self, codes: Sequence[str], first: int, counts: bool = True, after: str | None = None
    ) -> dict[str, list[CategoryCount]]:
        statements = (cypher.READ_CO_LISTED, cypher.READ_CO_LISTED_AFTER)
        found = self._ranked(statements, counts, after, codes, "categories", first=first)
        return {
            key: [CategoryCount(category(row[0]), int(row[1])) for row in found.get(key, [])] for key in codes
        }

    # -- paths ---------------------------------------------------------------------------

    def collaboration_path(
        self,
        source: str,
        target: str,
        max_hops: int,
        want: PaperSelection = EVERYTHING,
        counts: bool = True,
    ) -> list[PathStep] | None:
        if source == target:
            return [] if self._by_key(cypher.READ_AUTHORS[False], [source], "author") else None
        _, params, decode = self._papers(want)
        statement = cypher.READ_COLLABORATION_PATH[(max_hops, counts)]
        rows = self._rows(statement, source=source, target=target, **params)
        if not rows:
            return None
        authors = [author(row) for row in rows[0]["authors"]]
        papers = [decode(row) for row in rows[0]["papers"]]
        return [PathStep(authors[index], paper, authors[index + 1]) for index, paper in enumerate(papers)]
