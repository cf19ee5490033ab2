"""Neo4j constraints and indexes, derived from :mod:`pith_graph.schema.graph`.

Declared here as data; ``loader.stores.cypher`` renders them as Cypher
(``CREATE CONSTRAINT ... IF NOT EXISTS``) and ``schema/neo4j-schema.cypher`` is the
checked-in, reviewed rendering.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pith_graph.schema.graph import NODES

__all__ = [
    "FOLDED_ANALYZER",
    "FULLTEXT_ANALYZER",
    "MAX_INDEXED_BYTES",
    "RETIRED_INDEXES",
    "ConstraintSpec",
    "IndexSpec",
    "constraints",
    "indexed_bytes",
    "indexed_groups",
    "indexes",
]


@dataclass(frozen=True, slots=True)
class ConstraintSpec:
    """A uniqueness constraint on a label's key properties (composite when several)."""

    name: str
    label: str
    properties: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class IndexSpec:
    """A range or full-text index (a full-text one with a named Lucene analyzer)."""

    name: str
    label: str
    properties: tuple[str, ...]
    kind: Literal["range", "fulltext"] = "range"
    analyzer: str | None = None


#: Neo4j's default full-text analyzer: Lucene's standard tokenizer, lower case, no stop words.
#: The API's in-memory reader splits words the same way (``api/reads/words.py``); named in
#: each index so that a server configured with another default cannot change the answers.
FULLTEXT_ANALYZER = "standard-no-stop-words"


def _snake(label: str, props: tuple[str, ...]) -> str:
    return "_".join([label.lower(), *(p.lower() for p in props)])


def constraints() -> list[ConstraintSpec]:
    """One uniqueness constraint per node label, on its key."""
    return [
        ConstraintSpec(f"{_snake(spec.label, spec.key)}_unique", spec.label, spec.key)
        for spec in NODES.values()
    ]


# Lookups the loader and the API make besides the keys (which the constraints index).
_LOOKUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Paper", ("bundleSha256",)),  # re-load: is this bundle already stored?
    ("Paper", ("submittedAt",)),  # newest-first listings and date ranges
    ("Paper", ("sourceId", "sourceVersion")),  # versions of an arXiv id
    ("Paper", ("shortPithNumber",)),  # pasted short pith numbers
    ("Paper", ("license",)),  # filter
    ("Category", ("archive",)),  # filter by archive
    ("Author", ("paperCount",)),  # typeahead: the most prolific authors first
)

#: Indexes earlier versions created that nothing uses any more: dropped where they are still
#: that index (an index of another's under the same name stays).
#: ``author_name_fulltext`` (``Author.name``, folded on the query side by regular
#: expressions) gave way to ``author_namefolded_fulltext`` (prefix queries on the folded words).
RETIRED_INDEXES: tuple[IndexSpec, ...] = (IndexSpec("author_name_fulltext", "Author", ("name",), "fulltext"),)

#: The analyzer of ``Author.nameFolded``: its words are already folded and lower case, so
#: splitting on white space is all there is to do (no stop words, no other change).
FOLDED_ANALYZER = "whitespace"


def indexes() -> list[IndexSpec]:
    """Range indexes for the lookups above, then the full-text indexes: ``Paper.title`` (the
    ``title`` filter), ``Paper.title`` + ``Paper.abstractExcerpt`` (ranked search, BM25) and
    ``Author.nameFolded`` (typeahead: prefixes of its words, see ``api/reads/folding.py``)."""
    found = [IndexSpec(f"{_snake(label, props)}_index", label, props) for label, props in _LOOKUPS]
    for name, label, props, analyzer in (
        ("paper_title_fulltext", "Paper", ("title",), FULLTEXT_ANALYZER),
        ("paper_text_fulltext", "Paper", ("title", "abstractExcerpt"), FULLTEXT_ANALYZER),
        ("author_namefolded_fulltext", "Author", ("nameFolded",), FOLDED_ANALYZER),
    ):
        found.append(IndexSpec(name, label, props, "fulltext", analyzer))
    return found


#: The most UTF-8 bytes of strings one entry of a range index (a uniqueness constraint's
#: included) may hold: a composite entry's strings together. Neo4j cannot index an entry past
#: about 8 KB (``Property value is too large to index``) and fails the transaction writing it,
#: so the loader rejects a bundle whose rows would write a longer one (``schema_error``), with
#: room to spare; no real author name, license, category or identifier comes near it.
#: Neo4j 5.26 counts 3 bytes more per string of an entry: one string of 8,164 bytes is its
#: largest, two of 8,161 together (measured), so even a composite entry stays far within.
MAX_INDEXED_BYTES = 4096


def indexed_bytes(value: str) -> int:
    """The bytes of ``value`` that :data:`MAX_INDEXED_BYTES` bounds: its UTF-8 (a lone
    surrogate, which JSON may escape, as 3 bytes)."""
    return len(value.encode("utf-8", "surrogatepass"))


def indexed_groups() -> dict[str, tuple[tuple[str, ...], ...]]:
    """Per label, the properties of each range index and uniqueness constraint on it, one
    tuple per index entry (full-text indexes have no such limit: Lucene splits long words).

    >>> indexed_groups()["Alias"]
    (('kind', 'value'),)
    """
    found: dict[str, list[tuple[str, ...]]] = {}
    for label, props in [(c.label, c.properties) for c in constraints()] + [
        (i.label, i.properties) for i in indexes() if i.kind == "range"
    ]:
        found.setdefault(label, []).append(props)
    return {label: tuple(groups) for label, groups in found.items()}
