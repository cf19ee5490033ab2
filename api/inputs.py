"""Arguments as the reader needs them, validated: texts, dates, the ``PaperFilter`` input, and
which papers an identifier answers with. Shared by the resolvers and the execution plans
(:mod:`pith_graph.api.plan`), so both refuse the same input with the same error."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import strawberry

from pith_graph.api.author_pages import longer_than_keys, too_long
from pith_graph.api.reads.records import PaperFilter, of_best_signer, version_key
from pith_graph.api.reads.words import search_terms
from pith_graph.errors import BadUserInput, LimitExceeded, with_article
from pith_graph.loader.format import utc_text
from pith_graph.loader.identifiers import author_name_key
from pith_graph.schema.database import MAX_INDEXED_BYTES, indexed_bytes
from pith_graph.schema.rows import PaperRow

__all__ = [
    "KEY_LIMIT",
    "MAX_FILTER_AUTHORS",
    "MAX_FILTER_CATEGORIES",
    "MAX_TEXT_LENGTH",
    "NAME_LIMIT",
    "TEXT_LIMIT",
    "PaperFilterInput",
    "author_key",
    "filter_from_arguments",
    "instant",
    "key_text",
    "named_by_keys",
    "named_papers",
    "text",
    "to_filter",
    "words",
]

MAX_TEXT_LENGTH = 500
#: The most codes ``filter.categories`` and ``filter.excludeCategories`` may each hold, repeats
#: counted (since 0.9.1): more is ``LIMIT_EXCEEDED``, as more ids than ``nodes(ids:)`` takes.
MAX_FILTER_CATEGORIES = 50
#: The most names ``filter.allAuthors`` may hold, repeats counted (since 0.9.5): more is
#: ``LIMIT_EXCEEDED``, as more codes than :data:`MAX_FILTER_CATEGORIES`.
MAX_FILTER_AUTHORS = 10
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
#: How many characters of a name :func:`_key_surely_too_long` makes a key of at a time, and
#: how many characters more than its part of the whole key one may hold (a letter and three
#: marks compose into one at most: U+1F82), and so how many bytes of UTF-8 (4 a character).
_CHUNK, _SEAM = 256, 3
_SEAM_BYTES = 4 * _SEAM

#: What the descriptions of text arguments say of their length (since 0.9.3).
KEY_LIMIT = f"At most {MAX_INDEXED_BYTES:,} bytes of UTF-8, as the graph's keys (since 0.9.3)."
NAME_LIMIT = f"Its name key holds at most {MAX_INDEXED_BYTES:,} bytes of UTF-8 (since 0.9.3)."
TEXT_LIMIT = f"At most {MAX_TEXT_LENGTH} characters."


def _codes_field(which: str, unset: str) -> Any:
    """A filter's list of category codes (since 0.9.1); ``unset``: what means no condition."""
    return strawberry.field(
        default=None,
        description=f"Listed in {which} of the categories with these codes (primary or cross-list), "
        f'e.g. ["cs.LG", "stat.ML"]: at most {MAX_FILTER_CATEGORIES} codes, repeats ignored. {unset}: '
        f"no condition (since 0.9.1). Each code: {KEY_LIMIT[0].lower()}{KEY_LIMIT[1:]}",
    )


@strawberry.input(name="PaperFilter", description="Which papers to list; every field given must match.")
class PaperFilterInput:
    category: str | None = strawberry.field(
        default=None,
        description=f"Listed in the category with this code (primary or cross-list), e.g. cs.LG. {KEY_LIMIT}",
    )
    archive: str | None = strawberry.field(
        default=None, description=f"Listed in a category of this archive, e.g. cs. {KEY_LIMIT}"
    )
    author: str | None = strawberry.field(
        default=None,
        description=f"By this author (matched by name key: case and spacing ignored). {NAME_LIMIT}",
    )
    submitted_from: str | None = strawberry.field(
        default=None, description="Submitted at or after this ISO 8601 date or UTC date-time."
    )
    submitted_before: str | None = strawberry.field(
        default=None, description="Submitted before this ISO 8601 date or UTC date-time."
    )
    license: str | None = strawberry.field(default=None, description=f"Exactly this license URL. {KEY_LIMIT}")
    title: str | None = strawberry.field(
        default=None, description=f"Title holds every word of this text (as search does). {TEXT_LIMIT}"
    )
    latest_versions: bool | None = strawberry.field(
        default=False,
        description="Only the newest version of each arXiv id, the one paper(id:) answers for the id "
        "without a version: no paper of the id has a greater sourceVersion (then builtAt, then "
        "pithNumber). False or null: every version (since 0.9.0).",
    )
    categories: list[str] | None = _codes_field(
        "at least one",
        "With category, both must hold. An empty list is refused (it would match nothing); null",
    )
    exclude_categories: list[str] | None = _codes_field("none", "An empty list or null")
    all_authors: list[str] | None = strawberry.field(
        default=None,
        description="By every one of these authors (matched by name key, as author: case and spacing "
        f'ignored), e.g. ["Ann Lee", "Bo Chen"]: papers they wrote together. At most {MAX_FILTER_AUTHORS} '
        "names, repeats ignored; with author, that author is one more required. An unknown name "
        "matches no paper. An empty list is refused (it would be ambiguous); null: no condition "
        f"(since 0.9.5). Each name: {NAME_LIMIT[0].lower()}{NAME_LIMIT[1:]}",
    )


def _stripped(value: str, what: str) -> str:
    """``value`` stripped; :class:`BadUserInput` when empty. Only a filter's fields
    (``filter.…``) may be left out; the other text arguments are required (``String!``)."""
    value = value.strip()
    if not value:
        optional = ", or leave it out" if what.startswith("filter.") else ""
        raise BadUserInput(
            f"{what} is empty.", f"Pass {with_article(what)} with something in it{optional}.", argument=what
        )
    return value


def text(value: str, what: str) -> str:
    """Free text (search words, ``filter.title``, a date), stripped; :class:`BadUserInput` when
    empty or longer than :data:`MAX_TEXT_LENGTH` characters. It names no key, so nothing the
    graph holds needs more: a search keeps its first words (``MAX_SEARCH_TERMS``), a date is a
    few characters (so is ``authors(prefix:)``, typed words: its own check in
    :mod:`~pith_graph.api.lookups`). Arguments that name a key take :func:`key_text` or
    :func:`author_key`, up to 4,096 bytes of UTF-8 since 0.9.3."""
    value = _stripped(value, what)
    if len(value) > MAX_TEXT_LENGTH:
        raise BadUserInput(
            f"{what} is longer than {MAX_TEXT_LENGTH} characters.",
            f"Shorten it to {MAX_TEXT_LENGTH} characters.",
            argument=what,
        )
    return value


def key_text(value: str, what: str) -> str:
    """An argument that names a key the graph holds (a category code, an archive, a license
    URL, a signer id), stripped; :class:`BadUserInput` when empty or longer than any key the
    loader takes: :data:`~pith_graph.schema.database.MAX_INDEXED_BYTES` bytes of UTF-8 (what
    Neo4j indexes; :func:`~pith_graph.api.author_pages.too_long`, as ``after``). Since 0.9.3:
    it was :func:`text`'s 500 characters, so a key the API listed could not be looked up."""
    value = _stripped(value, what)
    if too_long(value):
        raise BadUserInput(
            longer_than_keys(what),
            f"Pass {with_article(what)} of at most {MAX_INDEXED_BYTES} bytes of UTF-8: "
            "no key, code, license or signer id the graph holds is longer.",
            argument=what,
        )
    return value


def _key_surely_too_long(name: str) -> bool:
    """Whether the name key of ``name`` surely holds more than
    :data:`~pith_graph.schema.database.MAX_INDEXED_BYTES` bytes, told by making the keys of
    :data:`_CHUNK` characters at a time and stopping once they are too long together: NFKC
    writes up to 18 characters for one (U+FDFA), so making the key of a 64 KB name whole took
    60 ms of the event loop. Each chunk's key holds at most :data:`_SEAM` characters more than
    its part of the whole key (marks or Hangul jamo a chunk starts with that compose with the
    previous chunk's last letter; spacing collapses the same or more), so at most
    :data:`_SEAM_BYTES` bytes. Counted in bytes, as the bound is (a review found characters let
    a letter and 4,140 combining marks, an 8,280-byte key, through to be made whole: NFKC sorts
    a run of marks in quadratic time, 56 ms a name; bytes refuse it after 9 chunks, and a name
    whose key fits holds at most some 2,050 two-byte marks: 6 ms)."""
    total = 0
    for start in range(0, len(name), _CHUNK) if len(name) > _CHUNK else ():
        total += indexed_bytes(author_name_key(name[start : start + _CHUNK])) - _SEAM_BYTES
        if total > MAX_INDEXED_BYTES:
            return True
    return False


def author_key(value: str, what: str) -> str:
    """The name key of the author name ``value`` (:func:`author_name_key`: NFKC, case-folded,
    spacing collapsed); :class:`BadUserInput` when the name is empty or its key is longer than
    any key the graph holds, as :func:`key_text` (no author has such a key: refused rather than
    answered as unknown, so a caller learns the name can never match). The bound is on the
    key, what the graph holds, not on the name: full-width letters or runs of spaces make a
    name longer than its key (the name is bounded by the request: ``max_body_bytes`` and the
    parser's source length). Since 0.9.3; before, names of more than 500 characters."""
    name = _stripped(value, what)
    if _key_surely_too_long(name) or too_long(key := author_name_key(name)):
        raise BadUserInput(
            longer_than_keys(f"{what}'s name key"),
            f"Pass a name whose name key (NFKC, case-folded, spacing collapsed: Author.nameKey) holds "
            f"at most {MAX_INDEXED_BYTES} bytes of UTF-8: no author's is longer.",
            argument=what,
        )
    return key


def instant(value: str, what: str) -> str:
    """An ISO 8601 date or date-time as the UTC text ``YYYY-MM-DDTHH:MM:SSZ``;
    :class:`BadUserInput` when it is none, or is not in the years 1 to 9999 once in UTC.

    >>> instant("2020-01-31", "from")
    '2020-01-31T00:00:00Z'
    >>> instant("0999-01-01T02:00:00+01:00", "from")
    '0999-01-01T01:00:00Z'
    """
    given = text(value, what)
    try:
        if _DATE.fullmatch(given):
            moment = datetime.fromisoformat(given + "T00:00:00+00:00")
        else:
            moment = datetime.fromisoformat(given)
    except ValueError as err:
        raise BadUserInput(
            f"{what} is not an ISO 8601 date or date-time: {given!r}.",
            "Write e.g. 2020-01-31 or 2020-01-31T12:00:00Z.",
            argument=what,
        ) from err
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return utc_text(moment)
    except OverflowError as err:  # 9999-12-31T23:59:59-01:00 is in the year 10000 in UTC
        raise BadUserInput(
            f"{what} is outside the years 1 to 9999 in UTC: {given!r}.",
            "Write a date-time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.",
            argument=what,
        ) from err


def words(value: str, what: str) -> tuple[str, ...]:
    """The search words of ``value``; :class:`BadUserInput` when it has none."""
    terms = search_terms(text(value, what))
    if not terms:
        raise BadUserInput(
            f"{what} has no words to search for.",
            "Pass letters or digits: punctuation alone is not searched.",
            argument=what,
        )
    return terms


def _codes(given: list[str] | None, name: str, *, empty: bool) -> tuple[str, ...]:
    """The category codes of ``filter.<name>``, each checked as ``filter.category`` is,
    sorted and without repeats; ``empty``: whether an empty list is taken (as no codes).
    :class:`LimitExceeded` over :data:`MAX_FILTER_CATEGORIES` codes."""
    if given is None:
        return ()
    what = f"filter.{name}"
    if len(given) > MAX_FILTER_CATEGORIES:
        raise LimitExceeded(
            f"{what} holds {len(given)} codes; at most {MAX_FILTER_CATEGORIES} are matched at once.",
            f"Pass at most {MAX_FILTER_CATEGORIES} category codes (an archive: filter.archive).",
            argument=what,
        )
    if not given and not empty:
        raise BadUserInput(
            f"{what} is an empty list: it would match no paper.",
            f"Pass at least one category code, or leave {what} out (or null) to list papers of any.",
            argument=what,
        )
    return tuple(sorted({key_text(code, f"{what}[{index}]") for index, code in enumerate(given)}))


def _author_keys(given: PaperFilterInput) -> tuple[str | None, tuple[str, ...]]:
    """``filter.author`` and ``filter.allAuthors`` as the name keys every paper must have an
    author of, in :class:`PaperFilter`'s one form: one key as ``author`` (so
    ``allAuthors: ["x"]`` is ``author: "x"``), two or more sorted as ``all_authors``.
    :class:`LimitExceeded` over :data:`MAX_FILTER_AUTHORS` names (repeats counted, as the
    lists of codes), :class:`BadUserInput` for an empty list (which is it: nobody required,
    or no paper?) and for each name as ``filter.author``."""
    keys = {author_key(given.author, "filter.author")} if given.author is not None else set()
    names, what = given.all_authors, "filter.allAuthors"
    if names is not None:
        if len(names) > MAX_FILTER_AUTHORS:
            raise LimitExceeded(
                f"{what} holds {len(names)} names; at most {MAX_FILTER_AUTHORS} are matched at once.",
                f"Pass at most {MAX_FILTER_AUTHORS} author names.",
                argument=what,
            )
        if not names:
            raise BadUserInput(
                f"{what} is an empty list: it is unclear whether it asks for no author or no paper.",
                f"Pass at least one author name, or leave {what} out (or null) to list papers of anyone.",
                argument=what,
            )
        keys.update(author_key(name, f"{what}[{index}]") for index, name in enumerate(names))
    if len(keys) < 2:
        return (next(iter(keys)) if keys else None), ()
    return None, tuple(sorted(keys))


def to_filter(given: PaperFilterInput | None) -> PaperFilter:
    """The reader's filter for the GraphQL input, validated."""
    if given is None:
        return PaperFilter()
    category = key_text(given.category, "filter.category") if given.category is not None else None
    archive = key_text(given.archive, "filter.archive") if given.archive is not None else None
    author, all_authors = _author_keys(given)  # category and archive checked first, as before
    return PaperFilter(
        category=category,
        archive=archive,
        author=author,
        submitted_from=instant(given.submitted_from, "filter.submittedFrom")
        if given.submitted_from is not None
        else None,
        submitted_before=instant(given.submitted_before, "filter.submittedBefore")
        if given.submitted_before is not None
        else None,
        license=key_text(given.license, "filter.license") if given.license is not None else None,
        title_terms=words(given.title, "filter.title") if given.title is not None else (),
        latest_versions=bool(given.latest_versions),
        categories=_codes(given.categories, "categories", empty=False),
        exclude_categories=_codes(given.exclude_categories, "excludeCategories", empty=True),
        all_authors=all_authors,
    )


_FILTER_FIELDS = {
    "category": "category",
    "archive": "archive",
    "author": "author",
    "submittedFrom": "submitted_from",
    "submittedBefore": "submitted_before",
    "license": "license",
    "title": "title",
    "latestVersions": "latest_versions",
    "categories": "categories",
    "excludeCategories": "exclude_categories",
    "allAuthors": "all_authors",
}


def filter_from_arguments(given: Mapping[str, Any] | None) -> PaperFilter:
    """:func:`to_filter` of the input object as graphql-core coerces it (GraphQL names)."""
    if given is None:
        return PaperFilter()
    return to_filter(PaperFilterInput(**{_FILTER_FIELDS[name]: value for name, value in given.items()}))


def named_papers(papers: Iterable[PaperRow], rank: Callable[[str], int]) -> list[PaperRow]:
    """What an identifier answers with, of ``papers`` (in any order; a paper given twice
    counts once): only its highest-ranked signer's (``rank`` of the bundle's key; 0 is the
    highest), newest version first (:func:`~pith_graph.api.reads.records.version_key`)."""
    unique = {paper.pith_number: paper for paper in papers}
    return of_best_signer(sorted(unique.values(), key=version_key, reverse=True), rank)


def named_by_keys(named: Iterable[Sequence[PaperRow]], rank: Callable[[str], int]) -> list[PaperRow]:
    """:func:`named_papers` of the papers an identifier's keys name, each key's newest
    version first as readers answer them
    (:meth:`~pith_graph.api.reads.reader.GraphReader.papers_by_identifiers`). One key's are
    taken in that order, with one pass for their signers (``rank`` asked once per signer):
    however many versions it names, nothing is sorted; several keys' are merged."""
    runs = [papers for papers in named if papers]
    if len(runs) > 1:
        return named_papers((paper for papers in runs for paper in papers), rank)
    return of_best_signer(list(runs[0]) if runs else [], rank)
