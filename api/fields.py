"""Field helpers shared by the GraphQL object types and connections."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar, cast

import strawberry
from strawberry.types.nodes import SelectedField, Selection

__all__ = ["AFTER", "FIRST", "After", "First", "argument", "resolver", "selects"]

F = TypeVar("F", bound=Callable[..., Any])

FIRST = (
    "How many to return: null or left out is 20 (the page cap when the server sets that lower); "
    "at most the page cap, 100 unless the server says otherwise (LIMIT_EXCEEDED beyond). Not "
    "shown as the argument's default, which follows the server's page cap."
)
AFTER = (
    "An endCursor or edge cursor of an earlier page of this listing: continue after it; null: from the start."
)


def argument(description: str) -> Any:
    """``strawberry.argument(description=...)``, for an argument's ``Annotated`` type."""
    return strawberry.argument(description=description)


#: ``first`` of a page or ranked list (default 20) and ``after`` of a page of papers.
First = Annotated[int | None, argument(FIRST)]
After = Annotated[str | None, argument(AFTER)]


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
