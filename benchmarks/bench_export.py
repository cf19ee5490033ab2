"""Subgraph export from Neo4j into networkx: nodes + edges per second.

Loads a generated corpus into a private Neo4j (scripts/neo4j), then times, in interleaved
rounds: the export of the whole graph, of the biggest category, of a prolific author with
coauthors (2 hops), of the papers of one month and of the biggest category's that month,
against four baselines measured in the same run — what a script does without export (verify
and load the bundles into memory with ``load_graph``), reading the same graph back from a
node-link file (``MemoryStore.open``), and the two months' exports with 0.9.16's statements:
the month's wrote each date bound as ``$from IS NULL OR …`` and so read every paper, the
category's month read every paper of the category (each baseline's time ÷ its export's,
round by round: how many times faster reading a range of the ``submittedAt`` index is; it
grows with the graph).

    .venv/bin/python benchmarks/bench_export.py [--n 30000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import calendar
import json
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import networkx as nx
from bench_neo4j import RESULTS, PrivateServer, corpus, shards  # benchmarks/ is on sys.path

from pith_graph.loader.export import Selection, export_subgraph
from pith_graph.loader.facade import load_graph, resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores import cypher_export
from pith_graph.loader.stores.cypher import keyed
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore

#: 0.9.16's statement for papers within dates, whichever bounds are given: ``$from IS NULL OR``
#: hides the range from the planner, which reads every paper and filters them.
NULL_OR_BETWEEN = f"""
MATCH (p:Paper)
WHERE {keyed("p", "Paper")}
  AND ($from IS NULL OR p.submittedAt >= $from) AND ($before IS NULL OR p.submittedAt < $before)
  AND (NOT $latest OR p.isLatest IS NULL OR p.isLatest <> false)
RETURN p.pithNumber AS pith
ORDER BY pith
"""


@contextmanager
def _swapped(name: str, statements: Mapping[tuple[bool, bool], str]) -> Iterator[None]:
    """The export's statements ``cypher_export.NAME`` are ``statements`` while inside."""
    kept = getattr(cypher_export, name)  # AttributeError if renamed: no silent no-op
    setattr(cypher_export, name, statements)
    try:
        yield
    finally:
        setattr(cypher_export, name, kept)


def _month(G: nx.DiGraph) -> tuple[str, str]:
    """The calendar month of the median paper's submission: its first and last days."""
    stamps = sorted(t for _, t in G.nodes(data="submittedAt") if t is not None)
    month = stamps[len(stamps) // 2][:7]
    days = calendar.monthrange(int(month[:4]), int(month[5:]))[1]
    return f"{month}-01", f"{month}-{days:02d}"


MONTH = "export: one month (dates alone)"
NULL_OR_MONTH = "baseline: the month, 0.9.16's statement"
CATEGORY_MONTH = "export: the category's month"
FROM_CATEGORY_MONTH = "baseline: the category's month, 0.9.16's statement"


def _null_or_export(store: Neo4jStore, selection: Selection) -> nx.DiGraph:
    with _swapped(
        "EXPORT_PAPERS_BETWEEN", dict.fromkeys(cypher_export.EXPORT_PAPERS_BETWEEN, NULL_OR_BETWEEN)
    ):
        return export_subgraph(store, selection)


def _from_category_export(store: Neo4jStore, selection: Selection) -> nx.DiGraph:
    """0.9.16's export of a category's dates, which always started from the category (this
    one pays for the two counts that now choose the start, as the export does)."""
    statements = dict.fromkeys(
        cypher_export.EXPORT_PAPERS_OF_CATEGORY_BETWEEN, cypher_export.EXPORT_PAPERS_OF_CATEGORY
    )
    with _swapped("EXPORT_PAPERS_OF_CATEGORY_BETWEEN", statements):
        return export_subgraph(store, selection)


def _timed(action: Callable[[], nx.MultiDiGraph]) -> tuple[float, int]:
    started = time.perf_counter()
    G = action()
    return time.perf_counter() - started, G.number_of_nodes() + G.number_of_edges()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=30000, help="bundles in the generated corpus")
    parser.add_argument("--corpus", help="an existing corpus folder (shards + keyring.json)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    folder = corpus(args.n, args.corpus)
    keyring_path = folder / "keyring.json"
    inputs = [str(p) for p in shards(folder)]
    server = PrivateServer()
    try:
        store = Neo4jStore.connect(server.uri)
        store.ensure_schema()
        report = run(inputs, keyring=resolve_keyring(keyring_path), store=store, batch_size=5000)
        print(f"loaded {report.accepted} papers into Neo4j in {report.seconds:.0f} s", flush=True)
        G, _ = load_graph(inputs, trusted_keys=keyring_path)
        saved = RESULTS / "export-baseline.json"
        MemoryStore(G).save(saved)
        category = max(
            (n for n, label in G.nodes(data="label") if label == "Category"), key=G.in_degree
        ).split(":", 1)[1]
        author = G.nodes[
            max((n for n, label in G.nodes(data="label") if label == "Author"), key=G.out_degree)
        ]["name"]
        first, last = _month(G)
        month = Selection(submitted_from=first, submitted_to=last)
        category_month = Selection(category=category, submitted_from=first, submitted_to=last)
        del G
        cases: dict[str, Callable[[], nx.MultiDiGraph]] = {
            "export: whole graph": lambda: export_subgraph(store),
            f"export: category {category}": lambda: export_subgraph(store, Selection(category=category)),
            "export: author, 2 hops": lambda: export_subgraph(store, Selection(author=author, hops=2)),
            MONTH: lambda: export_subgraph(store, month),
            NULL_OR_MONTH: lambda: _null_or_export(store, month),
            CATEGORY_MONTH: lambda: export_subgraph(store, category_month),
            FROM_CATEGORY_MONTH: lambda: _from_category_export(store, category_month),
            "baseline: load_graph from bundles": lambda: load_graph(inputs, trusted_keys=keyring_path)[0],
            "baseline: MemoryStore.open(node-link)": lambda: MemoryStore.open(saved).graph,
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        sizes: dict[str, int] = {}
        for _ in range(args.rounds):
            for name, action in cases.items():  # interleaved: noise hits every case alike
                seconds, size = _timed(action)
                times[name].append(seconds)
                sizes[name] = size
        store.close()
    finally:
        server.stop()
    for new, old in ((MONTH, NULL_OR_MONTH), (CATEGORY_MONTH, FROM_CATEGORY_MONTH)):
        if not sizes[new] or sizes[new] != sizes[old]:  # like for like, or no ratio
            sys.exit(f"{new!r} and {old!r} differ: {sizes[new]} and {sizes[old]} items")

    rows: list[dict[str, Any]] = []
    whole = statistics.median(times["export: whole graph"])
    for name, found in times.items():
        rates = [sizes[name] / s for s in found]
        rows.append(
            {
                "case": name,
                "nodes+edges": sizes[name],
                "seconds median": round(statistics.median(found), 3),
                "items/s range": [round(min(rates)), round(max(rates))],
                "whole export ÷ this (time)": round(whole / statistics.median(found), 2),
            }
        )
        print(
            f"{name:42} {sizes[name]:>9} items  {statistics.median(found):7.2f} s  "
            f"{min(rates):>9,.0f}–{max(rates):,.0f} items/s",
            flush=True,
        )
    faster = {}
    for label, new, old in (
        ("the month: 0.9.16's statement", MONTH, NULL_OR_MONTH),
        ("the category's month: 0.9.16's statement", CATEGORY_MONTH, FROM_CATEGORY_MONTH),
    ):
        ratios = [before / now for before, now in zip(times[old], times[new], strict=True)]
        faster[f"{label} ÷ now, range"] = [round(min(ratios), 2), round(max(ratios), 2)]
        print(f"{label} ÷ now {min(ratios):.2f}–{max(ratios):.2f}×", flush=True)
    out = {
        "n": args.n,
        **faster,
        "rounds": args.rounds,
        "machine": platform.platform(),
        "load average": Path("/proc/loadavg").read_text().split()[:3],
        "peak RSS MB (this process)": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "rows": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "export.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
