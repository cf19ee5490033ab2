"""Ed25519 verification (:mod:`pith_graph.loader.signatures`): the Rust extension and
libsodium accept exactly the same signatures.

The edge cases live in ``vectors/ed25519-edge-cases.json``: the twelve signatures on which
Ed25519 verifiers are known to disagree (small-order and mixed-order points, S out of range,
non-canonical encodings), each with libsodium's verdict. Both implementations must give it;
random signatures, valid and altered, must get the same answer from both.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nacl.signing import SigningKey

from pith_graph.loader import signatures
from pith_graph.loader.keyring import PinnedKey
from pith_graph.loader.signatures import SodiumKey, Verifier, verifying_key

VECTORS = json.loads((Path(__file__).parent / "vectors" / "ed25519-edge-cases.json").read_text())
#: The order of Ed25519's prime subgroup.
L = 2**252 + 27742317777372353535851937790883648493


def implementations() -> list[Any]:
    found: list[Any] = [SodiumKey]
    if signatures.NATIVE:
        from pith_graph.loader._ed25519 import VerifyingKey

        found.append(VerifyingKey)
    return found


KINDS = pytest.mark.parametrize("kind", implementations(), ids=lambda kind: kind.__name__)


def test_this_checkout_verifies_with_the_rust_extension() -> None:
    """scripts/bootstrap builds it (a Rust toolchain is part of the set-up); were the build
    to fail quietly, every signature would be checked by the slower fallback."""
    from pith_graph.loader._ed25519 import VerifyingKey

    assert signatures.NATIVE
    assert type(verifying_key(bytes(SigningKey(bytes(32)).verify_key))) is VerifyingKey


@KINDS
@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda case: f"{case['id']}-{case['case']}")
def test_edge_cases_get_libsodiums_verdict(kind: Any, case: dict[str, Any]) -> None:
    key: Verifier = kind(bytes.fromhex(case["public_key"]))
    assert key.verify(bytes.fromhex(case["message"]), bytes.fromhex(case["signature"])) is case["valid"]


def test_the_vectors_hold_one_valid_case() -> None:
    """Guards the data file: libsodium accepts only the mixed-order case that every verifier
    accepts, so a vector file whose verdicts were all ``false`` would not pass."""
    assert [case["id"] for case in VECTORS["cases"] if case["valid"]] == [3]
    assert len(VECTORS["cases"]) == 12


seeds = st.binary(min_size=32, max_size=32)
messages = st.binary(max_size=64)


@KINDS
@settings(max_examples=60, deadline=None)
@given(seed=seeds, message=messages, flip=st.integers(min_value=0, max_value=8 * 64 - 1))
def test_valid_signatures_verify_and_altered_ones_do_not(
    kind: Any, seed: bytes, message: bytes, flip: int
) -> None:
    signer = SigningKey(seed)
    key: Verifier = kind(bytes(signer.verify_key))
    signature = signer.sign(message).signature
    assert key.verify(message, signature)
    altered = bytearray(signature)
    altered[flip // 8] ^= 1 << (flip % 8)
    assert not key.verify(message, bytes(altered))
    assert not key.verify(message + b"\x00", signature)
    assert not kind(bytes(SigningKey(bytes(31) + b"\x01").verify_key)).verify(message, signature)


@KINDS
@settings(max_examples=30, deadline=None)
@given(seed=seeds, message=messages)
def test_s_plus_the_group_order_is_refused(kind: Any, seed: bytes, message: bytes) -> None:
    """The same signature with S + L satisfies the equation; the rules refuse it (no
    malleable signatures)."""
    signer = SigningKey(seed)
    signature = signer.sign(message).signature
    s = int.from_bytes(signature[32:], "little") + L
    assert s < 2**256
    assert not kind(bytes(signer.verify_key)).verify(message, signature[:32] + s.to_bytes(32, "little"))


@KINDS
def test_wrong_lengths(kind: Any) -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        kind(bytes(31))
    signer = SigningKey(bytes(32))
    signature = signer.sign(b"m").signature
    key: Verifier = kind(bytes(signer.verify_key))
    assert key.verify(b"m", signature)
    assert not key.verify(b"m", signature[:63])
    assert not key.verify(b"m", signature + b"\x00")


def test_a_pinned_key_checks_signatures_after_pickling() -> None:
    """Workers may receive the keyring pickled: the verifier is rebuilt from the key bytes."""
    signer = SigningKey(bytes(range(32)))
    pinned = pickle.loads(pickle.dumps(PinnedKey("k", bytes(signer.verify_key))))
    assert pinned.verifier.verify(b"digest", signer.sign(b"digest").signature)
    assert not pinned.verifier.verify(b"digest", SigningKey(bytes(32)).sign(b"digest").signature)
