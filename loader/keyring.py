"""The pinned keyring: the only keys whose signatures pith-graph trusts, and how far.

A key inside a bundle proves nothing by itself. The keyring starts with the Pith registry's
key (``pith-v1-2026-05``, signer ``pith.science``, signer type ``pith_registry``) and grows
only from files the operator names with ``--trusted-keys`` or ``--registry-keys`` (their
format: :mod:`pith_graph.loader.keyfiles`).

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
defining source pinned that same one), but revoke only its own signers' keys: revoking
another source's key is the strongest demotion. Keys given
in code (``origin`` ``None``) are the caller's own word and may join any signer. A
``--registry-keys`` file (:func:`~pith_graph.loader.keyfiles.load_registry_keys_file`) is the operator's word that its
keys are the registry's: they join ``pith.science`` (a key rotation between releases).

**Revocation.** A revoked key's signatures are rejected (``revoked_key``): all of them with
``revoked: true``, those on bundles built at or after the time with ``revoked_at`` (instants
compared, fractions of a second included). A key pinned more than once keeps the strongest
revocation: ``revoked: true`` over any time, else the earliest time. The time is the
bundle's own ``built_at``, which a thief holding the key can backdate; revoke without a time
when the key was stolen. The operator revokes any pinned key, the registry's included, with
:meth:`Keyring.revoking` (``--revoked-keys``), which never adds or moves a key.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from pith_graph.errors import KeyringError, quoted
from pith_graph.loader.canon import b32_of_digest
from pith_graph.loader.shape import is_utc_time
from pith_graph.loader.signatures import Verifier, verifying_key

__all__ = [
    "BUILT_IN",
    "REGISTRY_KEY",
    "REVOKED_ALWAYS",
    "UNRANKED",
    "Keyring",
    "PinnedKey",
    "check_revoked_at",
    "default_keyring",
    "fingerprint_b32",
    "fingerprint_hex",
    "instant",
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


def check_revoked_at(revoked_at: object, where: str) -> None:
    """:class:`KeyringError` naming ``where`` unless ``revoked_at`` is an ISO 8601 UTC time
    that names a time there is: other text would be compared as text and revoke nothing
    (``"yesterday"`` sorts after every time) or something else (``"2026-11-30"``)."""
    if not isinstance(revoked_at, str) or not is_utc_time(revoked_at):
        raise KeyringError(
            f"{where}: revoked_at must be an ISO 8601 UTC time like 2026-11-30T00:00:00Z "
            "(a time there is: years from 0001, a day of its month, hours to 23, minutes and seconds to 59), "
            f"not {quoted(revoked_at)}"
        )


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
        if not isinstance(self.public_key, bytes) or len(self.public_key) != 32:  # (a str: TypeError)
            given = (
                f"{len(self.public_key)} bytes"
                if isinstance(self.public_key, bytes)
                else type(self.public_key).__name__
            )
            raise KeyringError(
                f"public_key: expected the Ed25519 key's 32 raw bytes (bytes.fromhex or base64.b64decode "
                f"of a keys file's text), not {given} (PinnedKey {quoted(str(self.key_id))})"
            )
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


def _check_one_way_named(key: PinnedKey, named: dict[tuple[str, bool], PinnedKey]) -> None:
    """Refuse ``key`` if it names its signer one way and an earlier key the other: a key
    pinned without ``signer_id`` speaks for itself, so another key whose ``signer_id`` is its
    key id would make the two one signer, of one rank and history (in one file: a
    contributor's key id ``h.example`` joined the signer ``h.example``, taking over its papers)."""
    by_id = key.signer_id is not None
    other = named.get((key.signer, not by_id))
    if other is not None:
        alone, joining = (other, key) if by_id else (key, other)
        raise KeyringError(
            f"key {quoted(alone.key_id)} is pinned without signer_id {_by(alone, joining)}, so it speaks "
            f"for itself, and key {quoted(joining.key_id)} names it as its signer_id; give the first a "
            "signer_id, or the second another one"
        )
    named.setdefault((key.signer, by_id), key)


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
        raise KeyringError(
            f"key id {quoted(known.key_id)} is pinned to two different keys {_by(known, again)}"
        )
    if known.signer != again.signer:
        raise KeyringError(
            f"key id {quoted(known.key_id)} is pinned to signer {quoted(known.signer)} by {_source(known)} "
            f"and to signer {quoted(again.signer)} by {_source(again)}"
        )
    return replace(
        known,
        revoked_at=_strongest(known.revoked_at, again.revoked_at),
        signer_type=known.signer_type if known.signer_type is not None else again.signer_type,
    )


def _check_own_revocation(key: PinnedKey, first: PinnedKey) -> None:
    """A repeated key may carry a revocation only from the source that defines its signer."""
    if _owner(key) is not None and _owner(key) != _owner(first):
        raise KeyringError(
            f"{_source(key)}: revokes key {quoted(key.key_id)} of signer {quoted(key.signer)}, which "
            f"{_source(first)} defines; a file revokes only its own signers' keys: to revoke it, "
            "name it in a --revoked-keys file"
        )


class Keyring(Mapping[str, PinnedKey]):
    """Trusted keys by ``key_id``, with their signers' ranks (0 is the highest).

    Keys are ranked in the order given (see the module docstring):
    ``Keyring([a, b]).rank(b.key_id)`` is 1 unless ``b`` speaks for ``a``'s signer. Raises
    :class:`KeyringError` when one key id is pinned to two keys or two signers, one key under
    two key ids (revoking one id would leave the other trusted), when a key joins a signer
    another source defined, when one signer is pinned two signer types, or when a
    ``revoked_at`` is neither ``None``, ``""`` nor an ISO 8601 UTC time (since 0.9.0: a
    keyring built in code took ``"yesterday"`` and revoked nothing).
    """

    def __init__(self, keys: Iterable[PinnedKey] = ()) -> None:
        self._keys: dict[str, PinnedKey] = {}
        self._signer_ranks: dict[str, int] = {}
        defined: dict[str, PinnedKey] = {}  # each signer's first key: its source and rank
        typed: dict[str, PinnedKey] = {}  # each signer's first key pinning a signer_type
        ids: dict[bytes, PinnedKey] = {}  # each public key's key id
        named: dict[tuple[str, bool], PinnedKey] = {}  # (signer, by a signer_id?): the first key
        for key in keys:
            if key.revoked_at is not None and key.revoked_at != REVOKED_ALWAYS:  # as a keys file's
                check_revoked_at(key.revoked_at, f"key {quoted(key.key_id)}")
            known = self._keys.get(key.key_id)
            if known is None:
                _check_one_way_named(key, named)
            if (other := ids.setdefault(key.public_key, key)).key_id != key.key_id:
                raise KeyringError(
                    f"key id {quoted(key.key_id)} pins the key that key id {quoted(other.key_id)} pins "
                    f"{_by(other, key)}; a key is pinned under one key id (revoking one would leave "
                    "the other trusted)"
                )
            pinned = key if known is None else _merged(known, key)
            if known is not None and key.revoked_at is not None:
                _check_own_revocation(key, defined[key.signer])
            if known is None:
                first = defined.setdefault(key.signer, key)
                if first is key:
                    self._signer_ranks[key.signer] = len(self._signer_ranks)
                elif _owner(key) is not None and _owner(key) != _owner(first):
                    raise KeyringError(
                        f"{_source(key)}: key {quoted(key.key_id)} claims signer {quoted(key.signer)}, which "
                        f"{_source(first)} defines; a signer's keys are pinned only where it is first named"
                    )
            if key.signer_type is not None:
                first = defined[key.signer]
                if key.signer not in typed and key.origin is not None and _owner(key) != _owner(first):
                    raise KeyringError(
                        f"{_source(key)}: key {quoted(key.key_id)} pins signer type {quoted(key.signer_type)} for "
                        f"signer {quoted(key.signer)}, which {_source(first)} defines without one; a signer's "
                        "type is pinned only where it is first named"
                    )
                seen = typed.setdefault(key.signer, key)
                if seen.signer_type != key.signer_type:
                    raise KeyringError(
                        f"signer {quoted(key.signer)} is pinned with signer type {quoted(seen.signer_type)} "
                        f"by {_source(seen)} and {quoted(key.signer_type)} by {_source(key)} (key {quoted(key.key_id)})"
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

    def revoking(self, revocations: Iterable[PinnedKey]) -> Keyring:
        """A new keyring with these keys revoked: the operator's word (``--revoked-keys``), which
        may revoke any key, the registry's included, and only that. Each must be a key this
        keyring pins (same key id and public key; its signer and signer type, where given, the
        pinned ones) and carry a revocation; the strongest revocation holds. Ranks stay as
        they are. Raises :class:`KeyringError` naming the revocation's source and the key.
        """
        keys = dict(self._keys)
        for again in revocations:
            known = keys.get(again.key_id)
            where = f"{_source(again)}: key {quoted(again.key_id)}"
            if known is None:
                raise KeyringError(f"{where} is not pinned; a revocation names a key the keyring pins")
            if again.revoked_at is None:
                raise KeyringError(f"{where} is not revoked: a revocation needs revoked: true or revoked_at")
            if again.signer_type is not None and again.signer_type != known.signer_type:
                pinned = (
                    "without a signer type"
                    if known.signer_type is None
                    else f"as {quoted(known.signer_type)}"
                )
                raise KeyringError(
                    f"{where} is pinned {pinned} by {_source(known)}, not {quoted(again.signer_type)}; "
                    "a revocation never changes a key"
                )
            stated = again if again.signer_id is not None else replace(again, signer_id=known.signer)
            keys[again.key_id] = _merged(known, stated)
        return Keyring(keys.values())

    def __reduce__(self) -> tuple[object, ...]:
        return (Keyring, (list(self._keys.values()),))


def default_keyring() -> Keyring:
    """The built-in keyring: the Pith registry key only."""
    return Keyring([REGISTRY_KEY])
