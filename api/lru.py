"""Least-recently-used maps bounded by entries and by memory, and the measures of memory
they keep: the caches of query documents (:mod:`.documents`, :mod:`.validation`, the plans
of :mod:`.plan`) and the store of persisted queries (:mod:`.persisted`), since 0.9.3.

A count alone does not bound memory: a text holding one character beyond the BMP takes 4
bytes a character in Python (a 64 KB body made a 250 KB text), and a parsed document keeps
a token (some 600 bytes with its nodes) for every name and punctuator: 1,990 fields in 19 KB
of text parsed to 1.2 MB. 600 such documents, refused by validation but parsed and cached
first, grew a server by 390 MB (api/documents.py: what a document's entry is counted).
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

__all__ = ["BoundedLRU", "memory_of"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def memory_of(text: str) -> int:
    """The bytes Python keeps ``text`` in (``sys.getsizeof``: 1, 2 or 4 bytes a character,
    as its widest character needs, and a header), not its length in UTF-8."""
    return sys.getsizeof(text)


class BoundedLRU(Generic[K, V]):
    """At most ``max_entries`` values and ``max_bytes`` bytes of them (as :meth:`put` is told
    each one's size), the least recently used going first; safe to share between threads.

    >>> cache: BoundedLRU[str, str] = BoundedLRU(3, 100)
    >>> for key, size in (("a", 40), ("b", 40), ("c", 40)):
    ...     cache.put(key, key.upper(), size)
    >>> cache.get("a"), cache.get("b"), cache.get("c"), len(cache), cache.bytes
    (None, 'B', 'C', 2, 80)
    >>> cache.put("d", "D", 101)  # larger than all the bytes: not kept
    >>> cache.get("d"), len(cache)
    (None, 2)
    """

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        if max_entries < 1:
            raise ValueError("a cache holds at least one entry")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0  # of the values kept, as counted
        _LIVE.add(self)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: K) -> bool:
        return key in self._entries

    def get(self, key: K) -> V | None:
        """The value of ``key``, now the most recently used; ``None`` if not kept."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: K, value: V, size: int) -> None:
        """Keep ``value`` (``size`` bytes) under ``key``, pushing out the least recently used
        past either bound; a value larger than all the bytes is not kept."""
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._entries[key] = (value, size)
            self.bytes += size
            while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.bytes -= dropped


_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked process has none of its parent's threads: a lock one of them held when the
    process forked would never be released (a server forks its workers once loaded)."""
    for cache in list(_LIVE):
        cache._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
