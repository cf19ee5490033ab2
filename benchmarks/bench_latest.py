"""``latestVersions`` on Neo4j: the ``Paper.isLatest`` property (0.9.4) against the NOT EXISTS
subquery per paper it replaced (``cypher_parts.LATEST_SUBQUERY``, the baseline), and what
keeping the property costs the loads.

Usage:
  python benchmarks/bench_latest.py BOLT_URI PASSWORD_FILE [--sizes 3000,20000] [--rounds 3]
      [--load-rounds 2] [--corpus DIR]

For each size, a corpus of ``pith_graph.testing.corpus.write_corpus`` (several versions of
~20% of its ids) is loaded into the server's database (cleared first: use a scratch server):

* **load**: the transactional load (``pipeline.run``, batch 5000) with the maintenance and
  without it (a batch's own decision, ``neo4j_latest.latest_updates``, by none, and
  ``cypher.REFRESH_LATEST`` by a statement doing nothing), the bulk
  import's passes up to the CSV files (``bulk_import(csv_only=...)``, no server) with and
  without appending ``isLatest``, and a load into the memory store with and without marking
  (``latest.mark_latest``), interleaved, ``--load-rounds`` times each (bundles/s);
* **reads** (once loaded): a page of 20 (newest first, oldest first), ``totalCount`` and the
  five facets of ``papers(filter: {latestVersions: true})``, each by today's statement and by
  the same statement with the subquery in place of the property: ``PROFILE`` db hits and the
  median wall time of ``--rounds`` runs (interleaved, after a warm-up), answers compared.

The per-paper cost of counting at the largest size projects 2.5M papers. Prints a table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import neo4j

from pith_graph.api.reads import cypher_discovery, cypher_pages
from pith_graph.api.reads.cypher_parts import LATEST, LATEST_SUBQUERY
from pith_graph.api.reads.discovery import FACETS, Listing
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.neo4j_discovery import listing_checks, listing_parameters, listing_start
from pith_graph.api.reads.records import EVERYTHING, PaperFilter
from pith_graph.loader.bulk import bulk_import, merge
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores import cypher, memory, neo4j_batch
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_latest import LatestUpdates
from pith_graph.testing.corpus import write_corpus

PROJECTED = 2_500_000
NO_REFRESH = "UNWIND $sources AS source RETURN count(source) AS n"


def db_hits(plan: dict[str, Any]) -> int:
    return int(plan.get("dbHits", 0)) + sum(db_hits(child) for child in plan.get("children", ()))


def _corpus(folder: Path, n: int) -> tuple[list[str], Path]:
    where = folder / f"corpus-{n}"
    if not (where / "keyring.json").exists():
        write_corpus(where, n, workers=2)
    return sorted(str(p) for p in where.glob("bundles-*")), where / "keyring.json"


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def loads(
    uri: str, password: str, paths: list[str], keyring_file: Path, n: int, rounds: int, work: Path
) -> None:
    """Transactional and bulk (decide + CSV) rates with and without the maintenance, interleaved."""
    keyring = resolve_keyring(keyring_file)
    refresh, append, mark = cypher.REFRESH_LATEST, merge.with_latest, memory.mark_latest
    decide = neo4j_batch.latest_updates
    rates: dict[str, list[float]] = {
        f"{way} {kept}": [] for way in ("tx", "bulk", "memory") for kept in ("with", "without")
    }
    store = Neo4jStore.connect(uri, password=password)
    store.ensure_schema()
    try:
        for index in range(rounds):
            for kept in (True, False) if index % 2 == 0 else (False, True):
                cypher.REFRESH_LATEST = refresh if kept else NO_REFRESH
                neo4j_batch.latest_updates = decide if kept else (lambda *_: LatestUpdates())  # type: ignore[assignment]
                merge.with_latest = append if kept else (lambda row, _latest: row)  # type: ignore[assignment]
                memory.mark_latest = mark if kept else (lambda _nodes, _piths: None)  # type: ignore[assignment]
                name = "with" if kept else "without"
                store.clear()
                seconds = _timed(lambda: run(paths, keyring=keyring, store=store, workers=2, batch_size=5000))
                rates[f"tx {name}"].append(n / seconds)
                out = Path(tempfile.mkdtemp(dir=work))
                seconds = _timed(
                    lambda out=out: bulk_import(
                        paths, keyring=keyring, data=None, csv_only=out / "csv", workers=2, work_folder=out
                    )
                )
                rates[f"bulk {name}"].append(n / seconds)
                seconds = _timed(lambda: run(paths, keyring=keyring, store=MemoryStore(), workers=2))
                rates[f"memory {name}"].append(n / seconds)
    finally:
        cypher.REFRESH_LATEST, merge.with_latest, memory.mark_latest = refresh, append, mark
        neo4j_batch.latest_updates = decide
        store.clear()
        run(paths, keyring=keyring, store=store, workers=2, batch_size=5000)  # kept, for the reads
        store.close()
    for name, found in rates.items():
        print(
            f"  load {name:13} {statistics.median(found):8.0f} bundles/s  ({', '.join(f'{r:.0f}' for r in found)})"
        )


def reads(uri: str, password: str, rounds: int) -> float:
    """The four reads by property and by subquery; returns the count's seconds per paper."""
    reader = Neo4jReader.connect(uri, "neo4j", password, "neo4j", timeout=600)
    where = PaperFilter(latest_versions=True)
    listing = Listing(where)
    start, checks, parameters = listing_start(listing), listing_checks(listing), listing_parameters(listing)
    embed, paper_params, _decode = reader._papers(EVERYTHING)
    page = {"limit": 21, **parameters, **paper_params}
    statements = {
        "page newest": (cypher_pages.list_papers_statement(start, embed, "newest", checks, False), page),
        "page oldest": (cypher_pages.list_papers_statement(start, embed, "oldest", checks, False), page),
        "totalCount": (cypher_discovery.count_statement(start, checks), parameters),
        "facets": (
            cypher_discovery.facets_statement(start, checks, tuple(FACETS)),
            {"first": 100, **parameters},
        ),
    }
    papers = int(reader._rows("MATCH (p:Paper) RETURN count(p) AS n")[0]["n"])
    driver = neo4j.GraphDatabase.driver(uri, auth=("neo4j", password))
    per_paper = 0.0
    print(
        f"  {'read':12} {'hits property':>14} {'hits subquery':>14} {'ms property':>12} {'ms subquery':>12}"
    )
    for name, (statement, params) in statements.items():
        old = statement.replace(LATEST, LATEST_SUBQUERY)
        assert old != statement, name
        hits = {}
        with driver.session(database="neo4j") as session:
            for label, text in (("new", statement), ("old", old)):
                result = session.run("PROFILE " + text, params)
                result.data()
                hits[label] = db_hits(result.consume().profile)
        times: dict[str, list[float]] = {"new": [], "old": []}
        for index in range(rounds + 1):
            answers = {}
            for label in ("new", "old") if index % 2 == 0 else ("old", "new"):
                text = statement if label == "new" else old
                begun = time.perf_counter()
                answers[label] = reader._rows(text, **params)
                if index:
                    times[label].append(time.perf_counter() - begun)
            assert answers["new"] == answers["old"], name
        new, old_ms = (statistics.median(times[k]) * 1000 for k in ("new", "old"))
        print(f"  {name:12} {hits['new']:>14,} {hits['old']:>14,} {new:>12.1f} {old_ms:>12.1f}")
        if name == "totalCount":
            per_paper = new / 1000 / papers
            print(
                f"  {'':12} {papers} papers: 2.5M projected {PROJECTED * new / 1000 / papers:.2f} s by property,"
                f" {PROJECTED * old_ms / 1000 / papers:.1f} s by subquery"
            )
    driver.close()
    reader.close()
    return per_paper


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("uri", help="Bolt URI of a scratch server (its database is cleared)")
    parser.add_argument("password_file", help="a file holding user neo4j's password")
    parser.add_argument("--sizes", default="3000,20000", help="bundles per corpus, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load-rounds", type=int, default=2)
    parser.add_argument("--corpus", type=Path, default=None, help="where corpora are written (kept)")
    args = parser.parse_args(argv)
    password = Path(args.password_file).read_text().strip()
    work = args.corpus or Path(tempfile.mkdtemp(prefix="bench-latest-"))
    for n in (int(size) for size in args.sizes.split(",") if size):
        paths, keyring_file = _corpus(work, n)
        print(f"{n} bundles")
        loads(args.uri, password, paths, keyring_file, n, args.load_rounds, work)
        reads(args.uri, password, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
