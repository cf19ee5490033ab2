"""Title words: tokens longer than Lucene's limit are cut as its StandardTokenizer cuts them,
in time linear in the text's length, the same words as before 0.8.9."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from typing import Any

import pytest

from pith_graph.api.reads import words
from pith_graph.api.reads.words import title_words, tokens


def test_long_tokens_are_cut_at_lucenes_length() -> None:
    text = "a" * 600 + " " + "1,2" * 200
    assert [len(word) for word in title_words(text)] == [255, 90, 255, 90]  # repeats dropped


def _tokens_before_0_8_9(text: str) -> list[str]:
    """The reference: tokens() as it was before 0.8.9 (one search over the whole rest of the
    text per word, quadratic on a long word), kept here as the oracle."""
    found: list[str] = []
    if text.isascii():
        classes = text.encode("ascii").translate(words._ASCII).decode("ascii")
    else:
        classes = text.translate(words._TABLE)
    position = 0
    while (match := words._TOKEN.search(classes, position)) is not None:
        start, end = match.span(1)
        if (
            end - start > words._MAX_TOKEN_LENGTH // 2
            and len(text[start:end].encode("utf-16-le")) > 2 * words._MAX_TOKEN_LENGTH
        ):
            end = words._cut(classes, text, start, end)
        found.append(words._lower(text[start:end]))
        position = end
    return found


# One character of every class the grammar tells apart (word_classes.txt and _SPECIAL), and a
# few more: a letter beyond U+FFFF (two UTF-16 units), İ (lower-cases apart), joiners.
_PALETTE = (
    "a", "Z", "\u0130", "\U0001d49c", "\u05d0", "\u00e9", "1", "\u0663", "_", "\u203f", ".",
    ",", ";", ":", "'", '"', "#", "*", " ", "-", "\u0301", "\u200d", "\ufe0f", "\ufe0e", "\u20e3",
    "\u30a2", "\u4e00", "\u3042", "\u0e01", "\U0001f680", "\u2764", "\U0001f3fb", "\U0001f1e6",
    "\u00ad", "\u3000", "\u066b",
)  # fmt: skip
_RUNS = (
    "a", "1", "_", "\u0301", "\u200d", "\U0001d49c", "a\u0301", "a_", "a.", "1,", "\u05d0'",
    "\u30a2", "\u0e01", "#\u20e3", "\U0001f680\u200d", "\U0001f1e6", " ", "_\u0301", "_\u200d",
)  # fmt: skip


def _varied_texts(limit: int, count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        palette = rng.sample(_PALETTE, rng.randint(1, 6))
        lengths = (1, 2, 3, limit - 1, limit, limit + 1, 2 * limit + 1, rng.randint(1, 3 * limit + 3))
        texts.append("".join(rng.choice(palette) * rng.choice(lengths) for _ in range(rng.randint(1, 8))))
    return texts


@pytest.mark.parametrize("limit", [4, 7])
def test_the_words_are_those_of_before_with_a_short_buffer(
    limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lucene's buffer made short, so that random texts cross its length often (both versions
    # read the same constant).
    monkeypatch.setattr(words, "_MAX_TOKEN_LENGTH", limit)
    for text in _varied_texts(limit, 3000, seed=limit):
        assert tokens(text) == _tokens_before_0_8_9(text), [hex(ord(char)) for char in text]


def test_the_words_of_long_runs_are_those_of_before() -> None:
    texts = [
        run * count + tail
        for run in _RUNS
        for count in (127, 128, 254, 255, 256, 600)
        for tail in ("", "a", " b")
    ]
    texts += [
        "x" + "\u0301" * 300 + "y",
        "a." + "\u0301" * 300 + "b",
        "\u200d" * 300 + "\U0001f680",
        "#" + "\u0301" * 300 + "\u20e3",
        "\U0001f1e6" + "\u0301" * 300 + "\U0001f1e6",
        "\u05d0" + '"' + "\u0301" * 300 + "\u05d0",
        "\U0001d49c" * 200 + " " + "a" * 250 + "\u0301" * 10,
        ("ab1_\u0301\u05d0'\u30a2\u200d\U0001f680" * 200)[:1500],
        *_varied_texts(255, 200, seed=255),
    ]
    for text in texts:
        assert tokens(text) == _tokens_before_0_8_9(text), text[:40]


class _Counting:
    """A compiled pattern that adds up the length of text each search or match may read."""

    def __init__(self, pattern: re.Pattern[str], read: list[int]) -> None:
        self.pattern, self.read = pattern, read

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        self.read.append(min(len(text), len(text) if endpos is None else endpos) - pos)
        return self.pattern.search(text, pos, len(text) if endpos is None else endpos)

    def match(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        self.read.append(min(len(text), len(text) if endpos is None else endpos) - pos)
        return self.pattern.match(text, pos, len(text) if endpos is None else endpos)


@pytest.mark.parametrize(
    "text",
    ["a" * 20_000, "1" * 20_000, "\U0001d49c" * 20_000, "a\u0301" * 10_000, "_" * 20_000 + "a", "\u200d" * 20_000 + "a", "_" * 20_000, " " * 20_000 + "#"],
    ids=["letters", "digits", "astral", "combining", "connectors", "zwj", "only-connectors", "spaces"],
)  # fmt: skip
def test_a_long_word_is_read_a_bounded_number_of_times(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Work counted, not timed: the grammar's matches together may read at most four times
    # the text (before 0.8.9, one search over the rest of the text per 255 characters).
    read: list[int] = []
    monkeypatch.setattr(words, "_TOKEN", _Counting(words._TOKEN, read))
    monkeypatch.setattr(words, "_WORD_AT", _Counting(words._WORD_AT, read))
    tokens(text)
    assert sum(read) <= 4 * len(text)


#: The emoji/keycap tail of the grammar before 0.8.9: ``z+`` inside ``(...)*``, which tries
#: every way to cut a run of joiners when what follows fails (2^n: a keycap base, 25 ZWJs and
#: a letter took 2 s, 60 of them would take years; one author name could hang a load).
_QE_BEFORE = "(?:[Ecm]|z+(?![Mm]))*"


def test_a_run_of_joiners_after_a_keycap_base_splits_as_before_in_linear_time() -> None:
    before = re.compile(words._TOKEN.pattern.replace(words._QE, _QE_BEFORE))
    assert before.pattern != words._TOKEN.pattern
    for base in ("*", "#", "1", "\U0001f600", "a"):
        for joiners in range(13):
            for tail in ("", "\u00e9" * 5, "\u20e3", "\U0001f600", "\ufe0f\u20e3x"):
                text = base + "\u200d" * joiners + tail
                classes = text.translate(words._TABLE)
                expected, position = [], 0
                while (match := before.search(classes, position)) is not None:
                    expected.append(words._lower(text[match.start(1) : match.end(1)]))
                    position = match.end(1)
                assert tokens(text) == expected, text
    # The same shapes, long: a bounded wait, not a timing (it ran for ever before).
    code = "from pith_graph.api.reads.words import tokens; tokens('*' + '\\u200d' * 60 + '\\u00e9' * 145)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
