"""A paper's authors page by page: ``Paper.authors(first:, after:)``, keyset paging.

Both stores give a paper's authors in one order: by display name, then name key, strings
compared by code point (Python's order: both readers sort in Python, Neo4j's rows too). A
name key is an author's identity and a function of the name, so no two authors of a paper
share a name and the order is total.

``after`` is the name key of the last author a client has; the page is the authors
strictly after that author's position (name, name key), ``first`` of them. The position of
an ``after`` is found whether or not it names an author of the paper:

* an author of the paper: its name there;
* an author of other papers only (one the paper lost since the client's last page): its
  name in the graph (a lookup by name key, one read for all of a level's ``after`` values);
* no author at all: where an author named like the key itself would stand.

So a page never repeats an author of an earlier page nor skips one, as long as the paper's
authors stay the same. Shared by the resolvers and the execution plans, which answer alike.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from pith_graph.api.inputs import MAX_TEXT_LENGTH
from pith_graph.api.reads.records import AuthorRecord
from pith_graph.errors import BadUserInput
from pith_graph.loader.identifiers import author_name_key

__all__ = ["after_key", "authors_after"]

_NAME_KEY = "Pass the nameKey of the last author you have (not its name)."


def after_key(value: str) -> str:
    """``after`` checked to be a possible name key (as the loader makes them: NFKC,
    case-folded, whitespace collapsed, not empty, at most :data:`MAX_TEXT_LENGTH`
    characters as every text argument); :class:`BadUserInput` otherwise.

    >>> after_key("zoë smith")
    'zoë smith'
    >>> after_key("Zoë Smith")
    Traceback (most recent call last):
    ...
    pith_graph.errors.BadUserInput: after is not a name key: 'Zoë Smith'.
    """
    if len(value) > MAX_TEXT_LENGTH:
        raise BadUserInput(f"after is longer than {MAX_TEXT_LENGTH} characters.", _NAME_KEY)
    if not value.strip():
        raise BadUserInput("after is empty.", _NAME_KEY)
    if author_name_key(value) != value:
        raise BadUserInput(f"after is not a name key: {value!r}.", _NAME_KEY)
    return value


def _order(author: AuthorRecord) -> tuple[str, str]:
    return author.name, author.name_key


def authors_after(
    authors: Sequence[AuthorRecord], after: str, known: AuthorRecord | None
) -> list[AuthorRecord]:
    """The ``authors`` (a paper's, in their order) after the author whose name key is
    ``after``; ``known``: that author as the graph has it (``None``: no such author).

    >>> ann, bo = AuthorRecord("ann lee", "Ann Lee", 1), AuthorRecord("bo", "Bo", 1)
    >>> [a.name for a in authors_after([ann, bo], "ann lee", None)]
    ['Bo']
    >>> [a.name for a in authors_after([ann, bo], "bea", AuthorRecord("bea", "Bea", 1))]
    ['Bo']
    >>> [a.name for a in authors_after([ann, bo], "bo", None)]
    []
    """
    name = next((a.name for a in authors if a.name_key == after), None)
    if name is None:
        name = known.name if known is not None else after
    return list(authors[bisect_right(authors, (name, after), key=_order) :])
