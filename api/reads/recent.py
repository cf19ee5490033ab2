"""A bounded cache of the values made most recently, safe to share between threads."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["RECENT_KEPT", "Recent"]

T = TypeVar("T")

#: Key lists of combinations (several title words, several categories) kept, the most
#: recently asked: a client choosing new ones each request must not grow memory without bound.
RECENT_KEPT = 32


class Recent(Generic[T]):
    """The last ``size`` values made, by key; safe to share between threads (executions run
    on several: a ``move_to_end`` after another thread's ``popitem`` raised KeyError)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: OrderedDict[str, T] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    def get_or_make(self, key: str, make: Callable[[], T]) -> T:
        """The value kept for ``key``, else ``make()`` (outside the lock), then kept."""
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        made = make()
        with self._lock:
            self._kept[key] = made
            self._kept.move_to_end(key)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return made
