"""Where the memory backend's serving memory goes: RSS after opening a saved graph, after
the reader adopts its indexes, and after each step of :meth:`MemoryReader.warm`, with the
deep size of each of the reader's kept structures (shared strings counted once per
structure, so the sizes overlap; the RSS steps do not).

``--baseline DIR`` compares against the code of another checkout (``git archive v | tar -x -C
DIR``) on the same snapshot instead: ``--rounds`` rounds, each code in a fresh process in
turn, each opening the snapshot as ``serve --graph`` does and warming every index; reported
are the RSS held then (over the interpreter's) and per 100k papers, the open and warm times,
a few reads' latencies (the first call, then the best of two more) and a SHA-256 of the
answers of some 150 reads, which must be equal.

Usage: python benchmarks/bench_serve_memory.py SNAPSHOT [--no-sizes]
       python benchmarks/bench_serve_memory.py SNAPSHOT --baseline DIR [--rounds N]
Prints one line per step: RSS (MB), its growth, seconds; then MB per 100k papers.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from serve_memory_rounds import compare, served

from pith_graph.api.reads.discovery import FACETS, Listing
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.reads.saved_indexes import INDEX_READERS
from pith_graph.loader.stores.memory import open_saved


def rss_mb() -> float:
    """Resident set size now, from /proc (MB)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def deep_size(root: Any) -> int:
    """Bytes reachable from ``root`` through containers (each object once)."""
    seen: set[int] = set()
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.append(vars(obj))
        elif hasattr(obj, "__slots__"):
            stack.extend(getattr(obj, slot) for slot in obj.__slots__ if hasattr(obj, slot))
    return total


def _common_title_words(reader: MemoryReader) -> tuple[str, ...]:
    """The two words in most titles (from the text index's title postings)."""
    postings = reader._text_index()[0].fields[0].postings
    return tuple(sorted(postings, key=lambda word: (-len(postings[word][0]), word))[:2])


def latencies(reader: MemoryReader) -> None:
    """The first and the best later of three runs of a few reads the changed indexes answer (ms)."""
    common = _common_title_words(reader)
    category = max(reader.all_categories(), key=lambda found: found.paper_count or 0).code
    reads: dict[str, Callable[[], object]] = {
        "page of 100 papers": lambda: reader.list_papers(PaperFilter(), 100, None),
        f"count title {common}": lambda: reader.count_papers(PaperFilter(title_terms=common)),
        "search 'graph' (first call)": lambda: reader.search_papers(
            Listing(text=("graph",)), "relevance", 20, None
        ),
        f"facets of {category}": lambda: reader.facet_counts(
            Listing(where=PaperFilter(category=category)), FACETS, 10
        ),
    }
    for name, read in reads.items():
        times = []
        for _ in range(3):
            started = time.perf_counter()
            read()
            times.append(time.perf_counter() - started)
        print(f"{name:<44} first {times[0] * 1000:8.1f} ms, then {min(times[1:]) * 1000:8.1f} ms")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("snapshot", help="a graph saved by pith-graph load --snapshot")
    parser.add_argument("--no-sizes", action="store_true", help="skip the deep sizes of the kept structures")
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare against")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(served(args.snapshot)))
        return
    if args.baseline is not None:
        compare(args.snapshot, args.baseline, args.rounds)
        return
    path, sizes = args.snapshot, not args.no_sizes
    last = [rss_mb(), time.perf_counter()]

    def step(name: str, action: Callable[[], object] = lambda: None) -> None:
        action()
        gc.collect()
        now, at = rss_mb(), time.perf_counter()
        print(f"{name:<34} rss {now:8.0f} MB  +{now - last[0]:7.0f} MB  {at - last[1]:6.1f} s", flush=True)
        last[:] = [now, at]

    step("start")
    graph, indexes = open_saved(path, readers=INDEX_READERS)  # as serve reads them
    step("open_saved")
    papers = sum(1 for _, data in graph.nodes(data="label") if data == "Paper")
    reader = MemoryReader(graph)
    step("MemoryReader + adopt", lambda: reader.adopt(indexes))
    for name, action in reader.warm_steps():  # what serve's warm() runs, one step at a time
        step(name, action)
    print(f"papers {papers}; reader records {len(reader._papers)}")
    latencies(reader)
    if sizes:
        structures: dict[str, Any] = {"_papers (records)": reader._papers}
        structures.update({f"_indexes[{name!r}]": value for name, value in reader._indexes.items()})
        kinds: dict[str, list[Any]] = {}
        for (kind, _), value in reader._lists.items():
            kinds.setdefault(kind, []).append(value)
        structures.update({f"_lists[{kind!r}] x{len(v)}": v for kind, v in kinds.items()})
        structures["_rankings"] = reader._rankings
        for name, value in sorted(structures.items(), key=lambda item: -deep_size(item[1]))[:25]:
            print(f"{name:<40} {deep_size(value) / 2**20:8.0f} MB")
    print(f"RSS {rss_mb() / papers * 1e5:.0f} MB per 100k papers")


if __name__ == "__main__":
    main(sys.argv[1:])
