"""Splitting the input into tasks that worker processes read by themselves.

The parent never reads bundle bytes unless it must (stdin): it plans :class:`Task`\\ s from
file names and sizes, and each worker opens, decompresses and splits its own:

* a JSON Lines file is cut into byte **ranges** at line boundaries (a worker seeks to its
  range; line numbers are counted per range and fixed up by the parent, in order);
* a gzipped JSON Lines file cannot be cut without inflating it, so it is read **whole** by
  one worker; when there are too few such files to keep every worker busy (a single big
  ``.jsonl.gz``, or the last files of a run), each is read as ``n`` **shares**: every share
  inflates the whole stream, and share ``i`` keeps the blocks of ``BLOCK_LINES`` lines whose
  number is ``i`` modulo ``n`` (the parent reads the shares' blocks in turn, so the input
  order is kept);
* single-document files (``.json``, ``.json.gz``) are **grouped** into tasks of about
  ``GROUP_BYTES``.

:func:`read_task` is what a worker runs: it yields the task's bundles (or read errors), as
:func:`~pith_graph.loader.sources.iter_inputs` would for the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Literal

from pith_graph.errors import BundleError, RejectCode, Source
from pith_graph.loader.gunzip import READ_ERRORS, inflated
from pith_graph.loader.lines import RawBundle, iter_lines
from pith_graph.loader.sources import UNSEARCHED, iter_inputs, open_regular

__all__ = ["BLOCK_LINES", "GROUP_BYTES", "Task", "plan_tasks", "read_task"]

GROUP_BYTES = 1 << 20
MAX_RANGE_BYTES = 8 << 20  # ~600 plain bundles
MIN_RANGE_BYTES = 256 << 10
BLOCK_LINES = 256
_LINES_SUFFIXES = (".jsonl", ".ndjson")

TaskKind = Literal["files", "range", "share", "bundles"]


@dataclass(frozen=True, slots=True)
class Task:
    """What one worker reads: whole ``files``, a byte ``range`` [start, end) of one JSON
    Lines file, share ``share`` of ``shares`` of one gzipped JSON Lines file, or
    ``bundles`` the parent read (stdin)."""

    kind: TaskKind
    paths: tuple[str, ...] = ()
    start: int = 0
    end: int = 0
    share: int = 0
    shares: int = 1
    bundles: tuple[RawBundle | BundleError, ...] = ()

    @property
    def path(self) -> str:
        return self.paths[0]


def _is_lines(path: str) -> bool:
    return (path[:-3] if path.endswith(".gz") else path).endswith(_LINES_SUFFIXES)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # unreadable: reported by the worker that opens it


def plan_tasks(files: list[str], workers: int) -> list[Task | list[Task]]:
    """The tasks for ``files`` (expanded, without ``-``), in input order; a list stands for
    the shares of one file, read together by different workers."""
    gz_lines = [path for path in files if path.endswith(".gz") and _is_lines(path)]
    shared: set[str] = set()
    if len(gz_lines) < 2 * workers:
        shared = set(gz_lines)
    elif len(gz_lines) % workers:
        shared = set(gz_lines[-(len(gz_lines) % workers) :])  # nobody waits for the last files
    total_plain = sum(_size(p) for p in files if _is_lines(p) and not p.endswith(".gz"))
    span = min(MAX_RANGE_BYTES, max(MIN_RANGE_BYTES, total_plain // (4 * workers) or 1))
    planned: list[Task | list[Task]] = []
    group: list[str] = []
    group_bytes = 0

    def close_group() -> None:
        nonlocal group, group_bytes
        if group:
            planned.append(Task("files", tuple(group)))
        group, group_bytes = [], 0

    for path in files:
        if not _is_lines(path):
            group.append(path)
            group_bytes += _size(path)
            if group_bytes >= GROUP_BYTES:
                close_group()
            continue
        close_group()
        if path in shared:
            planned.append([Task("share", (path,), share=i, shares=workers) for i in range(workers)])
        elif path.endswith(".gz"):
            planned.append(Task("files", (path,)))
        else:
            size = _size(path)
            starts = list(range(0, size, span)) or [0]
            planned.extend(Task("range", (path,), start, min(start + span, size)) for start in starts)
    close_group()
    return planned


def _open_lines(path: str) -> tuple[BinaryIO, BinaryIO]:
    """The raw file and a buffered stream of its (inflated) bytes."""
    handle = open_regular(path, folder=UNSEARCHED)  # closed by the caller
    if not path.endswith(".gz"):
        return handle, handle
    return handle, inflated(handle)


def _skip_line(stream: BinaryIO) -> None:
    while (chunk := stream.readline(1 << 16)) and not chunk.endswith(b"\n"):
        pass


def _read_range(task: Task, limit: int) -> Iterator[RawBundle | BundleError | int]:
    """The lines that start in [start, end), numbered from the range's first line, then
    the number of lines read."""
    counted: list[int] = []
    with open_regular(task.path, folder=UNSEARCHED) as handle:
        if task.start:
            handle.seek(task.start - 1)
            if handle.read(1) != b"\n":
                _skip_line(handle)  # that line belongs to the previous range
        yield from iter_lines(handle, task.path, limit, stop=task.end, counted=counted)
    yield counted[0]


def _read_share(task: Task, limit: int) -> Iterator[RawBundle | BundleError | None]:
    """Every line of the file is read; this share yields its blocks' bundles, and ``None``
    after each of its blocks (the parent reads the shares' blocks in turn). A read error is
    reported by the share whose block it falls in."""
    mine = task.share == 0
    try:
        handle, stream = _open_lines(task.path)
        with handle:
            for index, item in enumerate(iter_lines(stream, task.path, limit)):
                if index and index % BLOCK_LINES == 0:
                    if mine:
                        yield None
                    mine = (index // BLOCK_LINES) % task.shares == task.share
                if mine:
                    yield item
    except READ_ERRORS as err:
        if mine:
            yield BundleError(RejectCode.UNREADABLE, f"cannot read: {err}", Source(task.path))
    if mine:
        yield None


def read_task(task: Task, limit: int) -> Iterator[RawBundle | BundleError | int | None]:
    """What a worker reads for ``task``: bundles and read errors; ``None`` marks the end of
    a share's block; a ``range`` ends with the number of lines it read."""
    if task.kind == "share":
        yield from _read_share(task, limit)
        return
    if task.kind == "bundles":
        yield from task.bundles
        return
    try:
        if task.kind == "range":
            yield from _read_range(task, limit)
        elif len(task.paths) == 1 and task.path.endswith(".gz") and _is_lines(task.path):
            handle, stream = _open_lines(task.path)
            with handle:
                yield from iter_lines(stream, task.path, limit)
        else:
            yield from iter_inputs(task.paths, max_bytes=limit)
    except READ_ERRORS as err:
        yield BundleError(RejectCode.UNREADABLE, f"cannot read: {err}", Source(task.path))
