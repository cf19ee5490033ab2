"""Gzip inflated one way for every reader of the input.

A ``.gz`` file read in this process, by a worker (whole or as a share) and a gzipped stdin
all go through :func:`inflated`, so the same bytes yield the same bundles, and the same read
error after the same bundles, however the run is split: a broken stream gives everything it
inflates to before the fault, then the error (an ``unreadable`` rejection). The gzip module
would not: it keeps a member's data when only its checksum is wrong, but drops up to a read's
worth when the data itself is corrupt, and its reads are not a worker's.
"""

from __future__ import annotations

import io
import zlib
from typing import BinaryIO

__all__ = ["READ_BYTES", "READ_ERRORS", "Inflater", "inflated"]

#: Compressed bytes read, and at most the bytes inflated, at a time.
READ_BYTES = 1 << 20
#: What reading an input, inflated or not, may raise: each reader turns it into an
#: ``unreadable`` rejection (``EOFError``: a truncated stream; ``zlib.error``: corrupt data).
READ_ERRORS = (OSError, EOFError, zlib.error)


def _before_fault(inflate: zlib._Decompress, data: bytes) -> bytes:
    """What ``data`` inflates to before the byte at which ``inflate`` fails on it: in steps,
    then byte by byte within the step that fails (a copy of ``inflate`` before each)."""
    out: list[bytes] = []
    for step in (4096, 1):
        for start in range(0, len(data), step):
            before = inflate.copy()
            try:
                out.append(inflate.decompress(data[start : start + step]))
            except zlib.error:
                inflate, data = before, data[start : start + step]
                break
        else:
            break  # no fault after all
    return b"".join(out)


class Inflater(io.RawIOBase):
    """A gzip stream inflated in large blocks, without the gzip module's per-read overhead.

    Members follow one another, with zeros allowed after each (padding, as gzip(1) allows);
    the stream starts with a member. A stream that ends inside a member, or holds none (an
    empty file), raises ``EOFError``;
    corrupt data or a wrong checksum raises ``zlib.error``, after everything inflated before
    the fault has been read.
    """

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self._inflate = zlib.decompressobj(31)
        self._input = b""
        self._pending = b""
        self._in_member = False
        self._started = False
        self._fault: zlib.error | None = None
        self._done = False

    def readable(self) -> bool:
        return True

    def _next_block(self) -> bytes:
        before = self._inflate.copy()
        try:
            return self._inflate.decompress(self._input, READ_BYTES)
        except zlib.error as fault:  # less than READ_BYTES came before it, or it would have stopped there
            self._fault = fault
            return _before_fault(before, self._input)

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            if self._fault is not None:
                raise self._fault
            if not self._in_member and self._started:
                self._input = self._input.lstrip(b"\x00")  # zeros after a member are padding
            if not self._input:
                self._input = self._handle.read(READ_BYTES)
                if not self._input:
                    if self._in_member:
                        raise EOFError("compressed file ended before the end-of-stream marker was reached")
                    if not self._started:  # gzip(1): "unexpected end of file"; a download that failed
                        raise EOFError("an empty file, not gzip (gzip of nothing is 20 bytes)")
                    self._done = True
                continue
            self._in_member = self._started = True
            self._pending = self._next_block()
            if self._fault is not None:
                self._input = b""
            elif self._inflate.eof:  # a member ended; another may follow
                self._input = self._inflate.unused_data
                self._inflate = zlib.decompressobj(31)
                self._in_member = False
            else:
                self._input = self._inflate.unconsumed_tail
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def inflated(handle: BinaryIO) -> BinaryIO:
    """A buffered stream of what the gzip stream ``handle`` inflates to (see :class:`Inflater`)."""
    return io.BufferedReader(Inflater(handle), buffer_size=READ_BYTES)
