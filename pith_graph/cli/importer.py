"""``pith-graph import``: build a new Neo4j database with Neo4j's offline importer."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from pith_graph.cli import terminal
from pith_graph.cli.commands import print_rejection, progress, summary
from pith_graph.cli.options import EXIT_OK, EXIT_REJECTED, add_input_options, key_files, keyring_from
from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.loader.parse import InputLimits

__all__ = ["add_import_command", "cmd_import"]


def add_import_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``import`` to the CLI's subcommands."""
    command = commands.add_parser(
        "import",
        help="verify bundles and build a NEW Neo4j database from them with neo4j-admin (server stopped)",
    )
    add_input_options(command)
    command.add_argument(
        "--neo4j-data",
        metavar="DIR",
        default=os.environ.get("NEO4J_DATA") or None,
        help="the stopped Neo4j's data folder (scripts/neo4j's NEO4J_DATA; default: $NEO4J_DATA)",
    )
    command.add_argument(
        "--replace", action="store_true", help="overwrite a database that already holds nodes"
    )
    command.add_argument(
        "--csv-only",
        metavar="DIR",
        help="only write the importer's CSV files and options (neo4j-admin.args) into DIR",
    )
    command.add_argument(
        "--importer-memory",
        default="2G",
        metavar="SIZE",
        help="neo4j-admin's --max-off-heap-memory: bytes with k, m or g, or 1%%-99%% of the memory (default 2G)",
    )
    command.set_defaults(handler=cmd_import)


@contextmanager
def _nothing_imported(args: argparse.Namespace) -> Iterator[None]:
    """A worker that dies stops the import before anything is built: the error says so."""
    try:
        yield
    except StoreError as error:
        if error.code is not StoreErrorCode.WORKER_FAILED:
            raise
        where = args.csv_only or args.neo4j_data
        raise StoreError(
            error.code, f"{error.message}; nothing was imported ({where} left as it was)"
        ) from error


def cmd_import(args: argparse.Namespace) -> int:
    from pith_graph.loader.bulk import bulk_import  # only this command needs it

    out = terminal.console()
    err = terminal.console(stderr=True)
    keyring = keyring_from(args)
    if not args.csv_only and not args.neo4j_data:
        raise UsageError("--neo4j-data DIR is required (the stopped Neo4j's NEO4J_DATA), or --csv-only DIR")
    bar, on_progress = progress(err, "importing")
    with bar, _nothing_imported(args):  # SIGTERM: an interrupt (cli.main)
        report = bulk_import(
            args.paths,
            keyring=keyring,
            data=Path(args.neo4j_data) if args.neo4j_data else None,
            replace=args.replace,
            csv_only=Path(args.csv_only) if args.csv_only else None,
            limits=InputLimits(max_bytes=args.max_bytes),
            workers=args.workers,
            clock_skew=args.clock_skew,
            importer_memory=args.importer_memory,
            on_progress=on_progress,
            on_rejection=None if args.json else print_rejection(out, bar),
            exclude=key_files(args),
            on_notice=lambda message: err.print(f"pith-graph: {message}"),
        )
    if args.json:
        sys.stdout.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        summary(report, out, loaded=True)
        steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.steps.items())
        out.print(f"steps: {steps}")
        if not report.built and not report.csv_folder:
            out.print(
                f"nothing to import (no bundle was accepted): {args.neo4j_data} is left as it was",
            )
        if report.csv_folder:
            out.print(
                f"CSV files and neo4j-admin.args in {report.csv_folder}: "
                f"neo4j-admin database import full @{report.csv_folder}/neo4j-admin.args",
            )
    return EXIT_REJECTED if report.rejected else EXIT_OK
