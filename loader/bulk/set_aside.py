"""The database ``--replace`` overwrites, kept until the new one is complete (since 0.9.12).

``neo4j-admin database import full --overwrite-destination`` removes the old store before it
writes the new one, so an importer that then fails (out of memory, a full disk, killed) left
nothing. Instead the old store's folders, the two the importer would clear
(``data/databases/neo4j`` and its transaction logs, ``data/transactions/neo4j``), are
renamed into a private folder under the Neo4j home (``.pith-graph-replaced-*``: the same
file system, so no copy and no disk), named in the ``import.incomplete`` marker before
anything moves; the importer then writes into an empty destination:

- the importer fails (an error, Ctrl-C): the partial new store is removed, the old one moved
  back, the marker removed, and the error says the previous database was kept;
- it succeeds: the marker stops naming the copy (one rename), then the copy is removed;
- this process is killed: the next import finds the marker naming the copy and moves it back
  first (:func:`restore_kept`), then applies the usual rules. ``scripts/neo4j start`` refuses
  the folder meanwhile, even with ``NEO4J_INCOMPLETE=serve``.

Each step is a rename, made durable (``fsync`` of the folders) before the next, and moving
back repeats safely after a crash midway: a part still in the copy replaces what is in its
place, a part no longer there was moved back already. A part the old database lacked is kept
as an empty folder, so that the new one's is removed all the same.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from pith_graph.errors import StoreError
from pith_graph.loader.bulk.neo4j_admin import DATABASE
from pith_graph.loader.bulk.recovery import (
    KEPT_PREFIX,
    clear_marker,
    kept_copy,
    mark_incomplete,
    sync_folder,
)

__all__ = ["PARTS", "keeping_the_old_database", "restore_kept"]

#: The folders under ``data/`` that ``--overwrite-destination`` clears, each kept as its first name.
PARTS = ("databases", "transactions")


def _place(data: Path, part: str) -> Path:
    return data / "data" / part / DATABASE


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _move_aside(data: Path, kept: Path) -> None:
    for part in PARTS:
        place = _place(data, part)
        if place.exists() or place.is_symlink():
            os.rename(place, kept / part)
            sync_folder(place.parent)
        else:
            (kept / part).mkdir()  # none: the new one's is removed all the same if it fails
        sync_folder(kept)


def _move_back(data: Path, kept: Path) -> None:
    """The parts still in ``kept`` back in place (the new ones there removed); then ``kept``
    and the marker removed."""
    for part in PARTS:
        if not (kept / part).exists():
            continue  # moved back already, or never moved: the old one is in place
        place = _place(data, part)
        _remove(place)
        if next((kept / part).iterdir(), None) is None:
            (kept / part).rmdir()  # none before (or an empty one): none after
            continue
        place.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.rename(kept / part, place)
        sync_folder(place.parent)
    shutil.rmtree(kept)
    clear_marker(data)


def restore_kept(data: Path) -> Path | None:
    """Move back the database an interrupted ``--replace`` set aside (the marker names it);
    return its folder, or ``None`` when there was none. Copies no marker names (a run killed
    once it had removed the name, before the copy) are removed. Call it under the import's
    lock, with no server running on ``data``."""
    name = kept_copy(data)
    restored = None
    if name is not None and (data / name).is_dir() and not (data / name).is_symlink():
        restored = data / name
        _move_back(data, restored)
    for left in data.glob(KEPT_PREFIX + "*"):
        if left.name != name and left.is_dir() and not left.is_symlink():
            shutil.rmtree(left, ignore_errors=True)
    return restored


@contextlib.contextmanager
def keeping_the_old_database(
    data: Path, *, replace: bool, keep: bool, say: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Mark ``data`` incomplete (``replace``: how the run may overwrite, :func:`mark_incomplete`)
    for the block, which runs the importer. With ``keep`` the database there is moved aside
    first and moved back if the block raises: a :class:`StoreError` then says so in its
    message; any other exception (``KeyboardInterrupt``) is raised as it is, after ``say``
    has been told."""
    if not keep:
        mark_incomplete(data, replace=replace)
        yield
        return
    kept = Path(tempfile.mkdtemp(prefix=KEPT_PREFIX, dir=data))
    mark_incomplete(data, replace=replace, kept=kept.name)  # syncs data: the copy's name too
    try:
        _move_aside(data, kept)
        yield
    except BaseException as error:
        _move_back(data, kept)
        kept_message = f"the previous database of {data} was kept (moved back in place)"
        if isinstance(error, StoreError):
            raise StoreError(error.code, f"{error.message}; {kept_message}") from error
        if say is not None:
            say(f"the import did not finish: {kept_message}")
        raise
    mark_incomplete(data, replace=replace)  # the new database is whole: the copy is no longer named
    shutil.rmtree(kept, ignore_errors=True)
