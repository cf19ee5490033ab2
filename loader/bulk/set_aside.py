"""The database ``--replace`` overwrites, kept until the new one is complete (since 0.9.12).

``neo4j-admin database import full --overwrite-destination`` removes the old store before it
writes the new one, so an importer that then fails (out of memory, a full disk, killed) left
nothing. Instead the old store's folders, the two the importer would clear
(``data/databases/neo4j`` and its transaction logs, ``data/transactions/neo4j``), are
renamed into a private folder under the Neo4j home (``.pith-graph-replaced-*``: the same
file system, so no copy and no disk), named in the ``import.incomplete`` marker before
anything moves (with the first line of the marker there before, if any); the importer then
writes into an empty destination:

- the importer fails (an error, Ctrl-C): the partial new store is removed, the old one moved
  back, the marker written back as it was (or removed), then the emptied copy removed; the
  error says the previous database was kept;
- it succeeds: the copy is renamed ``.pith-graph-discard-*``, then the marker stops naming
  it (one rename), then it is removed;
- this process is killed: the next import finds the marker naming the copy and moves it back
  first (:func:`restore_kept`), then applies the usual rules. ``scripts/neo4j start`` refuses
  the folder meanwhile, even with ``NEO4J_INCOMPLETE=serve``.

A marker naming a copy that is not there (killed once the copy was renamed for removal, or
an older run's move back) names nothing: the database in place is whole, kept aside in turn
by the next ``--replace``. A ``.pith-graph-replaced-*`` folder the marker does not name that
holds anything (the marker removed by hand, or edited) is never removed: it may hold the only
copy of the old database, so the import refuses the folder (:class:`UsageError`) until the
operator moves it back or deletes it; empty ones and ``.pith-graph-discard-*`` folders are
removed. Before anything moves, a store folder, or a folder holding it, that is a link or on
another file system than the Neo4j home is refused: a rename never follows it nor crosses
file systems. A rename that fails all the same is a :class:`StoreError` ``move_failed``
saying where the old database is.

Each step is a rename, made durable (``fsync`` of the folders) before the next, and moving
back repeats safely after a crash midway: a part still in the copy replaces what is in its
place, a part no longer there was moved back already. A part the old database lacked is kept
as an empty folder, so that the new one's is removed all the same.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.interrupts import interrupts_held
from pith_graph.loader.bulk.neo4j_admin import DATABASE
from pith_graph.loader.bulk.recovery import (
    KEPT_PREFIX,
    MARKER,
    clear_marker,
    kept_before,
    kept_copy,
    mark_incomplete,
    sync_folder,
    write_marker,
)

__all__ = ["DISCARD_PREFIX", "PARTS", "check_parts", "keeping_the_old_database", "restore_kept"]

#: The folders under ``data/`` that ``--overwrite-destination`` clears, each kept as its first name.
PARTS = ("databases", "transactions")
#: A kept copy no longer needed (the new database is whole), renamed so before it is removed.
DISCARD_PREFIX = ".pith-graph-discard-"


def _place(data: Path, part: str) -> Path:
    return data / "data" / part / DATABASE


@contextlib.contextmanager
def _moving(what: str) -> Iterator[None]:
    """An ``OSError`` in the block as :class:`StoreError` ``move_failed``, saying ``what`` failed."""
    try:
        yield
    except OSError as err:
        raise StoreError(StoreErrorCode.MOVE_FAILED, f"cannot {what}: {err.strerror or err}") from err


def _rename(source: Path, target: Path) -> None:
    with _moving(f"rename {source} to {target}"):
        os.rename(source, target)
        sync_folder(source.parent)
        sync_folder(target.parent)


def _remove(path: Path) -> None:
    with _moving(f"remove {path}"):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _empty_folder(path: Path) -> bool:
    """Whether ``path`` is a folder (not a link) with nothing in it."""
    return path.is_dir() and not path.is_symlink() and next(path.iterdir(), None) is None


def _holds_nothing(folder: Path) -> bool:
    """Whether ``folder`` holds folders alone, down to the last (no file, no link)."""
    for root, folders, files in os.walk(folder):
        if files or any((Path(root) / name).is_symlink() for name in folders):
            return False
    return True


def check_parts(data: Path) -> None:
    """Refuse (:class:`UsageError`) a store folder, or a folder holding it under ``data``,
    that is a link or on another file system than ``data``: keeping it aside renames it
    within ``data``, which must neither follow a link nor cross file systems."""
    device = data.stat().st_dev
    for part in PARTS:
        for path in (data / "data", data / "data" / part, _place(data, part)):
            try:
                found = path.lstat()
            except FileNotFoundError:
                break
            except OSError as err:
                raise UsageError(f"cannot read {path}: {err.strerror or err}") from err
            if stat.S_ISLNK(found.st_mode) or found.st_dev != device:
                how = "is a link" if stat.S_ISLNK(found.st_mode) else f"is on another file system than {data}"
                raise UsageError(
                    f"{path} {how}: `import --replace` keeps the old database by renaming its folders "
                    f"within {data}, never through a link nor across file systems: put the folder itself "
                    f"there (or use a Neo4j home on that file system)"
                )


def _move_aside(data: Path, kept: Path) -> None:
    for part in PARTS:
        place = _place(data, part)
        if place.exists() or place.is_symlink():
            _rename(place, kept / part)
        else:
            with _moving(f"create {kept / part}"):
                (kept / part).mkdir()  # none: the new one's is removed all the same if it fails
                sync_folder(kept)


def _move_back(data: Path, kept: Path, before: str | None) -> None:
    """The parts still in ``kept`` back in place (the new ones there removed); then the marker
    as it was ``before`` (removed if none), then the emptied ``kept`` removed."""
    for part in PARTS:
        held = kept / part
        if not (held.exists() or held.is_symlink()):
            continue  # moved back already, or never moved: the old one is in place
        place = _place(data, part)
        _remove(place)
        if _empty_folder(held):
            with _moving(f"remove {held}"):
                held.rmdir()  # none before (or an empty one): none after
            continue
        with _moving(f"create {place.parent}"):
            place.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _rename(held, place)
    with _moving(f"write {data / MARKER}"):
        if before is None:
            clear_marker(data)
            sync_folder(data)
        else:
            write_marker(data, before)  # the marker stops naming the copy before it goes
    shutil.rmtree(kept, ignore_errors=True)  # empty; one left is swept by the next import


def _unnamed(data: Path, name: str | None) -> None:
    """Refuse a kept copy the marker does not name that holds anything (see the module)."""
    for left in sorted(data.glob(KEPT_PREFIX + "*")):
        if left.name != name and left.is_dir() and not left.is_symlink() and not _holds_nothing(left):
            raise UsageError(
                f"{left} holds a database an interrupted `import --replace` set aside, which "
                f"{data / MARKER} does not name (removed or edited): it may be the only copy of the "
                "previous database, so nothing is moved or removed. Which one to keep is yours to "
                "choose: the one in place may be a completed import or a partial one (the first line "
                f"of {data / MARKER}, if any, says which kind of run wrote it). To keep the set-aside "
                f"one, move its `databases` and `transactions` folders back by hand to "
                f"{data}/data/databases/neo4j and {data}/data/transactions/neo4j, in place of what is "
                "there; else delete it; then import again"
            )


def restore_kept(data: Path) -> Path | None:
    """Move back the database an interrupted ``--replace`` set aside (the marker names it);
    return its folder, or ``None`` when there was none. Refuses a copy no marker names that
    holds anything; removes discarded and empty ones. Call it under the import's lock, with
    no server running on ``data``."""
    name = kept_copy(data)
    _unnamed(data, name)
    restored = None
    if name is not None and (data / name).is_dir() and not (data / name).is_symlink():
        restored = data / name
        check_parts(data)
        try:
            with interrupts_held(signal.SIGTERM):
                _move_back(data, restored, kept_before(data))
        except StoreError as error:
            raise StoreError(
                error.code,
                f"{error.message}: the previous database of {data} is still kept in {restored} "
                "(or partly moved back); run `pith-graph import` into the folder again to move it back",
            ) from error
    for left in [*data.glob(DISCARD_PREFIX + "*"), *data.glob(KEPT_PREFIX + "*")]:
        ours = left.name != name and left.is_dir() and not left.is_symlink()
        if ours and (left.name.startswith(DISCARD_PREFIX) or _holds_nothing(left)):
            shutil.rmtree(left, ignore_errors=True)
    return restored


def _not_moved_back(error: BaseException, failed: StoreError, data: Path, kept: Path) -> StoreError:
    cause = error.message if isinstance(error, StoreError) else f"interrupted ({type(error).__name__})"
    held = [part for part in PARTS if (kept / part).exists() and not _empty_folder(kept / part)]
    if held:  # what is still in the copy, not all of it: some parts may be back already
        where = f"its {' and '.join(held)} folder{'s are' if len(held) > 1 else ' is'} still kept in {kept}"
        then = "run `pith-graph import` into the folder to move it back"
    else:
        where = f"it is back in place ({kept} holds none of it)"
        then = "the next `pith-graph import` into the folder clears what is left"
    return StoreError(
        StoreErrorCode.MOVE_FAILED,
        f"{cause}; moving the previous database of {data} back failed ({failed.message}): {where}: {then}",
    )


@contextlib.contextmanager
def keeping_the_old_database(
    data: Path,
    *,
    replace: bool,
    keep: bool,
    before: str | None = None,
    say: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Mark ``data`` incomplete (``replace``: how the run may overwrite, :func:`mark_incomplete`)
    for the block, which runs the importer. With ``keep`` the database there is moved aside
    first and moved back if the block raises, the marker then written back as ``before``
    (its first line before the run; ``None``: none): a :class:`StoreError` then says so in its
    message; any other exception (``KeyboardInterrupt``) is raised as it is, after ``say``
    has been told. Moving back that fails is a :class:`StoreError` ``move_failed`` keeping the
    block's error and saying where the old database is."""
    unchanged = f"nothing was moved: the database of {data} is as it was"
    if not keep:
        with _said(unchanged):
            mark_incomplete(data, replace=replace)
        yield
        return
    check_parts(data)
    with _said(unchanged):
        kept = Path(tempfile.mkdtemp(prefix=KEPT_PREFIX, dir=data))
        try:  # syncs data: the copy's name too
            mark_incomplete(data, replace=replace, kept=kept.name, before=before)
        except StoreError:
            with contextlib.suppress(StoreError), interrupts_held(signal.SIGTERM):
                _move_back(data, kept, before)  # nothing moved yet: the marker as it was, the copy removed
            if _holds_nothing(kept):  # (the disk still full: the marker there is the one before)
                shutil.rmtree(kept, ignore_errors=True)
            raise
    try:
        _move_aside(data, kept)
        yield
    except BaseException as error:
        # a second Ctrl-C or SIGTERM comes once the old database is back
        with interrupts_held(signal.SIGTERM):
            try:
                _move_back(data, kept, before)
            except StoreError as failed:
                raise _not_moved_back(error, failed, data, kept) from error
            kept_message = f"the previous database of {data} was kept (moved back in place)"
            if isinstance(error, StoreError):
                raise StoreError(error.code, f"{error.message}; {kept_message}") from error
            if say is not None:
                say(f"the import did not finish: {kept_message}")
        raise
    discard = data / (DISCARD_PREFIX + kept.name[len(KEPT_PREFIX) :])
    try:
        _rename(kept, discard)  # the marker then names nothing there: the copy is never moved back
    except StoreError as error:
        raise StoreError(
            error.code,
            f"{error.message}: the new database is in place, but {data / MARKER} still names the "
            f"previous one, kept in {kept}, which the next `pith-graph import` moves back: delete "
            f"{kept} to keep the new one",
        ) from error
    with _said(
        f"the new database is in place, without its constraints and indexes, and {data / MARKER} "
        f"still marks it incomplete; the previous one, in {discard}, is removed by the next "
        "`pith-graph import` into the folder (`--replace` builds the new one again)"
    ):
        mark_incomplete(data, replace=replace)
    shutil.rmtree(discard, ignore_errors=True)


@contextlib.contextmanager
def _said(state: str) -> Iterator[None]:
    """A :class:`StoreError` (or ``OSError``: a full disk) in the block raised with ``state``,
    what the folder holds, added to its message (``write_failed`` for an ``OSError``)."""
    try:
        yield
    except StoreError as error:
        raise StoreError(error.code, f"{error.message}: {state}") from error
    except OSError as err:
        raise StoreError(
            StoreErrorCode.WRITE_FAILED, f"cannot write {err.filename}: {err.strerror or err}: {state}"
        ) from err
