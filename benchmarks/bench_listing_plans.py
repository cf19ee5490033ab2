"""``papers(filter:)`` on Neo4j: the first request of each combination of filters, by the
statement of the filters it has (0.9.14) against one statement per start holding every
filter, each switched off by a null parameter (up to 0.9.13, the baseline).

Usage:
  python benchmarks/bench_listing_plans.py BOLT_URI PASSWORD_FILE [--size 3000] [--rounds 3]
      [--corpus DIR]

A corpus of ``pith_graph.testing.corpus.write_corpus`` is loaded into the server's database
(cleared first: use a scratch server). From one of its papers (the newest version of its
source, with two authors and a cross-list) come 18 filter combinations a frontend sends:
each filter alone, then pairs and more. For each, with the server's query caches cleared
(``db.clearQueryCaches()``), its first page of 20 (every field embedded), then the same page
again (planned), by today's statement and by the baseline, interleaved (which goes first
alternates), ``--rounds`` times; answers compared. Neo4j plans a statement anew for each mix
of null and non-null parameters, so the baseline's first request of a combination plans the
whole statement. Prints each combination's medians and the totals' ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import neo4j

from pith_graph.api.reads import cypher_pages
from pith_graph.api.reads.cypher_parts import FILTER_CHECKS, LATEST
from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.neo4j_discovery import listing_checks, listing_parameters, listing_start
from pith_graph.api.reads.records import EVERYTHING, PaperFilter
from pith_graph.api.reads.words import search_terms
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.testing.corpus import write_corpus

#: A paper of the corpus each filter admits: the newest version, two authors, a cross-list.
_CHOSEN = """MATCH (p:Paper {isLatest: true})
WHERE COUNT { (p)<-[:AUTHORED]-() } >= 2 AND COUNT { (p)-[:IN_CATEGORY]->() } >= 2
WITH p ORDER BY p.pithNumber LIMIT 1
RETURN p.title AS title, p.license AS license, p.submittedAt AS at,
       [(p)<-[:AUTHORED]-(a) | a.nameKey] AS authors,
       [(p)-[:IN_CATEGORY]->(c) | [c.code, c.archive]] AS categories,
       COLLECT { MATCH (c:Category) WHERE NOT (p)-[:IN_CATEGORY]->(c) RETURN c.code } AS unlisted"""


def combinations(chosen: dict[str, Any]) -> dict[str, PaperFilter]:
    authors = sorted(chosen["authors"])
    (code, archive), *_ = sorted(chosen["categories"])
    other = sorted(chosen["unlisted"])[0]
    word = max(chosen["title"].split(), key=len)
    year = chosen["at"][:4] + "-01-01T00:00:00Z"
    return {
        "from": PaperFilter(submitted_from=year),
        "before": PaperFilter(submitted_before="2030-01-01T00:00:00Z"),
        "license": PaperFilter(license=chosen["license"]),
        "latest": PaperFilter(latest_versions=True),
        "category": PaperFilter(category=code),
        "archive": PaperFilter(archive=archive),
        "author": PaperFilter(author=authors[0]),
        "allAuthors": PaperFilter(all_authors=tuple(authors[:2])),
        "categories": PaperFilter(categories=(code, other)),
        "excluded": PaperFilter(exclude_categories=(other,)),
        "title": PaperFilter(title_terms=search_terms(word)),
        "from, latest": PaperFilter(submitted_from=year, latest_versions=True),
        "license, from": PaperFilter(license=chosen["license"], submitted_from=year),
        "category, from": PaperFilter(category=code, submitted_from=year),
        "category, latest": PaperFilter(category=code, latest_versions=True),
        "archive, excluded": PaperFilter(archive=archive, exclude_categories=(other,)),
        "author, from, before": PaperFilter(
            author=authors[0], submitted_from=year, submitted_before="2030-01-01T00:00:00Z"
        ),
        "title, category, latest": PaperFilter(
            title_terms=search_terms(word), category=code, latest_versions=True
        ),
    }


def baseline(start: str, embed: Any) -> str:
    """The statement of ``start`` as it was up to 0.9.13: every filter, each ``($x IS NULL OR
    …)`` (``latest``: ``(NOT $latest OR …)``), and the cursor's ``$afterAt IS NULL OR``."""
    switched = {name: f"(${name} IS NULL OR {check})" for name, check in FILTER_CHECKS.items()}
    switched["latest"] = f"(NOT $latest OR {LATEST})"
    kept = dict(FILTER_CHECKS)
    try:
        FILTER_CHECKS.update(switched)
        return cypher_pages.list_papers_statement.__wrapped__(
            start, embed, "newest", cypher_pages.LISTING_CHECKS, True
        )
    finally:
        FILTER_CHECKS.update(kept)


def _timed(reader: Neo4jReader, statement: str, parameters: dict[str, Any]) -> tuple[float, list[Any]]:
    begun = time.perf_counter()
    rows = reader._rows(statement, **parameters)
    return time.perf_counter() - begun, [row["paper"][:4] for row in rows]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("uri", help="Bolt URI of a scratch server (its database is cleared)")
    parser.add_argument("password_file", help="a file holding user neo4j's password")
    parser.add_argument("--size", type=int, default=3000, help="bundles in the corpus")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=None, help="where the corpus is written (kept)")
    args = parser.parse_args(argv)
    password = Path(args.password_file).read_text().strip()
    folder = (args.corpus or Path(tempfile.mkdtemp(prefix="bench-listing-plans-"))) / f"corpus-{args.size}"
    if not (folder / "keyring.json").exists():
        write_corpus(folder, args.size, workers=2)
    store = Neo4jStore.connect(args.uri, password=password)
    store.clear()
    paths = sorted(str(p) for p in folder.glob("bundles-*"))
    run(paths, keyring=resolve_keyring(folder / "keyring.json"), store=store, workers=2, batch_size=5000)
    store.close()
    reader = Neo4jReader.connect(args.uri, "neo4j", password, "neo4j", timeout=600)
    driver = neo4j.GraphDatabase.driver(args.uri, auth=("neo4j", password))
    embed, paper_params, _decode = reader._papers(EVERYTHING)
    chosen = reader._rows(_CHOSEN)[0].data()
    every = dict.fromkeys(("from", "before", "license", "category", "archive", "author", "authors"))
    every |= dict.fromkeys(("categories", "excluded", "afterAt", "afterPith"))
    ms: dict[str, dict[str, list[float]]] = {}
    print(f"{args.size} bundles, {args.rounds} rounds; medians in ms (first request: planned and run)")
    print(
        f"  {'filters':24} {'first, now':>11} {'first, before':>14} {'again, now':>11} {'again, before':>14}"
    )
    for name, where in combinations(chosen).items():
        listing = Listing(where)
        start, checks, parameters = (
            listing_start(listing),
            listing_checks(listing),
            listing_parameters(listing),
        )
        statements = {
            "now": (
                cypher_pages.list_papers_statement(start, embed, "newest", checks, False),
                {"limit": 21, **parameters, **paper_params},
            ),
            "before": (
                baseline(start, embed),
                {
                    "limit": 21,
                    **every,
                    **parameters,
                    "authors": parameters["authors"] or None,
                    "categories": parameters["categories"] or None,
                    "excluded": parameters["excluded"] or None,
                    "latest": where.latest_versions,
                    **paper_params,
                },
            ),
        }
        found = ms[name] = {f"{when} {label}": [] for when in ("first", "again") for label in statements}
        for index in range(args.rounds):
            answers = {}
            for label in ("now", "before") if index % 2 == 0 else ("before", "now"):
                with driver.session(database="neo4j") as session:
                    session.run("CALL db.clearQueryCaches()").consume()
                statement, params = statements[label]
                first, answers[label] = _timed(reader, statement, params)
                again, _ = _timed(reader, statement, params)
                found[f"first {label}"].append(first * 1000)
                found[f"again {label}"].append(again * 1000)
            assert answers["now"] == answers["before"], name
            assert answers["now"], name  # the chosen paper at least
        medians = [
            statistics.median(found[key])
            for key in ("first now", "first before", "again now", "again before")
        ]
        print(
            f"  {name:24} " + " ".join(f"{m:>{w}.0f}" for m, w in zip(medians, (11, 14, 11, 14), strict=True))
        )
    totals = {
        key: sum(statistics.median(found[key]) for found in ms.values())
        for key in ("first now", "first before", "again now", "again before")
    }
    print(
        f"  {'total':24} "
        + " ".join(f"{totals[k]:>{w}.0f}" for k, w in zip(totals, (11, 14, 11, 14), strict=True))
    )
    print(
        f"  first requests: {totals['first before'] / totals['first now']:.2f}x faster now;"
        f" planned: {totals['again before'] / totals['again now']:.2f}x"
    )
    driver.close()
    reader.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
