"""One level's reader calls, gathered and made together.

Fields of one level of a plan register the keys they need (:meth:`Batch.keyed`) or a call
(:meth:`Batch.call`); :meth:`Batch.run` then calls each reader method once for all the keys
it was given (per distinct extra argument), like the DataLoaders of the resolvers do but
without an event-loop pass per loader (on Neo4j: one statement per method, in the request's
transaction, on the request's lane, where the whole plan runs).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

from pith_graph.api.reads.reader import GraphReader

__all__ = ["Batch"]

Found = Callable[[], Any]


class Batch:
    """Reader calls waiting to be made: keyed calls merge their keys."""

    def __init__(self, reader: GraphReader, check: Callable[[], None] | None = None) -> None:
        self.reader = reader
        #: Called before every reader call (the request's time limit: it raises when up).
        self.check = check
        self._keys: dict[tuple[str, tuple[Hashable, ...]], dict[Hashable, None]] = {}
        self._calls: list[tuple[str, tuple[Any, ...]]] = []
        self._found: dict[Any, Any] = {}

    def keyed(self, method: str, extra: tuple[Hashable, ...], keys: Iterable[Hashable]) -> Found:
        """``reader.<method>(keys, *extra)`` with every key any field asks for; the returned
        function gives the answer (a dict by key) once the batch has run."""
        slot = (method, extra)
        pending = self._keys.get(slot)
        if pending is None:
            pending = self._keys[slot] = {}
        pending.update(dict.fromkeys(keys))
        found = self._found
        return lambda: found[slot]

    def call(self, method: str, *args: Any) -> Found:
        """``reader.<method>(*args)`` on its own; the returned function gives its answer."""
        index = len(self._calls)
        self._calls.append((method, args))
        found = self._found
        return lambda: found[index]

    def __bool__(self) -> bool:
        return bool(self._keys or self._calls)

    def run(self, *, sole: bool = False) -> None:
        """Make every call (blocking: on the request's lane for Neo4j). ``sole``: they are
        the request's only calls that may run a statement; then a batch of one call makes
        it as :meth:`~pith_graph.api.reads.reader.GraphReader.sole_statement` allows."""
        if not sole or len(self._keys) + len(self._calls) != 1:
            self._run()
            return
        method = next(iter(self._keys))[0] if self._keys else self._calls[0][0]
        with self.reader.sole_statement(method):
            self._run()

    def _run(self) -> None:
        reader, check = self.reader, self.check
        for (method, extra), keys in self._keys.items():
            if check is not None:
                check()
            self._found[(method, extra)] = getattr(reader, method)(list(keys), *extra)
        for index, (method, args) in enumerate(self._calls):
            if check is not None:
                check()
            self._found[index] = getattr(reader, method)(*args)
