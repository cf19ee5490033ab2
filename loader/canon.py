"""Canonical JSON and the digests a Pith bundle is built from.

``canon(x)`` is JSON with object keys sorted, separators ``,``/``:`` and no whitespace,
encoded as UTF-8 (see ``BUNDLE-FORMAT.md``). The registry's choice for non-ASCII text is
unknown, so verification accepts a digest over either the raw-UTF-8 form (what orjson and
our own signer write) or the ASCII-escaped form (what ``json.dumps(..., ensure_ascii=True)``
writes); both bind the same parsed value.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import orjson

__all__ = [
    "ascii_escaped",
    "b32_of_digest",
    "canon",
    "canon_variants",
    "digest_matches",
    "encoding_matches",
    "sha256_hex",
]

_SORT = orjson.OPT_SORT_KEYS
# Python's ensure_ascii escapes everything outside printable ASCII (0x20-0x7e).
_NON_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e]")


def canon(value: Any) -> bytes:
    """Return the canonical raw-UTF-8 JSON encoding of ``value``.

    >>> canon({"b": 1, "a": ["é", None]})
    b'{"a":["\\xc3\\xa9",null],"b":1}'
    """
    return orjson.dumps(value, option=_SORT)


def _is_escaped_form(canonical: bytes) -> bool:
    """True when the bytes need no escaping (ASCII without DEL, which ensure_ascii escapes)."""
    return canonical.isascii() and b"\x7f" not in canonical


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def ascii_escaped(canonical: bytes) -> bytes:
    """Turn raw-UTF-8 canonical bytes into the ASCII-escaped variant.

    Outside strings canonical JSON is pure ASCII, and raw control characters never appear
    (they are already escaped), so escaping every non-ASCII character of the text is exactly
    what ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)``
    would write.

    >>> ascii_escaped(canon({"n": "Zoë"}))
    b'{"n":"Zo\\\\u00eb"}'
    """
    if _is_escaped_form(canonical):
        return canonical
    text = canonical.decode("utf-8")
    return _NON_PRINTABLE_ASCII.sub(_escape_char, text).encode("ascii")


def canon_variants(value: Any) -> Iterator[bytes]:
    """Yield the raw-UTF-8 canonical encoding, then the ASCII-escaped one if it differs."""
    raw = canon(value)
    yield raw
    if not _is_escaped_form(raw):
        yield ascii_escaped(raw)


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def digest_matches(value: Any, expected_hex: str) -> bool:
    """True when SHA-256 of either canonical encoding of ``value`` equals ``expected_hex``."""
    return encoding_matches(orjson.dumps(value, option=_SORT), expected_hex)


def encoding_matches(raw: bytes, expected_hex: str) -> bool:
    """True when SHA-256 of the raw-UTF-8 canonical encoding ``raw``, or of its ASCII-escaped
    form, equals ``expected_hex``."""
    if hashlib.sha256(raw).hexdigest() == expected_hex:
        return True
    return not _is_escaped_form(raw) and sha256_hex(ascii_escaped(raw)) == expected_hex


_B32 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
#: Every 10-bit value as its two base32 characters.
_B32_PAIRS = [bytes((_B32[v >> 5], _B32[v & 31])) for v in range(1024)]


def b32_of_digest(hex_digest: str, length: int = 26) -> str:
    """The first ``length`` characters of the RFC 4648 base32 of the raw digest bytes.

    Read ten bits at a time from the digest as one integer (the standard library's base32
    is pure Python, and this runs once per bundle).

    >>> b32_of_digest("0c7fd72298fd8783bddddabf6a361c6e7ae24b3654f11ff6a67888be65f2523c")
    'BR75OIUY7WDYHPO53K7WUNQ4NZ'
    >>> import base64
    >>> b32_of_digest("ff" * 32, 52) == base64.b32encode(b"\\xff" * 32).decode()[:52]
    True
    """
    pairs = -(-length // 2)
    bits = pairs * 10
    nibbles = -(-bits // 4)
    value = int(hex_digest[:nibbles].ljust(nibbles, "0"), 16) >> (nibbles * 4 - bits)
    encoded = b"".join([_B32_PAIRS[(value >> shift) & 1023] for shift in range(bits - 10, -1, -10)])
    return encoded[:length].decode("ascii")
