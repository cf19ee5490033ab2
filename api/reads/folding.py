"""Accent folding for author typeahead, and the Lucene query that does it inside Neo4j's index.

A typed word matches a word of a name when the name's word, folded, starts with the typed
word, folded: ``zoe``, ``ZOË`` and ``zoë`` all match ``Zoë``; ``strass`` matches ``Straße``.
Folding is Lucene's ``ASCIIFoldingFilter`` (``ascii_folding.txt`` is its table, dumped from
Lucene by ``tests/lucene/LuceneAnalysis.java fold`` and checked against it in the tests),
then lower case.

Neo4j's only folding analyzer (``standard-folding``) also drops English stop words, so a name
word like *An*, *Will* or *To* would be unfindable. The author index therefore keeps every
word unfolded (``standard-no-stop-words``) and :func:`prefix_query` folds on the query side:
each typed word becomes a Lucene regular expression matching every indexed word that folds to
something starting with it (``z[oòóôõöøōŏő…][eèéêë…].*``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from functools import cache
from importlib.resources import files

from pith_graph.api.reads.words import tokens

__all__ = ["MAX_PREFIX_WORDS", "fold_key", "name_keys", "prefix_query", "typed_keys"]

#: Typed words beyond this are ignored.
MAX_PREFIX_WORDS = 8
#: Typed words are cut to this many characters (a longer prefix adds nothing a user needs).
MAX_PREFIX_LENGTH = 24
#: A regular expression longer than this drops its rarest alternatives (``ss``/``ß`` twice over).
_MAX_REGEX_LENGTH = 6000


def _load() -> dict[int, str]:
    table: dict[int, str] = {}
    text = (files("pith_graph.api.reads") / "ascii_folding.txt").read_text(encoding="ascii")
    for line in text.splitlines():
        code, folded = line.split("\t")
        table[int(code, 16)] = "".join(chr(int(part, 16)) for part in folded.split())
    return table


_FOLD = _load()


def fold_key(word: str) -> str:
    """A lower-cased word folded to ASCII where Lucene folds it, then lower-cased again.

    >>> fold_key("zoë"), fold_key("straße"), fold_key("łukasz"), fold_key("李")
    ('zoe', 'strasse', 'lukasz', '李')
    """
    folded = word.translate(_FOLD)
    return folded if folded.isascii() and folded.islower() else "".join(c.lower() for c in folded)


def name_keys(name: str) -> frozenset[str]:
    """The folded words of a name, as the typeahead compares them."""
    return frozenset(fold_key(word) for word in tokens(name))


def typed_keys(text: str) -> tuple[str, ...]:
    """The folded words a person typed (at most :data:`MAX_PREFIX_WORDS`, each cut to
    :data:`MAX_PREFIX_LENGTH` characters), without duplicates."""
    keys = (fold_key(word)[:MAX_PREFIX_LENGTH] for word in tokens(text))
    return tuple(dict.fromkeys(keys))[:MAX_PREFIX_WORDS]


def _in_words(char: str) -> bool:
    """Whether ``char`` can be part of an indexed word (alone, after a letter, or joining)."""
    return any(
        tokens(text) == [text.lower()] for text in (char, "a" + char, "a" + char + "a", "1" + char + "1")
    )


def _preimages() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Folded text -> the lower-case characters that fold to it: one-character folds, and
    longer ones (``ss`` <- ``ß``)."""
    single: defaultdict[str, set[str]] = defaultdict(set)
    multi: defaultdict[str, set[str]] = defaultdict(set)
    for code in _FOLD:
        char = chr(code)
        if char.lower() != char or not _in_words(char):
            continue  # indexed words are lower case, and made of word characters
        key = fold_key(char)
        (single if len(key) == 1 else multi)[key].add(char)
    return dict(single), dict(multi)


_SINGLE, _MULTI = _preimages()


def _escape(char: str) -> str:
    """A character as a literal of Lucene's regular expressions (ASCII punctuation escaped)."""
    return "\\" + char if char.isascii() and not char.isalnum() else char


def _chars(chars: set[str]) -> str:
    ordered = sorted(chars)
    if len(ordered) == 1:
        return _escape(ordered[0])
    return "[" + "".join(_escape(char) for char in ordered) + "]"


def _regex(key: str, with_multi: int) -> str:
    """A regular expression for indexed words whose fold starts with ``key``; multi-character
    folds are tried at the first ``with_multi`` positions only."""

    @cache
    def rest(index: int) -> str:
        if index == len(key):
            return ".*"
        head = key[index]
        alternatives = [_chars({head} | _SINGLE.get(head, set())) + rest(index + 1)]
        if index < with_multi:
            for folded, chars in sorted(_MULTI.items()):
                if key.startswith(folded, index):
                    alternatives.append(_chars(chars) + rest(index + len(folded)))
                elif folded.startswith(key[index:]):
                    alternatives.append(_chars(chars) + ".*")
        return alternatives[0] if len(alternatives) == 1 else "(" + "|".join(alternatives) + ")"

    return rest(0)


def prefix_query(keys: Sequence[str]) -> str:
    """A Lucene query for names holding, for each typed key, a word folding to something that
    starts with it (one required regular-expression clause per key)."""
    clauses = []
    for key in keys:
        with_multi = len(key)
        regex = _regex(key, with_multi)
        while len(regex) > _MAX_REGEX_LENGTH and with_multi > 0:
            with_multi -= 1
            regex = _regex(key, with_multi)
        clauses.append("+/" + regex.replace("/", "\\/") + "/")
    return " ".join(clauses)
