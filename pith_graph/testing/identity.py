"""A signing identity for tests and benchmarks: an Ed25519 key and the names bundles give it.

``SignerIdentity.claimed_public_key`` lets a test forge a bundle that names a trusted key
while signing with another one.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from nacl.signing import SigningKey

from pith_graph.loader.format import ALGORITHM
from pith_graph.loader.keyring import fingerprint_b32, fingerprint_hex

__all__ = ["REGISTRY_KEY_NOTES", "SignerIdentity"]

Json = dict[str, Any]

REGISTRY_KEY_NOTES = (
    "Pith uses this Ed25519 key to sign canonical record SHA-256 digests. Verify with: "
    "ed25519_verify(public_key, message=canonical_sha256_bytes, "
    "signature=base64decode(signature_b64))."
)


@dataclass(frozen=True)
class SignerIdentity:
    """A signing key and the names a bundle gives it.

    ``claimed_public_key`` is the key the identity *claims* in fingerprints and in
    ``public_keys[]``; it defaults to the signing key's own. Set it to reproduce the
    registry's metadata (fidelity tests) or to forge a bundle that names a trusted key while
    signing with another one.
    """

    signing_key: SigningKey
    key_id: str
    signer_id: str
    signer_type: str
    claimed_public_key: bytes | None = None
    key_url: str = "https://pith-graph.invalid/test-signing-key.json"
    key_notes: str = REGISTRY_KEY_NOTES
    rotates_at: str | None = None

    @classmethod
    def from_seed(
        cls, seed: bytes, *, key_id: str, signer_id: str, signer_type: str = "pith_registry"
    ) -> SignerIdentity:
        """An identity whose key is derived from ``seed`` (hashed to 32 bytes)."""
        return cls(SigningKey(hashlib.sha256(seed).digest()), key_id, signer_id, signer_type)

    @classmethod
    def generate(
        cls,
        *,
        key_id: str = "throwaway",
        signer_id: str = "throwaway.invalid",
        signer_type: str = "pith_registry",
    ) -> SignerIdentity:
        """A fresh random throw-away identity."""
        return cls(SigningKey.generate(), key_id, signer_id, signer_type)

    @cached_property
    def public_key(self) -> bytes:
        """The 32 raw bytes of the (claimed) public key."""
        if self.claimed_public_key is not None:
            return self.claimed_public_key
        return bytes(self.signing_key.verify_key)

    @property
    def public_key_hex(self) -> str:
        return self.public_key.hex()

    @property
    def public_key_b64(self) -> str:
        return base64.b64encode(self.public_key).decode("ascii")

    @cached_property
    def fingerprint_sha256_hex(self) -> str:
        """First 16 bytes of SHA-256(key), hex: the ``public_key_fingerprint``."""
        return fingerprint_hex(self.public_key)

    @cached_property
    def fingerprint_b32(self) -> str:
        """First 26 characters of the base32 of SHA-256(key)."""
        return fingerprint_b32(self.public_key)

    def sign_digest(self, hex_digest: str) -> str:
        """Base64 Ed25519 signature over the raw bytes of a hex digest."""
        signature = self.signing_key.sign(bytes.fromhex(hex_digest)).signature
        return base64.b64encode(signature).decode("ascii")

    def signer_block(self) -> Json:
        """The ``signer`` object of an event."""
        return {
            "signer_id": self.signer_id,
            "signer_type": self.signer_type,
            "key_id": self.key_id,
            "public_key_fingerprint": self.fingerprint_sha256_hex,
        }

    def keyring_entry(self) -> Json:
        """An item of a ``--trusted-keys`` file."""
        return {
            "key_id": self.key_id,
            "public_key_hex": self.public_key_hex,
            "signer_id": self.signer_id,
        }

    def public_key_record(self) -> Json:
        """The bundle's ``public_keys[]`` item for this key."""
        return {
            "key_id": self.key_id,
            "algorithm": ALGORITHM,
            "format": "raw",
            "public_key_b64": self.public_key_b64,
            "public_key_hex": self.public_key_hex,
            "fingerprint_sha256_b32_first128bits": self.fingerprint_b32,
            "fingerprint_sha256_hex": self.fingerprint_sha256_hex,
            "rotates_at": self.rotates_at,
            "url": self.key_url,
            "notes": self.key_notes,
        }
