"""Where the memory backend's serving memory goes: RSS after opening a saved graph, after
the reader adopts its indexes, and after each step of :meth:`MemoryReader.warm`, with the
deep size of each of the reader's kept structures (shared strings counted once per
structure, so the sizes overlap; the RSS steps do not).

Usage: python benchmarks/bench_serve_memory.py SNAPSHOT [--no-sizes]
Prints one line per step: RSS (MB), its growth, seconds; then MB per 100k papers.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from typing import Any

from pith_graph.api.reads.discovery import FACETS, Listing
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.memory_view import TITLE
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


def latencies(reader: MemoryReader) -> None:
    """The first and the best later of three runs of a few reads the changed indexes answer (ms)."""
    titles = reader._index(TITLE, reader._build_title_index)
    common = tuple(sorted(titles, key=lambda word: -len(titles[word]))[:2])
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
    args = parser.parse_args(argv)
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
