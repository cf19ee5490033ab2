"""Rows Neo4j can index: a bundle that would write a longer index entry is rejected.

Neo4j fails the whole transaction that writes a value past its range-index key limit (about
8 KB: ``Property value is too large to index``), and a bulk import's constraints could not be
created at all. So one bundle with a 9,000-character author name, license or category, which
any trusted key can sign, stopped a Neo4j load (``write_failed``) while the in-memory store
took it. :func:`~pith_graph.loader.rows.build_rows` refuses such rows instead, with
:func:`check_indexable` (the same ``schema_error`` for both stores, the bulk import,
``pith-graph verify`` and the Python API), before anything is written: each entry of a range index or uniqueness constraint
(:func:`~pith_graph.schema.database.indexed_groups`) holds at most
:data:`~pith_graph.schema.database.MAX_INDEXED_BYTES` bytes of UTF-8, the source's lock alias
(``Alias {kind: sourceKind, value: sourceId}``) included: before 0.8.8 a source kind of
9,000 bytes passed and stopped every Neo4j load of its batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from pith_graph.errors import BundleError, RejectCode
from pith_graph.schema.database import MAX_INDEXED_BYTES, indexed_bytes, indexed_groups
from pith_graph.schema.graph import NODES
from pith_graph.schema.rows import AliasRow, AuthorRow, CategoryLinkRow, PaperRow, SignatureRow, snake_case

if TYPE_CHECKING:  # rows calls check_indexable
    from pith_graph.loader.rows import PaperRows

__all__ = ["check_indexable", "oversized_entry"]

#: Where an entry's value comes from in a bundle (for the message), by label or by entry.
_ORIGIN = {
    "Paper": "bundle.canonical_record",
    "Paper.license": "bundle.canonical_record.metadata.license",
    "Paper.sourceId+sourceVersion": "bundle.canonical_record.source.id",
    "Paper.lock": "bundle.canonical_record.source: kind and id, the alias a load locks the source on",
    "Author": "the newest graph snapshot's authors_text",
    "Category": "bundle.canonical_record.metadata: primary_cat or cross_cats_sorted",
    "Alias": "bundle.source_aliases",
    "Signer": "the keyring's signer_id",
}
#: The row field (of ``PaperRows``) and row class that hold each label's nodes.
_ROWS: tuple[tuple[str, str, type], ...] = (
    ("Paper", "paper", PaperRow),
    ("Author", "authors", AuthorRow),
    ("Category", "categories", CategoryLinkRow),
    ("Alias", "aliases", AliasRow),
    ("Signer", "signers", SignatureRow),
)


#: The Alias every Neo4j load merges to lock a paper's source (``LOCK_SOURCES`` in
#: ``loader/stores/cypher.py``): its key is the Paper's sourceKind and sourceId, whether or not
#: the bundle lists that alias (a kind of 9,000 bytes stopped every Neo4j load of its batch).
_LOCK_ALIAS = (("kind", "value"), ("source_kind", "source_id"))
_Entry = tuple[str, str, tuple[int, ...]]


def _plan() -> tuple[tuple[str, str, tuple[_Entry, ...]], ...]:
    """Per label: its rows' field, and each index entry as (name as the message shows it,
    origin, positions of its strings in the row). Integers (``sourceVersion``, the derived
    ``paperCount``) cannot be too long."""
    groups = indexed_groups()
    if _LOCK_ALIAS[0] not in groups["Alias"]:
        raise TypeError(f"the lock alias's key {_LOCK_ALIAS[0]} is no Alias index entry")
    plan = []
    for label, field, row in _ROWS:
        fields: tuple[str, ...] = row._fields  # type: ignore[attr-defined]
        types = {spec.name: spec.type for spec in NODES[label].properties}
        entries = []
        for group in groups.get(label, ()):
            odd = [name for name in group if types[name] not in ("string", "integer")]
            absent = [name for name in group if types[name] == "string" and snake_case(name) not in fields]
            if odd or absent:
                raise TypeError(f"{row.__name__} cannot check the indexed {label} properties {odd + absent}")
            positions = tuple(fields.index(snake_case(name)) for name in group if types[name] == "string")
            if positions:
                name = f"{label}.{'+'.join(group)}"
                entries.append((name, _ORIGIN.get(name, _ORIGIN[label]), positions))
        if label == "Paper":
            lock = tuple(fields.index(name) for name in _LOCK_ALIAS[1])
            entries.append((f"Alias.{'+'.join(_LOCK_ALIAS[0])}", _ORIGIN["Paper.lock"], lock))
        plan.append((label, field, tuple(entries)))
    return tuple(plan)


_PLAN = _plan()
#: A string of at most this many characters is at most MAX_INDEXED_BYTES bytes of UTF-8.
_SURELY_SHORT = MAX_INDEXED_BYTES // 4


def _string_getters() -> tuple[tuple[str, bool, Callable[[Any], Any], bool], ...]:
    """Per label: its rows' field, whether it holds one row, a getter of every indexed string
    of a row, and whether that getter returns several (a tuple) or one."""
    getters = []
    for label, field, entries in _PLAN:
        if positions := sorted({i for _, _, group in entries for i in group}):
            getters.append((field, label == "Paper", itemgetter(*positions), len(positions) > 1))
    return tuple(getters)


_STRINGS = _string_getters()


def _indexed_characters(rows: PaperRows) -> int:
    """How many characters all the indexed strings of ``rows`` hold together: a bound of every
    entry's size that costs a few C calls (a load checks every bundle)."""
    total = 0
    for field, single, getter, several in _STRINGS:
        found = getattr(rows, field)
        if single:
            total += sum(map(len, getter(found))) if several else len(getter(found))
        elif several:
            total += sum(map(len, chain.from_iterable(map(getter, found))))
        else:
            total += sum(map(len, map(getter, found)))
    return total


def _size(row: Sequence[Any], positions: tuple[int, ...]) -> int:
    """The UTF-8 bytes of the entry's strings, or 0 when they are surely short enough."""
    strings = [row[i] for i in positions]
    if sum(map(len, strings)) <= _SURELY_SHORT:
        return 0
    return sum(map(indexed_bytes, strings))


def oversized_entry(rows: PaperRows) -> str | None:
    """What is wrong with the first index entry of ``rows`` (a ``PaperRows``) past
    :data:`MAX_INDEXED_BYTES`, else ``None``."""
    if _indexed_characters(rows) <= _SURELY_SHORT:  # nearly every bundle
        return None
    for label, field, entries in _PLAN:
        found = getattr(rows, field)
        nodes: Iterable[Sequence[Any]] = (found,) if label == "Paper" else found
        for number, row in enumerate(nodes, 1):
            for name, where, positions in entries:
                size = _size(row, positions)
                if size > MAX_INDEXED_BYTES:
                    if label == "Author":
                        where = f"author {number} of {where}"
                    return (
                        f"{name} would hold {size} bytes of UTF-8 ({where}); "
                        f"Neo4j indexes at most {MAX_INDEXED_BYTES}"
                    )
    return None


def check_indexable(rows: PaperRows) -> None:
    """Raise ``schema_error`` (:class:`BundleError`) if an index entry of ``rows`` is too long."""
    if (problem := oversized_entry(rows)) is not None:
        raise BundleError(RejectCode.SCHEMA_ERROR, problem)
