"""A bound on fields that share a response name in one selection, checked before validation.

graphql-core's ``OverlappingFieldsCanBeMergedRule`` compares every pair of fields with the
same response name in a selection set (fragments spread there included), so its time grows
with the square of their number: ``papers { totalCount }`` written 399 times (8 KB, within
every other limit) cost it 0.6-1.3 s of CPU per request, ~9 µs a pair, on validation
threads that share the interpreter with the event loop (:mod:`.validation`). Real documents
repeat a field a few times, where fragments overlap (``id`` in each fragment spread on a
node). :class:`SameNameLimit` refuses a document in which one selection asks for one
response name more than :data:`MAX_SAME_NAME` times, as ``LIMIT_EXCEEDED``, before any
validation rule runs: at most 496 pairs a selection then, and about 2000 / 4 / 32 such
selections in a document of 2,000 tokens.

That bounds each selection, not how the comparisons multiply down the levels: 32 copies of
``papers`` asking for ``nodes { title }`` 14 times each (7.5 KB) pass it, and the pairs of
``papers`` compare 196 pairs of ``nodes`` each, about a second of CPU. graphql-core meters
that work itself (``MAX_COMPLEXITY_BUDGET``, 500,000 units, a module-wide setting; spent,
``Validation aborted.``, which the API answers ``LIMIT_EXCEEDED``): :class:`BudgetedOverlaps`
is its rule with :data:`MERGE_BUDGET` for each validation, which stops that document after
30-45 ms here instead of 0.8 s (a budget's units are not of one cost: 500,000 took 0.08 s
for one document and 0.8 s for another).

It counts as graphql-core collects: a selection's own fields, those of its inline fragments
(merged into it) and, once per fragment name, the top-level fields of the fragments spread
there (their own spreads included). Each fragment's top level is counted once (memoised, in
an order where the fragments it spreads come first, without recursion); a spread that closes
a cycle or names an unknown fragment counts nothing (validation refuses such documents).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)
from graphql.validation import ASTValidationRule, OverlappingFieldsCanBeMergedRule, ValidationContext
from strawberry.extensions import SchemaExtension

from pith_graph.api.fragment_order import dependency_order
from pith_graph.errors import LimitExceeded

__all__ = ["MAX_SAME_NAME", "MERGE_BUDGET", "BudgetedOverlaps", "SameNameLimit", "budgeted", "most_repeated"]

#: The most fields one selection may hold under one response name (fragments spread).
MAX_SAME_NAME = 32
#: graphql-core's budget of comparisons for the overlapping-fields rule, per validation: a
#: tenth of its default, many times what the largest documents of the suite spend.
MERGE_BUDGET = 50_000


class BudgetedOverlaps(OverlappingFieldsCanBeMergedRule):
    """graphql-core's overlapping-fields rule, spending at most :data:`MERGE_BUDGET`."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        self.rule_context.remaining_complexity_budget = MERGE_BUDGET


def budgeted(rules: Iterable[type[ASTValidationRule]]) -> tuple[type[ASTValidationRule], ...]:
    """``rules`` with graphql-core's overlapping-fields rule given :data:`MERGE_BUDGET`."""
    return tuple(BudgetedOverlaps if rule is OverlappingFieldsCanBeMergedRule else rule for rule in rules)


#: Document text -> its most repeated name and count: a document sent again (most are) is
#: not walked again (24 µs for a page of papers with authors). Emptied when full.
_SEEN: dict[str, tuple[str, int]] = {}
_SEEN_SIZE = 256


def _level(selection_set: SelectionSetNode) -> tuple[Counter[str], set[str], list[SelectionSetNode]]:
    """One selection's response names (inline fragments merged), the fragments spread at its
    level, and the selection sets of its fields (each a selection of its own)."""
    names: Counter[str] = Counter()
    spreads: set[str] = set()
    children: list[SelectionSetNode] = []
    stack = [selection_set]
    while stack:
        for selection in stack.pop().selections:
            if isinstance(selection, FieldNode):
                names[(selection.alias or selection.name).value] += 1
                if selection.selection_set is not None:
                    children.append(selection.selection_set)
            elif isinstance(selection, InlineFragmentNode):
                stack.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                spreads.add(selection.name.value)
    return names, spreads, children


def _fragment_tops(document: DocumentNode) -> dict[str, Counter[str]]:
    """Each fragment's top-level response names, its spreads' counted in."""
    levels = {
        d.name.value: _level(d.selection_set)[:2]
        for d in document.definitions
        if isinstance(d, FragmentDefinitionNode)
    }
    tops: dict[str, Counter[str]] = {}
    for name in dependency_order(levels, lambda name: sorted(levels[name][1]))[0]:
        own, spread_names = levels[name]
        total = Counter(own)
        for spread in spread_names:
            total.update(tops.get(spread, Counter()))
        tops[name] = total
    return tops


def most_repeated(document: DocumentNode) -> tuple[str, int]:
    """The response name one selection of ``document`` holds most often, and how often."""
    tops = _fragment_tops(document)
    worst = ("", 0)
    stack = [
        d.selection_set
        for d in document.definitions
        if isinstance(d, (OperationDefinitionNode, FragmentDefinitionNode))
    ]
    while stack:
        names, spreads, children = _level(stack.pop())
        for spread in spreads:
            names.update(tops.get(spread, Counter()))
        if names:
            name, count = names.most_common(1)[0]
            if count > worst[1]:
                worst = (name, count)
        stack.extend(children)
    return worst


class SameNameLimit(SchemaExtension):
    """Refuses, after parsing and before validation, a document in which one selection holds
    more than :data:`MAX_SAME_NAME` fields of one response name."""

    def on_parse(self) -> Iterator[None]:
        yield
        document = self.execution_context.graphql_document
        if document is None:
            return
        text = self.execution_context.query or ""
        found = _SEEN.get(text)
        if found is None:
            if len(_SEEN) >= _SEEN_SIZE:
                _SEEN.clear()
            found = _SEEN[text] = most_repeated(document)
        name, count = found
        if count > MAX_SAME_NAME:
            raise LimitExceeded(
                f"A selection asks for '{name}' {count} times (at most {MAX_SAME_NAME}, fragments "
                "spread there included).",
                "Ask for each field once in a selection.",
            )
