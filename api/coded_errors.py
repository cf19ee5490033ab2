"""GraphQL errors as clients see them: stable codes they can act on, everything else masked.

An :class:`~pith_graph.errors.ApiError` (the API's branch of the one exception tree) keeps
its code and suggestion. Codes given to errors that are not raised as ``ApiError``: ``GRAPHQL_PARSE_FAILED`` (syntax),
``GRAPHQL_VALIDATION_FAILED`` (unknown field, wrong type), ``BAD_USER_INPUT`` (a variable's
value that cannot be coerced), ``BAD_REQUEST`` (not a GraphQL request: malformed JSON, wrong content
type), ``MISDIRECTED_REQUEST`` (a ``Host`` the server does not answer for: :mod:`pith_graph.api.hosts`),
``PERSISTED_QUERY_NOT_FOUND`` and ``PERSISTED_QUERY_NOT_SUPPORTED`` (automatic persisted
queries: a hash not kept, or APQ off; :mod:`pith_graph.api.persisted`),
``SERVICE_UNAVAILABLE`` (the database cannot be reached; or the server stopped while the
request ran, ``Guard``'s 503), ``LIMIT_EXCEEDED`` (a read the
database refuses for the memory it needs) and
``INTERNAL_SERVER_ERROR``: anything unexpected, whose message and details are replaced by a
fixed text (the original is logged, never sent).

Since 0.9.3 an error about one argument's value names it in ``extensions.argument``, as the
client wrote it, so a form can mark the input without reading the message: ``first``,
``after``, ``before``, ``last``, ``name``, ``code``, ``id``, ``text``, ``from``, ``to``,
``maxHops``, ``prefix``, ``ids``, a filter's field (``filter.author``) or one of its codes by
its index in the list as given (``filter.categories[1]``). Every ``BAD_USER_INPUT`` an
:class:`~pith_graph.errors.ApiError` raises has it (its ``argument``), and so has a
``LIMIT_EXCEEDED`` about one value (``first`` over the page cap, ``maxHops``, more ``ids``
or ``filter.categories`` than are taken); also graphql-core's refusal of an argument's value
at execution (``Argument 'filter' has invalid value at .categories[0]``: ``filter.categories[0]``).
``path`` and ``locations`` still point at the field. An error about no one argument (a
variable's value, cost and document limits, ``first`` with ``last``, an unknown field) has no
``argument`` key (not ``null``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

from graphql import AbortedGraphQLExecutionError, GraphQLError, GraphQLSyntaxError
from strawberry.extensions import SchemaExtension
from strawberry.schema.exceptions import CannotGetOperationTypeError

from pith_graph.errors import ApiError, StoreError, StoreErrorCode

__all__ = [
    "INTERNAL_MESSAGE",
    "CodedErrors",
    "OperationNameRequired",
    "coded",
    "error_body",
    "is_unexpected",
]

log = logging.getLogger("pith_graph.api.coded_errors")

INTERNAL_MESSAGE = "Internal server error."

_LIMIT_MESSAGES = re.compile(
    r"exceeds maximum operation depth"
    r"|aliases found\. Allowed:"
    r"|Document contains more than \d+ (?:lexical )?tokens"
    r"|Document contains more than \d+ comments"
    r"|Document is longer than"
    r"|Maximum introspection depth exceeded"
)
#: What to do about a limit those messages name (the first that matches; else the last).
_LIMIT_SUGGESTIONS = (
    ("operation depth", "Nest fewer fields; ask for what lies deeper in another query."),
    ("aliases found", "Use fewer aliases; ask for the rest in another request."),
    ("introspection depth", "Introspect less deeply: the usual introspection query fits."),
    ("", "Send a shorter document: fewer fields, fragments and comments."),
)
#: What to do about a value graphql-core cannot coerce.
_BAD_INPUT_SUGGESTION = "Send a value of the type the schema gives the variable or argument."
#: What to do about a valid document whose fields graphql-core gave up comparing (its budget).
_ABORTED_VALIDATION = (
    "Comparing the fields that share a response name takes too much work: ask for each field "
    "once in a selection, and merge repeated fields with selections into one."
)
#: graphql-core's words for a value it cannot coerce: a variable's (a document's nesting
#: past its limit included), or an argument's at execution (an explicit null in a variable
#: whose default let validation pass, where the argument is non-null).
_BAD_INPUT_MESSAGES = re.compile(
    r"Variable '\$[^']*' has invalid value|Variable values are nested too deeply|Argument '[^']*' has invalid value"
)
#: graphql-core's refusal of one argument's value: its name, and where in it (`` at .categories[0]``).
_REFUSED_ARGUMENT = re.compile(r"Argument '([^']*)' has invalid value(?: at ((?:\.\w+|\[\d+\])+))?:")


def _with_code(
    error: GraphQLError, code: str, message: str | None = None, extra: dict[str, Any] | None = None
) -> GraphQLError:
    return GraphQLError(
        message if message is not None else error.message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=None,
        extensions={**(error.extensions or {}), **(extra or {}), "code": code},
    )


def _store_code(error: StoreError) -> str | None:
    if error.code is StoreErrorCode.TIMEOUT:
        return "TIMEOUT"
    if error.code is StoreErrorCode.MEMORY:
        return "LIMIT_EXCEEDED"
    if error.code in (StoreErrorCode.UNAVAILABLE, StoreErrorCode.AUTH, StoreErrorCode.DATABASE):
        return "SERVICE_UNAVAILABLE"
    return None


def _cause(error: GraphQLError) -> BaseException | None:
    """The error's cause; for an aborted execution, the reason it was aborted."""
    original = error.original_error
    if isinstance(original, AbortedGraphQLExecutionError) and isinstance(original.reason, Exception):
        return original.reason
    return original


def is_unexpected(error: GraphQLError) -> bool:
    """True when the error is a bug or a failure, not the client's doing."""
    original = _cause(error)
    if isinstance(original, ApiError):
        return False
    if isinstance(original, StoreError):
        return _store_code(original) is None
    if error.path is None:  # before execution: parsing, validation, coercing variables
        return original is not None and not isinstance(original, GraphQLError)
    # During execution, anything but an ApiError is a bug or a failure, except graphql-core
    # refusing to coerce an argument the client gave.
    refused = isinstance(original, GraphQLError) and original.original_error is None
    return not (refused and _BAD_INPUT_MESSAGES.match(error.message))


def coded(error: GraphQLError) -> GraphQLError:
    """The error as the client sees it: with ``extensions.code``, masked when unexpected.

    Idempotent: an error that already has a code is returned as it is.
    """
    if (error.extensions or {}).get("code"):
        return error
    original = _cause(error)
    if isinstance(original, ApiError):
        return _with_code(error, original.code, original.message, original.extensions)
    if isinstance(original, StoreError):
        code = _store_code(original)
        if code == "TIMEOUT":
            return _with_code(error, code, "The query took too long.")
        if code == "LIMIT_EXCEEDED":
            log.warning("a query ran out of transaction memory: %s", original.message)
            return _with_code(
                error,
                code,
                "The answer needs more memory than the graph database lets one query hold.",
                {"suggestion": "Narrow the query: a filter, fewer values (first)."},
            )
        if code is not None:
            return _with_code(error, code, "The graph database is not available; try again later.")
    if is_unexpected(error):
        return _with_code(error, "INTERNAL_SERVER_ERROR", INTERNAL_MESSAGE)
    if error.message == "Validation aborted.":  # graphql-core's budget (api/overlaps.py)
        return _with_code(error, "LIMIT_EXCEEDED", extra={"suggestion": _ABORTED_VALIDATION})
    if _LIMIT_MESSAGES.search(error.message):
        said = next(what for name, what in _LIMIT_SUGGESTIONS if name in error.message)
        return _with_code(error, "LIMIT_EXCEEDED", extra={"suggestion": said})
    if isinstance(error, GraphQLSyntaxError) or error.message.startswith("Syntax Error"):
        return _with_code(error, "GRAPHQL_PARSE_FAILED")
    if _BAD_INPUT_MESSAGES.match(error.message):
        extra = {"suggestion": _BAD_INPUT_SUGGESTION}
        refused = _REFUSED_ARGUMENT.match(error.message)
        # An argument that is a variable as a whole (a directive's if: $b sent null) names
        # none: the variable may stand for several; one inside a literal names its place.
        if refused and (refused.group(2) or "variable '$" not in error.message):
            extra["argument"] = refused.group(1) + (refused.group(2) or "")
        return _with_code(error, "BAD_USER_INPUT", extra=extra)
    return _with_code(error, "GRAPHQL_VALIDATION_FAILED")


class OperationNameRequired(CannotGetOperationTypeError):
    """A document of several operations and no ``operationName``: a request error (the
    GraphQL spec's *GetOperation*), answered as strawberry answers an unknown
    ``operationName`` (HTTP 400, ``BAD_REQUEST``), where strawberry would run the first."""

    def __init__(self) -> None:
        super().__init__(None)

    def as_http_error_reason(self) -> str:
        return "Must provide operationName: the document holds several operations."


def error_body(message: str, code: str) -> dict[str, Any]:
    """A GraphQL response body holding one request-level error."""
    return {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}


class CodedErrors(SchemaExtension):
    """Gives every error of a result its code and masks the unexpected ones (see :func:`coded`)."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        errors = getattr(result, "errors", None)
        if result is not None and errors:
            result.errors = [coded(error) for error in errors]
