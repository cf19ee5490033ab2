"""Requests' transactions still being ended after their answers, and the server's wait for
them before it closes the driver.

A bridged request (Neo4j's reads over the asyncio driver, :mod:`pith_graph.api.bridge`) may
be answered before its transaction ends: :meth:`~pith_graph.api.context.Context.close` ends
it in a task of its own, after the read still in flight (a request that ran out of time
leaves one). The server, stopping, waits for this event loop's such tasks before it closes
the driver (the lifespan of :func:`~pith_graph.api.app.create_app`): the driver must not be
closed under sessions in use. Closed under them, a read still opening its connection got one
the closing pool no longer knew, ended normally, and its ending task, cancelled with the
loop, never closed its session (``ResourceWarning: unclosed AsyncSession``, an intermittent
failure of tests/api/test_api_aborted_loads.py on a cold server).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

__all__ = ["ENDINGS_SECONDS", "end_in_background", "wait_for_endings"]

log = logging.getLogger("pith_graph.api.closing")

#: How long a stopping server waits for answered requests' transactions to end (their reads
#: in flight are bounded by the statement timeout too).
ENDINGS_SECONDS = 5.0

#: The tasks of :func:`end_in_background` still running, every loop's (the loop itself keeps
#: only a weak reference to a task).
_RUNNING: set[asyncio.Task[None]] = set()


def end_in_background(ending: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    """Run ``ending`` (a request's transaction being ended) in a task on this loop, which
    :func:`wait_for_endings` waits for."""
    task = asyncio.get_running_loop().create_task(ending)
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    return task


async def wait_for_endings(timeout: float = ENDINGS_SECONDS) -> int:
    """Wait, ``timeout`` seconds at most, for this loop's tasks of :func:`end_in_background`
    (those started while it waits too); cancel those still running then, and return how
    many they were.

    >>> async def main() -> int:
    ...     end_in_background(asyncio.sleep(0.01))
    ...     end_in_background(asyncio.sleep(60))
    ...     return await wait_for_endings(0.5)
    >>> asyncio.run(main())
    1
    """
    loop = asyncio.get_running_loop()
    until = loop.time() + timeout
    while mine := {task for task in _RUNNING if task.get_loop() is loop}:
        _, late = await asyncio.wait(mine, timeout=max(0.0, until - loop.time()))
        if late:
            for task in late:
                task.cancel()  # not waited for: ending it may wait on the server again
            log.warning(
                "%d request transaction(s) still being ended after %.1f s at shutdown: their "
                "sessions are dropped with the driver",
                len(late),
                timeout,
            )
            return len(late)
    return 0
