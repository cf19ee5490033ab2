"""Trusted-keys files: the JSON an operator pins keys with, and the keyring the options make.

A file is a JSON list of objects with ``key_id`` and ``public_key_hex`` or ``public_key_b64``
(the names a bundle's ``public_keys[]`` uses, whose items may be pasted whole), optionally
``signer_id`` and ``signer_type``, and optionally ``revoked`` (``true``) or ``revoked_at`` (an
ISO 8601 UTC time); any other field is refused. ``--trusted-keys`` files add signers ranked
after the registry; a ``--registry-keys`` file's keys join the registry's signer
(:func:`load_registry_keys_file`); a ``--revoked-keys`` file only revokes keys the others pin
(:func:`load_revoked_keys_file`). What the keys then mean, and how the sources may combine,
is :mod:`pith_graph.loader.keyring`'s.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from pith_graph.errors import BundleError, KeyringError, quoted
from pith_graph.loader.keyring import (
    BUILT_IN,
    REGISTRY_KEY,
    REVOKED_ALWAYS,
    Keyring,
    PinnedKey,
    check_revoked_at,
    default_keyring,
    fingerprint_b32,
    fingerprint_hex,
)
from pith_graph.loader.parse import strict_json
from pith_graph.loader.sources import not_text_advice, open_regular
from pith_graph.schema.database import MAX_INDEXED_BYTES, indexed_bytes

__all__ = [
    "check_pinned_key",
    "load_keyring_file",
    "load_registry_keys_file",
    "load_revoked_keys_file",
    "operator_keyring",
    "parse_keyring",
]


def _key_bytes(entry: Mapping[str, Any], where: str) -> bytes:
    hex_text = entry.get("public_key_hex")
    b64_text = entry.get("public_key_b64")
    if hex_text is None and b64_text is None:
        raise KeyringError(f"{where}: needs public_key_hex or public_key_b64")
    decoded: list[bytes] = []
    try:
        if hex_text is not None:
            if not isinstance(hex_text, str):
                raise KeyringError(f"{where}: public_key_hex must be a string")
            decoded.append(bytes.fromhex(hex_text))
        if b64_text is not None:
            if not isinstance(b64_text, str):
                raise KeyringError(f"{where}: public_key_b64 must be a string")
            decoded.append(base64.b64decode(b64_text, validate=True))
    except (ValueError, binascii.Error) as err:
        raise KeyringError(f"{where}: key is not valid hex/base64 ({err})") from err
    if any(len(key) != 32 for key in decoded):
        raise KeyringError(f"{where}: an Ed25519 public key is 32 bytes")
    if len(decoded) == 2 and decoded[0] != decoded[1]:
        raise KeyringError(f"{where}: public_key_hex and public_key_b64 differ")
    return decoded[0]


def _optional_string(value: object, name: str, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise KeyringError(f"{where}: {name} must be a string, not {quoted(value)}")


def _revocation(entry: Mapping[str, Any], where: str) -> str | None:
    revoked, revoked_at = entry.get("revoked", False), entry.get("revoked_at")
    if not isinstance(revoked, bool):
        raise KeyringError(f"{where}: revoked must be true or false")
    if revoked_at is None:
        return REVOKED_ALWAYS if revoked else None
    check_revoked_at(revoked_at, where)
    if "revoked" in entry and not revoked:
        raise KeyringError(f"{where}: revoked is false but revoked_at is given: say which one is meant")
    # Both given: the stronger, as for a key revoked twice (true over any time).
    return REVOKED_ALWAYS if revoked else revoked_at


#: The fields of a trusted-keys entry, and those of a bundle's ``public_keys[]`` item, which may
#: be pasted as one (those that state facts about the key are checked against it).
_KEYRING_FIELDS = frozenset(
    {"key_id", "public_key_hex", "public_key_b64", "signer_id", "signer_type", "revoked", "revoked_at"}
)
_PUBLIC_KEY_RECORD_FIELDS = frozenset(
    {
        "algorithm",
        "format",
        "fingerprint_sha256_b32_first128bits",
        "fingerprint_sha256_hex",
        "rotates_at",
        "url",
        "notes",
    }
)


def _check_fields(entry: Mapping[str, Any], public_key: bytes, where: str) -> None:
    """No field a trusted-keys entry does not know (a misspelt ``revoked`` must not pass for no
    revocation), and the facts a pasted ``public_keys[]`` item states hold for the key."""
    unknown = sorted(set(entry) - _KEYRING_FIELDS - _PUBLIC_KEY_RECORD_FIELDS)
    if unknown:
        raise KeyringError(
            f"{where}: unknown field {quoted(unknown[0])} (known: {', '.join(sorted(_KEYRING_FIELDS))}, "
            "and the fields of a bundle's public_keys[])"
        )
    facts = {
        "algorithm": "ed25519",
        "format": "raw",
        "fingerprint_sha256_hex": fingerprint_hex(public_key),
        "fingerprint_sha256_b32_first128bits": fingerprint_b32(public_key),
    }
    for name, value in facts.items():
        if name in entry and entry[name] != value:
            raise KeyringError(f"{where}: {name} is {quoted(entry[name])}, but this key's is {value!r}")


def _check_id(name: str, value: str, where: str) -> None:
    """Key and signer ids and signer types are printable ASCII without spaces: none can hide
    a character that looks like another (a Cyrillic е in ``pith.scienc\u0435``, a zero-width
    space after a key id). ASCII's own look-alikes (``O`` and ``0``) remain."""
    bad = next((c for c in value if not "!" <= c <= "~"), None)
    if bad is not None:
        raise KeyringError(
            f"{where}: {name} {quoted(value)} holds U+{ord(bad):04X}: key and signer ids and signer types "
            "are printable ASCII without spaces, so that none hides a look-alike character"
        )


def _checked_ids(
    key_id: object, signer_id: object, signer_type: object, where: str
) -> tuple[str, str | None, str | None]:
    """A key's ids and signer type, as every pinned key must have them."""
    if not isinstance(key_id, str) or not key_id:
        raise KeyringError(f"{where}: key_id must be a non-empty string, not {quoted(key_id)}")
    signer_id = _optional_string(signer_id, "signer_id", where)
    _check_id("key_id", key_id, where)
    if signer_id is not None:
        _check_id("signer_id", signer_id, where)
    signer = ("signer_id", signer_id) if signer_id is not None else ("key_id (its signer)", key_id)
    if indexed_bytes(signer[1]) > MAX_INDEXED_BYTES:
        raise KeyringError(  # Signer.signerId is a uniqueness constraint's key (loader/indexable.py)
            f"{where}: {signer[0]} is longer than {MAX_INDEXED_BYTES} bytes of UTF-8, which Neo4j cannot index"
        )
    signer_type = _optional_string(signer_type, "signer_type", where)
    if signer_type is not None:
        _check_id("signer_type", signer_type, where)  # (pith_reg\u0456stry: a Cyrillic і)
    return key_id, signer_id, signer_type


def check_pinned_key(key: PinnedKey, where: str) -> None:
    """Check a key given in code as :func:`parse_keyring` checks a trusted-keys file's entry
    (the same functions): its ids and signer type, and ``revoked_at`` ``None``, ``""``
    (:data:`~pith_graph.loader.keyring.REVOKED_ALWAYS`) or an ISO 8601 UTC time, never other
    text, which would revoke nothing. :class:`KeyringError` naming ``where`` and the value."""
    _checked_ids(key.key_id, key.signer_id, key.signer_type, where)
    _not_the_registrys_type(key, where)
    if key.revoked_at is not None and key.revoked_at != REVOKED_ALWAYS:
        check_revoked_at(key.revoked_at, where)


def parse_keyring(data: Any, origin: str) -> list[PinnedKey]:
    """Validate the JSON of a trusted-keys file and return its keys (``origin``: the file)."""
    if not isinstance(data, list):
        raise KeyringError(f"{origin}: expected a JSON list of key objects")
    keys: list[PinnedKey] = []
    for index, entry in enumerate(data):
        where = f"{origin}[{index}]"
        if not isinstance(entry, dict):
            raise KeyringError(f"{where}: expected an object")
        key_id, signer_id, signer_type = _checked_ids(
            entry.get("key_id"), entry.get("signer_id"), entry.get("signer_type"), where
        )
        public_key, revoked_at = _key_bytes(entry, where), _revocation(entry, where)
        _check_fields(entry, public_key, where)
        keys.append(PinnedKey(key_id, public_key, signer_id, revoked_at, signer_type, origin))
    return keys


#: The largest keys file read: thousands of keys take a few hundred KB.
MAX_KEYS_FILE_BYTES = 16 * 1024 * 1024


def _read_keys(path: str | Path) -> list[PinnedKey]:
    """The keys of a file: a regular file (a FIFO would hang the run, ``/dev/zero`` fill the
    memory), at most :data:`MAX_KEYS_FILE_BYTES`, JSON without a repeated key (which a reader
    of the file and pith-graph could take differently: ``"revoked": true, "revoked": false``)."""
    origin = str(path)
    try:
        with open_regular(origin, advice="") as handle:
            raw = handle.read(MAX_KEYS_FILE_BYTES + 1)
    except OSError as err:
        raise KeyringError(f"cannot read keys file {origin}: {err.strerror or err}") from err
    if len(raw) > MAX_KEYS_FILE_BYTES:
        raise KeyringError(f"{origin}: over {MAX_KEYS_FILE_BYTES} bytes, more than a keys file holds")
    try:
        data = orjson.loads(raw)
        strict_json(raw)  # every key of every object, as written
    except orjson.JSONDecodeError as err:
        advice = not_text_advice(raw)
        raise KeyringError(f"{origin}: {advice or f'not valid JSON ({err})'}") from err
    except BundleError as err:
        raise KeyringError(f"{origin}: {err}") from err
    return parse_keyring(data, origin)


def _type_key(signer_type: str) -> str:
    """``pith_registry``, ``PITH_REGISTRY`` and ``pith-registry`` alike (letters and digits,
    case folded): how close a signer type may not come to the registry's."""
    return "".join(char for char in signer_type.casefold() if char.isalnum())


def _not_the_registrys_type(key: PinnedKey, where: str) -> None:
    """:class:`KeyringError` when a key of a signer other than the registry's pins the
    registry's signer type, or one that differs from it only in case or punctuation
    (``PITH_REGISTRY``, since 0.8.8): its Signer nodes would pass for the registry's."""
    if key.signer_type is None or key.signer == REGISTRY_KEY.signer:
        return
    if _type_key(key.signer_type) == _type_key(REGISTRY_KEY.signer_type or ""):
        raise KeyringError(
            f"{where}: key {quoted(key.key_id)} pins signer {quoted(key.signer)} as "
            f"{quoted(key.signer_type)}, the registry's type, which only {REGISTRY_KEY.signer} has"
        )


def load_keyring_file(path: str | Path, base: Keyring | None = None) -> Keyring:
    """The keyring ``base`` (default: the built-in one) plus the keys of a trusted-keys file,
    which may not pin the registry's signer type for a signer of its own (its Signer nodes
    would pass for the registry's)."""
    keys = _read_keys(path)
    for index, key in enumerate(keys):
        _not_the_registrys_type(key, f"{path}[{index}]")
    return (base if base is not None else default_keyring()).with_keys(keys)


def load_registry_keys_file(path: str | Path, base: Keyring | None = None) -> Keyring:
    """The keyring ``base`` (default: the built-in one) plus the keys of a registry-keys file:
    a trusted-keys file whose keys all speak for the registry's signer (``signer_id``
    ``pith.science`` and ``signer_type`` ``pith_registry``, or left out), and join it at its
    rank, as a key of a later pith-graph release would (a key rotation). Only the operator's
    ``--registry-keys`` reads one: a ``--trusted-keys`` file cannot add a key to the registry."""
    registry = (REGISTRY_KEY.signer, REGISTRY_KEY.signer_type)
    keys = []
    for index, key in enumerate(_read_keys(path)):
        claimed = (key.signer_id or registry[0], key.signer_type or registry[1])
        if claimed != registry:
            raise KeyringError(
                f"{path}[{index}]: a registry key speaks for signer {registry[0]!r} of type "
                f"{registry[1]!r}, not {quoted(claimed[0])} of type {quoted(claimed[1])}"
            )
        keys.append(replace(key, signer_id=registry[0], signer_type=registry[1], source=BUILT_IN))
    return (base if base is not None else default_keyring()).with_keys(keys)


def load_revoked_keys_file(path: str | Path, base: Keyring) -> Keyring:
    """The keyring ``base`` with the revocations of a revoked-keys file: the operator's own
    (``--revoked-keys``), in the trusted-keys format, each entry a key ``base`` pins (same key
    id and public key) with ``revoked: true`` or ``revoked_at``. It may revoke any key, the
    registry's included, and nothing else: no key is added or moved
    (:meth:`~pith_graph.loader.keyring.Keyring.revoking`)."""
    return base.revoking(_read_keys(path))


def operator_keyring(
    trusted_keys: Iterable[str | Path] = (),
    registry_keys: Iterable[str | Path] = (),
    revoked_keys: Iterable[str | Path] = (),
) -> Keyring:
    """The keyring an operator's options make: the built-in one, then the keys of each
    ``--registry-keys`` file, then those of each ``--trusted-keys`` file, in the order given,
    then the revocations of each ``--revoked-keys`` file."""
    keyring = default_keyring()
    for path in registry_keys:
        keyring = load_registry_keys_file(path, keyring)
    for path in trusted_keys:
        keyring = load_keyring_file(path, keyring)
    for path in revoked_keys:
        keyring = load_revoked_keys_file(path, keyring)
    return keyring
