"""What every ``pith-graph`` command shares: exit codes (defined in :mod:`pith_graph.cli`),
the parser, common options."""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

from pith_graph import numbers
from pith_graph.cli import EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED, EXIT_STORE, EXIT_USAGE
from pith_graph.errors import UsageError, quoted
from pith_graph.loader.keyfiles import operator_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.parse import DEFAULT_MAX_BYTES, MAX_BYTES_LIMIT
from pith_graph.loader.pool import MAX_WORKERS
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.trust import MAX_CLOCK_SKEW
from pith_graph.loader.verify import DEFAULT_CLOCK_SKEW

if TYPE_CHECKING:
    import networkx as nx

    from pith_graph.loader.stores.neo4j import Neo4jStore

T = TypeVar("T")

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REJECTED",
    "EXIT_STORE",
    "EXIT_USAGE",
    "MAX_BATCH_SIZE",
    "MAX_BYTES_LIMIT",
    "MAX_CLOCK_SKEW",
    "MAX_WORKERS",
    "Parser",
    "add_input_options",
    "add_neo4j_options",
    "add_verification_options",
    "check_arguments",
    "check_save_destination",
    "connect_neo4j",
    "key_files",
    "keyring_from",
    "neo4j_option",
    "open_store",
    "refuse_neo4j_options",
    "same_file",
    "save_snapshot_with_index",
    "snapshot_with_index",
]


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line with exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"pith-graph: error: {message}\n")


def _typed(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse ``type`` of ``parse`` (:mod:`pith_graph.numbers`): its message as the error."""

    def typed(text: str) -> T:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return typed


#: ``type=`` of the number options: ASCII digits only (``int()`` takes ``４`` and ``1_0``).
INTEGER, DECIMAL = _typed(numbers.integer), _typed(numbers.decimal)


def add_input_options(parser: argparse.ArgumentParser, *, paths_required: bool = True) -> None:
    """Bundle paths, the verification options, workers and ``--json``."""
    parser.add_argument(
        "paths",
        nargs="+" if paths_required else "*",
        metavar="PATH",
        help="bundle files, folders (recursive), JSON Lines, .gz, or - for stdin",
    )
    add_verification_options(parser)
    parser.add_argument(
        "--workers",
        type=INTEGER,
        default=None,
        help="verification processes (default: one per core, at most 128)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON report on stdout")


def add_verification_options(parser: argparse.ArgumentParser) -> None:
    """What decides whether a bundle verifies: the trust options, ``--max-bytes`` and
    ``--clock-skew`` (``verify``, ``load``, ``import`` and ``serve`` alike)."""
    add_trust_options(parser)
    parser.add_argument(
        "--max-bytes",
        type=INTEGER,
        default=DEFAULT_MAX_BYTES,
        help="largest bundle accepted, in bytes (default 1 MiB, at most 64 MiB)",
    )
    parser.add_argument(
        "--clock-skew",
        type=DECIMAL,
        default=DEFAULT_CLOCK_SKEW,
        metavar="SECONDS",
        help="how far ahead of this clock a bundle's times may lie (default 300, at most 100 years)",
    )


def add_trust_options(parser: argparse.ArgumentParser) -> None:
    """``--trusted-keys FILE``, ``--registry-keys FILE`` and ``--revoked-keys FILE`` (all repeatable)."""
    parser.add_argument(
        "--trusted-keys",
        metavar="FILE",
        action="append",
        default=[],
        help="JSON list of extra keys to trust (repeatable)",
    )
    parser.add_argument(
        "--registry-keys",
        metavar="FILE",
        action="append",
        default=[],
        help="JSON list of new keys of the registry's signer, pith.science, e.g. after a key rotation (repeatable)",
    )
    parser.add_argument(
        "--revoked-keys",
        metavar="FILE",
        action="append",
        default=[],
        help="JSON list of pinned keys to revoke, any source's, the registry's too: the operator's own revocations (repeatable)",
    )


def key_files(args: argparse.Namespace) -> list[str]:
    """The keyring files the options name, never read as bundles."""
    return [*args.registry_keys, *args.trusted_keys, *args.revoked_keys]


#: dest -> (environment variable, default) of the connection options: a default is filled in
#: only when the database is used (:func:`connect_neo4j`), so an option given can be told apart.
_NEO4J_DEFAULTS = {
    "uri": ("NEO4J_URI", "bolt://127.0.0.1:7687"),
    "user": ("NEO4J_USER", "neo4j"),
    "database": ("NEO4J_DATABASE", "neo4j"),
}
_NEO4J_OPTIONS = ("uri", "user", "password", "password_file", "database")


def add_neo4j_options(parser: argparse.ArgumentParser) -> None:
    """Connection options, defaulting to NEO4J_URI / NEO4J_USER / NEO4J_DATABASE; the password
    is found as :func:`~pith_graph.loader.stores.neo4j_auth.resolve_password` says."""
    parser.add_argument("--uri", help="Neo4j's URI (default NEO4J_URI, else bolt://127.0.0.1:7687)")
    parser.add_argument("--user", help="default NEO4J_USER, else neo4j")
    password = parser.add_mutually_exclusive_group()
    password.add_argument(
        "--password", help="visible to other users in process lists: prefer --password-file"
    )
    password.add_argument(
        "--password-file",
        metavar="FILE",
        help="file holding the password (mode 0600); default: NEO4J_PASSWORD, "
        "NEO4J_PASSWORD_FILE, then the local server's $NEO4J_DATA/password or ./.neo4j/password",
    )
    parser.add_argument("--database", help="default NEO4J_DATABASE, else neo4j")


def _as_given(value: float) -> str:
    """A number as typed, not rounded (3155760001, not 3.15576e+09; 0.5; nan)."""
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)


def refuse_neo4j_options(args: argparse.Namespace, backend: str) -> None:
    """:class:`UsageError` for connection options given to a command whose ``backend`` is
    memory: ignored, a ``--uri`` would have the user believe the database was written."""
    given = [
        f"--{dest.replace('_', '-')}" for dest in _NEO4J_OPTIONS if getattr(args, dest, None) is not None
    ]
    if given and backend == "memory":
        raise UsageError(
            f"{', '.join(given)}: for --backend neo4j only "
            "(the backend here is memory: pass --backend neo4j to use the database)"
        )


def neo4j_option(args: argparse.Namespace, dest: str) -> str:
    """The connection option ``dest`` (uri, user or database): as given, else its default."""
    value: str | None = getattr(args, dest)
    if value is not None:
        return value
    variable, default = _NEO4J_DEFAULTS[dest]
    return os.environ.get(variable, default)


def connect_neo4j(args: argparse.Namespace) -> Neo4jStore:
    """The Neo4j store the connection options name (the password found as documented)."""
    from pith_graph.loader.stores.neo4j import Neo4jStore  # imported lazily: memory needs no driver
    from pith_graph.loader.stores.neo4j_auth import resolve_password

    uri = neo4j_option(args, "uri")
    password = resolve_password(uri, password=args.password, password_file=args.password_file)
    return Neo4jStore.connect(uri, neo4j_option(args, "user"), password, neo4j_option(args, "database"))


def open_store(args: argparse.Namespace) -> GraphStore:
    """The store ``--backend`` names."""
    if args.backend == "memory":
        from pith_graph.loader.stores.memory import MemoryStore

        return MemoryStore()
    return connect_neo4j(args)


def keyring_from(args: argparse.Namespace) -> Keyring:
    """The built-in keyring plus every ``--registry-keys`` file, then every ``--trusted-keys``
    file, in the order given, then the revocations of every ``--revoked-keys`` file."""
    return operator_keyring(args.trusted_keys, args.registry_keys, args.revoked_keys)


def save_snapshot_with_index(graph: nx.DiGraph, path: str) -> None:
    """Write ``graph`` as a snapshot, with the search index ``serve --graph`` would
    otherwise build again at every start."""
    from pith_graph.loader.stores.files import write_beside

    write_beside(path, snapshot_with_index(graph, path))


def snapshot_with_index(graph: nx.DiGraph, path: str) -> Iterator[bytes]:
    """``graph`` as a snapshot to be written to ``path``, with its search index
    (:func:`save_snapshot_with_index`), in pieces
    (:func:`~pith_graph.loader.stores.snapshot_writer.encode_snapshot`: its body spooled beside ``path``)."""
    from pith_graph.api.reads.memory import MemoryReader
    from pith_graph.loader.stores.snapshot_writer import encode_snapshot

    return encode_snapshot(graph, MemoryReader(graph).saved_indexes(), beside=path)


def check_save_destination(path: str, *, option: str = "--save") -> None:
    """Refuse a ``--save`` (or ``--snapshot``) file that could not be written, before anything is loaded: its
    folder must exist and take a new file, and it must not be a folder, a read-only file, or
    anything but a regular file (the graph is written beside it and renamed over it: a device
    or FIFO would be replaced by a file)."""
    from pith_graph.loader.stores.files import partial_prefix, through_links

    target = Path(path)
    try:  # a name longer than the system takes (ENAMETOOLONG) fails the first look
        folder_named = target.is_dir()
    except OSError as error:
        raise UsageError(f"{option} {quoted(path)}: {error.strerror or error}") from error
    if folder_named:
        raise UsageError(f"{option} {path}: is a folder")
    if target.exists() and not target.is_file():  # renamed over, /dev/null would be a file
        raise UsageError(f"{option} {path}: not a regular file (a device, FIFO or socket)")
    real = through_links(target)  # a link is written through
    folder = real.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "no such folder"
        raise UsageError(f"{option} {path}: {what}: {folder}")
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(f"{option} {path}: the file is not writable")
    try:  # the one sure test, whoever runs this and however the folder is mounted
        with tempfile.NamedTemporaryFile(dir=folder, prefix=partial_prefix(real.name), suffix=".tmp"):
            pass
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot write in {folder}: {error.strerror}") from error


# -- option values a command refuses before it starts --------------------------------------------

#: The largest ``--batch-size``: 20 times the Neo4j default. A batch is held in memory (twice
#: over while the next one is collected) and written in one transaction.
MAX_BATCH_SIZE = 100_000

#: dest -> (option, lowest, highest, the rule as the error states it)
_RANGES: dict[str, tuple[str, float, float, str]] = {
    "max_bytes": ("--max-bytes", 1, MAX_BYTES_LIMIT, f"positive and at most {MAX_BYTES_LIMIT} (64 MiB)"),
    "workers": ("--workers", 1, MAX_WORKERS, f"from 1 to {MAX_WORKERS}"),
    "load_workers": ("--load-workers", 1, MAX_WORKERS, f"from 1 to {MAX_WORKERS}"),
    "clock_skew": (
        "--clock-skew",
        0,
        MAX_CLOCK_SKEW,
        f"a number of seconds from 0 to {MAX_CLOCK_SKEW} (100 years)",
    ),
    "batch_size": ("--batch-size", 1, MAX_BATCH_SIZE, f"positive and at most {MAX_BATCH_SIZE}"),
}
#: dest -> option, for the options that name a file or folder ("" would be the current folder,
#: or no file at all).
_PATHS = {
    "paths": "PATH",
    "save": "--save",
    "snapshot": "--snapshot",
    "graph": "--graph",
    "csv_only": "--csv-only",
    "neo4j_data": "--neo4j-data",
    "password_file": "--password-file",
}
#: What neo4j-admin's ``--max-off-heap-memory`` takes: bytes, with an optional k, m or g, or a
#: share of the memory from 1% to 99% (checked against neo4j-admin 5.26).
_IMPORTER_MEMORY = re.compile(r"(?:([0-9]+)([kmg]?)|([0-9]+)%)", re.IGNORECASE)  # ASCII digits only


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse, before anything starts, a number out of its range, an empty path, a
    ``--save`` and ``--snapshot`` that name one file, and an ``--importer-memory`` that
    neo4j-admin would refuse at the end of the run. Raises :class:`UsageError`."""
    for dest, (option, lowest, highest, rule) in _RANGES.items():
        value = getattr(args, dest, None)
        if value is not None and not lowest <= value <= highest:  # NaN is refused too
            shown = value if isinstance(value, int) else _as_given(value)
            raise UsageError(f"{option} must be {rule}, not {shown}")
    if getattr(args, "backend", None) is not None:
        refuse_neo4j_options(args, args.backend)
    for dest, option in _PATHS.items():
        value = getattr(args, dest, None)
        if value == "" or (isinstance(value, list) and "" in value):
            raise UsageError(f"{option} '': an empty path names no file (use . for this folder)")
    save, snapshot = getattr(args, "save", None), getattr(args, "snapshot", None)
    _refuse_graphml(args)
    if save and snapshot and same_file(save, snapshot):
        raise UsageError(f"--save {save} and --snapshot {snapshot} name the same file")
    for option, target in (("--save", save), ("--snapshot", snapshot)):
        if target:
            _refuse_overwriting_inputs(args, option, target)
    memory = getattr(args, "importer_memory", None)
    if memory is not None and not _importer_memory_ok(memory):
        raise UsageError(
            "--importer-memory must be a size in bytes, with k, m or g (2G, 512m, 1000000), "
            f"or a share of the memory from 1% to 99%, not {memory!r}"
        )
    heap = os.environ.get("NEO4J_IMPORT_HEAP") or None
    if memory is not None and heap is not None and not getattr(args, "csv_only", None) and not _heap_ok(heap):
        raise UsageError(  # else found by the importer's JVM once every bundle was verified (exit 3)
            f"NEO4J_IMPORT_HEAP (the importer's JVM heap, -Xmx) must be a size in bytes, with k, m, g or t "
            f"(1g, 512m), not {quoted(heap)}"
        )


def _refuse_graphml(args: argparse.Namespace) -> None:
    """A GraphML ``--graph`` (or ``--snapshot``) is a :class:`UsageError`: it is written, never read back."""
    graph, snapshot = getattr(args, "graph", None), getattr(args, "snapshot", None)
    if graph or snapshot:  # (only then the loader's imports: a command without them starts sooner)
        from pith_graph.loader.graphml import refuse_graphml

        if graph:
            refuse_graphml(graph, "--graph")
        if snapshot:
            refuse_graphml(snapshot, "--snapshot", "name it in --save to write GraphML")


def _heap_ok(text: str) -> bool:
    from pith_graph.loader.bulk.neo4j_admin import heap_bytes

    size = heap_bytes(text)
    return size is not None and 1 <= size < 1 << 63


def _refuse_overwriting_inputs(args: argparse.Namespace, option: str, target: str) -> None:
    """:class:`UsageError` for a file to write that is one the command reads: a bundle file,
    a keys file or the password file (however spelled: links, hard links), or a file a later
    load of an input folder would read as a bundle. Written over, each was lost (exit 0)."""
    from pith_graph.loader.sources import BUNDLE_SUFFIXES

    inputs = [("PATH", path) for path in getattr(args, "paths", None) or () if path != "-"]
    for dest in ("trusted_keys", "registry_keys", "revoked_keys", "password_file"):
        value = getattr(args, dest, None) or []
        inputs += [
            (f"--{dest.replace('_', '-')}", path) for path in ([value] if isinstance(value, str) else value)
        ]
    spellings = {os.path.abspath(target), os.path.realpath(target)}  # the link and what it names
    for what, path in inputs:
        if same_file(target, path):
            raise UsageError(
                f"{option} {quoted(target)} names a file this command reads ({what} {quoted(path)}): "
                "it would be overwritten"
            )
        if what != "PATH" or not os.path.isdir(path):
            continue
        for folder in {os.path.abspath(path), os.path.realpath(path)}:
            for name in spellings:
                if (
                    name.endswith(BUNDLE_SUFFIXES)
                    and os.path.commonpath([folder, name]) == folder
                    and os.path.isdir(os.path.dirname(name))  # else no file can be written there
                ):
                    raise UsageError(
                        f"{option} {quoted(target)} is in the input folder {quoted(path)}: "
                        "a later load of the folder would read it as a bundle"
                    )


def _importer_memory_ok(text: str) -> bool:
    found = _IMPORTER_MEMORY.fullmatch(text.strip())
    if found is None:
        return False
    if found[3] is not None:
        return 1 <= int(found[3]) <= 99
    return 1 <= int(found[1]) << (10 * " kmg".index(found[2].lower() or " ")) < 1 << 63


def same_file(one: str, other: str) -> bool:
    """Whether two paths name one file: one path spelled two ways (``g.json``,
    ``./g.json``, ``/abs/g.json``), a symbolic link and its target, or hard links."""
    try:
        if os.path.samefile(one, other):
            return True
    except OSError:  # one of them does not exist (yet)
        pass
    return os.path.realpath(one) == os.path.realpath(other)
