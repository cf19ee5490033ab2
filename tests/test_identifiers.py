"""Identifier derivation and author identity."""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path

import pytest

from pith_graph.errors import BundleError
from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.identifiers import (
    author_name_key,
    canonical_arxiv_id,
    collapse_whitespace,
    pith_base32,
    pith_number_for,
    short_pith_number_for,
    split_authors,
)
from pith_graph.loader.keyring import PinnedKey, default_keyring
from pith_graph.loader.verify import verify_bundle
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle

SAMPLE_FILES = sorted(Path(SAMPLES).glob("*.json"))
ARXIV_IDS = json.loads((Path(__file__).parent / "vectors" / "arxiv-ids.json").read_text())
SIGNER = SignerIdentity.from_seed(b"identifiers", key_id="identifiers-key", signer_id="identifiers.invalid")
KEYRING = default_keyring().with_keys([PinnedKey(SIGNER.key_id, SIGNER.public_key, SIGNER.signer_id)])


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


# -- arXiv ids: one spelling per paper ----------------------------------------------------------


@pytest.mark.parametrize("case", ARXIV_IDS, ids=[case["id"] for case in ARXIV_IDS])
def test_canonical_arxiv_id(case: dict[str, str | None]) -> None:
    assert canonical_arxiv_id(str(case["text"])) == case["canonical"]


def test_every_real_source_id_is_canonical() -> None:
    for path in SAMPLE_FILES:
        source_id = json.loads(path.read_bytes())["canonical_record"]["source"]["id"]
        assert canonical_arxiv_id(source_id) == source_id


def _bundle_for(arxiv_id: str) -> dict[str, object]:
    # aliases (arxiv, arxiv_version, DOI) derived from the id
    return build_bundle(PaperSpec.example(arxiv_id), SIGNER)


@pytest.mark.parametrize(
    "case", [c for c in ARXIV_IDS if c["canonical"] == c["text"]], ids=lambda c: str(c["id"])
)
def test_a_bundle_with_a_canonical_arxiv_id_verifies(case: dict[str, str]) -> None:
    verify_bundle(_bundle_for(case["text"]), KEYRING)


@pytest.mark.parametrize(
    "case", [c for c in ARXIV_IDS if c["canonical"] != c["text"]], ids=lambda c: str(c["id"])
)
def test_a_bundle_with_another_spelling_is_rejected_naming_arxivs(case: dict[str, str | None]) -> None:
    """A consistent, signed bundle whose source id is a second spelling of a paper (or no
    arXiv id at all: Unicode digits, ``2601.0000١``) would dodge precedence, which compares
    source ids byte for byte. The message quotes the id in ASCII, so a look-alike shows."""
    with pytest.raises(BundleError) as caught:
        verify_bundle(_bundle_for(str(case["text"])), KEYRING)
    assert caught.value.code.value == "identifier_mismatch"
    message = caught.value.message
    assert message.isascii()
    assert f"source.id {case['text']!a} is not an arXiv id as arXiv writes it" in message
    assert "archive/YYMMNNN in lower case without a subject class, in ASCII only" in message
    if case["canonical"] is not None:
        assert message.endswith(f"arXiv writes it {case['canonical']!r}")
