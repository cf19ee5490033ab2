"""Field helpers shared by the GraphQL object types and connections."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import strawberry
from strawberry.types.nodes import SelectedField, Selection

__all__ = ["AFTER", "FIRST", "resolver", "selects"]

F = TypeVar("F", bound=Callable[..., Any])

FIRST = "How many to return (default 20, at most 100 unless the server says otherwise)."
AFTER = "An endCursor or edge cursor of an earlier page: continue after it."


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
