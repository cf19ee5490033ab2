"""Bulk import: build a new Neo4j database from bundles with Neo4j's offline importer.

:func:`bulk_import` runs in three passes and two Neo4j steps:

1. **verify and spill** — the verification workers of a load (:mod:`pith_graph.loader.pool`)
   verify every bundle and write each accepted one, already encoded as CSV rows, to a spill
   partition chosen by its source id (:mod:`.spill`);
2. **decide** — each partition is decided alone under the update rules (newest per source
   version within a signer, precedence across signers; stale, duplicate and outranked
   bundles counted), and
   the winners' Paper and edge rows are copied into the CSV files (:mod:`.merge`);
3. **nodes** — Author, Category, Alias and Signer rows, partitioned by key, are written once
   (passes two and three each share their partitions out among as many processes as pass
   one had workers);
4. ``neo4j-admin database import full`` builds the database from the files
   (:mod:`.neo4j_admin`); under ``--replace`` the old one is kept aside until it is done
   (:mod:`.set_aside`);
5. the server is started once to create the constraints and indexes
   (``schema/neo4j-schema.cypher``) and wait until they are online, then stopped.

The result is the database a transactional load of the same bundles into an empty database
would build, which ``scripts/neo4j start`` serves and ``pith-graph load`` updates.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pith_graph.errors import StoreError, UsageError, printable
from pith_graph.loader.bulk.csvfiles import ARRAY_DELIMITER
from pith_graph.loader.bulk.merge import new_file, write_csv
from pith_graph.loader.bulk.neo4j_admin import (
    DATABASE,
    IMPORTER_OPTIONS,
    check_read_buffer,
    database_exists,
    local_server,
    read_buffer_option,
    read_buffer_size,
    run_importer,
    running_server,
)
from pith_graph.loader.bulk.recovery import (
    MARKER,
    check_data_folder,
    clear_marker,
    import_lock,
    interrupted,
    locked_work_folder,
)
from pith_graph.loader.bulk.set_aside import check_parts, keeping_the_old_database, restore_kept
from pith_graph.loader.bulk.spill import SpillHandler, no_room
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.parse import DEFAULT_INPUT_LIMITS, InputLimits
from pith_graph.loader.pipeline import LoadReport, Rejection, WorkerConfig, parts
from pith_graph.loader.pool import cyclic_gc_paused
from pith_graph.loader.sources import expand_paths
from pith_graph.loader.stores.base import schema_counts
from pith_graph.loader.stores.rules import Outcome
from pith_graph.loader.verify import DEFAULT_CLOCK_SKEW

__all__ = ["ImportReport", "bulk_import", "partitions_for"]

#: Bundles per spill partition the planner aims at (a partition is decided in memory).
PARTITION_BUNDLES = 20_000
MAX_PARTITIONS = 512


@dataclass
class ImportReport(LoadReport):
    """A :class:`~pith_graph.loader.pipeline.LoadReport` plus the time of each step."""

    steps: dict[str, float] = field(default_factory=dict)
    csv_folder: str | None = None
    #: Whether a database was built: not when no bundle was accepted (the target is then left as it was).
    built: bool = False

    def as_dict(self) -> dict[str, object]:
        found = super().as_dict()
        found["steps"] = {name: round(seconds, 3) for name, seconds in self.steps.items()}
        found["built"] = self.built
        return found


def partitions_for(files: list[str]) -> int:
    """Spill partitions for ``files``: about ``PARTITION_BUNDLES`` bundles each, from their
    sizes (1 kB per gzipped bundle, 8 kB per plain one: an overestimate, so partitions come
    out smaller rather than larger); 64 for stdin, whose size is unknown."""
    if "-" in files:
        return 64
    estimate = 0
    for path in files:
        try:
            size = os.path.getsize(path)
        except OSError:
            continue
        estimate += size // 1000 if path.endswith(".gz") else size // 8000
    return max(1, min(MAX_PARTITIONS, math.ceil(estimate / PARTITION_BUNDLES)))


def _check_target(data: Path, replace: bool, say: Callable[[str], None] | None) -> bool:
    """Refuse a running server or a database that holds nodes; return whether the importer
    must overwrite existing (empty, or replaced) store files. A database an interrupted
    ``--replace`` set aside is moved back first (``say`` told)."""
    if data.exists() and not data.is_dir():
        raise UsageError(f"--neo4j-data {data} is not a folder")
    busy = running_server(data) if data.exists() else None
    if busy is not None:
        raise UsageError(f"the Neo4j of {data} is in use ({busy}): stop it first (scripts/neo4j stop)")
    if data.is_dir() and (kept := restore_kept(data)) is not None and say is not None:
        say(
            f"an interrupted `import --replace` had set the previous database of {data} aside ({kept.name}): moved it back"
        )
    if not database_exists(data):
        return False
    was = interrupted(data)
    if replace and was != "new":
        check_parts(data)  # kept aside by renames (see bulk_import): refused now, not after the bundles
    if replace or was == "new":  # an interrupted import's database is overwritten as it would have been
        return True
    if was == "served":  # served as it was since: loads may have added to it
        raise UsageError(
            f"an import into {data} was interrupted ({data / MARKER}) and its database served since "
            "(NEO4J_INCOMPLETE=serve): it may hold what loads added: pass --replace to overwrite it"
        )
    if was is not None:  # the interrupted run overwrote (or was about to overwrite) a database with --replace
        raise UsageError(
            f"an import into {data} was interrupted ({data / MARKER}): its database may be partial "
            "or the one it replaced: pass --replace to import again"
        )
    from pith_graph.loader.stores.neo4j import Neo4jStore  # the driver loads only when needed

    with (
        local_server(data) as (uri, password),
        Neo4jStore.connect(uri, password=password, database=DATABASE) as store,
    ):
        held = store.every_node()  # an analyst's own nodes too (their :Note nodes were overwritten)
    if held:
        raise UsageError(
            f"the database in {data} holds {held} nodes: pass --replace to overwrite it, "
            "or load into it with `pith-graph load --backend neo4j`"
        )
    return True


def _check_key_ids(keyring: Keyring) -> None:
    """Refuse, before a bundle is verified, a pinned key id the importer could not write in a
    list (``keyIds``: the lists' delimiter, U+001F), rather than after verifying them all."""
    for key_id in keyring:
        if ARRAY_DELIMITER in key_id:
            raise UsageError(
                f"the key id {key_id!r} holds U+001F, which Neo4j's importer cannot write in a list "
                "(keyIds): load these bundles with pith-graph load --backend neo4j"
            )


def bulk_import(
    paths: Iterable[str],
    *,
    keyring: Keyring,
    data: Path | None,
    replace: bool = False,
    csv_only: Path | None = None,
    limits: InputLimits = DEFAULT_INPUT_LIMITS,
    workers: int | None = None,
    clock_skew: float = DEFAULT_CLOCK_SKEW,
    stdin: BinaryIO | None = None,
    work_folder: Path | None = None,
    importer_memory: str = "2G",
    on_progress: Callable[[int], None] | None = None,
    on_rejection: Callable[[Rejection], None] | None = None,
    exclude: Iterable[str | os.PathLike[str]] = (),
    on_notice: Callable[[str], None] | None = None,
) -> ImportReport:
    """Import ``paths`` into a new database in the Neo4j home ``data`` (see the module).
    Files of ``exclude`` (the trusted-keys files) are never read as bundles, as in
    :func:`~pith_graph.loader.pipeline.run`. ``on_notice`` hears of an old database moved
    back (:mod:`.set_aside`).

    With ``csv_only``, stop after writing the CSV files (and ``neo4j-admin.args``, the
    importer's options) into that folder. When no bundle is accepted (an empty input, every
    bundle rejected) no database is built and ``data`` is left as it was (``report.built``):
    a folder the import created for it is removed again. Raises
    :class:`~pith_graph.errors.UsageError` (a missing path, a running server, a database
    that holds nodes without ``replace``, a pinned key id holding U+001F) and :class:`~pith_graph.errors.StoreError` (the
    importer or the server failed).
    """
    started = time.perf_counter()
    _check_key_ids(keyring)
    files = expand_paths(paths, exclude=exclude)
    report = ImportReport()
    data = _importer_path(data, "--neo4j-data")
    csv_only = _importer_path(csv_only, "--csv-only", args_file=True)
    work_folder = _importer_path(work_folder, "the work folder")
    count = workers if workers is not None else (os.cpu_count() or 1)
    base = work_folder or (csv_only.parent if csv_only else data)
    assert base is not None
    made = _missing_folders(base)
    try:
        with contextlib.ExitStack() as stack:
            if data is not None and csv_only is None:
                check_data_folder(data)
                stack.enter_context(import_lock(data))  # one import into the folder at a time
            if csv_only is not None:
                _check_csv_folder(csv_only)
            overwrite = (
                _check_target(data, replace, on_notice) if data is not None and csv_only is None else False
            )
            base.mkdir(parents=True, exist_ok=True)
            if csv_only is not None and _claim_csv_folder(csv_only):
                made.insert(0, csv_only)  # removed again if it is left empty
            work = stack.enter_context(locked_work_folder(base))
            spill = work / "spill"
            spill.mkdir()
            partitions = max(count, partitions_for(files))  # at least one per process of pass two
            handler = SpillHandler(WorkerConfig(keyring, limits, {}, clock_skew), spill, partitions)
            step = time.perf_counter()
            with cyclic_gc_paused(), no_room(base, None if csv_only else data):
                for seen, results in parts(files, handler, limits, count, stdin):
                    for result in results:
                        report.add_rejection(result)
                        if on_rejection is not None:
                            on_rejection(result)
                    report.seen += seen
                    if on_progress is not None and seen:
                        on_progress(report.seen)
            report.steps["verify"] = time.perf_counter() - step
            step = time.perf_counter()
            with no_room(csv_only or base, None if csv_only else data):
                csv, outcomes = write_csv(spill, partitions, keyring.rank, csv_only or work / "csv", count)
            report.steps["csv"] = time.perf_counter() - step
            report.inserted = outcomes[Outcome.INSERTED]
            report.stale = outcomes[Outcome.STALE]
            report.duplicate = outcomes[Outcome.DUPLICATE]
            report.outranked = outcomes[Outcome.OUTRANKED]
            report.counts = schema_counts(csv.nodes.items(), csv.edges.items())
            buffer = read_buffer_size(csv.longest_row)  # before the importer may overwrite anything
            check_read_buffer(buffer, None if csv_only is not None else _importer_heap())
            args = [*csv.importer_args(), read_buffer_option(buffer)]
            if csv_only is not None:
                options = [*args, *IMPORTER_OPTIONS]
                with new_file(csv_only / "neo4j-admin.args") as out:
                    out.write(("\n".join(options) + "\n").encode())
                report.csv_folder = str(csv_only)
            elif report.inserted:
                assert data is not None
                if (busy := running_server(data)) is not None:  # started while the bundles were verified
                    raise UsageError(
                        f"the Neo4j of {data} started during the import ({busy}): stop it, import again"
                    )
                was = interrupted(data)
                held = overwrite and replace and was != "new"  # may the database hold nodes?
                # Kept till the new one is whole, unless an interrupted import into an empty one left it
                # ("new": partial); a served or replaced one may be the operator's data (since 0.9.12).
                keep = was != "new" and database_exists(data)
                with keeping_the_old_database(data, replace=held, keep=keep, before=was, say=on_notice):
                    _run_importer(data, args, overwrite and not keep, count, importer_memory, work, report)
                _build_schema(data, report)
                clear_marker(data)
                report.built = True
    finally:
        _remove_if_empty(made)
    report.seconds = time.perf_counter() - started
    return report


def _importer_path(path: Path | None, option: str, *, args_file: bool = False) -> Path | None:
    """``path`` absolute and normal (neo4j-admin refuses ``.`` and ``..`` in its paths: "not
    a normalized path"); :class:`UsageError` if it holds what the importer's arguments
    cannot: a comma (it separates the files of ``--nodes`` and ``--relationships``), and in
    an ``@args`` file (``args_file``) whitespace, quotes or a backslash, at which it splits
    and unquotes; a byte that is not UTF-8 (Java reads a path as UTF-8; the ``@args`` file,
    written as UTF-8, failed once the CSV files were written: exit 70); or if it is there
    but no folder (a file, a device)."""
    if path is None:
        return None
    resolved = path.resolve()
    try:
        str(resolved).encode()
    except UnicodeEncodeError as error:  # an undecodable byte of the name, as a lone surrogate
        raise UsageError(
            f"{option} {path}: neo4j-admin cannot take a path that is not UTF-8 "
            f"(the byte \\x{ord(error.object[error.start]) & 0xFF:02x}); choose another folder"
        ) from None
    refused = ",\"'\\" if args_file else ","
    bad = next((c for c in str(resolved) if c in refused or (args_file and c.isspace())), None)
    if bad is not None:
        raise UsageError(
            f"{option} {path}: neo4j-admin cannot take a path holding {bad!r}; choose another folder"
        )
    there = next(folder for folder in (resolved, *resolved.parents) if folder.exists())
    if not there.is_dir():  # before a bundle is read (a file there, or above it: exit 70)
        raise UsageError(
            f"{option} {path} is not a folder" + ("" if there == resolved else f": {there} is no folder")
        )
    return resolved


def _check_csv_folder(folder: Path) -> None:
    """A ``--csv-only`` folder is new or empty, and private: its files are written afresh
    (a second run into one appended its rows to the first's, which the importer then refused),
    and no one else may have planted a link where one is written (its target was truncated)."""
    check_data_folder(folder, "--csv-only")
    if folder.is_dir() and next(folder.iterdir(), None) is not None:
        raise UsageError(f"--csv-only {folder} is not empty: name a new or empty folder")


def _claim_csv_folder(folder: Path) -> bool:
    """Make the ``--csv-only`` folder (mode 755: the Docker importer reads it as another user)
    before a bundle is verified, or take the empty one the checks found; return whether it was
    made here. Refused: a folder made in one another user owns or may write in without the
    sticky bit (they could swap it), and one that is not the checked, empty folder of ours (made
    meanwhile by someone else: its files or links were written through, its rows imported)."""
    parent = folder.parent
    above = parent.stat()
    if above.st_uid not in (os.geteuid(), 0):
        raise UsageError(
            f"--csv-only {printable(str(folder))}: {printable(str(parent))} is owned by another user "
            f"(uid {above.st_uid}), who could replace the folder: name one in a folder of yours"
        )
    if above.st_mode & 0o022 and not above.st_mode & stat.S_ISVTX:
        raise UsageError(
            f"--csv-only {printable(str(folder))}: {printable(str(parent))} is writable by group or others "
            f"(mode {above.st_mode & 0o777:o}) without the sticky bit: name a folder elsewhere"
        )
    try:
        folder.mkdir(mode=0o755)
        made = True
    except FileExistsError:
        made = False
    if not stat.S_ISDIR(folder.lstat().st_mode):  # a link or a file put there since the checks
        raise UsageError(f"--csv-only {printable(str(folder))} is not a folder")
    check_data_folder(folder, "--csv-only")  # made by another user since the checks: refused
    if not made and next(folder.iterdir(), None) is not None:
        raise UsageError(f"--csv-only {printable(str(folder))} is not empty: name a new or empty folder")
    return made


def _missing_folders(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, deepest first."""
    missing: list[Path] = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove the folders (deepest first) the import created and left empty: nothing built."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (a database, the CSV files), or gone
            return


def _importer_heap() -> str:
    """The importer JVM's ``-Xmx``: ``NEO4J_IMPORT_HEAP`` (checked by the CLI, cli.options), else 1g."""
    return os.environ.get("NEO4J_IMPORT_HEAP") or "1g"


def _run_importer(
    data: Path, args: list[str], overwrite: bool, threads: int, memory: str, work: Path, report: ImportReport
) -> None:
    step = time.perf_counter()
    run_importer(
        data,
        args,
        overwrite=overwrite,
        threads=threads,
        heap=_importer_heap(),
        memory=memory,
        report_file=work / "import.report",
        log=data / "logs" / "import.log",
    )
    report.steps["neo4j-admin"] = time.perf_counter() - step


def _build_schema(data: Path, report: ImportReport) -> None:
    from pith_graph.loader.stores.neo4j import Neo4jStore

    step = time.perf_counter()
    created = False
    try:
        with (
            local_server(data) as (uri, password),
            Neo4jStore.connect(uri, password=password, database=DATABASE) as store,
        ):
            store.create_schema()  # its rows are the current shape: no upgrade pass
            created = True
            report.counts = store.counts()
    except StoreError as error:
        if created:
            raise
        clear_marker(data)  # the importer's work is complete, only the schema is missing: said so here
        raise StoreError(  # the importer's work is done and kept: say what is missing and how to add it
            error.code,
            f"{error.message}. The papers are imported into {data}, but without constraints and indexes: "
            "once `scripts/neo4j start` serves it, `pith-graph schema` creates them",
        ) from error
    report.steps["schema"] = time.perf_counter() - step
