"""A request's time limit as the in-memory reader sees it, inside one reader call.

The executions check the request's time before every reader call and every list
(:meth:`~pith_graph.api.context.Context.check_time`), but a reader call on the memory
backend is pure CPU in one Python frame: ``relatedPapers`` over a batch of papers whose
authors share many papers is ids × authors × their papers, seconds or minutes that nothing
could stop, holding its execution thread long after the request was answered
``TIMEOUT``. So the request's :class:`~pith_graph.api.context.Context` makes itself the current deadline
(a :class:`Due`) around each reader call (:data:`CURRENT`, a :class:`~contextvars.ContextVar`
set and reset in the frame that calls the reader, so on whatever thread that is), and the
reader's loops whose work grows with the data count it on a :class:`Steps`, which looks at
the clock once every :data:`STEP` units of work and raises the request's time-out error once
the deadline has passed. Outside a request (start-up, tools, tests) there is no deadline and
nothing is checked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Iterator
from contextvars import ContextVar
from heapq import nlargest, nsmallest
from typing import Any, Protocol, TypeVar

__all__ = ["CURRENT", "STEP", "Deadline", "Due", "Steps", "ranked"]

T = TypeVar("T")

#: Units of work (roughly a dictionary update or a record made: well under a microsecond
#: each) between two looks at the clock: at most a few milliseconds past the deadline, and
#: a clock read per several thousand units costs nothing measurable.
STEP = 4096

#: Lists longer than this are ranked by :func:`ranked` in steps, not by one ``sorted``.
_SORTED_AT_ONCE = 4 * STEP


class Due(Protocol):
    """A request's time limit, as a reader call sees it (a request's
    :class:`~pith_graph.api.context.Context` is one: no object made per request for it)."""

    def check_time(self) -> None:
        """Raise the request's time-out error once its time is up."""


class Deadline:
    """When a request's time is up (``time.monotonic()``), and the error to raise then."""

    __slots__ = ("at", "error")

    def __init__(self, at: float, error: Callable[[], Exception]) -> None:
        self.at = at
        self.error = error

    def check_time(self) -> None:
        """Raise the request's time-out error once its time is up."""
        if time.monotonic() > self.at:
            raise self.error()


#: The deadline of the reader call running in this context (``None``: none). Set it around a
#: call and reset it after (``token = CURRENT.set(deadline)`` ... ``CURRENT.reset(token)``),
#: in the frame that makes the call.
CURRENT: ContextVar[Due | None] = ContextVar("pith_graph_read_deadline", default=None)


class Steps:
    """One reader call's count of work toward its next look at the clock, which raises the
    time-out error of the current deadline (:data:`CURRENT`) once it has passed (no
    deadline: never). Count on it with ``steps(units)``; where a call per iteration would
    cost more than the iteration, on a local counter instead::

        left -= units
        if left < 0:
            left = steps.check()
    """

    __slots__ = ("_deadline", "_left")

    def __init__(self) -> None:
        self._deadline = CURRENT.get()
        self._left = STEP

    def __call__(self, work: int) -> None:
        """Count ``work`` units done (or about to be)."""
        self._left -= work
        if self._left < 0:
            self._left = self.check()

    def check(self) -> int:
        """Look at the clock now; :data:`STEP`, the units until the next look."""
        if self._deadline is not None:
            self._deadline.check_time()
        return STEP

    def iterate(self, items: Iterable[T]) -> Iterator[T]:
        """``items``, one unit counted for each."""
        left = STEP
        for item in items:
            left -= 1
            if left < 0:
                left = self.check()
            yield item


def ranked(
    steps: Steps, first: int, items: Collection[T], key: Callable[[T], Any], *, reverse: bool = False
) -> list[T]:
    """``sorted(items, key=key, reverse=reverse)[:first]`` (the same list, ties in the same
    order), counted on ``steps``: a long list is ranked one item at a time
    (``heapq.nsmallest`` or ``nlargest``, documented equal to that sort and cut), so that
    ranking a million items is not one call nothing can stop."""
    if len(items) <= _SORTED_AT_ONCE:
        steps(len(items))
        return sorted(items, key=key, reverse=reverse)[:first]
    return (nlargest if reverse else nsmallest)(first, steps.iterate(items), key=key)
