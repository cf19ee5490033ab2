"""Bulk import benchmark: ``pith-graph import`` end to end against the transactional load.

On the first 50k, 100k and 250k bundles of a generated corpus (shards of 10k), each in a
fresh process and into a fresh Neo4j data folder:

* **import** — verify + spill, decide + CSV, ``neo4j-admin database import full``, then the
  constraints and indexes on a private server start: bundles/s end to end, each step's
  seconds, peak RSS of the importing process and of its largest child (a worker or the
  importer's JVM);
* **transactional** — ``pith-graph load --backend neo4j`` of the same bundles into an empty
  database (a private server, batch 5000), at ``--load-n`` bundles, in the same run; also
  its rate over the second half of the writes (a fresh server's JIT compiler is busy for the
  first tens of thousands) and the CPU per bundle of the server by thread kind (query and
  commit, JIT, GC, other) and of the loader with its workers, over the whole load and over
  its second half, with the rate both cores would allow at the second half's costs.
  ``--gcs parallel,g1 --load-rounds 2`` repeats it under each of ``scripts/neo4j``'s garbage
  collectors (``NEO4J_GC``), ``--load-env NAME:VAR=VALUE`` under any other setting of
  ``scripts/neo4j``'s environment (another ``NEO4J_JAVA``, ``NEO4J_HEAP``, JVM flags in
  ``JAVA_TOOL_OPTIONS``), interleaved, and reports each one's rate against the first's;
  ``PITH_BENCH_WORKER_NICENESS=N`` in such a setting runs the loader's verification workers N
  below its CPU priority instead of ``pipeline.BACKGROUND_WORKER_NICENESS`` (0: at its own), and
  ``PITH_BENCH_BATCH_SIZE=N`` loads in batches of N bundles instead of 5000 (the default
  ``--batch-size`` of a Neo4j load), and ``PITH_BENCH_CYPHER_PREFIX='CYPHER option=value ...'``
  runs each statement of the load's transactions with those query options. Each load also
  reports its rate and the server's CPU by thread kind in each quarter of its writes, its
  per-batch timeline in the JSON, and the share of the load its writer thread spent in the
  store's writes with its own CPU there per bundle (the client's part of the critical path).

The rate must not fall with size (a bounded-memory design); 2.5M is projected from the
largest run plus the marginal cost per bundle between the two largest runs, and so is what
Neo4j's own steps (the importer and the index build) take alone: the floor of any import
built on them. Results: a table on stdout and JSON in ``benchmarks/results/`` (git-ignored).

Run:  .venv/bin/python benchmarks/bench_import.py [--corpus DIR] [--sizes 50000,100000,250000]
      [--load-n 100000] [--gcs parallel[,g1]] [--load-env NAME:VAR=VALUE]... [--load-rounds 1]
      [--shard-size 10000]
      (--sizes '': loads only; --load-n 0: imports only; every size a whole number of shards)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
#: Bundles per shard of the corpus (``write_corpus``'s ``shard_size``): ``--shard-size``,
#: which the children read from the environment.
SHARD = int(os.environ.get("PITH_BENCH_SHARD_SIZE") or 10_000)


def _listed(folder: Path) -> list[Path]:
    """The corpus's shards in order: ``.jsonl``, ``.jsonl.gz`` or folders of bundle files."""
    return sorted(folder.glob("bundles-*"))


def shards(folder: Path, n: int) -> list[str]:
    """The first ``n`` bundles of the corpus: whole shards (a size that is none was measured
    and labelled as the shards it began, all of them)."""
    if n % SHARD:
        sys.exit(f"{n} bundles is not a whole number of the corpus's shards of {SHARD} (--shard-size)")
    found = [str(p) for p in _listed(folder)]
    if n // SHARD > len(found):
        sys.exit(f"{folder} has {len(found)} shards of {SHARD} bundles, fewer than {n}")
    return found[: n // SHARD]


def check_shard_size(folder: Path) -> None:
    """Exit unless the corpus's first shard (as :func:`shards` lists them) holds ``SHARD``
    bundles: a wrong ``--shard-size`` is refused before anything runs."""
    found = _listed(folder)
    if not found:
        return
    if found[0].is_dir():
        held = sum(1 for path in found[0].iterdir() if path.is_file())
    else:
        with (gzip.open if found[0].suffix == ".gz" else open)(found[0], "rb") as shard:
            held = sum(1 for line in shard if line.strip())
    if held != SHARD:
        sys.exit(f"{found[0]} holds {held} bundles, not --shard-size {SHARD}")


def seen_all(report: Any, n: int) -> None:
    """Exit unless the run read ``n`` bundles (a shorter shard than ``--shard-size`` says)."""
    if report.seen != n:
        sys.exit(
            f"the corpus's first {n // SHARD} shards hold {report.seen} bundles, not {n} (--shard-size?)"
        )


def child_import(folder: str, n: int, data: str) -> None:
    """In a fresh process: one import; print JSON figures."""
    from pith_graph.loader.bulk import bulk_import
    from pith_graph.loader.facade import resolve_keyring

    keyring = resolve_keyring(Path(folder) / "keyring.json")
    started = time.perf_counter()
    report = bulk_import(shards(Path(folder), n), keyring=keyring, data=Path(data))
    seconds = time.perf_counter() - started
    seen_all(report, n)
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


#: Neo4j's JVM threads by what they do (Linux thread names, digits dropped).
_THREAD_KINDS = (
    ("query+commit", ("neo4j.BoltWorke",)),
    ("jit", ("C1 CompilerThre", "C2 CompilerThre")),
    ("gc", ("GC Thread", "G1 ", "VM Thread")),
)


def server_cpu(pid: int) -> dict[str, float]:
    """CPU seconds the process ``pid`` has used so far, by thread kind (from ``/proc``;
    empty where there is no ``/proc``)."""
    spent: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return spent
    for task in tasks:
        try:
            name = Path(f"/proc/{pid}/task/{task}/comm").read_text().strip()
            fields = Path(f"/proc/{pid}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        kind = next((k for k, prefixes in _THREAD_KINDS if name.startswith(prefixes)), "other")
        spent[kind] = spent.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return spent


def child_load(folder: str, n: int, data: str) -> None:
    """In a fresh process: a transactional load into a private server's empty database.

    Besides the rate: the rate over the second half of the writes (the server's JIT has
    warmed up by then), and the CPU per bundle of the server by thread kind and of this
    process with its workers."""
    from pith_graph.loader.bulk.neo4j_admin import local_server
    from pith_graph.loader.facade import resolve_keyring
    from pith_graph.loader.pipeline import run
    from pith_graph.loader.stores.neo4j import Neo4jStore

    keyring = resolve_keyring(Path(folder) / "keyring.json")
    with (
        local_server(Path(data), importing=False) as (uri, password),
        Neo4jStore.connect(uri, password=password) as store,
    ):
        store.ensure_schema()
        _prefix_statements(os.environ.get("PITH_BENCH_CYPHER_PREFIX", ""))
        pid = int((Path(data) / "neo4j.pid").read_text().strip())
        written: list[tuple[float, int, dict[str, float]]] = []  # (time, bundles, server CPU) per batch
        apply = store.apply

        writer = [0.0, 0.0]  # the writer thread's seconds in apply: wall, its own CPU

        def timed_apply(batch: Any, rank: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            applied = apply(batch, rank)
            writer[0] += time.perf_counter() - wall
            writer[1] += time.thread_time() - cpu
            done = (written[-1][1] if written else 0) + len(batch)
            written.append((time.perf_counter(), done, server_cpu(pid)))
            return applied

        store.apply = timed_apply  # type: ignore[method-assign]
        server_before, ours_before = server_cpu(pid), _own_cpu()
        started = time.perf_counter()
        niceness = os.environ.get("PITH_BENCH_WORKER_NICENESS")  # unset: the loader's default
        report = run(
            shards(Path(folder), n),
            keyring=keyring,
            store=store,
            batch_size=int(os.environ.get("PITH_BENCH_BATCH_SIZE") or 5000),
            worker_niceness=int(niceness) if niceness else None,
        )
        seconds = time.perf_counter() - started
        server = {k: v - server_before.get(k, 0.0) for k, v in server_cpu(pid).items()}
        ours = _own_cpu() - ours_before
    seen_all(report, n)
    half = next((row for row in written if row[1] >= report.seen / 2), None)
    second_half = None
    steady: dict[str, float] = {}
    if half and written[-1][0] > half[0]:
        later = report.seen - half[1]
        second_half = later / (written[-1][0] - half[0])
        end = written[-1][2]
        steady = {k: 1000 * (v - half[2].get(k, 0.0)) / later for k, v in sorted(end.items())}
    server_ms = {k: 1000 * v / report.seen for k, v in sorted(server.items())}
    ours_ms = 1000 * ours / report.seen
    # each batch as it committed: seconds since the load began, bundles written so far, and
    # the server's CPU seconds by thread kind since the load began (where the time went, and when)
    timeline = [
        [
            round(at - started, 3),
            done,
            {k: round(v - server_before.get(k, 0.0), 2) for k, v in sorted(cpu.items())},
        ]
        for at, done, cpu in written
    ]
    print(
        json.dumps(
            {
                "bundles": report.seen,
                "seconds": seconds,
                "bundles_per_s": report.seen / seconds,
                "second_half_bundles_per_s": second_half,
                "server_cpu_ms_per_bundle": server_ms,
                "server_cpu_s": {k: round(v, 1) for k, v in sorted(server.items())},
                "second_half_server_cpu_ms_per_bundle": steady,
                "our_cpu_ms_per_bundle": ours_ms,
                # the share of the load the writer spent in the store's apply, and its own CPU
                # there per bundle (what the server waits for while the client builds, encodes
                # and decodes a batch's statements)
                "writer_busy": writer[0] / seconds,
                "writer_cpu_ms_per_bundle": 1000 * writer[1] / report.seen,
                "timeline": timeline,
                # the rate all cores would allow, busy all the time, at the server's CPU per
                # bundle of the second half and the loader's average (its work per bundle does
                # not warm up; its workers' CPU is known only once they have exited). Apt at
                # tens of batches; with a few, the last writes run with no verification beside
                # them and the rate can exceed it
                "second_half_cpu_bound_bundles_per_s": (
                    (os.cpu_count() or 1) * 1000 / (sum(steady.values()) + ours_ms) if steady else None
                ),
            }
        )
    )


def _prefix_statements(prefix: str) -> None:
    """Run every statement of the load's transactions with Cypher's query options ``prefix``
    (``PITH_BENCH_CYPHER_PREFIX``, e.g. ``CYPHER replan=skip``): what a query option does to a
    fresh server's load, measured without changing the loader's statements."""
    if not prefix.strip():
        return
    import neo4j

    run = neo4j.ManagedTransaction.run

    def prefixed(self: neo4j.ManagedTransaction, query: Any, *args: Any, **kwargs: Any) -> Any:
        return run(self, f"{prefix.strip()} {query}" if isinstance(query, str) else query, *args, **kwargs)

    neo4j.ManagedTransaction.run = prefixed  # type: ignore[method-assign]


def by_quarter(load: dict[str, Any]) -> str:
    """The load's rate and the server's CPU per bundle by thread kind in each quarter of its
    writes (from its per-batch timeline): where a fresh server's first half goes."""
    timeline = load.get("timeline") or []
    marks: list[str] = []
    last: list[Any] = [0.0, 0, {}]
    for quarter in range(1, 5):
        row = next((r for r in timeline if r[1] >= load["bundles"] * quarter / 4), None)
        if row is None or row[1] <= last[1]:
            continue
        bundles = row[1] - last[1]
        cpu = " ".join(f"{k} {1000 * (v - last[2].get(k, 0.0)) / bundles:.2f}" for k, v in row[2].items())
        marks.append(f"Q{quarter} {bundles / (row[0] - last[0]):.0f}/s ({cpu})")
        last = row
    return "; ".join(marks)


def _own_cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def fresh(kind: str, folder: Path, n: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-"))
    load = os.getloadavg()[0]
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", kind, str(folder), str(n), str(data)],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, **(env or {})},
        )
    finally:
        shutil.rmtree(data, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(f"{kind} {n} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["loadavg_1m_before"] = round(load, 2)
    figures["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    global SHARD
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default=str(RESULTS / "corpus-250000"))
    parser.add_argument("--sizes", default="50000,100000,250000")
    parser.add_argument(
        "--load-n", type=int, default=100_000, help="bundles for the transactional load (0: imports only)"
    )
    parser.add_argument(
        "--gcs", default="parallel", help="NEO4J_GC values for the transactional loads (parallel, g1)"
    )
    parser.add_argument(
        "--load-env",
        action="append",
        default=[],
        metavar="NAME:VAR=VALUE[;VAR=VALUE]",
        help="another server setting for the transactional loads, by scripts/neo4j's environment "
        "(e.g. 'java25:NEO4J_JAVA=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java'); repeatable",
    )
    parser.add_argument("--load-rounds", type=int, default=1, help="transactional loads per setting")
    parser.add_argument(
        "--shard-size", type=int, default=SHARD, help="bundles per shard of the corpus (10000 as generated)"
    )
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.shard_size < 1:
        parser.error("--shard-size must be 1 or more")
    SHARD = args.shard_size
    os.environ["PITH_BENCH_SHARD_SIZE"] = str(SHARD)  # for the children
    if args.child:
        kind, folder, n, data = args.child
        (child_import if kind == "import" else child_load)(folder, int(n), data)
        return
    folder = Path(args.corpus)
    check_shard_size(folder)
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    for n in [*sizes, *([args.load_n] if args.load_n > 0 else [])]:
        shards(folder, n)  # every size checked before the first import: a bad last one wasted the others
    variants = {gc.strip(): {"NEO4J_GC": gc.strip()} for gc in args.gcs.split(",") if gc.strip()}
    for given in args.load_env:
        name, _, assignments = given.partition(":")
        pairs = [item.split("=", 1) for item in assignments.split(";") if item.strip()]
        if not name or not pairs or any(len(pair) != 2 or not pair[0].strip() for pair in pairs):
            parser.error(f"--load-env {given!r}: expected NAME:VAR=VALUE[;VAR=VALUE]")
        if name in variants:
            parser.error(f"--load-env {given!r}: the setting {name!r} is already named")
        variants[name] = {var.strip(): value for var, value in pairs}
    names = list(variants)
    if not names or args.load_rounds < 1:
        parser.error("the transactional loads need a setting (--gcs) and --load-rounds of 1 or more")
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
    loads: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for _ in range(args.load_rounds if args.load_n > 0 else 0):
        for name in names:  # interleaved: each round runs every setting once
            load = fresh("load", folder, args.load_n, variants[name])
            loads[name].append(load)
            half = load.get("second_half_bundles_per_s")
            cpu = ", ".join(f"{k} {v:.2f}" for k, v in load.get("server_cpu_ms_per_bundle", {}).items())
            steady = ", ".join(
                f"{k} {v:.2f}" for k, v in load.get("second_half_server_cpu_ms_per_bundle", {}).items()
            )
            bound = load.get("second_half_cpu_bound_bundles_per_s")
            print(
                f"transactional {args.load_n} ({name}): {load['bundles_per_s']:.0f} bundles/s "
                f"({load['seconds']:.1f} s; second half {half or 0:.0f}/s); Neo4j CPU ms/bundle: {cpu} "
                f"(JIT {load.get('server_cpu_s', {}).get('jit', 0):.0f} s in all); "
                f"ours {load['our_cpu_ms_per_bundle']:.2f} (writer {load.get('writer_cpu_ms_per_bundle', 0):.2f}, "
                f"busy {load.get('writer_busy', 0):.0%}); second half Neo4j: {steady}; "
                f"cores' bound {bound or 0:.0f}/s",
                flush=True,
            )
            print(f"  by quarter, rate (Neo4j CPU ms/bundle): {by_quarter(load)}", flush=True)
    rates = {name: [run["bundles_per_s"] for run in runs] for name, runs in loads.items()}
    results["transactional_by_setting"] = {
        name: {"env": variants[name], "runs": loads[name]} for name in names
    }
    if len(names) > 1:
        baseline = statistics.median(rates[names[0]])
        results["transactional_rate_vs_" + names[0]] = {
            name: round(statistics.median(rates[name]) / baseline, 3) for name in names[1:]
        }
        print(f"  transactional_rate_vs_{names[0]:<13} {results['transactional_rate_vs_' + names[0]]}")
    if not sizes:
        _write(results)
        return
    largest = imports[max(sizes)]

    # Neo4j's own steps alone (the importer, then the server building the indexes): the rate
    # and the 2.5M time the import would have if verification, spill and CSV cost nothing
    neo4j_only = {n: round(row["bundles"] / neo4j_seconds(row)) for n, row in imports.items()}
    variable = {  # per-bundle rate of the steps that scale with the input
        n: row["bundles"] / (row["steps"]["verify"] + row["steps"]["csv"]) for n, row in imports.items()
    }
    results.update(
        {
            "imports": imports,
            "rate_change_smallest_to_largest": round(
                largest["bundles_per_s"] / imports[min(sizes)]["bundles_per_s"] - 1, 3
            ),
            "verify_and_csv_rate_by_size": {n: round(rate) for n, rate in variable.items()},
            "projected_2_5M_minutes": projected_minutes(imports, lambda row: float(row["seconds"])),
            "neo4j_steps_alone_bundles_per_s": neo4j_only,
            "neo4j_steps_alone_2_5M_minutes": projected_minutes(imports, neo4j_seconds),
        }
    )
    if args.load_n > 0:
        load = loads[names[0]][0]
        same = imports.get(args.load_n, largest)
        results["transactional"] = load
        results["import_vs_transactional"] = round(same["bundles_per_s"] / load["bundles_per_s"], 2)
    for key in (
        "import_vs_transactional",
        "rate_change_smallest_to_largest",
        "verify_and_csv_rate_by_size",
        "projected_2_5M_minutes",
        "neo4j_steps_alone_bundles_per_s",
        "neo4j_steps_alone_2_5M_minutes",
    ):
        if key in results:
            print(f"  {key:<34} {results[key]}")
    _write(results)


def neo4j_seconds(row: dict[str, Any]) -> float:
    """The seconds of an import's Neo4j steps: the importer, then the schema on the server."""
    return float(row["steps"]["neo4j-admin"] + row["steps"]["schema"])


def projected_minutes(
    imports: dict[int, dict[str, Any]], seconds: Callable[[dict[str, Any]], float], total: int = 2_500_000
) -> float:
    """Minutes for ``total`` bundles: the largest import's ``seconds`` plus, for the bundles
    beyond it, the marginal cost per bundle between the two largest imports (the average
    cost, with a single import)."""
    ordered = sorted(imports)
    largest = imports[ordered[-1]]
    if len(ordered) > 1:
        before = imports[ordered[-2]]
        marginal = (seconds(largest) - seconds(before)) / (largest["bundles"] - before["bundles"])
    else:
        marginal = seconds(largest) / largest["bundles"]
    return round((seconds(largest) + marginal * (total - largest["bundles"])) / 60, 1)


def _write(results: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"import-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
