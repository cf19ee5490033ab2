"""JSON Lines: one bundle per non-blank line of a stream, read without holding more than a
line; a line over the limit is skipped to its end, runs of blank lines in bulk, and a stream
that fails to read part-way (a truncated gzip) ends in an ``unreadable`` rejection naming the
line it failed in. :mod:`~pith_graph.loader.sources` opens the streams.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from pith_graph.errors import BundleError, RejectCode, Source
from pith_graph.loader.gunzip import READ_ERRORS

__all__ = ["BLANK_RUN", "RawBundle", "iter_lines", "line_over", "too_large"]

_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class RawBundle:
    """The bytes of one bundle and where they came from."""

    data: bytes
    source: Source


def too_large(size_hint: str, limit: int, source: Source) -> BundleError:
    return BundleError(
        RejectCode.TOO_LARGE, f"bundle is {size_hint} bytes, over the limit of {limit}", source
    )


def line_over(line: bytes, limit: int) -> bool:
    """Whether ``line`` (read with ``readline(limit + 3)``) holds more than ``limit`` bytes
    before its end (LF or CRLF): a line of ``limit`` bytes is within it, whichever end it has."""
    if line.endswith(b"\r\n"):
        return len(line) - 2 > limit
    return len(line) - line.endswith(b"\n") > limit


#: Blank lines read one by one before the rest of a run is skipped in bulk.
BLANK_RUN = 64
_BLANK_BYTES = re.compile(rb"[ \t\n\r\x0b\x0c]*")  # what bytes.strip() removes


def _skip_blank_lines(
    stream: BinaryIO, peek: Callable[[int], bytes], stop: int | None, skipped: list[int]
) -> bool:
    """Consume the blank lines at the start of ``stream``'s buffer (whole lines only, none
    starting at or after ``stop``) without a Python step per line, counting them in
    ``skipped[0]`` as they go (a read that fails part-way has counted those before it).
    Return whether that was worth its copies: each ``peek`` copies what is buffered (up to
    1 MiB).

    A gzip of blank lines inflates about 1000:1: one line at a time, a small file would
    cost minutes.
    """
    consumed = copied = 0
    while buffered := peek(1):
        copied += len(buffered)
        found = _BLANK_BYTES.match(buffered)
        run = found.end() if found else 0
        if stop is not None:
            run = max(0, min(run, stop - stream.tell()))
        end = buffered.rfind(b"\n", 0, run) + 1  # through the run's last newline
        if not end:
            break
        stream.read(end)
        consumed += end
        skipped[0] += buffered.count(b"\n", 0, end)
        if end < len(buffered):
            break
    return consumed * 8 >= copied


def iter_lines(
    stream: BinaryIO,
    path: str,
    limit: int,
    first_line: int = 1,
    stop: int | None = None,
    counted: list[int] | None = None,
) -> Iterator[RawBundle | BundleError]:
    """One bundle per non-blank line; a line over the limit is skipped to its end.

    With ``stop``, reading ends before the first line that starts at or after that offset
    of ``stream`` (a byte range of a file, see :mod:`pith_graph.loader.tasks`); ``counted``
    then receives the number of lines read, blank ones included. Without it, a stream that
    fails to read (a truncated gzip) ends in an ``unreadable`` rejection naming the line it
    failed in.
    """
    number = first_line - 1
    blanks = 0  # blank lines in a row
    # Blank lines in a row before a bulk skip: BLANK_RUN, doubled after each skip that was
    # not worth its copies (short runs that each end just past it), so they stay cheap too.
    threshold = BLANK_RUN
    peek: Callable[[int], bytes] | None = getattr(stream, "peek", None)
    reading = first_line
    skipping: list[int] | None = None  # blank lines skipped so far by a bulk skip under way
    try:
        while True:
            if stop is not None and stream.tell() >= stop:
                break
            reading = number + 1  # the line a read error falls in
            line = stream.readline(limit + 3)  # limit + CRLF + one byte to detect overflow
            if not line:
                break
            number += 1
            if line_over(line, limit):
                blank = not line.strip()
                while line and not line.endswith(b"\n"):
                    line = stream.readline(_CHUNK)
                    blank = blank and not line.strip()
                if not blank:  # a blank line is one however long
                    yield too_large(f"more than {limit}", limit, Source(path, number))
                    blanks = 0
                    continue
                line = b""
            stripped = line.strip()
            if stripped:
                yield RawBundle(stripped, Source(path, number))
                blanks = 0
                continue
            blanks += 1
            if blanks >= threshold and peek is not None:
                skipping = [0]
                worth_it = _skip_blank_lines(stream, peek, stop, skipping)
                number += skipping[0]
                skipping = None
                threshold = BLANK_RUN if worth_it else threshold * 2
    except READ_ERRORS as err:  # a truncated or corrupt stream: the line it ended in
        if stop is not None:
            raise  # a byte range (its caller numbers what follows from its count)
        at = reading if skipping is None else number + skipping[0] + 1
        yield BundleError(RejectCode.UNREADABLE, f"cannot read: {err}", Source(path, at))
        return
    if counted is not None:
        counted.append(number - first_line + 1)
