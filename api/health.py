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
  whose reads their cost bounds run on it, :func:`~pith_graph.api.loops.run_execution`);
* a failing store is said in the log once, then once every :data:`REPEAT_SECONDS` while it
  keeps failing (with how many checks failed meanwhile), and its recovery once: with the
  store down a failed ping returns at once, and probes at any rate (a load balancer's, a
  client's) wrote a line each, hundreds a second.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from pith_graph.api.lanes import Runner
from pith_graph.errors import StoreError

__all__ = ["HEALTH_TIMEOUT_SECONDS", "REPEAT_SECONDS", "HealthCheck"]

log = logging.getLogger("pith_graph.api.health")

#: How long ``/healthz`` waits for the store (leaving room to answer within 2 s).
HEALTH_TIMEOUT_SECONDS = 1.5
#: While the store keeps failing, how often the log says so again.
REPEAT_SECONDS = 60.0


class HealthCheck:
    """``await check()`` is True when ``ping`` succeeds within ``timeout`` seconds."""

    def __init__(
        self, ping: Callable[[], None], run: Runner, timeout: float = HEALTH_TIMEOUT_SECONDS
    ) -> None:
        self.ping = ping
        self.run = run
        self.timeout = timeout
        self._in_flight: asyncio.Task[bool] | None = None
        self._said: tuple[str, float] | None = None  # the failure last logged, and when
        self._unsaid = 0  # failed checks since

    def _failed(self, reason: str) -> None:
        now = time.monotonic()
        if self._said is not None and self._said[0] == reason and now - self._said[1] < REPEAT_SECONDS:
            self._unsaid += 1
            return
        since = f" ({self._unsaid} more failed checks since the last line)" if self._unsaid else ""
        log.warning("health check failed: %s%s", reason, since)
        self._said, self._unsaid = (reason, now), 0

    def _answered(self) -> None:
        if self._said is not None:
            log.warning("health check: the store answers again")
            self._said, self._unsaid = None, 0

    async def _ping(self) -> bool:
        try:
            await self.run(self.ping)
        except StoreError as err:
            self._failed(str(err))
            return False
        self._answered()
        return True

    async def __call__(self) -> bool:
        if self._in_flight is None or self._in_flight.done():
            self._in_flight = asyncio.create_task(self._ping())
        try:
            async with asyncio.timeout(self.timeout):
                return await asyncio.shield(self._in_flight)
        except TimeoutError:
            self._failed(f"the store did not answer within {self.timeout:g} s")
            return False
