"""``Paper.byline`` as a plan resolves it (see :mod:`pith_graph.api.bylines`): a level's
papers' printed names in one read, then their authors, at the next level, in one more."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from pith_graph.api.bylines import Byline, bylines
from pith_graph.api.cost import READ_SIZES
from pith_graph.api.plan.specs import Spec, Step, load, value
from pith_graph.schema.rows import PaperRow

__all__ = ["BYLINE_FIELDS"]


def _bylines(step: Step, sources: list[PaperRow]) -> Callable[[], list[Any]]:
    keys = [paper.pith_number for paper in sources]
    found = step.batch.keyed("author_names_of_papers", (READ_SIZES["author_names_of_papers"],), keys)
    return lambda: [bylines(found()[key]) for key in keys]


def _authors(step: Step, sources: list[Byline]) -> Callable[[], list[Any]]:
    """Each name's author (none, for a key the graph does not hold: the plan gives way)."""
    keys = [byline.name_key for byline in sources]
    found = step.batch.keyed("authors_by_keys", (step.hint.counts,), keys)
    return lambda: [found().get(key) for key in keys]


BYLINE_FIELDS: dict[tuple[str, str], Spec] = {
    ("Paper", "byline"): load(_bylines),
    ("Byline", "position"): value(attrgetter("position")),
    ("Byline", "name"): value(attrgetter("name")),
    ("Byline", "author"): load(_authors),
}
