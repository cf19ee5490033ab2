"""RequestLimits that keep one request from taking the server down, on by default.

==========================  =======  ==============================================
limit                       default  enforced by
==========================  =======  ==============================================
``max_depth``               10       strawberry's ``QueryDepthLimiter`` rule
``max_aliases``             30       strawberry's ``MaxAliasesLimiter`` rule
``max_tokens``              2000     the GraphQL parser (lexical tokens, comments
                                     and source length are each bounded)
``max_page_size``           100      ``first`` arguments (:func:`page_size`)
``max_cost``                25000    :class:`~pith_graph.api.cost.CostLimit`, before
                                     execution: the objects the lists of a query may
                                     return, each list's size multiplied down each
                                     path and summed (:mod:`pith_graph.api.cost`);
                                     during execution, the objects the answer's lists
                                     hold (``Context.produced``, both executions)
``max_body_bytes``          65536    the HTTP layer (``api.app``): 413
``header_timeout_seconds``  10       the HTTP protocol (``api.protocols``): headers
                                     not complete in time close the connection
``body_timeout_seconds``    10       the HTTP layer: a body not received in time
                                     is a 408 (``TIMEOUT``)
``timeout_seconds``         10       the HTTP layer, both executions at every read
                                     and list (``Context.check_time``), and Neo4j's
                                     transaction timeout
``max_path_hops``           6        ``collaborationPath(maxHops:)``
``max_batch_ids``           500      ``papersById(ids:)``
==========================  =======  ==============================================

Going over a limit is a ``LIMIT_EXCEEDED`` error; the settings (``api.settings``) read each
from the environment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from graphql import ASTValidationRule, DocumentNode, GraphQLError, SelectionSetNode, ValidationContext
from graphql.language import Visitor, visit
from graphql.validation import MaxIntrospectionDepthRule
from strawberry.extensions import AddValidationRules, ParserCache, SchemaExtension, ValidationCache
from strawberry.extensions.max_aliases import create_validator as max_aliases_rule
from strawberry.extensions.query_depth_limiter import create_validator as max_depth_rule

from pith_graph.api.coded_errors import CodedErrors
from pith_graph.api.cost import CostLimit
from pith_graph.api.reads.records import MAX_PATH_HOPS
from pith_graph.errors import BadUserInput, LimitExceeded, QueryTimeout

__all__ = [
    "DEFAULT_LIMITS",
    "ParserLimits",
    "RequestLimits",
    "out_of_time",
    "over_budget",
    "page_size",
    "path_hops",
    "schema_extensions",
]


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """Every request limit (see the module docstring)."""

    max_depth: int = 10
    max_aliases: int = 30
    max_tokens: int = 2000
    max_page_size: int = 100
    default_page_size: int = 20
    max_cost: int = 25_000
    max_body_bytes: int = 64 * 1024
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 10.0
    timeout_seconds: float = 10.0
    max_path_hops: int = MAX_PATH_HOPS
    default_path_hops: int = 4
    max_batch_ids: int = 500

    def __post_init__(self) -> None:
        for name in (
            "max_depth",
            "max_aliases",
            "max_tokens",
            "max_page_size",
            "max_cost",
            "max_body_bytes",
            "max_batch_ids",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not 0 < self.default_page_size <= self.max_page_size:
            raise ValueError("default_page_size must be between 1 and max_page_size")
        for name in ("timeout_seconds", "header_timeout_seconds", "body_timeout_seconds"):
            seconds = getattr(self, name)
            if not (seconds > 0 and math.isfinite(seconds)):  # nan and inf too
                raise ValueError(f"{name} must be a positive, finite number of seconds")
        if not 1 <= self.max_path_hops <= MAX_PATH_HOPS:
            raise ValueError(f"max_path_hops must be between 1 and {MAX_PATH_HOPS}")
        if not 1 <= self.default_path_hops <= self.max_path_hops:
            raise ValueError("default_path_hops must be between 1 and max_path_hops")


DEFAULT_LIMITS = RequestLimits()


def page_size(first: int | None, limits: RequestLimits, default: int | None = None) -> int:
    """``first`` checked against the page cap (``None``: ``default``, else the default page
    size)."""
    if first is None:
        return limits.default_page_size if default is None else min(default, limits.max_page_size)
    if first < 0:
        raise BadUserInput("first must not be negative.", "Pass a number from 0 up.")
    if first > limits.max_page_size:
        raise LimitExceeded(
            f"first must be at most {limits.max_page_size}.",
            "Ask for fewer items and page on with the endCursor as after.",
        )
    return first


def out_of_time(limits: RequestLimits) -> QueryTimeout:
    """The error of a request that ran past ``timeout_seconds`` (both executions)."""
    return QueryTimeout(
        f"The query took longer than {limits.timeout_seconds:g} s.",
        "Ask for less: smaller pages, fewer nested fields.",
    )


def over_budget(limits: RequestLimits) -> LimitExceeded:
    """The error of a request whose answer grew past ``max_cost`` objects (both executions:
    the cost is checked before, these objects are counted as they are made)."""
    return LimitExceeded(
        f"The answer holds more than {limits.max_cost} objects, the limit of the query cost.",
        "Ask for less: smaller first arguments, fewer nested lists or aliases; "
        "page on with the endCursor as after.",
    )


def path_hops(max_hops: int | None, limits: RequestLimits) -> int:
    """``maxHops`` checked against the cap (``None``: the default)."""
    if max_hops is None:
        return limits.default_path_hops
    if max_hops < 1:
        raise BadUserInput("maxHops must be at least 1.")
    if max_hops > limits.max_path_hops:
        raise LimitExceeded(f"maxHops must be at most {limits.max_path_hops}.")
    return max_hops


class ParserLimits(SchemaExtension):
    """Bounds the parser: lexical tokens, comments and the source length."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens

    def on_operation(self) -> Iterator[None]:
        options = self.execution_context.parse_options
        options["max_lexical_tokens"] = self.max_tokens  # type: ignore[typeddict-unknown-key]
        options["max_comments"] = self.max_tokens  # type: ignore[typeddict-unknown-key]
        options["max_source_length"] = self.max_tokens * 50  # type: ignore[typeddict-unknown-key]
        yield


class _EmptySelections(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: SelectionSetNode | None = None

    def enter_selection_set(self, node: SelectionSetNode, *_args: object) -> object:
        if not node.selections:
            self.found = node
            return self.BREAK
        return None


def _depth_rule(max_depth: int) -> type[ASTValidationRule]:
    """strawberry's depth rule, after refusing an empty selection set (``{ }``, which
    graphql-core parses and the depth rule cannot measure)."""
    base = max_depth_rule(max_depth, None)

    class DepthRule(base):  # type: ignore[misc, valid-type]
        def __init__(self, context: ValidationContext) -> None:
            document: DocumentNode = context.document
            empty = _EmptySelections()
            visit(document, empty)
            if empty.found is not None:
                ASTValidationRule.__init__(self, context)
                context.report_error(
                    GraphQLError("A selection set is empty: select at least one field.", empty.found)
                )
                return
            super().__init__(context)

    return DepthRule


def schema_extensions(limits: RequestLimits) -> list[Callable[[], SchemaExtension]]:
    """Factories of the schema's extensions (one instance each per request), outermost first:
    error codes, parser limits, validation limits, the parse and validation caches, then the
    cost limit (after validation: it counts with the request's variables, so it is not cached).

    The validation rules are built once here, so the validation cache can recognise them.
    """
    rules: list[type[ASTValidationRule]] = [
        _depth_rule(limits.max_depth),
        max_aliases_rule(limits.max_aliases),
        MaxIntrospectionDepthRule,
    ]
    return [
        CodedErrors,
        partial(ParserLimits, limits.max_tokens),
        partial(AddValidationRules, rules),
        partial(ParserCache, maxsize=256),
        partial(ValidationCache, maxsize=256),
        partial(CostLimit, limits),
    ]
