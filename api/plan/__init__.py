"""Execution plans: a query document compiled once, then answered without the resolvers.

graphql-core executes a query field by field: per field of every object it builds resolver
info, calls a strawberry resolver, awaits DataLoaders (an event-loop pass per level) and
completes the value. For the documents clients send again and again that interpretation
costs several times the reads themselves. So the first time a document passes the schema's
whole pipeline (parsing and validation with every limit, by strawberry), :class:`Plans`
compiles it (:mod:`~pith_graph.api.plan.compile`) and keeps the plan; later requests with
the same text and operation name are answered by running the plan
(:mod:`~pith_graph.api.plan.run`): level by level, one batch of reader calls per level,
the response built as plain dicts, and the reader told what the selection reads (only those
properties, relations fetched ahead, counts only when shown). Over HTTP, a plan whose only
read is one call runs it as the request's sole statement (on Neo4j, auto-commit: see
:mod:`~pith_graph.api.plan.run`).

Plans answer only what succeeds: on any error they give way and the resolvers answer the
request, so errors, codes, masking and partial results are the resolvers' own. Plans are
used only while every extension of the schema is known to act at parse or validation time
or on errors alone (:data:`PLAN_SAFE_EXTENSIONS`): an extension that acts during execution
must run, so its presence turns plans off (add it to the list when it is safe).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterator
from typing import Any

from graphql import DocumentNode, GraphQLSchema
from strawberry.extensions import SchemaExtension

from pith_graph.api.documents import BYTES_PER_DOCUMENT, DOCUMENTS, document_bytes, text_digest
from pith_graph.api.lru import BoundedLRU
from pith_graph.api.plan.compile import Plan, Unplannable, compile_plan
from pith_graph.api.plan.run import plan_cost, run_plan

__all__ = [
    "FIELD_PLAN_BYTES",
    "PLAN_SAFE_EXTENSIONS",
    "Plan",
    "PlanRecorder",
    "Plans",
    "plan_bytes",
    "plan_cost",
    "run_plan",
]

log = logging.getLogger("pith_graph.api.plan")

#: Names of extensions whose work is done by parsing, validation or on errors only.
#: ``CostLimit`` acts as execution starts, so :func:`run_plan` checks the cost itself.
PLAN_SAFE_EXTENSIONS = frozenset(
    {
        "CodedErrors",
        "ParserLimits",
        "SameNameLimit",
        "AddValidationRules",
        "ValidationRules",
        "DocumentCache",
        "OffLoopValidation",
        "PlanRecorder",
        "CostLimit",
    }
)


#: A field plan with its hint, arguments and part of its selection (measured: 387 bytes).
FIELD_PLAN_BYTES = 400
#: A document that cannot be planned: its key and ``None``.
_UNPLANNED_BYTES = 200


def plan_bytes(plan: Plan, document: DocumentNode) -> int:
    """The memory a plan keeps: its document (:func:`.documents.document_bytes`) and a field
    plan for every field it answers. Fragments are planned where they are spread, so a plan
    may hold far more fields than its document writes: 1,586 characters of fragments spread
    into one another made 7,110 field plans, 2.75 MB (counted as the document and half again,
    506 KB, 300 of them grew a server by 98 MB)."""
    fields, levels = 0, [plan.root]
    while levels:
        level = levels.pop()
        fields += len(level.fields)
        levels.extend(field.sub for field in level.fields if field.sub is not None)
    return document_bytes(document) + fields * FIELD_PLAN_BYTES


def _key(query: str, operation_name: str | None) -> Hashable:
    return text_digest(query), operation_name


class Plans:
    """Plans by (the digest of the query text, operation name): at most ``maxsize`` and
    ``max_bytes`` bytes of them (:func:`plan_bytes`: its document and its field plans), the
    least recently used
    going first.

    A document that cannot be planned is remembered too (as ``None``), so it is compiled once.
    """

    def __init__(self, schema: GraphQLSchema, maxsize: int = DOCUMENTS, max_bytes: int | None = None) -> None:
        self.schema = schema
        self.maxsize = maxsize
        bound = maxsize * BYTES_PER_DOCUMENT if max_bytes is None else max_bytes
        self._plans: BoundedLRU[Hashable, Plan | None] = BoundedLRU(maxsize, bound)
        #: Requests a plan answered, and those it left to the resolvers (see plan.run).
        self.answered = 0
        self.gave_way = 0

    def get(self, query: str, operation_name: str | None) -> Plan | None:
        return self._plans.get(_key(query, operation_name))

    def learn_once(self, query: str, operation_name: str | None, document: DocumentNode) -> None:
        """Compile the plan of a document that passed parsing and validation, unless known."""
        key = _key(query, operation_name)
        if key in self._plans:
            return
        plan: Plan | None = None
        try:
            plan = compile_plan(self.schema, document, operation_name)
        except Unplannable as reason:
            log.debug("no plan (%s) for %.200r", reason, query)
        except Exception:  # a bug here must not fail the request: the resolvers answer
            log.warning("compiling a plan failed; the resolvers answer %.200r", query, exc_info=True)
        size = _UNPLANNED_BYTES if plan is None else plan_bytes(plan, document)
        self._plans.put(key, plan, size)


class PlanRecorder(SchemaExtension):
    """Gives the schema's :class:`Plans` (its ``plans`` attribute) every document that
    reaches execution, so one that passed parsing and validation with the schema's rules."""

    def on_execute(self) -> Iterator[None]:
        context: Any = self.execution_context
        plans: Plans | None = getattr(context.schema, "plans", None)
        query: str | None = context.query
        # As the request named it (strawberry's operation_name infers it from the document).
        operation_name = getattr(context, "_provided_operation_name", context.operation_name)
        document = context.graphql_document
        if plans is not None and query is not None and document is not None:
            plans.learn_once(query, operation_name, document)
        yield
