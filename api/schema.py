"""The root ``Query`` and the schema with its extensions (error codes, limits, caches).

``api/schema.graphql`` is the printed SDL, a reviewed artefact: regenerate it with
``python -m pith_graph.api.schema > api/schema.graphql`` and a test compares the two.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import strawberry
from graphql import GraphQLError
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.graphql import OperationType

from pith_graph.api.coded_errors import coded, is_unexpected
from pith_graph.api.connection import (
    PAPERS_ON,
    PaperConnection,
    PaperOrder,
    listing_order,
    paged_connection,
    paging,
)
from pith_graph.api.context import Context
from pith_graph.api.cost import LIST_SIZES, capped
from pith_graph.api.execution import AbortableExecution
from pith_graph.api.fields import After, Before, First, Last, argument, resolver, selects
from pith_graph.api.ids import parse_identifier
from pith_graph.api.inputs import (
    KEY_LIMIT,
    NAME_LIMIT,
    TEXT_LIMIT,
    PaperFilterInput,
    author_key,
    key_text,
    named_by_keys,
    to_filter,
    words,
)
from pith_graph.api.limits import DEFAULT_LIMITS, RequestLimits, page_size, path_hops, schema_extensions
from pith_graph.api.lookups import TYPEAHEAD_FIRST, authors_by_prefix, nodes_by_ids, papers_by_ids
from pith_graph.api.node_ids import Node
from pith_graph.api.plan import PLAN_SAFE_EXTENSIONS, PlanRecorder, Plans, run_plan
from pith_graph.api.reads.discovery import Listing, SearchPage
from pith_graph.api.reads.records import EVERYTHING, Page
from pith_graph.api.search import (
    SearchConnection,
    SearchOrder,
    decode_search_cursor,
    fingerprint,
    search_connection,
)
from pith_graph.api.settled import error_order
from pith_graph.api.types import Author, Category, GraphInfo, Paper, PathStep, Signer
from pith_graph.errors import NotFound, QueryTimeout
from pith_graph.schema.rows import PaperRow

__all__ = ["PaperFilterInput", "PithSchema", "Query", "build_schema", "print_sdl"]

log = logging.getLogger("pith_graph.api.schema")
#: A connection's fields that need its page (totalCount and facets do not).
_PAGE_FIELDS = frozenset({"edges", "nodes", "pageInfo"})
_ID = "A pith number (full or short), pith_short_* value, arXiv id (vN: that version) or DOI."
_FILTER = "Which papers to list (every field given must match); null: all."
_SEARCH_AFTER = (
    "An endCursor or edge cursor of this same search: continue strictly after it; null: from the start."
)
_TYPEAHEAD_FIRST = "How many authors: null is 10 (the page cap when that is lower); at most the page cap."
_HOPS = "The most papers on the path: null is 4; at most 6 unless the server says otherwise."
_NAME = f"A name, matched by name key (case and spacing ignored). {NAME_LIMIT}"
_NODES: dict[str, Callable[[Any], Node]] = {
    "Paper": Paper.from_record,
    "Author": Author.from_record,
    "Category": Category.from_record,
    "Signer": Signer.from_record,
}


async def _nodes(info: GraphInfo, ids: list[str]) -> list[Node | None]:
    found = await nodes_by_ids(info.context, ids)
    return [_NODES[named[0]](named[1]) if named is not None else None for named in found]


async def _named(info: GraphInfo, identifier: str) -> list[PaperRow]:
    """Every paper ``identifier`` names, newest version first (see :func:`named_by_keys`)."""
    parsed = parse_identifier(identifier)
    if parsed is None:
        return []
    context = info.context
    named = await asyncio.gather(*(context.identifier.load(key) for key in parsed.keys))
    return named_by_keys(named, context.rank)


@strawberry.type(description="Lookups and traversals over the graph of verified papers.")
class Query:
    @resolver(
        "The paper an identifier names: full or short pith number, pith_short_* value, "
        "arXiv id (without a version: the newest version) or DOI. Null when unknown."
    )
    async def paper(self, info: GraphInfo, id: Annotated[str, argument(_ID)]) -> Paper | None:
        papers = await _named(info, id)
        return Paper.from_record(papers[0]) if papers else None

    @resolver(
        "Every paper an identifier names, newest version first (an arXiv id without "
        f"a version or a DOI names every version; the first {LIST_SIZES['Query.resolve']})."
    )
    async def resolve(self, info: GraphInfo, id: Annotated[str, argument(_ID)]) -> list[Paper]:
        return [Paper.from_record(record) for record in capped("Query.resolve", await _named(info, id))]

    @resolver(
        "The paper each identifier names, as paper(id:) answers, in the order given: null where "
        "an identifier names none (or is blank); a repeated identifier is answered each time. "
        "At most 500 identifiers by default (LIMIT_EXCEEDED beyond), looked up in one read."
    )
    async def papers_by_id(
        self,
        info: GraphInfo,
        ids: Annotated[list[str], argument("The identifiers, each as paper(id:) takes.")],
    ) -> list[Paper | None]:
        found = await papers_by_ids(info.context, ids)
        return [Paper.from_record(record) if record is not None else None for record in found]

    @resolver(
        "The paper, author, category or signer whose id (Node.id) this is; null when the graph "
        "holds none or the text is no id (since 0.9.0)."
    )
    async def node(
        self, info: GraphInfo, id: Annotated[strawberry.ID, argument("A Node.id.")]
    ) -> Node | None:
        return (await _nodes(info, [id]))[0]

    @resolver(
        "The object each id names, as node(id:) answers, in the order given (a repeated id is "
        "answered each time): at most 500 ids by default (LIMIT_EXCEEDED beyond), looked up in "
        "one read per type (since 0.9.0)."
    )
    async def nodes(
        self, info: GraphInfo, ids: Annotated[list[strawberry.ID], argument("Ids, each a Node.id.")]
    ) -> list[Node | None]:
        return await _nodes(info, list(ids))

    @resolver("Papers, newest first (or oldest first: orderBy: OLDEST, since 0.9.1), optionally filtered.")
    async def papers(
        self,
        info: GraphInfo,
        filter: Annotated[PaperFilterInput | None, argument(_FILTER)] = None,
        first: First = None,
        after: After = None,
        order_by: Annotated[
            PaperOrder | None,
            argument("NEWEST (also for null) or OLDEST; after and before: cursors of the same order."),
        ] = PaperOrder.NEWEST,
        last: Last = None,
        before: Before = None,
    ) -> PaperConnection:
        context = info.context
        where = to_filter(filter)
        paged = paging(context.limits, listing_order(order_by), first, after, last, before)
        page = Page((), False)  # only totalCount or facets asked for: no page to read
        if selects(info, _PAGE_FIELDS):
            read = (where, paged.size, paged.key, EVERYTHING, paged.read_order)
            page = await context.run(context.reader.list_papers, *read)

        async def count() -> int:
            return await context.run(context.reader.count_papers, where)

        return paged_connection(page, paged, count, Listing(where))

    @resolver(
        "Papers holding every word of the text in their title or abstract excerpt (words as "
        "Lucene's standard analyzer splits them; no query syntax), optionally filtered; best "
        "match first (orderBy: RELEVANCE) or newest first (NEWEST). Each edge has its score."
    )
    async def search(
        self,
        info: GraphInfo,
        text: Annotated[str, argument(f"The words to find (no query syntax). {TEXT_LIMIT}")],
        filter: Annotated[PaperFilterInput | None, argument(_FILTER)] = None,
        first: First = None,
        after: Annotated[str | None, argument(_SEARCH_AFTER)] = None,
        order_by: Annotated[
            SearchOrder | None, argument("RELEVANCE (also for null) or NEWEST.")
        ] = SearchOrder.RELEVANCE,
    ) -> SearchConnection:
        context = info.context
        order = order_by or SearchOrder.RELEVANCE
        listing = Listing(to_filter(filter), words(text, "text"))
        size = page_size(first, context.limits, on=PAPERS_ON)
        search = fingerprint(listing, order)
        position = decode_search_cursor(after, search)
        page = SearchPage((), False, position.offset if position is not None else 0)
        if selects(info, _PAGE_FIELDS):
            page = await context.run(context.reader.search_papers, listing, order.value, size, position)

        async def count() -> int:
            return await context.run(context.reader.count_listing, listing)

        return search_connection(page, search, position, count, listing)

    @resolver(
        "Authors for a typeahead: every word typed is the start of some word of the name "
        "(case, accents and spacing ignored: zoe sm, ZOË and sm all find Zoë Smith); most "
        "papers first, then by name key. [] when nothing is typed."
    )
    async def authors(
        self,
        info: GraphInfo,
        prefix: Annotated[str, argument("What was typed so far.")],
        first: Annotated[int | None, argument(_TYPEAHEAD_FIRST)] = TYPEAHEAD_FIRST,
    ) -> list[Author]:
        return [Author.from_record(r) for r in await authors_by_prefix(info.context, prefix, first)]

    @resolver("An author, matched by name key (case and spacing ignored). Null when unknown.")
    async def author(self, info: GraphInfo, name: Annotated[str, argument(_NAME)]) -> Author | None:
        record = await info.context.author.load(author_key(name, "name"))
        return Author.from_record(record) if record is not None else None

    @resolver("A category by code, e.g. cs.LG. Null when unknown.")
    async def category(
        self, info: GraphInfo, code: Annotated[str, argument(f"The code, e.g. cs.LG. {KEY_LIMIT}")]
    ) -> Category | None:
        record = await info.context.category.load(key_text(code, "code"))
        return Category.from_record(record) if record is not None else None

    @resolver(f"Every category, by code (the first {LIST_SIZES['Query.categories']}).")
    async def categories(self, info: GraphInfo) -> list[Category]:
        context = info.context
        found = await context.run(context.reader.all_categories)
        return [Category.from_record(r) for r in capped("Query.categories", found)]

    @resolver("A signer by id, e.g. pith.science. Null when unknown.")
    async def signer(
        self, info: GraphInfo, id: Annotated[str, argument(f"The signer id. {KEY_LIMIT}")]
    ) -> Signer | None:
        record = await info.context.signer.load(key_text(id, "id"))
        return Signer.from_record(record) if record is not None else None

    @resolver(
        "The shortest author → paper → author chain between two authors with at most "
        "maxHops papers (default 4, at most 6); [] for the same author, null when there is none. "
        "NOT_FOUND when an author is unknown."
    )
    async def collaboration_path(
        self,
        info: GraphInfo,
        from_: Annotated[str, strawberry.argument(name="from", description=_NAME)],
        to: Annotated[str, argument(_NAME)],
        max_hops: Annotated[int | None, argument(_HOPS)] = None,
    ) -> list[PathStep] | None:
        return await _collaboration_path(info, from_, to, max_hops)


async def _collaboration_path(
    info: GraphInfo, from_: str, to: str, max_hops: int | None
) -> list[PathStep] | None:
    context = info.context
    hops = path_hops(max_hops, context.limits)
    keys = [author_key(from_, "from"), author_key(to, "to")]
    found = await context.author.load_many(keys)
    for which, name, record in zip(("from", "to"), (from_, to), found, strict=True):
        if record is None:
            suggestion = "Look the name up with author(name:)."
            raise NotFound(f"No author is named {name.strip()!r}.", suggestion, argument=which)
    steps = await context.run(context.reader.collaboration_path, keys[0], keys[1], hops)
    if steps is None:
        return None
    return [
        PathStep(
            source=Author.from_record(step.source),
            paper=Paper.from_record(step.paper),
            target=Author.from_record(step.target),
        )
        for step in steps
    ]


class PithSchema(strawberry.Schema):
    """The schema; answers from a plan when it has one for the document (see
    :mod:`pith_graph.api.plan`), and logs unexpected errors (with their traceback)."""

    #: Compiled plans, or None when some extension must see every execution.
    plans: Plans | None = None

    async def execute(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        plans = self.plans
        if (
            plans is not None
            and isinstance(query, str)
            and isinstance(operation_name, str | None)  # an HTTP body may hold anything here
            and root_value is None
            and isinstance(context_value, Context)
            and not context_value.planned  # it gave way already (over HTTP: api/planned.py)
            and (allowed_operation_types is None or OperationType.QUERY in allowed_operation_types)
        ):
            plan = plans.get(query, operation_name)
            if plan is not None:
                counted = context_value.objects
                try:
                    data = await run_plan(plan, self._schema, context_value, variable_values)
                except QueryTimeout as late:  # the resolvers would have no time left either
                    error = coded(GraphQLError(late.message, original_error=late))
                    return ExecutionResult(data=None, errors=[error], extensions={})
                if data is not None:
                    plans.answered += 1
                    return ExecutionResult(data=data, errors=None, extensions={})
                plans.gave_way += 1
                context_value.objects = counted  # the resolvers' answer is counted afresh
        result = await super().execute(
            query,
            variable_values,
            context_value,
            root_value,
            operation_name,
            allowed_operation_types,
            operation_extensions,
        )
        if result.errors:  # an aborted execution (time, budget) ends before CodedErrors acts
            result.errors = sorted((coded(error) for error in result.errors), key=error_order)
        return result

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        for error in errors:
            if is_unexpected(error):
                cause = error.original_error or error
                log.error("unexpected error in a GraphQL request: %s", error.message, exc_info=cause)
            else:
                log.debug("GraphQL request error: %s", error.message)


def _name(extension: Any) -> str:
    """The class name of an extension given as a class, a factory (partial) or an instance."""
    target = getattr(extension, "func", extension)
    return str(getattr(target, "__name__", type(target).__name__))


def build_schema(limits: RequestLimits = DEFAULT_LIMITS, *, plans: bool = True) -> PithSchema:
    """The schema with the extensions for ``limits``; ``plans=False`` answers every request
    with the resolvers (the reference the plans are tested against)."""
    extensions = [*schema_extensions(limits), PlanRecorder]
    schema = PithSchema(query=Query, extensions=extensions, execution_context_class=AbortableExecution)
    unknown = [_name(extension) for extension in extensions if _name(extension) not in PLAN_SAFE_EXTENSIONS]
    if unknown:
        log.warning("execution plans are off: %s may act during execution (see pith_graph.api.plan)", unknown)
    elif plans:
        schema.plans = Plans(schema._schema)
    return schema


def print_sdl() -> str:
    """The SDL of the schema (what ``api/schema.graphql`` holds)."""
    return build_schema().as_str() + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(print_sdl())
