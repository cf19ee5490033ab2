"""A paper's byline: its author line as printed, each name linked to the author it names.

``Paper.authorNames`` are the paper's own spellings in its order, ``Paper.authors`` the
Author objects by name; a byline pairs them: each printed name with its place and the
Author the loader made of it, found by the same name key
(:func:`~pith_graph.loader.identifiers.author_name_key`) through the request's author
reads, one for every name of every paper of a level. Since 0.9.0.

The names and their authors are two reads: on Neo4j, two statements, and a load that
replaced the paper in between (its new version naming other authors, the old version's
left with no paper removed) leaves a printed name whose author the second finds no more.
That is a torn read (:class:`~pith_graph.api.reads.torn.TornRead`), noted on the request's
context, which reads it all again, as for a paper's other relations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Protocol

import strawberry
from strawberry.types import Info

from pith_graph.api.context import Context
from pith_graph.api.cost import LIST_SIZES, capped
from pith_graph.api.fields import resolver
from pith_graph.api.reads.torn import TornRead
from pith_graph.loader.identifiers import author_name_key

if TYPE_CHECKING:
    from pith_graph.api.types import Author

__all__ = ["BYLINE", "Byline", "byline_of", "bylines"]

#: The description of ``Paper.byline``.
BYLINE = (
    "The author line as the paper prints it, in its order, each name with the Author it names "
    f"(the first {LIST_SIZES['Paper.byline']}, as authorNames; authorCount tells when there are "
    "more; since 0.9.0)."
)


@strawberry.type(description="One name of a paper's author line, as printed, with the author it names.")
class Byline:
    position: int = strawberry.field(description="Its place in the author line: 1 for the first author.")
    name: str = strawberry.field(description="The name as this paper prints it (Author.name may differ).")
    name_key: strawberry.Private[str]
    #: The paper that prints it.
    pith_number: strawberry.Private[str]

    @resolver("The author the name names (by name key, as author(name:) finds it).")
    async def author(
        self, info: Info[Context, None]
    ) -> Annotated[Author, strawberry.lazy("pith_graph.api.types")]:
        from pith_graph.api.types import Author

        context = info.context
        record = await context.author.load(self.name_key)
        if record is None:  # the paper changed since its names were read (or the request stopped)
            context.check_time()
            if not context.stopped():
                context.torn = True
            raise TornRead(self.pith_number)
        return Author.from_record(record)


def bylines(pith_number: str, names: Sequence[str]) -> list[Byline]:
    """The byline of the paper ``pith_number`` whose ``authorNames`` are ``names`` (the first
    :data:`~pith_graph.api.cost.LIST_SIZES` ``["Paper.byline"]`` of them)."""
    return [
        Byline(position=place, name=name, name_key=author_name_key(name), pith_number=pith_number)
        for place, name in enumerate(capped("Paper.byline", names), start=1)
    ]


class _Printed(Protocol):
    pith_number: str


async def byline_of(root: _Printed, info: Info[Context, None]) -> list[Byline]:
    """``Paper.byline``: the paper's ``authorNames`` as bylines (one read for a level's papers)."""
    return bylines(root.pith_number, await info.context.author_names_of.load(root.pith_number))
