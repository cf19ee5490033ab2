"""A paper's byline: its author line as printed, each name linked to the author it names.

``Paper.authorNames`` are the paper's own spellings in its order, ``Paper.authors`` the
Author objects by name; a byline pairs them: each printed name with its place and the
Author the loader made of it, found by the same name key
(:func:`~pith_graph.loader.identifiers.author_name_key`). Since 0.9.0.

The resolvers read a level's papers' names in one read, then, if ``author`` is asked for,
the authors of them all in one more (a paper's name keys are one key of that batch), and
each paper's bylines are made with their authors, the request's time checked for each
paper. (Resolving ``author`` field by field, after every byline of the level was made and
with no check of the time among them, cost about 4x the CPU of ``Paper.authors`` at the same
cost: 240 ids of a crowded paper, 3.2-3.8 s against 0.4-0.8 s.) A plan reads the same two.

The names and their authors are two reads: on Neo4j, two statements, and a load that
replaced the paper in between (its new version naming other authors, the old version's
left with no paper removed) leaves a printed name whose author the second finds no more.
That is a torn read (:class:`~pith_graph.api.reads.torn.TornRead`), noted on the request's
context, which reads it all again, as for a paper's other relations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import strawberry
from strawberry.dataloader import DataLoader
from strawberry.types import Info

from pith_graph.api.context import Context
from pith_graph.api.cost import LIST_SIZES, capped
from pith_graph.api.fields import selects
from pith_graph.api.reads.records import AuthorRecord
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


_AUTHOR = frozenset({"author"})
#: What a byline without its author holds as ``author`` (a plan's: never read).
_NONE: Any = None


def _by_lists(
    authors_by_keys: Callable[[list[str]], Mapping[str, AuthorRecord]], lists: list[tuple[str, ...]]
) -> dict[tuple[str, ...], list[AuthorRecord | None]]:
    """Each list of name keys' authors (None: not held), in one read of them all."""
    found = authors_by_keys(list(dict.fromkeys(key for keys in lists for key in keys)))
    return {keys: [found.get(key) for key in keys] for keys in lists}


def _authors_named(context: Context) -> DataLoader[tuple[str, ...], list[AuthorRecord | None]]:
    """The authors of bylines by their name keys: one read for a level's papers."""
    return context.batch("authors_named", partial(_by_lists, context.reader.authors_by_keys), list)


@strawberry.type(description="One name of a paper's author line, as printed, with the author it names.")
class Byline:
    position: int = strawberry.field(description="Its place in the author line: 1 for the first author.")
    name: str = strawberry.field(description="The name as this paper prints it (Author.name may differ).")
    author: Annotated[Author, strawberry.lazy("pith_graph.api.types")] = strawberry.field(
        description="The author the name names (by name key, as author(name:) finds it)."
    )
    name_key: strawberry.Private[str]


def bylines(names: Sequence[str]) -> list[Byline]:
    """The byline of a paper whose ``authorNames`` are ``names`` (the first
    :data:`~pith_graph.api.cost.LIST_SIZES` ``["Paper.byline"]`` of them), without their
    authors (``author`` None: a plan reads them at the next level, as its own step)."""
    return [
        Byline(position=place, name=name, author=_NONE, name_key=author_name_key(name))
        for place, name in enumerate(capped("Paper.byline", names), start=1)
    ]


class _Printed(Protocol):
    pith_number: str


async def byline_of(root: _Printed, info: Info[Context, None]) -> list[Byline]:
    """``Paper.byline``: the paper's ``authorNames`` as bylines (one read for a level's
    papers), with their authors if asked for (one more read for the level: each paper's name
    keys are one key of a batch)."""
    from pith_graph.api.types import Author

    context = info.context
    lines = bylines(await context.author_names_of.load(root.pith_number))
    if not lines or not selects(info, _AUTHOR):
        return lines
    records = await _authors_named(context).load(tuple(line.name_key for line in lines))
    context.check_time()
    if context.stopped():
        return []  # the answer is the abort's error
    for line, record in zip(lines, records, strict=True):
        if record is None:  # the paper changed since its names were read
            context.torn = True
            raise TornRead(root.pith_number)
        line.author = Author.from_record(record)
    return lines
