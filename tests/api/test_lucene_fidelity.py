"""The Python emulation of Neo4j's full-text analysis agrees with Lucene itself.

``tests/lucene/LuceneAnalysis.java`` runs on the Lucene jars Neo4j ships (the launcher's
``lib/``, built by ``scripts/neo4j build``): it splits texts into words, dumps the
ASCII-folding table, Java's lower case and the norm table, and probes every code point's
part in a word. The checked-in tables must be exactly Lucene's, and the words must be the
same for every text of a generated corpus, the hand-made vectors and a seeded fuzz.
"""

from __future__ import annotations

import base64
import itertools
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from pith_graph.api.reads import bm25, words
from pith_graph.testing.papers import generate_papers

pytestmark = pytest.mark.lucene

PROJECT = Path(__file__).resolve().parents[2]
TOOL = PROJECT / "tests" / "lucene" / "LuceneAnalysis.java"
READS = PROJECT / "api" / "reads"
VECTORS = [
    "Rocket 🚀 science of deep learning, 1,000 times",
    "U.S.A. O'Brien's multi-GPU v2.0 self_supervised results",
    "İstanbul ΣΊΣΥΦΟΣ Ünïcödé: Erdős–Rényi graphs",
    "李伟的 graph neural networks",
    "Schro\u0308dinger bridges in 3.5 dimensions",
    "👍🏽 🇫🇷 1️⃣ ❤️ 👨\u200d👩\u200d👧 a🚀b #️⃣",
    "カタカナabc ひらがな 한국어 김민수 ไทยภาษา",
    "e-mail foo@bar.com http://x.org/a_b __init__ _x_",
    "x" * 300,
    "ＡＢＣ １２３ x² H₂O ½",
    "don't 'quoted' ‘x’ a’b ש\"ע א'",
    "3,5.6 1.2.3 a.b.c a:b a::b x_ 5_a",
    "Zoë Smith, ZOË, Łukasz Øberg, Straße, Æther, ǅemal, Ｆｕｌｌ",
]
_POOL = [
    *"aZé1 9.,':;_-#*\t\n\"",
    *"\u0301\u200d\ufe0f\ufe0e\u20e3\u00ad\u00a0\u2060",
    *"🚀👍🏽❤©🇫🇷カひ李한กא\u05f4ب²Ａ１。∑İßΩ٣\u3005ー・’٫",
    "\U0001d49c",
    "\U000e0067",
    "\U000e007f",
]


def _java() -> tuple[str, str]:
    java = shutil.which("java")
    lib = PROJECT / "scripts" / "neo4j-launcher" / "target" / "lib"
    if java is not None and not lib.is_dir() and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        subprocess.run([str(PROJECT / "scripts" / "neo4j"), "build"], check=True, timeout=900)
    if java is None or not lib.is_dir():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("Java and the Lucene jars (scripts/neo4j build) are required under CI")
        pytest.skip("needs java and scripts/neo4j build (the Lucene jars Neo4j uses)")
    return java, str(lib / "*")


def _lucene(mode: str, stdin: str = "") -> str:
    java, classpath = _java()
    done = subprocess.run(
        [java, "-cp", classpath, str(TOOL), mode],
        input=stdin.encode(),
        capture_output=True,
        check=True,
        timeout=600,
    )
    return done.stdout.decode("utf-8")


def _lucene_tokens(texts: list[str]) -> list[list[str]]:
    lines = "".join(base64.b64encode(text.encode()).decode() + "\n" for text in texts)
    out = _lucene("tokens", lines).splitlines()
    return [[base64.b64decode(token).decode() for token in line.split()] for line in out]


def test_the_fold_table_is_lucenes() -> None:
    assert _lucene("fold") == (READS / "ascii_folding.txt").read_text("ascii")


@pytest.mark.slow
def test_the_word_classes_are_lucenes() -> None:
    assert _lucene("classes") == (READS / "word_classes.txt").read_text("ascii")


def test_norms_decode_as_lucene_decodes_them() -> None:
    lengths = [int(line) for line in _lucene("norms").split()]
    assert [bm25._decode_norm(byte) for byte in range(256)] == lengths
    assert all(bm25.encode_norm(lengths[byte]) == byte for byte in range(1, 256))


def test_lower_case_is_javas_for_every_word_character() -> None:
    java = {
        int(a, 16): chr(int(b, 16)) for a, b in (line.split("\t") for line in _lucene("lower").splitlines())
    }
    for code, lowered in java.items():
        char = chr(code)
        if words.tokens("a" + char) == ["a" + lowered] or words.tokens(char) == [lowered]:
            assert words._lower(char) == lowered, hex(code)


def test_words_are_lucenes_for_a_corpus_and_the_vectors() -> None:
    texts = list(VECTORS)
    for spec in itertools.islice(generate_papers(1500, seed=11), 1500):
        texts += [spec.title, spec.abstract_excerpt, *spec.authors]
    found = _lucene_tokens(texts)
    different = [(text, expected, words.tokens(text)) for text, expected in zip(texts, found, strict=True)]
    assert [d for d in different if d[1] != d[2]] == []


def test_words_are_lucenes_for_hostile_mixtures() -> None:
    """Random strings of letters, digits, joiners, marks, emoji parts and CJK: what is left
    are rare corners (a Hebrew letter's quote after an emoji joiner, keycaps before a ZWJ)."""
    rng = random.Random(20261130)
    texts = ["".join(rng.choice(_POOL) for _ in range(rng.randint(1, 12))) for _ in range(5000)]
    found = _lucene_tokens(texts)
    different = [text for text, expected in zip(texts, found, strict=True) if words.tokens(text) != expected]
    assert len(different) <= 5, different
