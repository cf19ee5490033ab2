"""Identifier derivation and author identity."""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path

import pytest

from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.identifiers import (
    author_name_key,
    collapse_whitespace,
    pith_base32,
    pith_number_for,
    short_pith_number_for,
    split_authors,
)

SAMPLE_FILES = sorted(Path(SAMPLES).glob("*.json"))


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.stem)
def test_real_identifiers_derive(path: Path) -> None:
    bundle = json.loads(path.read_bytes())
    digest = bundle["canonical_sha256"]
    submitted = bundle["canonical_record"]["metadata"]["submitted_at"]
    assert pith_number_for(digest, submitted) == bundle["pith_number"]
    assert short_pith_number_for(digest) == bundle["short_pith_number"]
    body = pith_base32(digest)
    for alias in bundle["source_aliases"]:
        if alias["alias_kind"].startswith("pith_short_"):
            size = int(alias["alias_kind"].rsplit("_", 1)[1])
            assert alias["alias_value"] == body[:size]


@pytest.mark.parametrize(
    ("left", "right"),
    [
        pytest.param(unicodedata.normalize("NFD", "Zoë Lee"), "Zoë Lee", id="nfd-nfc"),
        pytest.param("Zoë  Lee", "Zoë Lee", id="double-space"),
        pytest.param(" Zoë\tLee ", "Zoë Lee", id="tabs-and-ends"),
        pytest.param("ZOË LEE", "zoë lee", id="case"),
        pytest.param("Straße", "STRASSE", id="casefold-eszett"),
        pytest.param("ﬁona", "fiona", id="nfkc-ligature"),
    ],
)
def test_same_author_same_key(left: str, right: str) -> None:
    assert author_name_key(left) == author_name_key(right)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        pytest.param("John D. Owens", "John Owens", id="initial-matters"),
        pytest.param("Zoë Lee", "Zoe Lee", id="diaeresis-matters"),
    ],
)
def test_different_authors_differ(left: str, right: str) -> None:
    assert author_name_key(left) != author_name_key(right)


def test_split_authors_trims_drops_empties_and_dedupes() -> None:
    text = f"Zoë Lee, ,{unicodedata.normalize('NFD', 'Zoë  Lee')}, Bo Chen ,,"
    assert split_authors(text) == [("zoë lee", "Zoë Lee"), ("bo chen", "Bo Chen")]


def test_collapsing_whitespace_agrees_with_the_regex_on_every_code_point() -> None:
    every = [chr(code) for code in range(sys.maxunicode + 1)]
    regex = re.compile(r"\s")
    assert [c for c in every if regex.fullmatch(c)] == [c for c in every if c.isspace()]
    sample = "".join(c for c in every if c.isspace()) + "a" + "\u00a0\u2003b\t\n"
    assert collapse_whitespace(sample) == re.sub(r"\s+", " ", sample).strip() == "a b"
