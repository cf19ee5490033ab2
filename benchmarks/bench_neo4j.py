"""Neo4j load benchmark: batch-size sweep, full first load, re-load, and a naive baseline.

All figures come from one run on one server, through the real pipeline (read, parse,
verify on one worker per core, build rows, write):

* **sweep** — first load of the first ``--sweep-n`` bundles into an empty database at each
  ``--batch-sizes`` value;
* **first load** — all ``--n`` bundles into an empty database at the best batch size;
* **re-load** — the same corpus again: every bundle is recognised by its stored
  ``bundleSha256`` after parsing and hashing (no signature check, no write);
* **naive** — on the first ``--naive-n`` bundles, a loader that writes each bundle in its own
  transaction with one statement per node and per edge, against ours on the same bundles.

The server is a private one started with ``scripts/neo4j`` (temporary data folder, free
port) and stopped at the end, unless ``--uri`` names one — whose database is CLEARED.
Results: a table on stdout and JSON in ``benchmarks/results/`` (git-ignored).

Run:  .venv/bin/python benchmarks/bench_neo4j.py [--n 100000] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import neo4j
from naive_statements import NAIVE_STATEMENTS  # benchmarks/ is the script's folder, on sys.path

from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import LoadReport, run
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores.base import AppliedBatch, GraphCounts, GraphExport, Unchanged
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.rules import Outcome, decide
from pith_graph.testing.corpus import cached_corpus

ROOT = Path(__file__).resolve().parent.parent

RESULTS = ROOT / "benchmarks" / "results"


# -- inputs ----------------------------------------------------------------------------------


def corpus(n: int, given: str | None) -> Path:
    """A corpus folder (shards + keyring.json): ``--corpus``, or generated once and cached."""
    if given:
        return Path(given)
    return cached_corpus(RESULTS / f"corpus-{n}", n, seed=7, say=lambda line: print(line, flush=True))


def shards(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith("bundles-"))


def _lines(folder: Path) -> Iterator[bytes]:
    for shard in shards(folder):
        opener = gzip.open if shard.name.endswith(".gz") else open
        with opener(shard, "rb") as handle:
            yield from (line for line in handle if line.strip())


def subset(folder: Path, n: int, scratch: Path) -> Path:
    """The first ``n`` bundles of the corpus as one JSON Lines file."""
    path = scratch / f"first-{n}.jsonl"
    if not path.exists():
        with path.open("wb") as out:
            for index, line in enumerate(_lines(folder)):
                if index == n:
                    break
                out.write(line if line.endswith(b"\n") else line + b"\n")
    return path


# -- the server ------------------------------------------------------------------------------


def summary(values: list[float]) -> dict[str, float]:
    """The median, least and greatest of ``values`` (a benchmark's repeated runs)."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PrivateServer:
    """A Neo4j started with scripts/neo4j on a free port and a temporary data folder."""

    def __init__(self) -> None:
        self.data = Path(tempfile.mkdtemp(prefix="bench-neo4j-"))
        port, http_port = free_port(), free_port()
        # A throw-away server: no authentication (NEO4J_AUTH=none), as before it was the default.
        self.env = {
            **os.environ,
            "NEO4J_DATA": str(self.data),
            "NEO4J_BOLT_PORT": str(port),
            "NEO4J_HTTP_PORT": str(http_port),
            "NEO4J_AUTH": "none",
        }
        self.env.pop("NEO4J_PASSWORD", None)
        done = self._script("start")
        if done.returncode != 0:
            sys.exit(f"scripts/neo4j start failed:\n{done.stderr}")
        self.uri = done.stdout.strip().splitlines()[-1]

    def _script(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ROOT / "scripts" / "neo4j"), command],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )

    def stop(self) -> None:
        self._script("stop")
        shutil.rmtree(self.data, ignore_errors=True)


# -- the naive baseline ----------------------------------------------------------------------


class NaiveNeo4jStore:
    """Each bundle its own transaction, one statement per node and per edge.

    What a loader without batching does. It keeps the newest-wins rule (a read per paper) but
    skips precedence across signers (a corpus has one), orphan removal and ``Signer.keyIds``
    upkeep, so it does strictly less work than :class:`Neo4jStore`.
    """

    def __init__(self, store: Neo4jStore) -> None:
        self.store = store

    def ensure_schema(self) -> None:
        self.store.ensure_schema()

    def known_bundle_digests(self) -> set[str]:
        return self.store.known_bundle_digests()

    def known_bundles(self) -> dict[str, str]:
        return self.store.known_bundles()

    def apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int]) -> AppliedBatch:
        with self.store.driver.session(database=self.store.database) as session:
            return AppliedBatch([session.execute_write(self._one, rows) for rows in batch])

    def remove_papers(self, pith_numbers: Sequence[str], unchanged: Unchanged | None = None) -> list[str]:
        return self.store.remove_papers(pith_numbers, unchanged)

    def papers_signed_with(self, key_ids: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        return self.store.papers_signed_with(key_ids)

    @staticmethod
    def _one(tx: neo4j.ManagedTransaction, rows: PaperRows) -> Outcome:
        statements = NAIVE_STATEMENTS
        pith = rows.pith_number
        record = tx.run(statements["stored"], pithNumber=pith).single()
        stored = (record["builtAt"], record["bundleSha256"]) if record else None
        outcome = decide(stored, rows)
        if outcome not in (Outcome.INSERTED, Outcome.REPLACED):
            return outcome

        def run_one(statement: str, **params: Any) -> None:
            tx.run(statements[statement], params).consume()

        run_one("detach", pithNumber=pith)
        run_one("paper", pithNumber=pith, props=rows.paper.properties())
        for author in rows.authors:
            run_one("author", **author.properties())
            run_one("authored", nameKey=author.name_key, pithNumber=pith)
        for category in rows.categories:
            run_one("category", **category.node_properties())
            run_one("in_category", code=category.code, primary=category.primary, pithNumber=pith)
        for alias in rows.aliases:
            run_one("alias", **alias.properties())
            run_one("identifies", **alias.properties(), pithNumber=pith)
        for signer in rows.signers:
            run_one("signer", signerId=signer.signer_id, signerType=signer.signer_type)
            run_one("signed", signerId=signer.signer_id, **signer.edge_properties(), pithNumber=pith)
        return outcome

    def counts(self) -> GraphCounts:
        return self.store.counts()

    def export(self) -> GraphExport:
        return self.store.export()

    def close(self) -> None:
        """The wrapped store is closed by its owner."""


# -- measuring -------------------------------------------------------------------------------


def timed_load(
    paths: Sequence[Path], keyring: Keyring, store: Any, *, batch_size: int, workers: int
) -> tuple[LoadReport, float]:
    started = time.perf_counter()
    report = run(
        [str(p) for p in paths], keyring=keyring, store=store, workers=workers, batch_size=batch_size
    )
    return report, time.perf_counter() - started


def row(name: str, report: LoadReport, seconds: float, **extra: Any) -> dict[str, Any]:
    found = {
        "name": name,
        "bundles": report.seen,
        "seconds": round(seconds, 2),
        "bundles_per_s": round(report.seen / seconds, 1),
        "inserted": report.inserted,
        "replaced": report.replaced,
        "stale": report.stale,
        "duplicate": report.duplicate,
        "rejected": report.rejected,
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }
    found.update(extra)
    print(
        f"  {name:<34} {report.seen:>7} bundles {seconds:>8.1f} s {report.seen / seconds:>8.0f} bundles/s"
        f"   (load avg {found['loadavg_1m']})",
        flush=True,
    )
    return found


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="bundles in the full corpus")
    parser.add_argument("--corpus", help="an existing `python -m pith_graph.testing.corpus` folder")
    parser.add_argument("--uri", help="use this server instead of a private one (its database is CLEARED)")
    parser.add_argument("--user", default=os.environ.get("NEO4J_USER", "neo4j"))
    parser.add_argument("--password", default=os.environ.get("NEO4J_PASSWORD"))
    parser.add_argument("--database", default=os.environ.get("NEO4J_DATABASE", "neo4j"))
    parser.add_argument("--batch-sizes", default="500,2000,5000", help="comma-separated sweep")
    parser.add_argument("--sweep-n", type=int, default=10_000, help="bundles per sweep point")
    parser.add_argument("--naive-n", type=int, default=2_000, help="bundles for the naive baseline")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)

    folder = corpus(args.n, args.corpus)
    keyring = resolve_keyring(folder / "keyring.json")
    full = shards(folder)
    scratch = Path(tempfile.mkdtemp(prefix="bench-neo4j-input-"))
    server = None if args.uri else PrivateServer()
    uri = args.uri or server.uri  # type: ignore[union-attr]
    store = Neo4jStore.connect(uri, args.user, args.password if args.uri else None, args.database)
    rows: list[dict[str, Any]] = []
    info: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "corpus": str(folder),
        "n": args.n,
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "neo4j_driver": neo4j.__version__,
        "neo4j_rust_ext": importlib.util.find_spec("neo4j._rust") is not None,
        "server": store.driver.get_server_info().agent,
        "loadavg_at_start": os.getloadavg(),
    }
    print(
        f"Neo4j {info['server']} at {uri}; driver {info['neo4j_driver']}"
        f" (rust ext: {info['neo4j_rust_ext']}); {args.workers} workers on {info['cpus']} cores",
        flush=True,
    )
    try:
        store.ensure_schema()
        sizes = [int(size) for size in args.batch_sizes.split(",")]
        sweep_input = subset(folder, args.sweep_n, scratch)
        # A fresh JVM compiles its hot paths during the first loads: warm it up first.
        store.clear()
        timed_load(
            [subset(folder, min(2000, args.sweep_n), scratch)],
            keyring,
            store,
            batch_size=1000,
            workers=args.workers,
        )
        print(f"batch-size sweep (first load of {args.sweep_n} bundles):", flush=True)
        sweep: dict[int, float] = {}
        for size in sizes:
            store.clear()
            report, seconds = timed_load([sweep_input], keyring, store, batch_size=size, workers=args.workers)
            rows.append(row(f"sweep batch={size}", report, seconds, batch_size=size))
            sweep[size] = report.seen / seconds
        best = max(sweep, key=lambda size: sweep[size])

        print(f"full corpus at batch size {best}:", flush=True)
        store.clear()
        first, first_s = timed_load(full, keyring, store, batch_size=best, workers=args.workers)
        rows.append(row("first load", first, first_s, batch_size=best, counts=store.counts().nodes))
        again, again_s = timed_load(full, keyring, store, batch_size=best, workers=args.workers)
        # Stored digests are skipped unverified; only the bundles that lost to a newer one
        # (stale, not stored) are verified again, and decided stale again.
        assert again.accepted == 0, "re-load wrote something"
        assert again.duplicate + again.stale == again.seen, "re-load wrote something"
        rows.append(
            row("re-load (unchanged corpus)", again, again_s, batch_size=best, reverified=again.stale)
        )

        print(f"naive baseline vs ours on the first {args.naive_n} bundles:", flush=True)
        naive_input = subset(folder, args.naive_n, scratch)
        store.clear()
        ours, ours_s = timed_load([naive_input], keyring, store, batch_size=best, workers=args.workers)
        rows.append(row("ours (batched)", ours, ours_s, batch_size=best))
        store.clear()
        naive, naive_s = timed_load(
            [naive_input], keyring, NaiveNeo4jStore(store), batch_size=best, workers=args.workers
        )
        rows.append(row("naive (tx per bundle, stmt per item)", naive, naive_s))
    finally:
        store.close()
        if server is not None:
            server.stop()
        shutil.rmtree(scratch, ignore_errors=True)

    summary = {
        "best_batch_size": best,
        "first_load_bundles_per_s": round(first.seen / first_s, 1),
        "reload_bundles_per_s": round(again.seen / again_s, 1),
        "reload_speedup": round(first_s / again_s, 1),
        "naive_bundles_per_s": round(naive.seen / naive_s, 1),
        "ours_on_naive_subset_bundles_per_s": round(ours.seen / ours_s, 1),
        "ours_vs_naive_same_bundles": round(naive_s / ours_s, 1),
        "first_load_vs_naive": round((first.seen / first_s) / (naive.seen / naive_s), 1),
    }
    print("\nsummary:")
    for key, value in summary.items():
        print(f"  {key:<36} {value}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"neo4j-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"info": info, "rows": rows, "summary": summary}, indent=2, default=str) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
