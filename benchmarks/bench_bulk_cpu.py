"""CPU per bundle of ``pith-graph import --csv-only`` (and ``pith-graph verify``): this
checkout against another (a second worktree at a base commit, with its own ``.venv``).

    git worktree add --detach /tmp/wt-base <commit> && (cd /tmp/wt-base && scripts/bootstrap)
    .venv/bin/python benchmarks/bench_bulk_cpu.py --base /tmp/wt-base --corpus /tmp/corpus-100000

Each round runs both checkouts' commands one after the other (the order alternating from
round to round) on the same shards (``--shards``, the first N ``bundles-*`` files of the
corpus), ``import`` into a fresh ``--csv-only`` folder each time. Per run: wall seconds and
the user + system CPU seconds of the whole process tree (``getrusage(RUSAGE_CHILDREN)``
around the command, so its workers count too). The host may be shared: CPU seconds are the
figure to compare, wall seconds are secondary.

Every import's CSV files are hashed (SHA-256 of each file, by name): the script fails if any
run wrote other files or other bytes than the first run of the base did. The commands run with
``PYTHONHASHSEED=0``: the Alias node rows are written in the order of a set of strings, which
Python's per-process string hashing changes from run to run (the importer does not mind). Prints medians and
ranges per bundle and the ratio, and writes benchmarks/results/bulk_cpu.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def say(message: str) -> None:
    print(message, flush=True)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _digests(folder: Path) -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.name.endswith(".csv")
    }


def run_once(checkout: Path, command: str, shards: list[str], keys: str, scratch: Path) -> dict[str, Any]:
    """One command of ``checkout``: wall and CPU seconds, and the CSV files' digests."""
    exe = str(checkout / ".venv" / "bin" / "pith-graph")
    work = Path(tempfile.mkdtemp(dir=scratch))
    csv = work / "csv"
    args = [exe, command, *shards, "--trusted-keys", keys]
    if command == "import":
        args += ["--csv-only", str(csv), "--json"]
    before_cpu, before = _children_cpu(), time.perf_counter()
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # Alias nodes are written in a set's order
    done = subprocess.run(args, capture_output=True, cwd=work, env=env, check=False)
    wall, cpu = time.perf_counter() - before, _children_cpu() - before_cpu
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    result: dict[str, Any] = {"wall": wall, "cpu": cpu}
    if command == "import":
        report = json.loads(done.stdout)
        result["steps"] = report.get("steps")
        result["digests"] = _digests(csv)
    shutil.rmtree(work)
    return result


def _summary(values: list[float], bundles: int) -> dict[str, float]:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "median_ms_per_bundle": statistics.median(values) / bundles * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the other checkout (with its .venv)")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--shards", type=int, default=5, help="bundles-* files of the corpus to read")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commands", default="import,verify")
    parser.add_argument("--scratch", default=None, help="folder for the CSV files (default: a temporary one)")
    options = parser.parse_args()
    corpus = Path(options.corpus)
    shards = sorted(str(p) for p in corpus.iterdir() if p.name.startswith("bundles"))[: options.shards]
    keys = str(corpus / "keyring.json")
    bundles = 0
    for shard in shards:
        done = subprocess.run(["zcat", "-f", shard], capture_output=True, check=True)
        bundles += done.stdout.count(b"\n")
    sides = {"base": Path(options.base).resolve(), "this": ROOT}
    say(f"{bundles} bundles in {len(shards)} shards; base {sides['base']}, this {ROOT}")
    scratch = Path(options.scratch or tempfile.mkdtemp(prefix="bench-bulk-cpu-"))
    scratch.mkdir(parents=True, exist_ok=True)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    reference: dict[str, str] | None = None
    for round_ in range(options.rounds):
        for command in options.commands.split(","):
            order = ["base", "this"] if round_ % 2 == 0 else ["this", "base"]
            for side in order:
                result = run_once(sides[side], command, shards, keys, scratch)
                digests = result.pop("digests", None)
                if digests is not None:
                    reference = reference if reference is not None else digests
                    if digests != reference:
                        raise SystemExit(
                            f"round {round_ + 1}: {side}'s CSV files differ from the first run's"
                        )
                runs.setdefault(command, {}).setdefault(side, []).append(result)
                say(
                    f"round {round_ + 1} {command:6s} {side:4s}: wall {result['wall']:6.2f} s, "
                    f"cpu {result['cpu']:6.2f} s, load {os.getloadavg()[0]:.1f}"
                    + (f", steps {result['steps']}" if result.get("steps") else "")
                )
    summary: dict[str, Any] = {"bundles": bundles, "shards": shards, "load": os.getloadavg(), "commands": {}}
    for command, by_side in runs.items():
        entry: dict[str, Any] = {}
        for side, results in by_side.items():
            entry[side] = {
                "wall": _summary([r["wall"] for r in results], bundles),
                "cpu": _summary([r["cpu"] for r in results], bundles),
                "runs": results,
            }
        for what in ("cpu", "wall"):
            base, this = entry["base"][what], entry["this"][what]
            entry[f"{what}_ratio"] = this["median"] / base["median"]
            say(
                f"{command:6s} {what:4s}: base {base['median_ms_per_bundle']:.3f} ms/bundle "
                f"({base['min']:.2f}-{base['max']:.2f} s), this {this['median_ms_per_bundle']:.3f} ms/bundle "
                f"({this['min']:.2f}-{this['max']:.2f} s), ratio {entry[f'{what}_ratio']:.3f}"
            )
        summary["commands"][command] = entry
    if reference is not None:
        summary["csv_files"] = len(reference)
        say(f"CSV files identical in every import: {len(reference)} files")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bulk_cpu.json").write_text(json.dumps(summary, indent=2) + "\n")
    if options.scratch is None:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
