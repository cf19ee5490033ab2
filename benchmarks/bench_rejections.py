"""Printing rejections: ``pith-graph verify`` on a file whose every line is rejected.

A corpus rejected whole (a wrong keyring, a feed of something else) prints one ``REJECTED``
line per bundle. This times, in interleaved rounds, one worker, stdout to a file:

* ``--json``, the baseline: no line printed per rejection (the report lists the first 1,000);
* the text report as it is: one plain write per line;
* the text report with each line printed by rich's ``Console.print`` (what the CLI did
  before; the script patches it back in), to show what the plain write saved.

    .venv/bin/python benchmarks/bench_rejections.py [--n 200000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

#: The CLI with ``print_rejection`` as it was: rich renders every line.
RICH_PRINT = """
import sys
from pith_graph.cli import commands, entry

def print_rejection(console, bar=None):  # the signature of commands.print_rejection
    def emit(rejection):
        console.print(f"REJECTED {rejection}")
    return emit

commands.print_rejection = print_rejection
sys.argv[0] = "pith-graph"
entry()
"""


def _timed(args: list[str], output: Path) -> tuple[float, int]:
    started = time.perf_counter()
    with output.open("w") as out:
        ended = subprocess.run(args, stdout=out, stderr=subprocess.PIPE, text=True, check=False)
    seconds = time.perf_counter() - started
    if ended.returncode != 1:  # 1: bundles were rejected, as every one is here
        raise SystemExit(f"{args[:4]} ended {ended.returncode}: {ended.stderr.strip()}")
    lines = sum(1 for line in output.open() if line.startswith("REJECTED "))
    return seconds, lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200_000, help="lines in the file, every one rejected")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-rejections-") as folder:
        path = Path(folder) / "rejected.jsonl"
        path.write_bytes(b'{"not": "a bundle"}\n' * args.n)
        verify = ["verify", str(path), "--workers", "1"]
        cases = {
            "--json (baseline)": ([sys.executable, "-m", "pith_graph", *verify, "--json"], 0),
            "text, plain writes (now)": ([sys.executable, "-m", "pith_graph", *verify], args.n),
            "text, Console.print per line (before)": ([sys.executable, "-c", RICH_PRINT, *verify], args.n),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for round_ in range(args.rounds):
            for name, (command, lines) in cases.items():  # interleaved: noise hits every case alike
                seconds, printed = _timed(command, Path(folder) / "out.txt")
                if printed != lines:
                    raise SystemExit(f"{name}: {printed} REJECTED lines, expected {lines}")
                times[name].append(seconds)
            print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr, flush=True)

    baseline = statistics.median(times["--json (baseline)"])
    print(f"{args.n:,} rejected lines, one worker, stdout to a file, {args.rounds} rounds\n")
    print(f"{'report':40} {'wall (min-max)':>16} {'median vs --json':>18}")
    for name, seconds in times.items():
        span = f"{min(seconds):.2f}-{max(seconds):.2f} s"
        print(f"{name:40} {span:>16} {statistics.median(seconds) / baseline:>17.2f}x")


if __name__ == "__main__":
    main()
