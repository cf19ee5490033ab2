"""A page of a paper's authors from the whole list, in the order both readers keep (see
:mod:`pith_graph.api.author_pages` for what ``after`` means): the in-memory reader's paging,
which Neo4j's ``READ_AUTHOR_PAGES`` does in Cypher."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from pith_graph.api.reads.records import AuthorPage, AuthorRecord

__all__ = ["author_order", "author_page", "unknown_position"]


def author_order(author: AuthorRecord) -> tuple[str, str]:
    """The sort key of a paper's authors: name, then name key."""
    return author.name, author.name_key


def unknown_position(after: str) -> str:
    """Where an ``after`` that names no author stands: as an author named like the key, cut
    before its first character above U+D7FF (Neo4j compares a stored string with a parameter
    by UTF-16 code unit, which orders those apart from code points; below, the orders agree).
    So a page after it never skips an author, and both readers agree.

    >>> unknown_position("zoë smith"), unknown_position("ann \U0001d49c"), unknown_position("\uff41")
    ('zoë smith', 'ann ', '')
    """
    for at, char in enumerate(after):
        if char > "\ud7ff":
            return after[:at]
    return after


def _start(authors: Sequence[AuthorRecord], after: str, known: AuthorRecord | None) -> int:
    """Where the authors after ``after`` begin in ``authors`` (see :func:`author_page`)."""
    if known is not None:
        position = (known.name, known.name_key)
    else:
        anchor = unknown_position(after)
        position = (anchor, anchor)
    return bisect_right(authors, position, key=author_order)


def author_page(
    authors: Sequence[AuthorRecord], first: int, after: str | None = None, known: AuthorRecord | None = None
) -> AuthorPage:
    """The first ``first`` of ``authors`` (a paper's, in their order) after the author
    whose name key is ``after`` (``None``: from the first), with how many there are;
    ``known``: the author named ``after`` as the graph has it (``None``: no such author:
    then :func:`unknown_position`).

    >>> ann, bo = AuthorRecord("ann lee", "Ann Lee", 1), AuthorRecord("bo", "Bo", 1)
    >>> [a.name for a in author_page([ann, bo], 5, "ann lee", ann).authors]
    ['Bo']
    >>> [a.name for a in author_page([ann, bo], 5, "bea", AuthorRecord("bea", "Bea", 1)).authors]
    ['Bo']
    >>> author_page([ann, bo], 5, "bo").authors, author_page([ann, bo], 1).total
    ((), 2)
    """
    start = 0 if after is None else _start(authors, after, known)
    return AuthorPage(tuple(authors[start : start + first]), len(authors))
