"""The loop of an upgrade that brings a Neo4j database up to date a batch at a time (read the
rows still to change, write them, read again until none is left): :func:`upgrade_batches`.

Such a loop ends only when each write takes its rows out of the next read. A row the write
cannot change (an analyst's stub ``(:Author {name: …})`` without the ``nameKey`` the write
matches on) came back in every read, and ``pith-graph load`` and ``schema`` never ended.
The upgrades' reads leave stubs out (:func:`~pith_graph.loader.stores.cypher.keyed`); this
loop stops, with an error naming them, on any row read again after its write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from pith_graph.errors import StoreError, StoreErrorCode, quoted

__all__ = ["upgrade_batches"]

T = TypeVar("T")


def upgrade_batches(read: Callable[[], list[T]], key: Callable[[T], object], what: str) -> Iterator[list[T]]:
    """Each batch ``read`` returns, until it returns none, for the caller to write; a row
    (told by its ``key``) that a read returns again after its batch was given out means the
    write did not change it: :class:`StoreError` ``write_failed``, naming ``what`` it is."""
    before: set[str] = set()  # the keys' repr: a hand-edited key may be a list
    while True:
        found = read()
        if not found:
            return
        keys = [key(row) for row in found]
        stuck = [k for k in keys if repr(k) in before]
        if stuck:
            shown = ", ".join(quoted(k) for k in stuck[:3]) + (", ..." if len(stuck) > 3 else "")
            raise StoreError(
                StoreErrorCode.WRITE_FAILED,
                f"{len(stuck)} {what} could not be brought up to date ({shown}): "
                "they are unchanged after their upgrade was written",
            )
        yield found
        before = {repr(k) for k in keys}
