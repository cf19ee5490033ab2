"""Relay cursor connections over reader pages: their edges, page info, totals and facets,
and how a page is read (:class:`Paging`), with cursors of :mod:`pith_graph.api.cursors`.

``papers(last:, before:)`` (``Query.papers`` since 0.9.2, an author's, a category's and a
signer's since 0.9.4; :class:`Paging`) pages back from the same cursors,
read as the other order's page after them, reversed; its ``hasNextPage`` is read since 0.9.3
(:class:`Reach`: whether the listing has papers from the cursor on), as is the
``hasPreviousPage`` of a page after a cursor (papers up to it), each only when asked for.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Generic, Protocol, Self, TypeVar

import strawberry

from pith_graph.api.context import Context
from pith_graph.api.cursors import decode_cursor, encode_cursor
from pith_graph.api.facets import FACETS_DOC, FACETS_FIRST, Facets, facets_of
from pith_graph.api.fields import argument, resolver
from pith_graph.api.limits import RequestLimits, page_size
from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.records import ListingOrder, Page, PaperFilter, PaperKey, PaperSelection, paper_key
from pith_graph.errors import BadUserInput

if TYPE_CHECKING:
    from pith_graph.api.types import Paper

__all__ = [
    "PAPERS_BACK",
    "PAPERS_ON",
    "Connection",
    "OrderBy",
    "Owned",
    "PageInfo",
    "Paging",
    "PaperConnection",
    "PaperEdge",
    "PaperOrder",
    "Reach",
    "known_count",
    "listing_order",
    "owned_papers",
    "paged_connection",
    "paging",
    "paper_connection",
]

#: How a paper connection pages on: the hint of a ``first`` over the cap (:func:`~pith_graph.api.limits.page_size`).
PAPERS_ON = "; a page of papers goes on with its endCursor as after"
#: How it pages back: the hint of a ``last`` over the cap.
PAPERS_BACK = "; a page of papers goes back with its startCursor as before"


@strawberry.enum(
    description="The order of papers(filter:) (since 0.9.1) and of an author's, a category's and a "
    "signer's papers (since 0.9.3)."
)
class PaperOrder(Enum):
    NEWEST = strawberry.enum_value(
        "newest", description="Newest first: submittedAt, then pith number, both descending."
    )
    OLDEST = strawberry.enum_value(
        "oldest", description="Oldest first: submittedAt, then pith number, both ascending (NEWEST reversed)."
    )


#: ``orderBy`` of a paper listing: ``Query.papers`` (since 0.9.1) and an author's, a
#: category's and a signer's ``papers`` (since 0.9.3; paging back too since 0.9.4).
OrderBy = Annotated[
    PaperOrder | None,
    argument("NEWEST (also for null) or OLDEST; after and before: cursors of the same order."),
]


def listing_order(order: PaperOrder | str | None) -> ListingOrder:
    """The reader's order of an ``orderBy`` (as strawberry or graphql-core gives it; null: newest).

    >>> listing_order(PaperOrder.OLDEST), listing_order("oldest"), listing_order(None)
    ('oldest', 'oldest', 'newest')
    """
    return "oldest" if order in (PaperOrder.OLDEST, "oldest") else "newest"


def paper_type() -> Any:
    """The ``Paper`` object type (imported late: it refers to connections too)."""
    from pith_graph.api.types import Paper

    return Paper


_BOTH_WAYS = "papers pages forwards (first, after) or backwards (last, before), not both in one page"
#: What to do, also for a client that merges a query's variables into the next page's
#: (Apollo's fetchMore keeps first when asked for last and before).
_ONE_WAY = (
    "Ask for the page after a cursor with first and after, the page before one with last and "
    "before; set the other direction's arguments to null (a client that merges variables keeps them)."
)


_ARGUMENTS = ("first", "after", "last", "before")


def _other(order: ListingOrder) -> ListingOrder:
    return "oldest" if order == "newest" else "newest"


#: What a :class:`Reach` reads of its one paper: its place (the reader's core properties).
_PLACE_ONLY = PaperSelection(frozenset())


@dataclass(frozen=True, slots=True)
class Owned:
    """An owner's papers as the reader lists them (``method``: ``papers_of_authors``, ...,
    given owner keys; ``extra``: its arguments between the selection and the order, a
    signer's ``signedBundle``)."""

    method: str
    key: str
    extra: tuple[Hashable, ...] = ()


@dataclass(frozen=True, slots=True)
class Reach:
    """Whether a listing (``where``) has a paper at ``key`` or beyond it on one side: its end
    on that side, the first paper of ``read``'s order (one LIMIT 1 read, :meth:`call`), is
    not strictly after ``key`` in that order (since 0.9.3). ``papers(before:)``'s hasNextPage:
    a paper at or after the cursor's place; ``papers(after:)``'s hasPreviousPage: one at or
    before it (the cursor's own paper if still listed, either way). An :class:`Owned` listing
    (an author's, a category's, a signer's papers) is read by its owner's batched method."""

    where: PaperFilter | Owned
    read: ListingOrder
    key: PaperKey

    def call(self) -> tuple[Any, ...]:
        """The arguments of the reader's ``list_papers`` that reads the end of a filter's listing."""
        return (self.where, 1, None, _PLACE_ONLY, self.read)

    def owned(self, owned: Owned) -> tuple[str, tuple[Hashable, ...]]:
        """The reader's method that reads the end of ``owned``'s listing (given owner keys),
        and its arguments after them."""
        return owned.method, (1, None, _PLACE_ONLY, *owned.extra, self.read)

    def holds(self, end: Page) -> bool:
        """Whether the end read (:meth:`call`'s page) is at ``key`` or beyond it."""
        if not end.items:
            return False
        place = paper_key(end.items[0])
        return place >= self.key if self.read == "newest" else place <= self.key


@dataclass(frozen=True, slots=True)
class Paging:
    """How a page of a listing in ``order`` is read: ``size`` papers after the cursor ``key``
    or, ``backward`` (``last``/``before``, since 0.9.2), the last ``size`` before it. A page
    backward is the other order's page after the same place, reversed: the readers have it."""

    size: int
    key: PaperKey | None
    order: ListingOrder
    backward: bool = False

    @property
    def read_order(self) -> ListingOrder:
        """The order the reader lists the page in."""
        return _other(self.order) if self.backward else self.order

    def turn(self, page: Page, where: PaperFilter | Owned) -> tuple[Page, bool | Reach, bool | Reach]:
        """The reader's ``page`` as the listing ``where`` shows it (its order), hasNextPage and
        hasPreviousPage; since 0.9.3 the side toward the cursor is the listing's
        :class:`Reach` from it on (none without a cursor: the listing's end). Forwards: more
        follow; ``after``'s reach. Backward: ``before``'s reach; more come before."""
        reach = self.reach(where)
        if not self.backward:
            return page, page.has_next, False if reach is None else reach
        return Page(page.items[::-1], False), False if reach is None else reach, page.has_next

    def reach(self, where: PaperFilter | Owned) -> Reach | None:
        """What the side toward the cursor reads: hasNextPage of a page before it,
        hasPreviousPage of one after it (none without a cursor)."""
        return None if self.key is None else Reach(where, self.read_order, self.key)

    @property
    def toward(self) -> str:
        """The PageInfo field :meth:`reach` answers."""
        return "hasNextPage" if self.backward else "hasPreviousPage"


def paging(
    limits: RequestLimits,
    order: ListingOrder,
    first: int | None,
    after: str | None,
    last: int | None = None,
    before: str | None = None,
) -> Paging:
    """The :class:`Paging` of ``Query.papers``' arguments: forwards unless ``last`` or
    ``before`` is given; mixing ``first``/``after`` with them is refused (``BAD_USER_INPUT``).
    The size is checked before the cursor, each as ``first`` and ``after`` are."""
    if last is None and before is None:
        return Paging(page_size(first, limits, on=PAPERS_ON), decode_cursor(after, order), order)
    if first is not None or after is not None:
        given = [
            name
            for name, value in zip(_ARGUMENTS, (first, after, last, before), strict=True)
            if value is not None
        ]
        raise BadUserInput(f"{_BOTH_WAYS}: {', '.join(given[:-1])} and {given[-1]} were given.", _ONE_WAY)
    size = page_size(last, limits, on=PAPERS_BACK, name="last")
    return Paging(size, decode_cursor(before, order, "before"), order, True)


_FACETS_FIRST = "Values per facet: null is 10 (the page cap when that is lower); at most the page cap."


async def _reached(side: bool | Reach, context: Context) -> bool:
    if isinstance(side, bool):
        return side
    if isinstance(side.where, PaperFilter):
        # Through a loader: the same end asked for again (aliased hasPreviousPage fields, 30 of
        # them cost 30 reads before) is read once.
        ends = context.batch(("reach", "list_papers"), partial(_list_ends, context.reader), _no_page)
        return side.holds(await ends.load(side.call()))
    return side.holds(await context.owned(*side.owned(side.where)).load(side.where.key))


def _list_ends(reader: Any, calls: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], Page]:
    return {call: reader.list_papers(*call) for call in calls}


def _no_page() -> Page:
    return Page((), False)


async def _has_next(root: PageInfo, info: strawberry.Info[Context, None]) -> bool:
    return await _reached(root.next, info.context)


async def _has_previous(root: PageInfo, info: strawberry.Info[Context, None]) -> bool:
    return await _reached(root.previous, info.context)


@strawberry.type(description="Where a page of a connection starts and ends.")
class PageInfo:
    has_next_page: bool = strawberry.field(
        resolver=_has_next,
        description="True when more items follow this page; for papers(before:): true when the listing "
        "has a paper at or after before's place (since 0.9.3; 0.9.2 answered true whenever before was "
        "given).",
    )
    has_previous_page: bool = strawberry.field(
        resolver=_has_previous,
        description="With after: true when the listing has a paper at or before after's place (since "
        "0.9.4; 0.9.3 answered true whenever after was given); for papers(last:) or papers(before:) "
        "(Query.papers since 0.9.2; an author's, a category's, a signer's since 0.9.4): true when more "
        "papers come before it; otherwise false.",
    )
    start_cursor: str | None = strawberry.field(
        description="The first edge's cursor (for papers, pass it as before for the page before, since "
        "0.9.2); null for an empty page."
    )
    end_cursor: str | None = strawberry.field(
        description="The last edge's cursor (pass it as after for the next page); null for an empty page."
    )
    #: hasNextPage and hasPreviousPage: known, or read when asked for (:class:`Reach`).
    next: strawberry.Private[bool | Reach]
    previous: strawberry.Private[bool | Reach]


@strawberry.type(description="A paper and its cursor.")
class PaperEdge:
    cursor: str = strawberry.field(
        description="The paper's position in its listing's order (valid while papers are added); pass as after, or as before for the papers before it (Query.papers since 0.9.2; an author's, a category's and a signer's papers since 0.9.4)."
    )
    node: Annotated[Paper, strawberry.lazy("pith_graph.api.types")] = strawberry.field(
        description="The paper."
    )


class _Edge(Protocol):
    @property
    def cursor(self) -> str: ...

    @property
    def node(self) -> Paper: ...


E = TypeVar("E", bound=_Edge)


@strawberry.type
class Connection(Generic[E]):
    """What the connections of papers share: their page, its :class:`PageInfo`, its nodes, the
    listing's total and its facets. A subclass names the edge type and its own GraphQL type
    (and may describe ``totalCount`` anew); this base is in no schema."""

    edges: list[E] = strawberry.field(description="The page's items, each with its cursor.")
    page_info: PageInfo = strawberry.field(
        description="Whether more follow, and the page's first and last cursors."
    )
    counter: strawberry.Private[Callable[[], Awaitable[int]]]
    listing: strawberry.Private[Listing]

    @resolver("The papers of this page (the edges' nodes).")
    def nodes(self) -> list[Annotated[Paper, strawberry.lazy("pith_graph.api.types")]]:
        return [edge.node for edge in self.edges]

    @resolver("How many papers the whole listing holds (counted only when asked for).")
    async def total_count(self) -> int:
        return await self.counter()

    @resolver(FACETS_DOC)
    def facets(
        self,
        info: strawberry.Info[Context, None],
        first: Annotated[int | None, argument(_FACETS_FIRST)] = FACETS_FIRST,
    ) -> Facets:
        return facets_of(self.listing, first, info.context)

    @classmethod
    def of(
        cls,
        edges: list[E],
        has_next: bool | Reach,
        has_previous: bool | Reach,
        counter: Callable[[], Awaitable[int]],
        listing: Listing,
    ) -> Self:
        """The connection over a page's ``edges`` (``has_previous`` when it was asked for with after)."""
        return cls(
            edges=edges,
            page_info=PageInfo(
                next=has_next,
                previous=has_previous,
                start_cursor=edges[0].cursor if edges else None,
                end_cursor=edges[-1].cursor if edges else None,
            ),
            counter=counter,
            listing=listing,
        )


@strawberry.type(
    description="A page of papers, newest first unless asked otherwise (Relay cursor connection)."
)
class PaperConnection(Connection[PaperEdge]):
    pass


def paper_connection(
    page: Page,
    after: PaperKey | None,
    counter: Callable[[], Awaitable[int]],
    listing: Listing,
    order: ListingOrder = "newest",
) -> PaperConnection:
    """A connection over a reader page (in ``order``: its cursors say which)."""
    return PaperConnection.of(_edges(page, order), page.has_next, after is not None, counter, listing)


def _edges(page: Page, order: ListingOrder) -> list[PaperEdge]:
    return [
        PaperEdge(cursor=encode_cursor(paper_key(record), order), node=paper_type().from_record(record))
        for record in page.items
    ]


def paged_connection(
    page: Page,
    paging: Paging,
    counter: Callable[[], Awaitable[int]],
    listing: Listing,
    owned: Owned | None = None,
) -> PaperConnection:
    """A connection over the reader page a :class:`Paging` read of ``listing`` (in its order;
    ``owned``: the listing is an owner's papers, its reader method reads its end)."""
    shown, has_next, has_previous = paging.turn(page, listing.where if owned is None else owned)
    edges = _edges(shown, paging.order)
    return PaperConnection.of(edges, has_next, has_previous, counter, listing)


async def owned_papers(
    context: Context,
    owned: Owned,
    counter: Callable[[], Awaitable[int]],
    listing: Listing,
    order_by: PaperOrder | None,
    pages: tuple[int | None, str | None, int | None, str | None],
) -> PaperConnection:
    """An author's, a category's or a signer's ``papers`` (``pages``: its first, after, last
    and before; backward since 0.9.4, as ``Query.papers`` pages): the page every owner of the
    level asking for the same one gets from one call of ``owned.method``, turned by :class:`Paging`."""
    paged = paging(context.limits, listing_order(order_by), *pages)
    rest = (*owned.extra, paged.read_order)
    page = await context.owned_page(owned.method, paged.size, paged.key, rest).load(owned.key)
    return paged_connection(page, paged, counter, listing, owned)


def known_count(value: int) -> Callable[[], Awaitable[int]]:
    async def count() -> int:
        return value

    return count
