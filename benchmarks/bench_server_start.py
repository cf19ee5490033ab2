"""``scripts/neo4j start`` and ``stop`` with the class-data sharing archive and without it.

    .venv/bin/python benchmarks/bench_server_start.py [--rounds 5] [--data DIR]

In ``--rounds`` alternating pairs, one server is started with ``NEO4J_CDS=on`` (the JVM maps
``scripts/neo4j-launcher/target/neo4j.jsa``) and one with ``NEO4J_CDS=off``, each on free
ports, timed from running ``scripts/neo4j start`` until it printed the Bolt URI (Bolt
answers), with the CPU seconds the server's JVM had used by then, then stopped
(``scripts/neo4j stop``, timed until the process is gone). By default every server gets an
empty data folder of its own, as the test suite's do; ``--data DIR`` starts them all on one
existing database (e.g. one ``pith-graph import`` built), copied once so the original is never
written. The first ``scripts/neo4j start`` after a build writes the archive;
this script runs ``scripts/neo4j build`` first so that no round pays for it.

Prints medians and ranges, and the ratio of the medians (with / without), with the load
average; writes benchmarks/results/server-start.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_neo4j import RESULTS, ROOT, free_port, summary  # benchmarks/ is on sys.path

SCRIPT = ROOT / "scripts" / "neo4j"


def script_env(**settings: str) -> dict[str, str]:
    """This process's environment without its NEO4J_* settings, plus ``settings``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}, **settings}


def script(command: str, env: dict[str, str]) -> None:
    done = subprocess.run([str(SCRIPT), command], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"scripts/neo4j {command} failed:\n{done.stderr[-2000:]}")


def cpu_seconds(data: Path) -> float:
    """CPU seconds (user + system) the server of ``data`` has used so far."""
    pid = (data / "neo4j.pid").read_text().strip()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_round(cds: str, data: Path) -> tuple[float, float, float]:
    """Seconds to start one server on ``data``, its CPU seconds by then, seconds to stop it."""
    env = script_env(
        NEO4J_DATA=str(data),
        NEO4J_BOLT_PORT=str(free_port()),
        NEO4J_HTTP_PORT=str(free_port()),
        NEO4J_AUTH="none",
        NEO4J_CDS=cds,
    )
    started = time.perf_counter()
    script("start", env)
    up = time.perf_counter()
    cpu = cpu_seconds(data)
    stopping = time.perf_counter()
    script("stop", env)
    return up - started, cpu, time.perf_counter() - stopping


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", help="an existing Neo4j data folder to start on (copied, never written)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    script("build", script_env())
    times: dict[str, dict[str, list[float]]] = {
        cds: {"start": [], "start_cpu": [], "stop": []} for cds in ("on", "off")
    }
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        shared = None
        if args.data:
            shared = Path(tmp) / "data"
            shutil.copytree(args.data, shared, ignore=shutil.ignore_patterns("neo4j.pid", "*.lock"))
        for index in range(args.rounds):
            for cds in ("on", "off") if index % 2 == 0 else ("off", "on"):
                data = shared or Path(tempfile.mkdtemp(dir=tmp))
                start, cpu, stop = one_round(cds, data)
                times[cds]["start"].append(start)
                times[cds]["start_cpu"].append(cpu)
                times[cds]["stop"].append(stop)
                print(
                    f"round {index + 1} NEO4J_CDS={cds}: start {start:.2f} s ({cpu:.1f} CPU s), stop {stop:.2f} s",
                    flush=True,
                )
    result: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "data": args.data or "empty",
        "rounds": args.rounds,
        "loadavg_1m_before": load_before,
        "loadavg_1m_after": os.getloadavg()[0],
    }
    for phase in ("start", "start_cpu", "stop"):
        on, off = summary(times["on"][phase]), summary(times["off"][phase])
        result[phase] = {"cds_on_s": on, "cds_off_s": off, "on_over_off": on["median"] / off["median"]}
        print(
            f"{phase}: with the archive {on['median']:.2f} s ({on['min']:.2f}-{on['max']:.2f}), "
            f"without {off['median']:.2f} s ({off['min']:.2f}-{off['max']:.2f}): "
            f"{result[phase]['on_over_off']:.2f}x"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "server-start.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
