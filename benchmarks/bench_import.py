"""Bulk import benchmark: ``pith-graph import`` end to end against the transactional load.

On the first 50k, 100k and 250k bundles of a generated corpus (shards of 10k), each in a
fresh process and into a fresh Neo4j data folder:

* **import** — verify + spill, decide + CSV, ``neo4j-admin database import full``, then the
  constraints and indexes on a private server start: bundles/s end to end, each step's
  seconds, peak RSS of the importing process and of its largest child (a worker or the
  importer's JVM);
* **transactional** — ``pith-graph load --backend neo4j`` of the same bundles into an empty
  database (a private server, batch 5000), at ``--load-n`` bundles, in the same run.

The rate must not fall with size (a bounded-memory design); 2.5M is projected from the
largest run plus the marginal cost per bundle between the two largest runs. Results: a table on stdout and JSON in ``benchmarks/results/`` (git-ignored).

Run:  .venv/bin/python benchmarks/bench_import.py [--corpus DIR] [--sizes 50000,100000,250000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SHARD = 10_000


def shards(folder: Path, n: int) -> list[str]:
    found = sorted(str(p) for p in folder.glob("bundles-*"))
    needed = -(-n // SHARD)
    if needed > len(found):
        sys.exit(f"{folder} has {len(found) * SHARD} bundles, fewer than {n}")
    return found[:needed]


def child_import(folder: str, n: int, data: str) -> None:
    """In a fresh process: one import; print JSON figures."""
    from pith_graph.loader.bulk import bulk_import
    from pith_graph.loader.facade import resolve_keyring

    keyring = resolve_keyring(Path(folder) / "keyring.json")
    started = time.perf_counter()
    report = bulk_import(shards(Path(folder), n), keyring=keyring, data=Path(data))
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "bundles": report.seen,
                "accepted": report.accepted,
                "stale": report.stale,
                "rejected": report.rejected,
                "seconds": seconds,
                "bundles_per_s": report.seen / seconds,
                "steps": report.steps,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "largest_child_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                "nodes": report.counts.nodes if report.counts else None,
            }
        )
    )


def child_load(folder: str, n: int, data: str) -> None:
    """In a fresh process: a transactional load into a private server's empty database."""
    from pith_graph.loader.bulk.neo4j_admin import local_server
    from pith_graph.loader.facade import resolve_keyring
    from pith_graph.loader.pipeline import run
    from pith_graph.loader.stores.neo4j import Neo4jStore

    keyring = resolve_keyring(Path(folder) / "keyring.json")
    with local_server(Path(data)) as (uri, password), Neo4jStore.connect(uri, password=password) as store:
        store.ensure_schema()
        started = time.perf_counter()
        report = run(shards(Path(folder), n), keyring=keyring, store=store, batch_size=5000)
        seconds = time.perf_counter() - started
    print(json.dumps({"bundles": report.seen, "seconds": seconds, "bundles_per_s": report.seen / seconds}))


def fresh(kind: str, folder: Path, n: int) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-"))
    load = os.getloadavg()[0]
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", kind, str(folder), str(n), str(data)],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        shutil.rmtree(data, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(f"{kind} {n} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["loadavg_1m_before"] = round(load, 2)
    figures["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default=str(RESULTS / "corpus-250000"))
    parser.add_argument("--sizes", default="50000,100000,250000")
    parser.add_argument("--load-n", type=int, default=100_000, help="bundles for the transactional load")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, folder, n, data = args.child
        (child_import if kind == "import" else child_load)(folder, int(n), data)
        return
    folder = Path(args.corpus)
    sizes = [int(size) for size in args.sizes.split(",")]
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
    }
    imports: dict[int, dict[str, Any]] = {}
    for n in sizes:
        imports[n] = fresh("import", folder, n)
        row = imports[n]
        steps = ", ".join(f"{k} {v:.1f}s" for k, v in row["steps"].items())
        print(
            f"import {n:>7}: {row['bundles_per_s']:>6.0f} bundles/s ({row['seconds']:.1f} s: {steps}); "
            f"peak RSS {row['peak_rss_mb']:.0f} MB, largest child {row['largest_child_rss_mb']:.0f} MB; "
            f"load avg {row['loadavg_1m_before']}-{row['loadavg_1m_after']}",
            flush=True,
        )
    load = fresh("load", folder, args.load_n)
    print(
        f"transactional {args.load_n}: {load['bundles_per_s']:.0f} bundles/s ({load['seconds']:.1f} s)",
        flush=True,
    )
    same = imports.get(args.load_n)
    if same is None:
        same = imports[max(sizes)]
    largest = imports[max(sizes)]
    ordered = sorted(sizes)
    if len(ordered) > 1:  # the marginal cost per bundle between the two largest runs
        before = imports[ordered[-2]]
        marginal = (largest["seconds"] - before["seconds"]) / (largest["bundles"] - before["bundles"])
    else:
        marginal = largest["seconds"] / largest["bundles"]
    variable = {  # per-bundle rate of the steps that scale with the input
        n: row["bundles"] / (row["steps"]["verify"] + row["steps"]["csv"]) for n, row in imports.items()
    }
    results.update(
        {
            "imports": imports,
            "transactional": load,
            "import_vs_transactional": round(same["bundles_per_s"] / load["bundles_per_s"], 2),
            "rate_change_smallest_to_largest": round(
                largest["bundles_per_s"] / imports[min(sizes)]["bundles_per_s"] - 1, 3
            ),
            "verify_and_csv_rate_by_size": {n: round(rate) for n, rate in variable.items()},
            "projected_2_5M_minutes": round(
                (largest["seconds"] + marginal * (2_500_000 - largest["bundles"])) / 60, 1
            ),
        }
    )
    for key in (
        "import_vs_transactional",
        "rate_change_smallest_to_largest",
        "verify_and_csv_rate_by_size",
        "projected_2_5M_minutes",
    ):
        print(f"  {key:<34} {results[key]}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"import-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
