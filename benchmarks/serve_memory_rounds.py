"""``bench_serve_memory.py --baseline``: serving memory of this code against another
checkout's, on the same snapshot, interleaved, each round a fresh process per code.

A round (:func:`served`, run in the child) opens the snapshot as ``serve --graph`` does
(``open_saved`` with the index readers, ``adopt``), runs every warm step, collects, and
reads RSS; then times a few reads (first call, best of two more) and hashes the answers of
some 150 reads (pages, counts, title filters, search, typeahead, facets, versions, short
pith numbers), which must be the same for both codes. Only reader methods both have are used.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_snapshot_memory import _tree


def _rss() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise LookupError("VmRSS")


def _timed(read: Callable[[], object]) -> tuple[float, float]:
    """The first call's ms, then the best of two more."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        read()
        times.append((time.perf_counter() - started) * 1000)
    return times[0], min(times[1:])


def served(snapshot: str) -> dict[str, Any]:
    """One round in this process: what serving the snapshot holds, how fast, what it answers."""
    from pith_graph.api.reads.discovery import FACETS, Listing
    from pith_graph.api.reads.memory import MemoryReader
    from pith_graph.api.reads.records import PaperFilter
    from pith_graph.api.reads.saved_indexes import INDEX_READERS
    from pith_graph.loader.stores.memory import open_saved

    base = _rss()
    started = time.perf_counter()
    graph, indexes = open_saved(snapshot, readers=INDEX_READERS)
    reader = MemoryReader(graph)
    if not reader.adopt(indexes):
        raise SystemExit(f"{snapshot}: its text index was not taken")
    del indexes
    opened = time.perf_counter()
    reader.warm()
    warmed = time.perf_counter()
    gc.collect()
    held = _rss()
    papers = sorted(data["pithNumber"] for _, data in graph.nodes(data=True) if data.get("label") == "Paper")
    titles = reader._text_index()[0].fields[0].postings
    common = sorted(titles, key=lambda word: (-len(titles[word][0]), word))
    category = max(reader.all_categories(), key=lambda found: found.paper_count or 0).code
    reads: dict[str, Callable[[], object]] = {
        "page of 100": lambda: reader.list_papers(PaperFilter(), 100, None),
        "search 'graph'": lambda: reader.search_papers(Listing(text=("graph",)), "relevance", 20, None),
        "search 'graph' newest": lambda: reader.search_papers(Listing(text=("graph",)), "newest", 20, None),
        "typeahead 'ju'": lambda: reader.authors_by_prefix(["ju"], 10),
        "typeahead 'bal'": lambda: reader.authors_by_prefix(["bal"], 10),
        "count title 2 words": lambda: reader.count_papers(PaperFilter(title_terms=tuple(common[:2]))),
        f"facets of {category}": lambda: reader.facet_counts(
            Listing(where=PaperFilter(category=category)), FACETS, 10
        ),
    }
    timings = {name: _timed(read) for name, read in reads.items()}
    answers: list[object] = [read() for read in reads.values()]
    picked = papers[:: max(1, len(papers) // 40)]
    shorts = [record.short_pith_number for record in reader.papers_by_ids(picked).values()]
    answers += [
        reader.versions_of_papers(picked, 10),
        reader.resolve_identifiers([("shortPithNumber", short) for short in shorts]),
        reader.papers_by_identifiers([("shortPithNumber", short) for short in shorts]),
        reader.facet_counts(Listing(), FACETS, 25),
        *(
            reader.count_papers(PaperFilter(title_terms=(word,)))
            for word in common[:: max(1, len(common) // 20)]
        ),
        *(reader.list_papers(PaperFilter(title_terms=(word,)), 5, None) for word in common[:10]),
        *(reader.search_papers(Listing(text=(word,)), "newest", 5, None) for word in common[:10]),
        *(reader.authors_by_prefix([prefix], 20) for prefix in ("a", "li", "mar", "zh", "ó", "sa", "ch")),
    ]
    digest = hashlib.sha256(repr(answers).encode()).hexdigest()[:16]
    return {
        "base": base,
        "held": held - base,
        "papers": len(papers),
        "open_s": opened - started,
        "warm_s": warmed - opened,
        "reads": timings,
        "answers": digest,
    }


def _span(values: list[float], digits: int = 0) -> str:
    return f"{min(values):,.{digits}f}-{max(values):,.{digits}f}"


def _load() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def compare(snapshot: str, baseline: Path, rounds: int) -> None:
    """``rounds`` rounds of :func:`served`, the baseline's code then this code's, and ranges."""
    script = str(Path(__file__).with_name("bench_serve_memory.py"))
    print(f"{snapshot}: {os.path.getsize(snapshot) / 1e6:,.1f} MB; /proc/loadavg {_load()}")
    with tempfile.TemporaryDirectory() as scratch:
        tree = _tree(baseline, Path(scratch) / "baseline")
        codes = {"baseline": {**os.environ, "PYTHONPATH": str(tree)}, "this": dict(os.environ)}
        found: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
        for number in range(1, rounds + 1):
            for name, env in codes.items():
                done = subprocess.run(
                    [sys.executable, script, snapshot, "--child"],
                    capture_output=True,
                    text=True,
                    check=False,
                    env=env,
                )
                if done.returncode:
                    raise SystemExit(f"{name}: exit {done.returncode}\n{done.stderr}")
                r = json.loads(done.stdout)
                found[name].append(r)
                print(
                    f"round {number} {name}: held {r['held']:.0f} MB "
                    f"({r['held'] / r['papers'] * 1e5:.0f} MB per 100k papers), open {r['open_s']:.1f} s, "
                    f"warm {r['warm_s']:.1f} s, answers {r['answers']}; /proc/loadavg {_load()}",
                    flush=True,
                )
    for name, runs in found.items():
        per = [r["held"] / r["papers"] * 1e5 for r in runs]
        print(
            f"{name}: held {_span([r['held'] for r in runs])} MB, {_span(per)} MB per 100k papers, "
            f"open {_span([r['open_s'] for r in runs], 1)} s, warm {_span([r['warm_s'] for r in runs], 1)} s"
        )
        for read in runs[0]["reads"]:
            first = [r["reads"][read][0] for r in runs]
            then = [r["reads"][read][1] for r in runs]
            print(f"  {read:<28} first {_span(first, 2)} ms, then {_span(then, 3)} ms")
    same = {r["answers"] for runs in found.values() for r in runs}
    print(f"answers alike across codes and rounds: {len(same) == 1}")
    mine, theirs = found["this"], found["baseline"]
    ratios = [m["held"] / t["held"] for m, t in zip(mine, theirs, strict=True)]
    print(f"held, this / baseline, round by round: {_span(ratios, 3)}")
