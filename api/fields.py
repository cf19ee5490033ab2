"""Field helpers shared by the GraphQL object types and connections."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import strawberry

__all__ = ["AFTER", "FIRST", "resolver"]

F = TypeVar("F", bound=Callable[..., Any])

FIRST = "How many to return (default 20, at most 100 unless the server says otherwise)."
AFTER = "An endCursor or edge cursor of an earlier page: continue after it."


def resolver(description: str) -> Callable[[F], F]:
    """``@strawberry.field(description=...)``, typed for mypy (strawberry's overload is Any)."""
    return cast(Callable[[F], F], strawberry.field(description=description))
