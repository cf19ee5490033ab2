"""The records a :class:`~pith_graph.api.reads.reader.GraphReader` answers with.

Plain frozen dataclasses, never driver or networkx objects, so both readers return values
that compare with ``==``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pith_graph.loader.keyring import UNRANKED
from pith_graph.loader.stores.latest import row_version_key
from pith_graph.schema.graph import PAPER
from pith_graph.schema.rows import PAPER_ROW_PROPERTIES, PaperRow

__all__ = [
    "ALIAS_KINDS",
    "ALL_PAPER_PROPERTIES",
    "CORE_PAPER_PROPERTIES",
    "EVERYTHING",
    "MAX_PATH_HOPS",
    "NO_RANKS",
    "AliasRecord",
    "AuthorCount",
    "AuthorPage",
    "AuthorRecord",
    "CategoryCount",
    "CategoryLink",
    "CategoryRecord",
    "Coauthor",
    "IdentifierKey",
    "ListingOrder",
    "NameFormRecord",
    "Page",
    "PaperFilter",
    "PaperKey",
    "PaperSelection",
    "PathStep",
    "RelatedPaper",
    "SignatureRecord",
    "SignerRanks",
    "SignerRecord",
    "category_rank",
    "of_best_signer",
    "paper_key",
    "ranked_after",
    "ranks_of",
    "version_key",
]

#: Alias kinds the loader writes; ``pithNumber`` and ``shortPithNumber`` name Paper keys.
ALIAS_KINDS = ("arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16")
#: Longest collaboration path (papers in the chain) a reader searches.
MAX_PATH_HOPS = 6
#: ``(kind, value)``: kind is ``pithNumber``, ``shortPithNumber`` or an alias kind.
IdentifierKey = tuple[str, str]


@dataclass(frozen=True, eq=False, slots=True)
class SignerRanks:
    """Each trusted key id with its signer's rank (0 is the highest); a key not listed ranks
    below all of them (``UNRANKED``). Built once per keyring (:func:`ranks_of`), not per
    request or per identifier (20,000 pinned keys made each lookup of 500 identifiers 0.7 s);
    compared and hashed by identity, so that a batch of reads can be keyed by it cheaply."""

    rank: Mapping[str, int]

    def __bool__(self) -> bool:
        return bool(self.rank)

    def rank_of(self, key_id: str) -> int:
        """The rank of ``key_id`` (``UNRANKED`` when it is not listed)."""
        return self.rank.get(key_id, UNRANKED)


#: No ranks: a reader returns every paper an identifier names.
NO_RANKS = SignerRanks({})
_RANKS: dict[int, tuple[object, SignerRanks]] = {}


def ranks_of(keys: Mapping[str, Any]) -> SignerRanks:
    """The ranks of ``keys`` (key id → anything with a ``rank``), made once per mapping
    (none, whatever the mapping: :data:`NO_RANKS`)."""
    if not keys:
        return NO_RANKS
    found = _RANKS.get(id(keys))
    if found is None or found[0] is not keys:
        if len(_RANKS) > 16:  # servers have one keyring; tests make many
            _RANKS.clear()
        found = _RANKS[id(keys)] = (keys, SignerRanks({key: info.rank for key, info in keys.items()}))
    return found[1]


#: Every property of a ``Paper`` a reader reads (schema names: a PaperRow's, and ``isLatest``,
#: its ``is_latest``: since 0.9.4).
ALL_PAPER_PROPERTIES = frozenset((*PAPER_ROW_PROPERTIES, PAPER.prop("isLatest")))
#: The properties every paper a reader returns carries, whatever was selected: its key,
#: its place in the newest-first order, its versions, its signer's rank, its primary category.
CORE_PAPER_PROPERTIES = frozenset(
    PAPER.prop(name)
    for name in (
        "pithNumber",
        "submittedAt",
        "sourceKind",
        "sourceId",
        "sourceVersion",
        "builtAt",
        "bundleKeyId",
        "primaryCategory",
    )
)


@dataclass(frozen=True, slots=True)
class PaperSelection:
    """What a caller will read of the papers a reader call returns (a look-ahead hint).

    ``properties``: the ``Paper`` properties (schema names) it reads. A reader may leave the
    others empty (``""``, ``0``, ``()``) but always fills :data:`CORE_PAPER_PROPERTIES`.
    ``authors`` / ``categories``: the caller will next ask for these papers' authors
    (categories) — ``False`` without, ``True`` with their paper counts — so a reader may fetch
    them now (Neo4j: in the same statement) and answer that call without another one;
    ``None``: it will not. A hint never changes an answer, only what is fetched when.
    """

    properties: frozenset[str] = ALL_PAPER_PROPERTIES
    authors: bool | None = None
    categories: bool | None = None
    #: How many of each paper's authors (in their order) a reader fetching them now fetches,
    #: with their number: the page cap of the request.
    authors_first: int = 100
    #: How many of each paper's categories (primary first, then by code) it fetches: the
    #: size of ``Paper.categories``.
    categories_first: int = 20

    def __post_init__(self) -> None:
        unknown = self.properties - ALL_PAPER_PROPERTIES
        if unknown:
            raise ValueError(f"not Paper properties: {sorted(unknown)}")


#: Every property, no relations: what a caller that does not know its selection asks for.
EVERYTHING = PaperSelection()


#: The order of a listing of papers: ``newest`` first (submittedAt, then pith number, both
#: descending: every listing's) or ``oldest`` first (both ascending: ``papers(orderBy: OLDEST)``).
ListingOrder = Literal["newest", "oldest"]


@dataclass(frozen=True, slots=True, order=True)
class PaperKey:
    """A paper's place in the newest-first order: ``(submittedAt, pithNumber)``.

    Keyset pages start after one; the GraphQL layer encodes it as an opaque cursor
    (:mod:`pith_graph.api.cursors`).
    """

    submitted_at: str
    pith_number: str


def paper_key(record: PaperRow) -> PaperKey:
    """A paper's place in the newest-first order (sort with ``reverse=True``)."""
    return PaperKey(record.submitted_at, record.pith_number)


#: A paper's place among the papers an identifier names, newest version first (sort with
#: ``reverse=True``): its version, then its build, then its pith number, the order writes keep
#: ``Paper.isLatest`` by (:mod:`pith_graph.loader.stores.latest`).
version_key = row_version_key


def of_best_signer(papers: Sequence[PaperRow], rank: Callable[[str], int]) -> list[PaperRow]:
    """Those of ``papers`` whose signer ranks highest (``rank`` of the bundle's key, asked
    once per key; 0 is the highest), in their order."""
    ranks = {key_id: rank(key_id) for key_id in {paper.bundle_key_id for paper in papers}}
    if len(ranks) < 2:
        return list(papers)
    best = min(ranks.values())
    return [paper for paper in papers if ranks[paper.bundle_key_id] == best]


@dataclass(frozen=True, slots=True)
class Page:
    """One keyset page of papers, newest first; ``has_next`` when more follow."""

    items: tuple[PaperRow, ...]
    has_next: bool


@dataclass(frozen=True, slots=True)
class PaperFilter:
    """Which papers a listing holds; every set field must match.

    ``category``: listed in the category with this code (primary or cross-list);
    ``archive``: listed in a category of this archive; ``author``: an author *name key*
    (see :func:`pith_graph.loader.identifiers.author_name_key`); ``submitted_from`` (inclusive) and
    ``submitted_before`` (exclusive): ISO 8601 UTC texts compared as text; ``license``:
    exact; ``title_terms``: every word (see :func:`search_terms`) is in the title;
    ``latest_versions``: only the newest version of its source: no paper with its ``sourceKind`` and
    ``sourceId`` has a greater :func:`version_key` (the paper ``paper(id:)`` answers for the
    arXiv id without a version); ``categories``: listed in at least one of these codes,
    ``exclude_categories``: in none of them (primary or cross-list, as ``category``; each
    sorted and without repeats; empty: no condition); ``all_authors``: by every one of these
    author name keys (since 0.9.5), two or more, sorted and without repeats, ``author`` then
    ``None`` (one required author is ``author`` alone: :func:`~pith_graph.api.inputs.to_filter`
    keeps a filter in that one form, so equal listings are equal filters).
    """

    category: str | None = None
    archive: str | None = None
    author: str | None = None
    submitted_from: str | None = None
    submitted_before: str | None = None
    license: str | None = None
    title_terms: tuple[str, ...] = ()
    #: Left out of ``repr``: a search's cursor fingerprint (:func:`pith_graph.api.search.fingerprint`)
    #: of a filter without it stays what it was before 0.9.0.
    latest_versions: bool = field(default=False, repr=False)
    #: Left out of ``repr`` too (since 0.9.1): the fingerprint names them only when given.
    categories: tuple[str, ...] = field(default=(), repr=False)
    exclude_categories: tuple[str, ...] = field(default=(), repr=False)
    #: Left out of ``repr`` too (since 0.9.5), as the lists of codes.
    all_authors: tuple[str, ...] = field(default=(), repr=False)

    def admits(self, paper: PaperRow) -> bool:
        """The conditions on the paper's own properties (not category, author or title)."""
        if self.submitted_from is not None and paper.submitted_at < self.submitted_from:
            return False
        if self.submitted_before is not None and paper.submitted_at >= self.submitted_before:
            return False
        return self.license is None or paper.license == self.license


@dataclass(frozen=True, slots=True)
class AuthorRecord:
    """An author; ``paper_count`` is ``None`` when the call was asked not to count (``counts=False``)."""

    name_key: str
    name: str
    paper_count: int | None


@dataclass(frozen=True, slots=True)
class NameFormRecord:
    """One way an author's papers spell it, and how many of them do."""

    name: str
    paper_count: int


@dataclass(frozen=True, slots=True)
class AuthorPage:
    """A page of a paper's authors (by name, then name key) and how many the paper has."""

    authors: tuple[AuthorRecord, ...]
    total: int


@dataclass(frozen=True, slots=True)
class CategoryRecord:
    """A category; ``paper_count`` is ``None`` when the call was asked not to count."""

    code: str
    archive: str
    paper_count: int | None


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
    """A signer; ``paper_count`` is ``None`` when the call was asked not to count."""

    signer_id: str
    signer_type: str
    key_ids: tuple[str, ...]
    paper_count: int | None


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


def category_rank(item: CategoryCount) -> tuple[int, str]:
    """Where a counted category ranks: most papers first, then by code."""
    return (-item.count, item.category.code)


_T = TypeVar("_T")


def ranked_after(ranking: Sequence[_T], rank: Callable[[_T], tuple[int, str]], after: str | None) -> list[_T]:
    """The items of a ``ranking`` (ordered by ``rank``: a negated count, then a key) after the
    item whose key is ``after``; none when no item has that key, which ranks after all (it
    counts 0). ``after`` None: the whole ranking."""
    if after is None:
        return list(ranking)
    at = next((rank(item) for item in ranking if rank(item)[1] == after), (0, after))
    return [item for item in ranking if rank(item) > at] if at[0] else []


@dataclass(frozen=True, slots=True)
class RelatedPaper:
    paper: PaperRow
    shared_authors: int


@dataclass(frozen=True, slots=True)
class PathStep:
    """One hop of a collaboration path: two authors named on one paper."""

    source: AuthorRecord
    paper: PaperRow
    target: AuthorRecord
