"""A paper's authors page by page: ``Paper.authors(first:, after:)``, keyset paging.

Both stores give a paper's authors in one order: by display name, then name key, strings
compared by code point (Python's order, and Neo4j's between stored strings, so Cypher can
sort and cut a page itself). A name key is an author's identity and a function of the
name, so no two authors of a paper share a name and the order is total.

``after`` is the name key of the last author a client has; the page is the authors
strictly after that author's position (name, name key), ``first`` of them. The position of
an ``after`` is found whether or not it names an author of the paper:

* an author (of the paper, or of other papers only: one the paper lost since the client's
  last page): its name in the graph (a lookup by name key);
* no author at all: where an author named like the key itself would stand.

So a page never repeats an author of an earlier page nor skips one, as long as the paper's
authors stay the same. The in-memory reader pages with
:func:`~pith_graph.api.reads.author_page.author_page`; Neo4j's reads do the same in Cypher
(``READ_AUTHOR_PAGES``), so neither reads more of a paper's authors than a page, however
many it has. Here: what ``after`` may be.
"""

from __future__ import annotations

from pith_graph.errors import BadUserInput
from pith_graph.loader.identifiers import author_name_key
from pith_graph.schema.database import MAX_INDEXED_BYTES, indexed_bytes

__all__ = ["AUTHORS_ON", "TOO_LONG", "after_key", "longer_than_keys", "too_long"]

#: How ``Paper.authors`` pages on: the hint of a ``first`` over the cap (:func:`~pith_graph.api.limits.page_size`).
AUTHORS_ON = "; a page of authors goes on with the nameKey of its last author as after"

_NAME_KEY = "Pass the nameKey of the last author you have (not its name)."


def longer_than_keys(what: str) -> str:
    """The refusal of an argument ``what`` longer than any key or code the graph can hold
    (:func:`too_long`): ``after`` since 0.9.2, every argument that names a key since 0.9.3
    (:func:`~pith_graph.api.inputs.key_text`)."""
    return f"{what} is longer than any key the graph holds ({MAX_INDEXED_BYTES} bytes of UTF-8)."


#: The refusal of an ``after`` longer than any key or code the graph can hold.
TOO_LONG = longer_than_keys("after")


def too_long(value: str) -> bool:
    """Whether ``value`` is longer than any name key or code the loader takes (Neo4j
    indexes at most :data:`~pith_graph.schema.database.MAX_INDEXED_BYTES` bytes)."""
    return len(value) > MAX_INDEXED_BYTES or indexed_bytes(value) > MAX_INDEXED_BYTES


def after_key(value: str) -> str:
    """``after`` checked to be a possible name key (as the loader makes them: NFKC,
    case-folded, whitespace collapsed, not empty, no longer than any key the graph holds:
    :data:`~pith_graph.schema.database.MAX_INDEXED_BYTES` bytes of UTF-8, as the loader
    takes them; 500 characters, every text argument's cap, before 0.9.2: a longer key the
    graph listed could not be paged past); :class:`BadUserInput` otherwise.

    >>> after_key("zoë smith")
    'zoë smith'
    >>> after_key("Zoë Smith")
    Traceback (most recent call last):
    ...
    pith_graph.errors.BadUserInput: after is not a name key: 'Zoë Smith'.
    """
    if too_long(value):
        raise BadUserInput(TOO_LONG, _NAME_KEY, argument="after")
    if not value.strip():
        raise BadUserInput("after is empty.", _NAME_KEY, argument="after")
    if author_name_key(value) != value:
        raise BadUserInput(f"after is not a name key: {value!r}.", _NAME_KEY, argument="after")
    return value
