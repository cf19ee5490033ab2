"""What every Neo4j read shares: running statements (see
:mod:`pith_graph.api.reads.neo4j_session`), decoding papers for a selection, keeping the
relations a selection embedded for the call that asks for them next, and checking that a
request's statements read one state of each paper (:meth:`Neo4jBase.check_stamp`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import neo4j

from pith_graph.api.reads import cypher
from pith_graph.api.reads.neo4j_rows import author_list, category_links, paper_decoder, paper_properties
from pith_graph.api.reads.neo4j_session import EachInItsOwn, Statements, named_parameters
from pith_graph.api.reads.records import (
    AuthorPage,
    CategoryLink,
    ListingOrder,
    Page,
    PaperKey,
    PaperSelection,
)
from pith_graph.api.reads.torn import TornRead
from pith_graph.schema.rows import PaperRow

__all__ = ["WARM_UP", "Neo4jBase", "after_parameters"]

#: What a reader has the server plan ahead, where it may have restarted
#: (:class:`~pith_graph.api.reads.neo4j_session.EachInItsOwn`): a statement of each main
#: read, its variant that embeds and counts the most. Enough for the server's JVM to have
#: compiled its planner: later first plans take a fraction of a second, not seconds.
WARM_UP = (
    cypher.READ_RESOLVE_IDENTIFIERS,
    *(
        list(variants.values())[-1]
        for variants in (
            cypher.READ_PAPERS_BY_IDENTIFIERS,
            cypher.READ_PAPERS,
            cypher.READ_LIST_PAPERS,
            cypher.READ_RELATED_PAPERS,
            cypher.READ_CATEGORIES_OF_PAPERS,
            cypher.READ_AUTHOR_PAGES,
            cypher.READ_AUTHORS,
            cypher.READ_PAPERS_OF_AUTHORS,
        )
    ),
)

#: ``[values, authors, categories]`` -> the paper (keeping what was embedded).
_Decode = Callable[[Sequence[Any]], PaperRow]


def after_parameters(after: PaperKey | None) -> dict[str, str | None]:
    """The keyset position of a page as statement parameters."""
    if after is None:
        return {"afterAt": None, "afterPith": None}
    return {"afterAt": after.submitted_at, "afterPith": after.pith_number}


class Neo4jBase:
    """Runs the read statements of one database and decodes their rows."""

    def __init__(
        self,
        driver: neo4j.Driver,
        database: str = "neo4j",
        *,
        uri: str = "neo4j",
        timeout: float | None = None,
        statements: Statements | None = None,
        open_async: Callable[[], neo4j.AsyncDriver] | None = None,
    ) -> None:
        self.driver = driver
        #: Opens the asyncio driver of bridged request readers, on first use.
        self.open_async = open_async
        self.database = database
        self.uri = uri
        self.timeout = timeout
        self._request = statements is not None
        self._statements = statements or EachInItsOwn(driver, database, uri, timeout, WARM_UP)
        #: (relation, counted) -> pith number -> records fetched ahead (request readers only;
        #: categories: with how many of each paper's were asked for).
        self._ahead: dict[tuple[str, bool], dict[str, Any]] = {}
        #: pith number -> the stamp (bundle digest and key) of the state of the paper the
        #: request's statements read, None where one found no such paper (request readers).
        self._stamps: dict[str, tuple[str, str] | None] = {}

    def forget(self) -> None:
        """Forget what the request read (embedded relations, stamps): before it reads again."""
        self._ahead.clear()
        self._stamps.clear()

    def check_stamp(
        self, pith_number: str, stamp: Sequence[str] | None, *again: Sequence[str | None]
    ) -> None:
        """Note that a statement read this state of the paper (``None``: none found); raise
        :class:`~pith_graph.api.reads.torn.TornRead` if an earlier statement of the
        request read another, or the statement itself read another ``again`` (its stamp
        read before and after the rest of the paper: ``cypher_parts.stamp``).

        Neo4j's READ COMMITTED lets each statement of a transaction see what was committed
        before it began, and each read of a statement what was committed before that read: a
        load that replaced the paper between two statements, or between a statement's read
        of its authors and of its title, would otherwise mix its two states in one answer. A
        replacement always changes the paper's bundle (digest, or the key of a re-signed
        copy); a paper removed is none found, or within a statement a stamp of nulls.
        Request readers only (a reader's own statements are independent)."""
        if not self._request:
            return
        state = None if stamp is None else (stamp[0], stamp[1])
        if (
            (state is not None and None in state)  # a node without its properties (yet, or any more)
            or any(state != (read[0], read[1]) for read in again)
            or self._stamps.setdefault(pith_number, state) != state
        ):
            raise TornRead(pith_number)

    # -- running statements --------------------------------------------------------------

    def _rows(self, statement: str, **parameters: Any) -> list[neo4j.Record]:
        """``statement``'s records, sent only the ``parameters`` it names (since 0.9.14): Neo4j
        keys a cached plan by the type of every parameter sent, used or not, so a parameter
        the statement does not name, null in one call and a value in the next, had it planned
        again (a listing statement, 0.1–0.2 s against 5 ms)."""
        named = named_parameters(statement)
        return self._statements.rows(statement, {k: v for k, v in parameters.items() if k in named})

    def _by_key(self, statement: str, keys: Sequence[Any], column: str, **parameters: Any) -> dict[Any, Any]:
        if not keys:
            return {}
        rows = self._rows(statement, keys=list(dict.fromkeys(keys)), **parameters)
        return {row["key"]: row[column] for row in rows}

    def _of_papers(
        self, statement: str, keys: Sequence[str], column: str, **parameters: Any
    ) -> dict[str, Any]:
        """``_by_key`` over papers by pith number, with a statement that also returns each
        paper's ``stamp`` (read before and after the rest): checked against the request's
        earlier statements."""
        if not keys:
            return {}
        rows = self._rows(statement, keys=list(dict.fromkeys(keys)), **parameters)
        found = {row["key"]: row[column] for row in rows}
        if self._request:
            for row in rows:
                before, after = row["stamp"]
                self.check_stamp(row["key"], after, before)
            for key in keys:
                if key not in found:
                    self.check_stamp(key, None)
        return found

    def _papers(self, want: PaperSelection) -> tuple[cypher.Embed, dict[str, Any], _Decode]:
        """The statement variant, parameters and decoder of papers for ``want``. Only a
        request reader embeds relations: it keeps them for the call that asks next."""
        props = paper_properties(want)
        decoded = paper_decoder(props)  # torn if a property is missing (neo4j_rows._whole)

        def values(projected: Sequence[Any]) -> PaperRow:
            return decoded(projected[0])

        if not self._request:
            return (None, None), {"props": list(props)}, values
        check = self.check_stamp

        def stamped(projected: Sequence[Any]) -> PaperRow:
            paper = values(projected)
            check(paper.pith_number, (paper.bundle_sha256, paper.bundle_key_id), *projected[3])
            if len(projected) > 4 and projected[4] is not True:  # no longer on the page it was chosen for
                raise TornRead(paper.pith_number)
            return paper

        if want.authors is None and want.categories is None:
            return (None, None), {"props": list(props)}, stamped
        embed: cypher.Embed = (want.authors, want.categories)
        authors_kept = self._ahead.setdefault(("authors", bool(want.authors)), {})
        categories_kept = self._ahead.setdefault(("categories", bool(want.categories)), {})
        seen: dict[tuple[Any, ...], Any] = {}

        def decode(projected: Sequence[Any]) -> PaperRow:
            paper = stamped(projected)
            if projected[1] is not None:
                total, rows = projected[1]
                authors_kept[paper.pith_number] = AuthorPage(tuple(author_list(rows, seen)), int(total))
            if projected[2] is not None:
                categories_kept[paper.pith_number] = (want.categories_first, category_links(projected[2]))
            return paper

        parameters: dict[str, Any] = {"props": list(props)}
        if want.authors is not None:
            parameters["authorsFirst"] = want.authors_first
        if want.categories is not None:
            parameters["categoriesFirst"] = want.categories_first
        return embed, parameters, decode

    def _kept_authors(self, counts: bool, keys: Sequence[str], first: int) -> dict[str, AuthorPage] | None:
        """The first ``first`` authors of each of ``keys`` from what an embedding fetched
        (counted if ``counts``), if it fetched that many (or all) of every one."""
        found = self._kept("authors", counts, keys)
        if found is None or not all(
            first <= len(p.authors) or len(p.authors) == p.total for p in found.values()
        ):
            return None
        return {key: AuthorPage(page.authors[:first], page.total) for key, page in found.items()}

    def _kept_categories(
        self, counts: bool, keys: Sequence[str], first: int
    ) -> dict[str, list[CategoryLink]] | None:
        """The first ``first`` categories of each of ``keys`` from what an embedding fetched
        (the first ``fetched`` of each, counted if ``counts``), if it fetched that many (or
        all) of every one."""
        found = self._kept("categories", counts, keys)
        if found is None or not all(
            first <= fetched or len(links) < fetched for fetched, links in found.values()
        ):
            return None
        return {key: links[:first] for key, (_, links) in found.items()}

    def _kept(self, relation: str, counts: bool, keys: Sequence[str]) -> dict[str, Any] | None:
        """What an embedding fetched for every one of ``keys`` (counted if ``counts``)."""
        for counted in (True,) if counts else (False, True):
            found = self._ahead.get((relation, counted))
            if found is not None and all(key in found for key in keys):
                return {key: found[key] for key in keys}
        return None

    def _page(self, rows: Sequence[Sequence[Any]], first: int, decode: _Decode, oldest: bool = False) -> Page:
        papers = [decode(row) for row in rows]
        papers.sort(key=lambda p: (p.submitted_at, p.pith_number), reverse=not oldest)
        return Page(tuple(papers[:first]), len(papers) > first)

    def _pages(
        self,
        page: str,
        keys: Sequence[str],
        first: int,
        after: PaperKey | None,
        want: PaperSelection,
        order: ListingOrder,
        **extra: Any,
    ) -> dict[str, Page]:
        """A page of each of ``keys`` in ``order`` (``page``: which, one of
        ``cypher.KEYED_PAGES``)."""
        oldest = order == "oldest"
        embed, params, decode = self._papers(want)
        found = self._by_key(
            cypher.papers_of_statement(page, embed, order, after is not None),
            keys,
            "papers",
            limit=first + 1,
            **after_parameters(after),
            **params,
            **extra,
        )
        return {key: self._page(found.get(key, []), first, decode, oldest) for key in keys}
