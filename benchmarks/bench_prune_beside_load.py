"""Removals beside loads of the same source ids on Neo4j: how many times either is retried.

    .venv/bin/python benchmarks/bench_prune_beside_load.py bolt://127.0.0.1:7687 PASSWORD \\
        [--loads 120] [--removals 200] [--sources 1] [--seed 1]

Clears the database. One process applies ``--loads`` batches of 2-10 bundles (random versions
1-4 and builds of ``--sources`` arXiv ids, 2401.00001 on, one signer), another removes 1-2 random
papers of them ``--removals`` times (``Neo4jStore.remove_papers``, what ``pith-graph prune``
runs); each counts the retries ``pith_graph.loader.stores.neo4j`` logs (WARNING: a deadlock or
other transient error) and its races (INFO), and prints each retry's message.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import random
import time
from typing import Any

import orjson

from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import PinnedKey
from pith_graph.loader.rows import PaperRows, build_rows
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.verify import verify_bundle
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle

SIGNER = SignerIdentity.from_seed(b"prune-beside-load", key_id="bench-key", signer_id="bench.invalid")
KEYRING = resolve_keyring([PinnedKey(SIGNER.key_id, SIGNER.public_key, SIGNER.signer_id)])
BUILDS = ("2026-07-02T00:00:00Z", "2026-07-03T00:00:00Z", "2026-07-04T00:00:00Z")


def corpus(sources: int) -> list[PaperRows]:
    """Every bundle the load picks from: 4 versions x 3 builds of each source id."""
    found = []
    for number in range(1, sources + 1):
        for version in (1, 2, 3, 4):
            for built_at in BUILDS:
                spec = PaperSpec(
                    f"2401.{number:05d}", version, "Sparse attention for graphs", ["Ann Lee", "Bo Chen"],
                    "We study sparse attention.", "cs.LG", ["stat.ML"],
                    "http://creativecommons.org/licenses/by/4.0/", "2024-01-05T10:00:00Z",
                    "2026-07-01T00:00:00Z", built_at,
                )  # fmt: skip
                bundle = orjson.loads(orjson.dumps(build_bundle(spec, SIGNER)))
                found.append(build_rows(verify_bundle(bundle, KEYRING), KEYRING))
    return found


class Retries(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.retries = self.races = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.retries += 1
            print(f"  [{multiprocessing.current_process().name}] {record.getMessage()[:400]}", flush=True)
        elif "raced" in record.getMessage():
            self.races += 1


def side(kind: str, args: argparse.Namespace, out: Any) -> None:
    counted = Retries()
    logger = logging.getLogger("pith_graph.loader.stores.neo4j")
    logger.setLevel(logging.INFO)
    logger.addHandler(counted)
    rng = random.Random(f"{args.seed}-{kind}")
    rows = corpus(args.sources)
    piths = sorted({r.paper.pith_number for r in rows})
    started = time.monotonic()
    with Neo4jStore.connect(args.uri, "neo4j", args.password) as store:
        for _ in range(args.loads if kind == "load" else args.removals):
            if kind == "load":
                store.apply(rng.sample(rows, rng.randint(2, 10)), KEYRING.rank)
            else:
                store.remove_papers(rng.sample(piths, rng.randint(1, 2)))
    out.put((kind, counted.retries, counted.races, time.monotonic() - started))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("uri")
    parser.add_argument("password")
    parser.add_argument("--loads", type=int, default=120)
    parser.add_argument("--removals", type=int, default=200)
    parser.add_argument("--sources", type=int, default=1)
    parser.add_argument("--seed", default="1")
    args = parser.parse_args()
    with Neo4jStore.connect(args.uri, "neo4j", args.password) as store:
        store.ensure_schema()
        store.clear()
    out: Any = multiprocessing.Queue()
    sides = [multiprocessing.Process(target=side, args=(k, args, out), name=k) for k in ("load", "prune")]
    for process in sides:
        process.start()
    for process in sides:
        process.join()
    if any(process.exitcode for process in sides):
        raise SystemExit("a side failed")
    results = sorted(out.get() for _ in sides)
    detail = ", ".join(f"{k}: {n} retries, {r} races, {s:.1f} s" for k, n, r, s in results)
    total = sum(r[1] for r in results)
    print(f"seed {args.seed}, {args.sources} source ids: {total} retries ({detail})")


if __name__ == "__main__":
    main()
