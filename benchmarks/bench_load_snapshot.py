"""Peak memory and time of ``pith-graph load PATH --snapshot FILE`` (the memory backend, the
graph then saved with its search index for ``serve --graph``), this code against another
checkout's, interleaved; ``--plain`` also each code's plain ``load`` (no ``--snapshot``) in
every round, interleaved as well (since 0.9.10; before, this code's once).

Each run is a fresh ``python -m pith_graph load PATH... --json`` started from a scratch folder
(the code is the environment's, or the baseline's, put first on ``PYTHONPATH`` as
``bench_snapshot_memory.py`` lays it out); its peak RSS is ``ru_maxrss`` of ``os.wait4``
(as ``/usr/bin/time -v`` reports it: the largest of the process and its verification workers,
which hold far less), its seconds by the clock, its papers from the report. The two codes'
snapshots are compared byte for byte in every round.

``git archive`` holds no build of the Rust verifier: copy ``loader/_ed25519*.so`` into
``DIR/loader`` (else the baseline verifies with libsodium, and its times are not alike).

Usage: python benchmarks/bench_load_snapshot.py PATH... --trusted-keys FILE --baseline DIR
       [--rounds N] [--plain]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_snapshot_memory import _span, _tree  # benchmarks/ is on sys.path


def _load(
    env: dict[str, str], folder: Path, paths: list[str], keys: str, snapshot: str | None
) -> dict[str, Any]:
    """One ``load`` in a fresh process: its peak RSS (MB), seconds, papers and snapshot's SHA-256."""
    command = [sys.executable, "-m", "pith_graph", "load", *paths, "--trusted-keys", keys, "--json"]
    if snapshot is not None:
        command += ["--snapshot", snapshot]
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = child.stdout.read() if child.stdout is not None else b""
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if status:
        raise SystemExit(f"{' '.join(command)}: wait status {status}")
    found = {"peak": usage.ru_maxrss / 1024, "seconds": seconds, "papers": json.loads(out)["nodes"]["Paper"]}
    if snapshot is not None:
        found["sha256"] = hashlib.sha256(Path(snapshot).read_bytes()).hexdigest()
        os.unlink(snapshot)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--trusted-keys", required=True)
    parser.add_argument(
        "--baseline", type=Path, required=True, help="a checkout of the code to compare against"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--plain", action="store_true", help="also each code's plain load, every round")
    args = parser.parse_args()
    paths = [str(Path(path).resolve()) for path in args.paths]
    keys = str(Path(args.trusted_keys).resolve())
    if not list((args.baseline / "loader").glob("_ed25519*.so")):
        print(f"warning: no loader/_ed25519*.so in {args.baseline}: the baseline verifies with libsodium")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        tree = _tree(args.baseline, folder / "baseline")
        codes = {"baseline": {**os.environ, "PYTHONPATH": str(tree)}, "this": dict(os.environ)}
        found: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
        plain: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
        for round in range(1, args.rounds + 1):
            for name, env in codes.items() if round % 2 else reversed(codes.items()):
                r = _load(env, folder, paths, keys, str(folder / f"{name}.snapshot"))
                found[name].append(r)
                _said(f"round {round} {name}: load --snapshot", r)
                if args.plain:
                    r = _load(env, folder, paths, keys, None)
                    plain[name].append(r)
                    _said(f"round {round} {name}: plain load", r)
            same = found["this"][-1]["sha256"] == found["baseline"][-1]["sha256"]
            print(f"round {round}: the two snapshots byte for byte alike: {same}", flush=True)
    for title, runs_of in (("load --snapshot", found), ("plain load", plain)):
        for name, runs in runs_of.items():
            if runs:
                print(
                    f"{name}: {title} peak {_span([r['peak'] for r in runs])} MB "
                    f"({_span([r['peak'] / r['papers'] * 1e5 for r in runs])} MB per 100k papers), "
                    f"{_span([r['seconds'] for r in runs], 1)} s"
                )
        if runs_of["this"]:
            ratios = [
                mine["peak"] / theirs["peak"]
                for theirs, mine in zip(runs_of["baseline"], runs_of["this"], strict=True)
            ]
            print(f"{title} peak, this / baseline, round by round: {_span(ratios, 3)}")


def _said(what: str, r: dict[str, Any]) -> None:
    print(
        f"{what}: peak {r['peak']:,.0f} MB "
        f"({r['peak'] / r['papers'] * 1e5:,.0f} MB per 100k papers, {r['papers']:,} papers), "
        f"{r['seconds']:.1f} s; loadavg {Path('/proc/loadavg').read_text().strip()}",
        flush=True,
    )


if __name__ == "__main__":
    main()
