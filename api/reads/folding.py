"""Accent folding for author typeahead.

A typed word matches a word of a name when the name's word, folded, starts with the typed
word, folded: ``zoe``, ``ZOË`` and ``zoë`` all match ``Zoë``; ``strass`` matches ``Straße``.
Folding is Lucene's ``ASCIIFoldingFilter`` (``ascii_folding.txt`` is its table, dumped from
Lucene by ``tests/lucene/LuceneAnalysis.java fold`` and checked against it in the tests),
then lower case; words are split as Lucene's standard tokenizer splits them.

The loader stores every author's folded words as ``Author.nameFolded``: :func:`folded_name` of
its ``nameKey`` (since 0.9.8), the identity every spelling of the author shares, not of its
display name, which any trusted signer's spelling can become (a lower-ranked key spelling
*Quentin* in bold letters made him unfindable). Typed words are folded from the same identity
(:func:`typed_keys`), so both readers compare the same words: the in-memory one directly, Neo4j with ``STARTS
WITH`` over its most prolific authors or with a prefix query (:func:`prefix_query`) of the
full-text index on ``nameFolded``. (Neo4j's only folding analyzer, ``standard-folding``, drops
English stop words, so a name word like *An*, *Will* or *To* would be unfindable in it.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from importlib.resources import files

from pith_graph.api.reads.words import tokens
from pith_graph.loader.identifiers import author_name_key

__all__ = ["MAX_PREFIX_WORDS", "fold_key", "folded_name", "name_keys", "prefix_query", "typed_keys"]

#: Typed words beyond this are ignored.
MAX_PREFIX_WORDS = 8
#: Typed words are cut to this many characters (a longer prefix adds nothing a user needs).
MAX_PREFIX_LENGTH = 24


def _load() -> dict[int, str]:
    table: dict[int, str] = {}
    text = (files("pith_graph.api.reads") / "ascii_folding.txt").read_text(encoding="ascii")
    for line in text.splitlines():
        code, folded = line.split("\t")
        table[int(code, 16)] = "".join(chr(int(part, 16)) for part in folded.split())
    return table


_FOLD = _load()


#: The dot above that case folding leaves of a dotted capital I (``İ``: ``i`` + U+0307), which
#: Lucene's table folds whole to ``I`` but leaves alone once apart (as after a ``j``).
_DOT_ABOVE = re.compile("(?<=[ij])\u0307")


def fold_key(word: str) -> str:
    """A lower-cased word folded to ASCII where Lucene folds it, then lower-cased again; the
    dot above an ``i`` or ``j`` dropped (since 0.9.8: a name's key, case-folded, spells
    ``İlker`` ``i̇lker``, which ``ilker`` must find, as the name did).

    >>> fold_key("zoë"), fold_key("straße"), fold_key("łukasz"), fold_key("李"), fold_key("i\u0307lker")
    ('zoe', 'strasse', 'lukasz', '李', 'ilker')
    """
    folded = word.translate(_FOLD)
    if folded.isascii() and folded.islower():
        return folded
    folded = "".join(c.lower() for c in folded)
    return _DOT_ABOVE.sub("", folded) if "\u0307" in folded else folded


#: Neo4j's whitespace analyzer (of ``nameFolded``) cuts longer words at this many UTF-16 code units.
_MAX_FOLDED_LENGTH = 255


def _pieces(word: str) -> list[str]:
    """A folded word as Neo4j's whitespace analyzer indexes it: cut after the character that
    takes it to 255 UTF-16 code units or more (Lucene's ``CharTokenizer``). A word folding
    longer than it was (``ß`` to ``ss``) can pass that length; the pieces are words of their own
    on both backends (without the cut, the full-text index found a key starting a later piece
    and the in-memory reader did not).

    >>> [len(piece) for piece in _pieces("ss" * 128 + "xyz")]
    [255, 4]
    """
    if len(word) <= _MAX_FOLDED_LENGTH // 2 or len(word.encode("utf-16-le")) <= 2 * _MAX_FOLDED_LENGTH:
        return [word]
    pieces: list[str] = []
    start = units = 0
    for at, char in enumerate(word):
        units += 2 if ord(char) > 0xFFFF else 1
        if units >= _MAX_FOLDED_LENGTH:
            pieces.append(word[start : at + 1])
            start, units = at + 1, 0
    if start < len(word):
        pieces.append(word[start:])
    return pieces


def _folded_words(name: str) -> list[str]:
    return [piece for word in tokens(name) for piece in _pieces(fold_key(word))]


def name_keys(name: str) -> frozenset[str]:
    """The folded words of a name, as the typeahead compares them."""
    return frozenset(_folded_words(name))


#: Names of plain ASCII letters and single spaces (most of them): their words are their
#: lower-case parts, with nothing to fold (shorter than Lucene's longest token).
_PLAIN = re.compile(r"[A-Za-z]{1,255}(?: [A-Za-z]{1,255})*")


@lru_cache(maxsize=1 << 16)
def folded_name(name: str) -> str:
    """``Author.nameFolded``: the name's folded words (:func:`name_keys`), in order, once each,
    joined by a space; typeahead matches a typed word against the start of each. (The loader
    calls it for every author of every bundle: plain names take a short cut, and a prolific
    author's name is folded once per process.)

    >>> folded_name("Zoë  SMITH-Straße"), folded_name("Łukasz O'Brien"), folded_name("Ann ANN Lee")
    ('zoe smith strasse', "lukasz o'brien", 'ann lee')
    """
    plain = _PLAIN.fullmatch(name)
    return " ".join(dict.fromkeys(name.lower().split(" ") if plain else _folded_words(name)))


def typed_keys(text: str) -> tuple[str, ...]:
    """The folded words a person typed (at most :data:`MAX_PREFIX_WORDS`, each cut to
    :data:`MAX_PREFIX_LENGTH` characters), without duplicates. The text is made a name's
    identity first, as the loader makes ``nameKey`` (``author_name_key``: NFKC, case-folded;
    since 0.9.8, NFC before): an accent typed as a combining mark, full-width or bold
    letters, ``ß`` fold as the name's key does.

    >>> typed_keys("ZOE\u0308 sm") == typed_keys("ＺＯË SM") == typed_keys("\U0001d419oë sm") == ("zoe", "sm")
    True
    """
    normal = author_name_key(text)
    keys = (fold_key(word)[:MAX_PREFIX_LENGTH] for word in tokens(normal))
    return tuple(dict.fromkeys(keys))[:MAX_PREFIX_WORDS]


#: Characters Lucene's query parser reads as syntax: escaped in typed words.
_LUCENE_SYNTAX = frozenset('\\+-!():^[]"{}~*?|&/')


def prefix_query(keys: Sequence[str]) -> str:
    """A Lucene query of the folded-words index (``Author.nameFolded``, split on white
    space): for each typed key, a required prefix clause, its syntax characters escaped.

    >>> print(prefix_query(["zoe", "o'br", "a+b"]))
    +zoe* +o'br* +a\\+b*
    """
    return " ".join("+" + "".join("\\" + c if c in _LUCENE_SYNTAX else c for c in key) + "*" for key in keys)
