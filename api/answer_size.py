"""An answer's size in bytes, measured before it is encoded, so that one too large is refused
rather than built (``max_answer_bytes``, ``PITH_API_MAX_ANSWER_BYTES``).

The cost (:mod:`pith_graph.api.cost`) bounds the objects an answer holds, not the strings in
them: a bundle of 1 MiB may hold a title of 500 KB, and ``papersById`` answers each of its
500 identifiers, repeats included, under each of 30 aliases. A request of 10 KB and cost
4,000 so asked for an answer of 2 GB, and the server built it in memory. The strings are
shared (an answer repeats the same string object, not a copy), so the answer is small until
it is encoded; it is measured here first, in one walk that stops once past the limit, each
long string encoded once however often it appears.
"""

from __future__ import annotations

import orjson
from graphql import GraphQLError
from strawberry.types import ExecutionResult

from pith_graph.errors import LimitExceeded

__all__ = ["answer_bytes", "too_large"]

#: Strings up to this many characters are counted without encoding them: their quotes and
#: UTF-8 bytes (a control character, escaped, is up to 5 bytes more: a bounded error).
_SHORT = 64
#: What a number, ``true``, ``false`` or ``null`` may take.
_SCALAR = 24


def answer_bytes(data: object, limit: int) -> int:
    """The bytes ``data`` (an answer's ``data``: dicts, lists, strings, numbers, booleans,
    ``None``) takes as JSON, or a count past ``limit`` as soon as it is past it."""
    total = 0
    encoded: dict[int, int] = {}
    stack = [data]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            total += 1 + len(item) if item else 2
            for key, value in item.items():
                total += len(key) + 3
                if type(value) is str and len(value) <= _SHORT and value.isascii():
                    total += len(value) + 2  # (most of an answer: counted here, not stacked)
                else:
                    stack.append(value)
        elif isinstance(item, list | tuple):
            total += 1 + len(item) if item else 2
            stack.extend(item)
        elif isinstance(item, str):
            total += _string_bytes(item, encoded)
        else:
            total += _SCALAR
        if total > limit:
            return total
    return total


def _string_bytes(text: str, encoded: dict[int, int]) -> int:
    if len(text) <= _SHORT:
        return (len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))) + 2
    size = encoded.get(id(text))  # the answer holds the string: its id stays its own
    if size is None:
        try:
            size = len(orjson.dumps(text))
        except orjson.JSONEncodeError:  # not UTF-8: the answer fails to encode anyway
            size = 6 * len(text) + 2
        encoded[id(text)] = size
    return size


def too_large(limit: int) -> ExecutionResult:
    """The result that answers a request whose answer would hold more than ``limit`` bytes."""
    error = LimitExceeded(
        f"The answer would hold more than {limit} bytes of JSON, the limit of an answer.",
        "Ask for less: fewer fields with long texts (abstract, title, authorNames), fewer "
        "papers, identifiers or aliases; page on with the endCursor as after.",
    )
    return ExecutionResult(data=None, errors=[GraphQLError(str(error), original_error=error)])
