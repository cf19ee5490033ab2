"""The static cost of a query, checked before it runs (like GitHub's GraphQL node limit).

The cost of an operation is how many objects its lists may return, summed over the
document: every list of objects counts the product of the sizes of the lists above it and
its own. Every such list has a size the server holds it to, so the cost is an upper bound
of the objects the answer holds (the executions count them as well, see
:meth:`~pith_graph.api.context.Context.produced`):

* a list with ``first`` has that size, or its default when ``first`` is not given: the
  argument's default in the schema (``facets``, ``authors(prefix:)``: 10), the page cap for
  ``Paper.authors`` (:data:`WHOLE_PAGE_BY_DEFAULT`), else the default page size (20);
* a page (``papers``, ``search``, ``Author.papers``, ...) or ``facets`` is one object: its
  ``first`` sizes its lists (``edges`` and ``nodes``, each facet's values,
  :data:`PAGE_ITEMS`), or ``last`` (``papers``' backward pages, since 0.9.2) as ``first``;
* ``collaborationPath`` has ``maxHops`` (default 4), ``papersById`` and ``nodes`` as many
  items as identifiers (at most ``max_batch_ids``); a ``Node`` costs what its costliest
  type's selection would;
* every other list answers with at most :data:`LIST_SIZES` items (the first ones, in the
  list's order: :func:`capped`);
* introspection's lists (``__schema { types }``, ``fields``, ``args``, ...) have their
  largest size in the schema, which is static (:func:`introspection_sizes`): one standard
  introspection costs about 5,000, 30 aliased ones are refused.

Fragments count where they are spread, each spread again (each fragment is counted once per
type and page, in time linear in the document); aliases count once each. For example::

    { papers(first: 50) { nodes { title authors(first: 10) { name } } } }    50 + 50 × 10 = 550
    { a: papers(first: 100) { nodes { authors(first: 10) {                 100 + 100 × 10
          papers(first: 100) { nodes { title } } } } } }                     + 100 × 10 × 100 = 101,100

:class:`CostLimit` refuses an operation whose cost is over ``RequestLimits.max_cost``
with ``LIMIT_EXCEEDED``, before any resolver runs. Every argument counts with the value
execution gives it (graphql-core's own coercion): inline, from a variable, from a
variable's default (an explicit null overrides it) or from the schema's default, so a query
costs the same whichever way its values come. A field whose arguments execution refuses
counts nothing, nor does a request whose variables it refuses; a ``first`` over the page
cap counts as the cap (the page-size check then refuses it with its own message).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLEnumType,
    GraphQLError,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    SchemaMetaFieldDef,
    SelectionSetNode,
    TypeMetaFieldDef,
    get_named_type,
    is_abstract_type,
)
from graphql import ExecutionResult as GraphQLExecutionResult
from graphql.execution.values import VariableValues, get_argument_values, get_variable_values
from strawberry.extensions import SchemaExtension

from pith_graph.api.unbounded import operation_of
from pith_graph.errors import LimitExceeded

if TYPE_CHECKING:  # limits builds the extensions, this one among them
    from pith_graph.api.limits import RequestLimits

__all__ = [
    "LIST_SIZES",
    "PAGE_ITEMS",
    "READ_SIZES",
    "WHOLE_PAGE_BY_DEFAULT",
    "CostLimit",
    "capped",
    "first_default",
    "introspection_sizes",
    "query_cost",
]

T = TypeVar("T")

#: The most items these lists (which take no ``first``) answer with, per parent: the first
#: ones in the list's order. Well above what real papers have (arXiv: a handful of
#: categories and versions, about 155 categories in all; signers and keys: the keyring's),
#: they bound what a signer's data can make one query return.
LIST_SIZES: dict[str, int] = {
    "Query.categories": 200,
    "Query.resolve": 50,  # the versions an arXiv id or DOI names
    "Paper.categories": 20,
    "Paper.aliases": 20,
    "Paper.signers": 10,
    "Paper.versions": 50,
    "Paper.authorNames": 100,  # a paper's spellings, in its order (authors pages through them all)
    "Paper.byline": 100,  # the same, each with its Author: as Paper.authors' default page
    "Author.nameForms": 20,  # its papers' spellings: a signer may spell an author many ways
    "Verification.keys": 10,
    "Verification.signatures": 10,
}
#: The most items of each paper the reader calls behind those lists fetch (``first``): the
#: size of the lists each serves, the larger where it serves two (signatures: the signers
#: and a verification's signatures; categories: the categories and the primary one, first
#: of them). The fields then cut their own with :func:`capped`.
READ_SIZES: dict[str, int] = {
    "categories_of_papers": LIST_SIZES["Paper.categories"],
    "aliases_of_papers": LIST_SIZES["Paper.aliases"],
    "author_names_of_papers": max(LIST_SIZES["Paper.authorNames"], LIST_SIZES["Paper.byline"]),
    "name_forms_of_authors": LIST_SIZES["Author.nameForms"],
    "signatures_of_papers": max(LIST_SIZES["Paper.signers"], LIST_SIZES["Verification.signatures"]),
    "versions_of_papers": LIST_SIZES["Paper.versions"],
}
#: The lists of an object sized by ``first`` (a page, facets): that ``first`` is their size.
PAGE_ITEMS = frozenset(
    {
        "PaperConnection.edges",
        "PaperConnection.nodes",
        "SearchConnection.edges",
        "SearchConnection.nodes",
        "Facets.years",
        "Facets.categories",
        "Facets.archives",
        "Facets.licenses",
        "Facets.authors",
    }
)
#: Lists whose ``first`` defaults to the page cap: a paper's authors are whole unless asked.
WHOLE_PAGE_BY_DEFAULT = frozenset({"Paper.authors"})
#: The size of a list of objects missing from :data:`LIST_SIZES` (a test keeps it complete).
UNLISTED_SIZE = 10
#: :func:`introspection_sizes` of each schema, computed once.
_SIZES: weakref.WeakKeyDictionary[GraphQLSchema, dict[str, int]] = weakref.WeakKeyDictionary()


def first_default(key: str, limits: RequestLimits) -> int | None:
    """What ``first`` of list ``key`` (``Type.field``) is when not given, where that is not the
    argument's own default: the page cap for :data:`WHOLE_PAGE_BY_DEFAULT`, else ``None``."""
    return limits.max_page_size if key in WHOLE_PAGE_BY_DEFAULT else None


def introspection_sizes(schema: GraphQLSchema) -> dict[str, int]:
    """The size of each introspection list of ``schema`` (``Type.field``): the largest it
    answers with anywhere in the schema (``__Schema.types``: every type)."""
    known = _SIZES.get(schema)
    if known is not None:
        return known
    types = list(schema.type_map.values())
    fielded = [t for t in types if isinstance(t, (GraphQLObjectType, GraphQLInterfaceType))]
    fields = [f for t in fielded for f in t.fields.values()]
    sizes = {
        "__Schema.types": len(types),
        "__Schema.directives": len(schema.directives),
        "__Type.fields": max((len(t.fields) for t in fielded), default=0),
        "__Type.interfaces": max((len(t.interfaces) for t in fielded), default=0),
        "__Type.possibleTypes": max(
            (len(schema.get_possible_types(t)) for t in types if is_abstract_type(t)), default=0
        ),
        "__Type.enumValues": max((len(t.values) for t in types if isinstance(t, GraphQLEnumType)), default=0),
        "__Type.inputFields": max(
            (len(t.fields) for t in types if isinstance(t, GraphQLInputObjectType)), default=0
        ),
        "__Field.args": max((len(f.args) for f in fields), default=0),
        "__Directive.args": max((len(d.args) for d in schema.directives), default=0),
    }
    _SIZES[schema] = sizes
    return sizes


def capped(key: str, items: Sequence[T]) -> list[T]:
    """The first :data:`LIST_SIZES` ``[key]`` of ``items``: what the list ``key``
    (``Type.field``) answers with, in both executions.

    >>> capped("Paper.signers", list(range(12)))
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    return list(items[: LIST_SIZES[key]])


def _is_list(field: GraphQLField) -> bool:
    kind = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
    return isinstance(kind, GraphQLList)


def _is_object_list(field: GraphQLField) -> bool:
    named = get_named_type(field.type)
    return _is_list(field) and (isinstance(named, GraphQLObjectType) or is_abstract_type(named))


def _clamp(value: Any, default: int, cap: int) -> int:
    """An Int argument's coerced ``value`` within ``0..cap``; ``default`` when null."""
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        return cap  # not an Int (coercion makes it one): count the worst
    return max(0, min(value, cap))


def _larger(first: Any, last: Any) -> Any:
    """The size that counts of ``first`` and ``last`` (either null: the other; both given, which
    execution refuses: the larger)."""
    if last is None:
        return first
    if first is None or not isinstance(first, int) or not isinstance(last, int):
        return last
    return max(first, last)


#: The introspection fields of the query type, which its ``fields`` do not hold.
_ROOT_META = {"__schema": SchemaMetaFieldDef, "__type": TypeMetaFieldDef}


class _Counter:
    """Walks one operation of a document, each fragment once per type and page it is spread
    on (:meth:`_fragment`)."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: VariableValues,
        limits: RequestLimits,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.limits = limits
        self._memo: dict[tuple[str, str, int | None], int] = {}
        self._open: set[tuple[str, str, int | None]] = set()

    def _arguments(self, field: GraphQLField, node: FieldNode) -> dict[str, Any] | None:
        """The field's arguments as execution coerces them (literals, variables, their
        defaults, the schema's defaults); ``None`` when execution refuses them (a field
        error: nothing under the field runs)."""
        try:
            return get_argument_values(field, node, self.variables)
        except GraphQLError:
            return None

    def _first(self, key: str, field: GraphQLField, value: Any) -> int:
        """The size ``first`` gives (its default when null), at most the page cap."""
        limits = self.limits
        default = first_default(key, limits)
        if default is None:
            default = field.args["first"].default_value
        if not isinstance(default, int) or isinstance(default, bool):
            default = limits.default_page_size
        return _clamp(value, min(default, limits.max_page_size), limits.max_page_size)

    def _size(
        self, key: str, field: GraphQLField, arguments: Mapping[str, Any], page: int | None
    ) -> int | None:
        """How many items the field returns per parent, given its coerced ``arguments`` (for
        a page or facets: how many its lists hold); ``None`` for a single value."""
        limits = self.limits
        if "first" in field.args:  # last (papers, since 0.9.2) sizes a page as first does
            return self._first(key, field, _larger(arguments.get("first"), arguments.get("last")))
        if "maxHops" in field.args:
            return _clamp(arguments.get("maxHops"), limits.default_path_hops, limits.max_path_hops)
        if "ids" in field.args:  # papersById: one answer per identifier (coerced to a list)
            ids = arguments.get("ids")
            return min(len(ids), limits.max_batch_ids) if isinstance(ids, list) else 0
        if key in PAGE_ITEMS:
            return page if page is not None else limits.max_page_size
        if not _is_object_list(field):
            return None
        if key.startswith("__"):
            return introspection_sizes(self.schema).get(key, len(self.schema.type_map))
        return LIST_SIZES.get(key, UNLISTED_SIZE)

    def _type(self, condition: Any, parent: GraphQLObjectType) -> GraphQLObjectType | None:
        """The type a fragment's selection applies to on ``parent``: ``parent`` itself, or
        ``None`` for a fragment on another object type (on a ``Node``, only its own type's)."""
        found = self.schema.get_type(condition.name.value) if condition is not None else parent
        return None if isinstance(found, GraphQLObjectType) and found is not parent else parent

    def cost(
        self, parent: GraphQLObjectType, selections: SelectionSetNode, above: int, page: int | None = None
    ) -> int:
        """The cost of ``selections`` on ``above`` objects of type ``parent``; ``page``: the
        ``first`` of the page or facets they are (which sizes their lists)."""
        return above * self._each(parent, selections, page)

    def _each(self, parent: GraphQLObjectType, selections: SelectionSetNode, page: int | None) -> int:
        """The cost of ``selections`` on one object of type ``parent`` (a cost is that of one
        object times how many there are), fragments spread: each spread counts its fragment's
        cost again (:meth:`_fragment`)."""
        total = 0
        for selection in selections.selections:
            if isinstance(selection, InlineFragmentNode):
                on = self._type(selection.type_condition, parent)
                total += self._each(on, selection.selection_set, page) if on is not None else 0
            elif isinstance(selection, FragmentSpreadNode):
                total += self._fragment(selection.name.value, parent, page)
            elif isinstance(selection, FieldNode):
                total += self._field(parent, selection, page)
        return total

    def _field(self, owner: GraphQLObjectType, node: FieldNode, page: int | None) -> int:
        field = owner.fields.get(node.name.value)
        if field is None and owner is self.schema.query_type:  # introspection's entries
            field = _ROOT_META.get(node.name.value)
        if field is None:  # __typename
            return 0
        arguments = self._arguments(field, node) if field.args else {}
        if arguments is None:  # refused: the field does not run, nor anything under it
            return 0
        size = self._size(f"{owner.name}.{node.name.value}", field, arguments, page)
        inner = None
        if size is not None and not _is_list(field):  # a page or facets: one object
            inner, size = size, None
        here = 1 if size is None else size
        total = 0 if size is None else size
        child = get_named_type(field.type)
        if node.selection_set is not None and isinstance(child, GraphQLObjectType):
            total += here * self._each(child, node.selection_set, inner)
        elif node.selection_set is not None and is_abstract_type(child):  # a Node: its costliest type
            kinds = self.schema.get_possible_types(child)
            total += here * max((self._each(kind, node.selection_set, inner) for kind in kinds), default=0)
        return total

    def _fragment(self, name: str, parent: GraphQLObjectType, page: int | None) -> int:
        """The cost of fragment ``name`` spread on one object of type ``parent``, computed
        once per fragment, type and page (memoised: a document whose fragments each spread
        the next twice costs 2^n, and is counted in time linear in n). A spread of a
        fragment being counted (a cycle, which validation refuses) or of an unknown one
        counts nothing."""
        fragment = self.fragments.get(name)
        if fragment is None:
            return 0
        on = self._type(fragment.type_condition, parent)
        if on is None:
            return 0
        key = (name, on.name, page)
        known = self._memo.get(key)
        if known is not None:
            return known
        if key in self._open:
            return 0
        self._open.add(key)
        try:
            found = self._each(on, fragment.selection_set, page)
        finally:
            self._open.discard(key)
        self._memo[key] = found
        return found


def query_cost(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: Mapping[str, Any] | None,
    limits: RequestLimits,
) -> int:
    """The cost of the operation ``operation_name`` (or the only one) of ``document``; 0 when
    there is no such operation or its variables do not coerce (execution then reports it)."""
    found, root = operation_of(document, operation_name), schema.query_type
    if found is None or root is None:
        return 0
    operation, fragments = found
    # The variables as execution coerces them: given values, else the operation's defaults
    # (lists, input objects, enums, null alike); an explicit null stays null.
    given = get_variable_values(schema, operation.variable_definitions or (), dict(variables or {}))
    if isinstance(given, list):  # execution refuses the request: no resolver runs
        return 0
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
