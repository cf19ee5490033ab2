"""What folding ``Author.nameFolded`` from the key again (0.9.8's upgrade) costs.

Usage:
  python benchmarks/bench_refold.py memory SNAPSHOT [--rounds 3]
  python benchmarks/bench_refold.py neo4j BOLT_URI PASSWORD_FILE [--authors 100000] [--rounds 3]

* **memory**: opening a snapshot (``open_saved``, as ``serve --graph`` does), each round in a
  fresh process (a cold fold cache), with today's ``fill_authors`` (every author's key folded,
  set where it differs) and with 0.9.7's (``paperCount`` only: the baseline), interleaved;
  also the time of ``fill_authors`` alone and how many authors it changed (a snapshot written
  by 0.9.7 folds non-ASCII display names, which may differ from the key's).
* **neo4j** (a scratch server: its database is cleared): ``--authors`` authors named as the
  corpus generator names them (``testing.papers``: some beyond ASCII), written as 0.9.7 wrote
  them (``nameFolded`` from the name; one in ten of those beyond ASCII given another, to be
  written again). Timed: the first upgrade (``refold_authors``, what ``pith-graph schema``
  adds), then, interleaved, a pass once up to date (nothing to write) against the scan every
  ``schema`` and load already ran (``upgrade_authors``: the baseline).

Prints medians and ranges (seconds) and ratios; note the host's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _old_fill_authors(graph: object) -> None:
    """0.9.7's ``fill_authors``: only graphs saved before 0.3 (no ``paperCount``) changed."""
    from pith_graph.api.reads.folding import folded_name

    for node, data in graph.nodes(data=True):  # type: ignore[attr-defined]
        if data.get("label") == "Author" and "paperCount" not in data:
            data["nameFolded"] = folded_name(data["name"])
            data["paperCount"] = len(graph.succ[node])  # type: ignore[attr-defined]


def _child(snapshot: str, variant: str) -> None:
    from pith_graph.loader.stores import memory, names

    timed = {"fill": 0.0}
    fill = names.fill_authors if variant == "new" else _old_fill_authors

    def counted(graph: object) -> None:
        started = time.perf_counter()
        fill(graph)  # type: ignore[arg-type]
        timed["fill"] += time.perf_counter() - started

    memory.fill_authors = counted  # type: ignore[assignment]
    started = time.perf_counter()
    graph = memory.open_saved(snapshot).graph
    opened = time.perf_counter() - started
    authors = [data for _, data in graph.nodes(data=True) if data.get("label") == "Author"]
    print(json.dumps({"open": opened, "fill": timed["fill"], "authors": len(authors)}))


def _memory(snapshot: str, rounds: int) -> None:
    from pith_graph.api.reads.folding import folded_name
    from pith_graph.loader.stores.snapshot import read_snapshot

    graph = read_snapshot(snapshot).graph
    authors = [data for _, data in graph.nodes(data=True) if data.get("label") == "Author"]
    changed = sum(1 for data in authors if data.get("nameFolded") != folded_name(data["nameKey"]))
    ascii_names = sum(1 for data in authors if data["name"].isascii())
    print(
        f"{snapshot}: {len(authors):,} authors, {ascii_names / len(authors):.0%} ASCII names; {changed:,} refolded"
    )
    del graph, authors
    found: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for _ in range(rounds):
        for variant in ("old", "new"):
            done = subprocess.run(
                [sys.executable, __file__, "child", snapshot, variant],
                capture_output=True,
                text=True,
                check=True,
            )
            found[variant].append(json.loads(done.stdout))
    for variant, label in (("old", "0.9.7 fill_authors (baseline)"), ("new", "0.9.8 fill_authors")):
        opens = [r["open"] for r in found[variant]]
        fills = [r["fill"] for r in found[variant]]
        print(
            f"{label}: open {statistics.median(opens):.2f} s ({min(opens):.2f}-{max(opens):.2f}),"
            f" fill_authors {statistics.median(fills) * 1000:.0f} ms ({min(fills) * 1000:.0f}-{max(fills) * 1000:.0f})"
        )
    ratios = [n["open"] / o["open"] for o, n in zip(found["old"], found["new"], strict=True)]
    print(f"open, 0.9.8 / 0.9.7, per round: {', '.join(f'{r:.3f}' for r in ratios)}")
    print(f"load average {os.getloadavg()[0]:.1f}")


def _names(count: int) -> list[str]:
    from pith_graph.loader.identifiers import author_name_key, split_authors
    from pith_graph.testing.papers import generate_papers

    found: dict[str, str] = {}
    for spec in generate_papers(count * 2, seed=7):
        for key, name in split_authors(", ".join(spec.authors)):
            found.setdefault(key, name)
        if len(found) >= count:
            break
    assert all(author_name_key(name) == key for key, name in found.items())
    return list(found.values())[:count]


def _neo4j(uri: str, password_file: str, count: int, rounds: int) -> None:
    import neo4j

    from pith_graph.api.reads.folding import folded_name
    from pith_graph.loader.identifiers import author_name_key
    from pith_graph.loader.stores.neo4j import Neo4jStore
    from pith_graph.loader.stores.neo4j_names import refold_authors, upgrade_authors

    names = _names(count)
    beyond = sum(1 for name in names if not name.isascii())
    print(f"{len(names):,} authors, {beyond / len(names):.0%} of names beyond ASCII")
    store = Neo4jStore.connect(uri, password=Path(password_file).read_text().strip())
    try:
        store.clear()
        store.ensure_schema()
        rows = [[author_name_key(n), n, folded_name(n)] for n in names]  # as 0.9.7 wrote them
        for row in rows[::10]:
            row[2] += "" if row[1].isascii() else " stale"
        with store.driver.session(database=store.database) as session:
            for at in range(0, len(rows), 10_000):
                session.run(
                    "UNWIND $rows AS row CREATE (:Author {nameKey: row[0], name: row[1], nameFolded: row[2],"
                    " paperCount: 1})",
                    rows=rows[at : at + 10_000],
                ).consume()
            started = time.perf_counter()
            changed = refold_authors(session)
            print(f"first upgrade: {changed:,} authors refolded in {time.perf_counter() - started:.2f} s")
            timings: dict[str, list[float]] = {"scan": [], "refold": []}
            for _ in range(rounds + 1):  # the first of each: a warm-up, left out
                for what, step in (("scan", upgrade_authors), ("refold", refold_authors)):
                    started = time.perf_counter()
                    step(session)
                    timings[what].append(time.perf_counter() - started)
        for what, label in (("scan", "upgrade_authors (baseline)"), ("refold", "refold_authors")):
            kept = timings[what][1:]
            print(
                f"{label}: {statistics.median(kept) * 1000:.0f} ms ({min(kept) * 1000:.0f}-{max(kept) * 1000:.0f})"
            )
        ratios = [r / s for s, r in zip(timings["scan"][1:], timings["refold"][1:], strict=True)]
        print(f"refold / scan, per round: {', '.join(f'{r:.2f}' for r in ratios)}")
        store.clear()
    finally:
        store.close()
    print(f"load average {os.getloadavg()[0]:.1f}")
    del neo4j


def main(argv: list[str]) -> int:
    if argv[:1] == ["child"]:
        _child(argv[1], argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    mem = sub.add_parser("memory")
    mem.add_argument("snapshot")
    mem.add_argument("--rounds", type=int, default=3)
    neo = sub.add_parser("neo4j")
    neo.add_argument("uri")
    neo.add_argument("password_file")
    neo.add_argument("--authors", type=int, default=100_000)
    neo.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.mode == "memory":
        _memory(args.snapshot, args.rounds)
    else:
        _neo4j(args.uri, args.password_file, args.authors, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
