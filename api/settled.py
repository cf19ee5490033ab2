"""Answers with errors that do not depend on timing: siblings settle, the first one fails.

graphql-core completes an object's fields, and a list's items, concurrently and, when one
fails, cancels the others and answers the error of the first to fail *in time*. Which one
that is depends on the backend: the memory reader answers a read in one pass of the event
loop, Neo4j after a round trip, so a query in which two fields fail (``{ a: papers(first: 1)
{ facets(first: -1) { years { count } } } b: papers(after: "x") { totalCount } }``) answered
``a``'s error on one backend and ``b``'s on the other. :class:`SettledExecution` lets every
field and item settle, then raises the error of the first failed one in document (and list)
order; :func:`error_order` sorts the errors the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from graphql import GraphQLError
from graphql.execution.executor import Executor

__all__ = ["SettledExecution", "error_order"]


class _Failed:
    """A field's or an item's error, held until its siblings have settled."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


async def _settled(awaitable: Awaitable[Any]) -> Any:
    try:
        return await awaitable
    except Exception as error:
        return _Failed(error)


def _raise_first(values: Any) -> Any:
    for value in values.values() if isinstance(values, dict) else values:
        if isinstance(value, _Failed):
            raise value.error
    return values


async def _first_failure(results: Awaitable[Any]) -> Any:
    return _raise_first(await results)


def error_order(error: GraphQLError) -> tuple[Any, ...]:
    """Errors in document order, then by path: not in the order they happened."""
    where = tuple((location.line, location.column) for location in error.locations or ())
    return where, tuple((isinstance(key, str), key) for key in error.path or ())


class SettledExecution(Executor[Any]):
    """graphql-core's executor, whose concurrent fields and list items all settle before
    the first failed one in order (not in time) fails their parent."""

    def execute_field(self, *args: Any, **kwargs: Any) -> Any:
        result = super().execute_field(*args, **kwargs)
        return _settled(result) if self.is_awaitable(result) else result

    def execute_fields(self, *args: Any, **kwargs: Any) -> Any:
        results = super().execute_fields(*args, **kwargs)
        return _first_failure(results) if self.is_awaitable(results) else results

    def complete_list_item_value(self, item: Any, complete_results: list[Any], *args: Any) -> bool:
        awaitable: bool = super().complete_list_item_value(item, complete_results, *args)
        if awaitable:
            complete_results[-1] = _settled(complete_results[-1])
        return awaitable

    async def complete_awaitable_list_item_value(self, *args: Any) -> Any:
        return await _settled(super().complete_awaitable_list_item_value(*args))

    def complete_iterable_value(self, *args: Any) -> Any:
        results = super().complete_iterable_value(*args)
        return _first_failure(results) if self.is_awaitable(results) else results

    async def complete_async_iterator_value(self, *args: Any) -> list[Any]:
        found: list[Any] = _raise_first(await super().complete_async_iterator_value(*args))
        return found
