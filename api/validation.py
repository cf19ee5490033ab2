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
document (the same text again, :class:`~strawberry.extensions.ParserCache` handing back the
same document) is answered from the cache on the loop, as before. The threads are two of
their own (one GIL: more would not validate faster), so slow documents queue behind each
other, not in front of the loop's other uses of its default executor (name lookups); one
whose request ran out of time while queued is dropped unvalidated.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import validate_document

__all__ = ["OffLoopValidation"]


class _Cache:
    """A least-recently-used map shared by the requests of every thread."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[Hashable, list[GraphQLError]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> list[GraphQLError] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: Hashable, errors: list[GraphQLError]) -> None:
        with self._lock:
            self._entries[key] = errors
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)


def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="graphql-validation")


_VALIDATING = _pool()
_CACHES: dict[int, _Cache] = {}
_CACHES_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    """A forked process has none of its parent's threads, but the pool it copied believes
    its idle worker is there: work sent to it waited for a thread that never came (the first
    request of a server forked after a validation, as a benchmark or ``gunicorn --preload``
    forks, took 15 s). The child gets a pool of its own, and locks no thread can be holding."""
    global _VALIDATING, _CACHES_LOCK
    _VALIDATING = _pool()
    _CACHES_LOCK = threading.Lock()
    for cache in _CACHES.values():
        cache._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _cache(maxsize: int) -> _Cache:
    with _CACHES_LOCK:
        return _CACHES.setdefault(maxsize, _Cache(maxsize))


class OffLoopValidation(SchemaExtension):
    """Validate each document once (a cache of ``maxsize`` documents, shared by every request
    whose extension has that size), on a worker thread; strawberry then skips its own
    validation (it validates only when no extension has set ``pre_execution_errors``)."""

    def __init__(self, maxsize: int) -> None:
        self._cache = _cache(maxsize)

    async def on_validate(self) -> AsyncIterator[None]:
        context = self.execution_context
        document, rules = context.graphql_document, tuple(context.validation_rules)
        schema: Any = context.schema._schema
        assert document is not None  # parsed: strawberry validates only a document it has
        key = (document, rules)
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
            self._cache.put(key, found)
            errors = found
        context.pre_execution_errors = errors
        yield
