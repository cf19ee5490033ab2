"""A filtered listing's facets on Neo4j: today's statement against the one before 0.7.0's
last change (``OLD_FACET_COUNTS`` below, kept here as the baseline).

Usage:
  python benchmarks/bench_listing_facets.py BOLT_URI PASSWORD_FILE [--rounds N] [category=CODE|archive=NAME ...]

Listings are ``category=CODE`` or ``archive=NAME`` (default: categories of about 2k, 8k,
20k and 99k papers and the archive ``cs`` of the 238k-paper corpus of ``bench_import.py``).
For each, all five facets (``first`` 100, as a frontend's filter panel asks) by both
statements, interleaved, alternating which goes first, after one untimed warm-up each;
both answers are compared when both succeed. Both run through the reader's own session
(``Neo4jReader._rows``), and each includes turning the row into the answer. Prints the median, min and max seconds of
each, the median ratio, and the transaction memory the server charged each (``PROFILE``'s
``GlobalMemory``: what it compares to ``db.memory.transaction.max``). The old statement
ordered each facet after collecting the listing's papers, and Neo4j charges a Sort or Top
the collected list for every row it holds; the new one orders nothing in Neo4j.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import neo4j

from pith_graph.api.reads import cypher_discovery as cypher
from pith_graph.api.reads.discovery import FACETS, Listing, top_counts
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.neo4j_discovery import listing_checks, listing_parameters, listing_start
from pith_graph.api.reads.records import PaperFilter

FIRST = 100
DEFAULT_LISTINGS = [
    "category=math.NT",
    "category=math.PR",
    "category=math.OC",
    "category=cs.LG",
    "archive=cs",
]

# The ``$first`` groups with the highest ``n``, when the rows so far are (group, n).
_OLD_TOP_GROUPS = """WITH n, collect(group) AS groups
ORDER BY n DESC
WITH collect({n: n, groups: groups}) AS ranks
WITH reduce(top = [], rank IN ranks |
  CASE WHEN size(top) >= $first THEN top ELSE top + [g IN rank.groups | {group: g, n: rank.n}] END) AS top
UNWIND top AS row
WITH row.group AS group, row.n AS n"""
OLD_FACET_COUNTS = {
    "years": "WITH p.submittedYear AS value, count(*) AS n",
    "licenses": "WITH p.license AS value, count(*) AS n",
    "authors": (
        f"MATCH (p)<-[:AUTHORED]-(a)\nWITH a AS group, count(*) AS n\n{_OLD_TOP_GROUPS}\n"
        "WITH group.name AS value, n"
    ),
}


def old_statement(start: str, checks: frozenset[str]) -> str:
    """The facets statement as it was (8fcc2c4), all five facets."""
    where = " AND ".join(cypher.FILTER_CHECKS[name] for name in sorted(checks - {start})) or "true"
    parts = [f"{cypher.LISTING_STARTS[start]}\nWITH p WHERE {where}\nWITH collect(p) AS ps"]
    for facet, counts in OLD_FACET_COUNTS.items():
        body = counts.replace("\n", "\n  ")
        parts.append(
            f"CALL (ps) {{\n  UNWIND ps AS p\n  {body}\n  ORDER BY n DESC, value ASC\n  LIMIT $first\n"
            f"  RETURN collect({{value: value, count: n}}) AS {facet}\n}}"
        )
    parts.append(cypher.CATEGORY_COMBINATIONS)
    parts.append("RETURN " + ", ".join([*OLD_FACET_COUNTS, "combinations"]))
    return "\n".join(parts) + "\n"


def _old_answer(row: Any) -> dict[str, list[tuple[str, int]]]:
    found: dict[str, list[tuple[str, int]]] = {}
    for facet in FACETS:
        if facet in ("categories", "archives"):
            counts: dict[str, int] = {}
            for combination in row["combinations"]:
                for value in set(combination["codes" if facet == "categories" else "archives"]):
                    counts[value] = counts.get(value, 0) + int(combination["count"])
            found[facet] = [(c.value, c.count) for c in top_counts(counts, FIRST)]
        else:
            found[facet] = [(str(item["value"]), int(item["count"])) for item in row[facet]]
    return found


def _summary(found: list[float]) -> str:
    if not found:
        return "failed"
    return f"{statistics.median(found):.3f} ({min(found):.3f}-{max(found):.3f})"


def listing_spec(spec: str) -> str:
    """``category=CODE`` or ``archive=NAME``, checked (an argparse type: else a usage error)."""
    kind, equals, value = spec.partition("=")
    if kind not in ("category", "archive") or not equals or not value:
        raise argparse.ArgumentTypeError(f"{spec!r}: expected category=CODE or archive=NAME")
    return spec


def _listing(spec: str) -> Listing:
    kind, _, value = listing_spec(spec).partition("=")
    return Listing(PaperFilter(**{kind: value}))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("uri", help="Bolt URI of the server holding the corpus")
    parser.add_argument("password_file", help="a file holding user neo4j's password")
    parser.add_argument(
        "listings",
        nargs="*",
        type=listing_spec,
        help="category=CODE or archive=NAME (default: five of bench_import.py's corpus)",
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_intermixed_args(argv)  # listings after --rounds too, as the usage shows
    uri, password_file, rounds = args.uri, args.password_file, args.rounds
    specs = args.listings or DEFAULT_LISTINGS
    password = Path(password_file).read_text().strip()
    driver = neo4j.GraphDatabase.driver(uri, auth=("neo4j", password))
    reader = Neo4jReader.connect(uri, "neo4j", password, "neo4j", timeout=600)

    def run_old(listing: Listing) -> tuple[float, Any]:
        statement = old_statement(listing_start(listing), listing_checks(listing))
        start = time.perf_counter()
        # as the reader runs its own
        records = reader._rows(statement, first=FIRST, **listing_parameters(listing))
        return time.perf_counter() - start, _old_answer(records[0])

    def run_new(listing: Listing) -> tuple[float, Any]:
        start = time.perf_counter()
        found = reader.facet_counts(listing, FACETS, FIRST)
        seconds = time.perf_counter() - start
        return seconds, {facet: [(c.value, c.count) for c in found[facet]] for facet in FACETS}

    def charged(statement: str, listing: Listing) -> str:
        try:
            with driver.session(database="neo4j") as session:
                result = session.run("PROFILE " + statement, first=FIRST, **listing_parameters(listing))
                result.consume()
                memory = result.consume().profile["args"].get("GlobalMemory", 0)
            return f"{memory / 2**20:.1f} MiB"
        except neo4j.exceptions.Neo4jError as error:
            return f"refused ({(error.code or '').rsplit('.', 1)[-1]})"

    print(f"{'listing':24} {'old s (min-max)':>22} {'new s (min-max)':>22} {'new/old':>8}  charged old / new")
    for spec in specs:
        listing = _listing(spec)
        papers = reader.count_listing(listing)
        memory_old = charged(old_statement(listing_start(listing), listing_checks(listing)), listing)
        memory_new = charged(
            cypher.facets_statement(listing_start(listing), listing_checks(listing), tuple(FACETS)), listing
        )
        times: dict[str, list[float]] = {"old": [], "new": []}
        paths = {"old": run_old, "new": run_new}
        failed = set()
        for index in range(rounds + 1):  # the first round warms up, untimed
            order = ["old", "new"] if index % 2 == 0 else ["new", "old"]
            answers = {}
            for name in order:
                if name in failed:
                    continue
                try:
                    seconds, answers[name] = paths[name](listing)
                except Exception as error:  # the old statement may run out of memory
                    print(f"  {spec}: {name} failed: {str(error)[:160]}")
                    failed.add(name)
                    continue
                if index:
                    times[name].append(seconds)
            if len(answers) == 2:
                assert answers["old"] == answers["new"], spec

        ratio = (
            f"{statistics.median(times['new']) / statistics.median(times['old']):.2f}"
            if times["old"] and times["new"]
            else "-"
        )
        label = f"{spec} ({papers})"
        print(
            f"{label:24} {_summary(times['old']):>22} {_summary(times['new']):>22} {ratio:>8}  {memory_old} / {memory_new}"
        )
    reader.close()
    driver.close()


if __name__ == "__main__":
    main(sys.argv[1:])
