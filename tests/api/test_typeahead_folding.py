"""Typeahead folding: what a typed word matches, and the Lucene query that matches the same.

The in-memory reader compares folded words directly; the Neo4j reader sends one regular
expression per typed word (``prefix_query``). Lucene's regular expressions here use only
character classes, groups, alternatives and ``.*``, which Python's ``re`` reads the same, so
the two are checked against each other word by word.
"""

from __future__ import annotations

import random
import re

import pytest

from pith_graph.api.reads import folding
from pith_graph.api.reads.folding import fold_key, name_keys, prefix_query, typed_keys
from pith_graph.api.reads.words import tokens


def _regexes(query: str) -> list[str]:
    return [clause[2:-1].replace("\\/", "/") for clause in query.split(" ")]


def _regex_matches(typed: str, word: str) -> bool | None:
    """Whether the query for ``typed`` matches ``word``; None when the query had to drop some
    multi-letter folds to stay small (a dozen overlapping ``ss``/``ffi``/``ll`` in one word)."""
    if len(folding._regex(typed, len(typed))) > folding._MAX_REGEX_LENGTH:
        return None
    (regex,) = _regexes(prefix_query([typed]))
    return re.fullmatch(regex, word) is not None


@pytest.mark.parametrize(
    ("typed", "name", "found"),
    [
        pytest.param("zoe sm", "Zoë Smith", True, id="two-words"),
        pytest.param("ZOË", "Zoë Smith", True, id="upper-accented"),
        pytest.param("sm", "Zoë Smith", True, id="second-word"),
        pytest.param("zoe  smith ", "Zoe\u0308 Smith", True, id="nfd-and-spaces"),
        pytest.param("smith zoe", "Zoë Smith", True, id="any-order"),
        pytest.param("will", "Will Smith", True, id="english-stop-word"),
        pytest.param("an w", "An Wang", True, id="stop-word-surname"),
        pytest.param("to lam", "Tô Lâm", True, id="accented-stop-word"),
        pytest.param("strass", "Johann Straße", True, id="sharp-s"),
        pytest.param("stra", "Johann Straße", True, id="before-sharp-s"),
        pytest.param("aeth", "Æther Nord", True, id="ligature"),
        pytest.param("lukasz", "Łukasz Øberg", True, id="stroke"),
        pytest.param("o'br", "Sean O’Brien", True, id="typographic-apostrophe"),
        pytest.param("李", "李伟", True, id="ideograph"),
        pytest.param("full", "Ｆｕｌｌ Width", True, id="fullwidth"),
        pytest.param("ми", "Миша Петров", True, id="cyrillic"),
        pytest.param("zoe x", "Zoë Smith", False, id="every-word-must-match"),
        pytest.param("mith", "Zoë Smith", False, id="prefix-not-infix"),
        pytest.param("smithson", "Zoë Smith", False, id="longer-than-word"),
    ],
)
def test_typed_words_match_name_words_folded(typed: str, name: str, found: bool) -> None:
    keys, words = typed_keys(typed), name_keys(name)
    assert all(any(word.startswith(key) for word in words) for key in keys) is found
    # The Lucene query says the same of the name's indexed (lower-case, unfolded) words.
    indexed = tokens(name)
    regexes = _regexes(prefix_query(keys))
    assert all(any(re.fullmatch(regex, word) for word in indexed) for regex in regexes) is found


def test_blank_and_punctuation_type_nothing() -> None:
    assert typed_keys("   ") == ()
    assert typed_keys("-- !!") == ()
    assert typed_keys("Zoë zoe ZOE") == ("zoe",)


def test_regex_agrees_with_folding_on_many_words() -> None:
    """Every (typed prefix, word) pair over words with folds of every shape."""
    rng = random.Random(7)
    plain = list("aeosstfilnz") + list("àéöøłŀ’")
    folds = [*"ßæœĳǆﬁþŉ", "ﬀ", "ﬃ", "ꜳ", "ǉ"]  # several letters each: at most three a word
    words = set()
    for _ in range(400):
        chars = [rng.choice(plain) for _ in range(rng.randint(1, 7))]
        for _ in range(rng.randint(0, 3)):
            chars.insert(rng.randint(0, len(chars)), rng.choice(folds))
        words.add("".join(chars))
    for word in sorted(words):
        folded = fold_key(word)
        prefixes = {folded[:n] for n in range(1, len(folded) + 1)} | {"ss", "ae", "ff", "z", "sst"}
        for typed in sorted(prefixes):
            matches = _regex_matches(typed, word)
            assert matches is None or matches is folded.startswith(typed), (typed, word)


def test_pathological_typing_stays_a_small_query() -> None:
    query = prefix_query(typed_keys("s" * 40 + " " + "f" * 30))
    assert len(query) < 15_000
    assert fold_key("ǅemal") == "dzemal"
