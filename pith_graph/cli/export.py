"""``pith-graph export``: a subgraph of Neo4j into networkx node-link JSON."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from pith_graph.cli import terminal
from pith_graph.cli.options import EXIT_OK, INTEGER, add_neo4j_options, check_save_destination, connect_neo4j

__all__ = ["add_export_command", "cmd_export", "export_summary"]


def add_export_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``export`` to the CLI's subcommands."""
    export = commands.add_parser(
        "export",
        help="write a subgraph of Neo4j (a category, an author and coauthors, a date range) as node-link JSON",
    )
    export.add_argument("--backend", choices=("neo4j",), default="neo4j")
    export.add_argument("--category", metavar="CODE", help="papers listed in this category")
    export.add_argument("--author", metavar="NAME", help="papers of this author (case and spacing ignored)")
    export.add_argument(
        "--hops", type=INTEGER, default=1, help="with --author: 2 adds coauthors' papers, ..."
    )
    export.add_argument("--from", dest="submitted_from", metavar="DATE", help="submitted on or after")
    export.add_argument("--to", dest="submitted_to", metavar="DATE", help="submitted on or before")
    export.add_argument(
        "--latest-versions",
        action="store_true",
        help="only the newest version of each arXiv id (papers with isLatest)",
    )
    export.add_argument(
        "--save", metavar="FILE", required=True, help="node-link JSON to write (FILE.graphml: GraphML)"
    )
    export.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    add_neo4j_options(export)
    export.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from pith_graph.loader.export import Selection, export_subgraph
    from pith_graph.loader.graphml import graph_file_chunks
    from pith_graph.loader.stores.files import write_beside

    target = Path(args.save)
    check_save_destination(args.save)
    selection = Selection(
        *(args.category, args.author, args.hops, args.submitted_from, args.submitted_to, ("from", "to")),
        latest_versions=args.latest_versions,
    )
    started = time.perf_counter()
    with connect_neo4j(args) as store:
        G = export_subgraph(store, selection)  # checked as a saved graph is read
    write_beside(target, graph_file_chunks(G, target))  # node-link JSON, or GraphML
    seconds = time.perf_counter() - started
    if args.json:
        sys.stdout.write(orjson.dumps(export_summary(G, seconds)).decode() + "\n")
    else:
        terminal.console().print(
            f"wrote {G.number_of_nodes()} nodes and {G.number_of_edges()} edges to {target} in {seconds:.1f} s",
        )
    return EXIT_OK


def export_summary(G: Any, seconds: float) -> dict[str, object]:
    """``export --json``'s report: ``nodes`` and ``edges`` counted by label and type (every
    one of the schema, 0 included), as ``load``'s; the totals as ``totalNodes``/``totalEdges``
    (since 0.8.9; before, ``nodes`` and ``edges`` were the totals)."""
    from pith_graph.loader.stores.base import schema_counts
    from pith_graph.schema.graph import LABEL_ATTRIBUTE, TYPE_ATTRIBUTE

    nodes = Counter(str(label) for _, label in G.nodes(data=LABEL_ATTRIBUTE))
    edges = Counter(str(kind) for _, _, kind in G.edges(data=TYPE_ATTRIBUTE))
    counts = schema_counts(nodes.items(), edges.items())
    return {
        "nodes": counts.nodes,
        "edges": counts.edges,
        "totalNodes": G.number_of_nodes(),
        "totalEdges": G.number_of_edges(),
        "seconds": round(seconds, 3),
    }
