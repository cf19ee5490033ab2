"""Reading bundles from paths: files, folders, JSON Lines, gzip and stdin, streamed.

:func:`iter_inputs` yields one :class:`RawBundle` (bytes plus where they came from) or one
:class:`~pith_graph.errors.BundleError` (an input that could not even be read) per bundle, never
holding more than one bundle's bytes at a time. A ``.json`` file is one bundle; a
``.jsonl`` file is one bundle per non-blank line; ``.gz`` adds gzip to either. Folders are
searched recursively in sorted order for those suffixes, through links to folders (each real
folder once); a folder that cannot be searched becomes an ``unreadable`` rejection. ``-`` reads
stdin: gzip is sniffed from its magic bytes, and the stream is JSON Lines unless it is one
JSON document (see :func:`_opens_document`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import stat
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from pith_graph.errors import BundleError, RejectCode, Source, UsageError
from pith_graph.loader.gunzip import READ_ERRORS, inflated
from pith_graph.loader.lines import RawBundle, iter_lines, line_over, too_large

__all__ = [
    "BUNDLE_SUFFIXES",
    "GZIP_MAGIC",
    "UNSEARCHED",
    "RawBundle",  # from :mod:`~pith_graph.loader.lines`, where most readers of bundles take it
    "expand_paths",
    "iter_inputs",
    "open_regular",
]

BUNDLE_SUFFIXES = (".json", ".json.gz", ".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
#: How a gzip stream begins.
GZIP_MAGIC = b"\x1f\x8b"


def not_text_advice(data: bytes | bytearray) -> str | None:
    """What to say of a file meant as JSON text (a keys file, a saved graph) that is not UTF-8
    text, or ``None`` when it is: gzip-compressed ones (read as JSON, their bytes made
    "str is not valid UTF-8: surrogates not allowed") are named as such."""
    if data[:2] == GZIP_MAGIC:
        return "gzip-compressed, not JSON text: decompress it first (gunzip)"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        return f"not UTF-8 text (byte {err.start} is 0x{data[err.start]:02x})"
    return None


def _is_bundle_file(name: str) -> bool:
    return name.endswith(BUNDLE_SUFFIXES)


def _file_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """The (device, inode) of a file, the same through any link or spelling of its path."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


#: Why an input folder is read as a file: :func:`expand_paths` could not search it.
UNSEARCHED = "a folder that could not be searched when the inputs were listed"


def open_regular(
    path: str, advice: str = ": pipe it to - (stdin) instead", folder: str = "is a folder"
) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file; else :class:`OSError` (an
    ``unreadable`` rejection), its message ending in ``advice`` (``folder`` for a folder):
    a FIFO in a folder would block the run until someone writes to it, a device may never end. Opened without blocking
    and checked on the open file, so a path swapped after any earlier check changes nothing.
    Stdin (``-``) is how to pipe bundles."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise OSError(folder)
        if not stat.S_ISREG(mode):
            raise OSError(f"not a regular file (a FIFO, device or socket){advice}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # through a link
    except OSError:
        return False  # a link that cannot be followed: a file name, as os.walk has it


def _search(top: Path) -> list[str]:
    """The bundle files under the folder ``top``, sorted, and for each folder that cannot be
    searched its path with a trailing separator (read, it is an ``unreadable`` rejection).

    Links to folders are followed, after every folder reached without one: a folder is named
    by its own path when it has one under ``top``, else by the first link to it (in sorted
    order). A folder already searched, by its (device, inode), is not searched again, so a
    link to an ancestor or two links to each other cannot loop.
    """
    found: list[str] = []
    searched: set[tuple[int, int]] = set()
    pending, linked = [top], deque[Path]()
    while pending or linked:
        folder = pending.pop() if pending else linked.popleft()
        try:
            identity = os.stat(folder)
            if (identity.st_dev, identity.st_ino) in searched:
                continue
            searched.add((identity.st_dev, identity.st_ino))
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            found.append(os.path.join(folder, ""))
            continue
        subfolders: list[Path] = []
        for entry in entries:
            if not _is_folder(entry):
                if _is_bundle_file(entry.name):
                    found.append(str(folder / entry.name))
            elif entry.is_symlink():
                linked.append(folder / entry.name)
            else:
                subfolders.append(folder / entry.name)
        pending.extend(reversed(subfolders))
    return sorted(found)


def expand_paths(
    paths: Iterable[str | os.PathLike[str]], *, exclude: Iterable[str | os.PathLike[str]] = ()
) -> list[str]:
    """Check every path exists and expand folders to their bundle files, sorted. A path may
    be a ``pathlib.Path`` (any ``os.PathLike``); the paths listed are strings.

    A folder is searched recursively, through links to folders, each real folder once (see
    :func:`_search`); one that cannot be searched (no permission, gone, a path too long) is
    listed as its path with a trailing separator, which :func:`iter_inputs` reports as an
    ``unreadable`` rejection naming it.

    Files of ``exclude`` are left out wherever they are found, named directly or inside a
    folder, by any path that leads to them (a symlink, a hard link, ``./``): the pipeline
    passes the ``--trusted-keys`` files, so a corpus may keep its ``keyring.json`` beside
    its bundles.

    Raises :class:`UsageError` for a path that does not exist: a typo should stop the run
    before anything is written, not become a rejection. A path that cannot be looked at (in a
    folder the user cannot search, a name too long) is listed as it is: reading it is then an
    ``unreadable`` rejection, and the rest still loads.
    """
    excluded = {key for path in exclude if (key := _file_identity(path)) is not None}

    def kept(path: str) -> bool:
        return not excluded or _file_identity(path) not in excluded

    expanded: list[str] = []
    for given in paths:
        raw = os.fspath(given)  # (a Path file was listed as a Path, and failed when read)
        if raw == "-":
            expanded.append(raw)
            continue
        try:
            is_dir = stat.S_ISDIR(os.stat(raw).st_mode)
        except OSError as err:
            if err.errno in _NO_SUCH_PATH:
                raise UsageError(f"no such file or folder: {raw}") from None
            # It may exist but cannot be looked at (a folder on its way that cannot be
            # searched, a name too long): listed, so that reading it is an unreadable rejection.
            expanded.append(raw)
            continue
        if is_dir:
            expanded.extend(filter(kept, _search(Path(raw))))
        elif kept(raw):
            expanded.append(raw)
    return expanded


#: What ``stat`` says of a path that names nothing (``Path.exists`` is false for these).
_NO_SUCH_PATH = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EBADF})


def _read_capped(stream: BinaryIO, limit: int) -> bytes:
    """Read at most ``limit + 1`` bytes: enough to tell a too-large input without reading it."""
    return stream.read(limit + 1)


def _iter_document(
    stream: BinaryIO, path: str, limit: int, size: int | None = None
) -> Iterator[RawBundle | BundleError]:
    """One bundle, the whole of ``stream``; ``size``: the file's, when known (not inflated)."""
    data = _read_capped(stream, limit)
    source = Source(path)
    if len(data) > limit:
        yield too_large(
            str(size) if size is not None and size > limit else f"more than {limit}", limit, source
        )
    else:
        yield RawBundle(data, source)


_BOM = b"\xef\xbb\xbf"
_CLOSERS = {b"{": b"}", b"[": b"]"}


def _is_whole(line: bytes) -> bool:
    """Whether ``line`` (stripped) opens and closes an object or array, as a JSON Lines line does."""
    closer = _CLOSERS.get(line[:1])
    return closer is not None and len(line) > 1 and line.endswith(closer)


def _opens_document(first: bytes, limit: int) -> bool:
    """Whether the first line of stdin may begin one (pretty-printed) JSON document: within
    the limit (a longer one would make any document too large) and, after a UTF-8 BOM,
    opening an object or array without closing it. A line that is blank, whole (``{…}``,
    ``[]``), another value or garbage cannot begin one: the stream is JSON Lines."""
    if line_over(first, limit):
        return False
    head = first.removeprefix(_BOM).strip()
    return head[:1] in _CLOSERS and not _is_whole(head)


def _is_document(data: bytes, limit: int) -> bool:
    """Whether stdin's first ``limit + 1`` bytes, whose first line opens a document, are read
    as that document: unless they are not one JSON value and a later line is whole (``{…}``)
    as in JSON Lines, such as lines after a first line ``{`` from whoever wrote it."""
    if len(data) <= limit:
        try:
            json.loads(data.removeprefix(_BOM).decode("utf-8", "replace"))
            return True
        except RecursionError:
            return True  # the bundle parser reports such nesting itself
        except ValueError:
            pass
    lines = data.split(b"\n")[1:] if len(data) <= limit else data.split(b"\n")[1:-1]  # complete lines
    return not any(_is_whole(line.strip()) for line in lines if line.lstrip().startswith(b"{"))


def _iter_stdin(stream: BinaryIO, limit: int) -> Iterator[RawBundle | BundleError]:
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(_Prepend(b"", stream))
    source: BinaryIO = buffered
    if buffered.peek(2)[:2] == GZIP_MAGIC:
        source = inflated(buffered)
    first = source.readline(limit + 3)
    replay = io.BufferedReader(_Prepend(first, source))
    if not _opens_document(first, limit):
        yield from iter_lines(replay, "-", limit)
        return
    data = _read_capped(replay, limit)
    if _is_document(data, limit):
        yield from _iter_document(io.BytesIO(data), "-", limit)
    else:
        yield from iter_lines(io.BufferedReader(_Prepend(data, replay)), "-", limit)


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
        # read1: what ``tail`` holds, so a read error after it (a broken gzip) loses nothing
        chunk = getattr(self._tail, "read1", self._tail.read)(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _iter_file(path: str, limit: int) -> Iterator[RawBundle | BundleError]:
    name = path[:-3] if path.endswith(".gz") else path
    is_lines = name.endswith((".jsonl", ".ndjson"))
    with open_regular(path, folder=UNSEARCHED) as handle:
        stream: BinaryIO = handle
        if path.endswith(".gz"):
            stream = inflated(handle)  # as a worker inflates it
        if is_lines:
            yield from iter_lines(stream, path, limit)
        else:
            size = None if stream is not handle else os.fstat(handle.fileno()).st_size
            yield from _iter_document(stream, path, limit, size)


def _stdin_buffer() -> BinaryIO:
    """This process's binary stdin; :class:`OSError` (an ``unreadable`` rejection) when it
    was closed at start-up (``<&-``), as Python then has no ``sys.stdin``."""
    buffer: BinaryIO | None = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        raise OSError("stdin is closed")
    # A pipe another process left non-blocking would read as empty, or end early, whenever
    # its writer is slow: read it blocking, as open_regular does files.
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):  # not a descriptor
        os.set_blocking(buffer.fileno(), True)
    return buffer


def iter_inputs(
    paths: Iterable[str], *, max_bytes: int, stdin: BinaryIO | None = None
) -> Iterator[RawBundle | BundleError]:
    """Stream every bundle of ``paths`` (already expanded by :func:`expand_paths`).

    A file that fails mid-way (truncated gzip, unreadable), a folder that could not be
    searched and a closed stdin yield an ``unreadable`` rejection (for what remains) and the
    run goes on with the next file.
    """
    for path in paths:
        try:
            if path == "-":
                yield from _iter_stdin(stdin if stdin is not None else _stdin_buffer(), max_bytes)
            else:
                yield from _iter_file(path, max_bytes)
        except READ_ERRORS as err:
            yield BundleError(RejectCode.UNREADABLE, f"cannot read: {err}", Source(path))
