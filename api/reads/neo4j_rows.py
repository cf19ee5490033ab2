"""Records from the lists the read statements return (see :mod:`pith_graph.api.reads.cypher`).

A paper arrives as ``[values, authors, categories]``, ``values`` in the order of the
``$props`` parameter; :func:`paper_properties` picks that order for a selection and
:func:`paper_decoder` turns values into a :class:`~pith_graph.schema.rows.PaperRow` whose
unselected properties are empty.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from pith_graph.api.reads.records import (
    CORE_PAPER_PROPERTIES,
    AuthorRecord,
    CategoryLink,
    CategoryRecord,
    PaperSelection,
    SignerRecord,
)
from pith_graph.schema.graph import PAPER
from pith_graph.schema.rows import PaperRow

__all__ = [
    "author",
    "author_list",
    "category",
    "category_links",
    "paper_decoder",
    "paper_properties",
    "signer",
]

_NAMES = PAPER.property_names  # PaperRow's field order
_EMPTY = {
    spec.name: () if spec.type.startswith("list") else 0 if spec.type == "integer" else ""
    for spec in PAPER.properties
}
_LISTS = frozenset(spec.name for spec in PAPER.properties if spec.type.startswith("list"))


@lru_cache(maxsize=256)
def paper_properties(want: PaperSelection) -> tuple[str, ...]:
    """The ``$props`` of a selection: what it reads and the core, in schema order."""
    wanted = want.properties | CORE_PAPER_PROPERTIES
    return tuple(name for name in _NAMES if name in wanted)


@lru_cache(maxsize=256)
def paper_decoder(props: tuple[str, ...]) -> Callable[[Sequence[Any]], PaperRow]:
    """``values`` (in ``props`` order) -> a PaperRow, empty where not in ``props``."""
    index = {name: position for position, name in enumerate(props)}
    plan = [(index.get(name, -1), name in _LISTS, _EMPTY[name]) for name in _NAMES]
    make = PaperRow._make

    def decode(values: Sequence[Any]) -> PaperRow:
        return make(
            (tuple(values[at]) if is_list else values[at]) if at >= 0 else empty
            for at, is_list, empty in plan
        )

    return decode


def author(row: Sequence[Any]) -> AuthorRecord:
    """``[nameKey, name(, paperCount)]``."""
    return AuthorRecord(row[0], row[1], int(row[2]) if len(row) > 2 else None)


def author_list(rows: Sequence[Sequence[Any]]) -> list[AuthorRecord]:
    """A paper's authors, by name then name key."""
    found = [author(row) for row in rows]
    found.sort(key=lambda a: (a.name, a.name_key))
    return found


def category(row: Sequence[Any]) -> CategoryRecord:
    """``[code, archive(, paperCount)]``."""
    return CategoryRecord(row[0], row[1], int(row[2]) if len(row) > 2 else None)


def category_links(rows: Sequence[Sequence[Any]]) -> list[CategoryLink]:
    """``[code, archive(, paperCount), primary]`` each: primary first, then by code."""
    links = [CategoryLink(category(row[:-1]), bool(row[-1])) for row in rows]
    links.sort(key=lambda link: (not link.primary, link.category.code))
    return links


def signer(row: Sequence[Any]) -> SignerRecord:
    """``[signerId, signerType, keyIds(, paperCount)]``."""
    return SignerRecord(row[0], row[1], tuple(row[2]), int(row[3]) if len(row) > 3 else None)
