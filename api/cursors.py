"""The cursors of paper listings: the opaque, URL-safe encoding of a
:class:`~pith_graph.api.reads.records.PaperKey` (a keyset position) in a listing's order.

A cursor stays valid while papers are added (and across restarts and workers). Anything this
API could not have issued is refused as ``BAD_USER_INPUT``: other than the canonical encoding
(unpadded base64url, as issued), another version, or a position no paper can have (a
submission time as bundles write it, ``YYYY-MM-DDTHH:MM:SS[.f]Z``, and a pith number of that
year). Every paper listing (``papers``, an author's, a category's, a signer's) has the one
newest-first order, so a cursor of one is a position in each; search cursors are of their own
(:mod:`pith_graph.api.search`). Oldest-first listings (``orderBy: OLDEST``, since 0.9.1; the
nested lists since 0.9.3) hand out cursors of their own prefix (``o1|``, where newest-first
ones have ``p1|``, as 0.9.0 issued them): a cursor of one order passed to the other is
refused, not paged on. Cursors carry no MAC: one a client writes well-formed is a position it
could reach by paging anyway, and it reveals nothing (its answer is the listing's papers after
it, as ``submittedBefore`` would list them).
"""

from __future__ import annotations

import base64
import binascii
import re

from pith_graph.api.reads.records import ListingOrder, PaperKey
from pith_graph.errors import BadUserInput
from pith_graph.schema.rows import PaperRow

__all__ = ["SEARCH_PREFIX", "cursor_of", "decode_cursor", "encode_cursor", "is_place"]

#: order -> the prefix of its cursors.
_PREFIXES: dict[ListingOrder, str] = {"newest": "p1|", "oldest": "o1|"}
#: The prefix of search cursors (:mod:`pith_graph.api.search`), and how they start encoded.
SEARCH_PREFIX = "s1"
_URLSAFE = bytes.maketrans(b"+/", b"-_")
_MAX_CURSOR_LENGTH = 200
#: A paper's position as the loader lets papers have it: its submission time (the bundles'
#: ISO 8601 UTC text, ``loader.shape``) and its pith number, of the same year. Shape only, not
#: the calendar: a database loaded before 0.8.2 may hold a paper at 2019-02-29, and ordering
#: is by text (its cursors page on).
_KEY = r"([0-9]{4})-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?Z\|pith:\1:[A-Z2-7]{26}"
_POSITION = re.compile(r"[po]1\|" + _KEY)
_PLACE = re.compile(_KEY)


def is_place(submitted_at: str, pith_number: str) -> bool:
    """Whether a paper can have this place in a listing (what a cursor may name).

    >>> is_place("2019-07-30T23:20:50Z", "pith:2019:BR75OIUY7WDYHPO53K7WUNQ4NZ")
    True
    >>> is_place("2019-07-30T23:20:50Z", "pith:2018:BR75OIUY7WDYHPO53K7WUNQ4NZ")
    False
    """
    return _PLACE.fullmatch(f"{submitted_at}|{pith_number}") is not None


def encode_cursor(key: PaperKey, order: ListingOrder = "newest") -> str:
    """The opaque cursor of a keyset position in an ``order``.

    >>> key = PaperKey("2019-07-30T23:20:50Z", "pith:2019:BR75OIUY7WDYHPO53K7WUNQ4NZ")
    >>> _decode(encode_cursor(key)) == ("newest", key)
    True
    >>> _decode(encode_cursor(key, "oldest")) == ("oldest", key)
    True
    >>> _decode("not a cursor") is None
    True
    >>> _decode(base64.b64encode(b"p1|x|y").decode()) is None  # well-formed, but no position
    True
    """
    raw = f"{_PREFIXES[order]}{key.submitted_at}|{key.pith_number}".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def cursor_of(paper: PaperRow, order: ListingOrder = "newest") -> str:
    """The cursor of a paper's place: ``encode_cursor(paper_key(paper), order)``, without the key."""
    raw = f"{_PREFIXES[order]}{paper.submitted_at}|{paper.pith_number}".encode()
    return binascii.b2a_base64(raw, newline=False).translate(_URLSAFE).rstrip(b"=").decode("ascii")


def _decode(cursor: str) -> tuple[ListingOrder, PaperKey] | None:
    if not cursor or len(cursor) > _MAX_CURSOR_LENGTH or not cursor.isascii():
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not _POSITION.fullmatch(raw):
        return None
    order: ListingOrder = "oldest" if raw.startswith(_PREFIXES["oldest"]) else "newest"
    submitted_at, pith_number = raw[len(_PREFIXES[order]) :].split("|")
    key = PaperKey(submitted_at, pith_number)
    return (order, key) if encode_cursor(key, order) == cursor else None  # only the encoding issued


def _of_a_search(cursor: str) -> bool:
    """Whether ``cursor`` has a search cursor's shape: its prefix and six parts
    (:mod:`pith_graph.api.search` checks the rest), not only its first characters.

    >>> _of_a_search(base64.urlsafe_b64encode(b"s1|f|1.0|t|p|3").decode()), _of_a_search("czF8garbage")
    (True, False)
    """
    if len(cursor) > 300 or not cursor.isascii():
        return False
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return raw.startswith(f"{SEARCH_PREFIX}|") and raw.count("|") == 5


def decode_cursor(after: str | None, order: ListingOrder = "newest", name: str = "after") -> PaperKey | None:
    """The keyset position of an ``after`` cursor (or the argument ``name``: ``before``) of a
    listing in ``order``; :class:`BadUserInput` when it is none, or a cursor of the other order."""
    if after is None:
        return None
    found = _decode(after)
    if found is None and _of_a_search(after):  # since 0.9.3: "not issued" misled
        raise BadUserInput(
            f"{name} is a cursor of a search; a listing of papers takes its own cursors.",
            f"Pass {'an endCursor' if name == 'after' else 'a startCursor'} or edge cursor of this "
            "listing (a search's cursors page that search on).",
            argument=name,
        )
    if found is None:
        hint = (
            "Pass an endCursor or edge cursor." if name == "after" else "Pass a startCursor or edge cursor."
        )
        raise BadUserInput(f"{name} is not a cursor this API issued.", hint, argument=name)
    issued, key = found
    if issued != order:
        raise BadUserInput(
            f"{name} is a cursor of a listing {issued} first; this one lists {order} first.",
            f"Page on with the orderBy that handed the cursor out, or start again without {name}.",
            argument=name,
        )
    return key
