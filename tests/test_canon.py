"""Canonical JSON: orjson's sorted compact bytes are the canonical form, both encodings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pith_graph.loader.canon import ascii_escaped, canon, canon_variants, digest_matches, sha256_hex
from pith_graph.loader.facade import SAMPLES

SAMPLE_FILES = sorted(Path(SAMPLES).glob("*.json"))


def stdlib_canon(value: Any, *, ensure_ascii: bool) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=ensure_ascii).encode("utf-8")


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.stem)
def test_real_bundle_digest_recomputes(path: Path) -> None:
    bundle = json.loads(path.read_bytes())
    body = {k: v for k, v in bundle.items() if k != "bundle_signature"}
    assert canon(body) == stdlib_canon(body, ensure_ascii=True)
    assert sha256_hex(canon(body)) == bundle["bundle_signature"]["bundle_sha256"]
    assert sha256_hex(canon(bundle["canonical_record"])) == bundle["canonical_sha256"]


text_with_everything = st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=("Cs",)),
    max_size=12,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | text_with_everything,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text_with_everything, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_raw_form_equals_stdlib_without_ascii_escaping(value: Any) -> None:
    assert canon(value) == stdlib_canon(value, ensure_ascii=False)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_ascii_form_equals_stdlib_ensure_ascii(value: Any) -> None:
    assert ascii_escaped(canon(value)) == stdlib_canon(value, ensure_ascii=True)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"name": "Zoë"}, id="latin"),
        pytest.param({"name": "李伟"}, id="cjk"),
        pytest.param({"name": "😀"}, id="astral-surrogate-pair"),
        pytest.param({"name": "a\u007fb"}, id="del"),
    ],
)
def test_digest_accepts_either_encoding_only(value: Any) -> None:
    raw = sha256_hex(stdlib_canon(value, ensure_ascii=False))
    escaped = sha256_hex(stdlib_canon(value, ensure_ascii=True))
    assert raw != escaped
    assert digest_matches(value, raw)
    assert digest_matches(value, escaped)
    assert not digest_matches(value, sha256_hex(json.dumps(value).encode()))


#: The edges of Python's ensure_ascii escaping: the printable ASCII range's ends (kept), DEL
#: (escaped), the last character of the Basic Multilingual Plane (one ``\u`` escape) and the
#: first and last astral ones (a surrogate pair): hypothesis rarely draws exactly these.
ESCAPING_EDGES = [" ~", "\x7f", "\x1f", "\uffff", "\U00010000", "\U0010ffff", "\ud7ff\ue000"]


@pytest.mark.parametrize("text", ESCAPING_EDGES, ids=ascii)
def test_ascii_form_at_the_escaping_edges(text: str) -> None:
    value = {"t": text}
    assert ascii_escaped(canon(value)) == stdlib_canon(value, ensure_ascii=True)
    assert digest_matches(value, sha256_hex(stdlib_canon(value, ensure_ascii=True)))


@pytest.mark.parametrize(
    ("value", "forms"),
    [
        pytest.param({"n": "plain"}, [b'{"n":"plain"}'], id="ascii: one form"),
        pytest.param({"n": "a\x7fb"}, [b'{"n":"a\x7fb"}', b'{"n":"a\\u007fb"}'], id="del: two"),
        pytest.param({"n": "Zo\u00eb"}, [b'{"n":"Zo\xc3\xab"}', b'{"n":"Zo\\u00eb"}'], id="latin: two"),
    ],
)
def test_canon_variants_yield_the_escaped_form_only_when_it_differs(value: Any, forms: list[bytes]) -> None:
    assert list(canon_variants(value)) == forms
