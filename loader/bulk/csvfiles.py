"""The CSV files Neo4j's offline importer reads: headers from the schema, rows encoded once.

One file set per node label and relationship type (:data:`TARGETS`), each in two parts:
rows without a line break, and the rare rows whose values hold ``\\n`` or ``\\r``, which the
importer parses as multi-line only in the files named to it (``--multiline-fields``), so
the fast path stays fast. Every string is quoted (``"`` doubled inside), integers and
booleans are bare, a list is one quoted string of items joined by U+001F (the
``--array-delimiter``, a control character no key id or event type holds), an absent
property an empty field.

Node ids (``:ID``) are the schema keys in an id space per label; an ``Alias`` is keyed on a
pair, so its id is ``<len(kind)>:<kind><value>`` (one string per pair, never stored).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pith_graph.errors import UsageError
from pith_graph.schema.graph import (
    ALIAS,
    AUTHOR,
    AUTHORED,
    CATEGORY,
    IDENTIFIES,
    IN_CATEGORY,
    PAPER,
    SIGNED,
    SIGNER,
    NodeSpec,
    PropertySpec,
    RelationshipSpec,
)

__all__ = [
    "ARRAY_DELIMITER",
    "EDGE_TARGETS",
    "NODE_TARGETS",
    "PAPER_COLUMNS",
    "TARGETS",
    "Target",
    "alias_id",
    "encode",
    "line",
    "quoted_rows",
    "with_latest",
]

ARRAY_DELIMITER = "\x1f"
_CSV_TYPES = {
    "string": "",
    "integer": ":long",
    "boolean": ":boolean",
    "list<string>": ":string[]",
    "list<integer>": ":long[]",
}


@dataclass(frozen=True, slots=True)
class Target:
    """One node label or relationship type: its files' stem, header and importer option."""

    name: str  # file stem
    option: str  # --nodes or --relationships
    label: str  # label or relationship type
    header: str


def _columns(props: Sequence[PropertySpec], skip: Sequence[str] = ()) -> list[str]:
    return [prop.name + _CSV_TYPES[prop.type] for prop in props if prop.name not in skip]


def _node_target(spec: NodeSpec) -> Target:
    if len(spec.key) == 1:
        key = spec.key[0]
        columns = [f"{key}:ID({spec.label})", *_columns(spec.properties, skip=(key,))]
    else:  # a composite key: an id column of its own, never stored
        columns = [f":ID({spec.label})", *_columns(spec.properties)]
    return Target(spec.label.lower(), "--nodes", spec.label, ",".join(columns))


def _edge_target(spec: RelationshipSpec) -> Target:
    columns = [f":START_ID({spec.start})", f":END_ID({spec.end})", *_columns(spec.properties)]
    return Target(spec.type.lower(), "--relationships", spec.type, ",".join(columns))


#: The Paper properties a spilled Paper row holds (pass one), in the header's order: all but
#: ``isLatest``, the last column, which pass two appends (:func:`with_latest`) once it has
#: decided the source's papers.
PAPER_COLUMNS = PAPER.property_names[:-1]
if PAPER.property_names[-1] != "isLatest":
    raise TypeError("the bulk import appends isLatest to Paper rows: it must be the last property")


def with_latest(row: bytes, latest: bool) -> bytes:
    """A spilled Paper row (one line, however many line breaks its values hold: the last byte
    ends it) with its ``isLatest`` appended.

    >>> with_latest(b'"pith:1",3\\n', True)
    b'"pith:1",3,true\\n'
    """
    return row[:-1] + (b",true\n" if latest else b",false\n")


NODE_TARGETS = tuple(_node_target(spec) for spec in (PAPER, AUTHOR, CATEGORY, ALIAS, SIGNER))
EDGE_TARGETS = tuple(_edge_target(spec) for spec in (AUTHORED, IN_CATEGORY, IDENTIFIES, SIGNED))
TARGETS = NODE_TARGETS + EDGE_TARGETS


def alias_id(kind: str, value: str) -> str:
    """The importer id of ``Alias {kind, value}`` (injective: the kind's length comes first).

    >>> alias_id("doi", "10.1/x")
    '3:doi10.1/x'
    """
    return f"{len(kind)}:{kind}{value}"


def encode(value: Any) -> str:
    """One CSV field; ``None`` is an empty field, which the importer stores as no property.

    Neo4j's importer reads an empty list field (``,,`` or ``""``, with or without
    ``--ignore-empty-strings``) as no property, never as ``[]``: a list property that may be
    empty is absent instead in every store (``SIGNED.eventTypes``), and its writers pass
    ``None``; an empty list is refused.

    >>> [encode(v) for v in ('a "b", c', 7, True, ["k1", "k2"], [2, 1], None)]
    ['"a ""b"", c"', '7', 'true', '"k1\\x1fk2"', '"2\\x1f1"', '']
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    items = [str(item) if type(item) is int else item for item in value]
    joined = ARRAY_DELIMITER.join(items)  # holds one delimiter fewer than items, unless one holds it
    if not items or joined.count(ARRAY_DELIMITER) != len(items) - 1:
        raise UsageError(f"cannot write the list {items!r} for Neo4j's importer (empty, or holds U+001F)")
    return '"' + joined.replace('"', '""') + '"'


def line(values: Sequence[Any]) -> tuple[bytes, bool]:
    """A CSV row and whether it holds a line break (it then goes to the multi-line part).
    A string is quoted in place (:func:`encode`'s first case, without a call per field)."""
    text = (
        ",".join(['"' + v.replace('"', '""') + '"' if type(v) is str else encode(v) for v in values]) + "\n"
    )
    return text.encode("utf-8"), "\n" in text[:-1] or "\r" in text


def quoted_rows(keys: Sequence[str], rest: str) -> bytes | None:
    """The rows ``[key, *rest]`` of each of ``keys`` (``rest``: the other fields, encoded, with
    their leading comma), as :func:`line` writes them one by one, in one piece; ``None`` when
    one of them would need escaping or go to the multi-line part (:func:`line` then writes
    them).

    >>> quoted_rows(["a", "b"], ',"p"'), quoted_rows(['a"'], ',"p"'), quoted_rows([], ',"p"')
    (b'"a","p"\\n"b","p"\\n', None, b'')
    """
    if not keys:
        return b""
    probe = "".join(keys)
    if '"' in probe or "\n" in probe or "\r" in probe or "\n" in rest or "\r" in rest:
        return None
    return ('"' + f'"{rest}\n"'.join(keys) + f'"{rest}\n').encode("utf-8")
