"""What a field's selection asks of the objects it fetches (its
:class:`~pith_graph.api.plan.specs.Hint`: the ``Paper`` properties and relations, whether
paper counts are shown), and whether a plan's root reader calls are its only statements.
Drawn from a compiled :class:`~pith_graph.api.plan.compile.SelectionPlan`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from graphql import NullValueNode

from pith_graph.api.plan.specs import Hint
from pith_graph.api.reads.records import EVERYTHING, PaperSelection

if TYPE_CHECKING:
    from pith_graph.api.plan.compile import FieldPlan, SelectionPlan

__all__ = ["COUNTED", "EMBEDDED", "hint_of", "root_reads_only", "shows_counts"]

#: Types whose records carry a paper count a selection may or may not show.
COUNTED = frozenset({"Author", "Category", "Signer"})
#: The fields of ``Paper`` a hint has fetched with the papers (:func:`hint_of`): their relation.
EMBEDDED = {
    "authors": "authors",
    "authorCount": "authors",
    "categories": "categories",
    "primaryCategory": "categories",
}


def _reachable(plan: SelectionPlan) -> Iterator[SelectionPlan]:
    """``plan`` and the selections under it that no further reader call answers (the
    objects one fetch returns: a connection's papers, a path's authors and papers, ...)."""
    yield plan
    for item in plan.fields:
        if item.sub is not None and item.spec is not None and not item.spec.fetches:
            yield from _reachable(item.sub)


def shows_counts(plan: SelectionPlan) -> bool:
    """Whether a selection of authors, categories or signers reads their paper count
    (``paperCount``, or ``papers { totalCount }``, which is that count)."""
    for item in plan.fields:
        if item.spec is not None and item.spec.counts:
            return True
        papers = item.sub if item.name == "papers" else None
        if papers is not None and any(inner.name == "totalCount" for inner in papers.fields):
            return True
    return False


def _most(flag: bool | None, other: bool | None) -> bool | None:
    """None < False < True: what two selections of one relation need together."""
    if flag is None:
        return other
    if other is None:
        return flag
    return flag or other


def hint_of(sub: SelectionPlan) -> Hint:
    plans = list(_reachable(sub))
    counts = any(shows_counts(plan) for plan in plans if plan.type_name in COUNTED)
    shown = frozenset(field.name for plan in _page_infos(sub) for field in plan.fields)
    papers = [plan for plan in plans if plan.type_name == "Paper"]
    if not papers:
        return Hint(EVERYTHING, counts, shown)
    properties: set[str] = set()
    authors: bool | None = None
    categories: bool | None = None
    for plan in papers:
        for item in plan.fields:
            if item.spec is not None:
                properties |= item.spec.needs
            relation = None if _looks_up(item) else EMBEDDED.get(item.name)  # after: no embedding
            if item.sub is None:
                if relation == "authors":  # authorCount: the authors, their counts not shown
                    authors = _most(authors, False)
                continue
            if relation == "authors":
                authors = _most(authors, shows_counts(item.sub))
            elif relation == "categories":
                categories = _most(categories, shows_counts(item.sub))
    return Hint(PaperSelection(frozenset(properties), authors, categories), counts, shown)


def _page_infos(sub: SelectionPlan) -> Iterator[SelectionPlan]:
    """The selections of a connection's ``pageInfo`` (under any alias; fragments inlined)."""
    for item in sub.fields:
        if item.name == "pageInfo" and item.sub is not None:
            yield item.sub


def root_reads_only(root: SelectionPlan) -> bool:
    """Whether the reader calls of the root's fields are the only ones of the plan that may
    run a statement: below them, every field that calls the reader asks for the authors or
    categories of papers that a root call fetched with them (a call that ``embeds``, given
    the hint drawn from those very fields), which the reader has kept."""
    return all(
        item.sub is None or _asks_ahead(item.sub, item.spec is not None and item.spec.embeds)
        for item in root.fields
    )


def _looks_up(item: FieldPlan) -> bool:
    """Whether an embedded field reads other than what was fetched ahead: ``authors(after:)``
    (a variable may be null: it is taken as given)."""
    if item.name != "authors":
        return False
    if item.arguments is not None:
        return item.arguments.get("after") is not None
    return any(
        argument.name.value == "after" and not isinstance(argument.value, NullValueNode)
        for argument in item.node.arguments or ()
    )


def _asks_ahead(plan: SelectionPlan, embedded: bool) -> bool:
    """Whether the fields under ``plan`` call the reader only for relations fetched ahead
    (``embedded``: its objects came from a call that embeds them)."""
    for item in plan.fields:
        if item.spec is None:
            continue
        ahead = embedded and plan.type_name == "Paper" and item.name in EMBEDDED and not _looks_up(item)
        if item.spec.fetches and not ahead:
            return False
        # Past a fetch, nothing more was fetched ahead.
        if item.sub is not None and not _asks_ahead(item.sub, embedded and not item.spec.fetches):
            return False
    return True
