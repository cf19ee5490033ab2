"""The executor the schema runs documents with: graphql-core's, given the request's abort
signal (:class:`~pith_graph.api.context.Context`), counting lists into the answer's budget
as they complete, and answering errors the same whatever the timing
(:class:`~pith_graph.api.settled.SettledExecution`)."""

from __future__ import annotations

from collections.abc import Awaitable, Sized
from typing import Any, TypeVar

from graphql import GraphQLObjectType, get_named_type, is_abstract_type
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from pith_graph.api.context import Context
from pith_graph.api.settled import SettledExecution
from pith_graph.errors import ApiError

__all__ = ["AbortableExecution"]

T = TypeVar("T")


class AbortableExecution(SettledExecution, StrawberryGraphQLCoreExecutionContext):
    """graphql-core's executor, given the request's abort signal (see :class:`Context`), its
    answers with errors the same whatever the timing (:class:`SettledExecution`)."""

    @classmethod
    def build(
        cls,
        schema: Any,
        document: Any,
        root_value: Any = None,
        context_value: Any = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if kwargs.get("abort_signal") is None and isinstance(context_value, Context):
            kwargs["abort_signal"] = context_value.abort.signal
        return super().build(schema, document, root_value, context_value, *args, **kwargs)

    def complete_list_value(
        self,
        return_type: Any,
        field_details_list: Any,
        info: Any,
        path: Any,
        result: Any,
        position_context: Any,
    ) -> Any:
        """Count a list of objects into the request's answer (:meth:`Context.produced`) before
        completing it: over the budget or out of time, the request is aborted with that error,
        so the time limit holds inside a level too, and no answer outgrows the cost limit."""
        context = self.context_value
        if isinstance(context, Context) and isinstance(result, Sized):
            named = get_named_type(return_type)
            if (
                isinstance(named, GraphQLObjectType) or is_abstract_type(named)
            ) and not named.name.startswith("__"):
                if context.abort.signal.aborted:
                    return []  # the answer is the abort's error: complete nothing more
                try:
                    context.produced(len(result))
                except ApiError as stop:
                    context.abort.abort(stop)
                    raise
        return super().complete_list_value(
            return_type, field_details_list, info, path, result, position_context
        )

    async def with_abort_signal(self, awaitable: Awaitable[T]) -> T:
        """Await the resolver, instead of racing every resolver against the signal in a task
        of its own (a quarter of the cost of a large query), or raising the abort's error
        from each one still running (a located error apiece, for thousands of them). Once
        aborted, execution winds down by itself: the request's DataLoaders answer nothing
        more and lists complete empty (:meth:`complete_list_value`), while graphql-core
        rejects the operation with the abort's reason. A resolver that hangs is still
        bounded: by the statement timeout on Neo4j and by the view's hard deadline."""
        return await awaitable
