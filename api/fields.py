"""Field helpers shared by the GraphQL object types and connections."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar, cast

import strawberry
from strawberry.types import Info
from strawberry.types.nodes import SelectedField, Selection

from pith_graph.api.context import Context

__all__ = [
    "AFTER",
    "FIRST",
    "After",
    "Before",
    "First",
    "GraphInfo",
    "Last",
    "argument",
    "counted",
    "resolver",
    "selects",
]

#: The ``info`` of a resolver of this schema.
GraphInfo = Info[Context, None]

F = TypeVar("F", bound=Callable[..., Any])

FIRST = (
    "How many to return: null or left out is 20 (the page cap when the server sets that lower); "
    "at most the page cap, 100 unless the server says otherwise (LIMIT_EXCEEDED beyond). Not "
    "shown as the argument's default, which follows the server's page cap."
)
AFTER = (
    "An endCursor or edge cursor of an earlier page of this listing: continue after it; null: from the start."
)
LAST = (
    "Backward paging (Query.papers since 0.9.2; an author's, a category's and a signer's papers "
    "since 0.9.4): the last N papers before the cursor before (without before: the "
    "listing's last N), shown in the listing's own order; null with before: 20; capped as first is. "
    "Not with first or after."
)
BEFORE = (
    "Backward paging (Query.papers since 0.9.2; an author's, a category's and a signer's papers "
    "since 0.9.4): a startCursor or edge cursor of this same listing and orderBy: "
    "the page ends just before it; null: at the listing's end. Not with first or after."
)


def argument(description: str) -> Any:
    """``strawberry.argument(description=...)``, for an argument's ``Annotated`` type."""
    return strawberry.argument(description=description)


#: ``first`` of a page or ranked list (default 20) and ``after`` of a page of papers.
First = Annotated[int | None, argument(FIRST)]
After = Annotated[str | None, argument(AFTER)]
#: ``last`` and ``before`` of ``Query.papers`` (since 0.9.2) and of the nested ``papers`` (since 0.9.4).
Last = Annotated[int | None, argument(LAST)]
Before = Annotated[str | None, argument(BEFORE)]


def counted(count: int | None) -> int:
    """A record's paper count, which the resolvers always ask the reader for."""
    if count is None:
        raise RuntimeError("a record without its paper count reached a field that shows it")
    return count


def resolver(description: str) -> Callable[[F], F]:
    """``@strawberry.field(description=...)``, typed for mypy (strawberry's overload is Any)."""
    return cast(Callable[[F], F], strawberry.field(description=description))


def selects(info: Any, names: frozenset[str]) -> bool:
    """Whether the field being resolved asks for any of ``names`` among its own fields
    (through fragments too): e.g. whether a connection's page is wanted at all."""

    def walk(selections: list[Selection]) -> bool:
        for selection in selections:
            if isinstance(selection, SelectedField):
                if selection.name in names:
                    return True
            elif walk(selection.selections):
                return True
        return False

    return any(walk(field.selections) for field in info.selected_fields)
