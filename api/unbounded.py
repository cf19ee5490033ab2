"""Which fields do work their cost does not bound, and so may not run on the event loop.

The cost (:mod:`pith_graph.api.cost`) bounds what an answer holds; for most fields that bounds
the reads too. For the fields here it does not: their read takes in a whole neighbourhood that
a signer's data can make as large as it likes, then ranks, counts or sorts it. A plan that
selects any of them runs on the execution threads, whatever its cost
(:func:`~pith_graph.api.loops.run_execution`, :attr:`pith_graph.api.plan.compile.Plan.reads_bounded`).
"""

from __future__ import annotations

from collections.abc import Mapping

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
    is_abstract_type,
)

__all__ = ["UNBOUNDED_READS", "UNBOUNDED_WITH", "operation_of", "reads_nothing", "unbounded_reads"]

#: Fields whose read is not bounded by the objects they return: the cost bounds the answer,
#: not the work. On the memory backend their read takes in a whole neighbourhood that a
#: signer's data can make as large as it likes (one 1 MiB bundle: 20,000 authors or
#: categories of a paper), and ranks, counts or sorts it: a query of cost 40 can hold the
#: CPU for seconds. An execution selecting any of them never runs on the event loop
#: (:func:`~pith_graph.api.loops.run_execution`). Not here, because their reads are: paper
#: lookups (``paper``, ``resolve``, ``papersById``: the papers an arXiv id or DOI names are
#: kept newest version first, so choosing its paper is one pass over them asking the rank
#: of each signer once, nothing sorted nor ranked per version, and ``papersById`` chooses
#: once per distinct key, checking the time between keys; see
#: :func:`~pith_graph.api.inputs.named_by_keys`); scalars; pages of
#: papers of an author, a category or a signer and ``papers`` unfiltered (slices of lists
#: sorted once, a category's ahead of the first request); ``Paper.authors`` and
#: ``authorCount`` (a long author list is sorted once and kept, see
#: :class:`~pith_graph.api.reads.memory.MemoryReader`; a page ``after`` an author is a bisection
#: of that list; Neo4j sorts and cuts the page itself); a paper's ``categories``,
#: ``primaryCategory``, ``aliases``, ``signers``, ``versions`` and ``verification {
#: signatures }`` (their first ones, at most :data:`~pith_graph.api.cost.READ_SIZES`: a paper
#: with many keeps them sorted, as each arXiv id its versions; Neo4j sorts and cuts them).
UNBOUNDED_READS = frozenset(
    {
        "Query.search",  # ranks every hit
        "Query.authors",  # every name with the prefix
        "Query.categories",  # every category, sorted
        "Query.collaborationPath",  # a breadth-first search
        "Paper.relatedPapers",  # every paper of every author
        "Author.coauthors",  # every author of every paper of the author
        "Author.categories",  # every category of every paper of the author
        "Category.topAuthors",  # every author of every paper of the category (then kept)
        "Category.coListed",
        "PaperConnection.facets",  # every paper of the listing
        "SearchConnection.facets",
    }
)
#: Fields whose read is unbounded when given this argument: ``papers(filter:)`` scans its
#: candidates for the filter and counts them for ``totalCount``; a signer's
#: ``papers(signedBundle:)`` reads each of its SIGNED edges to pick and count its papers.
UNBOUNDED_WITH: dict[str, str] = {"Query.papers": "filter", "Signer.papers": "signedBundle"}


class _Reads:
    """Walks one operation for the fields of :data:`UNBOUNDED_READS` and
    :data:`UNBOUNDED_WITH` it selects, each fragment once per type it is spread on."""

    def __init__(self, schema: GraphQLSchema, fragments: Mapping[str, FragmentDefinitionNode]) -> None:
        self.schema = schema
        self.fragments = fragments
        self.found: set[str] = set()
        self._seen: set[tuple[str, str]] = set()

    def walk(self, parent: GraphQLObjectType, selections: SelectionSetNode) -> None:
        for selection in selections.selections:
            if isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                self.walk(
                    self._type(condition.name.value if condition else None, parent), selection.selection_set
                )
            elif isinstance(selection, FragmentSpreadNode):
                fragment = self.fragments.get(selection.name.value)
                if fragment is None:
                    continue
                on = self._type(fragment.type_condition.name.value, parent)
                if (fragment.name.value, on.name) not in self._seen:
                    self._seen.add((fragment.name.value, on.name))
                    self.walk(on, fragment.selection_set)
            elif isinstance(selection, FieldNode):
                self._field(parent, selection)

    def _type(self, name: str | None, parent: GraphQLObjectType) -> GraphQLObjectType:
        found = self.schema.get_type(name) if name is not None else parent
        return found if isinstance(found, GraphQLObjectType) else parent

    def _field(self, owner: GraphQLObjectType, node: FieldNode) -> None:
        field = owner.fields.get(node.name.value)
        if field is None:  # __typename, introspection
            return
        key = f"{owner.name}.{node.name.value}"
        argument = UNBOUNDED_WITH.get(key)
        if key in UNBOUNDED_READS or (
            argument is not None and any(a.name.value == argument for a in node.arguments or ())
        ):
            self.found.add(key)
        child = get_named_type(field.type)
        if node.selection_set is not None and isinstance(child, GraphQLObjectType):
            self.walk(child, node.selection_set)
        elif node.selection_set is not None and is_abstract_type(child):  # a Node: every type it may be
            for kind in self.schema.get_possible_types(child):
                self.walk(kind, node.selection_set)


def operation_of(
    document: DocumentNode, operation_name: str | None
) -> tuple[OperationDefinitionNode, dict[str, FragmentDefinitionNode]] | None:
    """The operation ``operation_name`` (or the only one) of ``document`` and its fragments by
    name, as execution picks it; ``None`` when there is no such single operation."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [o for o in operations if operation_name is None or (o.name and o.name.value == operation_name)]
    if len(chosen) != 1:
        return None
    return chosen[0], {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}


def unbounded_reads(schema: GraphQLSchema, document: DocumentNode, operation_name: str | None) -> set[str]:
    """The fields of the operation ``operation_name`` (or the only one) of ``document`` whose
    read its cost does not bound (:data:`UNBOUNDED_READS`, :data:`UNBOUNDED_WITH`), as
    ``Type.field``; empty when there is no such operation.

    >>> from pith_graph.api.limits import RequestLimits
    >>> from pith_graph.api.schema import build_schema
    >>> from graphql import parse
    >>> schema = build_schema(RequestLimits())._schema
    >>> sorted(unbounded_reads(schema, parse('{ paper(id: "x") { title } }'), None))
    []
    >>> query = '{ paper(id: "x") { ...F } } fragment F on Paper { versions { relatedPapers { title } } }'
    >>> sorted(unbounded_reads(schema, parse(query), None))
    ['Paper.relatedPapers']
    """
    found, root = operation_of(document, operation_name), schema.query_type
    if found is None or root is None:
        return set()
    operation, fragments = found
    reads = _Reads(schema, fragments)
    reads.walk(root, operation.selection_set)
    return reads.found


def reads_nothing(document: DocumentNode, operation_name: str | None) -> bool:
    """Whether the operation ``operation_name`` (or the only one) of ``document`` selects
    only introspection (``__schema``, ``__type``, ``__typename``), fragments spread: its
    execution reads no store, it is CPU work on the static schema alone.

    >>> from graphql import parse
    >>> [reads_nothing(parse(q), None) for q in ("{ __schema { types { name } } }",
    ...     "{ ...F } fragment F on Query { __typename }", '{ __typename paper(id: "x") { title } }')]
    [True, True, False]
    """
    found = operation_of(document, operation_name)
    if found is None:
        return False
    operation, fragments = found
    pending, seen = [operation.selection_set], set()
    while pending:
        for selection in pending.pop().selections:
            if isinstance(selection, FieldNode):
                if not selection.name.value.startswith("__"):
                    return False
            elif isinstance(selection, InlineFragmentNode):
                pending.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in seen:
                seen.add(selection.name.value)
                fragment = fragments.get(selection.name.value)
                if fragment is not None:
                    pending.append(fragment.selection_set)
    return True
