"""Records from the lists the read statements return (see :mod:`pith_graph.api.reads.cypher`).

A paper arrives as ``[values, authors, categories]``, ``values`` in the order of the
``$props`` parameter; :func:`paper_properties` picks that order for a selection and
:func:`paper_decoder` turns values into a :class:`~pith_graph.schema.rows.PaperRow` whose
unselected properties are empty.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import Any

from pith_graph.api.reads.records import (
    CORE_PAPER_PROPERTIES,
    AuthorRecord,
    CategoryLink,
    CategoryRecord,
    PaperSelection,
    SignerRecord,
)
from pith_graph.api.reads.torn import TornRead
from pith_graph.schema.graph import PAPER
from pith_graph.schema.rows import PAPER_ROW_PROPERTIES, PaperRow

__all__ = [
    "author",
    "author_list",
    "category",
    "category_links",
    "paper",
    "paper_decoder",
    "paper_properties",
    "signer",
]

#: ``Paper.isLatest``, read as ``PaperRow.is_latest`` (since 0.9.4): absent (a paper written
#: before 0.9.4) it is false, as ``latestVersions`` (``cypher_parts.LATEST``) takes it; so it is
#: no torn read's sign.
_LATEST = PAPER.prop("isLatest")
_NAMES = (*PAPER_ROW_PROPERTIES, _LATEST)  # PaperRow's field order
_EMPTY = {
    spec.name: () if spec.type.startswith("list") else 0 if spec.type == "integer" else ""
    for spec in PAPER.properties
    if spec.name in PAPER_ROW_PROPERTIES
} | {_LATEST: False}
#: Read with every paper: which state of it a statement saw (``cypher_parts.STAMP``).
_STAMPED = frozenset({"bundleSha256", "bundleKeyId"})
_LISTS = frozenset(spec.name for spec in PAPER.properties if spec.type.startswith("list"))


@lru_cache(maxsize=256)
def paper_properties(want: PaperSelection) -> tuple[str, ...]:
    """The ``$props`` of a selection: what it reads, the core and the paper's stamp (its
    bundle's digest and key), in schema order."""
    wanted = want.properties | CORE_PAPER_PROPERTIES | _STAMPED
    return tuple(name for name in _NAMES if name in wanted)


@lru_cache(maxsize=256)
def paper_decoder(props: tuple[str, ...]) -> Callable[[Sequence[Any]], PaperRow]:
    """``values`` (in ``props`` order) -> a PaperRow, empty where not in ``props``."""
    empties = [_EMPTY[name] for name in _NAMES]
    index = {name: position for position, name in enumerate(props)}
    # Each field's place in ``values + empties``: its value if fetched, else its empty value.
    pick = itemgetter(*(index[name] if name in index else len(props) + at for at, name in enumerate(_NAMES)))
    lists = [at for at, name in enumerate(_NAMES) if name in _LISTS and name in index]
    make = PaperRow._make
    latest = props.index(_LATEST) if _LATEST in index else None  # the last one: schema order

    def decode(values: Sequence[Any]) -> PaperRow:
        if latest is not None:
            values = [*values[:latest], values[latest] is True, *values[latest + 1 :]]
        _whole(values, "paper")  # pithNumber comes first: it is the schema's first property
        fields = pick([*values, *empties])
        if lists:  # lists come as lists: rows hold tuples
            fields = tuple(tuple(v) if at in lists else v for at, v in enumerate(fields))
        return make(fields)

    return decode


def _whole(row: Sequence[Any], label: str) -> None:
    """Raise :class:`~pith_graph.api.reads.torn.TornRead` for a node read without one of its
    properties (``row[0]`` names it; the request's runner notes the raise and reads again).

    Every node has all its schema properties (the loader writes none empty), but Neo4j
    applies a committed write record by record (``TransactionRecordState.extractCommands``:
    created records, then updated properties, relationships and nodes, then deletions), and
    a write whose new values no longer fit their property records (a paper retitled, an
    author renamed, a signer's key set grown) moves properties between records: for a
    moment a read finds some in none (the stress run of
    ``benchmarks/stress_torn_reads.py`` met it). A reader outside a request raises too."""
    if None in row:
        raise TornRead(f"{label} {row[0]!r}")


def paper(props: Mapping[str, Any]) -> PaperRow:
    """A paper from its property map (a search's ``p {.*}``): every property, or torn."""
    _whole([props.get(name) for name in PAPER_ROW_PROPERTIES], "paper")
    return PaperRow.from_properties(props)


def author(row: Sequence[Any]) -> AuthorRecord:
    """``[nameKey, name(, paperCount)]``."""
    _whole(row, "author")
    return AuthorRecord(row[0], row[1], int(row[2]) if len(row) > 2 else None)


def author_list(
    rows: Sequence[Sequence[Any]], seen: dict[tuple[Any, ...], AuthorRecord]
) -> list[AuthorRecord]:
    """A paper's authors, in the order of ``rows`` (the statement sorted them); ``seen`` keeps
    the records already made (authors recur across the papers of one answer)."""
    found = []
    get = seen.get
    for row in rows:
        key = tuple(row)
        record = get(key)
        if record is None:
            record = seen[key] = author(row)
        found.append(record)
    return found


def category(row: Sequence[Any]) -> CategoryRecord:
    """``[code, archive(, paperCount)]``."""
    _whole(row, "category")
    return CategoryRecord(row[0], row[1], int(row[2]) if len(row) > 2 else None)


def category_links(rows: Sequence[Sequence[Any]]) -> list[CategoryLink]:
    """``[code, archive(, paperCount), primary]`` each, in the order of ``rows`` (the
    statement sorted them: primary first, then by code)."""
    return [CategoryLink(category(row[:-1]), bool(row[-1])) for row in rows]


def signer(row: Sequence[Any]) -> SignerRecord:
    """``[signerId, signerType, keyIds(, paperCount)]``."""
    _whole(row, "signer")
    return SignerRecord(row[0], row[1], tuple(row[2]), int(row[3]) if len(row) > 3 else None)
