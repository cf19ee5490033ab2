"""Subgraph export from Neo4j into networkx: nodes + edges per second.

Loads a generated corpus into a private Neo4j (scripts/neo4j), then times, in interleaved
rounds: the export of the whole graph, of the biggest category and of a prolific author with
coauthors (2 hops), against two baselines measured in the same run — what a script does
without export (verify and load the bundles into memory with ``load_graph``) and reading the
same graph back from a node-link file (``MemoryStore.open``).

    .venv/bin/python benchmarks/bench_export.py [--n 30000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
from bench_neo4j import RESULTS, PrivateServer, corpus, shards  # benchmarks/ is on sys.path

from pith_graph.loader.export import Selection, export_subgraph
from pith_graph.loader.facade import load_graph, resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore


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
        del G
        cases: dict[str, Callable[[], nx.MultiDiGraph]] = {
            "export: whole graph": lambda: export_subgraph(store),
            f"export: category {category}": lambda: export_subgraph(store, Selection(category=category)),
            "export: author, 2 hops": lambda: export_subgraph(store, Selection(author=author, hops=2)),
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
    out = {
        "n": args.n,
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
