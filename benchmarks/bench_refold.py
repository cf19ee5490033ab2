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
  corpus generator names them (``testing.papers``: some beyond ASCII; one in ten of those
  re-spelt with a Mathematical Bold capital, the same key), written as 0.9.7 wrote them
  (``nameFolded`` from the name). Each round, in alternating order, 0.9.8's ``refold_authors``
  (every author named beyond ASCII compared: the baseline) and today's (only the narrow
  filter's candidates, ``cypher_upgrades.AUTHOR_FOLDS``) each upgrade the database (the
  0.9.7 folds written back before each), then pass over it once up to date; each must write
  the same authors, and find nothing the other left. Also timed: the scan every ``schema``
  and load runs (``upgrade_authors``).

Prints medians and ranges and ratios, and the host's load average (``/proc/loadavg``).
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
from typing import Any


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


#: 0.9.8's read of ``refold_authors`` (every author named beyond ASCII, $limit at a time):
#: the baseline of the narrow one (``cypher_upgrades.AUTHOR_FOLDS``, since 0.9.9).
_OLD_AUTHORS_TO_REFOLD = """
MATCH (a:Author)
WHERE a.nameKey > $after AND NOT a.name =~ '\\p{ASCII}*' AND a.nameKey IS NOT NULL AND a.name IS NOT NULL
  AND a.nameFolded IS NOT NULL AND a.paperCount IS NOT NULL
WITH a ORDER BY a.nameKey
RETURN [a.nameKey, a.nameFolded] AS row
LIMIT $limit
"""


def _data(tx: Any, statement: str, /, **parameters: Any) -> list[dict[str, Any]]:
    return tx.run(statement, **parameters).data()  # type: ignore[no-any-return]


def _old_refold_authors(session: Any, batch: int = 5000) -> int:
    """0.9.8's ``refold_authors``: every author named beyond ASCII read and compared."""
    from pith_graph.loader.stores import cypher_upgrades
    from pith_graph.loader.stores.names import folded_words

    after, done = "", 0
    while True:
        found = [
            r["row"] for r in session.execute_read(_data, _OLD_AUTHORS_TO_REFOLD, after=after, limit=batch)
        ]
        rows = [[key, folded] for key, stored in found if (folded := folded_words(key)) != stored]
        if rows:
            session.execute_write(_data, cypher_upgrades.REFOLD_AUTHORS, rows=rows)
            done += len(rows)
        if len(found) < batch:
            return done
        after = found[-1][0]


def _bold(name: str) -> str:
    """``name`` with its first ASCII capital in Mathematical Bold (U+1D400…): the same key, and
    a 0.9.7 ``nameFolded`` that keeps the bold letter (the review's re-spelling)."""
    for at, c in enumerate(name):
        if "A" <= c <= "Z":
            return name[:at] + chr(0x1D400 + ord(c) - ord("A")) + name[at + 1 :]
    return name


def _loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").exists() else "?"


def _neo4j(uri: str, password_file: str, count: int, rounds: int) -> None:
    from pith_graph.api.reads.folding import folded_name
    from pith_graph.loader.identifiers import author_name_key
    from pith_graph.loader.stores import cypher_upgrades
    from pith_graph.loader.stores.names import folded_words
    from pith_graph.loader.stores.neo4j import Neo4jStore
    from pith_graph.loader.stores.neo4j_names import refold_authors, upgrade_authors

    names = _names(count)
    beyond = [at for at, name in enumerate(names) if not name.isascii()]
    for at in beyond[::10]:
        names[at] = _bold(names[at])
    rows = [[author_name_key(n), n, folded_name(n)] for n in names]  # as 0.9.7 wrote them
    assert len({key for key, _, _ in rows}) == len(rows)
    stale = [[key, folded] for key, _, folded in rows if folded != folded_words(key)]
    print(
        f"{len(names):,} authors, {len(beyond) / len(names):.0%} of names beyond ASCII,"
        f" one in ten of those re-spelt with a bold capital; {len(stale):,} with a 0.9.7 fold to write"
    )
    print(f"/proc/loadavg before: {_loadavg()}")
    store = Neo4jStore.connect(uri, password=Path(password_file).read_text().strip())
    steps = {"old": _old_refold_authors, "new": refold_authors}
    timings: dict[str, list[float]] = {
        k: [] for k in ("scan", "old first", "new first", "old up to date", "new up to date")
    }
    try:
        store.clear()
        store.ensure_schema()
        with store.driver.session(database=store.database) as session:
            with session.begin_transaction() as tx:
                candidates = tx.run(
                    "UNWIND $names AS name WITH name WHERE NOT name =~ '\\p{ASCII}*' AND"
                    " (name IS NOT NFKC NORMALIZED OR name =~ $pattern) RETURN count(*) AS n",
                    names=names,
                    pattern=cypher_upgrades.REFOLDED_PATTERN,
                ).single(strict=True)["n"]
            print(f"{candidates:,} candidates (the narrow filter) against {len(beyond):,} named beyond ASCII")
            for at in range(0, len(rows), 10_000):
                session.run(
                    "UNWIND $rows AS row CREATE (:Author {nameKey: row[0], name: row[1], nameFolded: row[2],"
                    " paperCount: 1})",
                    rows=rows[at : at + 10_000],
                ).consume()
            for round_ in range(rounds + 1):  # the first: a warm-up, left out
                order = ("old", "new") if round_ % 2 else ("new", "old")
                started = time.perf_counter()
                upgrade_authors(session)
                timings["scan"].append(time.perf_counter() - started)
                for variant in order:
                    session.run(cypher_upgrades.REFOLD_AUTHORS, rows=stale).consume()  # 0.9.7's again
                    for what in ("first", "up to date"):
                        started = time.perf_counter()
                        changed = steps[variant](session)
                        timings[f"{variant} {what}"].append(time.perf_counter() - started)
                        assert changed == (len(stale) if what == "first" else 0), (variant, what, changed)
                    other = steps["new" if variant == "old" else "old"](session)
                    assert other == 0, f"{variant} left {other} to write"  # each refolds what the other does
        store.clear()
    finally:
        store.close()
    for what, found in timings.items():
        kept = found[1:]
        print(
            f"{what}: {statistics.median(kept) * 1000:.0f} ms ({min(kept) * 1000:.0f}-{max(kept) * 1000:.0f})"
        )
    for what in ("first", "up to date"):
        ratios = [n / o for o, n in zip(timings[f"old {what}"][1:], timings[f"new {what}"][1:], strict=True)]
        print(f"new / old, {what}, per round: {', '.join(f'{r:.3f}' for r in ratios)}")
    print(f"/proc/loadavg after: {_loadavg()}")


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
