"""The facets of the whole corpus: the general path (every paper read) against the fast one.

Usage:
  python benchmarks/bench_facets.py neo4j BOLT_URI PASSWORD_FILE [--rounds N]
  python benchmarks/bench_facets.py memory SNAPSHOT [--rounds N]

For all five facets, then each alone (``first`` 10), times the general path on ``Listing()``
(``_listing_facets``: what ``facet_counts`` ran before the fast path) and the fast path
(``facet_counts``), interleaved, alternating which goes first, after one untimed warm-up
each; checks both answers are equal every time. Prints per case the median, min and max
milliseconds of each and the median ratio. Memory also prints the one-time build of the counts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from pith_graph.api.reads.discovery import FACETS, Facet, FacetCount, Listing

FIRST = 10
CASES: list[tuple[Facet, ...]] = [FACETS, *((facet,) for facet in FACETS)]

Answer = dict[Facet, list[FacetCount]]


def _timed(call: Callable[[], Answer]) -> tuple[float, Answer]:
    start = time.perf_counter()
    answer = call()
    return time.perf_counter() - start, answer


def run(reader: Any, rounds: int) -> None:
    whole = Listing()

    def old(wanted: tuple[Facet, ...]) -> Answer:
        found: Answer = reader._listing_facets(whole, wanted, FIRST)
        return found

    def new(wanted: tuple[Facet, ...]) -> Answer:
        found: Answer = reader.facet_counts(whole, wanted, FIRST)
        return found

    times: dict[tuple[tuple[Facet, ...], str], list[float]] = {}
    for wanted in CASES:  # warm-up, untimed
        assert old(wanted) == new(wanted), wanted
    for index in range(rounds):
        for wanted in CASES:
            order = [("old", old), ("new", new)]
            if index % 2:
                order.reverse()
            answers = []
            for name, path in order:
                seconds, answer = _timed(partial(path, wanted))
                times.setdefault((wanted, name), []).append(seconds)
                answers.append(answer)
            assert answers[0] == answers[1], wanted
        print(f"round {index + 1} done", flush=True)
    print(f"{'facets':<12} {'old p50 (min-max) ms':>26} {'new p50 (min-max) ms':>26} {'old/new':>9}")
    for wanted in CASES:
        old_times, new_times = times[(wanted, "old")], times[(wanted, "new")]
        label = "all five" if wanted == FACETS else wanted[0]
        cells = [
            f"{statistics.median(t) * 1e3:.3f} ({min(t) * 1e3:.3f}-{max(t) * 1e3:.3f})"
            for t in (old_times, new_times)
        ]
        ratio = statistics.median(old_times) / statistics.median(new_times)
        print(f"{label:<12} {cells[0]:>26} {cells[1]:>26} {ratio:9.1f}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("backend", choices=["neo4j", "memory"])
    parser.add_argument("target", help="neo4j: the Bolt URI; memory: a snapshot (pith-graph load --snapshot)")
    parser.add_argument("password_file", nargs="?", help="neo4j: a file holding user neo4j's password")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.backend == "neo4j" and args.password_file is None:
        parser.error("neo4j needs PASSWORD_FILE")
    rounds = args.rounds
    if args.backend == "neo4j":
        from pith_graph.api.reads.neo4j import Neo4jReader

        with open(args.password_file) as file:
            password = file.read().strip()
        reader: Any = Neo4jReader.connect(args.target, "neo4j", password, "neo4j", timeout=120)
        try:
            print(f"papers: {reader.count_listing(Listing())}")
            run(reader, rounds)
        finally:
            reader.close()
    else:
        from pith_graph.api.reads.memory import MemoryReader
        from pith_graph.loader.stores.memory import open_saved

        start = time.perf_counter()
        graph, _ = open_saved(args.target)
        reader = MemoryReader(graph)
        print(f"opened in {time.perf_counter() - start:.1f} s; papers: {reader.count_listing(Listing())}")
        for name, step in reader.warm_steps():
            if name in ("facet values", "corpus facets"):
                seconds, _ = _timed(step)  # type: ignore[arg-type]
                print(f"built {name} in {seconds:.2f} s", flush=True)
        run(reader, rounds)


if __name__ == "__main__":
    main(sys.argv[1:])
