"""The Neo4j answers to :class:`~pith_graph.api.reads.discovery.DiscoveryReads`.

A mixin of :class:`~pith_graph.api.reads.neo4j.Neo4jReader`: each method is one statement
of :mod:`~pith_graph.api.reads.cypher_discovery` (a facet: one statement per facet; a
relevance page: one, rarely more, see :meth:`Neo4jDiscoveryReads.search_papers`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from pith_graph.api.reads import cypher_discovery as cypher
from pith_graph.api.reads import neo4j_rows
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
from pith_graph.api.reads.folding import prefix_query
from pith_graph.api.reads.records import AuthorRecord
from pith_graph.api.reads.text_index import text_query
from pith_graph.api.reads.words import lucene_query, quoted
from pith_graph.schema.database import indexes

if TYPE_CHECKING:
    import neo4j

__all__ = ["Neo4jDiscoveryReads", "listing_checks", "listing_parameters", "listing_start"]

_FULLTEXT = {spec.name: spec for spec in indexes() if spec.kind == "fulltext"}
TITLE_INDEX = "paper_title_fulltext"
TEXT_INDEX = "paper_text_fulltext"
AUTHOR_INDEX = "author_namefolded_fulltext"
assert {TITLE_INDEX, TEXT_INDEX, AUTHOR_INDEX} <= set(_FULLTEXT)
#: Lucene hits fetched beyond the page at first; each retry fetches four times more.
_FETCH_MARGIN = 32
_NO_LIMIT = 2**31 - 1


def listing_start(listing: Listing) -> str:
    where = listing.where
    if listing.text:
        return "text"
    if where.title_terms:
        return "title"
    for start, value in (
        ("authors", where.all_authors or None),
        ("author", where.author),
        ("category", where.category),
        ("categories", where.categories or None),
        ("signer" if listing.signed_bundle is None else "signedBundle", listing.signer),
        ("archive", where.archive),
    ):
        if value is not None:
            return start
    return "all"


def listing_checks(listing: Listing) -> frozenset[str]:
    """The filters the listing has (besides search and title words)."""
    where = listing.where
    given = {
        "from": where.submitted_from,
        "before": where.submitted_before,
        "license": where.license,
        "category": where.category,
        "archive": where.archive,
        "author": where.author,
        "authors": where.all_authors or None,
        # with its signedBundle, one check (since 0.9.14: a null one had Neo4j plan again)
        "signer": listing.signer if listing.signed_bundle is None else None,
        "signedBundle": listing.signed_bundle if listing.signer is not None else None,
        "categories": where.categories or None,
        "excluded": where.exclude_categories or None,
    }
    found = {name for name, value in given.items() if value is not None}
    return frozenset(found | {"latest"} if where.latest_versions else found)


def listing_parameters(listing: Listing) -> dict[str, Any]:
    where = listing.where
    lucene = text_query(listing.text)
    if where.title_terms:  # required, zero boost: filters without changing scores
        lucene += " " + " ".join(f"+title:{quoted(term)}^0" for term in where.title_terms)
    return {
        "textIndex": TEXT_INDEX,
        "lucene": lucene,
        "titleIndex": TITLE_INDEX,
        "titleLucene": lucene_query(where.title_terms),
        "author": where.author,
        "authors": list(where.all_authors),
        "category": where.category,
        "archive": where.archive,
        "signer": listing.signer,
        "signedBundle": listing.signed_bundle,
        "from": where.submitted_from,
        "before": where.submitted_before,
        "license": where.license,
        "categories": list(where.categories),
        "excluded": list(where.exclude_categories),
    }


def _kept(ranks: Sequence[Sequence[Any]], first: int, order: Callable[[Any], Any]) -> list[tuple[int, Any]]:
    """The ``first`` (count, value) of the ranks ``[count, values]`` a ``_RANKS`` statement
    kept: most papers first, then by ``order`` of the value."""
    rows = [(int(count), value) for count, values in ranks for value in values]
    rows.sort(key=lambda row: (-row[0], order(row[1])))
    return rows[:first]


def _as_cypher_orders(value: Any) -> tuple[bool, Any]:
    """A facet value's sort key as Cypher orders values: numbers as numbers, a null last."""
    return (value is None, value if value is not None else 0)


class Neo4jDiscoveryReads:
    """Batch lookups, ranked search, facets and typeahead from Neo4j."""

    if TYPE_CHECKING:  # provided by Neo4jReader

        def _rows(self, statement: str, **parameters: Any) -> list[neo4j.Record]: ...

        def check_stamp(self, pith_number: str, stamp: Sequence[str] | None) -> None: ...

    def _stamped(self, rows: Sequence[Mapping[str, Any]]) -> list[ScoredPaper]:
        """The scored papers of ``rows`` (``{paper: properties, score}``), each paper's state
        noted (see ``Neo4jBase.check_stamp``); one missing a property is torn (``neo4j_rows``)."""
        items = []
        for row in rows:
            paper = neo4j_rows.paper(row["paper"])
            self.check_stamp(paper.pith_number, (paper.bundle_sha256, paper.bundle_key_id))
            items.append(ScoredPaper(paper, float(row["score"])))
        return items

    def count_listing(self, listing: Listing) -> int:
        statement = cypher.count_statement(listing_start(listing), listing_checks(listing))
        return int(self._rows(statement, **listing_parameters(listing))[0]["n"])

    def facet_counts(
        self, listing: Listing, facets: Sequence[Facet], first: int
    ) -> dict[Facet, list[FacetCount]]:
        wanted = tuple(facet for facet in FACETS if facet in facets)
        if not wanted:
            return {}
        if listing == EVERY_PAPER:
            return self._corpus_facets(wanted, first)
        return self._listing_facets(listing, wanted, first)

    def _listing_facets(
        self, listing: Listing, wanted: tuple[Facet, ...], first: int
    ) -> dict[Facet, list[FacetCount]]:
        """The facets of ``listing`` counted paper by paper (any listing)."""
        statement = cypher.facets_statement(listing_start(listing), listing_checks(listing), wanted)
        row = self._rows(statement, first=first, **listing_parameters(listing))[0]
        result: dict[Facet, list[FacetCount]] = {}
        for facet in wanted:
            if facet in ("categories", "archives"):
                counts: Counter[str] = Counter()
                for combination in row["combinations"]:
                    values = combination["codes" if facet == "categories" else "archives"]
                    for value in set(values):
                        counts[value] += int(combination["count"])
                result[facet] = top_counts(counts, first)
            else:
                kept = _kept(row[facet], first, _as_cypher_orders)
                result[facet] = [FacetCount(str(value), count) for count, value in kept]
        return result

    def _corpus_facets(self, wanted: tuple[Facet, ...], first: int) -> dict[Facet, list[FacetCount]]:
        """The facets of every paper without reading each paper: the general statement reads
        every paper's properties and edges and holds them all at once (1 s at 238k papers;
        out of transaction memory with ``first`` 100 while it still ordered in Neo4j); this
        one the Category and top Author nodes, the index entries of years and licenses and
        the category edges (for archives): 0.18 s (see
        :data:`~.cypher_discovery.CORPUS_FACETS`)."""
        row = self._rows(cypher.corpus_facets_statement(wanted), first=first)[0]
        result: dict[Facet, list[FacetCount]] = {}
        for facet in wanted:
            found = [FacetCount(str(item["value"]), int(item["count"])) for item in row[facet]]
            if facet in ("categories", "archives"):
                found = top_counts({item.value: item.count for item in found}, first)
            result[facet] = found
        return result

    def search_papers(
        self, listing: Listing, order: SearchOrder, first: int, after: SearchPosition | None
    ) -> SearchPage:
        offset = after.offset if after is not None else 0
        parameters = listing_parameters(listing)
        if order == "newest":
            rows = self._rows(
                cypher.search_statement(order, listing_checks(listing), after is not None),
                limit=first + 1,
                afterAt=after.submitted_at if after is not None else None,
                afterPith=after.pith_number if after is not None else None,
                **parameters,
            )
            items = self._stamped(rows)
            return SearchPage(tuple(items[:first]), len(items) > first, offset)
        # Lucene ranks by score alone, cutting ties anywhere: fetch the best hits beyond the
        # page and retry with more until the hits left behind cannot belong on it.
        fetch = min(offset + first + 1 + _FETCH_MARGIN, _NO_LIMIT)
        statement = cypher.search_statement(order, listing_checks(listing), after is not None)
        while True:
            row = self._rows(
                statement,
                fetch=fetch,
                limit=first + 1,
                afterScore=after.score if after is not None else None,
                afterPith=after.pith_number if after is not None else None,
                **parameters,
            )[0]
            items = self._stamped(row["page"])
            complete = int(row["fetched"]) < fetch or (
                len(items) == first + 1 and float(row["floor"]) < items[-1].score
            )
            if complete or fetch >= _NO_LIMIT:
                return SearchPage(tuple(items[:first]), len(items) > first, offset)
            fetch = min(fetch * 4, _NO_LIMIT)

    #: Typeahead: how many of the most prolific authors a short prefix is looked for in
    #: before the full-text index is asked; how many matches the full-text index ranks (with
    #: more, the prefix is common: the walk down the most prolific authors answers it).
    typeahead_scan = 4000
    typeahead_cap = 3000

    def authors_by_prefix(self, keys: Sequence[str], first: int) -> list[AuthorRecord]:
        """Common words are answered by walking the most prolific authors, rare ones by the
        full-text index: a one- or two-letter word walks first; anything else asks the index
        first, and walks when it finds more than ``typeahead_cap`` matches (at most two
        statements either way)."""
        if not keys or first == 0:
            return []
        if len(keys) == 1 and len(keys[0]) <= 2:
            walked = self._walk(keys, first, min(self.typeahead_scan, _NO_LIMIT))
            if walked is not None:
                return walked
        (row,) = self._rows(
            cypher.READ_AUTHORS_BY_PREFIX,
            index=AUTHOR_INDEX,
            query=prefix_query(keys),
            first=first,
            cap=self.typeahead_cap,
        )
        if int(row["found"]) < self.typeahead_cap:
            kept = _kept(row["ranks"], first, itemgetter(0))  # then by name key
            return [AuthorRecord(key, name, count) for count, (key, name) in kept]
        # More than typeahead_cap authors match: the most prolific ones hold the answer.
        return self._walk(keys, first, _NO_LIMIT) or []

    def _walk(self, keys: Sequence[str], first: int, scan: int) -> list[AuthorRecord] | None:
        rows = self._rows(
            cypher.READ_AUTHORS_BY_PREFIX_SCAN,
            keys=list(keys),
            first=first,
            scan=scan,
            everyone=scan >= _NO_LIMIT,
        )
        if not rows:
            return None
        return [AuthorRecord(row["nameKey"], row["name"], int(row["paperCount"])) for row in rows]
