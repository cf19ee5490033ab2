"""Validation off the event loop: strawberry's ``ValidationCache``, with the validation of a
document not yet cached run on a worker thread.

graphql-core validates in one synchronous call, and some valid documents cost it far more
than their size suggests: an 8 KB document of ``papers { totalCount }`` repeated 399 times
passes every limit of :mod:`~pith_graph.api.limits` and costs about 0.6 s of CPU in
``OverlappingFieldsCanBeMergedRule`` (graphql-core stops it at its own budget, ``Validation
aborted.``). Run on the event loop that also serves ``/healthz`` and every other request
(the Neo4j backend executes there), a few such requests at once stalled all of them for
seconds. On a thread, the loop keeps its turn (the interpreter switches threads every few
milliseconds), and a request that runs out of time is answered at its deadline. A cached
document (the same text again) is answered from the cache on the loop, as before. The threads are two of
their own (one GIL: more would not validate faster), so slow documents queue behind each
other, not in front of the loop's other uses of its default executor (name lookups); one
whose request ran out of time while queued is dropped unvalidated.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from graphql import DocumentNode, GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import validate_document

from pith_graph.api.documents import BYTES_PER_DOCUMENT, document_bytes, document_key
from pith_graph.api.lru import BoundedLRU, memory_of

__all__ = ["OffLoopValidation"]


def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="graphql-validation")


_VALIDATING = _pool()
_CACHES: dict[int, BoundedLRU[Hashable, list[GraphQLError]]] = {}
_CACHES_LOCK = threading.Lock()
#: An entry without errors: its key (a digest and a tuple) and its list.
_ENTRY_BYTES = 200
#: An error beside the document its nodes keep and its message (measured: 690 bytes).
_ERROR_BYTES = 1024


def entry_bytes(document: DocumentNode, errors: list[GraphQLError]) -> int:
    """The memory an entry keeps: errors keep the document (their nodes) and their messages,
    none keep nothing. A message quotes names of the document: a 64,000-character variable
    name spread by a fragment into 100 operations is 100 messages of 6.5 MB in all, from a
    64 KB request (counted 1 KiB an error, 100 of them grew a server by 185 MB)."""
    if not errors:
        return _ENTRY_BYTES
    messages = sum(memory_of(error.message) for error in errors)
    return _ENTRY_BYTES + document_bytes(document) + _ERROR_BYTES * len(errors) + messages


def _after_fork_in_child() -> None:
    """A forked process has none of its parent's threads, but the pool it copied believes
    its idle worker is there: work sent to it waited for a thread that never came (the first
    request of a server forked after a validation, as a benchmark or ``gunicorn --preload``
    forks, took 15 s). The child gets a pool of its own, and locks no thread can be holding
    (the caches' own: :mod:`.lru`)."""
    global _VALIDATING, _CACHES_LOCK
    _VALIDATING = _pool()
    _CACHES_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _cache(maxsize: int) -> BoundedLRU[Hashable, list[GraphQLError]]:
    with _CACHES_LOCK:
        found = _CACHES.get(maxsize)
        if found is None:
            found = _CACHES[maxsize] = BoundedLRU(maxsize, maxsize * BYTES_PER_DOCUMENT)
        return found


class OffLoopValidation(SchemaExtension):
    """Validate each document once (a cache of ``maxsize`` documents and as many times
    :data:`~.documents.BYTES_PER_DOCUMENT` bytes, :func:`entry_bytes`, shared by every request
    whose extension has that size; keyed by the digest of the text, :func:`~.documents.document_key`,
    and the rules), on a worker thread; strawberry then skips its own validation (it validates
    only when no extension has set ``pre_execution_errors``)."""

    def __init__(self, maxsize: int) -> None:
        self._cache = _cache(maxsize)

    async def on_validate(self) -> AsyncIterator[None]:
        context = self.execution_context
        document, rules = context.graphql_document, tuple(context.validation_rules)
        schema: Any = context.schema._schema
        assert document is not None  # parsed: strawberry validates only a document it has
        assert context.query is not None  # ... parsed from the query (api/documents.py)
        key = (document_key(context.query, context.parse_options), rules)
        errors = self._cache.get(key)
        if errors is None:
            loop = asyncio.get_running_loop()
            found: list[GraphQLError] = await loop.run_in_executor(
                _VALIDATING,
                validate_document,
                schema,
                document,
                rules,
            )
            self._cache.put(key, found, entry_bytes(document, found))
            errors = found
        context.pre_execution_errors = errors
        yield
