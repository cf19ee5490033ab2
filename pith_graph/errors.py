"""The one exception tree of pith-graph.

::

    PithGraphError                 every error this package raises on purpose
    ├── BundleError                one bundle rejected; ``code`` is a stable RejectCode
    ├── UsageError                 the caller asked for something impossible (exit 2)
    │   └── KeyringError           a ``--trusted-keys`` file that cannot be used
    └── StoreError                 a graph store failed (``code``: unavailable, auth, ...)

A ``BundleError`` never stops a batch: the pipeline records it as a rejection (code,
message, source file and line) and goes on with the next bundle.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "BundleError",
    "KeyringError",
    "PithGraphError",
    "RejectCode",
    "Source",
    "StoreError",
    "UsageError",
]


class RejectCode(enum.StrEnum):
    """Why a bundle was rejected. The values are a public, stable contract."""

    UNREADABLE = "unreadable"  # the input could not be read or decompressed
    TOO_LARGE = "too_large"  # bigger than the size limit
    MALFORMED_JSON = "malformed_json"  # not valid JSON (or not UTF-8)
    DUPLICATE_KEY = "duplicate_key"  # an object repeats a key (RFC 7493)
    TOO_DEEP = "too_deep"  # nesting deeper than the depth limit
    NOT_OBJECT = "not_object"  # the top level is not a JSON object
    SCHEMA_ERROR = "schema_error"  # a required field is missing or has the wrong type
    UNTRUSTED_KEY = "untrusted_key"  # a signature by a key that is not pinned
    KEY_MISMATCH = "key_mismatch"  # an embedded key or fingerprint differs from the pin
    IDENTIFIER_MISMATCH = "identifier_mismatch"  # pith number / alias / subject disagree
    DIGEST_MISMATCH = "digest_mismatch"  # a recomputed SHA-256 differs from the stated one
    BAD_SIGNATURE = "bad_signature"  # an Ed25519 signature does not verify
    RECORD_MISMATCH = "record_mismatch"  # record_created payload / receipt / snapshot vs record
    STATE_MISMATCH = "state_mismatch"  # state disagrees with the event log


@dataclass(frozen=True, slots=True)
class Source:
    """Where a bundle came from: a path (``-`` for stdin) and, for JSON Lines, a line."""

    path: str
    line: int | None = None

    def __str__(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"


class PithGraphError(Exception):
    """Root of every error pith-graph raises on purpose."""


class BundleError(PithGraphError):
    """A bundle failed parsing or verification.

    ``code`` is stable (see :class:`RejectCode`); ``message`` is for people; ``source`` is
    filled in by the pipeline when it knows the file and line.
    """

    def __init__(self, code: RejectCode, message: str, source: Source | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.source = source

    def at(self, source: Source) -> BundleError:
        """The same error, located at ``source``."""
        return BundleError(self.code, self.message, source)

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source is not None else ""
        return f"{where}{self.code.value}: {self.message}"

    def __reduce__(self) -> tuple[object, ...]:  # picklable across worker processes
        return (BundleError, (self.code, self.message, self.source))


class UsageError(PithGraphError):
    """The caller asked for something that cannot be done (a missing path, a bad option)."""


class KeyringError(UsageError):
    """A trusted-keys file that is missing, unreadable or malformed."""


class StoreError(PithGraphError):
    """A graph store failed. ``code`` is stable: ``unavailable``, ``auth``, ``database``,
    ``write_failed``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __reduce__(self) -> tuple[object, ...]:
        return (StoreError, (self.code, self.message))
