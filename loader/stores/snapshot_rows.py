"""A snapshot's rows made into nodes and edges, whichever version holds them (one JSON
document, 3; a line per piece, 4: :mod:`~pith_graph.loader.stores.snapshot_pieces`).

Each function takes a group's (or a piece's) property names, the label's or type's place
among them and its rows, and yields what :func:`~pith_graph.loader.stores.memory_graph.put`
writes: nodes each with its own attribute dict, edges sharing equal attribute sets
(:class:`~pith_graph.loader.stores.memory_graph.EdgeInterner`), the values a load shares
shared (:data:`~pith_graph.loader.stores.memory_graph.INTERNED`, an author's folded name equal
to its key, a paper's spelling of an author: :class:`Spellings`). Rows that do not fit their
columns raise ValueError; a body of another shape, TypeError, KeyError or IndexError.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pith_graph.errors import quoted, with_article
from pith_graph.loader.stores.memory_graph import INTERNED, EdgeData, EdgeInterner
from pith_graph.schema.graph import AUTHOR, LABEL_ATTRIBUTE, NODES, PAPER, TYPE_ATTRIBUTE

__all__ = ["Spellings", "edge_rows", "node_rows", "other_edges", "other_nodes"]

_FOLDED, _NAME_KEY = AUTHOR.prop("nameFolded"), AUTHOR.prop("nameKey")
_NAME, _AUTHOR_NAMES = AUTHOR.prop("name"), PAPER.prop("authorNames")


class Spellings:
    """Each paper's ``authorNames`` share their strings with the authors' names, as a load
    makes them (most papers spell an author as it is named), and equal spellings are one
    string: a string per spelling, not per paper naming it. Papers met before the authors
    (a body holds them first) are given the authors' strings by :meth:`done`. Only a saving:
    values of other types are left as they are, to be refused as the reading finds them."""

    def __init__(self) -> None:
        self._names: dict[Any, Any] = {}  # spelling -> the string every paper and author holds
        self._lists: list[list[Any]] = []  # the papers' authorNames, for done()
        self._late = False  # whether authors came after papers

    def saw(self, label: str, names: list[str], rows: list[list[Any]]) -> None:
        """Share the spellings in ``rows`` (of a regular ``label`` group, widths checked)."""
        known = self._names
        if label == AUTHOR.label and _NAME in names:
            at = names.index(_NAME)
            self._late = self._late or bool(self._lists)
            for row in rows:
                if type(row[at]) is str:
                    known[row[at]] = row[at]  # (the last author of a spelling: as 0.9.6 read)
        elif label == PAPER.label and _AUTHOR_NAMES in names:
            at = names.index(_AUTHOR_NAMES)
            for row in rows:
                if type(row[at]) is list:
                    row[at] = spelt = [known.setdefault(n, n) if type(n) is str else n for n in row[at]]
                    self._lists.append(spelt)

    def done(self) -> None:
        """Give papers met before the authors the authors' strings; forget the spellings."""
        if self._late:
            known = self._names
            for spelt in self._lists:
                for at, spelling in enumerate(spelt):
                    if type(spelling) is str:
                        spelt[at] = known[spelling]
        self._names, self._lists, self._late = {}, [], False


def node_rows(
    label: str, names: list[str] | None, at: int, rows: list[list[Any]], ids: list[str], spellings: Spellings
) -> Iterator[tuple[str, dict[str, Any]]]:
    """A label's nodes from its ``rows`` (their ids from their keys, appended to ``ids``, which
    edges name their ends by index in), the label at place ``at`` among their attributes."""
    names = names or []
    if not rows:
        return
    keys = [names.index(key) for key in NODES[label].key]
    label = sys.intern(label)  # one string, however many pieces hold its rows
    width = len(names)
    if any(len(row) != width for row in rows):
        raise ValueError(f"{with_article(quoted(label))} row does not have {width} values")
    if len(keys) == 1:  # most labels: the id is the label and one key
        prefix, key = label + ":", keys[0]
        made = [prefix + row[key] for row in rows]
    else:
        made = [":".join((label, *(row[key] for key in keys))) for row in rows]
    _intern(rows, names, INTERNED.get(label, ()))
    if label == AUTHOR.label and {_FOLDED, _NAME_KEY} <= set(names):  # as a load shares them
        folded, key = names.index(_FOLDED), names.index(_NAME_KEY)
        for row in rows:
            if row[folded] == row[key]:
                row[folded] = row[key]
    spellings.saw(label, names, rows)
    place = _placer(LABEL_ATTRIBUTE, label, names, at)
    ids += made
    yield from zip(made, map(place, rows), strict=True)


def other_nodes(entries: Iterable[list[Any]], ids: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Nodes kept as they are, ``[index, id, attributes]`` in the order of their indexes."""
    for at, node, attributes in entries:
        if at != len(ids) or not isinstance(node, str) or not isinstance(attributes, dict):
            raise ValueError("a node out of order, or not an id and a map")
        ids.append(node)
        yield node, attributes


def edge_rows(
    kind: str, names: list[str] | None, at: int, rows: list[list[Any]], ids: list[str], shared: EdgeInterner
) -> Iterator[tuple[str, str, EdgeData]]:
    """A type's edges from its ``rows`` (``[source index, target index, values...]``)."""
    names = names or []
    if not rows:  # (a type whose first edge has no type attribute: no rows, "at" -1)
        return
    width = len(names) + 2
    if any(len(row) != width for row in rows):
        raise ValueError(f"{with_article(quoted(kind))} row does not have {width} values")
    place = _placer(TYPE_ATTRIBUTE, kind, names, at)
    plain = shared({TYPE_ATTRIBUTE: kind})
    for row in rows:
        source, target = row[0], row[1]
        if source < 0 or target < 0:  # Python would count them from the end
            raise IndexError("an edge names a node by a negative index")
        yield ids[source], ids[target], shared(place(row[2:])) if names else plain


def other_edges(
    entries: Iterable[list[Any]], ids: list[str], shared: EdgeInterner
) -> Iterator[tuple[str, str, EdgeData]]:
    """Edges kept as they are, ``[source index, target index, attributes]``."""
    for source, target, attributes in entries:
        if not isinstance(attributes, dict):
            raise ValueError("an edge's attributes are not a map")
        if source < 0 or target < 0:
            raise IndexError("an edge names a node by a negative index")
        yield ids[source], ids[target], shared(attributes)


def _intern(rows: list[list[Any]], names: list[str], interned: Sequence[str]) -> None:
    """One string object per value in the ``interned`` columns of ``rows`` (as MemoryStore
    writes them); a value of another type is left to the type checks."""
    for name in interned:
        if name not in names:
            continue
        at = names.index(name)
        for row in rows:
            value = row[at]
            if type(value) is str:
                row[at] = sys.intern(value)
            elif type(value) is list:
                row[at] = [sys.intern(item) if type(item) is str else item for item in value]


def _placer(name: str, value: str, names: list[str], at: int) -> Any:
    """Attributes from a row of values, with ``name: value`` at its place among them."""
    if type(at) is not int or not 0 <= at <= len(names):
        raise ValueError(f"the place of {quoted(name)} is not one of 0 to {len(names)}")
    if at == 0:

        def first(row: list[Any]) -> dict[str, Any]:
            attributes = {name: value}
            attributes.update(zip(names, row, strict=False))
            return attributes

        return first

    def placed(row: list[Any]) -> dict[str, Any]:
        pairs = list(zip(names, row, strict=False))
        pairs.insert(at, (name, value))
        return dict(pairs)

    return placed
