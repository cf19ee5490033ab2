"""Word splitting as Neo4j's full-text index does it (Lucene's standard analyzer).

The in-memory reader answers title search with :func:`title_words`, the Neo4j reader with
the full-text index queried through :func:`lucene_query`, so both must split text into the
same words: letters and digits join into words, as do ``.`` / ``'`` / ``:`` between letters
and ``.`` / ``,`` between digits; each CJK ideograph is a word of its own.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

__all__ = ["MAX_SEARCH_TERMS", "lucene_query", "search_terms", "title_words"]

#: Words of a search text beyond this are ignored.
MAX_SEARCH_TERMS = 16
#: Lucene's StandardTokenizer splits longer tokens at this length.
_MAX_TOKEN_LENGTH = 255


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
    ideographic, ``O`` other (remembered per character: titles repeat them)."""
    kind = _CLASSES.get(char)
    if kind is None:
        kind = _classify(char)
        if len(_CLASSES) < 65536:  # bounded: no text can grow it without end
            _CLASSES[char] = kind
    return kind


def _classify(char: str) -> str:
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


_CLASSES: dict[str, str] = {}


def _lower(token: str) -> str:
    """Per-character simple lower case, as Lucene's LowerCaseFilter does."""
    if token.isascii():
        return token.lower()
    return "".join("i" if char == "\u0130" else char.lower() for char in token)


def title_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` as Lucene's standard analyzer finds them, lower-cased, deduplicated.

    Letters and digits join into words, as do ``.`` / ``'`` / ``:`` between letters and
    ``.`` / ``,`` between digits; marks and ``_`` stay inside a word; each CJK ideograph is a
    word of its own; everything else separates words.

    >>> title_words("Graph  neural-networks: GPT4 at 3.5 T.F.L.O.P.S, O'Brien; 李伟")
    ('graph', 'neural', 'networks', 'gpt4', 'at', '3.5', 't.f.l.o.p.s', "o'brien", '李', '伟')
    """
    if text.isascii() and "_" not in text:  # most titles: one regular expression does it
        found = (token.lower() for token in _ASCII_WORD.findall(text))
        return tuple(dict.fromkeys(piece for token in found for piece in _pieces(token)))
    return _title_words(text)


# ASCII without "_" (the one ASCII character that extends a word without being part of its
# letters): letters and digits, joined by ':' '.' "'" between letters and ',' ';' '.' "'"
# between digits — what _title_words does for such text (a test checks the two agree).
_ASCII_WORD = re.compile(
    r"[A-Za-z0-9]+(?:(?:(?<=[A-Za-z])[:.'](?=[A-Za-z])|(?<=[0-9])[,;.'](?=[0-9]))[A-Za-z0-9]+)*"
)


def _pieces(token: str) -> list[str]:
    if len(token) <= _MAX_TOKEN_LENGTH:
        return [token]
    return [token[start : start + _MAX_TOKEN_LENGTH] for start in range(0, len(token), _MAX_TOKEN_LENGTH)]


def _title_words(text: str) -> tuple[str, ...]:
    """:func:`title_words` character by character (any text)."""
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
            joins_letters = last == "L" and following == "L" and (char in _MID_LETTER or char in _MID_NUM_LET)
            joins_digits = last == "N" and following == "N" and (char in _MID_NUM or char in _MID_NUM_LET)
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
