"""Loader benchmarks: verification against its floor, parallel scaling, end-to-end load.

Every figure is a ratio against a baseline measured in the same run, on the same bundles:

* **floor** — what no verifier can beat: ``orjson.loads`` plus the four Ed25519
  verifications a bundle needs (receipt, two events, bundle), with PyNaCl, on one core.
* **ours, one core** — ``parse_bundle`` + ``verify_bundle`` (every check), then also
  + ``build_rows``; reported as a fraction of the floor; and ``verify`` with libsodium
  checking the signatures (the fallback without the Rust extension). Interleaved rounds.
* **parallel** — the whole pipeline (read, gunzip, verify, rows) without a store, 1 worker vs
  one per core.
* **end-to-end** — ``pith-graph load --backend memory`` equivalent on the full corpus, in a
  fresh process: bundles/s and peak RSS, and RSS growth per 100k papers.

Run:  .venv/bin/python benchmarks/bench_loader.py [--n 100000] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path
from typing import Any

import orjson
from nacl.signing import VerifyKey

from pith_graph.errors import Source
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring, PinnedKey
from pith_graph.loader.parse import parse_bundle
from pith_graph.loader.pipeline import WorkerConfig, process_one, run
from pith_graph.loader.signatures import SodiumKey
from pith_graph.loader.sources import RawBundle, expand_paths, iter_inputs
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.verify import verify_bundle
from pith_graph.testing.corpus import cached_corpus

ROOT = Path(__file__).resolve().parent.parent


def corpus(n: int, given: str | None) -> Path:
    if given:
        return Path(given)
    path = ROOT / "benchmarks" / "results" / f"corpus-{n}"
    return cached_corpus(path, n, seed=7, say=lambda line: print(line, flush=True))


def save(results: dict[str, Any], name: str) -> None:
    """Write ``results`` to benchmarks/results/``name`` and say where."""
    out = ROOT / "benchmarks" / "results" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")


def bundle_files(path: Path) -> list[str]:
    """The corpus shards (the folder also holds keyring.json, which is not a bundle)."""
    return sorted(str(p) for p in path.glob("bundles-*"))


def sample(path: Path, count: int) -> list[bytes]:
    items = iter_inputs(expand_paths(bundle_files(path)), max_bytes=1 << 20)
    return [item.data for item in islice(items, count) if isinstance(item, RawBundle)]


def floor_once(data: bytes, keys: dict[str, VerifyKey]) -> None:
    """orjson parse + the four signature checks (PyNaCl, libsodium), nothing else."""
    import base64

    bundle = orjson.loads(data)
    for event in bundle["events"]:
        sig = event["signature"]
        keys[sig["key_id"]].verify(
            bytes.fromhex(event["content_sha256"]), base64.b64decode(sig["signature_b64"])
        )
        if event["event_type"] == "record_created":
            receipt = event["payload"]["receipt"]
            keys[receipt["key_id"]].verify(
                bytes.fromhex(receipt["canonical_sha256"]), base64.b64decode(receipt["signature_b64"])
            )
    sig = bundle["bundle_signature"]
    keys[sig["key_id"]].verify(bytes.fromhex(sig["bundle_sha256"]), base64.b64decode(sig["signature_b64"]))


def sodium_keys(keyring: Keyring) -> dict[str, VerifyKey]:
    return {key_id: VerifyKey(keyring[key_id].public_key) for key_id in keyring}


def timed_rate(fn: Any, items: list[Any], repeats: int = 3) -> float:
    """Best-of-``repeats`` items per second."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - started)
    return len(items) / best


def with_libsodium(keyring: Keyring) -> Keyring:
    """The same keys, checked by libsodium (the fallback without the Rust extension)."""
    keys = [PinnedKey(k.key_id, k.public_key, k.signer_id, k.revoked_at) for k in keyring.values()]
    for key in keys:
        object.__setattr__(key, "verifier", SodiumKey(key.public_key))
    return Keyring(keys)


def single_core(path: Path, keyring: Keyring, count: int, rounds: int = 5) -> dict[str, Any]:
    """Interleaved rounds (each measure once per round); the best rate of each, and the
    range of the per-round ratios to the floor."""
    items = sample(path, count)
    settings = WorkerConfig(keyring)
    keys = sodium_keys(keyring)
    sodium = with_libsodium(keyring)
    measures = {
        "floor": lambda d: floor_once(d, keys),
        "verify": lambda d: verify_bundle(parse_bundle(d), keyring),
        "verify_libsodium": lambda d: verify_bundle(parse_bundle(d), sodium),
        "verify_and_rows": lambda d: process_one(RawBundle(d, Source("bench")), settings),
    }
    rates: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(rounds):
        for name, fn in measures.items():
            rates[name].append(timed_rate(fn, items, repeats=1))
    out: dict[str, Any] = {"bundles": len(items), "rounds": rounds}
    for name, values in rates.items():
        out[f"{name}_per_s"] = max(values)
        if name != "floor":
            ratios = [value / floor for value, floor in zip(values, rates["floor"], strict=True)]
            out[f"{name}_vs_floor"] = max(values) / max(rates["floor"])
            out[f"{name}_vs_floor_range"] = [min(ratios), max(ratios)]
    return out


def parallel(path: Path, keyring: Keyring, limit_files: int) -> dict[str, float]:
    files = expand_paths(bundle_files(path)[:limit_files])
    out: dict[str, float] = {}
    for workers in (1, os.cpu_count() or 1):
        started = time.perf_counter()
        report = run(files, keyring=keyring, workers=workers)
        elapsed = time.perf_counter() - started
        assert report.rejected == 0, report.rejections[:3]
        out[f"workers_{workers}_per_s"] = report.seen / elapsed
    cores = os.cpu_count() or 1
    out["scaling"] = out[f"workers_{cores}_per_s"] / out["workers_1_per_s"]
    return out


def end_to_end_child(path: str, keyring_path: str) -> None:
    """Run in a fresh process: load everything into memory, print JSON figures."""
    files = bundle_files(Path(path))
    keyring = resolve_keyring(keyring_path)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    store = MemoryStore()
    started = time.perf_counter()
    report = run(files, keyring=keyring, store=store)
    elapsed = time.perf_counter() - started
    gc.collect()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    papers = store.counts().nodes.get("Paper", 0)
    print(
        json.dumps(
            {
                "bundles": report.seen,
                "rejected": report.rejected,
                "accepted": report.accepted,
                "stale": report.stale,
                "duplicate": report.duplicate,
                "papers": papers,
                "seconds": elapsed,
                "bundles_per_s": report.seen / elapsed,
                "peak_rss_mb": rss_after / 1024,
                "worker_peak_rss_mb": children / 1024,
                "rss_growth_per_100k_papers_mb": (rss_after - rss_before) / 1024 * 100_000 / max(papers, 1),
                "nodes": store.counts().nodes,
                "edges": store.counts().edges,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--corpus", help="a corpus folder written by `python -m pith_graph.testing.corpus`")
    parser.add_argument("--sample", type=int, default=3000, help="bundles for the one-core figures")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        end_to_end_child(*args.child)
        return
    path = corpus(args.n, args.corpus)
    keyring = resolve_keyring(str(path / "keyring.json"))
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
        "corpus": str(path),
    }
    print("one core: floor vs ours ...", flush=True)
    results["one_core"] = single_core(path, keyring, args.sample)
    print(json.dumps(results["one_core"], indent=2), flush=True)
    print("parallel scaling (2 shards) ...", flush=True)
    results["parallel"] = parallel(path, keyring, 2)
    print(json.dumps(results["parallel"], indent=2), flush=True)
    print("end-to-end load into memory (fresh process) ...", flush=True)
    child = subprocess.run(
        [sys.executable, __file__, "--child", str(path), str(path / "keyring.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    results["end_to_end"] = json.loads(child.stdout)
    print(json.dumps(results["end_to_end"], indent=2), flush=True)
    save(results, "loader.json")


if __name__ == "__main__":
    main()
