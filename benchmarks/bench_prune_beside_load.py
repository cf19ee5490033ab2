"""Removals beside loads on Neo4j: how many times either is retried.

    .venv/bin/python benchmarks/bench_prune_beside_load.py bolt://127.0.0.1:7687 PASSWORD \\
        [--loads 120] [--removals 200] [--sources 1] [--seed 1] [--other load|prune --authors 24] [--processes 1]

Clears the database. One process applies ``--loads`` batches of 2-10 bundles (random versions
1-4 and builds of ``--sources`` arXiv ids, 2401.00001 on, one signer), another removes 1-2 random
papers of them ``--removals`` times (``Neo4jStore.remove_papers``, what ``pith-graph prune``
runs); each counts the retries ``pith_graph.loader.stores.neo4j`` logs (WARNING: a deadlock or
other transient error) and its races (INFO), and prints each retry's message.

``--other``: signers sharing authors instead (each paper has 3-6 of ``--authors`` names, its
own pick per version and build). The first process loads the first signer's papers (2401.*);
the other, ``--removals`` times, applies a batch of the second signer's (2402.*, as many source
ids) and, with ``prune``, then removes 1-2 of that signer's stored papers (found as ``prune``
finds them, by key). Neither shares a source id or a signer with the other: only authors and
categories. ``--processes N``: N of each side, each with a signer and source ids of its own
(2401.*-2412.*; without ``--other``, N of each side on the one signer's source ids). Each
process reports its time per operation too.
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
#: With --other, each process has a signer of its own: SIGNER and these.
OTHERS = [
    SignerIdentity.from_seed(
        f"prune-beside-load-{i}".encode(), key_id=f"bench-key-{i}", signer_id=f"other-{i}.invalid"
    )
    for i in range(1, 12)
]
KEYRING = resolve_keyring([PinnedKey(s.key_id, s.public_key, s.signer_id) for s in (SIGNER, *OTHERS)])
BUILDS = ("2026-07-02T00:00:00Z", "2026-07-03T00:00:00Z", "2026-07-04T00:00:00Z")


def corpus(sources: int, signer: int = 0, authors: int = 0) -> list[PaperRows]:
    """Every bundle the load picks from: 4 versions x 3 builds of each source id (``signer``:
    SIGNER's, else OTHERS[signer - 1]'s, of month 2401 + signer; ``authors``: each paper has
    3-6 of that many shared names, else Ann Lee and Bo Chen)."""
    found = []
    month = f"24{signer + 1:02d}"
    for number in range(1, sources + 1):
        for version in (1, 2, 3, 4):
            for built_at in BUILDS:
                pick = random.Random(f"{month}.{number}-{version}-{built_at}")
                names = ["Ann Lee", "Bo Chen"]
                if authors:
                    names = sorted(
                        pick.sample([f"Author {i:03d}" for i in range(authors)], pick.randint(3, 6))
                    )
                spec = PaperSpec(
                    f"{month}.{number:05d}", version, "Sparse attention for graphs", names,
                    "We study sparse attention.", "cs.LG", ["stat.ML"],
                    "http://creativecommons.org/licenses/by/4.0/", "2024-01-05T10:00:00Z",
                    "2026-07-01T00:00:00Z", built_at,
                )  # fmt: skip
                identity = OTHERS[signer - 1] if signer else SIGNER
                bundle = orjson.loads(orjson.dumps(build_bundle(spec, identity)))
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


def side(kind: str, number: int, args: argparse.Namespace, out: Any) -> None:
    counted = Retries()
    logger = logging.getLogger("pith_graph.loader.stores.neo4j")
    logger.setLevel(logging.INFO)
    logger.addHandler(counted)
    rng = random.Random(f"{args.seed}-{kind}" + (f"-{number}" if number else ""))
    other = args.other is not None and kind != "load"
    signer = 2 * number + other if args.other else 0
    rows = corpus(args.sources, signer, args.authors if args.other else 0)
    piths = sorted({r.paper.pith_number for r in rows})
    started = time.monotonic()
    operations = args.loads if kind == "load" else args.removals
    with Neo4jStore.connect(args.uri, "neo4j", args.password) as store:
        for _ in range(operations):
            if kind == "load" or other:
                store.apply(rng.sample(rows, rng.randint(2, 10)), KEYRING.rank)
            if other and args.other == "prune":
                piths = [pith for pith, _, _ in store.papers_signed_with([OTHERS[signer - 1].key_id])]
            if kind != "load" and args.other != "load":
                store.remove_papers(rng.sample(piths, min(len(piths), rng.randint(1, 2))))
    seconds = time.monotonic() - started
    out.put((f"{kind}{number or ''}", counted.retries, counted.races, seconds, 1000 * seconds / operations))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("uri")
    parser.add_argument("password")
    parser.add_argument("--loads", type=int, default=120)
    parser.add_argument("--removals", type=int, default=200)
    parser.add_argument("--sources", type=int, default=1)
    parser.add_argument("--seed", default="1")
    parser.add_argument("--other", choices=("load", "prune"), help="a second signer sharing authors")
    parser.add_argument("--authors", type=int, default=24, help="with --other: the shared names")
    parser.add_argument("--processes", type=int, default=1, help="of each side")
    args = parser.parse_args()
    with Neo4jStore.connect(args.uri, "neo4j", args.password) as store:
        store.ensure_schema()
        store.clear()
    out: Any = multiprocessing.Queue()
    kinds = ("load", "other" if args.other else "prune")
    sides = [
        multiprocessing.Process(target=side, args=(kind, number, args, out), name=f"{kind}{number or ''}")
        for number in range(args.processes)
        for kind in kinds
    ]
    for process in sides:
        process.start()
    for process in sides:
        process.join()
    if any(process.exitcode for process in sides):
        raise SystemExit("a side failed")
    results = sorted(out.get() for _ in sides)
    detail = ", ".join(f"{k}: {n} retries, {r} races, {s:.1f} s, {o:.0f} ms/op" for k, n, r, s, o in results)
    total = sum(r[1] for r in results)
    mode = f", other signer: {args.other}, {args.authors} authors" if args.other else ""
    print(f"seed {args.seed}, {args.sources} source ids{mode}: {total} retries ({detail})")


if __name__ == "__main__":
    main()
