"""Parse any identifier a person may paste into the keys a reader resolves.

Accepted (surrounding whitespace ignored):

* a full pith number ``pith:2019:BR75OIUY7WDYHPO53K7WUNQ4NZ``, with or without ``pith:``,
  any letter case;
* a short pith number ``pith:BR75OIUY`` (also with 12 or 16 characters);
* a ``pith_short_*`` alias value ``BR75OIUY`` / ``BR75OIUY7WDY`` / ``BR75OIUY7WDYHPO5``,
  optionally written ``pith_short_8:BR75OIUY``;
* an arXiv id, new (``1907.13257``) or old style (``hep-th/9901001``; a subject class, as
  in ``math.AG/0601001``, and letter case do not matter: arXiv's spelling is looked up), with
  or without ``arXiv:`` or an ``arxiv.org/abs/`` or ``/pdf/`` URL; with a version (``v2``)
  it names that version, without one every version (``paper`` then picks the newest);
* a DOI ``10.48550/arxiv.1907.13257`` with or without ``doi:``, ``https://doi.org/`` or
  ``https://dx.doi.org/``. DOIs ignore ASCII letter case: the loader stores them folded
  (:func:`~pith_graph.loader.identifiers.doi_key`), and the pasted one is folded the same way.

Anything else names nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pith_graph.api.reads.records import IdentifierKey
from pith_graph.errors import BadUserInput
from pith_graph.loader.identifiers import canonical_arxiv_id, doi_key

__all__ = ["MAX_IDENTIFIER_LENGTH", "ParsedId", "parse_identifier"]

MAX_IDENTIFIER_LENGTH = 300

_B32 = "[A-Z2-7]"
_FULL = re.compile(rf"(?:PITH:)?([0-9]{{4}}):({_B32}{{26}})")
_SHORT = re.compile(rf"PITH:({_B32}{{8}}|{_B32}{{12}}|{_B32}{{16}})")
_BARE = re.compile(rf"(?:PITH_SHORT_(?:8|12|16)[:=])?({_B32}{{8}}|{_B32}{{12}}|{_B32}{{16}})")
_ARXIV_PREFIX = re.compile(
    r"^(?:arxiv:|(?:https?://)?(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/)", re.IGNORECASE
)
_ARXIV_NEW = re.compile(r"([0-9]{4}\.[0-9]{4,5})(?:[vV]([0-9]{1,10}))?")
_ARXIV_OLD = re.compile(r"([a-zA-Z][a-zA-Z\-]*(?:\.[A-Za-z]{2})?/[0-9]{7})(?:[vV]([0-9]{1,10}))?")
_DOI_PREFIX = re.compile(r"^(?:doi:\s*|(?:https?://)?(?:dx\.)?doi\.org/)", re.IGNORECASE)
_DOI = re.compile(r"10\.[0-9]{4,9}/\S+")


@dataclass(frozen=True, slots=True)
class ParsedId:
    """What an identifier names: the papers any of ``keys`` resolves to.

    ``versions`` is true when the identifier names every version of a paper (an arXiv id
    without version, a DOI): ``paper`` then answers with the newest.
    """

    keys: tuple[IdentifierKey, ...]
    versions: bool = False


def _arxiv(text: str) -> ParsedId | None:
    body = _ARXIV_PREFIX.sub("", text)
    if body.lower().endswith(".pdf"):
        body = body[:-4]
    for pattern in (_ARXIV_NEW, _ARXIV_OLD):
        match = pattern.fullmatch(body)
        if match:
            arxiv_id = canonical_arxiv_id(match.group(1))  # as stored: verification allows no other
            if arxiv_id is None:
                return None
            version = match.group(2)
            if version is not None:
                return ParsedId((("arxiv_version", f"{arxiv_id}v{int(version)}"),))
            return ParsedId((("arxiv", arxiv_id),), versions=True)
    return None


def _doi(text: str) -> ParsedId | None:
    body = _DOI_PREFIX.sub("", text)
    if not _DOI.fullmatch(body):
        return None
    return ParsedId((("doi", doi_key(body)),), versions=True)


def parse_identifier(text: str) -> ParsedId | None:
    """The keys an identifier names, or ``None`` when it is no identifier we know.

    Raises :class:`~pith_graph.errors.BadUserInput` for an empty or overlong text (its
    ``argument``: ``id``, what ``paper`` and ``resolve`` take; ``papersById`` takes blanks).

    >>> parse_identifier("pith:2019:br75oiuy7wdyhpo53k7wunq4nz").keys
    (('pithNumber', 'pith:2019:BR75OIUY7WDYHPO53K7WUNQ4NZ'),)
    >>> parse_identifier("arXiv:1907.13257")
    ParsedId(keys=(('arxiv', '1907.13257'),), versions=True)
    >>> parse_identifier("https://doi.org/10.48550/arXiv.1907.13257").keys
    (('doi', '10.48550/arxiv.1907.13257'),)
    >>> parse_identifier("no such thing") is None
    True
    """
    text = text.strip()
    if not text:
        raise BadUserInput("The identifier is empty.", "Pass a pith number, arXiv id or DOI.", argument="id")
    if len(text) > MAX_IDENTIFIER_LENGTH:
        raise BadUserInput(
            f"The identifier is longer than {MAX_IDENTIFIER_LENGTH} characters.",
            "Pass a pith number, arXiv id or DOI.",
            argument="id",
        )
    upper = text.upper()
    if match := _FULL.fullmatch(upper):
        return ParsedId((("pithNumber", f"pith:{match.group(1)}:{match.group(2)}"),))
    if match := _SHORT.fullmatch(upper):
        body = match.group(1)
        if len(body) == 8:
            return ParsedId((("shortPithNumber", f"pith:{body}"),))
        return ParsedId(((f"pith_short_{len(body)}", body),))
    if match := _BARE.fullmatch(upper):
        body = match.group(1)
        return ParsedId(((f"pith_short_{len(body)}", body),))
    return _arxiv(text) or _doi(text)
