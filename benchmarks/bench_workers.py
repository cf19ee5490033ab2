"""The memory backend over real HTTP: one serving process against one per core, and start-up
from a saved graph against verifying and loading the bundles again.

    .venv/bin/python benchmarks/bench_workers.py --corpus benchmarks/results/corpus-32000-seed7

The corpus: ``benchmarks/results/corpus-32000-seed7`` is the one ``bench_peer.py`` writes on its
first run; any corpus folder does, e.g. ``python -m pith_graph.testing.corpus DIR -n 32000
--seed 7`` (``-n 2000`` for a quick try).

1. ``pith-graph load`` writes a snapshot of the corpus (``--snapshot``, kept in
   benchmarks/results/, named after the corpus folder and a digest of its resolved path and
   its files' names, sizes and modification times: a changed or different corpus gets its own).
2. Start-up, in ``--rounds`` alternating pairs: the time from starting ``pith-graph serve``
   until ``/healthz`` answers, from the bundles (``serve DIR --trusted-keys ...``: verify and
   load) and from the snapshot (``serve --graph FILE``); both with one worker.
3. Throughput, in rounds alternating ``--workers 1`` and ``--workers N`` (default: one per
   core): ``wrk`` (one thread, keep-alive connections) posts paper-by-DOI queries (rotating
   DOIs) with 1, 16 and 32 concurrent clients; p50, p99 and requests per second.

Prints medians and ranges over rounds, with the load average, and writes
benchmarks/results/workers.json. Needs ``wrk`` (Debian package).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
LUA = ROOT / "benchmarks" / "wrk_bodies.lua"
QUERY = (
    "query($id: String!) { paper(id: $id) { pithNumber title submittedAt sourceVersion authors { name } } }"
)


def say(message: str) -> None:
    print(message, flush=True)


def shards(corpus: Path) -> list[str]:
    return sorted(str(p) for p in corpus.iterdir() if p.name.startswith("bundles"))


def snapshot_path(corpus: Path, version: int) -> Path:
    """Where the snapshot of ``corpus`` is kept: keyed on its resolved path and on every file's
    name, size and mtime, so another corpus of the same folder name never reuses it."""
    folder = corpus.resolve()
    digest = hashlib.sha256(str(folder).encode())
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"\0{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return RESULTS / f"{folder.name}-{digest.hexdigest()[:16]}.v{version}.snapshot"


def save_snapshot(corpus: Path, snapshot: Path) -> None:
    """``pith-graph load --snapshot``, into a scratch name first (a failed run leaves none);
    its output in the error when it fails."""
    scratch = snapshot.with_name(f".{snapshot.name}.partial")
    command = [sys.executable, "-m", "pith_graph", "load", *shards(corpus)]
    command += ["--trusted-keys", str(corpus / "keyring.json"), "--snapshot", str(scratch)]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    # Exit 1 is "some bundles rejected" (the generator's later rebuilds can be future-dated).
    if done.returncode not in (0, 1) or not scratch.is_file():
        scratch.unlink(missing_ok=True)
        output = (done.stderr.strip() or done.stdout.strip())[-2000:]
        raise SystemExit(f"bench_workers: {' '.join(command)} failed ({done.returncode}):\n{output}")
    scratch.rename(snapshot)


class Serve:
    """A ``pith-graph serve`` subprocess on a free port; ``seconds`` until it answered."""

    def __init__(self, *options: str) -> None:
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pith_graph", "serve", "--port", "0", *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PITH_API_GRAPHIQL": "0"},
        )
        assert self.process.stdout is not None
        self.url = ""
        seen: list[str] = []
        for line in self.process.stdout:
            seen.append(line)
            found = re.search(r"Uvicorn running on (http://\S+)", line)
            if found:
                self.url = found.group(1)
                break
        if not self.url:
            output = "".join(seen) + self.process.communicate()[0]
            raise SystemExit(f"bench_workers: serve {' '.join(options)} did not start:\n{output[-2000:]}")
        self.log: list[str] = []  # drained, so a chatty server never blocks on a full pipe
        threading.Thread(target=lambda: self.log.extend(self.process.stdout or ()), daemon=True).start()
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.01)
        self.seconds = time.perf_counter() - started

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def wrk(url: str, bodies: Path, clients: int, seconds: int) -> dict[str, Any]:
    command = ["wrk", "-t1", f"-c{clients}", f"-d{seconds}s", "--timeout", "30s", "-s", str(LUA)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [*command, f"{url}/graphql", "--", str(bodies)], capture_output=True, text=True, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise SystemExit(f"wrk failed: {done.stdout}\n{done.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = json.loads(lines[-1])
    client_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if found["bad"] or found["socket_errors"]:
        raise SystemExit(f"bad answers: {found}")
    return {
        "throughput": round(found["requests"] / (found["duration_us"] / 1e6), 1),
        "p50_ms": found["p50_us"] / 1000,
        "p99_ms": found["p99_us"] / 1000,
        # The client's share of the 2 cores (wrk checks every answer in Lua): what is left
        # for the server is the rest.
        "client_cores": round(client_cpu / (found["duration_us"] / 1e6), 2),
        "loadavg": round(os.getloadavg()[0], 2),
    }


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"


def throughput(results: dict[str, Any], snapshot: Path, bodies: Path, args: argparse.Namespace) -> None:
    """The rounds of wrk against ``--workers 1`` and ``--workers N``, into ``results``."""
    for round_ in range(args.rounds):
        order = (1, args.workers) if round_ % 2 == 0 else (args.workers, 1)
        for workers in order:
            server = Serve("--graph", str(snapshot), "--workers", str(workers))
            try:
                wrk(server.url, bodies, 16, 2)  # warm: every worker compiles the plan
                for clients in (1, 16, 32):
                    row = {
                        "round": round_ + 1,
                        "workers": workers,
                        "clients": clients,
                        **wrk(server.url, bodies, clients, args.seconds),
                    }
                    results["throughput"].append(row)
                    say(
                        f"  workers {workers} clients {clients:>2}: {row['throughput']:8.1f} req/s  p50 {row['p50_ms']:6.2f} ms  p99 {row['p99_ms']:6.2f} ms  (client {row['client_cores']} cores, load {row['loadavg']})"
                    )
            finally:
                server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--skip-startup", action="store_true")
    args = parser.parse_args(argv)
    if not shutil.which("wrk"):
        raise SystemExit("bench_workers: needs wrk (apt-get install wrk)")
    if not (args.corpus / "keyring.json").is_file():
        raise SystemExit(f"bench_workers: {args.corpus} is not a corpus folder (see --help: how to make one)")
    keyring = str(args.corpus / "keyring.json")
    from pith_graph.loader.stores.snapshot import VERSION

    RESULTS.mkdir(parents=True, exist_ok=True)  # git-ignored: missing in a fresh checkout
    snapshot = snapshot_path(args.corpus, VERSION)  # made again when the format or corpus changes
    before = os.getloadavg()
    if not snapshot.exists():
        say(f"saving {snapshot} ...")
        save_snapshot(args.corpus, snapshot)
    results: dict[str, Any] = {"workers": args.workers, "startup": [], "throughput": []}

    if not args.skip_startup:
        for round_ in range(args.rounds):
            pair = {}
            for kind in ("bundles", "graph") if round_ % 2 == 0 else ("graph", "bundles"):
                options = (
                    ["--graph", str(snapshot)]
                    if kind == "graph"
                    else [*shards(args.corpus), "--trusted-keys", keyring]
                )
                server = Serve(*options, "--workers", "1")
                pair[kind] = round(server.seconds, 2)
                server.stop()
            pair["loadavg"] = round(os.getloadavg()[0], 2)
            results["startup"].append(pair)
            say(
                f"start-up round {round_ + 1}: bundles {pair['bundles']} s, graph {pair['graph']} s, load {pair['loadavg']}"
            )

    from pith_graph.loader.stores.memory import open_graph

    graph = open_graph(snapshot)
    dois = sorted(
        d["value"] for _, d in graph.nodes(data=True) if d.get("label") == "Alias" and d["kind"] == "doi"
    )
    del graph
    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as scratch:
        bodies = Path(scratch) / "dois.jsonl"
        bodies.write_bytes(
            b"\n".join(
                orjson.dumps({"query": QUERY, "variables": {"id": d}})
                for d in rng.sample(dois, min(2000, len(dois)))
            )
        )
        throughput(results, snapshot, bodies, args)
    after = os.getloadavg()

    say("")
    if results["startup"]:
        ratios = [p["bundles"] / p["graph"] for p in results["startup"]]
        say(
            f"start-up, bundles: {spread([p['bundles'] for p in results['startup']])} s; saved graph: {spread([p['graph'] for p in results['startup']])} s; ratio {spread(ratios)}"
        )
    for clients in (1, 16, 32):
        for workers in sorted({1, args.workers}):
            rows = [r for r in results["throughput"] if r["workers"] == workers and r["clients"] == clients]
            say(
                f"workers {workers} clients {clients:>2}: {spread([r['throughput'] for r in rows])} req/s, "
                f"p50 {spread([r['p50_ms'] for r in rows])} ms, p99 {spread([r['p99_ms'] for r in rows])} ms"
            )
        if args.workers > 1:
            one = {
                r["round"]: r["throughput"]
                for r in results["throughput"]
                if r["workers"] == 1 and r["clients"] == clients
            }
            many = {
                r["round"]: r["throughput"]
                for r in results["throughput"]
                if r["workers"] == args.workers and r["clients"] == clients
            }
            say(f"  {args.workers} workers ÷ 1, clients {clients}: {spread([many[k] / one[k] for k in one])}")
    say(f"load average before {before[0]:.2f}, after {after[0]:.2f}")
    results["loadavg"] = {"before": before, "after": after}
    (RESULTS / "workers.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
