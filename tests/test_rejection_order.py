"""The README's rejection order is the code's: an input that breaks two rules gets the code of
the one listed first. The order is read from the README's verification table itself."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from pith_graph.errors import BundleError
from pith_graph.loader.keyring import PinnedKey, default_keyring
from pith_graph.loader.parse import InputLimits, parse_bundle
from pith_graph.loader.verify import verify_bundle
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, resign

README = Path(__file__).resolve().parents[1] / "README.md"
_TABLE = README.read_text(encoding="utf-8").split("### Verification", 1)[1].split("**Trust**", 1)[0]
ORDER = re.findall(r"^\| `(\w+)` \|", _TABLE, flags=re.M)
TRUST = {"untrusted_key", "key_mismatch", "revoked_key"}  # checked together, signature by signature


def test_the_table_lists_every_code_once() -> None:
    from pith_graph.errors import RejectCode

    assert sorted(ORDER) == sorted(code.value for code in RejectCode)


# -- parsing: inputs breaking two rules at once ---------------------------------------------------

LIMITS = InputLimits(max_bytes=200, max_depth=3)
PARSE_CASES: list[tuple[str, str, bytes]] = [
    ("too_large", "malformed_json", b"{" + b" " * 300),
    ("malformed_json", "too_deep", b"[[[[[1]]]]] trailing"),
    ("malformed_json", "not_object", b"[1,2"),
    ("malformed_json", "duplicate_key", b'{"a":1,"a":2'),
    ("duplicate_key", "too_deep", b'{"a":{"b":{"c":{"d":1}}},"a":1}'),  # the duplicate hides the deep branch
    ("duplicate_key", "too_deep", b'{"a":1,"a":{"b":{"c":{"d":1}}}}'),  # the deep branch wins the duplicate
    ("duplicate_key", "not_object", b'[{"a":1,"a":2}]'),
    ("too_deep", "not_object", b"[[[[[1]]]]]"),
]


@pytest.mark.parametrize(
    ("first", "second", "data"),
    PARSE_CASES,
    ids=[f"{a}-then-{b}-{i}" for i, (a, b, _) in enumerate(PARSE_CASES)],
)
def test_parsing_reports_the_rule_listed_first(first: str, second: str, data: bytes) -> None:
    assert ORDER.index(first) < ORDER.index(second), f"README lists {second} before {first}"
    with pytest.raises(BundleError) as caught:
        parse_bundle(data, LIMITS)
    assert caught.value.code.value == first


# -- verification: bundles breaking two checks at once ----------------------------------------------

SIGNER = SignerIdentity.from_seed(b"order", key_id="order-key", signer_id="order.invalid")
STRANGER = SignerIdentity.from_seed(b"order-stranger", key_id="stranger-key", signer_id="stranger.invalid")
KEYRING = default_keyring().with_keys([PinnedKey(SIGNER.key_id, SIGNER.public_key, SIGNER.signer_id)])
SPEC = PaperSpec.example("2404.00001")
Breaker = Callable[[dict[str, Any]], None]


def _schema(b: dict[str, Any]) -> None:
    del b["events"][1]["payload"]["graph_snapshot"]["paper"]["title"]


def _untrusted(b: dict[str, Any]) -> None:
    resign(b, STRANGER)


def _future(b: dict[str, Any]) -> None:
    b["built_at"] = "2999-01-01T00:00:00Z"


def _identifier(b: dict[str, Any]) -> None:
    b["source_aliases"].append(
        {"alias_kind": "arxiv", "alias_value": "1907.13257", "created_at": SPEC.created_at}
    )


def _digest(b: dict[str, Any]) -> None:
    b["canonical_record"]["schema_version"] = "9.9"  # no longer what canonical_sha256 covers


def _record(b: dict[str, Any]) -> None:
    b["events"][1]["payload"]["graph_snapshot"]["paper"]["license"] = "other"


def _state(b: dict[str, Any]) -> None:
    b["state"]["event_count"] = 7


def _signature(b: dict[str, Any]) -> None:
    b["bundle_signature"]["signature_b64"] = b["events"][0]["signature"]["signature_b64"]


# (code, how to break it, whether the bundle must be re-signed by the trusted key after)
BREAKERS: dict[str, tuple[Breaker, bool]] = {
    "schema_error": (_schema, True),
    "untrusted_key": (_untrusted, False),
    "future_dated": (_future, True),
    "identifier_mismatch": (_identifier, True),
    "digest_mismatch": (_digest, False),
    "record_mismatch": (_record, True),
    "state_mismatch": (_state, True),
    "bad_signature": (_signature, False),
}
_CODES = list(BREAKERS)
PAIRS = [(a, b) for i, a in enumerate(_CODES) for b in _CODES[i + 1 :] if not (a in TRUST and b in TRUST)]


def _broken(*codes: str) -> dict[str, Any]:
    bundle = build_bundle(SPEC, SIGNER)
    # Apply the later check's break first, so re-signing for the earlier one keeps both.
    for code in sorted(codes, key=ORDER.index, reverse=True):
        breaker, resigned = BREAKERS[code]
        breaker(bundle)
        if resigned:
            resign(bundle, SIGNER, refresh_canonical=False, refresh_identifiers=False, refresh_state=False)
    return orjson.loads(orjson.dumps(bundle))


@pytest.mark.parametrize("code", _CODES)
def test_each_breaker_alone_gives_its_code(code: str) -> None:
    with pytest.raises(BundleError) as caught:
        verify_bundle(_broken(code), KEYRING)
    assert caught.value.code.value == code


@pytest.mark.parametrize("pair", PAIRS, ids="-then-".join)
def test_verification_reports_the_check_listed_first(pair: tuple[str, str]) -> None:
    first, second = pair
    assert ORDER.index(first) < ORDER.index(second), f"README lists {second} before {first}"
    with pytest.raises(BundleError) as caught:
        verify_bundle(copy.deepcopy(_broken(first, second)), KEYRING)
    assert caught.value.code.value == first


def _respelled(b: dict[str, Any]) -> None:
    """The paper's arXiv id in a spelling arXiv never writes (four digits for a 2024 id)."""
    for source in (b["canonical_record"]["source"], b["source"]):
        source["id"] = "2404.0001"


LATER = [code for code in _CODES if ORDER.index(code) > ORDER.index("identifier_mismatch")]


@pytest.mark.parametrize("later", LATER)
def test_an_arxiv_id_in_another_spelling_is_reported_before_later_checks(later: str) -> None:
    bundle = build_bundle(SPEC, SIGNER)
    breaker, resigned = BREAKERS[later]
    breaker(bundle)
    if resigned:
        resign(bundle, SIGNER, refresh_canonical=False, refresh_identifiers=False, refresh_state=False)
    _respelled(bundle)
    with pytest.raises(BundleError) as caught:
        verify_bundle(orjson.loads(orjson.dumps(bundle)), KEYRING)
    assert caught.value.code.value == "identifier_mismatch"
    assert "'2404.0001' is not an arXiv id as arXiv writes it" in caught.value.message
