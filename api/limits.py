"""RequestLimits that keep one request from taking the server down, on by default.

==========================  ========  ==============================================
limit                       default   enforced by
==========================  ========  ==============================================
``max_depth``               10        :func:`shape_rule` (strawberry's
                                      ``QueryDepthLimiter``'s count and message)
``max_aliases``             30        :func:`shape_rule` (strawberry's
                                      ``MaxAliasesLimiter``'s count and message)
``max_tokens``              2000      the GraphQL parser (lexical tokens, comments
                                      and source length are each bounded); its
                                      :data:`SPREAD_FACTOR` times bounds the fields
                                      of a document, fragments spread
                                      (:class:`ParserLimits`)
``max_page_size``           100       ``first`` arguments (:func:`page_size`)
``max_cost``                25000     :class:`~pith_graph.api.cost.CostLimit`, before
                                      execution: the objects the lists of a query may
                                      return, each list's size multiplied down each
                                      path and summed (:mod:`pith_graph.api.cost`);
                                      during execution, the objects the answer's lists
                                      hold (``Context.produced``, both executions)
``max_body_bytes``          65536     the HTTP layer (``api.app``): 413
``header_timeout_seconds``  10        the HTTP protocol (``api.protocols``): headers
                                      not complete in time close the connection
``body_timeout_seconds``    10        the HTTP layer: a body not received in time
                                      is a 408 (``TIMEOUT``)
``timeout_seconds``         10        the HTTP layer, both executions at every read
                                      and list (``Context.check_time``), the memory
                                      reader inside its long reads
                                      (``api.reads.deadline``), and Neo4j's
                                      transaction timeout
``max_path_hops``           6         ``collaborationPath(maxHops:)``
``max_batch_ids``           500       ``papersById(ids:)``, ``nodes(ids:)``
``max_answer_bytes``        33554432  both executions, before an answer is encoded
                                      (:mod:`pith_graph.api.answer_size`)
==========================  ========  ==============================================

Over a limit: ``LIMIT_EXCEEDED``; ``api.settings`` reads each (and :mod:`.overlaps` one more).

Fragments: a fragment spread ``k`` times counts ``k`` times in every limit (depth, aliases,
cost), so a document of a few hundred bytes whose fragments each spread the next twice
stands for 2^n fields. Every check here measures each fragment once (memoised: time linear
in the document, however often it is spread), and before any validation rule runs,
:class:`ParserLimits` refuses a document whose fields, its fragments spread, number over
``SPREAD_FACTOR × max_tokens`` (20,000): what validation, the cost, the plan compiler and
execution walk is then at most that, whatever the spreads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from graphql import (
    ASTValidationRule,
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
)
from graphql.language import Visitor, visit
from strawberry.extensions import AddValidationRules, SchemaExtension

from pith_graph.api.coded_errors import CodedErrors, OperationNameRequired
from pith_graph.api.cost import CostLimit
from pith_graph.api.documents import DOCUMENTS, DocumentCache
from pith_graph.api.fragment_order import dependency_order
from pith_graph.api.overlaps import SameNameLimit, budgeted
from pith_graph.api.reads.records import MAX_PATH_HOPS
from pith_graph.api.validation import OffLoopValidation
from pith_graph.errors import BadUserInput, LimitExceeded, QueryTimeout

__all__ = [
    "DEFAULT_LIMITS",
    "SPREAD_FACTOR",
    "DocumentShape",
    "ParserLimits",
    "RequestLimits",
    "out_of_time",
    "over_budget",
    "page_size",
    "parser_bounds",
    "path_hops",
    "schema_extensions",
    "shape_rule",
    "spread_fields_limit",
]

#: A document's fields once its fragments are spread (each spread counting its fragment's
#: fields again) may number this many times ``max_tokens``. Spelt out without fragments a
#: document holds at most ``max_tokens`` fields (a field is a token at least); fragments
#: save writing them again, and 10 times leaves room for any real reuse (a 40-field
#: fragment under all 30 aliases is 1,200) while bounding what the checks and executions
#: walk (20,000 fields by default: milliseconds).
SPREAD_FACTOR = 10


def parser_bounds(max_tokens: int) -> dict[str, int]:
    """graphql-core's ``parse`` options that bound a document: tokens, comments, length."""
    return {
        "max_lexical_tokens": max_tokens,
        "max_comments": max_tokens,
        "max_source_length": max_tokens * 50,
    }


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
    max_answer_bytes: int = 32 * 1024 * 1024

    def __post_init__(self) -> None:
        for name in (
            "max_depth",
            "max_aliases",
            "max_tokens",
            "max_page_size",
            "max_cost",
            "max_body_bytes",
            "max_batch_ids",
            "max_answer_bytes",
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


def page_size(
    first: int | None, limits: RequestLimits, default: int | None = None, on: str = "", name: str = "first"
) -> int:
    """``first`` checked against the page cap (``None``: ``default``, else the default page
    size), held to the cap, as is a ``first`` equal to it: the schema's default (``facets``,
    ``authors(prefix:)``: 10) made queries without one ``LIMIT_EXCEEDED`` under a cap below it.
    ``on``: how a list pages on, told after the cap; ``name``: the argument (or ``last``)."""
    if first is None or first == default:
        return limits.default_page_size if default is None else min(default, limits.max_page_size)
    if first < 0:
        raise BadUserInput(f"{name} must not be negative.", "Pass a number from 0 up.", argument=name)
    if first > (cap := limits.max_page_size):
        raise LimitExceeded(f"{name} must be at most {cap}.", f"Ask for at most {cap}{on}.", argument=name)
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
        hint = "Pass a number from 1 up, or leave it out."
        raise BadUserInput("maxHops must be at least 1.", hint, argument="maxHops")
    if max_hops > (cap := limits.max_path_hops):
        raise LimitExceeded(
            f"maxHops must be at most {cap}.", f"Ask for {cap} hops at most.", argument="maxHops"
        )
    return max_hops


def spread_fields_limit(limits: RequestLimits) -> int:
    """The most fields a document may hold, its fragments spread (:data:`SPREAD_FACTOR`)."""
    return limits.max_tokens * SPREAD_FACTOR


def _is_introspection(name: str) -> bool:
    return name.startswith("__")


@dataclass(frozen=True, slots=True)
class _Local:
    """One definition's own selections, its spreads not yet counted: ``spreads`` holds each
    spread's fragment, the depth it sits at, and whether it counts toward the depth."""

    fields: int
    aliases: int
    depth: int
    spreads: list[tuple[str, int, bool]]


def _local(selection_set: SelectionSetNode) -> _Local:
    """Count one definition's selections, without recursion (the parser bounds nesting, not
    Python's stack). The depth is strawberry's ``QueryDepthLimiter``'s: a field with a
    selection set at level ``k`` (top-level fields: 0) makes it ``k + 1``; introspection
    fields (``__schema``, ...) are not entered for the depth; aliases are
    ``MaxAliasesLimiter``'s (every aliased field, introspection too)."""
    fields = aliases = depth = 0
    spreads: list[tuple[str, int, bool]] = []
    stack = [(selection_set, 0, True)]
    while stack:
        current, level, counted = stack.pop()
        for selection in current.selections:
            if isinstance(selection, FieldNode):
                fields += 1
                aliases += selection.alias is not None
                if selection.selection_set is not None:
                    inside = counted and not _is_introspection(selection.name.value)
                    if inside:
                        depth = max(depth, level + 1)
                    stack.append((selection.selection_set, level + 1, inside))
            elif isinstance(selection, InlineFragmentNode):
                stack.append((selection.selection_set, level, counted))
            elif isinstance(selection, FragmentSpreadNode):
                spreads.append((selection.name.value, level, counted))
    return _Local(fields, aliases, depth, spreads)


@dataclass(frozen=True, slots=True)
class Shape:
    """A selection's size with its fragments spread where they are used: ``fields`` (each spread counting its
    fragment's again), ``aliases`` and ``depth`` as the limits count them."""

    fields: int
    aliases: int
    depth: int


class DocumentShape:
    """The :class:`Shape` of every operation of a document, each fragment measured once
    (memoised) in an order where the fragments it spreads come first, without recursion:
    time linear in the document, however often (and however deep) its fragments spread.
    A spread closing a cycle or naming an unknown fragment counts nothing (``cyclic`` tells;
    graphql's own rules refuse such documents)."""

    def __init__(self, document: DocumentNode) -> None:
        locals_ = {
            d.name.value: _local(d.selection_set)
            for d in document.definitions
            if isinstance(d, FragmentDefinitionNode)
        }
        order, self.cyclic = dependency_order(locals_, lambda name: (s for s, _, _ in locals_[name].spreads))
        self.fragments: dict[str, Shape] = {}
        for name in order:
            self.fragments[name] = self._total(locals_[name])
        self.operations: list[tuple[OperationDefinitionNode, Shape]] = [
            (d, self._total(_local(d.selection_set)))
            for d in document.definitions
            if isinstance(d, OperationDefinitionNode)
        ]

    def _total(self, local: _Local) -> Shape:
        fields, aliases, depth = local.fields, local.aliases, local.depth
        for name, level, counted in local.spreads:
            spread = self.fragments.get(name)
            if spread is None:  # unknown, or closing a cycle
                continue
            fields += spread.fields
            aliases += spread.aliases
            if counted:
                depth = max(depth, level + spread.depth)
        return Shape(fields, aliases, depth)

    @property
    def fields(self) -> int:
        """The fields of all its operations, fragments spread."""
        return sum(shape.fields for _, shape in self.operations)


def _too_many_fields(limit: int) -> LimitExceeded:
    return LimitExceeded(
        f"The document holds more than {limit} fields once its fragments are spread "
        "(each spread counts its fragment's fields again).",
        "Spread each fragment fewer times.",
    )


class ParserLimits(SchemaExtension):
    """Bounds the parser: lexical tokens, comments and the source length; then refuses a document whose
    fields, its fragments spread, number over :data:`SPREAD_FACTOR` times the token limit, before any
    validation rule (graphql's own among them) walks it: the check is linear in the document
    (:class:`DocumentShape`), run for every request. A document of several operations without an operation
    name is refused here too (:class:`OperationNameRequired`)."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens

    def on_operation(self) -> Iterator[None]:
        self.execution_context.parse_options.update(parser_bounds(self.max_tokens))  # type: ignore[typeddict-item]
        yield

    def on_parse(self) -> Iterator[None]:
        yield
        document = self.execution_context.graphql_document
        limit = self.max_tokens * SPREAD_FACTOR
        if document is not None and DocumentShape(document).fields > limit:
            # strawberry answers an error raised here with no validation (nor execution).
            raise _too_many_fields(limit)
        # As the request named it (strawberry's operation_name falls back to the first).
        if document is not None and getattr(self.execution_context, "_provided_operation_name", None) is None:
            operations = sum(isinstance(d, OperationDefinitionNode) for d in document.definitions)
            if operations > 1:
                raise OperationNameRequired


class _EmptySelections(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: SelectionSetNode | None = None

    def enter_selection_set(self, node: SelectionSetNode, *_args: object) -> object:
        if not node.selections:
            self.found = node
            return self.BREAK
        return None


def shape_rule(limits: RequestLimits) -> type[ASTValidationRule]:
    """The depth and alias limits, with the messages of strawberry's ``QueryDepthLimiter``
    and ``MaxAliasesLimiter`` (which walk every spread again: 2^n work for n fragments each
    spreading the next twice), measured by :class:`DocumentShape`: one depth error per
    operation too deep (at the operation), one for too many aliases. An empty selection set
    (``{ }``, which graphql-core parses) is refused first. Too many fields, fragments spread,
    are refused here too for callers of ``validate`` (the server refuses them before
    validation, :class:`ParserLimits`); then nothing else is measured."""
    max_depth, max_aliases, max_fields = limits.max_depth, limits.max_aliases, spread_fields_limit(limits)

    class ShapeRule(ASTValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            document: DocumentNode = context.document
            empty = _EmptySelections()
            visit(document, empty)
            if empty.found is not None:
                context.report_error(
                    GraphQLError("A selection set is empty: select at least one field.", empty.found)
                )
                return
            shape = DocumentShape(document)
            if shape.cyclic:  # NoFragmentCyclesRule refuses it
                return
            if shape.fields > max_fields:
                refusal = _too_many_fields(max_fields)
                context.report_error(GraphQLError(refusal.message, original_error=refusal))
                return
            for operation, measured in shape.operations:
                if measured.depth > max_depth:
                    name = operation.name.value if operation.name else "anonymous"
                    context.report_error(
                        GraphQLError(f"'{name}' exceeds maximum operation depth of {max_depth}", operation)
                    )
            aliases = sum(measured.aliases for _, measured in shape.operations)
            if aliases > max_aliases:
                context.report_error(GraphQLError(f"{aliases} aliases found. Allowed: {max_aliases}"))

    return ShapeRule


class ValidationRules(AddValidationRules):
    """graphql's rules (the overlapping-fields rule on a budget, :func:`.overlaps.budgeted`) and these."""

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context
        context.validation_rules = budgeted(context.validation_rules) + tuple(self.validation_rules)
        yield


def schema_extensions(limits: RequestLimits) -> list[Callable[[], SchemaExtension]]:
    """Factories of the schema's extensions (one instance each per request), outermost first:
    error codes, parser limits (fields, fragments spread; fields of one response name,
    :mod:`.overlaps`), validation limits, the parse and validation caches (bounded by memory
    too, :mod:`.documents`; validating off the loop, :mod:`.validation`), then the cost limit
    (counted with the request's variables: not cached). The rules are built once here."""
    rules: list[type[ASTValidationRule]] = [shape_rule(limits)]  # (introspection depth: graphql's own)
    return [
        CodedErrors,
        partial(ParserLimits, limits.max_tokens),
        SameNameLimit,
        partial(ValidationRules, rules),
        partial(DocumentCache, DOCUMENTS),
        partial(OffLoopValidation, DOCUMENTS),
        partial(CostLimit, limits),
    ]
