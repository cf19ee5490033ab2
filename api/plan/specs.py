"""How a plan resolves a field: a :class:`Spec` per object type and field of the schema.

A spec resolves one field for *all* the objects of one level at once: given a
:class:`Step` (the request's context, the level's :class:`~pith_graph.api.plan.batch.Batch`,
the field's argument values and the :class:`Hint` drawn from its selection) and the level's
source objects, it returns a function that gives the field's value for each source once the
batch has run. Sources are the reader's records (a ``PaperRow`` is a ``Paper``, an
``AuthorRecord`` an ``Author``, ...) and the small objects of :mod:`pith_graph.api.plan.fields`.

``needs`` names the ``Paper`` properties a field of ``Paper`` reads; ``counts`` says that a
field reads its source's paper count; ``fetches`` that it calls the reader (a selection's
hints are drawn through the fields that do not); ``embeds`` that the papers it fetches come
with the authors and categories their hint asks for (the reader keeps them, so the fields
asking for them next cost no statement).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pith_graph.api.context import Context
from pith_graph.api.cost import READ_SIZES
from pith_graph.api.plan.batch import Batch
from pith_graph.api.reads.records import EVERYTHING, PaperSelection

__all__ = ["Hint", "Resolve", "Spec", "Step", "load", "value"]

_CATEGORIES = READ_SIZES["categories_of_papers"]


@dataclass(frozen=True, slots=True)
class Hint:
    """What the objects a field returns will be asked for: their papers' selection,
    whether their (authors', categories', signers') paper counts are read, and (since
    0.9.3) which fields of a connection's ``pageInfo`` are (a read that answers only
    ``hasNextPage`` or ``hasPreviousPage`` is made when asked for)."""

    want: PaperSelection = EVERYTHING
    counts: bool = True
    page_info: frozenset[str] = frozenset()


@dataclass(slots=True)
class Step:
    """One field of one level, in one request."""

    context: Context
    batch: Batch
    args: dict[str, Any]
    hint: Hint

    @property
    def want(self) -> PaperSelection:
        """The hint's selection, authors fetched ahead (if any) up to the page cap, categories
        up to what ``Paper.categories`` shows (:data:`~pith_graph.api.cost.READ_SIZES`)."""
        want = self.hint.want
        authors = want.authors_first if want.authors is None else self.context.limits.max_page_size
        categories = want.categories_first if want.categories is None else _CATEGORIES
        if (authors, categories) == (want.authors_first, want.categories_first):
            return want
        return replace(want, authors_first=authors, categories_first=categories)


#: (step, sources) -> a function giving each source's value once the batch has run.
Resolve = Callable[[Step, list[Any]], Callable[[], list[Any]]]


@dataclass(frozen=True, slots=True)
class Spec:
    """How to resolve one field of one object type."""

    resolve: Resolve
    needs: frozenset[str] = field(default_factory=frozenset)
    counts: bool = False
    fetches: bool = False
    embeds: bool = False
    #: For a field read from its source alone: the reading (lets a plan build objects whole).
    get: Callable[[Any], Any] | None = None


def value(get: Callable[[Any], Any], *needs: str, counts: bool = False) -> Spec:
    """A field read from its source alone."""

    def resolve(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
        values = list(map(get, sources))
        return lambda: values

    return Spec(resolve, frozenset(needs), counts, get=get)


def load(resolve: Resolve, *needs: str, counts: bool = False, embeds: bool = False) -> Spec:
    """A field that asks the reader (through the step's batch); ``embeds``: for papers whose
    relations its call fetches with them, as the hint asks."""
    return Spec(resolve, frozenset(needs), counts, fetches=True, embeds=embeds)
