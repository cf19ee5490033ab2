"""The graph schema: the single source of truth for labels, keys, properties and edges.

Both stores (networkx and Neo4j), the row builder and the GraphQL API derive from these
declarations; analysts' Cypher depends on them, so changing a name here is a breaking change
of a public contract (``tests/test_cookbook.py`` and ``tests/test_packaging.py`` pin the printed form).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ALIAS",
    "AUTHOR",
    "AUTHORED",
    "CATEGORY",
    "IDENTIFIES",
    "IN_CATEGORY",
    "LABEL_ATTRIBUTE",
    "NODES",
    "PAPER",
    "PROPERTY_NAMES",
    "RELATIONSHIPS",
    "SIGNED",
    "SIGNER",
    "TYPE_ATTRIBUTE",
    "NodeSpec",
    "PropertySpec",
    "RelationshipSpec",
    "node_id",
]

#: In networkx, the node attribute holding the label and the edge attribute holding the type
#: (Neo4j has labels and types of its own).
LABEL_ATTRIBUTE = "label"
TYPE_ATTRIBUTE = "type"

PropertyType = Literal["string", "integer", "boolean", "list<string>", "list<integer>"]


@dataclass(frozen=True, slots=True)
class PropertySpec:
    """One property: its name (camelCase), type, whether every node/edge has it, meaning."""

    name: str
    type: PropertyType
    description: str
    required: bool = True


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node label, the properties that identify a node (its key) and the rest."""

    label: str
    key: tuple[str, ...]
    properties: tuple[PropertySpec, ...]
    description: str

    @property
    def property_names(self) -> tuple[str, ...]:
        return tuple(prop.name for prop in self.properties)

    def prop(self, name: str) -> str:
        """``name``, checked to be one of this label's properties (code names properties
        through this, so a renamed property fails at import, not in a query).

        >>> PAPER.prop("builtAt")
        'builtAt'
        """
        if name not in self.property_names:
            raise KeyError(f"{self.label} has no property {name!r}")
        return name


@dataclass(frozen=True, slots=True)
class RelationshipSpec:
    """A relationship type between two labels, with its properties."""

    type: str
    start: str
    end: str
    properties: tuple[PropertySpec, ...]
    description: str

    def prop(self, name: str) -> str:
        """``name``, checked to be one of this type's properties."""
        if name not in (spec.name for spec in self.properties):
            raise KeyError(f"{self.type} has no property {name!r}")
        return name


def _p(name: str, type_: PropertyType, description: str, required: bool = True) -> PropertySpec:
    return PropertySpec(name, type_, description, required)


PAPER = NodeSpec(
    "Paper",
    ("pithNumber",),
    (
        _p("pithNumber", "string", "full pith number, pith:YYYY:<26 base32 chars>"),
        _p("shortPithNumber", "string", "pith:<first 8 base32 chars>"),
        _p("title", "string", "title from the newest graph snapshot"),
        _p("abstractExcerpt", "string", "truncated abstract from the newest snapshot"),
        _p("license", "string", "license URL"),
        _p("submittedAt", "string", "submission time, ISO 8601 UTC (sorts as text)"),
        _p("submittedYear", "integer", "year of submittedAt"),
        _p("primaryCategory", "string", "primary arXiv category code"),
        _p("sourceKind", "string", "source registry, e.g. arxiv"),
        _p("sourceId", "string", "source identifier without version, e.g. 1907.13257"),
        _p("sourceVersion", "integer", "source version number (arXiv vN)"),
        _p("canonicalSha256", "string", "SHA-256 of the canonical record"),
        _p("bundleSha256", "string", "SHA-256 of the bundle the paper was loaded from"),
        _p("stateSha256", "string", "SHA-256 of the bundle's merged state"),
        _p("builtAt", "string", "bundle built_at; the newest bundle per paper wins"),
        _p("keyIds", "list<string>", "ids of every key that signed the bundle, sorted"),
        _p(
            "bundleKeyId",
            "string",
            "id of the key that signed the bundle: its signer's rank decides conflicts",
        ),
        _p(
            "authorNames",
            "list<string>",
            "the authors as the paper names them (display forms, NFC), in its order, one per"
            " Author; absent when it names none",
            required=False,
        ),
        _p(
            "isLatest",
            "boolean",
            "true for the newest version of its source: no paper of the graph with its sourceKind"
            " and sourceId has a greater (sourceVersion, builtAt, pithNumber); kept by every write",
        ),
    ),
    "One arXiv version of a paper, as recorded by a verified bundle.",
)

AUTHOR = NodeSpec(
    "Author",
    ("nameKey",),
    (
        _p("nameKey", "string", "NFKC, case-folded, whitespace-collapsed name: the identity"),
        _p(
            "name",
            "string",
            "display form (NFC): the smallest (by code point) of its papers' spellings of it",
        ),
        _p(
            "nameFolded",
            "string",
            "the words of name, lower case, accents folded (Zoë Smith: zoe smith), space-separated:"
            " what author typeahead matches typed prefixes against",
        ),
        _p("paperCount", "integer", "how many papers name the author (its AUTHORED edges)"),
        _p(
            "nameForms",
            "list<string>",
            "its papers' distinct spellings of it (authorNames), smallest first; absent when"
            " they all spell it name",
            required=False,
        ),
        _p(
            "nameFormCounts",
            "list<integer>",
            "how many of its papers use each of nameForms; absent with nameForms",
            required=False,
        ),
    ),
    "A person named in a paper's authors_text.",
)

CATEGORY = NodeSpec(
    "Category",
    ("code",),
    (
        _p("code", "string", "arXiv category code, e.g. cs.LG"),
        _p("archive", "string", "the archive part of the code, e.g. cs"),
    ),
    "An arXiv category.",
)

ALIAS = NodeSpec(
    "Alias",
    ("kind", "value"),
    (
        _p("kind", "string", "arxiv, arxiv_version, doi, pith_short_8, ..."),
        _p("value", "string", "the identifier as the bundle states it; a doi's ASCII letters in lower case"),
    ),
    "An external or short identifier; one node per distinct (kind, value).",
)

SIGNER = NodeSpec(
    "Signer",
    ("signerId",),
    (
        _p("signerId", "string", "e.g. pith.science"),
        _p(
            "signerType",
            "string",
            "e.g. pith_registry: the type the keyring pins for the signer, else unknown"
            " (never the type its events claim)",
        ),
        _p("keyIds", "list<string>", "keys this signer used on the papers it signed, sorted"),
    ),
    "Whoever signed events or bundles.",
)

AUTHORED = RelationshipSpec("AUTHORED", "Author", "Paper", (), "the author is named on the paper")
IN_CATEGORY = RelationshipSpec(
    "IN_CATEGORY",
    "Paper",
    "Category",
    (_p("primary", "boolean", "true for the primary category, false for cross-lists"),),
    "the paper is listed in the category",
)
IDENTIFIES = RelationshipSpec("IDENTIFIES", "Alias", "Paper", (), "the alias names the paper")
SIGNED = RelationshipSpec(
    "SIGNED",
    "Signer",
    "Paper",
    (
        _p("keyIds", "list<string>", "keys the signer used for this paper, sorted"),
        _p(
            "eventTypes",
            "list<string>",
            "event types it signed, sorted; absent when it signed none (only the bundle or the"
            " receipt): Neo4j's importer cannot write an empty list, so no writer does",
            required=False,
        ),
        _p("signedBundle", "boolean", "true when it signed the bundle itself"),
    ),
    "the signer signed events or the bundle of the paper",
)

NODES: dict[str, NodeSpec] = {spec.label: spec for spec in (PAPER, AUTHOR, CATEGORY, ALIAS, SIGNER)}
RELATIONSHIPS: dict[str, RelationshipSpec] = {
    spec.type: spec for spec in (AUTHORED, IN_CATEGORY, IDENTIFIES, SIGNED)
}
#: The property names the schema declares for each label and each relationship type: any
#: other property of a node or relationship of the graph's is an analyst's (or a script's).
PROPERTY_NAMES: dict[str, frozenset[str]] = {
    spec.label: frozenset(spec.property_names) for spec in NODES.values()
} | {spec.type: frozenset(p.name for p in spec.properties) for spec in RELATIONSHIPS.values()}


def node_id(label: str, *key: str) -> str:
    """The in-memory node id: the label and the key values joined by ``:``.

    One id names one node as long as no label and no key value but the last contains ``:``
    (the last may: ``Paper:pith:2019:…``). The only key of two values is the Alias's, and
    verification admits alias kinds of ``[a-z0-9_]`` only (``loader/shape.py``), so
    ``Alias:<kind>:<value>`` splits at its second ``:``.

    >>> node_id("Alias", "doi", "10.48550/arxiv.1907.13257")
    'Alias:doi:10.48550/arxiv.1907.13257'
    """
    return ":".join((label, *key))
