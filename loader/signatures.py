"""Ed25519 verification: one verifier per pinned key, with libsodium's rules.

Two implementations accept exactly the same signatures:

* :class:`pith_graph.loader._ed25519.VerifyingKey`, the package's Rust extension
  (``loader/ed25519/``, on ed25519-dalek's ``verify_strict``): the key is decoded once, and
  a check costs about two thirds of libsodium's. It is built when the package is installed
  where a Rust toolchain is found;
* :class:`SodiumKey`, PyNaCl's ``crypto_sign_open`` (libsodium), used where the extension
  is not built.

The rules: S below the group order, neither R nor the key of small order, the key's
encoding canonical, the cofactorless equation compared on R's bytes. ``tests/vectors/
ed25519-edge-cases.json`` holds the cases where Ed25519 verifiers are known to differ; the
tests run both implementations over them and over random valid and altered signatures.
"""

from __future__ import annotations

from typing import Protocol

from nacl.bindings import crypto_sign_open
from nacl.exceptions import CryptoError

__all__ = ["NATIVE", "SodiumKey", "Verifier", "verifying_key"]


class Verifier(Protocol):
    """A public key that checks signatures (``verify`` never raises on a bad one)."""

    def verify(self, message: bytes, signature: bytes) -> bool: ...


class SodiumKey:
    """libsodium's check, through PyNaCl."""

    __slots__ = ("_key",)

    def __init__(self, public_key: bytes) -> None:
        if len(public_key) != 32:
            raise ValueError("an Ed25519 public key is 32 bytes")
        self._key = public_key

    def verify(self, message: bytes, signature: bytes) -> bool:
        if len(signature) != 64:
            return False
        try:
            crypto_sign_open(signature + message, self._key)
        except CryptoError:  # BadSignatureError is one
            return False
        return True


try:
    from pith_graph.loader._ed25519 import VerifyingKey as _NativeKey
except ImportError:  # built without a Rust toolchain: libsodium does the work
    NATIVE = False
else:
    NATIVE = True


def verifying_key(public_key: bytes) -> Verifier:
    """The fastest verifier available for ``public_key`` (32 bytes, else ``ValueError``)."""
    return _NativeKey(public_key) if NATIVE else SodiumKey(public_key)
