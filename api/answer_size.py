"""An answer's size in bytes, measured before it is encoded, so that one too large is refused
rather than built (``max_answer_bytes``, ``PITH_API_MAX_ANSWER_BYTES``).

The cost (:mod:`pith_graph.api.cost`) bounds the objects an answer holds, not the strings in
them: a bundle of 1 MiB may hold a title of 500 KB, and ``papersById`` answers each of its
500 identifiers, repeats included, under each of 30 aliases. A request of 10 KB and cost
4,000 so asked for an answer of 2 GB, and the server built it in memory. The strings are
shared (an answer repeats the same string object, not a copy), so the answer is small until
it is encoded; it is measured here first, in one walk that stops once past the limit, each
long string measured once however often it appears.

The walk is the Rust extension's (``api/json_size``, ``pith_graph.api._json_size``: about ten
times faster, twice what encoding the answer costs; ``benchmarks/bench_answer_size.py``) when
the install built it (:data:`NATIVE`), else :func:`python_answer_bytes`, the same measure.
"""

from __future__ import annotations

from typing import Any

import orjson
from graphql import GraphQLError
from strawberry.types import ExecutionResult

from pith_graph.errors import LimitExceeded

__all__ = [
    "NATIVE",
    "AnswerTooLarge",
    "answer_bytes",
    "is_too_large",
    "measured",
    "python_answer_bytes",
    "too_large",
]

#: A string without escapes up to this many characters, in an object, is counted without
#: being stacked (most of an answer); a list of strings alone is encoded whole (below).
_SHORT = 64
#: What a number, ``true``, ``false`` or ``null`` may take.
_SCALAR = 24


class AnswerTooLarge(LimitExceeded):
    """An answer over ``max_answer_bytes``: refused after execution, so never a request
    error (``data`` null, HTTP 200 in every media type, as the objects' limit counted as an
    answer is made)."""


def python_answer_bytes(data: object, limit: int) -> int:
    """The bytes ``data`` (an answer's ``data``: dicts, lists, strings, numbers, booleans,
    ``None``) takes as JSON, exactly for all but numbers (counted at most what they may take),
    or a count past ``limit`` as soon as it is past it. Each long string and each list of
    strings is encoded once, however often the answer holds it. Keys are taken for GraphQL
    names, as an answer's are (response names: nothing in them is escaped). The Rust
    extension's ``answer_bytes`` is exact for any key, and for integers of 64 bits, ``true``,
    ``false`` and ``null`` too."""
    total = 0
    encoded: dict[int, int] = {}  # id -> bytes: the answer holds each object, its id stays its own
    stack = [data]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            total += 1 + len(item) if item else 2
            for key, value in item.items():
                total += len(key) + 3
                if (
                    type(value) is str
                    and len(value) <= _SHORT
                    and value.isascii()
                    and value.isprintable()  # no control character, nor (below) what else JSON escapes
                    and '"' not in value
                    and "\\" not in value
                ):
                    total += len(value) + 2
                else:
                    stack.append(value)
        elif type(item) is str or (isinstance(item, list) and item and set(map(type, item)) == {str}):
            size = encoded.get(id(item))
            if size is None:
                size = encoded[id(item)] = _encoded_bytes(item)
            total += size
        elif isinstance(item, list | tuple):
            total += 1 + len(item) if item else 2
            stack.extend(item)
        else:
            total += _SCALAR
        if total > limit:
            return total
    return total


try:
    from pith_graph.api._json_size import answer_bytes as _native_answer_bytes
except ImportError:  # installed without a Rust toolchain
    NATIVE = False
    answer_bytes = python_answer_bytes
else:
    NATIVE = True
    answer_bytes = _native_answer_bytes


def _encoded_bytes(value: str | list[str]) -> int:
    try:
        return len(orjson.dumps(value))
    except orjson.JSONEncodeError:  # not UTF-8: the answer fails to encode anyway
        return 6 * sum(map(len, value)) + 2 if isinstance(value, list) else 6 * len(value) + 2


def too_large(limit: int) -> ExecutionResult:
    """The result that answers a request whose answer would hold more than ``limit`` bytes."""
    error = AnswerTooLarge(
        f"The answer would hold more than {limit} bytes of JSON, the limit of an answer.",
        "Ask for less: fewer fields with long texts (abstract, title, authorNames), fewer "
        "papers, identifiers or aliases; page on with the endCursor as after.",
    )
    return ExecutionResult(data=None, errors=[GraphQLError(str(error), original_error=error)])


def measured(result: ExecutionResult, limit: int) -> ExecutionResult:
    """``result``, or :func:`too_large` when its data is over ``limit`` bytes (measured where
    the execution ran: on its thread, for the memory backend's heavy ones)."""
    if result.data is not None and answer_bytes(result.data, limit) > limit:
        return too_large(limit)
    return result


def is_too_large(result: Any) -> bool:
    return any(isinstance(error.original_error, AnswerTooLarge) for error in result.errors or ())
