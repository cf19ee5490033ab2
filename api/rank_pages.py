"""Ranked lists page by page, since 0.9.2: ``Author.coauthors``, ``Author.categories``,
``Category.topAuthors``, ``Category.coListed`` and ``Paper.relatedPapers`` take
``(first:, after:)``, keyset paging as ``Paper.authors`` does.

A ranked list is ordered by a count, most first, then by the item's key (an author's name
key; a related paper: newest first, then pith number). ``after`` names the last item a
client has, by its key (a name key; a related paper's full pith number, the key
``Paper.pithNumber`` shows and ``paper(id:)`` takes): the server counts that item again
(the papers it shares with the author, the authors it shares with the paper) and the page
is the items strictly after that (count, key) position, ``first`` of them. No opaque cursor:
the key is what the client already shows.

An ``after`` that is not (or no longer) in the list: no author or paper by that key, one
sharing nothing, a version of the paper, the author or paper itself, counts 0, and 0 stands
after every item of the list (each shares at least one), so the page is empty rather than
an error: an unknown key is still a position, as for ``Paper.authors``, and a client walking
a list ends its walk the same way whether the last item it had left the list or not. (The
ranking moves as papers are added, as any ranked list does; a page is consistent with the
graph it was read from.)

Both readers count the ``after`` item in the same read as the page (Neo4j: one more count
over the author's or paper's own papers, nothing per page already seen), so a page N costs
what the first page costs plus that count, whatever N.
"""

from __future__ import annotations

import re
from typing import Annotated

from pith_graph.api.author_pages import TOO_LONG, after_key, too_long
from pith_graph.api.fields import argument
from pith_graph.api.inputs import MAX_TEXT_LENGTH
from pith_graph.api.reads.records import CategoryCount, category_rank, ranked_after
from pith_graph.errors import BadUserInput

__all__ = [
    "AfterCode",
    "AfterKey",
    "AfterPith",
    "after_code",
    "after_pith_number",
    "categories_after",
    "coauthor_after",
]

_AFTER_NAME_KEY = (
    "Since 0.9.2: the nameKey of the last one you have: the page starts after where it ranks "
    "(one not in the list ranks after all: an empty page); null: from the first."
)
_AFTER_PITH_NUMBER = (
    "Since 0.9.2: the pithNumber of the last related paper you have: the page starts after where "
    "it ranks (a paper not in the list ranks after all: an empty page); null: from the first."
)
#: ``after`` of a ranked list of authors, and of ``relatedPapers``.
AfterKey = Annotated[str | None, argument(_AFTER_NAME_KEY)]
AfterPith = Annotated[str | None, argument(_AFTER_PITH_NUMBER)]
_AFTER_CODE = (
    "Since 0.9.2: the code of the last category you have: the page starts after where it ranks "
    "(one not in the list ranks after all: an empty page); null: from the first."
)
AfterCode = Annotated[str | None, argument(_AFTER_CODE)]

_PITH = re.compile(r"pith:[0-9]{4}:[A-Z2-7]{26}")
_PITH_HINT = "Pass the pithNumber of the last related paper you have (pith:YYYY:<26 base32 characters>)."


def coauthor_after(value: str | None) -> str | None:
    """``after`` of a list of authors: a name key (see :func:`~pith_graph.api.author_pages.after_key`)."""
    return None if value is None else after_key(value)


def after_pith_number(value: str | None) -> str | None:
    """``after`` of ``relatedPapers``: a full pith number, as ``Paper.pithNumber`` shows it.

    >>> after_pith_number("pith:2024:AAAAAAAAAAAAAAAAAAAAAAAAAA")
    'pith:2024:AAAAAAAAAAAAAAAAAAAAAAAAAA'
    >>> after_pith_number("2402.10000")
    Traceback (most recent call last):
    ...
    pith_graph.errors.BadUserInput: after is not a pith number: '2402.10000'.
    """
    if value is None:
        return None
    if _PITH.fullmatch(value) is None:
        shown = value if len(value) <= MAX_TEXT_LENGTH else value[:40] + "..."
        raise BadUserInput(f"after is not a pith number: {shown!r}.", _PITH_HINT, argument="after")
    return value


def after_code(value: str | None) -> str | None:
    """``after`` of a list of categories: a category code (any text: one no category has is
    a position too, after all); not empty, not longer than any code the graph holds."""
    if value is not None and not value.strip():
        raise BadUserInput(
            "after is empty.", "Pass the code of the last category you have.", argument="after"
        )
    if value is not None and too_long(value):
        raise BadUserInput(TOO_LONG, "Pass a category code.", argument="after")
    return value


def categories_after(found: list[CategoryCount], after: str | None) -> list[CategoryCount]:
    """``Author.categories`` (whole lists, from both readers) after the category ``after``."""
    return found if after is None else ranked_after(found, category_rank, after)
