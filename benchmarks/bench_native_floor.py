"""Our verification, step by step, against a native floor of the same work, on one core.

    .venv/bin/python benchmarks/bench_native_floor.py [--n 100000] [--sample 3000] [--rounds 5]

Would a verifier written in Rust close issue 10's import aims? ``benchmarks/native_floor/``
(built here with ``cargo build --release``) does in Rust only the work no verifier can skip:
parse each bundle (serde_json), write the canonical bytes of the five digested parts
(``canonical_record``, each event's content, the state, the bundle), hash and compare them
(SHA-256), and check the four Ed25519 signatures (ed25519-dalek's ``verify_strict``, as our
extension does). It refuses to report unless every digest and signature checked.

In ``--rounds`` interleaved rounds over the same ``--sample`` bundles, this times the native
floor (in its own process, bundles already in memory) and, in this process, the same phases
of ours, each the functions :func:`~pith_graph.loader.verify.verify_bundle` runs:

* parse: ``parse_bundle`` (orjson, plus the duplicate-key and depth checks);
* digests: the five canonical encodings and hashes (orjson, hashlib);
* signatures: the four checks (the Rust extension);
* other checks: shape, trust, dates, identifiers, record and state consistency (the rest of
  ``verify_bundle``, step by step);
* rows: ``build_rows``.

Prints the best round of each in microseconds per bundle (totals are sums of phases), and
ours / native per phase and overall (with the overall ratio's range over the rounds,
``total_range_over_rounds``); writes benchmarks/results/native-floor.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_loader import ROOT, corpus, sample, save, timed_rate  # benchmarks/ is on sys.path

from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.parse import parse_bundle
from pith_graph.loader.rows import build_rows
from pith_graph.loader.shape import check_shape
from pith_graph.loader.trust import check_not_future, check_trust
from pith_graph.loader.verify import (
    DEFAULT_CLOCK_SKEW,
    _check_digests,
    _check_identifiers,
    _check_record_consistency,
    _check_signatures,
    _check_state,
    verify_bundle,
)

CRATE = ROOT / "benchmarks" / "native_floor"
BINARY = CRATE / "target" / "release" / "native-floor"


def build() -> None:
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=CRATE, check=True)


def native_round(bundles_file: Path, keyring: Keyring) -> dict[str, float]:
    """The native floor over the file (its best of three passes: the first warms its heap, as
    this process's is warm)."""
    keys = [f"{key_id}={keyring[key_id].public_key.hex()}" for key_id in keyring]
    done = subprocess.run(
        [str(BINARY), str(bundles_file), "3", *keys], capture_output=True, text=True, check=True
    )
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def per_bundle_us(work: Callable[[Any], object], items: list[Any]) -> float:
    return 1e6 / timed_rate(work, items, repeats=1)


def other_checks(keyring: Keyring) -> Callable[[dict[str, Any]], None]:
    """The steps of ``verify_bundle`` besides the digests and signatures, in its order."""
    now = time.time()

    def run(bundle: dict[str, Any]) -> None:
        check_shape(bundle)
        check_trust(bundle, keyring)
        check_not_future(bundle, now, DEFAULT_CLOCK_SKEW)
        _check_identifiers(bundle)
        _check_record_consistency(bundle)
        _check_state(bundle)

    return run


def ours_round(items: list[bytes], keyring: Keyring) -> dict[str, float]:
    """Our phases, each timed over every bundle (parsed bundles are reused, never altered)."""
    bundles = [parse_bundle(data) for data in items]
    verified = [verify_bundle(bundle, keyring) for bundle in bundles]  # all of them must pass
    phases = {
        "parse_us": per_bundle_us(parse_bundle, items),
        "digests_us": per_bundle_us(_check_digests, bundles),
        "signatures_us": per_bundle_us(lambda bundle: _check_signatures(bundle, keyring), bundles),
        "other_checks_us": per_bundle_us(other_checks(keyring), bundles),
        "rows_us": per_bundle_us(lambda bundle: build_rows(bundle, keyring), verified),
    }
    return {**phases, "total_us": sum(phases.values())}


def ours_vs_native(ours: list[dict[str, float]], native: list[dict[str, float]]) -> dict[str, Any]:
    """Ours over the native floor per phase, best round against best round; and the range
    ([min, max]) of the total's ratio, round by round (each round times both)."""
    best_native = {name: min(r[name] for r in native) for name in native[0] if name != "bundles"}
    best_ours = {name: min(r[name] for r in ours) for name in ours[0]}
    ratios = [o["total_us"] / n["total_us"] for o, n in zip(ours, native, strict=True)]
    return {
        "parse": best_ours["parse_us"] / best_native["parse_us"],
        "digests": best_ours["digests_us"] / (best_native["canon_us"] + best_native["hash_us"]),
        "signatures": best_ours["signatures_us"] / best_native["signatures_us"],
        "total": best_ours["total_us"] / best_native["total_us"],
        "total_range_over_rounds": [min(ratios), max(ratios)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="the corpus to sample (generated if missing)")
    parser.add_argument("--corpus", help="a corpus folder written by `python -m pith_graph.testing.corpus`")
    parser.add_argument("--sample", type=int, default=3000, help="bundles timed in each round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    build()
    path = corpus(args.n, args.corpus)
    keyring = resolve_keyring(str(path / "keyring.json"))
    items = sample(path, args.sample)
    native: list[dict[str, float]] = []
    ours: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        bundles_file = Path(folder) / "bundles.jsonl"
        bundles_file.write_bytes(b"".join(data.strip() + b"\n" for data in items))
        for round_ in range(args.rounds):
            native.append(native_round(bundles_file, keyring))
            ours.append(ours_round(items, keyring))
            print(
                f"round {round_ + 1}: native {native[-1]['total_us']:.0f} us, ours {ours[-1]['total_us']:.0f} us"
            )
    best_native = {name: min(r[name] for r in native) for name in native[0] if name != "bundles"}
    best_ours = {name: min(r[name] for r in ours) for name in ours[0]}
    results = {
        "bundles": len(items),
        "rounds": args.rounds,
        "load_average": os.getloadavg(),
        "native_us": best_native,
        "ours_us": best_ours,
        "ours_vs_native": ours_vs_native(ours, native),
        "signatures_share_of_native": best_native["signatures_us"] / best_native["total_us"],
    }
    print(json.dumps(results, indent=2))
    save(results, "native-floor.json")


if __name__ == "__main__":
    main()
