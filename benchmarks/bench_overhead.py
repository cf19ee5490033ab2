"""What GraphQL costs over the reads it makes: the memory backend, in process, no HTTP.

For each scenario it times the same answer three ways, interleaved in small samples (so a
busy machine slows all three alike): reading it with direct ``GraphReader`` calls, executing
the query on the schema (answered by the document's execution plan, as every request after
the first is) and executing it on the resolvers alone (``build_schema(plans=False)``, what
every request cost before plans). Scenarios: bench_api.py's (a) paper by DOI with authors,
(b) author with coauthors and papers, (c) a category page of 50 papers with their authors,
and bench_peer.py's (a)-(d).

    .venv/bin/python benchmarks/bench_overhead.py --corpus benchmarks/results/corpus-32000-seed7
    .venv/bin/python benchmarks/bench_overhead.py --graph saved.snapshot      # start from a saved graph

``benchmarks/results/corpus-32000-seed7`` is the corpus ``bench_peer.py`` writes on its first
run; any corpus folder does, e.g. ``python -m pith_graph.testing.corpus DIR -n 32000 --seed 7``.

Prints per scenario the p50 of each way (µs) and the ratio planned ÷ direct (median of the
per-sample ratios, with its range over ``--repeats``), and writes benchmarks/results/overhead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_api import QUERIES, direct_call, pick_inputs

from pith_graph.api.context import Context
from pith_graph.api.inputs import named_papers
from pith_graph.api.lanes import run_inline
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.schema import build_schema
from pith_graph.api.serve import freeze_loaded_objects
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore, open_graph

RESULTS = Path(__file__).resolve().parent / "results"

PEER = {  # benchmarks/peer_queries.py's queries for pith-graph
    "peer_a_paper_by_doi": "query PaperByDoi($doi: String!) {"
    " paper(id: $doi) { pithNumber title authors { name } categories { code } } }",
    "peer_b_author_papers_authors": "query AuthorPapers($nameKey: String!) { author(name: $nameKey) { name"
    " papers(first: 100) { nodes { pithNumber title authors { name } } } } }",
    "peer_c_category_newest_50": "query CategoryPage($code: String!, $after: String) {"
    " category(code: $code) { papers(first: 50, after: $after) {"
    " edges { cursor node { pithNumber title submittedAt } } pageInfo { hasNextPage endCursor } } } }",
    "peer_d_category_count": "query CategoryCount($code: String!) { category(code: $code) { paperCount } }",
}


def peer_direct(reader: MemoryReader, scenario: str, variables: dict[str, Any]) -> Any:
    """The reads of the peer scenarios, made directly."""
    if scenario == "peer_a_paper_by_doi":
        value = variables["doi"]
        keys = [("doi", v) for v in dict.fromkeys((value, value.lower(), value.upper()))]
        papers = {p.pith_number: p for found in reader.papers_by_identifiers(keys).values() for p in found}
        newest = named_papers(list(papers.values()), lambda key: 0)[0]
        pith = [newest.pith_number]
        categories = reader.categories_of_papers(pith, 20, counts=False)  # Paper.categories' size
        return newest, reader.author_pages(pith, 100, counts=False), categories
    if scenario == "peer_b_author_papers_authors":
        key = variables["nameKey"]
        page = reader.papers_of_authors([key], 100, None)[key]
        return reader.authors_by_keys([key], False), reader.author_pages(
            [p.pith_number for p in page.items], 100, counts=False
        )
    code = variables["code"]
    if scenario == "peer_d_category_count":
        return reader.categories_by_codes([code])
    return reader.categories_by_codes([code], False), reader.papers_of_categories([code], 50, None)


def scenarios(
    reader: MemoryReader, rng: random.Random
) -> dict[str, tuple[str, Callable[..., Any], list[Any]]]:
    """scenario -> (query, direct call, variables to rotate)."""
    inputs = pick_inputs(reader, rng)
    found: dict[str, tuple[str, Callable[..., Any], list[Any]]] = {}
    for name, query in QUERIES.items():
        variables = [inputs.variables(name, rng) for _ in range(400)]
        found[name] = (query, lambda v, n=name: direct_call(reader, n, v), variables)
    peer_values = {
        "peer_a_paper_by_doi": [{"doi": d} for d in inputs.dois[:400]],
        "peer_b_author_papers_authors": [{"nameKey": a} for a in inputs.authors[:400]],
        "peer_c_category_newest_50": [{"code": c, "after": None} for c in inputs.categories],
        "peer_d_category_count": [{"code": c} for c in inputs.categories],
    }
    for name, query in PEER.items():
        found[name] = (query, lambda v, n=name: peer_direct(reader, n, v), peer_values[name])
    return found


async def measure(reader: MemoryReader, samples: int, chunk: int, rng: random.Random) -> dict[str, Any]:
    planned, resolvers = build_schema(), build_schema(plans=False)
    limits = RequestLimits()
    out: dict[str, Any] = {}
    for name, (query, direct, variables) in scenarios(reader, rng).items():

        async def plan(v: dict[str, Any], query: str = query) -> None:
            result = await planned.execute(query, v, context_value=Context(reader, limits, {}, run_inline))
            assert not result.errors, result.errors

        async def resolve(v: dict[str, Any], query: str = query) -> None:
            await resolvers.execute(query, v, context_value=Context(reader, limits, {}, run_inline))

        async def read(v: dict[str, Any], direct: Callable[..., Any] = direct) -> None:
            direct(v)

        ways = {"direct": read, "planned": plan, "resolvers": resolve}
        for v in variables[:200]:  # warm: records cached, plans compiled
            for way in ways.values():
                await way(v)
        times: dict[str, list[float]] = {way: [] for way in ways}
        for index in range(samples):
            batch = [variables[(index * chunk + k) % len(variables)] for k in range(chunk)]
            for way, call in ways.items():
                if way == "resolvers" and index % 4:  # the slow reference: every 4th sample
                    continue
                started = time.perf_counter()
                for v in batch:
                    await call(v)
                times[way].append((time.perf_counter() - started) / chunk)
        ratios = [p / d for p, d in zip(times["planned"], times["direct"], strict=True)]
        out[name] = {
            **{f"{way}_p50_us": round(1e6 * statistics.median(t), 1) for way, t in times.items()},
            **{f"{way}_min_us": round(1e6 * min(t), 1) for way, t in times.items()},
            "planned_over_direct": round(statistics.median(ratios), 2),
            "resolvers_over_direct": round(
                statistics.median(times["resolvers"]) / statistics.median(times["direct"]), 2
            ),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, help="a corpus folder to verify and load")
    parser.add_argument("--graph", type=Path, help="a saved graph to start from instead")
    parser.add_argument("--samples", type=int, default=300, help="samples per way and scenario")
    parser.add_argument("--chunk", type=int, default=10, help="calls per sample")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.graph:
        graph = open_graph(args.graph)
    elif args.corpus:
        if not (args.corpus / "keyring.json").is_file():
            parser.error(f"{args.corpus} is not a corpus folder (see above: how to make one)")
        store = MemoryStore()
        keyring = resolve_keyring(args.corpus / "keyring.json")
        shards = sorted(str(p) for p in args.corpus.iterdir() if p.name.startswith("bundles"))
        run(shards, keyring=keyring, store=store)
        graph = store.graph
    else:
        parser.error("--corpus or --graph")
    reader = MemoryReader(graph)
    reader.warm()
    freeze_loaded_objects()
    before = os.getloadavg()
    runs = [
        asyncio.run(measure(reader, args.samples, args.chunk, random.Random(r))) for r in range(args.repeats)
    ]
    after = os.getloadavg()
    print(
        f"{'scenario':30} {'direct µs':>10} {'planned µs':>11} {'resolvers µs':>13} {'planned ÷ direct':>22}"
    )
    summary = {}
    for name in runs[0]:
        cells = [run_[name] for run_ in runs]
        ratios = [c["planned_over_direct"] for c in cells]
        summary[name] = {
            "runs": cells,
            "ratio_median": statistics.median(ratios),
            "ratio_range": [min(ratios), max(ratios)],
        }
        print(
            f"{name:30} {statistics.median(c['direct_p50_us'] for c in cells):>10.1f}"
            f" {statistics.median(c['planned_p50_us'] for c in cells):>11.1f}"
            f" {statistics.median(c['resolvers_p50_us'] for c in cells):>13.1f}"
            f" {statistics.median(ratios):>9.2f} ({min(ratios):.2f}–{max(ratios):.2f})"
        )
    print(f"load average before {before[0]:.2f}, after {after[0]:.2f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "overhead.json").write_text(
        json.dumps(
            {
                "loadavg": {"before": before, "after": after},
                "papers": len(reader._all_keys()),
                "summary": summary,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
