"""Identifiers: pith numbers, alias prefixes, author name keys and pasted-id parsing.

``pith_number`` = ``"pith:" + YYYY + ":" + B`` where ``B`` is the first 26 characters of the
base32 of the raw ``canonical_sha256`` bytes and ``YYYY`` the submission year;
``short_pith_number`` = ``"pith:" + B[:8]``; ``pith_short_N`` aliases are ``B[:N]``.

An arXiv source id must be spelled as arXiv spells it (:func:`canonical_arxiv_id`): the update
rules compare source ids byte for byte, so one paper must have one spelling. arXiv ids are
ASCII: Unicode digits (``٢٦٠١``, ``𝟸𝟼𝟶𝟷``) and letters that fold to ASCII (KELVIN SIGN) name
no arXiv id, or they would be further spellings of one.

A DOI is one identifier in any ASCII letter case (the DOI Handbook: DOI names are
case-insensitive for ASCII characters, and only for those): :func:`alias_value` stores it in
lower case, so its spellings are one ``Alias`` node, and the API folds a pasted DOI the same way.
"""

from __future__ import annotations

import re
import unicodedata

from pith_graph.loader.canon import b32_of_digest

__all__ = [
    "ARXIV_ID_FORMS",
    "PITH_B32_LENGTH",
    "alias_value",
    "author_display_name",
    "author_name_key",
    "canonical_arxiv_id",
    "collapse_whitespace",
    "doi_key",
    "pith_base32",
    "pith_number_for",
    "short_pith_number_for",
    "split_authors",
    "title_key",
]

PITH_B32_LENGTH = 26


def collapse_whitespace(text: str) -> str:
    """Runs of whitespace as one space, ends trimmed.

    The same as a regex substitution of ``\\s+`` then ``strip()`` (``str.split`` and the
    regex's ``\\s`` agree on every code point, a test checks), four times faster.

    >>> collapse_whitespace("  Zoë \\u00a0 Smith\\n")
    'Zoë Smith'
    """
    return " ".join(text.split())


def pith_base32(canonical_sha256: str) -> str:
    """The 26-character base32 body of a pith number.

    >>> pith_base32("0c7fd72298fd8783bddddabf6a361c6e7ae24b3654f11ff6a67888be65f2523c")
    'BR75OIUY7WDYHPO53K7WUNQ4NZ'
    """
    return b32_of_digest(canonical_sha256, PITH_B32_LENGTH)


def pith_number_for(canonical_sha256: str, submitted_at: str) -> str:
    """``pith:YYYY:B`` for a canonical digest and an ISO 8601 submission time.

    >>> pith_number_for(
    ...     "0c7fd72298fd8783bddddabf6a361c6e7ae24b3654f11ff6a67888be65f2523c",
    ...     "2019-07-30T23:20:50Z")
    'pith:2019:BR75OIUY7WDYHPO53K7WUNQ4NZ'
    """
    return f"pith:{submitted_at[:4]}:{pith_base32(canonical_sha256)}"


def short_pith_number_for(canonical_sha256: str) -> str:
    """``pith:`` + the first 8 characters of the base32 body."""
    return f"pith:{pith_base32(canonical_sha256)[:8]}"


#: arXiv's spellings of its ids, for messages.
ARXIV_ID_FORMS = (
    "YYMM.NNNN up to 1412, YYMM.NNNNN from 1501, or before April 2007 archive/YYMMNNN "
    "in lower case without a subject class, in ASCII only"
)
_ARXIV_PREFIX = "arxiv:"
# ASCII classes only: ``\d`` would accept every Unicode digit (``2601.0000١``).
_ARXIV_VERSION = re.compile(r"v[0-9]+")
_ARXIV_NEW = re.compile(r"([0-9]{2})([0-9]{2})\.([0-9]{4,5})")
_ARXIV_OLD = re.compile(r"([a-z]+(?:-[a-z]+)?)(?:\.[a-z]{2})?/([0-9]{2})([0-9]{2})([0-9]{3})")
#: What ``bytes.strip()`` removes: the ASCII whitespace around a pasted id.
_ASCII_BLANKS = " \t\n\r\x0b\x0c"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def canonical_arxiv_id(text: str) -> str | None:
    """arXiv's own spelling of an arXiv id, or ``None`` when ``text`` names no arXiv id.

    arXiv's identifier scheme (info.arxiv.org/help/arxiv_identifier_for_services): since
    April 2007 ``YYMM.NNNN`` (four digits up to ``1412``, five from ``1501``); before,
    ``archive/YYMMNNN`` with the archive in lower case (``hep-th/9901001``). The subject class
    some old ids are cited with (``math.GT/0309136``) is not part of the identifier: arXiv's
    preferred form, its DOIs (``10.48550/arXiv.math/0309136``), OAI-PMH and API all leave it
    out, and ``math.GT/0309136`` and ``math/0309136`` are one paper. So every spelling of one
    paper has one canonical form: letter case, the subject class, an ``arXiv:`` prefix and a
    version suffix are dropped; a digit count, month or style arXiv never issues (a new-style
    id before 0704, an old-style one after 0703 or before 9108) makes it no id, and
    so does any character outside ASCII (digits ``0-9`` only, letters folded as ASCII only,
    only ASCII whitespace trimmed).

    >>> canonical_arxiv_id("1907.13257"), canonical_arxiv_id("HEP-TH/9901001")
    ('1907.13257', 'hep-th/9901001')
    >>> canonical_arxiv_id("math.GT/0309136"), canonical_arxiv_id("arXiv:0706.0001v2")
    ('math/0309136', '0706.0001')
    >>> canonical_arxiv_id("0706.00001") is None, canonical_arxiv_id("2401.0001") is None
    (True, True)
    >>> canonical_arxiv_id("2601.0000\\u0661") is None, canonical_arxiv_id("\\u00a02601.00001") is None
    (True, True)
    """
    body = text.strip(_ASCII_BLANKS)
    if not body.isascii():
        return None
    body = body.translate(_ASCII_LOWER).removeprefix(_ARXIV_PREFIX)
    if (version := _ARXIV_VERSION.search(body)) is not None and version.end() == len(body):
        body = body[: version.start()]
    if (new := _ARXIV_NEW.fullmatch(body)) is not None:
        yymm, number = new[1] + new[2], new[3]
        four_digits = "0704" <= yymm <= "1412"
        if yymm < "0704" or not "01" <= new[2] <= "12" or len(number) != (4 if four_digits else 5):
            return None  # before April 2007 every id is of the old style
        return f"{yymm}.{number}"
    if (old := _ARXIV_OLD.fullmatch(body)) is not None:
        if not "01" <= old[3] <= "12" or "0703" < old[2] + old[3] < "9108":
            return None  # issued from August 1991 to March 2007 only
        return f"{old[1]}/{old[2]}{old[3]}{old[4]}"
    return None


def doi_key(doi: str) -> str:
    """A DOI as stored and looked up: ASCII letters in lower case, every other character kept
    (the DOI Handbook folds ASCII only: DOIs differing in a non-ASCII letter's case differ).

    >>> doi_key("10.1103/PhysRevLett.116.061102"), doi_key("10.1000/ÄBC")
    ('10.1103/physrevlett.116.061102', '10.1000/Äbc')
    """
    return doi.translate(_ASCII_LOWER)


def alias_value(kind: str, value: str) -> str:
    """The value an alias of ``kind`` is stored under: a ``doi`` folded by :func:`doi_key`,
    any other kind as written (verification fixes their spellings).

    >>> alias_value("doi", "10.48550/arXiv.1907.13257"), alias_value("pith_short_8", "BR75OIUY")
    ('10.48550/arxiv.1907.13257', 'BR75OIUY')
    """
    return doi_key(value) if kind == "doi" else value


def author_name_key(name: str) -> str:
    """The identity of an author name: NFKC, case-folded, whitespace collapsed and trimmed.

    >>> author_name_key("  Zoe\\u0308   Smith ") == author_name_key("ZOË SMITH")
    True
    """
    folded = unicodedata.normalize("NFKC", name).casefold()
    # casefold can produce sequences NFKC would compose differently; normalise again.
    folded = unicodedata.normalize("NFKC", folded)
    return collapse_whitespace(folded)


def author_display_name(name: str) -> str:
    """A display form of a name: NFC, whitespace collapsed and trimmed."""
    return collapse_whitespace(unicodedata.normalize("NFC", name))


def split_authors(authors_text: str) -> list[tuple[str, str]]:
    """Split ``authors_text`` into ``(name_key, display_name)`` pairs.

    Comma-separated, trimmed, empties dropped, the same author (by key) kept once, in
    first-seen order.

    >>> split_authors("Ann Lee, , ann  lee,Bo")
    [('ann lee', 'Ann Lee'), ('bo', 'Bo')]
    """
    seen: dict[str, str] = {}
    for part in authors_text.split(","):
        if part.isascii():  # NFC, NFKC and case folding of ASCII: the text itself, lower-cased
            display = " ".join(part.split())
            key = display.lower()
        else:
            display = author_display_name(part)
            key = author_name_key(display)
        if not display:
            continue
        if key and key not in seen:
            seen[key] = display
    return list(seen.items())


def title_key(title: str) -> str:
    """Title lower-cased, whitespace runs collapsed, ends trimmed (``title_canon_sha256``)."""
    return collapse_whitespace(title.lower())
