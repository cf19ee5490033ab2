"""Strict parsing of one bundle's bytes into a JSON object.

Rejects, each with its own code: bytes over the size limit (``too_large``), invalid JSON or
UTF-8 (``malformed_json``), an object that repeats a key (``duplicate_key``, RFC 7493: a
parser differential would let a signed value display differently), nesting deeper than the
depth limit (``too_deep``), a top level that is not an object (``not_object``) and an integer
outside ±(2**53 - 1) (``schema_error``: only in that range, RFC 7493's, does every JSON reader
get the same integer from the same text; past 2**64 orjson reads ``18446744073709551616`` and
``…617`` as one float, so two texts other readers read apart would verify under one
signature). On the fast path the range costs nothing (orjson's strict-integer output fails
past it, and an integer past 2**64 never re-serialises as written); off it, the standard
library's exact parse is walked. Floats are read as before: every IEEE reader reads a float
alike.

Fast path: orjson parses, then re-serialises the value in input order; when those bytes equal
the input (every compact bundle, the registry's included) the input cannot have repeated a
key, because a repeated key cannot survive a parse. Anything else (whitespace, other
escaping) takes the exact slow path through the standard library's pair hook.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import orjson

from pith_graph.errors import QUOTED_CHARACTERS, BundleError, RejectCode, quoted

__all__ = [
    "DEFAULT_INPUT_LIMITS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "ENCODER_MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "InputLimits",
    "parse_bundle",
    "strict_json",
]

DEFAULT_MAX_BYTES = 1 << 20
#: The largest ``max_bytes`` (``--max-bytes``): 64 MiB, 64 times the default. A bundle is read
#: whole, then parsed into objects that can take twenty times its size (a 64 MiB JSON array
#: of short strings takes 1.4 GB), in every worker at once; a larger limit lets one input
#: exhaust the memory (MemoryError) instead of being rejected as ``too_large``.
MAX_BYTES_LIMIT = 64 << 20
DEFAULT_MAX_DEPTH = 64
#: The deepest nesting orjson encodes (its recursion limit): a deeper value it parsed could not
#: be re-encoded, nor its digests computed, whatever the depth limit says.
ENCODER_MAX_DEPTH = 254


@dataclass(frozen=True, slots=True)
class InputLimits:
    """Input limits: bytes per bundle and JSON nesting depth."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH


DEFAULT_INPUT_LIMITS = InputLimits()


#: The largest integer magnitude a bundle may hold (RFC 7493, I-JSON: exact in every reader).
MAX_SAFE_INTEGER = 2**53 - 1


def _number_error(value: Any, path: str) -> BundleError | None:
    """The first integer outside ±(2**53 - 1) in ``value``, as a ``schema_error``."""
    kind = type(value)
    if kind is dict:
        for key, child in value.items():
            plain = key.isidentifier() and len(key) <= QUOTED_CHARACTERS
            where = f"{path}.{key}" if plain else f"{path}[{quoted(key)}]"
            if found := _number_error(child, where):
                return found
    elif kind is list:
        for index, child in enumerate(value):
            if found := _number_error(child, f"{path}[{index}]"):
                return found
    elif kind is int and not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return BundleError(
            RejectCode.SCHEMA_ERROR,
            f"{path} must be an integer within ±(2**53 - 1), not {quoted(value)}",
        )
    return None


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise BundleError(RejectCode.DUPLICATE_KEY, f"object repeats the key {quoted(key)}")
        obj[key] = value
    return obj


def _walk_exceeds(value: Any, limit: int) -> bool:
    """True when containers nest deeper than ``limit`` (``value`` itself is depth 1)."""
    for child in value.values() if type(value) is dict else value:
        kind = type(child)
        if (kind is dict or kind is list) and (limit <= 1 or _walk_exceeds(child, limit - 1)):
            return True
    return False


def _depth_exceeds(value: Any, limit: int) -> bool:
    """True when containers nest deeper than ``limit``.

    orjson's indented output puts every member of a depth-``d`` container at ``2d`` spaces,
    so without a line indented ``2 * limit`` nothing can be deeper than ``limit``: one C
    pass instead of a Python walk. Only when such a line exists does the exact walk run.
    """
    indented = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    if b"\n" + b" " * (2 * limit) not in indented:
        return False
    return _walk_exceeds(value, limit)


def _not_json(word: str) -> Any:
    raise BundleError(RejectCode.MALFORMED_JSON, f"{word} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BundleError(RejectCode.MALFORMED_JSON, f"the number {quoted(text)} is out of range")
    return value


def _slow_parse(data: bytes) -> Any:
    """The document as written, by the standard parser: every key of an object (a duplicate
    is :data:`~RejectCode.DUPLICATE_KEY`), and none of what it reads beyond JSON (NaN,
    Infinity, a number too large for a float: :data:`~RejectCode.MALFORMED_JSON`, as orjson
    says), so that a document is malformed whatever else it holds."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BundleError(RejectCode.MALFORMED_JSON, f"not UTF-8: {err.reason}") from err
    try:
        return json.loads(
            text, object_pairs_hook=_reject_duplicates, parse_constant=_not_json, parse_float=_finite
        )
    except RecursionError as err:
        raise BundleError(RejectCode.TOO_DEEP, "JSON nesting is too deep") from err
    except json.JSONDecodeError as err:
        raise BundleError(
            RejectCode.MALFORMED_JSON, f"{err.msg} (line {err.lineno}, column {err.colno})"
        ) from err
    except ValueError as err:  # an integer of more digits than Python reads (4,300)
        raise BundleError(RejectCode.SCHEMA_ERROR, f"a number is too long: {err}") from err


def strict_json(data: bytes) -> Any:
    """``data`` parsed as written, for JSON other than bundles (a keys file): an object that
    repeats a key is :data:`~RejectCode.DUPLICATE_KEY`, NaN and the like
    :data:`~RejectCode.MALFORMED_JSON` (:class:`BundleError`), as in a bundle."""
    return _slow_parse(data)


def parse_bundle(data: bytes, limits: InputLimits = DEFAULT_INPUT_LIMITS) -> dict[str, Any]:
    """Parse one bundle strictly; raise :class:`BundleError` on anything suspect.

    >>> parse_bundle(b'{"a": 1}')
    {'a': 1}
    >>> parse_bundle(b'{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    pith_graph.errors.BundleError: duplicate_key: object repeats the key 'a'
    """
    if len(data) > limits.max_bytes:
        raise BundleError(
            RejectCode.TOO_LARGE,
            f"bundle is {len(data)} bytes, over the limit of {limits.max_bytes}",
        )
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        if "recursion" in str(err).lower():
            raise BundleError(RejectCode.TOO_DEEP, "JSON nesting is too deep") from err
        # orjson's message is good; let the standard parser give line/column when it can.
        _slow_parse(data)
        raise BundleError(RejectCode.MALFORMED_JSON, str(err)) from err
    wide_integer = False
    try:
        compact = orjson.dumps(value, option=orjson.OPT_STRICT_INTEGER)
    except orjson.JSONEncodeError:
        wide_integer = True  # an integer past ±(2**53 - 1), or nesting past orjson's limit
        try:
            compact = orjson.dumps(value)
        except orjson.JSONEncodeError as err:  # only its recursion limit fails on a parsed value
            _slow_parse(data)  # a duplicate key is still reported as what it is
            limit = min(limits.max_depth, ENCODER_MAX_DEPTH)
            raise BundleError(RejectCode.TOO_DEEP, f"JSON nests deeper than the limit of {limit}") from err
    exact = None
    if compact != data.strip():
        # Not byte-identical compact JSON: orjson may have kept only the last of two equal
        # keys, so check the document as written (slow, rare). First, so that a duplicate
        # hiding a deep branch is reported as what it is.
        exact = _slow_parse(data)
    if _depth_exceeds(value, limits.max_depth):
        raise BundleError(RejectCode.TOO_DEEP, f"JSON nests deeper than the limit of {limits.max_depth}")
    if not isinstance(value, dict):
        raise BundleError(RejectCode.NOT_OBJECT, f"top level is a JSON {type(value).__name__}, not an object")
    if (wide_integer or exact is not None) and (
        found := _number_error(value if exact is None else exact, "bundle")
    ):
        raise found
    return value
