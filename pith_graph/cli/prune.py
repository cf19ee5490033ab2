"""``pith-graph prune``: remove from a store what revoked keys vouched for."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from pith_graph.cli import terminal
from pith_graph.cli.options import (
    EXIT_OK,
    add_neo4j_options,
    add_trust_options,
    check_save_destination,
    keyring_from,
    open_store,
    save_snapshot_with_index,
)
from pith_graph.errors import UsageError
from pith_graph.loader.prune import prune_revoked
from pith_graph.loader.stores.base import GraphStore

__all__ = ["add_prune_command", "cmd_prune"]


def add_prune_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``prune`` to the CLI's subcommands."""
    prune = commands.add_parser(
        "prune",
        help="remove the papers whose winning bundle depends on a key the keyring revokes",
    )
    add_trust_options(prune)
    prune.add_argument(
        "--backend", choices=("memory", "neo4j"), default="neo4j", help="what to prune (default neo4j)"
    )
    prune.add_argument(
        "--graph", metavar="FILE", help="memory backend: the saved graph to prune (node-link or snapshot)"
    )
    prune.add_argument(
        "--save",
        metavar="FILE",
        help="memory backend: where to write it, in its format (default: --graph; FILE.graphml: GraphML)",
    )
    prune.add_argument("--dry-run", action="store_true", help="report what would be removed, remove nothing")
    prune.add_argument("--json", action="store_true", help="print a JSON report on stdout")
    add_neo4j_options(prune)
    prune.set_defaults(handler=cmd_prune)


def cmd_prune(args: argparse.Namespace) -> int:
    keyring = keyring_from(args)
    if not keyring.revoked():
        raise UsageError(
            "no key is revoked: name the key with revoked or revoked_at in a --revoked-keys file "
            "(or in the --trusted-keys file that defines it)"
        )
    store: GraphStore
    if args.backend == "memory":
        if not args.graph:
            raise UsageError("--backend memory prunes a saved graph: pass --graph FILE")
        check_save_destination(args.save or args.graph, option="--save" if args.save else "--graph")
        from pith_graph.loader.stores.memory import MemoryStore

        store = MemoryStore.open(args.graph)
    else:
        store = open_store(args)
    try:
        report = prune_revoked(store, keyring, dry_run=args.dry_run)
        if args.backend == "memory" and not args.dry_run:
            from pith_graph.loader.graphml import is_graphml, save_graphml
            from pith_graph.loader.stores.snapshot import is_snapshot

            assert isinstance(store, MemoryStore)
            if args.save and is_graphml(args.save):  # (a --graph is never GraphML: refused)
                save_graphml(store.graph, args.save)
            elif is_snapshot(args.graph):  # keep its format
                save_snapshot_with_index(store.graph, args.save or args.graph)
            else:
                store.save(args.save or args.graph)
    finally:
        store.close()
    if args.json:
        sys.stdout.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        out = terminal.console()
        verb = "would remove" if report.dry_run else "removed"
        for pith in report.removed:
            out.print(f"{verb.upper().replace(' ', '-')} {pith}")
        out.print(
            f"revoked keys: {', '.join(report.revoked_keys)}; {verb} {len(report.removed)} papers",
        )
    return EXIT_OK
