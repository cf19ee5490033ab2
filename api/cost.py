"""The static cost of a query, checked before it runs (like GitHub's GraphQL node limit).

The cost of an operation is how many objects its lists may return, summed over the
document: every list field counts the product of the sizes of the lists above it and its
own. A list with ``first`` has that size (or the default page size, 20, when ``first`` is
not given); ``collaborationPath`` has ``maxHops`` (default 4); ``papersById`` has as many
items as identifiers (at most ``max_batch_ids``); a list without ``first`` has
the estimate of :data:`LIST_SIZES`; the ``edges`` and ``nodes`` of a page are counted by
the field that took ``first`` (a search's too; a facet's values by ``facets(first:)``). Fragments count where they are spread; aliases count once
each. For example::

    { papers(first: 50) { nodes { title authors { name } } } }    50 + 50 × 10   =     550
    { a: papers(first: 100) { nodes { authors {                    100 + 100 × 10
          papers(first: 100) { nodes { title } } } } } }             + 100 × 10 × 100 = 101,100

:class:`CostLimit` refuses an operation whose cost is over ``RequestLimits.max_cost``
with ``LIMIT_EXCEEDED``, before any resolver runs. Variables count with the values the
request gives them; a ``first`` over the page cap counts as the cap (the page-size check
then refuses it with its own message).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValueNode,
    VariableNode,
    get_named_type,
)
from graphql import ExecutionResult as GraphQLExecutionResult
from strawberry.extensions import SchemaExtension

from pith_graph.errors import LimitExceeded

if TYPE_CHECKING:  # limits builds the extensions, this one among them
    from pith_graph.api.limits import RequestLimits

__all__ = ["LIST_SIZES", "PAGE_ITEMS", "CostLimit", "query_cost"]

#: Items per parent assumed for the lists that take no ``first``: about the 99th percentile
#: of real and generated corpora (a paper has 2 categories and 4 authors at the median).
LIST_SIZES: dict[str, int] = {
    "Query.categories": 200,  # arXiv has about 155
    "Query.resolve": 10,  # the versions an arXiv id or DOI names
    "Paper.categories": 5,
    "Paper.authors": 10,
    "Paper.aliases": 6,  # one per kind
    "Paper.signers": 2,
    "Paper.versions": 5,
    "Author.categories": 20,
    "Verification.keys": 2,
    "Verification.signatures": 2,
    # A facet's values: the ``first`` of ``facets(first:)``, which counts the Facets object
    # that many times already, so each facet list counts once more per value.
    "Facets.years": 1,
    "Facets.categories": 1,
    "Facets.archives": 1,
    "Facets.licenses": 1,
    "Facets.authors": 1,
}
#: The lists of a page: their items are what the connection's ``first`` already counted.
PAGE_ITEMS = frozenset(
    {"PaperConnection.edges", "PaperConnection.nodes", "SearchConnection.edges", "SearchConnection.nodes"}
)
#: The size of a list of objects missing from :data:`LIST_SIZES` (a test keeps it complete).
UNLISTED_SIZE = 10


def _is_object_list(field: GraphQLField) -> bool:
    kind = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
    return isinstance(kind, GraphQLList) and isinstance(get_named_type(kind), GraphQLObjectType)


class _Counter:
    """Walks one operation of a document."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        limits: RequestLimits,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.limits = limits

    def _int(self, node: ValueNode | None, default: int, cap: int) -> int:
        """An Int argument's value, clamped to ``0..cap``; ``default`` when null or absent."""
        value: Any = None
        if isinstance(node, IntValueNode):
            value = int(node.value)
        elif isinstance(node, VariableNode):
            value = self.variables.get(node.name.value)
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool):
            return cap  # not an Int: execution refuses it; count the worst
        return max(0, min(value, cap))

    def _length(self, node: ValueNode | None, cap: int) -> int:
        """A list argument's length, at most ``cap`` (more is refused by its own check)."""
        value: Any = None
        if isinstance(node, ListValueNode):
            value = node.values
        elif isinstance(node, VariableNode):
            value = self.variables.get(node.name.value)
        elif node is not None:
            value = node  # one literal identifier
        if not isinstance(value, list | tuple):
            return 1 if value is not None else 0  # a single value is coerced to a list of one
        return min(len(value), cap)

    def _size(self, parent: GraphQLObjectType, node: FieldNode, field: GraphQLField) -> int | None:
        """How many items the field returns per parent; ``None`` for a single value."""
        arguments = {argument.name.value: argument.value for argument in node.arguments or ()}
        limits = self.limits
        if "first" in field.args:
            return self._int(arguments.get("first"), limits.default_page_size, limits.max_page_size)
        if "maxHops" in field.args:
            return self._int(arguments.get("maxHops"), limits.default_path_hops, limits.max_path_hops)
        if "ids" in field.args:  # papersById: one answer per identifier
            return self._length(arguments.get("ids"), limits.max_batch_ids)
        key = f"{parent.name}.{node.name.value}"
        if key in PAGE_ITEMS or not _is_object_list(field):
            return None
        return LIST_SIZES.get(key, UNLISTED_SIZE)

    def _fields(
        self, parent: GraphQLObjectType, selections: SelectionSetNode, seen: frozenset[str]
    ) -> Iterator[tuple[GraphQLObjectType, FieldNode]]:
        """The fields of a selection set, fragments spread (each at most once per path)."""
        for selection in selections.selections:
            if isinstance(selection, FieldNode):
                yield parent, selection
            elif isinstance(selection, InlineFragmentNode):
                yield from self._fields(
                    self._type(selection.type_condition, parent), selection.selection_set, seen
                )
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is not None and name not in seen:
                    on = self._type(fragment.type_condition, parent)
                    yield from self._fields(on, fragment.selection_set, seen | {name})

    def _type(self, condition: Any, parent: GraphQLObjectType) -> GraphQLObjectType:
        found = self.schema.get_type(condition.name.value) if condition is not None else parent
        return found if isinstance(found, GraphQLObjectType) else parent

    def cost(self, parent: GraphQLObjectType, selections: SelectionSetNode, above: int) -> int:
        total = 0
        for owner, node in self._fields(parent, selections, frozenset()):
            field = owner.fields.get(node.name.value)
            if field is None:  # __typename, introspection (bounded by its own rule)
                continue
            size = self._size(owner, node, field)
            here = above if size is None else above * size
            if size is not None:
                total += here
            child = get_named_type(field.type)
            if node.selection_set is not None and isinstance(child, GraphQLObjectType):
                total += self.cost(child, node.selection_set, here)
        return total


def query_cost(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: Mapping[str, Any] | None,
    limits: RequestLimits,
) -> int:
    """The cost of the operation ``operation_name`` (or the only one) of ``document``; 0 when
    there is no such operation (execution then reports it)."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [o for o in operations if operation_name is None or (o.name and o.name.value == operation_name)]
    root = schema.query_type
    if len(chosen) != 1 or root is None:
        return 0
    operation = chosen[0]
    given = dict(variables or {})
    for definition in operation.variable_definitions or ():
        name = definition.variable.name.value
        if name not in given and isinstance(definition.default_value, IntValueNode):
            given[name] = int(definition.default_value.value)
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    return _Counter(schema, fragments, given, limits).cost(root, operation.selection_set, 1)


class CostLimit(SchemaExtension):
    """Refuses, before execution, an operation that costs more than ``limits.max_cost``."""

    def __init__(self, limits: RequestLimits) -> None:
        self.limits = limits

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        if context.graphql_document is not None:
            # strawberry's own ValidationCache reaches the graphql-core schema the same way.
            schema: GraphQLSchema = context.schema._schema
            cost = query_cost(
                schema, context.graphql_document, context.operation_name, context.variables, self.limits
            )
            if cost > self.limits.max_cost:
                refusal = LimitExceeded(
                    f"The query costs {cost}, over the limit of {self.limits.max_cost}.",
                    "Ask for less: smaller first arguments, fewer nested lists or aliases; "
                    "page on with the endCursor as after.",
                )
                error = GraphQLError(refusal.message, original_error=refusal)
                context.result = GraphQLExecutionResult(data=None, errors=[error])
        yield
