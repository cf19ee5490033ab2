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
  nodes), so that an interrupted ``--replace`` never turns into permission to overwrite.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["MARKER", "clear_marker", "interrupted", "locked_work_folder", "mark_incomplete", "sweep"]

MARKER = "import.incomplete"
_PREFIX = ".pith-graph-import-"
_LOCK = "lock"
#: A work folder without a lock file is one a run is creating, or one from before locks.
_UNLOCKED_GRACE = 600.0


def mark_incomplete(data: Path, replace: bool) -> None:
    """Write the marker (durably) before the database is touched."""
    data.mkdir(parents=True, exist_ok=True)
    path = data / MARKER
    with path.open("w") as out:
        out.write(("replace" if replace else "new") + "\n")
        out.write("an import into this folder did not finish: its database may be partial; ")
        out.write("run `pith-graph import` again (it overwrites the database)\n")
        out.flush()
        os.fsync(out.fileno())


def interrupted(data: Path) -> str | None:
    """``"new"`` or ``"replace"`` (how the interrupted run was allowed to overwrite), or
    ``None`` when no import was interrupted."""
    try:
        first = (data / MARKER).read_text(errors="replace").split("\n", 1)[0].strip()
    except OSError:
        return None
    return "new" if first == "new" else "replace"


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
