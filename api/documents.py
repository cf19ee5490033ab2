"""Parsed query documents, cached by the digest of their text and bounded by memory too
(since 0.9.3): :class:`DocumentCache`, in place of strawberry's ``ParserCache``.

``ParserCache`` is an ``lru_cache`` of 256 documents keyed by their text; nothing bounded
their memory. A parsed document keeps its text (its source), a token for every name,
punctuator and comment (a comment's or a string's token holding a copy of its characters)
and the nodes: :func:`document_bytes` counts that, :data:`BYTES_PER_TOKEN` a token and its
share of the nodes (measured: 260-600 bytes) besides the values. 600 distinct documents of
1,990 fields in 19 KB each (refused by validation, but parsed and cached first) grew a
server by 390 MB, and 600 of 64 KB of comments holding one emoji each (250 KB a text in
Python) by 93 MB; the caches of :mod:`.validation` and :mod:`.plan`, which keep documents
too, now count them the same way.

A cache's key is :func:`document_key`: the SHA-256 of the text and the parse options, so a
key keeps 32 bytes, not a second copy of the text, and two documents are never taken for
each other (a structural key would: graphql-core's nodes compare equal by their fields and
offsets, so ``{\\n  a }`` and ``{   a }`` did in the validation cache, whose errors then
pointed at another line).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

from graphql import DocumentNode, Token, parse
from strawberry.extensions import SchemaExtension

from pith_graph.api.lru import BoundedLRU, memory_of

__all__ = [
    "BYTES_PER_DOCUMENT",
    "BYTES_PER_TOKEN",
    "DOCUMENTS",
    "DocumentCache",
    "document_bytes",
    "document_key",
    "text_digest",
]

#: Documents each cache keeps at most (as strawberry's ``ParserCache`` was given before).
DOCUMENTS = 256
#: Bytes a cache may keep per document, on average (16 MiB for 256): a document of 57 tokens
#: is counted 36 KB, one of 2,000 (``max_tokens``) 1.3 MB.
BYTES_PER_DOCUMENT = 64 * 1024
#: A token of a parsed document and its share of the nodes, besides its value.
BYTES_PER_TOKEN = 600


def text_digest(text: str) -> bytes:
    """The SHA-256 of ``text`` in UTF-8 (a lone surrogate, which JSON can carry, as its
    3 bytes: the encoding stays one to one).

    >>> text_digest("abc").hex()[:16]
    'ba7816bf8f01cfea'
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def document_key(query: str, parse_options: Mapping[str, Any]) -> Hashable:
    """What the document of ``query`` parsed with ``parse_options`` is cached under."""
    return text_digest(query), tuple(sorted(parse_options.items()))


def document_bytes(document: DocumentNode) -> int:
    """The memory a parsed document keeps, counted: its text, and each of its tokens (in a
    chain, comments included) with its value. Linear in the tokens (at most ``max_tokens``
    and as many comments): some 0.7 ms for 2,000, once a document is parsed."""
    loc = document.loc
    if loc is None:  # parsed without locations (not by this API): its nodes alone
        return BYTES_PER_TOKEN * len(document.definitions)
    size = memory_of(loc.source.body)
    token: Token | None = loc.start_token
    while token is not None:
        size += BYTES_PER_TOKEN + (memory_of(token.value) if token.value else 0)
        token = token.next
    return size


_CACHES: dict[tuple[int, int], BoundedLRU[Hashable, DocumentNode]] = {}


class DocumentCache(SchemaExtension):
    """Parses each text once: at most ``maxsize`` documents and ``max_bytes`` bytes of them
    (:func:`document_bytes`), the least recently used going first, shared by every request
    whose extension has those bounds. A document over ``max_bytes`` is parsed every time."""

    def __init__(self, maxsize: int = DOCUMENTS, max_bytes: int | None = None) -> None:
        bounds = (maxsize, maxsize * BYTES_PER_DOCUMENT if max_bytes is None else max_bytes)
        found = _CACHES.get(bounds)
        if found is None:  # a race makes two, one of them kept: no harm
            found = _CACHES.setdefault(bounds, BoundedLRU(*bounds))
        self.cache = found

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        query = context.query
        if isinstance(query, str):  # else strawberry refuses the request
            key = document_key(query, context.parse_options)
            document = self.cache.get(key)
            if document is None:
                document = parse(query, **context.parse_options)
                self.cache.put(key, document, document_bytes(document))
            context.graphql_document = document
        yield
