"""A validated document compiled into a plan: its fields, their specs, and what to fetch.

The plan of a query is a tree of :class:`SelectionPlan` (one per selection set and object
type: fragments are inlined, fields asked for twice under one response key merged) whose
:class:`FieldPlan` leaves know their :class:`~pith_graph.api.plan.specs.Spec`, their
arguments (computed once when they use no variables) and, for fields that call the reader,
the :class:`~pith_graph.api.plan.specs.Hint` drawn from what their selection reads: the
``Paper`` properties and relations, and whether paper counts are shown. A plan also knows
whether its root fields' reader calls are the only ones that may run a statement
(:attr:`Plan.root_reads_only`: below them, fields ask only for the relations those calls
fetched with their papers).

Only documents this module fully understands get a plan: a query operation whose fields
all have specs, with no directives and no introspection beyond ``__typename``. Anything
else (:class:`Unplannable`) runs on the resolvers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    ArgumentNode,
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    InlineFragmentNode,
    NamedTypeNode,
    OperationType,
    SelectionSetNode,
    VariableDefinitionNode,
    VariableNode,
    get_named_type,
    get_operation_ast,
    is_list_type,
    is_non_null_type,
    type_from_ast,
    value_from_ast,
    visit,
)
from graphql.execution.values import get_argument_values
from graphql.language import Visitor
from graphql.pyutils import Undefined

from pith_graph.api.plan.fields import FIELDS
from pith_graph.api.plan.hints import hint_of, root_reads_only
from pith_graph.api.plan.specs import Hint, Spec
from pith_graph.api.unbounded import unbounded_reads

__all__ = ["FieldPlan", "GiveWay", "Plan", "SelectionPlan", "Unplannable", "compile_plan"]


class Unplannable(Exception):
    """The document uses something plans do not cover; it runs on the resolvers."""


class GiveWay(Exception):
    """The plan cannot answer this request as the resolvers would (a null where the schema
    allows none, time running out): the resolvers answer it."""


@dataclass(eq=False, slots=True)
class FieldPlan:
    """One response key of a selection set."""

    key: str
    name: str
    spec: Spec | None  # None: __typename
    definition: GraphQLField | None
    node: FieldNode
    arguments: dict[str, Any] | None  # None: they use variables (computed per request)
    sub: SelectionPlan | None = None
    hint: Hint = field(default_factory=Hint)
    non_null: bool = False
    is_list: bool = False
    item_non_null: bool = False


@dataclass(eq=False, slots=True)
class SelectionPlan:
    """The fields asked of objects of one type, in response order. ``build`` makes an
    object's whole response at once when every field is read from the object alone (most
    leaves: an author's name, a category's code); it raises :class:`GiveWay` on a null the
    schema forbids."""

    type_name: str
    fields: list[FieldPlan]
    keys: tuple[str, ...] = ()
    build: Callable[[Any], dict[str, Any]] | None = None


@dataclass(eq=False, slots=True)
class Plan:
    """A compiled query: its variables and its root selection. ``scalars`` describes the
    variables when all are plain scalars (name, type name, non-null, default or
    ``Undefined``), so a request can check them without graphql-core."""

    variables: tuple[VariableDefinitionNode, ...]
    root: SelectionPlan
    scalars: tuple[tuple[str, str, bool, Any], ...] | None = None
    document: DocumentNode | None = None  #: for the cost limit (:mod:`pith_graph.api.cost`)
    operation_name: str | None = None
    #: Whether a variable gives a list its size (then the cost depends on the request).
    sized_by_variables: bool = False
    #: The cost, once known, of a plan whose lists no variable sizes (it cannot change).
    cost: int | None = None
    #: Whether the root level's reader calls are the only ones that may run a statement
    #: (:func:`~pith_graph.api.plan.hints.root_reads_only`).
    root_reads_only: bool = False
    #: Whether the cost bounds its reads (:mod:`pith_graph.api.unbounded`): may it run inline?
    reads_bounded: bool = False


def compile_plan(schema: GraphQLSchema, document: DocumentNode, operation_name: str | None) -> Plan:
    """The plan of ``document``'s operation; raises :class:`Unplannable`."""
    operation = get_operation_ast(document, operation_name)
    if operation is None or operation.operation is not OperationType.QUERY:
        raise Unplannable("not one query operation")
    if operation.directives:
        raise Unplannable("directives")
    query = schema.query_type
    assert query is not None
    fragments = {
        definition.name.value: definition
        for definition in document.definitions
        if isinstance(definition, FragmentDefinitionNode)
    }
    root = _selection(query, [operation.selection_set], fragments)
    variables = tuple(operation.variable_definitions or ())
    return Plan(
        variables,
        root,
        _scalars(schema, variables),
        document,
        operation_name,
        _sized_by_variables(document),
        root_reads_only=root_reads_only(root),
        reads_bounded=not unbounded_reads(schema, document, operation_name),
    )


#: The arguments that size a list in the cost (:mod:`pith_graph.api.cost`).
_SIZING = frozenset({"first", "last", "maxHops", "ids"})


def _sized_by_variables(document: DocumentNode) -> bool:
    """Whether a variable gives a list its size (then the cost depends on the request)."""
    found = False

    class Sizes(Visitor):
        def enter_argument(self, node: ArgumentNode, *_args: object) -> object:
            nonlocal found
            if node.name.value in _SIZING and isinstance(node.value, VariableNode):
                found = True
                return self.BREAK
            return None

    visit(document, Sizes())
    return found


_SCALARS = frozenset({"String", "Int", "Float", "Boolean", "ID"})


def _scalars(
    schema: GraphQLSchema, variables: Sequence[VariableDefinitionNode]
) -> tuple[tuple[str, str, bool, Any], ...] | None:
    found = []
    for definition in variables:
        if definition.directives:
            return None
        kind = type_from_ast(schema, definition.type)
        non_null = is_non_null_type(kind)
        named = kind.of_type if non_null else kind  # type: ignore[union-attr]
        if not isinstance(named, GraphQLScalarType) or named.name not in _SCALARS:
            return None
        default = Undefined
        if definition.default_value is not None:
            default = value_from_ast(definition.default_value, named)
            if default is Undefined:
                return None
        found.append((definition.variable.name.value, named.name, non_null, default))
    return tuple(found)


def _collect(
    kind: GraphQLObjectType,
    selection_set: SelectionSetNode,
    fragments: dict[str, FragmentDefinitionNode],
    grouped: dict[str, list[FieldNode]],
) -> None:
    condition: NamedTypeNode | None
    for selection in selection_set.selections:
        if selection.directives:
            raise Unplannable("directives")
        if isinstance(selection, FieldNode):
            key = (selection.alias or selection.name).value
            grouped.setdefault(key, []).append(selection)
            continue
        if isinstance(selection, FragmentSpreadNode):
            fragment = fragments[selection.name.value]
            if fragment.directives or fragment.variable_definitions:
                raise Unplannable("fragment directives or variables")
            condition, inner = fragment.type_condition, fragment.selection_set
        elif isinstance(selection, InlineFragmentNode):
            condition, inner = selection.type_condition, selection.selection_set
        else:  # pragma: no cover - graphql-core has no other selection
            raise Unplannable(type(selection).__name__)
        if condition is not None and condition.name.value != kind.name:
            raise Unplannable("a fragment on another type")
        _collect(kind, inner, fragments, grouped)


def _selection(
    kind: GraphQLObjectType,
    selection_sets: Sequence[SelectionSetNode],
    fragments: dict[str, FragmentDefinitionNode],
) -> SelectionPlan:
    grouped: dict[str, list[FieldNode]] = {}
    for selection_set in selection_sets:
        _collect(kind, selection_set, fragments, grouped)
    plan = SelectionPlan(kind.name, [], tuple(grouped))
    for key, nodes in grouped.items():
        plan.fields.append(_field(kind, key, nodes, fragments))
    plan.build = _builder(plan)
    return plan


def _builder(plan: SelectionPlan) -> Callable[[Any], dict[str, Any]] | None:
    getters: list[tuple[str, Callable[[Any], Any]]] = []
    for item in plan.fields:
        if item.sub is not None:
            return None
        if item.spec is None:  # __typename
            getters.append((item.key, _constant(plan.type_name)))
        elif item.spec.get is not None:
            getters.append((item.key, item.spec.get))
        else:
            return None
    required = [item.key for item in plan.fields if item.non_null]
    if len(required) < len(getters):

        def checked(source: Any) -> dict[str, Any]:
            made = {key: get(source) for key, get in getters}
            if any(made[key] is None for key in required):
                raise GiveWay("a null where the schema allows none")
            return made

        return checked

    def build(source: Any) -> dict[str, Any]:
        made = {key: get(source) for key, get in getters}
        if None in made.values():
            raise GiveWay("a null where the schema allows none")
        return made

    return build


def _constant(value: str) -> Callable[[Any], str]:
    return lambda _: value


def _field(
    kind: GraphQLObjectType, key: str, nodes: list[FieldNode], fragments: dict[str, FragmentDefinitionNode]
) -> FieldPlan:
    node = nodes[0]
    name = node.name.value
    if name == "__typename":
        return FieldPlan(key, name, None, None, node, {}, non_null=True)
    spec = FIELDS.get((kind.name, name))
    if spec is None:
        raise Unplannable(f"{kind.name}.{name}")
    definition = kind.fields[name]
    outer = definition.type
    inner = outer.of_type if is_non_null_type(outer) else outer
    is_list = is_list_type(inner)
    plan = FieldPlan(
        key,
        name,
        spec,
        definition,
        node,
        None if _uses_variables(node) else get_argument_values(definition, node),
        non_null=is_non_null_type(outer),
        is_list=is_list,
        item_non_null=is_list and is_non_null_type(inner.of_type),
    )
    named = get_named_type(outer)
    if isinstance(named, GraphQLObjectType):
        selection_sets = [n.selection_set for n in nodes if n.selection_set is not None]
        plan.sub = _selection(named, selection_sets, fragments)
        if spec.fetches:
            plan.hint = hint_of(plan.sub)
    return plan


def _uses_variables(node: FieldNode) -> bool:
    """Whether the field's arguments refer to a variable."""
    found: list[bool] = []

    class Variables(Visitor):
        def enter_variable(self, *_: Any) -> None:
            found.append(True)

    for argument in node.arguments or ():
        visit(argument.value, Variables())
    return bool(found)
