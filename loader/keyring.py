"""The pinned keyring: the only keys whose signatures pith-graph trusts, and how far.

A key inside a bundle proves nothing by itself. The keyring starts with the Pith registry's
key (``pith-v1-2026-05``, signer ``pith.science``, signer type ``pith_registry``) and grows
only from files the operator names with ``--trusted-keys``: a JSON list of objects with
``key_id`` and ``public_key_hex`` or ``public_key_b64`` (the names a bundle's
``public_keys[]`` uses), optionally ``signer_id`` and ``signer_type``, and optionally
``revoked`` (``true``) or ``revoked_at`` (an ISO 8601 UTC time).

**Signers.** A key speaks only for its signer: its ``signer_id``, or without one, itself
(named by its key id); events claiming another signer are refused
(:mod:`pith_graph.loader.trust`). A ``signer_type`` pinned for one key of a signer holds for
all of them.

**Precedence.** Signers are ranked by where they first appear: the registry first (rank 0),
then the signers of the ``--trusted-keys`` files in the order the files are given, entries in
file order. Every key of one signer shares that signer's rank, so a signer can rotate keys
without losing its place. Where two signers' bundles conflict, the lower rank wins
(:mod:`pith_graph.loader.stores.base`).

**Sources.** A signer belongs to the source that first names it (the built-in keyring, or
one file): only that source pins its keys, so no later file can lift a key above the rank a
signer of its own would have, nor demote a signer (:class:`KeyringError`). A later file may
repeat a key it agrees on (same public key, signer and signer type; a type only where the
defining source pinned that same one) to revoke it. Keys given
in code (``origin`` ``None``) are the caller's own word and may join any signer. A
``--registry-keys`` file (:func:`load_registry_keys_file`) is the operator's word that its
keys are the registry's: they join ``pith.science`` (a key rotation between releases).

**Revocation.** A revoked key's signatures are rejected (``revoked_key``): all of them with
``revoked: true``, those on bundles built at or after the time with ``revoked_at`` (instants
compared, fractions of a second included). A key pinned more than once keeps the strongest
revocation: ``revoked: true`` over any time, else the earliest time. The time is the
bundle's own ``built_at``, which a thief holding the key can backdate; revoke without a time
when the key was stolen.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from pith_graph.errors import KeyringError
from pith_graph.loader.canon import b32_of_digest
from pith_graph.loader.signatures import Verifier, verifying_key

__all__ = [
    "BUILT_IN",
    "REGISTRY_KEY",
    "REVOKED_ALWAYS",
    "UNRANKED",
    "Keyring",
    "PinnedKey",
    "default_keyring",
    "fingerprint_b32",
    "fingerprint_hex",
    "instant",
    "load_keyring_file",
    "load_registry_keys_file",
    "operator_keyring",
]


def fingerprint_hex(key: bytes) -> str:
    """First 16 bytes of SHA-256(key), lowercase hex (``fingerprint_sha256_hex``)."""
    return hashlib.sha256(key).digest()[:16].hex()


def fingerprint_b32(key: bytes) -> str:
    """First 26 characters of the base32 of SHA-256(key) (``..._b32_first128bits``)."""
    return b32_of_digest(hashlib.sha256(key).hexdigest())[:26]


#: ``revoked_at`` of a key revoked for all time.
REVOKED_ALWAYS = ""

#: The ``origin`` of the keys pith-graph ships.
BUILT_IN = "the built-in keyring"


def instant(stamp: str) -> tuple[str, int]:
    """An ISO 8601 UTC time (``YYYY-MM-DDTHH:MM:SS[.fraction]Z``, as the bundle format and
    trusted-keys files write it) as a key that orders instants: its whole seconds as written,
    then the fraction in nanoseconds (``…00.9Z`` is after ``…00Z``, ``.5Z`` equals ``.50Z``).

    >>> instant("2026-11-30T00:00:00.9Z") > instant("2026-11-30T00:00:00Z")
    True
    """
    whole, fraction = stamp[:19], stamp[20:].removesuffix("Z") if stamp[19:20] == "." else ""
    return whole, int(fraction.ljust(9, "0")[:9]) if fraction.isdigit() else 0


@dataclass(frozen=True, slots=True)
class PinnedKey:
    """One trusted Ed25519 public key, optionally revoked (from ``revoked_at``; ``""``:
    always)."""

    key_id: str
    public_key: bytes
    signer_id: str | None = None
    revoked_at: str | None = None
    #: The ``signer_type`` its events must claim (``None``: not checked).
    signer_type: str | None = None
    #: Where it was pinned: a trusted-keys file's path, :data:`BUILT_IN`, or ``None`` (in code).
    origin: str | None = field(default=None, compare=False)
    #: The source whose signers it may join, when not its ``origin``: :data:`BUILT_IN` for a
    #: key of a ``--registry-keys`` file (the operator vouches that it is the registry's).
    source: str | None = field(default=None, compare=False)
    #: Checks this key's signatures (:mod:`pith_graph.loader.signatures`).
    verifier: Verifier = field(init=False, repr=False, compare=False)
    fingerprint: str = field(init=False, repr=False, compare=False)
    fingerprint_b32: str = field(init=False, repr=False, compare=False)
    #: The key as ``public_keys[]`` writes it: ``public_key_hex``, ``public_key_b64``.
    public_key_hex: str = field(init=False, repr=False, compare=False)
    public_key_b64: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "verifier", verifying_key(self.public_key))
        object.__setattr__(self, "public_key_hex", self.public_key.hex())
        object.__setattr__(self, "public_key_b64", base64.b64encode(self.public_key).decode("ascii"))
        object.__setattr__(self, "fingerprint", fingerprint_hex(self.public_key))
        object.__setattr__(self, "fingerprint_b32", fingerprint_b32(self.public_key))

    def __reduce__(self) -> tuple[object, ...]:
        fields = (
            self.key_id,
            self.public_key,
            self.signer_id,
            self.revoked_at,
            self.signer_type,
            self.origin,
            self.source,
        )
        return (PinnedKey, fields)

    @property
    def signer(self) -> str:
        """The signer this key speaks for: its ``signer_id``, or its own id."""
        return self.signer_id if self.signer_id is not None else self.key_id

    def revoked_for(self, built_at: str) -> bool:
        """Whether a signature on a bundle built at ``built_at`` is revoked (at or after
        ``revoked_at``, compared as instants)."""
        if self.revoked_at is None:
            return False
        return self.revoked_at == REVOKED_ALWAYS or instant(built_at) >= instant(self.revoked_at)


REGISTRY_KEY = PinnedKey(
    key_id="pith-v1-2026-05",
    public_key=bytes.fromhex("b2d552b68890857171a78b36a5dccf368a953413288c353f7c9d9d6f94b709b3"),
    signer_id="pith.science",
    signer_type="pith_registry",
    origin=BUILT_IN,
)


#: The rank of a key the keyring does not hold: below every pinned signer.
UNRANKED = 1 << 30


def _source(key: PinnedKey) -> str:
    return key.origin if key.origin is not None else "keys given in code"


def _owner(key: PinnedKey) -> str | None:
    """The source whose signers ``key`` may join (``None``: keys given in code, any)."""
    return key.source if key.source is not None else key.origin


def _by(first: PinnedKey, second: PinnedKey) -> str:
    return (
        f"by {_source(first)}"
        if first.origin == second.origin
        else f"by {_source(first)} and {_source(second)}"
    )


def _strongest(first: str | None, second: str | None) -> str | None:
    """The stronger of two revocations: always over a time, else the earlier time."""
    if first is None or second is None:
        return second if first is None else first
    if REVOKED_ALWAYS in (first, second):
        return REVOKED_ALWAYS
    return min(first, second, key=instant)


def _merged(known: PinnedKey, again: PinnedKey) -> PinnedKey:
    """One key id pinned twice: the two pins must agree; the strongest revocation holds."""
    if known.public_key != again.public_key:
        raise KeyringError(f"key id {known.key_id!r} is pinned to two different keys {_by(known, again)}")
    if known.signer != again.signer:
        raise KeyringError(
            f"key id {known.key_id!r} is pinned to signer {known.signer!r} by {_source(known)} "
            f"and to signer {again.signer!r} by {_source(again)}"
        )
    return replace(
        known,
        revoked_at=_strongest(known.revoked_at, again.revoked_at),
        signer_type=known.signer_type if known.signer_type is not None else again.signer_type,
    )


class Keyring(Mapping[str, PinnedKey]):
    """Trusted keys by ``key_id``, with their signers' ranks (0 is the highest).

    Keys are ranked in the order given (see the module docstring):
    ``Keyring([a, b]).rank(b.key_id)`` is 1 unless ``b`` speaks for ``a``'s signer. Raises
    :class:`KeyringError` when one key id is pinned to two keys or two signers, when a key
    joins a signer another source defined, or when one signer is pinned two signer types.
    """

    def __init__(self, keys: Iterable[PinnedKey] = ()) -> None:
        self._keys: dict[str, PinnedKey] = {}
        self._signer_ranks: dict[str, int] = {}
        defined: dict[str, PinnedKey] = {}  # each signer's first key: its source and rank
        typed: dict[str, PinnedKey] = {}  # each signer's first key pinning a signer_type
        for key in keys:
            known = self._keys.get(key.key_id)
            pinned = key if known is None else _merged(known, key)
            if known is None:
                first = defined.setdefault(key.signer, key)
                if first is key:
                    self._signer_ranks[key.signer] = len(self._signer_ranks)
                elif _owner(key) is not None and _owner(key) != _owner(first):
                    raise KeyringError(
                        f"{_source(key)}: key {key.key_id!r} claims signer {key.signer!r}, which "
                        f"{_source(first)} defines; a signer's keys are pinned only where it is first named"
                    )
            if key.signer_type is not None:
                first = defined[key.signer]
                if key.signer not in typed and key.origin is not None and _owner(key) != _owner(first):
                    raise KeyringError(
                        f"{_source(key)}: key {key.key_id!r} pins signer type {key.signer_type!r} for "
                        f"signer {key.signer!r}, which {_source(first)} defines without one; a signer's "
                        "type is pinned only where it is first named"
                    )
                seen = typed.setdefault(key.signer, key)
                if seen.signer_type != key.signer_type:
                    raise KeyringError(
                        f"signer {key.signer!r} is pinned with signer type {seen.signer_type!r} "
                        f"by {_source(seen)} and {key.signer_type!r} by {_source(key)} (key {key.key_id!r})"
                    )
            self._keys[key.key_id] = pinned
        self._keys = {  # a signer's type holds for all its keys
            key_id: replace(key, signer_type=typed[key.signer].signer_type)
            if key.signer_type is None and key.signer in typed
            else key
            for key_id, key in self._keys.items()
        }

    def __getitem__(self, key_id: str) -> PinnedKey:
        return self._keys[key_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def rank(self, key_id: str) -> int:
        """The rank of the signer ``key_id`` speaks for (:data:`UNRANKED` if not pinned)."""
        key = self._keys.get(key_id)
        return UNRANKED if key is None else self._signer_ranks[key.signer]

    def revoked(self) -> list[PinnedKey]:
        """The revoked keys, by key id."""
        return sorted(
            (key for key in self._keys.values() if key.revoked_at is not None), key=lambda k: k.key_id
        )

    def with_keys(self, keys: Iterable[PinnedKey]) -> Keyring:
        """A new keyring holding these keys, then the new ones (ranked after them)."""
        return Keyring([*self._keys.values(), *keys])

    def __reduce__(self) -> tuple[object, ...]:
        return (Keyring, (list(self._keys.values()),))


def default_keyring() -> Keyring:
    """The built-in keyring: the Pith registry key only."""
    return Keyring([REGISTRY_KEY])


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


_ISO_Z = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z")


def _optional_string(entry: Mapping[str, Any], name: str, where: str) -> str | None:
    value = entry.get(name)
    if value is not None and not isinstance(value, str):
        raise KeyringError(f"{where}: {name} must be a string")
    return value


def _revocation(entry: Mapping[str, Any], where: str) -> str | None:
    revoked, revoked_at = entry.get("revoked", False), entry.get("revoked_at")
    if not isinstance(revoked, bool):
        raise KeyringError(f"{where}: revoked must be true or false")
    if revoked_at is None:
        return REVOKED_ALWAYS if revoked else None
    if not isinstance(revoked_at, str) or not _ISO_Z.fullmatch(revoked_at):
        raise KeyringError(f"{where}: revoked_at must be an ISO 8601 UTC time like 2026-11-30T00:00:00Z")
    return revoked_at


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
            f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(_KEYRING_FIELDS))}, "
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
            raise KeyringError(f"{where}: {name} is {entry[name]!r}, but this key's is {value!r}")


def parse_keyring(data: Any, origin: str) -> list[PinnedKey]:
    """Validate the JSON of a trusted-keys file and return its keys (``origin``: the file)."""
    if not isinstance(data, list):
        raise KeyringError(f"{origin}: expected a JSON list of key objects")
    keys: list[PinnedKey] = []
    for index, entry in enumerate(data):
        where = f"{origin}[{index}]"
        if not isinstance(entry, dict):
            raise KeyringError(f"{where}: expected an object")
        key_id = entry.get("key_id")
        if not isinstance(key_id, str) or not key_id:
            raise KeyringError(f"{where}: key_id must be a non-empty string")
        signer_id = _optional_string(entry, "signer_id", where)
        signer_type = _optional_string(entry, "signer_type", where)
        public_key, revoked_at = _key_bytes(entry, where), _revocation(entry, where)
        _check_fields(entry, public_key, where)
        keys.append(PinnedKey(key_id, public_key, signer_id, revoked_at, signer_type, origin))
    return keys


def _read_keys(path: str | Path) -> list[PinnedKey]:
    origin = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise KeyringError(f"cannot read trusted keys {origin}: {err.strerror}") from err
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise KeyringError(f"{origin}: not valid JSON ({err})") from err
    return parse_keyring(data, origin)


def load_keyring_file(path: str | Path, base: Keyring | None = None) -> Keyring:
    """The keyring ``base`` (default: the built-in one) plus the keys of a trusted-keys file."""
    return (base if base is not None else default_keyring()).with_keys(_read_keys(path))


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
                f"{registry[1]!r}, not {claimed[0]!r} of type {claimed[1]!r}"
            )
        keys.append(replace(key, signer_id=registry[0], signer_type=registry[1], source=BUILT_IN))
    return (base if base is not None else default_keyring()).with_keys(keys)


def operator_keyring(
    trusted_keys: Iterable[str | Path] = (), registry_keys: Iterable[str | Path] = ()
) -> Keyring:
    """The keyring an operator's options make: the built-in one, then the keys of each
    ``--registry-keys`` file, then those of each ``--trusted-keys`` file, in the order given."""
    keyring = default_keyring()
    for path in registry_keys:
        keyring = load_registry_keys_file(path, keyring)
    for path in trusted_keys:
        keyring = load_keyring_file(path, keyring)
    return keyring
