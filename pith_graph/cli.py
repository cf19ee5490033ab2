"""The ``pith-graph`` command line. This module owns the terminal; the library never prints.

Exit codes: 0 success; 1 some bundle was rejected (the rest still loaded); 2 usage error
(bad option, missing path, unreadable keyring); 3 the graph store failed (unreachable,
wrong password, missing database); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, NoReturn

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from pith_graph.loader.facade import resolve_keyring
from pith_graph.errors import PithGraphError, StoreError, UsageError
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.parse import DEFAULT_MAX_BYTES, Limits
from pith_graph.loader.pipeline import LoadReport, Rejection, run
from pith_graph.loader.stores.base import GraphStore

__all__ = ["main"]

EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_STORE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line with exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"pith-graph: error: {message}\n")


def _add_input_options(parser: argparse.ArgumentParser, *, paths_required: bool = True) -> None:
    parser.add_argument(
        "paths",
        nargs="+" if paths_required else "*",
        metavar="PATH",
        help="bundle files, folders (recursive), JSON Lines, .gz, or - for stdin",
    )
    parser.add_argument("--trusted-keys", metavar="FILE", action="append", default=[],
                        help="JSON list of extra keys to trust (repeatable)")
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                        help="largest bundle accepted, in bytes (default 1 MiB)")
    parser.add_argument("--workers", type=int, default=None,
                        help="verification processes (default: one per core)")
    parser.add_argument("--json", action="store_true", help="print a JSON report on stdout")


def add_neo4j_options(parser: argparse.ArgumentParser) -> None:
    """Connection options, defaulting to NEO4J_URI / NEO4J_USER / NEO4J_DATABASE; the password
    is found as :func:`~pith_graph.loader.stores.neo4j_auth.resolve_password` says."""
    parser.add_argument("--uri", default=os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"))
    parser.add_argument("--user", default=os.environ.get("NEO4J_USER", "neo4j"))
    password = parser.add_mutually_exclusive_group()
    password.add_argument("--password", help="visible to other users in process lists: prefer --password-file")
    password.add_argument("--password-file", metavar="FILE",
                          help="file holding the password (mode 0600); default: NEO4J_PASSWORD, "
                               "NEO4J_PASSWORD_FILE, then the local server's $NEO4J_DATA/password or ./.neo4j/password")
    parser.add_argument("--database", default=os.environ.get("NEO4J_DATABASE", "neo4j"))


def open_store(args: argparse.Namespace) -> GraphStore:
    """The store ``--backend`` names."""
    if args.backend == "memory":
        from pith_graph.loader.stores.memory import MemoryStore

        return MemoryStore()
    from pith_graph.loader.stores.neo4j import Neo4jStore  # imported lazily: memory needs no driver
    from pith_graph.loader.stores.neo4j_auth import resolve_password

    password = resolve_password(args.uri, password=args.password, password_file=args.password_file)
    return Neo4jStore.connect(args.uri, args.user, password, args.database)


def _keyring(args: argparse.Namespace) -> Keyring:
    keyring = resolve_keyring()
    for path in args.trusted_keys:
        keyring = keyring.with_keys(resolve_keyring(path).values())
    return keyring


def _progress(
    console: Console, label: str
) -> tuple[AbstractContextManager[Any], Callable[[int], None] | None]:
    if not console.is_terminal:
        return nullcontext(), None
    progress = Progress(
        SpinnerColumn(),
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("bundles"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = progress.add_task(label, total=None)
    return progress, lambda seen: progress.update(task, completed=seen)


def _print_rejection(console: Console) -> Callable[[Rejection], None]:
    def emit(rejection: Rejection) -> None:
        console.print(f"REJECTED {rejection}", markup=False, highlight=False, soft_wrap=True)

    return emit


def _summary(report: LoadReport, console: Console, *, loaded: bool) -> None:
    table = Table(title="pith-graph", show_header=False, box=None)
    table.add_row("bundles seen", str(report.seen))
    if loaded:
        table.add_row("accepted", f"{report.accepted} ({report.inserted} new, {report.replaced} replaced)")
        table.add_row("stale", str(report.stale))
        table.add_row("duplicate", str(report.duplicate))
    else:
        table.add_row("verified", str(report.verified))
    table.add_row("rejected", str(report.rejected))
    if report.counts is not None:
        for label, count in report.counts.nodes.items():
            table.add_row(f"nodes :{label}", str(count))
        for kind, count in report.counts.edges.items():
            table.add_row(f"edges [:{kind}]", str(count))
    table.add_row("seconds", f"{report.seconds:.2f}")
    console.print(table)


#: Write batch sizes by backend: 5000 was fastest in benchmarks/bench_neo4j.py's sweep.
DEFAULT_BATCH_SIZES = {"memory": 1000, "neo4j": 5000}


def _batch_size(args: argparse.Namespace) -> int:
    size = getattr(args, "batch_size", None)
    if size is None:
        return DEFAULT_BATCH_SIZES.get(getattr(args, "backend", "memory"), 1000)
    if size <= 0:
        raise UsageError("--batch-size must be positive")
    return int(size)


def _cmd_verify_or_load(args: argparse.Namespace, *, load: bool) -> int:
    out = Console(soft_wrap=True)
    err = Console(stderr=True, soft_wrap=True)
    keyring = _keyring(args)
    if args.max_bytes <= 0:
        raise UsageError("--max-bytes must be positive")
    store = open_store(args) if load else None
    try:
        if store is not None:
            store.ensure_schema()
        progress, on_progress = _progress(err, "verifying" if not load else "loading")
        with progress:
            report = run(
                args.paths,
                keyring=keyring,
                store=store,
                limits=Limits(max_bytes=args.max_bytes),
                workers=args.workers,
                batch_size=_batch_size(args),
                on_progress=on_progress,
                on_rejection=None if args.json else _print_rejection(out),
            )
        if load and getattr(args, "save", None):
            from pith_graph.loader.stores.memory import MemoryStore

            assert isinstance(store, MemoryStore)
            store.save(args.save)
    finally:
        if store is not None:
            store.close()
    if args.json:
        sys.stdout.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        _summary(report, out, loaded=load)
    return EXIT_REJECTED if report.rejected else EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    """Print the Neo4j constraints and indexes; apply them first unless ``--print``."""
    from pith_graph.loader.stores.cypher import render_schema

    if not args.print_only:
        store = open_store(args)
        try:
            store.ensure_schema()
        finally:
            store.close()
    sys.stdout.write(render_schema())
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = _Parser(prog="pith-graph", description="Verify Pith open graph bundles and load them as a graph.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    verify = commands.add_parser("verify", help="verify bundles; exit 1 if any is rejected")
    _add_input_options(verify)
    verify.set_defaults(handler=lambda a: _cmd_verify_or_load(a, load=False))

    load = commands.add_parser("load", help="verify bundles and load them into a graph store")
    _add_input_options(load)
    load.add_argument("--backend", choices=("memory", "neo4j"), default="memory")
    load.add_argument("--save", metavar="FILE", help="memory backend: write node-link JSON here")
    load.add_argument("--batch-size", type=int, default=None,
                      help="bundles per write batch (default: 1000 in memory, 5000 for Neo4j)")
    add_neo4j_options(load)
    load.set_defaults(handler=lambda a: _cmd_verify_or_load(a, load=True))

    schema = commands.add_parser("schema", help="apply the Neo4j constraints and indexes and print them")
    schema.add_argument("--backend", choices=("neo4j",), default="neo4j")
    schema.add_argument("--print", dest="print_only", action="store_true",
                        help="only print the Cypher, without connecting")
    add_neo4j_options(schema)
    schema.set_defaults(handler=_cmd_schema)

    from pith_graph.api.serve import add_serve_command  # the API is optional for the loader commands

    add_serve_command(commands, add_neo4j_options)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = build_parser().parse_args(argv)
    err = Console(stderr=True, soft_wrap=True)
    if getattr(args, "save", None) and getattr(args, "backend", "memory") != "memory":
        err.print("pith-graph: error: --save works with --backend memory only", markup=False)
        return EXIT_USAGE
    try:
        code: int = args.handler(args)
        return code
    except UsageError as error:
        err.print(f"pith-graph: error: {error}", markup=False, highlight=False)
        return EXIT_USAGE
    except StoreError as error:
        err.print(f"pith-graph: store error: {error}", markup=False, highlight=False)
        return EXIT_STORE
    except PithGraphError as error:
        err.print(f"pith-graph: error: {error}", markup=False, highlight=False)
        return EXIT_STORE
    except KeyboardInterrupt:
        err.print("pith-graph: interrupted", markup=False)
        return EXIT_INTERRUPTED


def entry() -> NoReturn:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    entry()

