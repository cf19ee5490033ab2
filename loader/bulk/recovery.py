"""What an interrupted bulk import leaves behind, and how the next one finds it.

Two traces, both under ``--neo4j-data``:

- the **work folder** (``.pith-graph-import-*``: the spill and the CSV files), removed at the
  end of every run that gets to its end. Each run holds a lock on ``lock`` in its own folder
  while it works; the next run removes every folder whose lock nobody holds (the run that
  made it was killed), so a crash leaks no disk space past the next run;
- the **marker** (``import.incomplete``), written before ``neo4j-admin`` first touches the
  database and removed once the constraints and indexes are online (or once the schema
  step's failure has been reported: the papers are in). While it exists the database may be
  partial (the importer or the schema step was killed), or still the old one (killed before
  the importer overwrote it). The next import overwrites it; without ``--replace`` only when
  the interrupted run did not need ``--replace`` either (the database it overwrote held no
  nodes), so that an interrupted ``--replace`` never turns into permission to overwrite;
- the **kept copy** (``.pith-graph-replaced-*``, since 0.9.12): the whole database the
  importer is about to replace, moved aside until the new one is complete and named in the
  marker (:mod:`.set_aside`), which the next import moves back first. A copy the marker
  does not name, unless empty, is never removed: the import refuses the folder instead.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pith_graph.errors import StoreError, StoreErrorCode, UsageError

__all__ = [
    "IMPORT_LOCK",
    "KEPT",
    "KEPT_PREFIX",
    "MARKER",
    "check_data_folder",
    "clear_marker",
    "import_lock",
    "interrupted",
    "kept_before",
    "kept_copy",
    "locked_work_folder",
    "mark_incomplete",
    "open_unfollowed",
    "private_file",
    "sweep",
    "sync_folder",
    "write_marker",
]

MARKER = "import.incomplete"
#: The marker's line naming the folder (:data:`KEPT_PREFIX`) an old database was moved aside into.
KEPT = "kept: "
KEPT_PREFIX = ".pith-graph-replaced-"
#: The marker's third line, exactly (split on ``\n`` alone), when it names a kept copy; read
#: the same way by ``scripts/neo4j`` (``sed -n 3p``, the same pattern): any other line is none.
_KEPT_LINE = re.compile(rb"kept: (\.pith-graph-replaced-[A-Za-z0-9_]+)")
#: The marker's fourth line: the first line of the marker there before the run that kept a
#: copy, written back when the copy is moved back (none: no marker before).
_BEFORE_LINE = re.compile(rb"before: (replace|served)")
#: Held (``flock``) by the import writing into the folder: one import at a time.
IMPORT_LOCK = "import.lock"
_PREFIX = ".pith-graph-import-"
_LOCK = "lock"
#: A work folder without a lock file is one a run is creating, or one from before locks.
_UNLOCKED_GRACE = 600.0


def check_data_folder(data: Path, option: str = "--neo4j-data") -> None:
    """Refuse, as ``scripts/neo4j`` does, a Neo4j home (or a ``--csv-only`` folder) that
    another user owns or that group or others may write in: anyone who may write there may
    plant a link where the import writes its files, log or marker, or swap the store the
    server will serve."""
    try:
        found = data.stat()
    except FileNotFoundError:
        return  # created by the import, for its owner alone
    except OSError as err:
        raise UsageError(f"{option} {data}: {err.strerror or err}") from err
    if found.st_uid != os.geteuid():
        raise UsageError(
            f"{option} {data} is owned by another user (uid {found.st_uid}), not by you (uid {os.geteuid()})"
        )
    if found.st_mode & 0o022:
        raise UsageError(
            f"{option} {data} is writable by group or others (mode {found.st_mode & 0o777:o}): chmod go-w {data}"
        )


@contextlib.contextmanager
def import_lock(data: Path) -> Iterator[None]:
    """Hold the folder's :data:`IMPORT_LOCK` while the block runs (removed after it);
    :class:`UsageError` at once if another import holds it (two importers into one store
    would each fail, or mix their files, and share one log)."""
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = data / IMPORT_LOCK
    handle = _lock_file(path, data)
    try:
        try:
            yield
        finally:
            path.unlink(missing_ok=True)  # still held: the folder is left as it was
    finally:
        os.close(handle)


def _lock_file(path: Path, data: Path) -> int:
    """A descriptor of ``path``, locked, and still the file there: one that the import
    holding it unlinked between our open and our lock is let go and ``path`` opened again
    (else two imports, each holding a lock on a different file, would both go on)."""
    while True:
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as err:
            raise UsageError(f"cannot lock {path}: {err.strerror or err}") from err
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            raise UsageError(f"another pith-graph import into {data} is running: let it end first") from None
        if _same_file(handle, path):
            return handle
        os.close(handle)  # unlinked by the import that held it: open what is there now


def _same_file(handle: int, path: Path) -> bool:
    try:
        there = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(handle)
    return (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)


def open_unfollowed(path: Path, flags: int, mode: int, shown: str) -> int:
    """``os.open(path, O_WRONLY | O_CREAT | flags | O_NOFOLLOW)`` with ``mode``: a link there
    is refused, never followed; any failure is :class:`StoreError` ``write_failed`` naming
    the file as ``shown``."""
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as err:
        link = " (a link: never followed)" if os.path.islink(path) else ""
        raise StoreError(
            StoreErrorCode.WRITE_FAILED, f"cannot write {shown}{link}: {err.strerror or err}"
        ) from err


@contextlib.contextmanager
def private_file(path: Path) -> Iterator[IO[str]]:
    """``path`` opened for writing, created for its owner alone; a link there is refused
    (:class:`StoreError` ``write_failed``, as any file that cannot be written), never followed."""
    with os.fdopen(open_unfollowed(path, os.O_TRUNC, 0o600, str(path)), "w") as out:
        yield out


def mark_incomplete(data: Path, replace: bool, kept: str | None = None, before: str | None = None) -> None:
    """Write the marker (durably, in place of the one there in one rename) before the database
    is touched; ``kept`` names the folder under ``data`` the old database is moved aside into
    (:mod:`.set_aside`), which the next import or server start reads back (:func:`kept_copy`),
    and ``before`` the first line of the marker there before (:func:`kept_before`)."""
    write_marker(data, "replace" if replace else "new", kept, before)


def write_marker(data: Path, first: str, kept: str | None = None, before: str | None = None) -> None:
    """The marker with ``first`` as its first line (``new``, ``replace``, ``served``), written
    whole beside it and renamed over it: a crash or a full disk leaves the one there before
    (never an empty one). A link there is refused, never followed; any failure is
    :class:`StoreError` ``write_failed``."""
    path = data / MARKER
    written = data / (MARKER + ".new")
    try:
        data.mkdir(parents=True, exist_ok=True)
        if os.path.islink(path):  # checked, not created: os.replace replaces a link, never follows it
            loop = os.strerror(errno.ELOOP)  # as opening it unfollowed says
            raise StoreError(
                StoreErrorCode.WRITE_FAILED, f"cannot write {path} (a link: never followed): {loop}"
            )
        with private_file(written) as out:
            out.write(first + "\n")
            out.write("an import into this folder did not finish: its database may be partial; ")
            out.write("run `pith-graph import` again (it overwrites the database)\n")
            if kept is not None:
                out.write(f"{KEPT}{kept}\n")
                if before is not None:
                    out.write(f"before: {before}\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(written, path)
        sync_folder(data)
    except OSError as err:
        with contextlib.suppress(OSError):
            written.unlink()
        raise StoreError(StoreErrorCode.WRITE_FAILED, f"cannot write {path}: {err.strerror or err}") from err


def sync_folder(folder: Path) -> None:
    """Make the names in ``folder`` (a file written, renamed or removed there) durable."""
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _marker_line(data: Path, index: int, pattern: re.Pattern[bytes]) -> str | None:
    try:
        lines = (data / MARKER).read_bytes().split(b"\n")
    except OSError:
        return None
    found = pattern.fullmatch(lines[index]) if len(lines) > index else None
    return found.group(1).decode() if found is not None else None


def kept_copy(data: Path) -> str | None:
    """The folder under ``data`` the marker says holds the database an interrupted
    ``--replace`` moved aside (since 0.9.12), or ``None``: no marker, or a third line that is
    not exactly ``kept: .pith-graph-replaced-`` and letters, digits or ``_`` (never a path out
    of ``data``; ``scripts/neo4j`` reads it by the same rule)."""
    return _marker_line(data, 2, _KEPT_LINE)


def kept_before(data: Path) -> str | None:
    """The first line (``replace``, ``served``) of the marker there before the run that kept
    the copy :func:`kept_copy` names, or ``None``: there was none."""
    return _marker_line(data, 3, _BEFORE_LINE)


def interrupted(data: Path) -> str | None:
    """``"new"`` or ``"replace"`` (how the interrupted run was allowed to overwrite),
    ``"served"`` (a server was started on its database since: ``NEO4J_INCOMPLETE=serve``, so
    it may hold what loads added), or ``None`` when no import was interrupted. An empty marker
    is none (since 0.9.12): only a crash before its content was written leaves one (earlier
    builds created or truncated it first), before anything was moved or overwritten; the
    import then refuses, without ``--replace``, a database that holds nodes, as always."""
    try:
        text = (data / MARKER).read_text(errors="replace")
    except OSError:
        return None
    first = text.split("\n", 1)[0].strip()
    return None if not text else first if first in ("new", "served") else "replace"


def clear_marker(data: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (data / MARKER).unlink()


def _abandoned(folder: Path) -> bool:
    try:
        handle: IO[bytes] = (folder / _LOCK).open("rb")
    except FileNotFoundError:
        try:
            return time.time() - folder.stat().st_mtime > _UNLOCKED_GRACE
        except OSError:
            return False
    except OSError:
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a running import's
        return True


def sweep(base: Path) -> list[Path]:
    """Remove the work folders of killed runs under ``base``; return them."""
    removed = []
    for folder in sorted(base.glob(_PREFIX + "*")):
        if folder.is_dir() and not folder.is_symlink() and _abandoned(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@contextlib.contextmanager
def locked_work_folder(base: Path) -> Iterator[Path]:
    """A new work folder under ``base``, locked while the block runs and removed after it;
    the folders of killed runs are removed first."""
    sweep(base)
    work = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=base))
    try:
        with (work / _LOCK).open("wb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
