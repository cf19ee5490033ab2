"""Peak memory of a snapshot's round trip: opening one, and saving the graph again.

Each step runs in a fresh process that first opens the snapshot; the peak RSS (``VmHWM``) is
reset once the graph is open (``/proc/self/clear_refs``), so the save's peak is its own. The
baseline, in the same run, is the graph itself: RSS once open, collected. Reported: MB, and
each peak over that baseline (1.00 would be a step that needs no memory beyond the graph),
and the snapshot's format version and size (version 3 is read whole, 4 a line at a time; the
save writes the current version, so a version 3 snapshot is not saved again byte for byte).

Usage: python benchmarks/bench_snapshot_memory.py SNAPSHOT [--rounds N]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _status(field: str) -> float:
    """A ``/proc/self/status`` field in MB (VmRSS: now; VmHWM: the peak)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise LookupError(field)


def _child(snapshot: str, out: str) -> None:
    from pith_graph.loader.stores.snapshot import read_snapshot, save_snapshot

    base = _status("VmRSS")
    started = time.perf_counter()
    opened = read_snapshot(snapshot)
    seconds_open = time.perf_counter() - started
    gc.collect()
    result = {"base": base, "open_peak": _status("VmHWM"), "graph": _status("VmRSS"), "open_s": seconds_open}
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the peak RSS starts again from the RSS now
    started = time.perf_counter()
    save_snapshot(opened.graph, out, opened.indexes)
    result["save_s"] = time.perf_counter() - started
    result["save_peak"] = _status("VmHWM")
    result["after_save"] = _status("VmRSS")
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.snapshot, args.child)
        return
    with open(args.snapshot, "rb") as file:
        version = json.loads(file.readline())["version"]
    print(f"{args.snapshot}: format version {version}, {os.path.getsize(args.snapshot) / 1e6:,.1f} MB")
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "again.snapshot")
        for round in range(1, args.rounds + 1):
            done = subprocess.run(
                [sys.executable, __file__, args.snapshot, "--child", out],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(done.stdout)
            graph = r["graph"] - r["base"]
            same = Path(out).read_bytes() == Path(args.snapshot).read_bytes()
            print(
                f"round {round}: graph {graph:.0f} MB (RSS {r['graph']:.0f}, interpreter {r['base']:.0f}); "
                f"open: peak {r['open_peak']:.0f} MB = {(r['open_peak'] - r['base']) / graph:.2f}x the graph, "
                f"{r['open_s']:.1f} s; save: peak {r['save_peak']:.0f} MB = "
                f"{(r['save_peak'] - r['base']) / graph:.2f}x, {r['save_s']:.1f} s; "
                f"saved again byte for byte: {same}"
            )


if __name__ == "__main__":
    main()
