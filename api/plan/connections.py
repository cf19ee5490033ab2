"""Paper connections as a plan resolves them (see :mod:`pith_graph.api.plan.fields`):
``Query.papers`` and the ``papers`` of an author, a category or a signer, each a
:class:`Connection` (a page, where it starts, how its total is known), and the fields of
``PaperConnection``, ``PaperEdge`` and ``PageInfo``. As the resolvers
(:mod:`pith_graph.api.connection`) answer them: the same reader calls, cursors and errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from pith_graph.api.connection import Owned, Paging, Reach, listing_order, paging
from pith_graph.api.connection import PageInfo as PageInfoObject
from pith_graph.api.cursors import cursor_of
from pith_graph.api.inputs import filter_from_arguments
from pith_graph.api.plan.specs import Spec, Step, load, value
from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.records import ListingOrder, Page, PaperFilter
from pith_graph.schema.rows import PaperRow

__all__ = ["CONNECTION_FIELDS", "Connection", "Edge", "page_of", "papers"]


@dataclass(frozen=True, slots=True)
class Connection:
    """A ``PaperConnection``: a page, whether more follow and come before, and its total
    (known, or counted with ``where``: a filter, or a signer's listing)."""

    page: Page  # in the listing's order
    has_next: bool
    has_previous: bool
    count: int | None = None
    where: PaperFilter | Listing | None = None
    order: ListingOrder = "newest"


@dataclass(frozen=True, slots=True)
class Edge:
    cursor: str
    node: PaperRow


def papers(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
    """``Query.papers``: a page in its ``orderBy`` (graphql-core gives the enum's value),
    forwards or backward (:func:`~pith_graph.api.connection.paging`, as the resolver pages).
    The side toward a cursor (hasNextPage before it, hasPreviousPage after it) reads its
    :class:`~pith_graph.api.connection.Reach` in the same batch when the selection asks for
    it (:attr:`~pith_graph.api.plan.specs.Hint.page_info`; one LIMIT 1 read)."""
    where = filter_from_arguments(step.args.get("filter"))
    order, paged = _paging(step)
    page = step.batch.call("list_papers", where, paged.size, paged.key, step.want, paged.read_order)
    end = _end(step, paged.reach(where), paged.toward)

    def connection() -> list[Any]:
        shown, has_next, has_previous = paged.turn(page(), where)
        ended = None if end is None else end()
        return [
            Connection(shown, _settled(has_next, ended), _settled(has_previous, ended), None, where, order)
        ]

    return connection


def _paging(step: Step) -> tuple[ListingOrder, Paging]:
    """The order and :class:`~pith_graph.api.connection.Paging` of a ``papers`` field's
    arguments, as its resolver reads them (the same checks, in the same order)."""
    args = step.args
    order = listing_order(args.get("orderBy"))
    first, after, last, before = (args.get(name) for name in ("first", "after", "last", "before"))
    return order, paging(step.context.limits, order, first, after, last, before)


def page_of(method: str, key: str, bundled: bool = False) -> Callable[..., Any]:
    """A ``papers`` connection of each source in its ``orderBy`` (since 0.9.3; its total: its
    paper count, or its listing's), forwards or backward (since 0.9.4: the other order's page,
    reversed). ``bundled``: the reader takes a signer's ``signedBundle``. The side toward a
    cursor (hasPreviousPage after it, hasNextPage before it) reads its Reach when asked for:
    the end of every source's listing in one batched call (``method``, one paper each)."""

    def resolve(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
        order, paged = _paging(step)
        keys = [getattr(source, key) for source in sources]
        bundle = step.args.get("signedBundle")  # a signer's papers(signedBundle:): counted
        extra = (bundle,) if bundled else ()
        found = step.batch.keyed(method, (paged.size, paged.key, step.want, *extra, paged.read_order), keys)
        owners = [Owned(method, k, extra) for k in keys]
        reach = paged.reach(owners[0]) if owners else None
        ends = None
        if reach is not None and paged.toward in step.hint.page_info:
            ends = step.batch.keyed(*reach.owned(owners[0]), keys)
        counts = [source.paper_count if bundle is None else None for source in sources]
        listings = [None if bundle is None else Listing(signer=k, signed_bundle=bundle) for k in keys]

        def connections() -> list[Any]:
            made = []
            for owner, count, listing in zip(owners, counts, listings, strict=True):
                end = None if ends is None else ends().get(owner.key)
                page, has_next, has_previous = paged.turn(found()[owner.key], owner)
                sides = _settled(has_next, end), _settled(has_previous, end)
                made.append(Connection(page, *sides, count, listing, order))
            return made

        return connections

    return resolve


def _end(step: Step, reach: Reach | None, field: str) -> Callable[[], Page] | None:
    """The read of ``reach`` in the step's batch, when the selection asks for ``field``."""
    if reach is None or field not in step.hint.page_info:
        return None
    return step.batch.call("list_papers", *reach.call())


def _settled(side: bool | Reach, end: Page | None) -> bool:
    """A side of a page: known, or its reach's read ``end`` (not asked for: false, never shown)."""
    if isinstance(side, bool):
        return side
    return end is not None and side.holds(end)


def _total(step: Step, sources: list[Connection]) -> Callable[[], list[Any]]:
    """A connection's total: known (a record's paper count) or counted with its filter or listing."""
    pending: list[int | Callable[[], Any]] = []
    for source in sources:
        if source.count is not None:
            pending.append(source.count)
        elif source.where is not None:
            method = "count_papers" if isinstance(source.where, PaperFilter) else "count_listing"
            pending.append(step.batch.call(method, source.where))
        else:
            raise RuntimeError("a connection whose total was not fetched")
    return lambda: [n if isinstance(n, int) else n() for n in pending]


def _edges(connection: Connection) -> list[Edge]:
    order = connection.order
    return [Edge(cursor_of(paper, order), paper) for paper in connection.page.items]


def _page_info(connection: Connection) -> PageInfoObject:
    items, order = connection.page.items, connection.order
    return PageInfoObject(
        next=connection.has_next,
        previous=connection.has_previous,
        start_cursor=cursor_of(items[0], order) if items else None,
        end_cursor=cursor_of(items[-1], order) if items else None,
    )


_attribute = attrgetter
CONNECTION_FIELDS: dict[tuple[str, str], Spec] = {
    ("PaperConnection", "edges"): value(_edges),
    ("PaperConnection", "nodes"): value(lambda connection: list(connection.page.items)),
    ("PaperConnection", "pageInfo"): value(_page_info),
    ("PaperConnection", "totalCount"): load(_total),
    ("PaperEdge", "cursor"): value(_attribute("cursor")),
    ("PaperEdge", "node"): value(_attribute("node")),
    ("PageInfo", "hasNextPage"): value(_attribute("next")),
    ("PageInfo", "hasPreviousPage"): value(_attribute("previous")),
    ("PageInfo", "startCursor"): value(_attribute("start_cursor")),
    ("PageInfo", "endCursor"): value(_attribute("end_cursor")),
}
