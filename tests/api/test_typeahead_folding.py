"""Typeahead folding: what a typed word matches, as both readers decide it.

The loader stores each author's folded words as ``Author.nameFolded`` (``folded_name`` of its
``nameKey``, since 0.9.8). The in-memory reader compares them directly; the Neo4j reader asks, of
``nameFolded``, that it ``STARTS WITH`` each typed key or ``CONTAINS`` it after a space, or
sends one escaped prefix clause per key to the full-text index of ``nameFolded`` (split on
white space). These tests check that the three say the same.
"""

from __future__ import annotations

import random
import string

import pytest

from pith_graph.api.reads.folding import fold_key, folded_name, name_keys, prefix_query, typed_keys
from pith_graph.api.reads.words import tokens
from pith_graph.loader.identifiers import author_display_name, author_name_key
from pith_graph.loader.stores.names import folded_words


def _cypher_matches(keys: tuple[str, ...], folded: str) -> bool:
    """The scan statement's check, ``READ_AUTHORS_BY_PREFIX_SCAN``'s ``_TYPED``."""
    return all(folded.startswith(key) or (" " + key) in folded for key in keys)


@pytest.mark.parametrize(
    ("typed", "name", "found"),
    [
        pytest.param("zoe sm", "Zoë Smith", True, id="two-words"),
        pytest.param("ZOË", "Zoë Smith", True, id="upper-accented"),
        pytest.param("sm", "Zoë Smith", True, id="second-word"),
        pytest.param("zoe  smith ", "Zoe\u0308 Smith", True, id="nfd-and-spaces"),
        pytest.param("ZOE\u0308 SM", "Zoë Smith", True, id="nfd-typed"),
        pytest.param("to\u0302 la\u0302", "Tô Lâm", True, id="nfd-typed-circumflex"),
        pytest.param("a\u030asa", "Åsa Berg", True, id="nfd-typed-ring"),
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
    # Neo4j's checks say the same of the stored folded words.
    folded = folded_name(name)
    assert set(folded.split(" ")) == words
    assert _cypher_matches(keys, folded) is found


def test_blank_and_punctuation_type_nothing() -> None:
    assert typed_keys("   ") == ()
    assert typed_keys("-- !!") == ()
    assert typed_keys("Zoë zoe ZOE") == ("zoe",)


def test_folded_words_never_hold_a_space_and_agree_with_the_words() -> None:
    """Over names with folds of every shape: ``nameFolded`` splits back into the words the
    memory reader compares, and the scan's check is the word-by-word check."""
    rng = random.Random(7)
    letters = list("aeosstfilnz") + list("àéöøłŀ’'.-") + [*"ßæœĳǆﬁþŉ", "ﬀ", "ﬃ", "ꜳ", "ǉ", "李", "\u3000"]
    for _ in range(500):
        name = " ".join("".join(rng.choice(letters) for _ in range(rng.randint(1, 6))) for _ in range(3))
        folded = folded_name(name)
        words = name_keys(name)
        assert (set(folded.split(" ")) if folded else set()) == words, name
        for word in words:
            for n in range(1, len(word) + 1):
                key = word[:n]
                assert _cypher_matches((key,), folded), (key, name)
                assert _cypher_matches((key + "q",), folded) is any(w.startswith(key + "q") for w in words)


def test_prefix_query_escapes_lucene_syntax() -> None:
    assert prefix_query(("zoe", "sm")) == "+zoe* +sm*"
    assert prefix_query(("a+b", "(x)", "c*d", "e\\f")) == "+a\\+b* +\\(x\\)* +c\\*d* +e\\\\f*"
    assert prefix_query(typed_keys("s" * 40 + " " + "f" * 30)) == "+" + "s" * 24 + "* +" + "f" * 24 + "*"
    assert fold_key("ǅemal") == "dzemal"


def test_the_short_cut_for_plain_names_folds_as_the_tokenizer_does() -> None:
    """Names of ASCII letters and single spaces skip the tokenizer: same words, same order."""
    rng = random.Random(11)
    for _ in range(2000):
        words = [
            "".join(rng.choice("aAbBzZqQ") for _ in range(rng.randint(1, 8)))
            for _ in range(rng.randint(1, 4))
        ]
        name = " ".join(words)
        assert folded_name(name) == " ".join(dict.fromkeys(fold_key(w) for w in tokens(name))), name
    assert folded_name("A" * 300) == " ".join(fold_key(w) for w in tokens("A" * 300))  # split as Lucene does


def test_an_ascii_name_folds_as_its_key_does() -> None:
    """What the upgrades rely on (``names.fill_authors``, ``cypher_upgrades.AUTHOR_FOLDS``):
    an author whose name is all ASCII had, before 0.9.8, the ``nameFolded`` of its key; only
    the others are folded again. (Beyond ASCII it need not hold: ``𝐐u``, ``Σοφος``.)"""
    rng = random.Random(12)
    for _ in range(20000):
        name = author_display_name("".join(rng.choice(string.printable) for _ in range(rng.randint(1, 30))))
        assert folded_name(name) == folded_name(author_name_key(name)), name
    for word in ("Ab.", "AB'", "a-B", "x_Y", "A1"):
        name = author_display_name(word * 100)  # longer than Lucene's longest word
        assert folded_name(name) == folded_name(author_name_key(name)), name
    assert folded_name("\U0001d410u") != folded_name(author_name_key("\U0001d410u"))
    assert folded_name("Σοφος") != folded_name(author_name_key("Σοφος"))


@pytest.mark.parametrize(
    ("typed", "name"),
    [
        pytest.param("ilker", "İlker Şahin", id="dotted-capital-first"),
        pytest.param("sahin", "Mehmet ŞAHİN", id="dotted-capital-inside"),
        pytest.param("mehmet şahin", "Mehmet ŞAHİN", id="typed-cedilla"),
        pytest.param("ismail", "İsmail Yılmaz", id="dotted-typed-plain"),
        pytest.param("İsmail", "ISMAIL YILMAZ", id="dotted-typed"),
        pytest.param("İsmail", "ısmaıl kılıç", id="dotted-typed-dotless-name"),
        pytest.param("yilmaz", "İsmail Yılmaz", id="dotless-i"),
        pytest.param("quentin", "QU\U0001d404\U0001d40d\U0001d413\U0001d408\U0001d40d", id="bold"),
    ],
)
def test_a_name_is_found_by_what_its_key_folds_to(typed: str, name: str) -> None:
    """Since 0.9.8 ``nameFolded`` is folded from the key (``names.folded_words``), which case
    folding spells ``İ`` as ``i`` and a dot above (U+0307): Lucene's table folds ``İ`` whole but
    not the dot alone, so ``ilker`` found ``İlker`` by its name in 0.9.7 and, until the dot was
    dropped, not by its key (a review's sweep: 44 of 750 prefixes lost)."""
    folded = folded_words(author_name_key(name))
    keys = typed_keys(typed)
    assert _cypher_matches(keys, folded), (keys, folded)
    assert all(any(word.startswith(key) for word in folded.split(" ")) for key in keys)
