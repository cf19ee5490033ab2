"""Verification against its floor, counted in instructions (valgrind's callgrind), not timed.

    .venv/bin/python benchmarks/bench_instructions.py [--n 10000] [--sample 600] [--corpus DIR]

The same four measures as ``bench_loader.single_core``, over the same bundles: the floor
(orjson plus four PyNaCl checks, ``floor_once``), ``verify`` (``parse_bundle`` +
``verify_bundle``), ``verify`` with libsodium checking the signatures, and ``verify_and_rows``
(``process_one``); and ``verify_and_spill``, a bulk import's pass one per bundle
(``process_one``, then ``spill.encode_record``; ``--measures`` picks some). Each runs in a child Python under ``valgrind --tool=callgrind``, twice: over
0 and over ``--sample`` bundles, after the same set-up (imports, keyring, reading the sample,
one warm-up call). Callgrind dumps its counts at two calls to getppid around the loop, so only
the loop is counted (an edit to set-up code cannot leak in); the difference of the two loops,
over the sample, is the cost per bundle. Children run two at a time: counts ignore the load.
Prints instructions per bundle and floor / ours (as ``bench_loader``'s ``*_vs_floor``); writes
benchmarks/results/instructions.json. About 2 minutes on the 2-core host.

Instructions are not time. They catch added work: a regression in our code (or in a
dependency) shows as a shift. On a frozen tree two runs gave the floor exactly, the others
within 0.013% (PYTHONHASHSEED=0 in the children); an extra ``[None for _ in range(100)]`` per
bundle (+0.47%) showed clearly. Timed ratios swing 0.66-0.90x run to run on a shared host.
They miss what costs time without costing instructions: cache misses, memory stalls, branch
mispredictions, slow instructions, the host. Compare figures from one Python, one set of
libraries and one corpus only.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench_loader import corpus, floor_once, sample, save, sodium_keys, with_libsodium

from pith_graph.errors import Source
from pith_graph.loader.bulk.spill import encode_record
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.parse import parse_bundle
from pith_graph.loader.pipeline import WorkerConfig, process_one
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.sources import RawBundle
from pith_graph.loader.verify import verify_bundle

MEASURES = ("floor", "verify", "verify_libsodium", "verify_and_rows", "verify_and_spill")
NOT_TIME = (
    "instructions are not time: they catch added work in our code, "
    "not cache misses, memory stalls or the host"
)


def measures(keyring: Keyring) -> dict[str, Callable[[bytes], object]]:
    """The four measures of ``bench_loader.single_core``, all built in every child."""
    keys = sodium_keys(keyring)
    sodium = with_libsodium(keyring)
    settings = WorkerConfig(keyring)
    return {
        "floor": lambda d: floor_once(d, keys),
        "verify": lambda d: verify_bundle(parse_bundle(d), keyring),
        "verify_libsodium": lambda d: verify_bundle(parse_bundle(d), sodium),
        "verify_and_rows": lambda d: process_one(RawBundle(d, Source("bench")), settings),
        "verify_and_spill": lambda d: spilled(process_one(RawBundle(d, Source("bench")), settings)),
    }


def spilled(result: object) -> object:
    """A bulk import's pass one: the spill record of an accepted bundle (its CSV rows encoded)."""
    return encode_record(result) if isinstance(result, PaperRows) else result


def child(name: str, path: Path, size: int, count: int) -> None:
    """Under callgrind: the same set-up whatever ``count``, then ``count`` bundles measured
    between two calls to getppid, at which callgrind dumps its counts (``--dump-before``)."""
    keyring = resolve_keyring(str(path / "keyring.json"))
    items = sample(path, size)
    fn = measures(keyring)[name]
    fn(items[0])  # warm-up: first-call imports and caches are not per-bundle cost
    gc.collect()
    os.getppid()  # dump: what came before (start-up, set-up) is not counted
    for data in items[:count]:
        fn(data)
    os.getppid()  # dump: the loop
    sys.stdout.flush()
    os._exit(0)


TOTALS = re.compile(r"^totals: (\d+)", re.MULTILINE)


def count(name: str, path: Path, size: int, bundles: int, scratch: Path) -> int:
    """Instructions the child's loop executed, per callgrind (the second of its three parts)."""
    out = scratch / f"{name}.{bundles}.out"
    command = [
        "valgrind",
        "--tool=callgrind",
        "--dump-before=getppid",
        f"--callgrind-out-file={out}",
        sys.executable,
        __file__,
        "--child",
        name,
        str(path),
        str(size),
        str(bundles),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{name} over {bundles} bundles failed:\n{done.stderr[-2000:]}")
    parts = sorted(scratch.glob(f"{out.name}.*"))
    found = TOTALS.search(Path(f"{out}.2").read_text()) if len(parts) == 2 else None
    if found is None:
        raise SystemExit(f"{name}: expected callgrind to dump twice (getppid), got {parts}")
    return int(found.group(1))


def run(path: Path, size: int, names: list[str]) -> dict[str, Any]:
    jobs = [(name, bundles) for name in names for bundles in (0, size)]
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(max_workers=2) as pool:
        futures = {(n, b): pool.submit(count, n, path, size, b, Path(scratch)) for n, b in jobs}
        totals = {job: future.result() for job, future in futures.items()}
    out: dict[str, Any] = {"bundles": size, "note": NOT_TIME}
    for name in names:
        out[f"{name}_loop"] = [totals[name, 0], totals[name, size]]
        out[f"{name}_per_bundle"] = (totals[name, size] - totals[name, 0]) / size
    if "floor" in names:
        for name in names:
            if name != "floor":
                out[f"{name}_vs_floor"] = out["floor_per_bundle"] / out[f"{name}_per_bundle"]
    return out


def report(figures: dict[str, Any], names: list[str]) -> None:
    print(f"per bundle, over {figures['bundles']} bundles ({NOT_TIME}):")
    for name in names:
        ratio = figures.get(f"{name}_vs_floor")
        against = f"   floor/ours {ratio:.4f}" if ratio is not None else ""
        print(f"  {name:<17} {figures[f'{name}_per_bundle'] / 1e6:9.4f} M instructions{against}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=10_000, help="corpus size, if --corpus is not given")
    parser.add_argument("--corpus", help="a corpus folder written by `python -m pith_graph.testing.corpus`")
    parser.add_argument("--sample", type=int, default=600, help="bundles each child measures")
    parser.add_argument("--measures", nargs="+", choices=MEASURES, default=list(MEASURES))
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, path, size, bundles = args.child
        child(name, Path(path), int(size), int(bundles))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_instructions: valgrind is not installed (apt-get install valgrind)")
    path = corpus(args.n, args.corpus)
    print(f"callgrind, {2 * len(args.measures)} children two at a time (minutes) ...", flush=True)
    figures = run(path, args.sample, args.measures)
    report(figures, args.measures)
    figures["corpus"] = str(path)
    figures["python"] = sys.version.split()[0]
    save(figures, "instructions.json")


if __name__ == "__main__":
    main()
