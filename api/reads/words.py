"""Word splitting as Neo4j's full-text indexes do it (Lucene 9's ``StandardTokenizer``).

The in-memory reader must find the very words Neo4j's indexes hold, or search, ranking and
typeahead would answer differently on the two backends. Lucene's tokenizer implements the
word-break rules of Unicode's UAX #29 over Unicode 9 character properties, plus emoji
sequences; Python has neither table, so ``word_classes.txt`` records what each code point is
*to Lucene* — probed from Lucene itself by ``tests/lucene/LuceneAnalysis.java classes``, and
checked against it in the test suite — and :func:`tokens` applies the same grammar:

* letters and digits join into words, as do ``.`` / ``'`` between letters, ``:`` between
  letters, ``.`` / ``,`` / ``;`` between digits, and ``_`` anywhere; combining marks and
  format characters stay inside a word;
* each CJK ideograph and each hiragana is a word of its own; katakana and Hangul runs are
  words; runs of Thai, Lao, Khmer, Myanmar are kept whole;
* emoji (with modifiers, presentation selectors, ZWJ sequences, keycaps, flags) are words;
* everything else separates words. Words are lower-cased code point by code point
  (``Character.toLowerCase``, as Lucene's ``LowerCaseFilter``) and cut into pieces of 255.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from importlib.resources import files

__all__ = ["MAX_SEARCH_TERMS", "TOKEN_PATTERN", "lucene_query", "search_terms", "title_words", "tokens"]

#: Words of a search text beyond this are ignored.
MAX_SEARCH_TERMS = 16
#: Lucene's StandardTokenizer splits longer tokens at this length.
_MAX_TOKEN_LENGTH = 255


def _load_classes() -> tuple[list[int], list[str]]:
    starts: list[int] = []
    classes: list[str] = []
    text = (files("pith_graph.api.reads") / "word_classes.txt").read_text(encoding="ascii")
    for line in text.splitlines():
        first, _, kind = line.split("\t")
        starts.append(int(first, 16))
        # b (emoji that takes a skin-tone modifier) behaves as any emoji character here.
        classes.append("M" if kind == "b" else kind)
    return starts, classes


_STARTS, _CLASSES = _load_classes()
# Characters the emoji grammar tells apart from their Lucene class (digits, extend, other).
_SPECIAL = {
    **{ord(d): "D" for d in "0123456789"},
    ord("#"): "k",
    ord("*"): "k",
    ord("'"): "q",  # single quote: a joiner, and a Hebrew letter's own
    ord('"'): "Q",  # double quote: joins Hebrew letters only
    0xFE0F: "v",  # emoji presentation selector
    0xFE0E: "w",  # text presentation selector
    0x200D: "z",  # zero width joiner
    0x20E3: "c",  # combining enclosing keycap
}


class _ClassTable(dict[int, str]):
    """Code point -> class letter, for ``str.translate``; filled on first sight."""

    def __missing__(self, code: int) -> str:
        kind = _SPECIAL.get(code) or _CLASSES[bisect_right(_STARTS, code) - 1]
        self[code] = kind
        return kind


_TABLE = _ClassTable()

# The grammar of StandardTokenizerImpl.jflex over the class letters (see the module doc):
# L letter, h Hebrew letter, N/D digit, K katakana, I ideograph, H hiragana, S south-east Asian, M emoji,
# m emoji modifier, R regional indicator, E/v/w/z/c extend, X connector (_), B/l/d/q/Q joiners.
_Q = "[Evwzcm]*"  # extend, format, ZWJ (and emoji modifiers) after a character
# The same without presentation selectors, inside emoji; a ZWJ before another emoji joins the two.
_QE = "(?:[Ecm]|z(?![Mm]))*"
# A Hebrew letter keeps a single quote after it, and a double quote between two of them.
_AL = f"(?:L{_Q}|h{_Q}(?:q{_Q}|Q{_Q}(?=h))?)"
_NU = f"[ND]{_Q}"
_KA = f"K{_Q}"
_XN = f"X{_Q}"
_LETTERS = f"{_AL}(?:(?:(?:{_XN})*|[lBq]{_Q}){_AL})*"
_NUMBERS = f"{_NU}(?:(?:(?:{_XN})*|[dBq]{_Q}){_NU})*"
_GROUP = f"(?:{_KA}(?:(?:{_XN})*{_KA})*|(?:{_NUMBERS}|{_LETTERS})+)"
_WORD = f"(?:{_XN})*{_GROUP}(?:(?:{_XN})+{_GROUP})*(?:{_XN})*"
_EMOJI_ELEMENT = f"z*M{_QE}v?|m{_QE}"
_EMOJI = f"(?:{_EMOJI_ELEMENT})(?:z(?:{_EMOJI_ELEMENT}))*|R{_Q}R{_Q}"
_KEYCAP = f"k{_QE}v?c{_QE}"  # after words: a digit keycap is also a word, and words run longer
# Separators are skipped first; then the common case, a run of plain letters and digits
# between separators, before the full grammar (cheap either way on prose).
_PLAIN = "(?<![^O])[LhND]++(?![^O])"
_TOKEN = re.compile(f"[^LhNDXKMmRkSIHz]*+({_PLAIN}|{_EMOJI}|{_WORD}|{_KEYCAP}|(?:S{_Q})+|I{_Q}|H{_Q})")
#: One word at a position (the grammar without the separators before it), for :func:`_cut`.
_WORD_AT = re.compile(_TOKEN.pattern[_TOKEN.pattern.index("(") :])
# For :func:`_spans`: where a word may start (what the search's prefix does not skip), the
# classes of which every word holds one, and those after which every word may end.
_WORD_START = re.compile("[LhNDXKMmRkSIHz]")
_NEEDED = re.compile("[LhNDKIHSMmRc]")
_ANCHOR = re.compile("[LhNDKIHSM]")
# A word from a connector (_) or a ZWJ takes the whole run after it (connectors with extend
# characters, or ZWJs) and then the same rest, wherever in the run it starts.
_RUNS = {"X": re.compile("[XEvwzcm]*"), "z": re.compile("z*")}
_ASCII = bytes(ord(_TABLE[code]) if code < 128 else 79 for code in range(256))  # 79: "O"
#: The grammar as one string (with the classes it adds and the longest word): saved text
#: indexes record it, and are built again when it changes.
TOKEN_PATTERN = repr((_TOKEN.pattern, sorted(_SPECIAL.items()), _MAX_TOKEN_LENGTH, "utf-16 buffer"))


def _lower(token: str) -> str:
    """Per-code-point simple lower case, as Java's ``Character.toLowerCase`` (Python's
    ``str.lower`` turns ``İ`` into two characters)."""
    if token.isascii():
        return token.lower()
    return "".join("i" if char == "\u0130" else char.lower() for char in token)


def _cut(classes: str, text: str, start: int, end: int) -> int:
    """Where Lucene ends a word found at ``start:end`` that is longer than its buffer of
    :data:`_MAX_TOKEN_LENGTH` UTF-16 code units: the longest word the grammar finds in the
    buffer (which never ends inside a surrogate pair), as if the text ended there; the rest
    is split again from there (so it may hold no word, or words the full one did not)."""
    limit = start
    units = 0
    while limit < end:
        units += 2 if ord(text[limit]) > 0xFFFF else 1
        if units > _MAX_TOKEN_LENGTH:
            break
        limit += 1
    found = _WORD_AT.match(classes, start, limit)
    return found.end() if found is not None and found.end() > start else limit


def tokens(text: str) -> list[str]:
    """Every word of ``text`` in order, as Lucene's standard analyzer finds them, lower-cased.

    A word longer than 255 UTF-16 code units (Java's chars: a character beyond U+FFFF is two)
    ends where Lucene's buffer ends it (:func:`_cut`), and the rest is split again.

    >>> tokens("Graph  neural-networks: GPT4 at 3.5 T.F.L.O.P.S, O'Brien; 李伟 🚀 _x_")
    ['graph', 'neural', 'networks', 'gpt4', 'at', '3.5', 't.f.l.o.p.s', "o'brien", '李', '伟', '🚀', '_x_']
    >>> [len(word) for word in tokens("\U0001d49c" * 200 + " " + "a" * 250 + "\u0301" * 10)]
    [127, 73, 255]
    """
    found: list[str] = []
    if text.isascii():
        classes = text.encode("ascii").translate(_ASCII).decode("ascii")
    else:
        classes = text.translate(_TABLE)
    for start, end in _spans(classes, text):
        found.append(_lower(text[start:end]))
    return found


def _spans(classes: str, text: str) -> Iterator[tuple[int, int]]:
    """Where :func:`tokens` finds its words, in time linear in the text's length.

    The words are those of ``_TOKEN.search`` from the end of the last word, each cut by
    :func:`_cut` when longer than Lucene's buffer. That search matched the whole rest of a long
    word (and again from every cut), and retried from every position of a long run that
    holds no word; here each match sees only a bounded stretch, which gives the same answer:

    * separators are skipped first, as the search's possessive prefix skipped them;
    * a word never spans an ``O`` (no part of the grammar takes one, and its look-aheads
      read one as the end of the text), and holds one of :data:`_NEEDED`: a stretch without
      one holds no word;
    * a match ending before :data:`_MAX_TOKEN_LENGTH` characters is the same with the text
      ending just after an :data:`_ANCHOR` beyond them (every way the grammar reaches that
      character can end a word there, so a path going further makes the word longer than the
      buffer); and only that a longer word is longer matters, as :func:`_cut` ends it.
    """
    size = len(classes)
    position = 0
    other = needed = anchor = -1  # the next O, needed character and anchor found so far
    runs: dict[str, tuple[int, int, bool]] = {}  # kind -> a run of it, and if a word starts there
    while (next_start := _WORD_START.search(classes, position)) is not None:
        start = next_start.start()
        if other < start:
            other = classes.find("O", start)
            other = size if other < 0 else other
        if needed < start:
            found = _NEEDED.search(classes, start, other)
            needed = other if found is None else found.start()
        if needed >= other:
            position = other  # no word before the next O
            continue
        kind = classes[start]
        run = runs.get(kind)
        if run is not None and run[0] <= start < run[1]:
            if not run[2]:
                position = start + 1
                continue
            if run[1] - start >= _MAX_TOKEN_LENGTH:  # the word goes past the run: too long
                end = _cut(classes, text, start, size)
                yield start, end
                position = end
                continue
        stop = start + _MAX_TOKEN_LENGTH + 1
        if stop >= other:
            stop = other
        else:
            if anchor < stop - 1:
                found = _ANCHOR.search(classes, stop - 1, other)
                anchor = other if found is None else found.start()
            stop = min(anchor + 1, other)
        match = _WORD_AT.match(classes, start, stop)
        if kind in _RUNS and (run is None or not run[0] <= start < run[1]):
            extent = _RUNS[kind].match(classes, start)  # never None: the run may be empty
            runs[kind] = (start, start if extent is None else extent.end(), match is not None)
        if match is None:
            position = start + 1
            continue
        end = match.end()
        if end - start > _MAX_TOKEN_LENGTH or (
            end - start > _MAX_TOKEN_LENGTH // 2
            and len(text[start:end].encode("utf-16-le")) > 2 * _MAX_TOKEN_LENGTH
        ):
            end = _cut(classes, text, start, size)
        yield start, end
        position = end


def title_words(text: str) -> tuple[str, ...]:
    """The distinct words of ``text`` (:func:`tokens`), in order of first appearance.

    >>> title_words("Graph  neural-networks: GPT4 at 3.5 T.F.L.O.P.S, O'Brien; 李伟")
    ('graph', 'neural', 'networks', 'gpt4', 'at', '3.5', 't.f.l.o.p.s', "o'brien", '李', '伟')
    """
    return tuple(dict.fromkeys(tokens(text)))


def search_terms(text: str) -> tuple[str, ...]:
    """The words of a search text (:func:`title_words`), at most :data:`MAX_SEARCH_TERMS`."""
    return title_words(text)[:MAX_SEARCH_TERMS]


def quoted(term: str) -> str:
    """A term as a Lucene phrase: quoted, ``"`` and ``\\`` escaped, so nothing in it is syntax."""
    return '"' + re.sub(r'(["\\])', r"\\\1", term) + '"'


def lucene_query(terms: Sequence[str]) -> str:
    """A Lucene query requiring every term: each one quoted, ``"`` and ``\\`` escaped.

    >>> lucene_query(['graph', 'a"b'])
    '+"graph" +"a\\\\"b"'
    """
    return " ".join("+" + quoted(term) for term in terms)
