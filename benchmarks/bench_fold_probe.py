"""What ``serve``'s probe of a 0.9.7 database's ``nameFolded`` costs at start (since 0.9.8).

Usage:
  python benchmarks/bench_fold_probe.py BOLT_URI PASSWORD_FILE [--rounds 5]

Reads a loaded database (nothing written; load a corpus first, e.g. ``pith-graph load
--backend neo4j /tmp/corpus-100000``). Timed, interleaved, the first round a warm-up left
out: the probe (``Neo4jReader.unfolded_author``: the authors whose two folds can differ,
compared in Python; a database up to date is its worst case, every author read), the scan
every ``schema`` and load already runs (``upgrade_authors``: the baseline), and the read
half of ``refold_authors`` (what ``schema`` reads: since 0.9.9 the probe's candidates, all
of them; 0.9.8 compared every author whose name is beyond ASCII, ``bench_refold.py``). Prints how many authors each reads, medians and ranges (ms), the
probe's ratio to the baseline per round; note the host's load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def _refold_reads(session: Any) -> int:
    """``refold_authors`` without its writes (``unfolded_authors``): how many it would write."""
    from pith_graph.loader.stores.neo4j_names import _read, unfolded_authors

    def read(statement: str, **parameters: Any) -> list[dict[str, Any]]:
        return session.execute_read(_read, statement, **parameters)  # type: ignore[no-any-return]

    return sum(len(rows) for rows in unfolded_authors(read))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("uri")
    parser.add_argument("password_file")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    from pith_graph.api.reads.neo4j import Neo4jReader
    from pith_graph.loader.stores import cypher_upgrades
    from pith_graph.loader.stores.neo4j import Neo4jStore
    from pith_graph.loader.stores.neo4j_names import upgrade_authors

    password = Path(args.password_file).read_text().strip()
    store = Neo4jStore.connect(args.uri, password=password)
    reader = Neo4jReader.connect(args.uri, "neo4j", password, store.database, timeout=60)
    try:
        with store.driver.session(database=store.database) as session:
            counts = session.run(
                "MATCH (a:Author) WHERE a.nameKey > $after WITH a ORDER BY a.nameKey LIMIT $scan "
                "RETURN count(a) AS authors, count(CASE WHEN NOT a.name =~ '\\\\p{ASCII}*' THEN 1 END) AS beyond, "
                "count(CASE WHEN a.name IS NOT NFKC NORMALIZED OR a.name =~ $pattern THEN 1 END) AS candidates",
                after="",
                scan=10**9,
                pattern=cypher_upgrades.REFOLDED_PATTERN,
            ).single(strict=True)
            print(
                f"{counts['authors']:,} authors, {counts['beyond']:,} named beyond ASCII, "
                f"{counts['candidates']:,} the probe compares; first differing: {reader.unfolded_author()!r}"
            )
            steps = {
                "upgrade_authors (baseline)": lambda: upgrade_authors(session),
                "probe (unfolded_author)": reader.unfolded_author,
                "refold_authors' reads": lambda: _refold_reads(session),
            }
            timings: dict[str, list[float]] = {name: [] for name in steps}
            for _ in range(args.rounds + 1):
                for name, step in steps.items():
                    started = time.perf_counter()
                    step()
                    timings[name].append(time.perf_counter() - started)
    finally:
        reader.close()
        store.close()
    for name, found in timings.items():
        kept = found[1:]
        print(
            f"{name}: {statistics.median(kept) * 1000:.0f} ms ({min(kept) * 1000:.0f}-{max(kept) * 1000:.0f})"
        )
    base, probe = timings["upgrade_authors (baseline)"][1:], timings["probe (unfolded_author)"][1:]
    print(
        f"probe / baseline, per round: {', '.join(f'{p / b:.2f}' for b, p in zip(base, probe, strict=True))}"
    )
    print(f"load average {', '.join(f'{load:.1f}' for load in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
