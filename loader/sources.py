"""Reading bundles from paths: files, folders, JSON Lines, gzip and stdin, streamed.

:func:`iter_inputs` yields one :class:`RawBundle` (bytes plus where they came from) or one
:class:`~pith_graph.errors.BundleError` (an input that could not even be read) per bundle, never
holding more than one bundle's bytes at a time. A ``.json`` file is one bundle; a
``.jsonl`` file is one bundle per non-blank line; ``.gz`` adds gzip to either. Folders are
walked recursively in sorted order for those suffixes. ``-`` reads stdin: gzip is sniffed
from its magic bytes, and the stream is one JSON document or JSON Lines, sniffed from its
first line.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pith_graph.errors import BundleError, RejectCode, Source, UsageError

__all__ = [
    "BLANK_RUN",
    "BUNDLE_SUFFIXES",
    "RawBundle",
    "expand_paths",
    "iter_inputs",
    "iter_lines",
    "open_regular",
]

BUNDLE_SUFFIXES = (".json", ".json.gz", ".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class RawBundle:
    """The bytes of one bundle and where they came from."""

    data: bytes
    source: Source


def _is_bundle_file(name: str) -> bool:
    return name.endswith(BUNDLE_SUFFIXES)


def _file_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """The (device, inode) of a file, the same through any link or spelling of its path."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file; else :class:`OSError` (an
    ``unreadable`` rejection): a FIFO in a folder would block the run until someone writes to
    it, a device may never end. Opened without blocking and checked on the open file, so a
    path swapped after any earlier check changes nothing. Stdin (``-``) is how to pipe."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file (a FIFO, device or socket): pipe it to - (stdin) instead")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def expand_paths(paths: Iterable[str], *, exclude: Iterable[str | os.PathLike[str]] = ()) -> list[str]:
    """Check every path exists and expand folders to their bundle files, sorted.

    Files of ``exclude`` are left out wherever they are found, named directly or inside a
    folder, by any path that leads to them (a symlink, a hard link, ``./``): the pipeline
    passes the ``--trusted-keys`` files, so a corpus may keep its ``keyring.json`` beside
    its bundles.

    Raises :class:`UsageError` for a path that does not exist: a typo should stop the run
    before anything is written, not become a rejection.
    """
    excluded = {key for path in exclude if (key := _file_identity(path)) is not None}

    def kept(path: str) -> bool:
        return not excluded or _file_identity(path) not in excluded

    expanded: list[str] = []
    for raw in paths:
        if raw == "-":
            expanded.append(raw)
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                str(Path(root) / name)
                for root, _dirs, names in os.walk(path)
                for name in names
                if _is_bundle_file(name)
            )
            expanded.extend(filter(kept, found))
        elif path.exists():
            if kept(raw):
                expanded.append(raw)
        else:
            raise UsageError(f"no such file or folder: {raw}")
    return expanded


def _read_capped(stream: BinaryIO, limit: int) -> bytes:
    """Read at most ``limit + 1`` bytes: enough to tell a too-large input without reading it."""
    return stream.read(limit + 1)


def _too_large(size_hint: str, limit: int, source: Source) -> BundleError:
    return BundleError(
        RejectCode.TOO_LARGE, f"bundle is {size_hint} bytes, over the limit of {limit}", source
    )


#: Blank lines read one by one before the rest of a run is skipped in bulk.
BLANK_RUN = 64
_BLANK_BYTES = re.compile(rb"[ \t\n\r\x0b\x0c]*")  # what bytes.strip() removes


def _skip_blank_lines(stream: BinaryIO, peek: Callable[[int], bytes], stop: int | None) -> tuple[int, bool]:
    """Consume the blank lines at the start of ``stream``'s buffer (whole lines only, none
    starting at or after ``stop``) without a Python step per line. Return how many, and
    whether that was worth its copies: each ``peek`` copies what is buffered (up to 1 MiB).

    A gzip of blank lines inflates about 1000:1: one line at a time, a small file would
    cost minutes.
    """
    skipped = consumed = copied = 0
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
        skipped += buffered.count(b"\n", 0, end)
        if end < len(buffered):
            break
    return skipped, consumed * 8 >= copied


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
    then receives the number of lines read, blank ones included.
    """
    number = first_line - 1
    blanks = 0  # blank lines in a row
    # Blank lines in a row before a bulk skip: BLANK_RUN, doubled after each skip that was
    # not worth its copies (short runs that each end just past it), so they stay cheap too.
    threshold = BLANK_RUN
    peek: Callable[[int], bytes] | None = getattr(stream, "peek", None)
    while True:
        if stop is not None and stream.tell() >= stop:
            break
        line = stream.readline(limit + 2)  # limit + newline + one byte to detect overflow
        if not line:
            break
        number += 1
        if len(line) > limit + 1 or (len(line) == limit + 1 and not line.endswith(b"\n")):
            while line and not line.endswith(b"\n"):
                line = stream.readline(_CHUNK)
            yield _too_large(f"more than {limit}", limit, Source(path, number))
            blanks = 0
            continue
        stripped = line.strip()
        if stripped:
            yield RawBundle(stripped, Source(path, number))
            blanks = 0
            continue
        blanks += 1
        if blanks >= threshold and peek is not None:
            skipped, worth_it = _skip_blank_lines(stream, peek, stop)
            number += skipped
            threshold = BLANK_RUN if worth_it else threshold * 2
    if counted is not None:
        counted.append(number - first_line + 1)


def _iter_document(stream: BinaryIO, path: str, limit: int) -> Iterator[RawBundle | BundleError]:
    data = _read_capped(stream, limit)
    source = Source(path)
    if len(data) > limit:
        yield _too_large(f"more than {limit}", limit, source)
    else:
        yield RawBundle(data, source)


def _iter_stdin(stream: BinaryIO, limit: int) -> Iterator[RawBundle | BundleError]:
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(_Prepend(b"", stream))
    source: BinaryIO = buffered
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        source = gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[assignment]
    first = source.readline(limit + 2)
    head = first.strip()
    replay = io.BufferedReader(_Prepend(first, source))
    if not head or (head.startswith(b"{") and head.endswith(b"}")):
        # JSON Lines; one compact document on one line is the single-bundle case.
        yield from iter_lines(replay, "-", limit)
    else:
        # A pretty-printed (multi-line) document, or garbage: one bundle.
        yield from _iter_document(replay, "-", limit)


class _Prepend(io.RawIOBase):
    """A raw stream that first replays ``head`` and then reads ``tail``."""

    def __init__(self, head: bytes, tail: BinaryIO) -> None:
        self._head = head
        self._tail = tail

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        chunk = self._tail.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _iter_file(path: str, limit: int) -> Iterator[RawBundle | BundleError]:
    name = path[:-3] if path.endswith(".gz") else path
    is_lines = name.endswith((".jsonl", ".ndjson"))
    with open_regular(path) as handle:
        stream: BinaryIO = handle
        if path.endswith(".gz"):
            stream = gzip.GzipFile(fileobj=handle, mode="rb")  # type: ignore[assignment]
        if is_lines:
            yield from iter_lines(stream, path, limit)
        else:
            yield from _iter_document(stream, path, limit)


def iter_inputs(
    paths: Iterable[str], *, max_bytes: int, stdin: BinaryIO | None = None
) -> Iterator[RawBundle | BundleError]:
    """Stream every bundle of ``paths`` (already expanded by :func:`expand_paths`).

    A file that fails mid-way (truncated gzip, unreadable) yields an ``unreadable``
    rejection for what remains and the run goes on with the next file.
    """
    for path in paths:
        try:
            if path == "-":
                yield from _iter_stdin(stdin if stdin is not None else sys.stdin.buffer, max_bytes)
            else:
                yield from _iter_file(path, max_bytes)
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as err:
            yield BundleError(RejectCode.UNREADABLE, f"cannot read: {err}", Source(path))
