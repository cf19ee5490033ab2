"""``pith-graph verify``, ``load`` and ``schema``: the loader's commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import orjson
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from pith_graph.cli import terminal
from pith_graph.cli.options import (
    EXIT_OK,
    EXIT_REJECTED,
    INTEGER,
    add_input_options,
    add_neo4j_options,
    check_save_destination,
    connect_neo4j,
    key_files,
    keyring_from,
    neo4j_option,
    open_store,
    snapshot_with_index,
)
from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.parse import InputLimits
from pith_graph.loader.pipeline import LoadReport, Rejection, run

__all__ = ["add_loader_commands", "print_rejection", "progress", "summary"]


def progress(
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


def print_rejection(console: Console, bar: object = None) -> Callable[[Rejection], None]:
    """One ``REJECTED`` line per rejection, written as is (a rejection is printable already).

    Not ``console.print``: rich renders each line it prints (about 100 µs), which was most of
    the time of a corpus rejected whole (a wrong keyring, say): see
    ``benchmarks/bench_rejections.py``. The file is looked up at every line, as
    ``console.print`` does: the real stdout, even while a progress bar proxies ``sys.stdout``.

    While ``bar`` (a :func:`progress` bar) is drawn on the terminal that ``console`` writes to
    too, the lines go through the bar's console, which prints them above the bar: written
    past it, each line was glued to the bar's, and a stale bar was left on the screen."""
    if isinstance(bar, Progress) and terminal.same_file(console, bar.console):
        live = bar.console

        def above(rejection: Rejection) -> None:
            live.print(f"REJECTED {rejection}")

        return above

    def emit(rejection: Rejection) -> None:
        console.file.write(f"REJECTED {rejection}\n")

    return emit


def summary(report: LoadReport, console: Console, *, loaded: bool) -> None:
    table = Table(title="pith-graph", show_header=False, box=None)
    table.add_row("bundles seen", str(report.seen))
    if loaded:
        table.add_row("accepted", f"{report.accepted} ({report.inserted} new, {report.replaced} replaced)")
        table.add_row("stale", str(report.stale))
        table.add_row("duplicate", str(report.duplicate))
        table.add_row("outranked", str(report.outranked))
        if report.displaced:
            table.add_row("displaced (removed)", str(report.displaced))
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
    return int(size)


def _stopped(error: StoreError, args: argparse.Namespace, *, load: bool) -> StoreError:
    """``error`` (a worker died) with what the stopped load leaves behind."""
    if load and args.backend == "neo4j":
        left = (
            "the batches written before it stay in Neo4j, each whole (one transaction): load again to finish"
        )
    elif load and (args.save or args.snapshot):
        saved = " and ".join(path for path in (args.save, args.snapshot) if path)
        left = f"nothing was saved ({saved} left as it was)"
    else:
        return error
    return StoreError(error.code, f"{error.message}; {left}")


def cmd_verify_or_load(args: argparse.Namespace, *, load: bool) -> int:
    out = terminal.console()
    err = terminal.console(stderr=True)
    keyring = keyring_from(args)
    save = getattr(args, "save", None) if load else None
    snapshot = getattr(args, "snapshot", None) if load else None
    if save:
        check_save_destination(save)
    if snapshot:
        check_save_destination(snapshot, option="--snapshot")
    store = open_store(args) if load else None
    try:
        if store is not None:
            store.ensure_schema()
        bar, on_progress = progress(err, "verifying" if not load else "loading")
        with bar:
            report = run(
                args.paths,
                keyring=keyring,
                store=store,
                limits=InputLimits(max_bytes=args.max_bytes),
                workers=args.workers,
                batch_size=_batch_size(args),
                clock_skew=args.clock_skew,
                on_progress=on_progress,
                on_rejection=None if args.json else print_rejection(out, bar),
                exclude=key_files(args),
            )
        if (save or snapshot) and store is not None:
            from pith_graph.loader.graphml import graph_file_chunks
            from pith_graph.loader.stores.files import writes_beside
            from pith_graph.loader.stores.memory import MemoryStore

            assert isinstance(store, MemoryStore)
            # the store's lookups (every bundle's digest, each source's papers, each signer's
            # keys: 13 MB at 100k bundles) go before the graph is written (nothing to close)
            graph, store = store.graph, None
            with writes_beside() as write:  # both written, then both renamed into place
                if save:
                    write(save, graph_file_chunks(graph, save))  # node-link JSON, or GraphML
                if snapshot:
                    write(snapshot, snapshot_with_index(graph, snapshot))
    except StoreError as error:
        if error.code is not StoreErrorCode.WORKER_FAILED:
            raise
        raise _stopped(error, args, load=load) from error
    finally:
        if store is not None:
            store.close()
    if args.json:
        sys.stdout.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        summary(report, out, loaded=load)
    return EXIT_REJECTED if report.rejected else EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    """Print the Neo4j constraints and indexes; apply them first unless ``--print``, and
    bring the authors' ``nameFolded`` up to date (since 0.9.8: :meth:`Neo4jStore.refold_authors`)."""
    from pith_graph.loader.stores.cypher_schema import render_schema
    from pith_graph.loader.stores.neo4j_connect import check_uri

    check_uri(neo4j_option(args, "uri"))  # with --print too: a URI no command could use is a usage error
    if not args.print_only:
        store = connect_neo4j(args)
        try:
            store.ensure_schema()
            store.refold_authors()
        finally:
            store.close()
    sys.stdout.write(render_schema())
    return EXIT_OK


def add_loader_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``verify``, ``load`` and ``schema`` to the CLI's subcommands."""
    verify = commands.add_parser("verify", help="verify bundles; exit 1 if any is rejected")
    add_input_options(verify)
    verify.set_defaults(handler=lambda a: cmd_verify_or_load(a, load=False))

    load = commands.add_parser("load", help="verify bundles and load them into a graph store")
    add_input_options(load)
    load.add_argument(
        "--backend", choices=("memory", "neo4j"), default="memory", help="where to load (default memory)"
    )
    load.add_argument(
        "--save", metavar="FILE", help="memory backend: write node-link JSON here (FILE.graphml: GraphML)"
    )
    load.add_argument(
        "--snapshot",
        metavar="FILE",
        help="memory backend: write a snapshot here (pith-graph serve --graph FILE starts from it)",
    )
    load.add_argument(
        "--batch-size",
        type=INTEGER,
        default=None,
        help="bundles per write batch (default: 1000 in memory, 5000 for Neo4j)",
    )
    add_neo4j_options(load)
    load.set_defaults(handler=lambda a: cmd_verify_or_load(a, load=True))

    schema = commands.add_parser("schema", help="apply the Neo4j constraints and indexes and print them")
    schema.add_argument("--backend", choices=("neo4j",), default="neo4j")
    schema.add_argument(
        "--print", dest="print_only", action="store_true", help="only print the Cypher, without connecting"
    )
    add_neo4j_options(schema)
    schema.set_defaults(handler=cmd_schema)
