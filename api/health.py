"""``GET /healthz``: whether the store answers, within a bounded time, whatever its state.

A health check is asked often, by machines, exactly when things go wrong: it must answer
quickly (``503`` when the store is down or slow), never pile up blocked threads, and never
report a busy-but-healthy server as down. So:

* the answer comes within 2 s: a ping that has not answered in :data:`HEALTH_TIMEOUT_SECONDS`
  is a 503;
* at most one ping is in flight; checks that arrive meanwhile share its answer (a hung
  server costs one blocked thread, not one per probe);
* pings run on a runner of their own (one thread for Neo4j), so queries that fill the
  request threads do not starve it. The answer still needs the event loop: on the memory
  backend the ping runs there, and no execution holds the loop for long (only cheap ones
  whose reads their cost bounds run on it, :func:`~pith_graph.api.loops.run_execution`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from pith_graph.api.lanes import Runner
from pith_graph.errors import StoreError

__all__ = ["HEALTH_TIMEOUT_SECONDS", "HealthCheck"]

log = logging.getLogger("pith_graph.api.health")

#: How long ``/healthz`` waits for the store (leaving room to answer within 2 s).
HEALTH_TIMEOUT_SECONDS = 1.5


class HealthCheck:
    """``await check()`` is True when ``ping`` succeeds within ``timeout`` seconds."""

    def __init__(
        self, ping: Callable[[], None], run: Runner, timeout: float = HEALTH_TIMEOUT_SECONDS
    ) -> None:
        self.ping = ping
        self.run = run
        self.timeout = timeout
        self._in_flight: asyncio.Task[bool] | None = None

    async def _ping(self) -> bool:
        try:
            await self.run(self.ping)
        except StoreError as err:
            log.warning("health check failed: %s", err)
            return False
        return True

    async def __call__(self) -> bool:
        if self._in_flight is None or self._in_flight.done():
            self._in_flight = asyncio.create_task(self._ping())
        try:
            async with asyncio.timeout(self.timeout):
                return await asyncio.shield(self._in_flight)
        except TimeoutError:
            log.warning("health check failed: the store did not answer within %g s", self.timeout)
            return False
