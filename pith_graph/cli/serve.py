"""``pith-graph serve``: options become :class:`~pith_graph.api.settings.ServerSettings`
(over the ``PITH_API_*`` environment), then :func:`pith_graph.api.serve.serve` runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pith_graph.cli import terminal
from pith_graph.cli.options import (
    INTEGER,
    add_neo4j_options,
    add_verification_options,
    refuse_neo4j_options,
)
from pith_graph.errors import UsageError
from pith_graph.loader.parse import DEFAULT_MAX_BYTES
from pith_graph.loader.verify import DEFAULT_CLOCK_SKEW
from pith_graph.schema.graph import PAPER

if TYPE_CHECKING:
    from pith_graph.loader.pipeline import LoadReport

__all__ = ["add_serve_command", "cmd_serve", "loaded_line"]


def loaded_line(report: LoadReport) -> str:
    """What the memory backend's load did, in one line: the bundles verified, and the papers
    the graph then holds (fewer than the bundles accepted when later ones replaced earlier
    ones; more when a saved graph held some already)."""
    papers = report.counts.nodes.get(PAPER.label, 0) if report.counts is not None else report.accepted
    skipped = report.stale + report.duplicate + report.outranked
    return (
        f"loaded {report.verified} bundles in {report.seconds:.1f} s ({report.rejected} rejected; "
        f"{report.replaced} replaced an earlier one; {skipped} stale, duplicate or outranked): "
        f"the graph holds {papers} papers"
    )


def add_serve_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``serve`` to the CLI's subcommands."""
    serve = commands.add_parser(
        "serve",
        help="serve the graph over GraphQL (POST /graphql, GraphiQL on GET /graphql, /healthz)",
    )
    serve.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="memory backend: bundles to verify and load (default: the shipped samples)",
    )
    serve.add_argument(
        "--graph",
        metavar="FILE",
        default=None,
        help="memory backend: start from a graph saved by pith-graph load --snapshot or --save "
        "(trusted as it is: not verified again), then load any PATH on top",
    )
    serve.add_argument(
        "--backend",
        choices=("memory", "neo4j"),
        default=None,
        help="memory (default) or neo4j (serve what the database holds)",
    )
    serve.add_argument("--host", default=None, help="interface (default 127.0.0.1, PITH_API_HOST)")
    serve.add_argument("--port", type=INTEGER, default=None, help="port (default 8000, PITH_API_PORT)")
    add_verification_options(serve)  # the load verifies as pith-graph load does
    serve.add_argument(
        "--workers",
        type=INTEGER,
        default=None,
        help="serving processes, forked once the graph is loaded (default: one per core, PITH_API_WORKERS; at most 128)",
    )
    serve.add_argument(
        "--load-workers",
        type=INTEGER,
        default=None,
        help="memory backend: verification processes for the load (default: one per core, at most 128)",
    )
    add_neo4j_options(serve)
    serve.set_defaults(handler=cmd_serve)


def _refuse_load_options(args: argparse.Namespace, backend: str) -> None:
    """:class:`UsageError` for the options of serve's load given with the neo4j backend,
    which loads no bundles: ignored, they would have the user believe a limit was in force."""
    given = [
        option
        for option, value, default in (
            ("--load-workers", args.load_workers, None),
            ("--max-bytes", args.max_bytes, DEFAULT_MAX_BYTES),
            ("--clock-skew", args.clock_skew, DEFAULT_CLOCK_SKEW),
        )
        if value != default
    ]
    if given and backend == "neo4j":
        from pith_graph.api.settings import NEO4J_SERVES_ITS_DATABASE

        raise UsageError(f"{', '.join(given)}: for the memory backend only ({NEO4J_SERVES_ITS_DATABASE})")


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the server; returns the exit code once it has stopped."""
    from pith_graph.api.serve import serve  # the API's dependencies load only for serve
    from pith_graph.api.settings import ServerSettings

    err = terminal.console(stderr=True)
    settings = ServerSettings.from_env(
        host=args.host,
        port=args.port,
        backend=args.backend,
        paths=tuple(args.paths) or None,
        graph=args.graph,
        trusted_keys=tuple(args.trusted_keys) or None,
        registry_keys=tuple(args.registry_keys) or None,
        revoked_keys=tuple(args.revoked_keys) or None,
        workers=args.workers,
        load_workers=args.load_workers,
        max_bytes=args.max_bytes,
        clock_skew=args.clock_skew,
        neo4j_uri=args.uri,
        neo4j_user=args.user,
        neo4j_password=args.password,
        neo4j_password_file=args.password_file,
        neo4j_database=args.database,
    )
    refuse_neo4j_options(args, settings.backend)  # the backend may come from PITH_API_BACKEND
    _refuse_load_options(args, settings.backend)

    def loaded(report: LoadReport) -> None:
        for rejection in report.rejections:
            err.print(f"REJECTED {rejection}")
        if report.rejections_omitted:  # a load keeps the first MAX_KEPT_REJECTIONS
            err.print(f"and {report.rejections_omitted} more rejected, not listed")
        err.print(loaded_line(report))

    def opened(path: str, papers: int, seconds: float) -> None:
        err.print(f"opened {path}: {papers} papers in {seconds:.1f} s")

    def warmed(seconds: float, reused: bool) -> None:
        if reused:
            err.print(f"built the ranking and facet indexes in {seconds:.1f} s (the search index came saved)")
        else:
            err.print(f"built the search, ranking and facet indexes in {seconds:.1f} s")

    def listening(url: str) -> None:
        err.print(f"serving {settings.backend} on {url}")

    return serve(settings, on_loaded=loaded, on_opened=opened, on_warmed=warmed, on_listening=listening)
