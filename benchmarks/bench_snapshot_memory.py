"""Peak memory of a snapshot's round trip: opening one as ``serve --graph`` does, and saving
the graph again as ``load --snapshot`` does.

Each step runs in a fresh process. Opening is ``open_saved`` (with the readers of the saved
indexes, where the code has them) and ``MemoryReader.adopt`` of the saved text index, the
indexes read then let go: what the process holds then (``opened``: the graph and its text
index, collected) is the baseline of the same run, and the peak RSS (``VmHWM``) of opening is
reported over it (1.00 would be an opening that needs no memory beyond what it keeps). The
peak is then reset (``/proc/self/clear_refs``) and the graph saved again with its index, so
the save's peak is its own. Also reported: the snapshot's format version and size.

``--baseline DIR`` compares against the code of another checkout (``git archive v | tar -x -C
DIR``): each code first writes the snapshot as it saves one (opened and saved again, as
``load --snapshot`` writes it), then the rounds alternate between the two, each opening its
own; last, each code's ranges and the ratio of the peaks.

Usage: python benchmarks/bench_snapshot_memory.py SNAPSHOT [--rounds N] [--baseline DIR]
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
from typing import Any


def _status(field: str) -> float:
    """A ``/proc/self/status`` field in MB (VmRSS: now; VmHWM: the peak)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise LookupError(field)


def _open(snapshot: str) -> tuple[Any, dict[str, float]]:
    """A reader over the snapshot, its saved index adopted, as ``serve --graph`` opens it."""
    from pith_graph.api.reads.memory import MemoryReader
    from pith_graph.loader.stores.memory import open_saved

    try:
        from pith_graph.api.reads.saved_indexes import INDEX_READERS  # since 0.9.8
    except ImportError:
        options = {}
    else:
        options = {"readers": INDEX_READERS}
    started = time.perf_counter()
    graph, indexes = open_saved(snapshot, **options)
    opened = time.perf_counter()
    reader = MemoryReader(graph)
    if not reader.adopt(indexes):
        raise SystemExit(f"{snapshot}: its text index was not taken")
    times = {"open_s": opened - started, "adopt_s": time.perf_counter() - opened}
    return reader, times


def _child(snapshot: str, out: str) -> None:
    from pith_graph.loader.stores.snapshot import save_snapshot

    base = _status("VmRSS")
    reader, result = _open(snapshot)
    gc.collect()
    result |= {"base": base, "open_peak": _status("VmHWM"), "opened": _status("VmRSS")}
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the peak RSS starts again from the RSS now
    started = time.perf_counter()
    save_snapshot(reader.G, out, reader.saved_indexes())
    result["save_s"] = time.perf_counter() - started
    result["save_peak"] = _status("VmHWM")
    print(json.dumps(result))


def _convert(snapshot: str, out: str) -> None:
    """``snapshot`` written again by this code, as ``load --snapshot`` writes one."""
    from pith_graph.loader.stores.snapshot import save_snapshot

    reader, _ = _open(snapshot)
    save_snapshot(reader.G, out, reader.saved_indexes())


def _tree(checkout: Path, folder: Path) -> Path:
    """A folder laid out as the installed package, of links into ``checkout`` (as
    ``scripts/check`` lays one out), to put first on ``PYTHONPATH``."""
    package = folder / "pith_graph"
    package.mkdir(parents=True)
    for entry in (checkout / "pith_graph").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry.resolve())
    for room in ("loader", "schema", "api"):
        (package / room).symlink_to((checkout / room).resolve())
    return folder


def _run(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return done.stdout


def _described(path: str) -> str:
    with open(path, "rb") as file:
        version = json.loads(file.readline())["version"]
    return f"format version {version}, {os.path.getsize(path) / 1e6:,.1f} MB"


def _span(values: list[float], digits: int = 0) -> str:
    return f"{min(values):,.{digits}f}-{max(values):,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare against")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--convert", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.snapshot, args.child)
        return
    if args.convert:
        _convert(args.snapshot, args.convert)
        return
    print(f"{args.snapshot}: {_described(args.snapshot)}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        codes = {"this": dict(os.environ)}
        if args.baseline is not None:
            tree = _tree(args.baseline, folder / "baseline")
            codes = {"baseline": {**os.environ, "PYTHONPATH": str(tree)}, **codes}
        files = {}
        for name, env in codes.items():
            files[name] = str(folder / f"{name}.snapshot")
            _run(env, args.snapshot, "--convert", files[name])
            print(f"{name}: {_described(files[name])}")
        out = str(folder / "again.snapshot")
        found: dict[str, list[dict[str, float]]] = {name: [] for name in codes}
        for round in range(1, args.rounds + 1):
            for name, env in codes.items():
                r = json.loads(_run(env, files[name], "--child", out))
                found[name].append(r)
                opened = r["opened"] - r["base"]
                same = Path(out).read_bytes() == Path(files[name]).read_bytes()
                print(
                    f"round {round} {name}: opened {opened:.0f} MB (RSS {r['opened']:.0f}, interpreter "
                    f"{r['base']:.0f}); open: peak {r['open_peak'] - r['base']:.0f} MB = "
                    f"{(r['open_peak'] - r['base']) / opened:.3f}x, {r['open_s']:.1f} s + adopt "
                    f"{r['adopt_s']:.2f} s; save: peak {(r['save_peak'] - r['base']) / opened:.2f}x, "
                    f"{r['save_s']:.1f} s; saved again byte for byte: {same}; "
                    f"load {os.getloadavg()[0]:.1f}"
                )
        for name, rounds in found.items():
            peaks = [r["open_peak"] - r["base"] for r in rounds]
            print(
                f"{name}: open peak {_span(peaks)} MB, "
                f"{_span([(r['open_peak'] - r['base']) / (r['opened'] - r['base']) for r in rounds], 3)}x "
                f"what it holds once opened ({_span([r['opened'] - r['base'] for r in rounds])} MB); "
                f"open {_span([r['open_s'] for r in rounds], 1)} s, "
                f"adopt {_span([r['adopt_s'] for r in rounds], 2)} s, "
                f"save peak {_span([r['save_peak'] - r['base'] for r in rounds])} MB"
            )
        if len(found) == 2:
            ratios = [
                (mine["open_peak"] - mine["base"]) / (theirs["open_peak"] - theirs["base"])
                for theirs, mine in zip(found["baseline"], found["this"], strict=True)
            ]
            print(f"open peak, this / baseline, round by round: {_span(ratios, 3)}")


if __name__ == "__main__":
    main()
