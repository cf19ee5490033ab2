"""The authors ``serve`` compares to warn of a 0.9.7 database's ``nameFolded``
(``cypher_upgrades.AUTHOR_FOLDS``): every name whose 0.9.7 fold (of its display name, by
``fold_key`` without its dot-above rule) differs from 0.9.8's (of its key) is among them. The
proof sweeps every code point, inside a name and alone, through both folds; the Neo4j case
asks the server's own ``IS NOT NFKC NORMALIZED`` and regular expression (Java's Unicode
version is not Python's) of every name the sweep found. ``pith-graph schema``'s
``refold_authors`` compares the same candidates, and only them (since 0.9.9)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from pith_graph.api.reads.folding import _FOLD, _PLAIN, _pieces
from pith_graph.api.reads.words import tokens
from pith_graph.loader.identifiers import author_display_name, author_name_key
from pith_graph.loader.stores.cypher_upgrades import REFOLDED_CHARACTERS, REFOLDED_PATTERN
from pith_graph.loader.stores.names import folded_words

#: (a name, 0.9.7's nameFolded of it, 0.9.8's, whether the candidates hold it).
VECTORS = [
    ("Σοφος Bo", "σοφος bo", "σοφοσ bo", True),  # final sigma: case-folded to σ
    ("QU\U0001d404NTIN Truthful", "qu\U0001d404ntin truthful", "quentin truthful", True),  # bold E
    ("Kri\ufb05ina Lee", "kri\ufb05ina lee", "kristina lee", True),  # the ligature ﬅ
    ("\u1fbcλκη Bo", "\u1fb3λκη bo", "αιλκη bo", True),  # ᾼ: alpha with prosgegrammeni
    ("\u216b Bo", "\u217b bo", "xii bo", True),  # Roman numeral twelve
    ("\u1c80a Bo", "\u1c80a bo", "\u0432a bo", True),  # Cyrillic rounded ve: case-folded to в
    ("a\U00010781 Bo", "a bo", "a\u02d0 bo", True),  # Unicode 14: Java 17 takes it for NFKC-normal
    ("\uff3a\uff4f\uff45 Smith", "zoe smith", "zoe smith", True),  # full-width: Lucene folds it too
    ("\u13a0\uab71 Bo", "\uab70\uab71 bo", "\uab70\uab71 bo", False),  # Cherokee: lower case after both
    ("\u0130lker \u015eahin", "ilker sahin", "ilker sahin", False),  # dotted İ: its dot dropped (0.9.8)
    ("Stra\u00dfe Lee", "strasse lee", "strasse lee", False),
    ("Zoe\u0308 Smith", "zoe smith", "zoe smith", False),  # display names are NFC
]


def old_fold(display: str) -> str:
    """``nameFolded`` as 0.9.7 wrote it: ``folded_name`` of the display name, its words folded
    by Lucene's table, then lower case (no dot above dropped)."""

    def fold_key(word: str) -> str:
        folded = word.translate(_FOLD)
        return folded if folded.isascii() and folded.islower() else "".join(c.lower() for c in folded)

    if _PLAIN.fullmatch(display):
        return " ".join(dict.fromkeys(display.lower().split(" ")))
    return " ".join(dict.fromkeys(p for word in tokens(display) for p in _pieces(fold_key(word))))


def new_fold(display: str) -> str:
    return folded_words(author_name_key(display))


def _ranges(pattern: str) -> list[tuple[int, int]]:
    found = re.findall(r"\\x\{([0-9A-F]+)\}(?:-\\x\{([0-9A-F]+)\})?", pattern)
    return [(int(low, 16), int(high or low, 16)) for low, high in found]


def selected(display: str) -> bool:
    """Python's reading of the candidates' filter (Cypher: ``IS NOT NFKC NORMALIZED OR =~ $pattern``)."""
    return not unicodedata.is_normalized("NFKC", display) or any(
        low <= ord(c) <= high for c in display for low, high in REFOLDED_CHARACTERS
    )


@cache
def differing() -> tuple[str, ...]:
    """Every display name (each code point inside ``Ab?cd Ef`` and alone) whose folds differ:
    the sweep, about 25 s, runs once per process, and once per ``scripts/test`` run (since
    0.9.12): both halves call it (the Neo4j case in the Java half, the Python one in the
    other), and with ``PITH_TEST_SHARED`` (a folder ``scripts/test`` makes for its run) the
    first to get there sweeps while the other waits for its answer, then reads it."""
    shared = os.environ.get("PITH_TEST_SHARED")
    if not shared:
        return _sweep()
    answer = Path(shared) / "refold-differing.json"  # (both halves run one interpreter)
    with (Path(shared) / "refold-differing.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its process ends
        if answer.exists():
            return tuple(json.loads(answer.read_text(encoding="utf-8")))
        found = _sweep()
        partial = answer.with_suffix(".partial")
        partial.write_text(json.dumps(found), encoding="utf-8")
        partial.replace(answer)  # whole or absent, whatever stops this process
        return found


def _sweep() -> tuple[str, ...]:
    found = []
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        for name in (f"Ab{chr(code)}cd Ef", chr(code)):
            display = author_display_name(name)
            if display and old_fold(display) != new_fold(display):
                found.append(display)
    return tuple(found)


@pytest.mark.parametrize(("name", "old", "new", "candidate"), VECTORS)
def test_vectors(name: str, old: str, new: str, candidate: bool) -> None:
    display = author_display_name(name)
    assert (old_fold(display), new_fold(display), selected(display)) == (old, new, candidate)


def test_the_pattern_is_the_characters() -> None:
    assert _ranges(REFOLDED_PATTERN) == list(REFOLDED_CHARACTERS)
    assert REFOLDED_PATTERN.startswith("(?s).*[") and REFOLDED_PATTERN.endswith("].*")
    assert all(low <= high for low, high in REFOLDED_CHARACTERS)


@pytest.mark.slow
def test_every_name_whose_folds_differ_is_a_candidate() -> None:
    found = differing()
    assert len(found) > 3000  # (6,934 with Python 3.11's Unicode 14)
    assert [name for name in found if not selected(name)] == []
    # each range holds a character whose folds differ (those NFKC-normal to Python only where
    # Java's normalizer, of an older Unicode, would leave the name out: the Neo4j case below)
    for low, high in REFOLDED_CHARACTERS:
        assert any(low <= ord(c) <= high for name in found for c in name), (hex(low), hex(high))


@pytest.mark.neo4j
@pytest.mark.slow
def test_the_server_selects_every_name_whose_folds_differ(neo4j_server: Any) -> None:
    """Neo4j's filter itself (Java 17 knows Unicode 13: U+10781 is NFKC-normal to it)."""
    store = neo4j_server.connect()
    try:
        with store.driver.session(database=store.database) as session:
            missed = session.run(
                "UNWIND $names AS name WITH name WHERE NOT (name IS NOT NFKC NORMALIZED OR name =~ $pattern) "
                "RETURN collect(name) AS missed",
                names=list(differing()),
                pattern=REFOLDED_PATTERN,
            ).single(strict=True)["missed"]
            ascii_or_plain = ["Ann Lee", "Zoë Smith", "\u13a0\uab71 Bo", "Σοφοσ", "a\U000107bb"]
            kept = session.run(
                "UNWIND $names AS name WITH name WHERE name IS NOT NFKC NORMALIZED OR name =~ $pattern "
                "RETURN collect(name) AS kept",
                names=ascii_or_plain,
                pattern=REFOLDED_PATTERN,
            ).single(strict=True)["kept"]
    finally:
        store.close()
    assert (missed, kept) == ([], [])


@pytest.mark.neo4j
def test_schema_compares_only_the_candidates(neo4j_server: Any) -> None:
    """``refold_authors`` (``pith-graph schema``) reads back and compares only the candidates
    (since 0.9.9; 0.9.8 compared every name beyond ASCII): each whose ``nameFolded`` 0.9.7
    wrote is folded again, in pages of ``scan`` authors too, and an author no 0.9.7 fold could
    get wrong is not read, even with a ``nameFolded`` set by hand that is not its key's."""
    from pith_graph.loader.stores.neo4j_names import refold_authors

    displays = [author_display_name(name) for name, *_ in VECTORS]
    written = [[author_name_key(d), d, old_fold(d)] for d in displays]  # as 0.9.7 wrote them
    written += [["ann lee", "Ann Lee", "ann lee"], ["zoë smith", "Zoë Smith", "set by hand"]]
    expected = {key: new_fold(name) for key, name, _ in written} | {"zoë smith": "set by hand"}
    refolded = sum(1 for _, old, new, _ in VECTORS if old != new)
    store = neo4j_server.connect()
    try:
        store.clear()
        with store.driver.session(database=store.database) as session:
            for scan in (None, 3, 1):
                session.run(
                    "UNWIND $rows AS row MERGE (a:Author {nameKey: row[0]}) "
                    "SET a.name = row[1], a.nameFolded = row[2], a.paperCount = 1",
                    rows=written,
                ).consume()
                done = refold_authors(session) if scan is None else refold_authors(session, scan)
                stored = {
                    r["key"]: r["folded"]
                    for r in session.run("MATCH (a:Author) RETURN a.nameKey AS key, a.nameFolded AS folded")
                }
                assert (done, stored) == (refolded, expected), scan
                assert refold_authors(session) == 0  # up to date
        store.clear()
    finally:
        store.close()
