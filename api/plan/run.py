"""Running a plan: level by level, one batch of reader calls per level.

Every field of a level (all the objects at that depth of the response, across the whole
query) registers its reader calls in one :class:`~pith_graph.api.plan.batch.Batch`; the
batch runs once; then the values are put into the response and the objects they hold become
the next level. The response is built as plain dicts in the order the document asks for its
keys. The whole plan runs as one blocking-style call through the request's runner: inline for
the in-memory reader; for Neo4j bridged onto the event loop (what ``serve`` does) or on the
request's lane — one hop to its thread and back per request, however many levels.

A plan gives way instead of answering (:func:`run_plan` returns ``None``) when anything goes
wrong — a bad variable or argument, an error of the reader, a null where the schema allows
none, an answer outgrowing the cost limit — so that the resolvers answer that request, with
the errors and the partial data they give. The request's time running out is the exception:
the resolvers would have none left, so :func:`run_plan` raises
:class:`~pith_graph.errors.QueryTimeout`. The time is checked before every reader call and
every list of objects a level completes, whose objects are counted into the request's
answer as the resolvers count them (:meth:`~pith_graph.api.context.Context.produced`).

When the plan's context reads nothing after it (``alone``: the HTTP path, where a plan
that gives way leaves the request to a context of its own) and its root level's calls are
its only reads that may run a statement (:attr:`~pith_graph.api.plan.compile.Plan.root_reads_only`),
a root batch of one call runs as the request's sole statement
(:meth:`~pith_graph.api.reads.reader.GraphReader.sole_statement`): on Neo4j, an auto-commit
transaction, one round trip less than an explicit one and its commit. On that path the plan
also ends the request's transaction itself as its last step (on its lane, if it has one),
so that closing the context needs no second call (with lanes, a second trip to the lane's
thread cost about a tenth of the server's CPU per request under load).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from itertools import repeat
from operator import is_not
from typing import Any, TypeVar

from graphql import GraphQLError, GraphQLSchema
from graphql.execution.values import VariableValues, get_argument_values, get_variable_values
from graphql.pyutils import Undefined

from pith_graph.api.context import Context
from pith_graph.api.cost import query_cost
from pith_graph.api.limits import out_of_time
from pith_graph.api.plan.batch import Batch
from pith_graph.api.plan.compile import GiveWay, Plan, SelectionPlan
from pith_graph.api.plan.specs import Step
from pith_graph.api.reads.torn import TornRead
from pith_graph.errors import PithGraphError, QueryTimeout

__all__ = ["run_plan"]

log = logging.getLogger("pith_graph.api.plan")
T = TypeVar("T")

#: (selection, its source objects, the response dicts they fill)
Level = list[tuple[SelectionPlan, list[Any], list[dict[str, Any]]]]


async def run_plan(
    plan: Plan,
    schema: GraphQLSchema,
    context: Context,
    variable_values: dict[str, Any] | None,
    *,
    alone: bool = False,
) -> dict[str, Any] | None:
    """The response data of ``plan``, or ``None`` when the resolvers must answer instead
    (also when the query costs more than the limit: they refuse it, see :mod:`pith_graph.api.cost`).
    Raises :class:`~pith_graph.errors.QueryTimeout` when the request's time runs out.
    ``alone``: nothing reads through ``context`` after the plan, even when it gives way (see
    the module docstring)."""
    if plan_cost(plan, schema, context, variable_values) > context.limits.max_cost:
        return None
    variables = _NO_VARIABLES
    if plan.variables:
        found = _scalar_variables(plan, variable_values or {})
        if found is not None:
            variables = VariableValues({}, found)
        else:
            coerced = get_variable_values(schema, plan.variables, variable_values or {})
            if isinstance(coerced, list):
                return None
            variables = coerced
    try:
        return await context.run(_execute, plan, context, variables, alone and plan.root_reads_only, alone)
    except QueryTimeout:
        raise  # no time left for the resolvers either
    except (GiveWay, PithGraphError, GraphQLError) as reason:  # GraphQLError: a value refused
        log.debug("plan gives way: %r", reason)
        return None
    except Exception:
        log.warning("a plan failed; the resolvers answer instead", exc_info=True)
        return None


def plan_cost(
    plan: Plan, schema: GraphQLSchema, context: Context, variable_values: dict[str, Any] | None
) -> int:
    """The cost of the plan's query with these variables (:mod:`pith_graph.api.cost`)."""
    if plan.cost is not None:
        return plan.cost
    if plan.document is None:
        return 0
    cost = query_cost(schema, plan.document, plan.operation_name, variable_values, context.limits)
    if not plan.sized_by_variables:
        plan.cost = cost  # the same for every request: the limits are the schema's
    return cost


#: How many times a plan reads again after its statements saw a paper in two states.
TORN_RETRIES = 3


def _execute(
    plan: Plan, context: Context, variables: VariableValues, sole: bool, end: bool
) -> dict[str, Any]:
    """``sole``: the root level's reads are the request's only ones that may run a statement;
    ``end``: nothing reads after the plan, whose last act is then to end the request's
    transaction, here, on its lane (so that closing the context needs no trip to the lane).

    A load that replaced a paper between two of its statements
    (:class:`~pith_graph.api.reads.torn.TornRead`) ends the request's transaction
    (the reader forgets what it read); then the plan runs again, from the root, up to
    :data:`TORN_RETRIES` times while its time lasts, if it runs alone (``end``: over HTTP);
    else it gives way to the resolvers, which read afresh (the view runs them again if they
    meet a change too)."""
    produced = context.objects
    retries = TORN_RETRIES if end else 0
    for attempt in range(retries + 1):
        try:
            return _attempt(plan, context, variables, sole, end)
        except TornRead:
            context.reader.close()  # a new transaction, nothing remembered
            context.objects = produced
            if attempt == retries:
                raise
            log.debug("a paper changed while a plan read it: reading again")
            context.check_time()
    raise AssertionError("unreachable")


def _attempt(
    plan: Plan, context: Context, variables: VariableValues, sole: bool, end: bool
) -> dict[str, Any]:
    data = dict.fromkeys(plan.root.keys)
    level: Level = [(plan.root, [None], [data])]
    while level:
        level = _level(level, context, variables, sole)
        sole = False
    if end:
        context.reader.close()
    return data


_INT_RANGE = range(-(2**31), 2**31)
_NO_VARIABLES = VariableValues({}, {})


def _scalar_variables(plan: Plan, inputs: dict[str, Any]) -> dict[str, Any] | None:
    """The variables coerced as graphql-core would, when they are plain scalars given as
    the right Python values (else ``None``: graphql-core coerces them, and reports errors)."""
    if plan.scalars is None:
        return None
    coerced: dict[str, Any] = {}
    for name, kind, non_null, default in plan.scalars:
        if name not in inputs:
            if default is not Undefined:
                coerced[name] = default
            elif non_null:
                return None
            continue
        value = inputs[name]
        if value is None:
            if non_null:
                return None
        elif kind in ("String", "ID"):
            if type(value) is not str:
                return None
        elif kind == "Int":
            if type(value) is not int or value not in _INT_RANGE:
                return None
        elif kind == "Boolean":
            if type(value) is not bool:
                return None
        elif type(value) not in (int, float) or value != value or value in (float("inf"), float("-inf")):
            return None  # Float
        else:
            value = float(value)
        coerced[name] = value
    return coerced


def _level(level: Level, context: Context, variables: VariableValues, sole: bool) -> Level:
    if context.stopped():  # out of time, or its client went away (api/guard.py): for nobody
        raise out_of_time(context.limits)
    batch = Batch(context.reader, context.check_time)
    pending = []
    for selection, sources, outputs in level:
        fields = selection.fields
        for item in fields:
            if item.spec is None:  # __typename
                for output in outputs:
                    output[item.key] = selection.type_name
                continue
            arguments = item.arguments
            if arguments is None:  # they use variables
                assert item.definition is not None
                arguments = get_argument_values(item.definition, item.node, variables)
            found = item.spec.resolve(Step(context, batch, arguments, item.hint), sources)
            pending.append((item, found, outputs))
    if batch:
        batch.run(sole=sole)
    following: Level = []
    for item, found, outputs in pending:
        context.check_time()
        values = found()
        sub = item.sub
        key = item.key
        pairs: Iterator[tuple[dict[str, Any], Any]] = zip(outputs, values, strict=True)
        if sub is not None and item.is_list:  # objects of the answer: counted, as the resolvers do
            made = sum(len(value) for value in values if value is not None)
            context.produced(made)
            if made > _TIMED_OBJECTS:
                pairs = _timed(pairs, context)
        if sub is None:
            if item.non_null and None in values:
                raise GiveWay(f"null {key}")
            for output, value in pairs:
                output[key] = value
            continue
        build = sub.build
        if build is not None:  # every field read from the object: make it whole, now
            for output, value in pairs:
                if value is None:
                    if item.non_null:
                        raise GiveWay(f"null {key}")
                elif not item.is_list:
                    output[key] = build(value)
                elif all(map(is_not, value, repeat(None))):
                    output[key] = list(map(build, value))
                elif item.item_non_null:
                    raise GiveWay(f"null in {key}")
                else:
                    output[key] = [None if element is None else build(element) for element in value]
            continue
        objects: list[Any] = []
        children: list[dict[str, Any]] = []
        keys = sub.keys
        for output, value in pairs:
            if value is None:
                if item.non_null:
                    raise GiveWay(f"null {key}")
            elif item.is_list:
                if all(map(is_not, value, repeat(None))):  # the usual case: every element an object
                    inner = [dict.fromkeys(keys) for _ in value]
                    objects += value
                    children += inner
                    output[key] = inner
                    continue
                if item.item_non_null:
                    raise GiveWay(f"null in {key}")
                output[key] = [None if element is None else dict.fromkeys(keys) for element in value]
                for element, made in zip(value, output[key], strict=True):
                    if made is not None:
                        objects.append(element)
                        children.append(made)
            else:
                child = dict.fromkeys(keys)
                output[key] = child
                objects.append(value)
                children.append(child)
        if objects:
            following.append((sub, objects, children))
    return following


#: A field of a level making more objects than this checks the time as it makes them.
_TIMED_OBJECTS = 2048
_TIMED_EVERY = 64


def _timed(pairs: Iterator[tuple[T, Any]], context: Context) -> Iterator[tuple[T, Any]]:
    """``pairs``, with the request's time checked every few (:meth:`Context.check_time`)."""
    for index, pair in enumerate(pairs):
        if not index % _TIMED_EVERY:
            context.check_time()
        yield pair
