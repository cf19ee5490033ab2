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

from pith_graph.api.connection import PageInfo as PageInfoObject
from pith_graph.api.connection import Reach, listing_order, paging
from pith_graph.api.cursors import cursor_of, decode_cursor
from pith_graph.api.inputs import filter_from_arguments
from pith_graph.api.limits import page_size
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
    A page before a cursor reads its hasNextPage's :class:`~pith_graph.api.connection.Reach`
    in the same batch, asked for or not (a step does not see its selection: one LIMIT 1 read)."""
    where = filter_from_arguments(step.args.get("filter"))
    args = step.args
    order = listing_order(args.get("orderBy"))
    paged = paging(
        step.context.limits, order, args.get("first"), args.get("after"), args.get("last"), args.get("before")
    )
    page = step.batch.call("list_papers", where, paged.size, paged.key, step.want, paged.read_order)
    reach = paged.reach(where)
    ends = [] if reach is None else [step.batch.call("list_papers", *reach.call())]

    def connection() -> list[Any]:
        shown, has_next, has_previous = paged.turn(page(), where)
        if isinstance(has_next, Reach):
            has_next = has_next.holds(ends[0]())
        return [Connection(shown, has_next, has_previous, None, where, order)]

    return connection


def page_of(method: str, key: str, bundled: bool = False) -> Callable[..., Any]:
    """A ``papers`` connection of each source in its ``orderBy`` (since 0.9.3; its total: its
    paper count, or its listing's). ``bundled``: the reader takes a signer's ``signedBundle``."""

    def resolve(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
        order = listing_order(step.args.get("orderBy"))
        size = page_size(step.args.get("first"), step.context.limits)
        after = decode_cursor(step.args.get("after"), order)
        since = after is not None
        keys = [getattr(source, key) for source in sources]
        bundle = step.args.get("signedBundle")  # a signer's papers(signedBundle:): counted
        found = step.batch.keyed(
            method, (size, after, step.want, *((bundle,) if bundled else ()), order), keys
        )
        if bundle is None:
            return lambda: [_known(found()[getattr(s, key)], since, order, s.paper_count) for s in sources]
        listings = [(k, Listing(signer=k, signed_bundle=bundle)) for k in keys]
        return lambda: [_known(found()[k], since, order, where=listing) for k, listing in listings]

    return resolve


def _known(
    page: Page, since: bool, order: ListingOrder, count: int | None = None, where: Listing | None = None
) -> Connection:
    """The connection of an owner's page: whether more follow known, hasPreviousPage ``since``."""
    return Connection(page, page.has_next, since, count, where, order)


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
