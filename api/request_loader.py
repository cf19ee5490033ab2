"""The DataLoader of one request: empty answers once the request is stopped, and no load
left waiting when it ends."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from strawberry.dataloader import DataLoader, DefaultCache

__all__ = ["RequestLoader"]

K = TypeVar("K")
V = TypeVar("V")


class RequestLoader(DataLoader[K, V]):
    """A DataLoader whose answers are empty (its ``default``) once the request is stopped
    (``stopped()``, :meth:`~pith_graph.api.context.Context.stopped`): out of time, or over
    its budget, the resolvers still waiting on a read (a level can be thousands of them)
    build nothing, and execution ends at once with the abort's error."""

    def __init__(self, stopped: Callable[[], bool], default: Callable[[], V], **options: Any) -> None:
        super().__init__(**options)
        self._stopped = stopped
        self._default = default

    def load(self, key: K) -> Awaitable[V]:
        return self._checked(super().load(key))

    def cancel_waiting(self) -> None:
        """Cancel the loads still waiting when the request ends (it was aborted): the fields
        awaiting them end, instead of waiting forever on a batch nothing will answer, and
        asyncio logging each as a task destroyed while pending (thousands per request that
        ran out of time on Neo4j, so a client could flood the log)."""
        cache = self.cache_map
        for future in list(cache.cache_map.values()) if isinstance(cache, DefaultCache) else ():
            future.cancel()  # nothing, once done

    async def _checked(self, found: Awaitable[V]) -> V:
        value = await found
        return self._default() if self._stopped() else value
