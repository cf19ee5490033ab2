"""The ``pith-graph`` command line. This package owns the terminal; the library never prints.

Exit codes: 0 success; 1 some bundle was rejected (the rest still loaded); 2 usage error
(bad option, missing path, unreadable keyring); 3 the graph store failed (unreachable,
wrong password, missing database, or a graph loaded in memory could not be saved:
``write_failed``) or a verification worker died (``worker_failed``); 130 interrupted.

Commands: ``verify``, ``load``, ``schema`` (:mod:`pith_graph.cli.commands`), ``import``
(:mod:`pith_graph.cli.importer`), ``prune`` (:mod:`pith_graph.cli.prune`), ``export``
(:mod:`pith_graph.cli.export`) and ``serve``
(:mod:`pith_graph.cli.serve`, which builds the API's settings and calls
:func:`pith_graph.api.serve.serve`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import version
from typing import NoReturn

from pith_graph.cli import terminal
from pith_graph.cli.commands import add_loader_commands
from pith_graph.cli.export import add_export_command
from pith_graph.cli.importer import add_import_command
from pith_graph.cli.options import EXIT_INTERRUPTED, EXIT_STORE, EXIT_USAGE, Parser, check_arguments
from pith_graph.cli.prune import add_prune_command
from pith_graph.cli.serve import add_serve_command
from pith_graph.errors import PithGraphError, StoreError, UsageError, printable

__all__ = ["build_parser", "entry", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = Parser(prog="pith-graph", description="Verify Pith open graph bundles and load them as a graph.")
    parser.add_argument("--version", action="version", version=f"pith-graph {version('pith-graph')}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_loader_commands(commands)
    add_import_command(commands)
    add_prune_command(commands)
    add_export_command(commands)
    add_serve_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = build_parser().parse_args(argv)
    err = terminal.console(stderr=True)
    saves = getattr(args, "save", None) or getattr(args, "snapshot", None)
    if args.command == "load" and saves and args.backend != "memory":
        err.print("pith-graph: error: --save and --snapshot work with --backend memory only")
        return EXIT_USAGE
    try:
        check_arguments(args)
        code: int = args.handler(args)
        return code
    except UsageError as error:
        err.print(f"pith-graph: error: {printable(str(error))}")
        return EXIT_USAGE
    except StoreError as error:
        err.print(f"pith-graph: store error: {printable(str(error))}")
        return EXIT_STORE
    except PithGraphError as error:
        err.print(f"pith-graph: error: {printable(str(error))}")
        return EXIT_STORE
    except KeyboardInterrupt:
        err.print("pith-graph: interrupted")
        return EXIT_INTERRUPTED


def entry() -> NoReturn:
    """Console-script entry point."""
    sys.exit(main())
