"""How long ``pith-graph serve`` (memory backend, the shipped samples) takes to answer its first
query, as shipped and made to import the Neo4j driver first (the baseline: until 0.7.0 every
server imported it, through the API's plan runner, whichever backend it served).

    .venv/bin/python benchmarks/bench_serve_import.py [--rounds 9]

Each round starts both, in alternating order: ``python -m pith_graph serve --port 0
--workers 1 --load-workers 1``, timed from the start of the process until a paper lookup
over HTTP answers; the baseline is the same command run by ``python -c`` after ``import
neo4j``. Prints medians and ranges, the ratio of the medians, whether the driver's optional
pandas is installed (the driver imports it when it is), and the load average; writes
benchmarks/results/serve-import.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Any

import httpx
from bench_neo4j import RESULTS, summary  # benchmarks/ is on sys.path

SERVE = ["serve", "--port", "0", "--workers", "1", "--load-workers", "1"]
QUERY = '{ paper(id: "doi:10.48550/ARXIV.2201.07821") { title } }'
_RUNNING = re.compile(r"Uvicorn running on (http://\S+)")
COMMANDS = {
    "shipped": [sys.executable, "-m", "pith_graph", *SERVE],
    "driver_first": [
        sys.executable,
        "-c",
        "import neo4j, runpy, sys; sys.argv[0] = 'pith-graph'; runpy.run_module('pith_graph', run_name='__main__')",
        *SERVE,
    ],
}


def first_answer(command: list[str]) -> float:
    """Seconds from starting ``command`` until its server answered :data:`QUERY`."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    try:
        while not (found := _RUNNING.search(line := process.stdout.readline())):
            if not line:
                raise SystemExit(f"{command} exited before listening")
        title = httpx.post(f"{found.group(1)}/graphql", json={"query": QUERY}).json()["data"]["paper"][
            "title"
        ]
        took = time.perf_counter() - started
        assert title, title
        return took
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    load_before = os.getloadavg()[0]
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for index in range(args.rounds):
        for name in COMMANDS if index % 2 == 0 else reversed(COMMANDS):
            times[name].append(first_answer(COMMANDS[name]))
        print(f"round {index + 1}: " + ", ".join(f"{n} {t[-1]:.2f} s" for n, t in times.items()), flush=True)
    result: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "pandas_installed": importlib.util.find_spec("pandas") is not None,
        "rounds": args.rounds,
        "loadavg_1m_before": load_before,
        "loadavg_1m_after": os.getloadavg()[0],
    }
    for name, values in times.items():
        found = result[name] = summary(values)
        print(f"{name}: {found['median']:.2f} s ({found['min']:.2f}-{found['max']:.2f})")
    result["shipped_over_driver_first"] = result["shipped"]["median"] / result["driver_first"]["median"]
    print(
        f"shipped / driver first: {result['shipped_over_driver_first']:.2f}x, pandas installed: "
        f"{result['pandas_installed']}, load {load_before:.2f} -> {result['loadavg_1m_after']:.2f}"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "serve-import.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
