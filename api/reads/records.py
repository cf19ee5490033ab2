"""The read seam: what the GraphQL API asks of a graph, answered the same by every store.

A :class:`GraphReader` answers *batches*: every method takes many keys and returns a dict
keyed by them, so one call (one Cypher statement on Neo4j) serves a whole level of a nested
query and a per-request DataLoader can sit in front of each method. Results are plain frozen
dataclasses, never driver or networkx objects.

Every ordering is total and spelled out here, so the in-memory and the Neo4j reader return
identical answers:

* papers, newest first: ``submittedAt`` descending, then ``pithNumber`` descending; pages
  are keyset pages after a :class:`PaperKey` (a cursor stays valid while papers are added);
* versions: ``sourceVersion`` ascending, then ``pithNumber``;
* rankings (coauthors, top authors, related papers, co-listed categories): the count
  descending, then the key ascending (``nameKey``, ``code``; related papers: newest first);
* lists without a rank: authors by ``name`` then ``nameKey``; categories primary first, then
  by ``code``; aliases by ``(kind, value)``; signatures by ``signerId``.

Title search (:func:`search_terms`) splits text into words the way Lucene's standard
analyzer (the Neo4j full-text index) does for the scripts the corpus uses, and matches a
paper when its title holds every word; results are newest first, not scored, so both stores
agree.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ALIAS_KINDS",
    "MAX_PATH_HOPS",
    "MAX_SEARCH_TERMS",
    "AliasRecord",
    "AuthorCount",
    "AuthorRecord",
    "CategoryCount",
    "CategoryLink",
    "CategoryRecord",
    "Coauthor",
    "GraphReader",
    "IdentifierKey",
    "Page",
    "PaperFilter",
    "PaperKey",
    "PaperRecord",
    "PathStep",
    "RelatedPaper",
    "SignatureRecord",
    "SignerRecord",
    "lucene_query",
    "paper_key",
    "search_terms",
    "title_words",
]

#: Alias kinds the loader writes; ``pithNumber`` and ``shortPithNumber`` name Paper keys.
ALIAS_KINDS = ("arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16")
#: Longest collaboration path (papers in the chain) a reader searches.
MAX_PATH_HOPS = 6
#: Words of a search text beyond this are ignored.
MAX_SEARCH_TERMS = 16
#: Lucene's StandardTokenizer splits longer tokens at this length.
_MAX_TOKEN_LENGTH = 255

#: ``(kind, value)``: kind is ``pithNumber``, ``shortPithNumber`` or an alias kind.
IdentifierKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class PaperRecord:
    """Every property of a Paper node (see :data:`pith_graph.schema.graph.PAPER`)."""

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

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> PaperRecord:
        """From a node's properties, named as :mod:`pith_graph.schema.graph` names them."""
        return cls(
            pith_number=str(props["pithNumber"]),
            short_pith_number=str(props["shortPithNumber"]),
            title=str(props["title"]),
            abstract_excerpt=str(props["abstractExcerpt"]),
            license=str(props["license"]),
            submitted_at=str(props["submittedAt"]),
            submitted_year=int(props["submittedYear"]),
            primary_category=str(props["primaryCategory"]),
            source_kind=str(props["sourceKind"]),
            source_id=str(props["sourceId"]),
            source_version=int(props["sourceVersion"]),
            canonical_sha256=str(props["canonicalSha256"]),
            bundle_sha256=str(props["bundleSha256"]),
            state_sha256=str(props["stateSha256"]),
            built_at=str(props["builtAt"]),
            key_ids=tuple(props["keyIds"]),
        )

    @property
    def key(self) -> PaperKey:
        return PaperKey(self.submitted_at, self.pith_number)


@dataclass(frozen=True, slots=True, order=True)
class PaperKey:
    """A paper's place in the newest-first order: ``(submittedAt, pithNumber)``.

    Encoded as an opaque cursor; :meth:`decode` returns ``None`` for anything that is not one.

    >>> key = PaperKey("2019-07-30T23:20:50Z", "pith:2019:BR75OIUY7WDYHPO53K7WUNQ4NZ")
    >>> PaperKey.decode(key.encode()) == key
    True
    >>> PaperKey.decode("not a cursor") is None
    True
    """

    submitted_at: str
    pith_number: str

    _PREFIX = "p1|"

    def encode(self) -> str:
        raw = f"{self._PREFIX}{self.submitted_at}|{self.pith_number}".encode()
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, cursor: str) -> PaperKey | None:
        if not cursor or len(cursor) > 200 or not cursor.isascii():
            return None
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
        except (binascii.Error, ValueError):
            return None
        if not raw.startswith(cls._PREFIX):
            return None
        parts = raw[len(cls._PREFIX) :].split("|")
        if len(parts) != 2 or not all(parts):
            return None
        return cls(parts[0], parts[1])


def paper_key(record: PaperRecord) -> tuple[str, str]:
    """Sort key of the newest-first order (use with ``reverse=True``)."""
    return (record.submitted_at, record.pith_number)


@dataclass(frozen=True, slots=True)
class Page:
    """One keyset page of papers, newest first; ``has_next`` when more follow."""

    items: tuple[PaperRecord, ...]
    has_next: bool


@dataclass(frozen=True, slots=True)
class PaperFilter:
    """Which papers a listing holds; every set field must match.

    ``category``: listed in the category with this code (primary or cross-list);
    ``archive``: listed in a category of this archive; ``author``: an author *name key*
    (see :func:`pith_graph.loader.identifiers.author_name_key`); ``submitted_from`` (inclusive) and
    ``submitted_before`` (exclusive): ISO 8601 UTC texts compared as text; ``license``:
    exact; ``title_terms``: every word (see :func:`search_terms`) is in the title.
    """

    category: str | None = None
    archive: str | None = None
    author: str | None = None
    submitted_from: str | None = None
    submitted_before: str | None = None
    license: str | None = None
    title_terms: tuple[str, ...] = ()

    def admits(self, paper: PaperRecord) -> bool:
        """The conditions on the paper's own properties (not category, author or title)."""
        if self.submitted_from is not None and paper.submitted_at < self.submitted_from:
            return False
        if self.submitted_before is not None and paper.submitted_at >= self.submitted_before:
            return False
        return self.license is None or paper.license == self.license


@dataclass(frozen=True, slots=True)
class AuthorRecord:
    name_key: str
    name: str
    paper_count: int


@dataclass(frozen=True, slots=True)
class CategoryRecord:
    code: str
    archive: str
    paper_count: int


@dataclass(frozen=True, slots=True)
class CategoryLink:
    """A paper's category and whether it is the primary one."""

    category: CategoryRecord
    primary: bool


@dataclass(frozen=True, slots=True)
class AliasRecord:
    kind: str
    value: str


@dataclass(frozen=True, slots=True)
class SignerRecord:
    signer_id: str
    signer_type: str
    key_ids: tuple[str, ...]
    paper_count: int


@dataclass(frozen=True, slots=True)
class SignatureRecord:
    """A ``SIGNED`` edge: who signed a paper's events or bundle, with which keys."""

    signer: SignerRecord
    key_ids: tuple[str, ...]
    event_types: tuple[str, ...]
    signed_bundle: bool


@dataclass(frozen=True, slots=True)
class Coauthor:
    author: AuthorRecord
    shared_papers: int


@dataclass(frozen=True, slots=True)
class AuthorCount:
    author: AuthorRecord
    count: int


@dataclass(frozen=True, slots=True)
class CategoryCount:
    category: CategoryRecord
    count: int


@dataclass(frozen=True, slots=True)
class RelatedPaper:
    paper: PaperRecord
    shared_authors: int


@dataclass(frozen=True, slots=True)
class PathStep:
    """One hop of a collaboration path: two authors named on one paper."""

    source: AuthorRecord
    paper: PaperRecord
    target: AuthorRecord


@runtime_checkable
class GraphReader(Protocol):
    """Batched reads over a loaded graph. Implemented by ``MemoryReader`` and ``Neo4jReader``.

    Missing keys are absent from the returned dicts (lookups) or map to empty lists
    (relations). ``first`` is already validated by the caller (0 ≤ first ≤ the page cap).
    """

    def papers_by_ids(self, pith_numbers: Sequence[str]) -> dict[str, PaperRecord]:
        """Papers by full pith number."""

    def resolve_identifiers(self, keys: Sequence[IdentifierKey]) -> dict[IdentifierKey, list[str]]:
        """The pith numbers each ``(kind, value)`` names, sorted; kinds: ``pithNumber``,
        ``shortPithNumber`` or an alias kind. Values match exactly."""

    def list_papers(self, where: PaperFilter, first: int, after: PaperKey | None) -> Page:
        """A page of the papers ``where`` admits, newest first, after ``after``."""

    def count_papers(self, where: PaperFilter) -> int:
        """How many papers ``where`` admits."""

    def authors_by_keys(self, name_keys: Sequence[str]) -> dict[str, AuthorRecord]:
        """Authors by name key."""

    def authors_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[AuthorRecord]]:
        """Each paper's authors, by name then name key."""

    def categories_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[CategoryLink]]:
        """Each paper's categories, primary first, then by code."""

    def aliases_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[AliasRecord]]:
        """Each paper's aliases by (kind, value)."""

    def signatures_of_papers(
        self, pith_numbers: Sequence[str]
    ) -> dict[str, list[SignatureRecord]]:
        """Each paper's SIGNED edges with their signers, by signer id."""

    def versions_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[PaperRecord]]:
        """The other papers with the same source kind and id, by version then pith number."""

    def related_papers(
        self, pith_numbers: Sequence[str], first: int
    ) -> dict[str, list[RelatedPaper]]:
        """Papers sharing authors with each paper (not its own versions): most shared
        authors first, then newest first; at most ``first`` each."""

    def papers_of_authors(
        self, name_keys: Sequence[str], first: int, after: PaperKey | None
    ) -> dict[str, Page]:
        """A newest-first page of each author's papers."""

    def coauthors(self, name_keys: Sequence[str], first: int) -> dict[str, list[Coauthor]]:
        """Each author's coauthors: most shared papers first, then by name key."""

    def author_categories(self, name_keys: Sequence[str]) -> dict[str, list[CategoryCount]]:
        """The categories of each author's papers with how many: most first, then by code."""

    def categories_by_codes(self, codes: Sequence[str]) -> dict[str, CategoryRecord]:
        """Categories by code."""

    def all_categories(self) -> list[CategoryRecord]:
        """Every category by code."""

    def papers_of_categories(
        self, codes: Sequence[str], first: int, after: PaperKey | None
    ) -> dict[str, Page]:
        """A newest-first page of the papers listed in each category."""

    def top_authors(self, codes: Sequence[str], first: int) -> dict[str, list[AuthorCount]]:
        """Authors with the most papers in each category, then by name key."""

    def co_listed(self, codes: Sequence[str], first: int) -> dict[str, list[CategoryCount]]:
        """Other categories the papers of each category are listed in, with how many papers:
        most first, then by code."""

    def signers_by_ids(self, signer_ids: Sequence[str]) -> dict[str, SignerRecord]:
        """Signers by id."""

    def papers_of_signers(
        self, signer_ids: Sequence[str], first: int, after: PaperKey | None
    ) -> dict[str, Page]:
        """A newest-first page of the papers each signer signed."""

    def collaboration_path(
        self, source: str, target: str, max_hops: int
    ) -> list[PathStep] | None:
        """The shortest author → paper → author chain from ``source`` to ``target`` (name
        keys) with at most ``max_hops`` papers, or ``None``. Of several shortest chains, the
        one whose sequence of node keys (name keys and pith numbers) is smallest."""

    def ping(self) -> None:
        """Return when the store can answer; raise :class:`~pith_graph.errors.StoreError` if not."""

    def close(self) -> None:
        """Release what the reader holds."""


# -- title words -----------------------------------------------------------------------------


def _is_ideographic(char: str) -> bool:
    code = ord(char)
    return (
        0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x3FFFF
        or 0x3040 <= code <= 0x309F  # hiragana: one token per character too
    )


_MID_LETTER = frozenset(":·\u0387\u05f4\u2027\ufe13\ufe55\uff1a")
_MID_NUM_LET = frozenset(".'\u2018\u2019\u2024\ufe52\uff07\uff0e")
_MID_NUM = frozenset(",;\u037e\u0589\u060c\u060d\u066c\u07f8\u2044\ufe10\ufe14\ufe50\ufe54\uff0c\uff1b")


def _char_class(char: str) -> str:
    """``L`` letter-like, ``N`` digit, ``E`` extend (mark, format, connector), ``I``
    ideographic, ``O`` other."""
    if _is_ideographic(char):
        return "I"
    category = unicodedata.category(char)
    if category[0] == "L":
        return "L"
    if category == "Nd":
        return "N"
    if category[0] == "N":
        return "L"
    if category in ("Mn", "Mc", "Me", "Cf", "Pc"):
        return "E"
    return "O"


def _lower(token: str) -> str:
    """Per-character simple lower case, as Lucene's LowerCaseFilter does."""
    return "".join("i" if char == "\u0130" else char.lower() for char in token)


def title_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` as Lucene's standard analyzer finds them, lower-cased, deduplicated.

    Letters and digits join into words, as do ``.`` / ``'`` / ``:`` between letters and
    ``.`` / ``,`` between digits; marks and ``_`` stay inside a word; each CJK ideograph is a
    word of its own; everything else separates words.

    >>> title_words("Graph  neural-networks: GPT4 at 3.5 T.F.L.O.P.S, O'Brien; 李伟")
    ('graph', 'neural', 'networks', 'gpt4', 'at', '3.5', 't.f.l.o.p.s', "o'brien", '李', '伟')
    """
    words: list[str] = []
    current: list[str] = []
    last = "O"  # class of the last word character
    chars = text
    index = 0
    length = len(chars)

    def flush() -> None:
        if current:
            token = _lower("".join(current))
            for start in range(0, len(token), _MAX_TOKEN_LENGTH):
                words.append(token[start : start + _MAX_TOKEN_LENGTH])
            current.clear()

    while index < length:
        char = chars[index]
        kind = _char_class(char)
        if kind == "I":
            flush()
            words.append(char)
            last = "O"
        elif kind in ("L", "N"):
            current.append(char)
            last = kind
        elif kind == "E":
            if current:
                current.append(char)
        elif current and index + 1 < length:
            following = _char_class(chars[index + 1])
            joins_letters = last == "L" and following == "L" and (
                char in _MID_LETTER or char in _MID_NUM_LET
            )
            joins_digits = last == "N" and following == "N" and (
                char in _MID_NUM or char in _MID_NUM_LET
            )
            if joins_letters or joins_digits:
                current.append(char)
            else:
                flush()
                last = "O"
        else:
            flush()
            last = "O"
        index += 1
    flush()
    return tuple(dict.fromkeys(words))


def search_terms(text: str) -> tuple[str, ...]:
    """The words of a search text (:func:`title_words`), at most :data:`MAX_SEARCH_TERMS`."""
    return title_words(text)[:MAX_SEARCH_TERMS]


def lucene_query(terms: Sequence[str]) -> str:
    """A Lucene query requiring every term: each one quoted, ``"`` and ``\\`` escaped.

    >>> lucene_query(['graph', 'a"b'])
    '+"graph" +"a\\\\"b"'
    """
    return " ".join('+"' + re.sub(r'(["\\])', r"\\\1", term) + '"' for term in terms)

