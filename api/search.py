"""Ranked search as GraphQL: ``SearchOrder``, ``SearchConnection`` and its cursors.

A search cursor is a keyset position — the paper's score and key, so a page always starts
strictly after the paper the cursor names, with nothing skipped or repeated while the
results stay the same — and the *fingerprint* of the search that handed it out (its words,
filter and order): a cursor of another search is refused (``BAD_USER_INPUT``) instead of
silently paging something else. It also carries the paper's rank, which lets the Neo4j
reader ask Lucene for just enough hits. An offset alone would shift under added papers; a
keyset alone could not be checked against its search. As with paper cursors
(:mod:`pith_graph.api.cursors`), only the encoding issued is taken, naming a place a
paper can have.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import TYPE_CHECKING, Annotated

import strawberry

from pith_graph.api.connection import Connection
from pith_graph.api.cursors import SEARCH_PREFIX, is_place
from pith_graph.api.fields import resolver
from pith_graph.api.reads.discovery import Listing, SearchPage, SearchPosition
from pith_graph.errors import BadUserInput

if TYPE_CHECKING:
    from pith_graph.api.types import Paper

__all__ = [
    "SearchConnection",
    "SearchEdge",
    "SearchOrder",
    "decode_search_cursor",
    "fingerprint",
    "search_connection",
]

#: What to do about a search cursor that is not one this API issued.
_SEARCH_CURSOR = "Pass an endCursor of a search, as it was issued."
_MAX_CURSOR_LENGTH = 300
#: More hits than any search has (Neo4j's fetch sizes are 32-bit). The offset only sizes
#: the reader's first fetch (the page starts after the score and pith number): cursors
#: past a forged one this far carry it, not more, so that they page on too.
_MAX_OFFSET = 2**31 - 1


@strawberry.enum(description="How search results are ordered.")
class SearchOrder(Enum):
    RELEVANCE = strawberry.enum_value(
        "relevance",
        description="Best match first (BM25 over title and abstract excerpt, title counting "
        "double), then by pith number.",
    )
    NEWEST = strawberry.enum_value("newest", description="Newest first, as papers(filter:) lists.")


def fingerprint(listing: Listing, order: SearchOrder) -> str:
    """A short digest of what a search asks (words, filter, order). ``latestVersions``,
    ``categories``, ``excludeCategories`` and ``allAuthors`` are not in the filter's ``repr``,
    so a search without them has the digest it had before 0.9.0 (its cursors stay valid
    across the upgrades); with them, the digest differs."""
    where = listing.where
    asked = repr((order.value, listing)) + (" latestVersions" if where.latest_versions else "")
    if where.categories:
        asked += f" categories={where.categories!r}"
    if where.exclude_categories:
        asked += f" excludeCategories={where.exclude_categories!r}"
    if where.all_authors:
        asked += f" allAuthors={where.all_authors!r}"
    return hashlib.sha256(asked.encode()).hexdigest()[:16]


def _encode(search: str, position: SearchPosition) -> str:
    raw = "|".join(
        (
            SEARCH_PREFIX,
            search,
            repr(position.score),
            position.submitted_at,
            position.pith_number,
            str(min(position.offset, _MAX_OFFSET)),
        )
    )
    return base64.urlsafe_b64encode(raw.encode()).decode("ascii").rstrip("=")


def _not_issued() -> BadUserInput:
    return BadUserInput("after is not a search cursor this API issued.", _SEARCH_CURSOR, argument="after")


def decode_search_cursor(after: str | None, search: str) -> SearchPosition | None:
    """The position of an ``after`` cursor of the search ``search`` (a :func:`fingerprint`).

    >>> position = SearchPosition(2.5, "2019-07-30T23:20:50Z", "pith:2019:BR75OIUY7WDYHPO53K7WUNQ4NZ", 20)
    >>> decode_search_cursor(_encode("abc", position), "abc") == position
    True
    """
    if after is None:
        return None
    parts: list[str] = []
    if after and len(after) <= _MAX_CURSOR_LENGTH and after.isascii():
        try:
            raw = base64.urlsafe_b64decode(after + "=" * (-len(after) % 4)).decode("utf-8")
            parts = raw.split("|")
        except (binascii.Error, ValueError):
            parts = []
    if len(parts) != 6 or parts[0] != SEARCH_PREFIX:
        raise _not_issued()
    if parts[1] != search:
        raise BadUserInput(
            "after is a cursor of another search.",
            "Page on with the same text, filter and orderBy, or start again without after.",
            argument="after",
        )
    try:
        score, offset = float(parts[2]), int(parts[5])
    except ValueError as err:
        raise _not_issued() from err
    # An edited cursor must not reach a reader: the offset sizes Neo4j's fetch (a 64-bit
    # integer), and no score is infinite or NaN.
    if not is_place(parts[3], parts[4]) or not 0 <= offset <= _MAX_OFFSET or not math.isfinite(score):
        raise _not_issued()
    position = SearchPosition(score, parts[3], parts[4], offset)
    if _encode(search, position) != after:  # "+3", "1_0", other digits, padding: not as issued
        raise _not_issued()
    return position


@strawberry.type(description="A paper found by a search, its score and its cursor.")
class SearchEdge:
    node: Annotated[Paper, strawberry.lazy("pith_graph.api.types")] = strawberry.field(
        description="The paper."
    )
    score: float = strawberry.field(
        description="BM25 relevance (higher is better); comparable within one search only."
    )
    cursor: str = strawberry.field(
        description="The edge's (score, pith number) position in this search; pass as after to this search only."
    )


@strawberry.type(description="A page of search results (Relay cursor connection).")
class SearchConnection(Connection[SearchEdge]):
    @resolver("How many papers match the search (counted only when asked for).")
    async def total_count(self) -> int:
        return await self.counter()


def search_connection(
    page: SearchPage,
    search: str,
    after: SearchPosition | None,
    counter: Callable[[], Awaitable[int]],
    listing: Listing,
) -> SearchConnection:
    """A connection over a page of search results."""
    from pith_graph.api.types import Paper

    edges = []
    for index, item in enumerate(page.items):
        paper = item.paper
        position = SearchPosition(item.score, paper.submitted_at, paper.pith_number, page.offset + index + 1)
        edges.append(
            SearchEdge(node=Paper.from_record(paper), score=item.score, cursor=_encode(search, position))
        )
    return SearchConnection.of(edges, page.has_next, after is not None, counter, listing)
