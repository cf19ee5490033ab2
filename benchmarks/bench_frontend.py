"""Benchmark what a frontend asks: papersById (500 ids), ranked search, facets, typeahead.

For each backend it serves the app from a forked uvicorn (``bench_api.ServerProcess``: the
server has its own process) and sends real HTTP requests from one client, scenario after
scenario, in interleaved rounds (the machine is shared: a round's p50 says more than one long
run), each against a baseline measured in the same round:

=====================  ==============================================  ==============================
scenario               request                                          baseline (same round)
=====================  ==============================================  ==============================
papers_by_id_500       papersById, 500 mixed identifiers               the 500 ids as 500 paper(id:)
search_relevance_20    search(text:, first: 20), 1-3 corpus words      papers(filter: {title:}) 20
facets_category        papers(filter: {category:}) all five facets     the same listing's totalCount
typeahead              authors(prefix:) while typing author names      author(name:) exact lookups
=====================  ==============================================  ==============================

Typeahead prefixes are every prefix of randomly chosen authors' names (``z``, ``zo``, ...,
``zoe smith``), as a person types them; its p99 is over all of them and per prefix length.
Facets use every category with 5,000 to 20,000 papers (and report the largest separately).

    python -m pith_graph.testing.corpus /tmp/pith-bench/corpus100k -n 100000 --seed 1
    python benchmarks/bench_frontend.py --corpus /tmp/pith-bench/corpus100k --neo4j-uri bolt://127.0.0.1:7687

It expects such a corpus: a generated one of 100k bundles (about 95k papers) has several
categories of 5k-20k papers; below about 12k bundles none has 5,000, and the facets scenario
then uses the largest category instead (said in the output and the JSON, ``facet_categories``).
The Neo4j database must hold the same corpus (``pith-graph load DIR --backend neo4j``).
Results: a table on stdout, each scenario's p50 over its baseline's p50 beside it (the JSON's
``p50_over_baseline_p50``), and JSON in ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_api import ServerProcess

from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.words import search_terms
from pith_graph.api.serve import freeze_loaded_objects
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"

BATCH = "query($ids: [String!]!) { papersById(ids: $ids) { pithNumber title submittedAt } }"
SINGLE = "query($id: String!) { paper(id: $id) { pithNumber title submittedAt } }"
SEARCH = "query($t: String!) { search(text: $t, first: 20) { edges { score node { pithNumber title } } } }"
TITLE = "query($t: String!) { papers(filter: {title: $t}, first: 20) { nodes { pithNumber title } } }"
FACETS = (
    "query($c: String!) { papers(filter: {category: $c}, first: 0) { facets(first: 10) { "
    "years { value count } categories { value count } archives { value count } "
    "licenses { value count } authors { value count } } } }"
)
COUNT = "query($c: String!) { papers(filter: {category: $c}, first: 0) { totalCount } }"
TYPEAHEAD = "query($p: String!) { authors(prefix: $p, first: 10) { name paperCount } }"
AUTHOR = "query($n: String!) { author(name: $n) { name paperCount } }"


#: Each scenario's baseline, measured in the same rounds: a scenario's name starts with the key.
BASELINES = {
    "papers_by_id_500": "baseline: 500 x paper(id:)",
    "search_relevance_20": "baseline: papers(filter: {title:}) 20",
    "facets_category": "baseline: totalCount of the category",
    "typeahead": "baseline: author(name:)",
}


def baseline_ratios(rows: dict[str, Any]) -> dict[str, float]:
    """Each scenario's p50 over its baseline's p50 (rows as ``bench_backend`` gives them)."""
    return {
        name: round(row["p50_ms"] / rows[baseline]["p50_ms"], 2)
        for name, row in rows.items()
        for prefix, baseline in BASELINES.items()
        if name.startswith(prefix) and rows.get(baseline, {}).get("p50_ms")
    }


def _inputs(reader: MemoryReader, rng: random.Random) -> dict[str, Any]:
    G = reader.G
    ids: list[str] = []
    titles: list[str] = []
    for _, data in G.nodes(data=True):
        if data["label"] == "Paper":
            ids += [data["pithNumber"], data["shortPithNumber"], f"arXiv:{data['sourceId']}"]
            titles.append(data["title"])
        elif data["label"] == "Alias" and data["kind"] == "doi":
            ids.append(f"doi:{data['value']}")
    vocabulary = sorted({term for title in titles for term in search_terms(title) if len(term) > 2})
    authors = [d["name"] for _, d in G.nodes(data=True) if d["label"] == "Author"]
    categories = {d["code"]: G.in_degree(n) for n, d in G.nodes(data=True) if d["label"] == "Category"}
    typed: list[str] = []
    for name in rng.sample(authors, min(40, len(authors))):
        typed += [name[:n] for n in range(1, len(name) + 1) if name[n - 1] != " "]
    largest = max(categories, key=lambda c: categories[c])
    eligible = sorted(c for c, n in categories.items() if 5000 <= n <= 20000)
    return {
        "batches": [rng.sample(ids, min(500, len(ids))) for _ in range(20)],
        "texts": [" ".join(rng.sample(vocabulary, rng.choice((1, 1, 2, 3)))) for _ in range(200)],
        # A corpus below ~12k bundles has no category of 5k-20k papers: the largest stands in.
        "categories": eligible or [largest],
        "facet_categories": "5k-20k papers" if eligible else "largest, none 5k-20k",
        "largest": largest,
        "sizes": categories,
        "typed": typed,
        "names": rng.sample(authors, min(200, len(authors))),
    }


def _timed(client: httpx.Client, query: str, variables: dict[str, Any]) -> float:
    started = time.perf_counter()
    response = client.post("/graphql", json={"query": query, "variables": variables})
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200 or "errors" in response.json():
        raise RuntimeError(f"{query[:60]}: {response.text[:300]}")
    return elapsed


def _pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


def _load() -> tuple[float, float]:
    return os.getloadavg()[:2]


def _round(
    client: httpx.Client, inputs: dict[str, Any], rng: random.Random, n: int
) -> dict[str, list[float]]:
    """One interleaved round: each scenario then its baseline, ``n`` requests each."""
    found: dict[str, list[float]] = {}

    def measure(name: str, query: str, make: Callable[[], dict[str, Any]], count: int = n) -> None:
        found.setdefault(name, []).extend(_timed(client, query, make()) for _ in range(count))

    measure("papers_by_id_500", BATCH, lambda: {"ids": rng.choice(inputs["batches"])})
    batch = rng.choice(inputs["batches"])
    started = time.perf_counter()
    for identifier in batch:
        _timed(client, SINGLE, {"id": identifier})
    found.setdefault("baseline: 500 x paper(id:)", []).append((time.perf_counter() - started) * 1000)
    measure("search_relevance_20", SEARCH, lambda: {"t": rng.choice(inputs["texts"])})
    measure("baseline: papers(filter: {title:}) 20", TITLE, lambda: {"t": rng.choice(inputs["texts"])})
    measure(
        f"facets_category ({inputs['facet_categories']})",
        FACETS,
        lambda: {"c": rng.choice(inputs["categories"])},
    )
    measure("facets_category (largest)", FACETS, lambda: {"c": inputs["largest"]}, max(3, n // 4))
    measure("baseline: totalCount of the category", COUNT, lambda: {"c": rng.choice(inputs["categories"])})
    typed = inputs["typed"]
    start = rng.randrange(len(typed))
    prefixes = [typed[(start + i) % len(typed)] for i in range(n * 5)]
    for prefix in prefixes:
        elapsed = _timed(client, TYPEAHEAD, {"p": prefix})
        found.setdefault("typeahead", []).append(elapsed)
        length = "1" if len(prefix) == 1 else "2" if len(prefix) == 2 else "3+"
        found.setdefault(f"typeahead (prefix {length})", []).append(elapsed)
    measure("baseline: author(name:)", AUTHOR, lambda: {"n": rng.choice(inputs["names"])}, n * 2)
    return found


def bench_backend(
    backend: str, reader: MemoryReader, uri: str, keyring: Any, inputs: dict[str, Any], rounds: int, n: int
) -> dict[str, Any]:
    rng = random.Random(11)
    rows: dict[str, Any] = {}
    server = ServerProcess(backend, reader if backend == "memory" else None, uri, keyring)
    with server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=120) as client:
        _round(client, inputs, random.Random(1), 3)  # warm up: plans, caches, JIT of the server
        per_round: list[dict[str, list[float]]] = []
        loads = []
        for _ in range(rounds):
            loads.append(_load())
            per_round.append(_round(client, inputs, rng, n))
    for name in per_round[0]:
        every = [value for found in per_round for value in found[name]]
        p50s = [statistics.median(found[name]) for found in per_round]
        rows[name] = {
            "requests": len(every),
            "p50_ms": round(statistics.median(every), 2),
            "p99_ms": round(_pct(every, 0.99), 2),
            "round_p50_range_ms": [round(min(p50s), 2), round(max(p50s), 2)],
        }
    return {"rows": rows, "load_average_at_rounds": loads}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--neo4j-uri", default=None)
    parser.add_argument("--backends", default="memory,neo4j")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20, help="per scenario and round")
    args = parser.parse_args(argv)
    keyring = resolve_keyring(args.corpus / "keyring.json")
    started = time.perf_counter()
    store = MemoryStore()
    report = run([str(args.corpus)], keyring=keyring, store=store)
    reader = MemoryReader(store.graph)
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    reader.warm()
    warmed = time.perf_counter() - started
    freeze_loaded_objects()
    inputs = _inputs(reader, random.Random(5))
    papers = report.counts.nodes.get("Paper", 0)
    print(f"corpus: {papers} papers (memory load {loaded:.0f} s, search/typeahead indexes {warmed:.1f} s)")
    if inputs["facet_categories"] != "5k-20k papers":
        print("no category has 5,000-20,000 papers (a corpus below ~12k bundles): facets use the largest")
    print(
        f"facet categories ({inputs['facet_categories']}): "
        f"{[(c, inputs['sizes'][c]) for c in inputs['categories']]}, largest {inputs['largest']}"
    )
    results: dict[str, Any] = {
        "papers": papers,
        "memory_index_seconds": round(warmed, 1),
        "facet_categories": inputs["facet_categories"],
        "backends": {},
    }
    for backend in args.backends.split(","):
        if backend == "neo4j" and not args.neo4j_uri:
            continue
        found = bench_backend(
            backend, reader, args.neo4j_uri or "", keyring, inputs, args.rounds, args.requests
        )
        found["p50_over_baseline_p50"] = ratios = baseline_ratios(found["rows"])
        results["backends"][backend] = found
        print(f"\n{backend} (load average at each round: {found['load_average_at_rounds']})")
        print(
            f"{'scenario':44s} {'requests':>8s} {'p50 ms':>9s} {'p99 ms':>9s}  {'round p50 range':15s}"
            "  p50 / baseline p50"
        )
        for name, row in found["rows"].items():
            low, high = row["round_p50_range_ms"]
            ratio = f"{ratios[name]:.2f}x" if name in ratios else ""
            print(
                f"{name:44s} {row['requests']:8d} {row['p50_ms']:9.2f} {row['p99_ms']:9.2f}"
                f"  {f'{low:.2f}-{high:.2f}':15s}  {ratio}".rstrip()
            )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"bench_frontend-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
