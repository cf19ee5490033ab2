"""Typed rows of the graph, derived from and checked against :mod:`pith_graph.schema.graph`.

The loader builds these rows, both stores write them, and the API's readers answer with
:class:`PaperRow`. Fields are the schema's properties in schema order, named in
``snake_case`` (``pithNumber`` is ``pith_number``, ``canonicalSha256`` is
``canonical_sha256``); :func:`_bind` proves at import that every row class matches its
spec, so a renamed property cannot be forgotten here. Rows are ``NamedTuple``\\ s: typed,
immutable, cheap to build and to send between processes.

* node rows: :class:`PaperRow`, :class:`AuthorRow`, :class:`AliasRow`;
* link rows, the far node and the edge to the paper in one: :class:`CategoryLinkRow`
  (``Category`` + ``IN_CATEGORY``), :class:`SignatureRow` (``Signer`` + ``SIGNED``).

>>> AuthorRow("zoë smith", "Zoë Smith", "zoe smith").properties()
{'nameKey': 'zoë smith', 'name': 'Zoë Smith', 'nameFolded': 'zoe smith'}
>>> CategoryLinkRow("cs.LG", "cs", True).edge_properties()
{'primary': True}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pith_graph.schema.graph import (
    ALIAS,
    AUTHOR,
    CATEGORY,
    IN_CATEGORY,
    PAPER,
    SIGNED,
    SIGNER,
    PropertySpec,
)

__all__ = [
    "PAPER_ROW_PROPERTIES",
    "AliasRow",
    "AuthorRow",
    "CategoryLinkRow",
    "PaperRow",
    "SignatureRow",
    "snake_case",
]


def snake_case(name: str) -> str:
    """The Python field name of a schema property.

    >>> snake_case("canonicalSha256"), snake_case("pithNumber")
    ('canonical_sha256', 'pith_number')
    """
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), name)


class PaperRow(NamedTuple):
    """The properties of a ``Paper`` node (see :data:`~pith_graph.schema.graph.PAPER`) but
    ``authorNames`` and ``isLatest``, which the stores write from the paper's author rows and its
    source's other papers; then ``is_latest``, which a reader fills as its ``latestVersions``
    answers it (since 0.9.4; a row the loader builds leaves it ``False``, and neither
    :meth:`properties` nor a store writes it)."""

    pith_number: str
    short_pith_number: str
    title: str
    abstract_excerpt: str
    license: str
    submitted_at: str
    submitted_year: int
    primary_category: str
    source_kind: str
    source_id: str
    source_version: int
    canonical_sha256: str
    bundle_sha256: str
    state_sha256: str
    built_at: str
    key_ids: tuple[str, ...]
    bundle_key_id: str
    is_latest: bool = False

    def properties(self) -> dict[str, Any]:
        """The node's properties, named as the schema names them (lists as lists)."""
        return _properties(_PAPER_NAMES, self, _PAPER_LISTS)

    @classmethod
    def from_properties(cls, props: Mapping[str, Any], is_latest: bool | None = None) -> PaperRow:
        """From a node's properties (either store); ``is_latest`` None: its ``isLatest``
        (absent, as in a database written before 0.9.4: ``False``)."""
        latest = props.get("isLatest") is True if is_latest is None else is_latest
        return cls._make(
            [
                *(
                    tuple(props[name]) if index in _PAPER_LISTS else props[name]
                    for index, name in enumerate(_PAPER_NAMES)
                ),
                latest,
            ]
        )


class AuthorRow(NamedTuple):
    """An ``Author`` as one paper names it: the name key (identity), the paper's display form
    and the key's folded words (since 0.9.8; the stores derive the node's ``name`` from all its papers' forms,
    and ``paperCount``, ``nameForms`` and ``nameFormCounts``)."""

    name_key: str
    name: str
    name_folded: str

    def properties(self) -> dict[str, Any]:
        return dict(zip(_AUTHOR_NAMES, self, strict=False))


class AliasRow(NamedTuple):
    """An ``Alias`` node, keyed on both properties."""

    kind: str
    value: str

    def properties(self) -> dict[str, Any]:
        return dict(zip(_ALIAS_NAMES, self, strict=False))


class CategoryLinkRow(NamedTuple):
    """A ``Category`` node and the paper's ``IN_CATEGORY`` edge to it."""

    code: str
    archive: str
    primary: bool

    def node_properties(self) -> dict[str, Any]:
        return dict(zip(_CATEGORY_NAMES, self, strict=False))

    def edge_properties(self) -> dict[str, Any]:
        return {_IN_CATEGORY_NAMES[0]: self.primary}


class SignatureRow(NamedTuple):
    """A ``Signer`` node (its key and type; ``keyIds`` is derived from its edges) and its
    ``SIGNED`` edge to the paper."""

    signer_id: str
    signer_type: str
    key_ids: tuple[str, ...]
    event_types: tuple[str, ...]
    signed_bundle: bool

    @property
    def stored_event_types(self) -> list[str] | None:
        """``eventTypes`` as every writer stores it: ``None`` (no property) when the signer
        signed no event, since Neo4j's importer cannot write an empty list (schema.graph)."""
        return list(self.event_types) or None

    def edge_properties(self) -> dict[str, Any]:
        """The edge's properties (``eventTypes`` absent when it signed no event).

        >>> SignatureRow("m", "unknown", ("k",), (), True).edge_properties()
        {'keyIds': ['k'], 'signedBundle': True}
        """
        props: dict[str, Any] = {_SIGNED_NAMES[0]: list(self.key_ids)}
        if (event_types := self.stored_event_types) is not None:
            props[_SIGNED_NAMES[1]] = event_types
        props[_SIGNED_NAMES[2]] = self.signed_bundle
        return props


def _properties(names: Sequence[str], row: Sequence[Any], lists: frozenset[int]) -> dict[str, Any]:
    if not lists:
        return dict(zip(names, row, strict=False))
    return {
        name: list(value) if index in lists else value
        for index, (name, value) in enumerate(zip(names, row, strict=False))
    }


def _bind(row: type, specs: Sequence[PropertySpec], read: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The schema names of ``row``'s fields but the ``read`` last ones (a reader's, not
    written); raises if they are not the specs' properties."""
    names = tuple(spec.name for spec in specs)
    fields: tuple[str, ...] = row._fields[: len(row._fields) - len(read)]  # type: ignore[attr-defined]
    expected = tuple(snake_case(name) for name in names)
    if fields != expected:
        raise TypeError(f"{row.__name__} fields {fields} are not the schema's {expected}")
    return names


def _lists(specs: Sequence[PropertySpec]) -> frozenset[int]:
    return frozenset(index for index, spec in enumerate(specs) if spec.type.startswith("list"))


#: Written by the stores (from :class:`~pith_graph.loader.rows.PaperRows`' authors, from the
#: source's other papers), not rows.
_PAPER_DERIVED = ("authorNames", "isLatest")
_PAPER_SPECS = tuple(spec for spec in PAPER.properties if spec.name not in _PAPER_DERIVED)
_PAPER_NAMES = _bind(PaperRow, _PAPER_SPECS, ("is_latest",))
_PAPER_LISTS = _lists(_PAPER_SPECS)
_AUTHOR_DERIVED = ("paperCount", "nameForms", "nameFormCounts")
_AUTHOR_NAMES = _bind(
    AuthorRow, tuple(spec for spec in AUTHOR.properties if spec.name not in _AUTHOR_DERIVED)
)
_ALIAS_NAMES = _bind(AliasRow, ALIAS.properties)
_CATEGORY_NAMES = _bind(CategoryLinkRow, CATEGORY.properties + IN_CATEGORY.properties)[:2]
_IN_CATEGORY_NAMES = tuple(spec.name for spec in IN_CATEGORY.properties)
_SIGNER_KEY = tuple(spec for spec in SIGNER.properties if spec.name != "keyIds")
_SIGNED_NAMES = _bind(SignatureRow, _SIGNER_KEY + SIGNED.properties)[2:]
#: The Paper properties a :class:`PaperRow` holds, in its field order (all but ``authorNames``, ``isLatest``).
PAPER_ROW_PROPERTIES = _PAPER_NAMES
